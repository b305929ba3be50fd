"""Fixers: per rule code, the byte-range edits that fix one diagnostic (used by `plint fix`).

A fixer takes the Diagnostic and a FixContext (the FileReading it came from, with its layouts, and
the current bytes of every file) and returns a Fix (plint.rules.base) or None when it cannot fix
this case confidently. Fixers never re-render anything: each edit replaces the characters where
the value was written, found through provenance spans (a value that came through a variable is
edited at its assignment, a DeepSpeed key inside the heredoc or the JSON file that holds it).

Data a rule computed (a did-you-mean suggestion) is recomputed with the rule's own catalog
functions, imported from plint.rules, never copied. A fixer registers against its rule's code; the
rule's record declares whether the fix is safe (plint.rules.base.RuleFix), and one declared unsafe (a
layout change, from the planner) runs only under `plint fix --unsafe-fixes`:

    from plint.fixing.fix_registry import fixer

    @fixer("PL305")
    def add_distributed_optimizer(diag, ctx): ...
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from plint.fixing.fix_registry import (
    FIXERS,
    TP_OPTIONS,
    FixContext,
    points_at,
    ds_configs,
    trainer_args_of,
    word_end,
    fixer,
    real_path,
    replace_in_span,
)
from plint.rules.base import Edit, Fix
from plint.rules.registry import all_rules

# Importing them registers the layout and arithmetic fixers and those of the start-up checks.
from plint.fixing import alternative_fixers, layout_fixers, startup_fixers  # noqa: F401
from plint.fixing.layout_fixers import as_the_parser_spells

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.diagnostics import Diagnostic


def fix_for(diag: Diagnostic, ctx: FixContext, unsafe: bool = True) -> Fix | None:
    """The fix of a diagnostic, or None (no fixer, an unsafe one when unsafe is False, or the case
    is not one a fixer is sure about). A fixer that fails is treated as having no fix."""
    declared = availability(diag.code)
    if declared == "never" or (declared == "unsafe" and not unsafe):
        return None
    for f in FIXERS.get(diag.code, ()):
        try:
            fix = f.function(diag, ctx)
        except Exception:
            if os.environ.get("PLINT_STRICT") == "1":
                raise
            fix = None
        if fix is not None and fix.edits:
            if fix.applicability != declared:
                fix = Fix(fix.description, fix.edits, declared)
            return fix
    return None


def availability(code: str) -> str:
    """Whether plint fixes a rule's findings, as the rule's record declares it: "safe" (`plint fix`),
    "unsafe" (only under --unsafe-fixes) or "never" ("never" too for a code no rule has). A fixer still
    declines a case it is unsure of."""
    rule = all_rules().get(code)
    return rule.fix.availability if rule is not None else "never"


def fixable_codes(unsafe: bool = True) -> set[str]:
    allowed = ("safe", "unsafe") if unsafe else ("safe",)
    return {code for code in FIXERS if availability(code) in allowed}


# ---- PL501: a misspelled trainer flag with one confident suggestion ------------------------------


def confident(word: str, suggestion: str, options) -> bool:
    """Whether a did-you-mean is the one clear candidate: very close (difflib ratio 0.85 or more)
    and clearly closer than the next one (by 0.08), so `--hiden-size` -> `--hidden-size` although
    `--ffn-hidden-size` is close too, but not a word halfway between two options. Asked once per
    distinct word: fix re-checks the file after each pass."""
    return _confident(word, suggestion, tuple(options))


@lru_cache(maxsize=4096)
def _confident(word: str, suggestion: str, options: tuple[str, ...]) -> bool:
    from difflib import SequenceMatcher

    def ratio(option: str) -> float:
        m = SequenceMatcher(None, word, option)
        return m.ratio() if m.quick_ratio() >= 0.5 else 0.0

    best = ratio(suggestion)
    if best < 0.85:
        return False
    # Is any other option within 0.08 of the best? difflib's cheap upper bounds (real_quick_ratio,
    # quick_ratio) rule most options out without the full ratio: the same answer, ~10x faster.
    threshold = best - 0.08
    for option in options:
        if option == suggestion:
            continue
        m = SequenceMatcher(None, word, option)
        if m.real_quick_ratio() <= threshold:
            continue
        quick = m.quick_ratio()
        if quick < 0.5 or quick <= threshold:
            continue
        if m.ratio() > threshold:
            return False
    return True


def _confident_flag(use, suggestion: str, catalog) -> bool:
    dashed = "--" + use.option[2:].replace("_", "-")
    prefixed = [o for o in catalog.options() if o.startswith(use.option)]
    if suggestion != dashed and suggestion not in prefixed and not confident(use.option, suggestion, catalog.options()):
        return False  # not close enough, or two close candidates: the author's call
    spec = catalog.lookup(suggestion)
    if spec is None:
        return False
    takes = spec.takes_value
    if takes is None:
        return False
    if takes is False:  # the word after the typo would become a positional argument
        return not use.values and not use.inline_value
    return len(use.values) == 1 and (spec.nargs in (None, 1) or use.inline_value)


def _a_fork_flag(rctx, option: str) -> bool:
    """Whether the release was only assumed and a known fork defines the flag (Pai-Megatron-Patch's
    --rotary-scale-factor is no typo of --rotary-scaling-factor), or the parser also takes the flags of a function
    from outside the tree, which may define it: then renaming it would break the run."""
    from plint.catalog.forks import forks_defining
    from plint.rules.keys_and_flags import catalog_in_force_of

    in_force = catalog_in_force_of(rctx)
    if in_force is None:
        return False
    return bool(in_force.outside) or (in_force.assumed and bool(forks_defining(option)))


@fixer("PL501")
def fix_unknown_flag(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    from plint.rules.keys_and_flags import flag_catalog, unknown_flags

    for rctx in ctx.contexts():
        if rctx.layout is None:
            continue
        flags = unknown_flags(rctx)
        index = rctx.layout.extras.unknown_flags_by_option  # one pass, not one per finding
        if index is None or index[0] is not flags:
            by_option: dict[str, list] = {}
            for use, suggestion in flags:
                by_option.setdefault(use.option, []).append((use, suggestion))
            index = rctx.layout.extras.unknown_flags_by_option = (flags, by_option)
        for use, suggestion in index[1].get(diag.key, ()):
            if not suggestion or not points_at(use.flag_word.value_span, diag):
                continue
            if not _confident_flag(use, suggestion, flag_catalog(rctx)) or _a_fork_flag(rctx, use.option):
                return None
            edit = replace_in_span(ctx, use.flag_word.value_span, use.option, suggestion)
            return Fix(f"replace {use.option} with {suggestion}", (edit,)) if edit else None
    return None


# ---- PL502: a renamed flag whose replacement takes the same value --------------------------------

_ONE_FLAG = re.compile(r"--[A-Za-z0-9][A-Za-z0-9-]*\Z")
_FLAG_AND_CHOICE = re.compile(r"(--[A-Za-z0-9][A-Za-z0-9-]*) ([A-Za-z0-9_.-]+)\Z")


@fixer("PL502")
def fix_deprecated_flag(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    from plint.rules.keys_and_flags import DEPRECATED, REMOVED, SINCE, flag_catalog

    for rctx in ctx.contexts():
        args = trainer_args_of(rctx)
        if args is None:
            continue
        for use in args.uses:
            if use.option != diag.key or not points_at(use.flag_word.value_span, diag):
                continue
            entry = REMOVED.get(use.option) or DEPRECATED.get(use.option)
            replacement = entry[0] if entry else (SINCE[use.option][1] if use.option in SINCE else None)
            if not replacement:
                return None
            if args.all(replacement.split()[0]):
                return None  # the new flag is given too: which value was meant is the author's call
            return _rename(ctx, use, replacement, flag_catalog(rctx))
    return None


def _rename(ctx: FixContext, use, replacement: str, catalog) -> Fix | None:
    if _ONE_FLAG.match(replacement):  # `--old V` -> `--new V`
        new = catalog.lookup(replacement)
        if new is None or new.takes_value is None:
            return None
        old_takes = use.spec.takes_value if use.spec is not None else bool(use.values)
        if old_takes is None or bool(old_takes) != bool(new.takes_value):
            return None
        if new.takes_value and len(use.values) != 1:
            return None
        if not new.takes_value and (use.values or use.inline_value):
            return None
        if new.choices is not None and use.values and use.values[0].text not in new.choices:
            return None
        edit = replace_in_span(ctx, use.flag_word.value_span, use.option, replacement)
        return Fix(f"replace {use.option} with {replacement}", (edit,)) if edit else None
    m = _FLAG_AND_CHOICE.match(replacement)  # a switch that became a choice: `--old` -> `--new value`
    if m is None:
        return None
    new = catalog.lookup(m.group(1))
    old_takes = use.spec.takes_value if use.spec is not None else bool(use.values)
    if new is None or not new.takes_value or old_takes or use.values or use.inline_value:
        return None
    if new.choices is not None and m.group(2) not in new.choices:
        return None
    span = use.flag_word.value_span
    data = ctx.data(span.path) if span is not None else None
    # two words only where the flag is written bare: inside quotes they would stay one word
    if (
        data is None
        or span.end > len(data)
        or data[span.start : span.end] != use.option.encode("utf-8", "surrogateescape")
        or word_end(ctx, span) is None
    ):
        return None
    return Fix(f"replace {use.option} with {replacement}", (Edit(span.path, span.start, span.end, replacement),))


# ---- PL303: --sequence-parallel where tp > 1 ----------------------------------------------------


@fixer("PL303")
def fix_sequence_parallel(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    edits: list[Edit] = []
    for rctx in ctx.contexts():  # one tp setting may feed several launches (a loop, two runs)
        layout = rctx.layout
        if layout is None or layout.value("trainer") != "megatron":
            continue  # Megatron-DeepSpeed: not the same flag semantics
        tp = layout.get("parallel.tp")
        if tp is None or not isinstance(tp.value, int) or tp.value <= 1 or layout.value("parallel.sequence_parallel"):
            continue
        if not (points_at(tp.span, diag) or points_at(layout.site, diag)):
            continue
        args = trainer_args_of(rctx)
        use = args.get_any(*TP_OPTIONS) if args is not None else None
        if use is None or len(use.values) != 1:
            continue
        from plint.rules.keys_and_flags import unknown_flags

        if any(suggestion == "--sequence-parallel" for _, suggestion in unknown_flags(rctx)):
            continue  # a misspelt --sequence-parallel is there: PL501's fix restores it, adding one would double it
        sites = [w.site for w in (use.flag_word, *use.values)]
        if any(s is None for s in sites) or len({real_path(s.path) for s in sites}) != 1:
            continue
        anchor = use.values[0].site if use.inline_value else max(sites, key=lambda s: s.end)
        end = word_end(ctx, anchor)
        spelled = as_the_parser_spells(rctx, "--sequence-parallel")
        if end is not None and spelled is not None:
            edit = Edit(anchor.path, end, end, f" {spelled}")
            if edit not in edits:
                edits.append(edit)
    return Fix("add --sequence-parallel after the tensor-parallel size", tuple(edits)) if edits else None


# ---- PL601: export CUDA_DEVICE_MAX_CONNECTIONS=1 before the launch -------------------------------

EXPORT_LINE = "export CUDA_DEVICE_MAX_CONNECTIONS=1"
_STRING_REPARSE = ("eval", "bash -c", "sh -c")


def _statement_start(data: bytes, offset: int) -> int:
    """The start of the line where the statement holding offset begins (continued lines joined)."""
    start = data.rfind(b"\n", 0, offset) + 1
    while start > 0:
        prev_end = start - 1  # the newline ending the previous line
        prev_start = data.rfind(b"\n", 0, prev_end) + 1
        line = data[prev_start:prev_end].rstrip(b"\r")
        stripped = line.rstrip()
        if stripped.endswith((b"\\", b"&&", b"||", b"|")):
            start = prev_start
            continue
        break
    return start


@fixer("PL601")
def fix_cuda_max_connections(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    from plint.rules.environment import launch_env

    for rctx in ctx.contexts():
        layout = rctx.layout
        if layout is None or layout.value("trainer") != "megatron" or not points_at(layout.site, diag):
            continue
        if launch_env(rctx, "CUDA_DEVICE_MAX_CONNECTIONS") is not None:
            continue  # set to something else: which value was meant is not ours to say
        chain = layout.extras.chain
        command = getattr(chain, "command", None)
        if command is None:
            continue
        # a command parsed from a string of the same file (`bash -c '...'`, eval) is run by the
        # command that holds the string: the export goes before that one
        while (
            command.parent is not None
            and command.via in _STRING_REPARSE
            and command.parent.site is not None
            and command.site is not None
            and real_path(command.parent.site.path) == real_path(command.site.path)
        ):
            command = command.parent
        site = command.site
        data = ctx.data(site.path) if site is not None else None
        if data is None or site.start > len(data):
            continue
        start = _statement_start(data, site.start)
        line_end = data.find(b"\n", start)
        line = data[start : len(data) if line_end < 0 else line_end]
        indent = line[: len(line) - len(line.lstrip(b" \t"))]
        lead = data[start + len(indent) : site.start]  # what stands before the launch on its line
        if lead and b"\n" not in lead and _OPENS_A_COMMAND.search(lead):
            # `train) torchrun ...`, `then torchrun ...`: the line opens with a case pattern or a
            # keyword, not with the statement, so the export takes the launch's place on that line
            # and the launch moves below it, at the same column
            column = "".join(
                c if c == "\t" else " " for c in data[start : site.start].decode("utf-8", "surrogateescape")
            )
            return Fix(
                f"add `{EXPORT_LINE}` before the launch",
                (Edit(site.path, site.start, site.start, f"{EXPORT_LINE}\n{column}"),),
            )
        # the statement opens its line (`cd run && torchrun ...` included): a line of its own above it
        return Fix(
            f"add `{EXPORT_LINE}` before the launch",
            (Edit(site.path, start, start, f"{indent.decode('utf-8', 'surrogateescape')}{EXPORT_LINE}\n"),),
        )
    return None


# What may stand before a command on its line so that a line break there leaves the script's meaning:
# a case pattern (`train)`, `a|b)`), or a keyword or separator that opens a command list.
_OPENS_A_COMMAND = re.compile(
    rb"(?:^\(?[\"'\w.*?+@!-]+(?:\s*\|\s*[\"'\w.*?+@!-]+)*\)|(?:^|[\s;])(?:then|do|else)|;|\{)\s*$"
)


# ---- PL504: a misspelled DeepSpeed key with one confident suggestion -----------------------------


def _schema_section(parts: list[str]) -> dict | None:
    """The schema of the object at a dotted path of the DeepSpeed config."""
    from plint.rules.deepspeed_keys import schema

    node = schema()
    for part in parts:
        sub = node.get("properties", {}).get(part)
        if sub is None:
            return None
        if sub.get("type") != "object":
            sub = next((s for s in sub.get("anyOf", []) if s.get("type") == "object"), None)
            if sub is None:
                return None
        node = sub
    return node


@fixer("PL504")
def fix_deepspeed_key(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    from plint.rules.common import closest
    from plint.rules.deepspeed_keys import RENAMED_KEYS

    renamed = RENAMED_KEYS.get(diag.key or "")
    if not diag.key or ("did you mean" not in diag.message and renamed is None):
        return None
    parts = diag.key.split(".")
    for cfg in ds_configs(ctx):
        node = getattr(cfg.document, "root", None)
        for part in parts[:-1]:
            node = node.get(part) if node is not None and hasattr(node, "get") and hasattr(node, "entries") else None
        if node is None or not hasattr(node, "entries"):
            continue
        entry = next((e for e in node.entries if e.key == parts[-1] and points_at(e.key_span, diag)), None)
        section = _schema_section(parts[:-1])
        if entry is None or section is None:
            continue
        known = section.get("properties", {})
        suggestion: str | None
        if renamed is not None and renamed in known:  # a key DeepSpeed renamed: the new name, however far its spelling
            suggestion = renamed
        else:
            suggestion = closest(entry.key, known)  # what the rule suggests
            if suggestion is None or not confident(entry.key, suggestion, known):
                return None  # not confident: none close enough, or two candidates
        if suggestion in node.keys():  # noqa: SIM118  (a JObject, not a dict)
            return None  # the key is already there: renaming would make a duplicate
        edit = replace_in_span(ctx, entry.key_span, entry.key, suggestion)
        return Fix(f'rename "{entry.key}" to "{suggestion}"', (edit,)) if edit else None
    return None


# ---- PL309: ZeRO-2/3 under a PipelineModule the script builds -------------------------------------


@fixer("PL309")
def fix_zero_stage_for_pipeline(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    """The stage written in the DeepSpeed JSON becomes 1, the highest DeepSpeed's PipelineEngine accepts
    (it asserts zero_optimization_stage() < gradients). Only for a PipelineModule the entry script builds:
    Megatron-DeepSpeed's own remedy is --no-pipeline-parallel, the author's call."""
    for rctx in ctx.contexts():
        layout = rctx.layout
        if (
            layout is None
            or layout.value("trainer") == "megatron-deepspeed"
            or rctx.fact("deepspeed.pipeline_module") is None
        ):
            continue
        zero = layout.get("parallel.zero_stage")
        if zero is None or zero.span is None or not points_at(zero.span, diag) or not zero.span.path.endswith(".json"):
            continue
        edit = replace_in_span(ctx, zero.span, str(zero.value), "1")
        return (
            Fix("set zero_optimization.stage to 1, the highest stage the pipeline engine accepts", (edit,))
            if edit
            else None
        )
    return None
