"""Fixers that change what the launch computes or how it is laid out: they run only under
`plint fix --unsafe-fixes`, except the digit-separator fix, which bash leaves no other reading of.

- PL101, PL103, PL104, PL201: the planner's best layout for the launch's model, cluster and global
  batch, among those that keep its context parallelism, virtual stages, recompute and experts (so the
  edit is a few sizes, not a new launch); each size is edited where it was written, or its flag added
  after the tensor-parallel size when the launch left it at the default. What the new sizes make the
  rules ask for comes in the same fix: the distributed optimizer and its overlaps at dp > 1 (PL305,
  PL306), no --sequence-parallel at tp 1 (PL304).
- PL102: the global batch moved to the nearest multiple of micro-batch x dp (ramp sizes: plint.fixing.startup_fixers).
- PL107: of --fp16 and --bf16, the one the GPU cannot run well goes (bf16 stays where the GPU has it).
- PL001: `300_000_000_000` in bash arithmetic loses its separators (safe).
- PL002: a bare template slot `NAME=<Specify path>` is quoted so the script parses (unsafe: the value
  still needs filling in).
"""

from __future__ import annotations

import re

from plint.fixing.fix_registry import FixContext, points_at, trainer_args_of, word_end, fixer, real_path
from plint.rules.base import Edit, Fix
from plint.reading.shell.placeholders import is_slot_message

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.diagnostics import Diagnostic

SIZES = (
    ("parallel.tp", "--tensor-model-parallel-size", "tp"),
    ("parallel.pp", "--pipeline-model-parallel-size", "pp"),
    ("batch.micro", "--micro-batch-size", "micro_batch"),
)
# the distributed optimizer's overlaps (Megatron: --overlap-param-gather needs --overlap-grad-reduce), as
# plint's planner assumes them for every layout it proposes
OVERLAPS = (("--overlap-grad-reduce", "overlap_grad_reduce"), ("--overlap-param-gather", "overlap_param_gather"))


def layout_context(diag: Diagnostic, ctx: FixContext):
    """The rule context of the layout the diagnostic is about (its key's value is where it points)."""
    contexts = [c for c in ctx.contexts() if c.layout is not None]
    for c in contexts:
        v = c.layout.get(diag.key) if diag.key else None
        if v is not None and points_at(v.span, diag):
            return c
    return contexts[0] if len(contexts) == 1 else None


def replace_value(ctx: FixContext, value, new) -> Edit | None:
    """Replace a value where it was written (the literal characters of its span)."""
    span = value.span if value is not None else None
    if span is None or value.origin not in ("literal", "env"):
        return None
    data = ctx.data(span.path)
    if data is None:
        return None
    raw = data[span.start : span.end].decode("utf-8", "surrogateescape")
    if raw.strip("'\"") != str(value.value):
        return None  # not the literal itself (an expansion, arithmetic): not ours to rewrite
    return Edit(span.path, span.start, span.end, raw.replace(str(value.value), str(new)))


def as_the_parser_spells(rctx, text: str) -> str | None:
    """Flags to add (`--a --b 2`) as the parser in force spells them: Megatron-LM's name, or the underscore form
    a fork defines instead (epfLLM/Megatron-LLM's --sequence_parallel); None when it defines neither, for a flag
    it rejects would stop the job the fix meant to improve."""
    from plint.rules.keys_and_flags import flag_catalog

    catalog = flag_catalog(rctx)
    words = text.split()
    for i, word in enumerate(words):
        if word.startswith("--"):
            spelled = catalog.spelling(word)
            if spelled is None:
                return None
            words[i] = spelled
    return " ".join(words)


def insert_after_tp(ctx: FixContext, rctx, text: str) -> Edit | None:
    """A flag added after the tensor-parallel size (or after the entry point when tp is not given), spelled as the
    parser in force spells it; None when that parser does not define it."""
    from plint.fixing.fix_registry import TP_OPTIONS

    spelled = as_the_parser_spells(rctx, text)
    if spelled is None:
        return None
    text = spelled
    args = trainer_args_of(rctx)
    use = args.get_any(*TP_OPTIONS) if args is not None else None
    if use is not None and use.values and not use.inline_value:
        # the value follows the flag where the flag is written (its own site may be an assignment
        # elsewhere when it came through a variable, or the "${ARGS[@]}" that expands the array holding
        # it): step over the next word after the flag
        flag = use.flag_word.value_span
        data = ctx.data(flag.path) if flag is not None else None
        if data is None or data[flag.start : flag.end] != use.option.encode("utf-8", "surrogateescape"):
            return None  # the flag's characters are not written out here
        end = _next_word_end(data, flag.end)
        return Edit(flag.path, end, end, f" {text}") if end is not None else None
    entry = getattr(rctx.layout.extras.chain, "entrypoint", None)
    anchor = entry.site if entry is not None else None
    end = word_end(ctx, anchor)
    return Edit(anchor.path, end, end, f" {text}") if anchor is not None and end is not None else None


def size_edit(ctx: FixContext, rctx, key: str, flag: str, new) -> Edit | None:
    """A layout size set to `new`: edited where it was written, or its flag added after the tensor-parallel
    size when the launch left it at the default."""
    value = rctx.layout.get(key)
    if value is not None and value.origin != "default":
        return replace_value(ctx, value, new)
    return insert_after_tp(ctx, rctx, f"{flag} {new}")


def size_edits(ctx: FixContext, rctx, sizes, new) -> tuple[list[Edit], list[tuple]] | None:
    """Edits setting each (key, flag, attribute) of `sizes` that differs to its value in `new` (a ModelInput),
    with the (key, old, new) of each; None when one of them cannot be written."""
    edits, changed = [], []
    for key, flag, attr in sizes:
        old, target = rctx.layout.value(key), getattr(new, attr)
        if old == target:
            continue
        edit = size_edit(ctx, rctx, key, flag, target)
        if edit is None:
            return None
        edits.append(edit)
        changed.append((key, old, target))
    return edits, changed


def _next_word_end(data: bytes, pos: int) -> int | None:
    """The end of the shell word after `pos` on the same line (spaces skipped), or None when a line
    continuation, a quote or the end of the line comes first."""
    while pos < len(data) and data[pos : pos + 1] in (b" ", b"\t"):
        pos += 1
    start = pos
    while pos < len(data) and data[pos : pos + 1] not in (
        b" ",
        b"\t",
        b"\n",
        b'"',
        b"'",
        b"\\",
        b";",
        b"|",
        b"&",
        b")",
    ):
        pos += 1
    return pos if pos > start else None


def _cost_input(layout):
    from plint.cost.layout_estimate import cost_input

    inp = cost_input(layout)
    if inp is not None:
        return inp
    from plint.cost import ModelInput

    return ModelInput.from_layout(layout, vocab_size=32000, any_layout=True)


@fixer("PL101")
@fixer("PL103")
@fixer("PL104")
@fixer("PL201")
def fix_layout_from_plan(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    from plint.planning.plan import plan

    rctx = layout_context(diag, ctx)
    if rctx is None or rctx.layout.value("trainer") != "megatron":
        return None
    layout = rctx.layout
    inp = _cost_input(layout)
    if inp is None:
        return None
    # keep what the launch chose beyond the sizes: its cp, virtual stages, recompute, experts and sharding,
    # except that a launch sharding nothing is planned with the distributed optimizer and its two overlaps,
    # which the fix adds when the new layout has dp > 1 (else PL305 and PL306 speak about the fixed file)
    current_vpp = layout.value("parallel.vpp")
    args = trainer_args_of(rctx)
    add_dist_opt = inp.sharding_level() == 0 and not inp.megatron_fsdp
    base = inp.replace(
        tp=1, pp=1, cp=1, vpp=None, dp=None, distributed_optimizer=inp.distributed_optimizer or add_dist_opt
    )
    missing_overlaps = (
        [flag for flag, name in OVERLAPS if not getattr(inp.options, name)] if base.distributed_optimizer else []
    )
    if missing_overlaps:
        base = base.replace(
            options=inp.options.__class__(
                **{
                    **{n: getattr(inp.options, n) for n in inp.options.__record_fields__},
                    **{name: True for _, name in OVERLAPS},
                }
            )
        )
    candidates = [
        c
        for c in plan(base).candidates
        if c.inp.cp == inp.cp
        and c.inp.vpp == current_vpp
        and c.inp.recompute == inp.recompute
        and c.inp.ep == inp.ep
        and c.inp.etp in (None, 1)  # the expert tp this fix has always kept
        and c.pipeline_layout is None  # a planned layout string is not written by this fix
        and c.inp.sharding_level() == base.sharding_level()
        and c.inp.options.grad_reduce_bytes == inp.options.grad_reduce_bytes
        and c.inp.data_parallel() * c.inp.cp % max(1, inp.dp_outer) == 0  # PL101's hybrid sharding,
        and c.inp.world_size
        // max(1, c.inp.pp * c.inp.ep * (c.inp.etp or c.inp.tp))  # dense and expert
        % max(1, inp.dp_outer)
        == 0
    ]
    if not candidates:
        return None
    best = candidates[0]
    written = size_edits(ctx, rctx, SIZES, best.inp)
    if written is None:
        return None
    edits, changed = written
    changes = [f"{key.split('.')[1]} {old} -> {new}" for key, old, new in changed]
    added = []
    if best.first_last_layers is not None:
        if (
            args is None
            or args.get("--decoder-first-pipeline-num-layers") is not None
            or args.get("--decoder-last-pipeline-num-layers") is not None
        ):
            return None
        k, last = best.first_last_layers, best.last_layers or best.first_last_layers
        added.append(f"--decoder-first-pipeline-num-layers {k} --decoder-last-pipeline-num-layers {last}")
        changes.append(
            f"first and last pipeline stages of {k} layers"
            if k == last
            else f"first pipeline stage of {k} layers, last of {last}"
        )
    if not edits and not added:
        return None
    # the rest of the layout follows the sizes, so that the fixed file passes the rules the new sizes bring in
    dp = best.inp.data_parallel()
    # PL305: dp > 1 sharding nothing; PL306: the distributed optimizer's communication exposed
    sharding_flags = (["--use-distributed-optimizer"] if add_dist_opt else []) + missing_overlaps if dp > 1 else []
    if sharding_flags:
        added.extend(sharding_flags)
        changes.append(f"{' '.join(sharding_flags)} for dp {dp}")
    sp = layout.value("parallel.sequence_parallel")
    if sp and best.inp.tp == 1:  # PL304: Megatron drops sequence parallelism at tp 1
        # written some other way (a value, a config) it stays: PL304 then names it, the sizes still get fixed
        removal = remove_flag(ctx, args, "--sequence-parallel") if args is not None else None
        if removal is not None:
            edits.extend(removal)
            changes.append("no sequence parallelism at tp 1")
    if added:
        edit = insert_after_tp(ctx, rctx, " ".join(added))
        if edit is None:
            return None
        edits.append(edit)
    est = best.estimate
    return Fix(
        f"the planner's best layout keeping global batch {best.inp.global_batch}: {', '.join(changes)} "
        f"(predicted {est.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, {est.memory_gib['total']:.1f} GiB)",
        tuple(edits),
        "unsafe",
    )


@fixer("PL305")
def add_distributed_optimizer(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    """--use-distributed-optimizer with its two overlaps (so that PL306 has nothing to say about the fixed
    file), after the tensor-parallel size. Unsafe: the checkpoints change format. Megatron-LM only: under
    --deepspeed the remedy is ZeRO stage 1 in the DeepSpeed config."""
    if diag.key != "parallel.distributed_optimizer":
        return None  # under --deepspeed (ZeRO 1 in the JSON) or Megatron-FSDP (its sharding strategy)
    rctx = layout_context(diag, ctx)
    if rctx is None or rctx.layout.value("trainer") != "megatron":
        return None
    args = trainer_args_of(rctx)
    dp = rctx.layout.value("parallel.dp")
    if args is None or args.get("--use-distributed-optimizer") is not None or not isinstance(dp, int):
        return None
    flags = ["--use-distributed-optimizer", *(flag for flag, _ in OVERLAPS if args.get(flag) is None)]
    edit = insert_after_tp(ctx, rctx, " ".join(flags))
    if edit is None:
        return None
    return Fix(
        f"add {' '.join(flags)}: the optimizer state sharded over dp {dp} (checkpoints change format)",
        (edit,),
        "unsafe",
    )


@fixer("PL102")
def fix_global_batch(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    if diag.key not in (None, "batch.global"):
        return None  # a ramp or schedule size (plint.fixing.startup_fixers)
    rctx = layout_context(diag, ctx)
    if rctx is None:
        return None
    layout = rctx.layout
    glob, micro, dp = (layout.value(k) for k in ("batch.global", "batch.micro", "parallel.dp"))
    if not all(isinstance(x, int) and x > 0 for x in (glob, micro, dp)):
        return None
    step = micro * dp
    lower, upper = max(step, glob // step * step), (glob // step + 1) * step
    new = lower if glob - lower <= upper - glob else upper
    edit = replace_value(ctx, layout.get("batch.global"), new)
    if edit is None:
        return None
    return Fix(
        f"global batch {glob} -> {new}, the nearest multiple of micro-batch {micro} x dp {dp}", (edit,), "unsafe"
    )


@fixer("PL107")
def fix_precision_conflict(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    from plint.catalog.hardware import lookup_gpu

    rctx = layout_context(diag, ctx)
    args = trainer_args_of(rctx) if rctx is not None else None
    if args is None or args.get("--fp16") is None or args.get("--bf16") is None:
        return None
    gpu = lookup_gpu(rctx.layout.value("cluster.gpu") or "h100-sxm")
    drop = "--bf16" if gpu is not None and not gpu.bf16_tflops else "--fp16"
    edits = remove_flag(ctx, args, drop)
    if edits is None:
        return None
    keep = "--fp16" if drop == "--bf16" else "--bf16"
    return Fix(f"remove {drop}: {keep} is the precision {gpu.name if gpu else 'the GPU'} runs", tuple(edits), "unsafe")


def remove_flag(ctx: FixContext, args, *flags: str) -> list[Edit] | None:
    """Edits removing every use of the flags where they are written, with the values written right after
    each on the same line (the whole line when nothing else stands on it); None when one of them is not
    written out as the flag's own words."""
    cuts: dict[tuple[str, int], list[tuple[int, int]]] = {}  # (file, line start) -> (start, end) of each use
    for flag in flags:
        for use in args.all(flag):
            span = use.flag_word.value_span  # where the flag was written (an array element, a string)
            end = word_end(ctx, span)
            data = ctx.data(span.path) if span is not None else None
            if end is None or data is None or data[span.start : end] != flag.encode("utf-8", "surrogateescape"):
                return None
            end = _values_end(ctx, data, span.path, use, end)
            if end is None:
                return None
            cuts.setdefault((span.path, data.rfind(b"\n", 0, span.start) + 1), []).append((span.start, end))
    edits = []
    for (path, line_start), spans in cuts.items():
        data = ctx.data(path)
        if data is None:  # read above, for each cut
            return None
        line_end = data.find(b"\n", line_start)
        line_end = len(data) if line_end == -1 else line_end
        rest, at = b"", line_start
        for start, end in sorted(spans):
            rest, at = rest + data[at:start], end
        if (rest + data[at:line_end]).strip(b" \t\\") == b"" and line_end < len(data):
            edits.append(Edit(path, line_start, line_end + 1, ""))  # nothing else on the line: drop it
            continue
        for cut_start, cut_end in spans:
            cut_start = cut_start - 1 if cut_start > 0 and data[cut_start - 1 : cut_start] == b" " else cut_start
            edits.append(Edit(path, cut_start, cut_end, ""))
    return edits or None


def _values_end(ctx: FixContext, data: bytes, path: str, use, end: int) -> int | None:
    """The end of the use's last value when each is a whole word following the flag on its line (blanks
    between); `end` itself for a bare flag; None otherwise (`--x=v`, a value from elsewhere)."""
    if use.inline_value:
        return None
    for word in use.values:
        span = word.value_span
        value_end = word_end(ctx, span) if span is not None and span.path == path else None
        if value_end is None or span.start < end or data[end : span.start].strip(b" \t") != b"":
            return None
        end = value_end
    return end


_SEPARATED = re.compile(rb"(?<![\w.])\d+(?:_\d+)+(?![\w.])")


@fixer("PL001")
def fix_digit_separators(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    """`$(( 300_000_000_000 / SEQ ))` or a variable holding it: bash reads no digit separators."""
    if "value too great for base" not in diag.message:
        return None
    shell = getattr(ctx.reading, "shell", None)
    data = ctx.data(diag.path)
    if shell is None or data is None or diag.line is None:
        return None
    lines = data.split(b"\n")
    edits = []
    line_start = sum(len(x) + 1 for x in lines[: diag.line - 1])
    line = lines[diag.line - 1]
    for m in _SEPARATED.finditer(line):
        edits.append(Edit(diag.path, line_start + m.start(), line_start + m.end(), m.group().decode().replace("_", "")))
    for name in re.findall(rb"[A-Za-z_][A-Za-z0-9_]*", line):
        var = shell.variables.get(name.decode())
        for piece in var.value if var is not None else ():
            span = piece.span
            if (
                piece.text
                and span is not None
                and re.fullmatch(r"\d+(?:_\d+)+", piece.text)
                and real_path(span.path) == real_path(diag.path)
            ):
                edit = Edit(span.path, span.start, span.end, piece.text.replace("_", ""))
                if edit not in edits:
                    edits.append(edit)
    return Fix("remove the digit separators bash arithmetic does not accept", tuple(edits)) if edits else None


@fixer("PL002")
def fix_placeholder(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    """A template slot written bare (`CHECKPOINT_PATH=<Specify path>`, `X=<path to file>/vocab.json`),
    which bash reads as redirections: quoted, so bash parses the script (it still needs a real value)."""
    data = ctx.data(diag.path)
    if data is None or not is_slot_message(diag.message) or diag.line is None or diag.col is None:
        return None
    lines = data.split(b"\n")
    if diag.line is None or not 1 <= diag.line <= len(lines):  # bash named no line (found by Hypothesis)
        return None
    text = lines[diag.line - 1].decode("utf-8", "surrogateescape")
    before = text[: diag.col - 1]
    m = _BARE_SLOT.match(text, diag.col - 1)
    # bare: not inside quotes on its line (an even count of each quote before it), not already quoted
    if m is None or before.count('"') % 2 or before.count("'") % 2:
        return None
    start = sum(len(x) + 1 for x in lines[: diag.line - 1]) + len(before.encode("utf-8", "surrogateescape"))
    slot = m.group()
    return Fix(
        f"quote the placeholder {slot} so bash parses the script (it still needs a real value)",
        (Edit(diag.path, start, start + len(slot.encode("utf-8", "surrogateescape")), f'"{slot}"'),),
        "unsafe",
    )


_BARE_SLOT = re.compile(r"<[^<>\n'\"]*>")
