"""What one launcher command says (LauncherCall, a chain of them) and the argparse-like scan of its
options that every launcher's reader shares (plint.reading.sources.launchers puts them together)."""

from __future__ import annotations

import copy

import re

from plint.reading.shell.model import Command, Problem, Var, Word
from plint.source import SourceFile
from plint.reading.sources.trainer import MEGATRON_OWN_FLAGS, MEGATRON_SHAPE_FLAGS, TRAINING_NAMES as TRAINING_NAMES
from plint.reading.sources.wrappers import base as _base
from plint.record import field, record
from plint.values import Value, from_word, parse_int, unresolved

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


# ---- option grammars ----------------------------------------------------------------------------
@record
class Grammar:
    values: dict[str, str]  # every accepted spelling of an option with one value -> canonical name
    flags: dict[str, str]
    pairs: dict[str, str]  # options with two values (`--mca btl ^openib`)
    abbrev: bool  # argparse's allow_abbrev: a unique prefix of a long option is accepted


def grammar_of(values: str, flags: str, pairs: str = "", abbrev: bool = True, aliases: str = "") -> Grammar:
    """Spec strings: space-separated options, `|` between spellings of one (the first is canonical).
    `aliases` "dash" adds `--a_b` for each `--a-b`; "underscore" adds `--a-b` for each `--a_b`."""

    def table(spec: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for group in spec.split():
            names = group.split("|")
            for name in names:
                out[name] = names[0]
                if aliases and name.startswith("--"):  # built at import: tests in the cheap order
                    if aliases == "dash":
                        out.setdefault("--" + name[2:].replace("-", "_"), names[0])
                    if aliases == "underscore":
                        out.setdefault("--" + name[2:].replace("_", "-"), names[0])
        return out

    return Grammar(table(values), table(flags), table(pairs), abbrev)


SPAWNERS = ("torchrun", "torch.distributed.launch", "deepspeed", "accelerate", "ray")


SCHEDULERS = ("srun", "mpirun", "aprun", "jsrun", "bcprun")


_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?$")


# python -m MODULE that is a launcher
LAUNCHER_MODULES = {
    "torch.distributed.run": "torchrun",
    # torchrun_jsc (pypi.org/project/torchrun-jsc): the Jülich Supercomputing Centre's fixed torchrun, the same
    # options, run as `python -m torchrun_jsc` or as its own command
    "torchrun_jsc": "torchrun",
    "torch.distributed.launch": "torch.distributed.launch",
    "deepspeed.launcher.runner": "deepspeed",
    "accelerate.commands.launch": "accelerate",
}


TRAINING_FLAGS = frozenset(
    {
        "--deepspeed",
        "--deepspeed_config",
        "--deepspeed-config",
        "--per_device_train_batch_size",
        "--gradient_accumulation_steps",
        "--zero-stage",
        "--zero_stage",
    }
    | MEGATRON_OWN_FLAGS
    | MEGATRON_SHAPE_FLAGS
)


DRIVER_FLAGS = frozenset(
    {
        "--deepspeed",
        "--deepspeed_config",
        "--deepspeed-config",
        "--per_device_train_batch_size",
        "--gradient_accumulation_steps",
    }
)


def with_environment(command: Command, given: dict[str, Var]) -> Command:
    """The same command with `given` set in its environment, as `NAME=value` prefixes would set them: variables a
    launcher gives what it runs (Ray's runtime env, verl's workers)."""
    if not given:
        return command
    with_env = copy.copy(command)
    with_env.assignments = {**command.assignments, **given}
    return with_env


# ---- what one command says ----------------------------------------------------------------------
@record
class LauncherCall:
    # torchrun | torch.distributed.launch | deepspeed | srun | mpirun | aprun | jsrun | bcprun | accelerate | ray | python
    launcher: str
    command: Command
    options: dict[str, list[Word]] = field(default_factory=dict)  # canonical option -> values (flag: [])
    nnodes: Value | None = None
    nproc_per_node: Value | None = None
    world_size: Value | None = None
    node_rank: Value | None = None
    master_addr: Value | None = None
    master_port: Value | None = None
    hostfile: Value | None = None  # deepspeed -H/--hostfile: the path as written
    program: Word | None = None  # the script/module/executable it starts (or an inner launcher)
    program_index: int = -1  # index into command.words where the program starts
    is_module: bool = False
    tasks: Value | None = None  # srun / mpirun / accelerate: processes it starts in all
    tasks_per_node: Value | None = None
    nodes: Value | None = None
    opaque: list[Word] = field(default_factory=list)  # unknown words read as options: they may set anything
    unknown_options: list[Word] = field(default_factory=list)  # options the launcher's parser does not know
    problems: list[Problem] = field(default_factory=list)
    wrapped_by: list[Word] = field(default_factory=list)  # unknown words (or unread scripts) before it: wrappers
    config: dict = field(default_factory=dict)  # accelerate: its --config_file YAML, when read
    config_source: SourceFile | None = None
    config_note: str | None = None  # why that file's values are assumed (found above the script), else None

    def option(self, *names: str) -> Word | None:
        for n in names:
            if self.options.get(n):
                return self.options[n][-1]
        return None

    def flag(self, *names: str) -> bool:
        return any(n in self.options for n in names)


@record
class LaunchChain:
    calls: list[LauncherCall]  # outermost first
    launcher: str | None  # the innermost process-spawning launcher; None for a bare `python x.py`
    entrypoint: Word | None
    trainer_args: list[Word]
    nnodes: Value
    workers_per_node: Value
    world_size: Value
    node_rank: Value | None = None
    master_addr: Value | None = None
    problems: list[Problem] = field(default_factory=list)
    command: Command | None = None  # the command that starts the entrypoint
    # a GPT-NeoX launch (deepy.py): the layout facts its YAML configs give (plint.reading.sources.neox), else None
    neox_facts: dict[str, Value] | None = None


def is_python(name: str | None) -> bool:
    return name is not None and _PYTHON.match(name) is not None


def looks_like_program(word: Word) -> bool:
    name = _base(word)
    if not name or name.startswith("-"):
        return False
    return (
        name.endswith((".py", ".sh"))
        or is_python(name)
        or name in ("torchrun", "deepspeed", "accelerate", "bash", "sh")
    )


# ---- argparse-like scanning ---------------------------------------------------------------------
@record
class OptionScan:
    options: dict[str, list[Word]]
    stop: int  # the program's index (len(words) if none)
    opaque: list[Word]
    unknown: list[Word]


def _lookup(name: str, grammar: Grammar) -> tuple[str, str] | None:
    """(canonical name, "value" | "flag" | "pair") of an option spelling, abbreviations included."""
    for kind, table in (("value", grammar.values), ("flag", grammar.flags), ("pair", grammar.pairs)):
        if name in table:
            return table[name], kind
    if grammar.abbrev and name.startswith("--") and len(name) > 2:
        hits = {
            (table[s], kind)
            for kind, table in (("value", grammar.values), ("flag", grammar.flags))
            for s in table
            if s.startswith(name)
        }
        if len(hits) == 1:
            return hits.pop()
    return None


def scan_options(words: list[Word], start: int, grammar: Grammar) -> OptionScan:
    """Options from words[start:] up to the first word that is not one: the program."""
    out = OptionScan({}, len(words), [], [])
    i = start
    while i < len(words):
        w = words[i]
        t = w.text
        if t is None:
            head = (w.pieces[0].text if w.pieces else None) or ""
            hit = _lookup(head.partition("=")[0], grammar) if head.startswith("-") and "=" in head else None
            if hit is not None:  # `--nnodes=$N`: a known option whose value is unknown
                out.options.setdefault(hit[0], []).append(w.after(head.index("=") + 1))
            elif head.startswith("--") and "=" in head:  # `--environment=$DIR/x.toml`: one option plint does not
                out.unknown.append(w)  # know (a plugin's), whose value is unknown: it sets nothing else
                out.options.setdefault(head.partition("=")[0], []).append(w.after(head.index("=") + 1))
            elif any(looks_like_program(later) for later in words[i + 1 :]):
                out.opaque.append(w)  # `$DISTRIBUTED_ARGS train.py`: options plint cannot see
            else:
                out.stop = i  # could be the program itself
                return out
            i += 1
            continue
        if t == "--":
            out.stop = i + 1
            return out
        if not t.startswith("-") or t == "-" or re.fullmatch(r"-\d+(\.\d*)?", t):
            out.stop = i
            return out
        name, eq, _ = t.partition("=")
        hit = _lookup(name if eq else t, grammar)
        if hit is None and not name.startswith("--") and len(t) > 2:
            short = _lookup(t[:2], grammar)  # argparse `-r3`: a short option with its value attached
            if short is not None and short[1] == "value":
                out.options.setdefault(short[0], []).append(w.slice(2))
                i += 1
                continue
        if hit is None:
            out.unknown.append(w)
            out.options.setdefault(t, [])
            i += 1
            continue
        canon, kind = hit
        if kind == "value" and eq:
            out.options.setdefault(canon, []).append(w.slice(len(name) + 1))
            i += 1
        elif kind == "value":
            if i + 1 < len(words):
                out.options.setdefault(canon, []).append(words[i + 1])
            i += 2
        elif kind == "pair" and i + 1 < len(words) and "=" in words[i + 1].known_prefix():
            out.options.setdefault(canon, []).append(words[i + 1])  # `--env NAME=VALUE`: one word (PALS mpiexec)
            i += 2
        elif kind == "pair":
            out.options.setdefault(canon, []).extend(words[i + 1 : i + 3])
            i += 3
        else:
            out.options.setdefault(canon, [])
            i += 1
    return out


def finish_call(call: LauncherCall, scan: OptionScan) -> LauncherCall:
    words = call.command.words
    call.opaque, call.unknown_options = scan.opaque, scan.unknown
    if scan.stop < len(words):
        call.program, call.program_index = words[scan.stop], scan.stop
    if call.program is not None and not call.program.known and not scan.opaque:
        call.problems.append(
            Problem(
                "unresolved",
                f"{call.launcher}: the word `{call.program.display()}` is unknown; plint reads it as "
                "the program, but it may hold launcher options",
                call.program.site,
            )
        )
    elif scan.opaque:
        shown = ", ".join(f"`{w.display()}`" for w in scan.opaque)
        call.problems.append(
            Problem(
                "unresolved",
                f"{call.launcher}: {shown} unknown, read as launcher options before "
                f"`{call.program.display() if call.program else '?'}`",
                scan.opaque[0].site,
            )
        )
    return call


def hidden_by_unknown(call: LauncherCall, option: str) -> Value | None:
    """Unresolved when unknown option words could be setting `option`."""
    if not call.opaque:
        return None
    names = ", ".join(w.display() for w in call.opaque)
    return unresolved(
        f"{call.launcher} {option} is not written out: it may be inside {names}, which plint cannot read",
        call.opaque[0].site,
    )


def _env_option(call: LauncherCall, dest: str) -> Value | None:
    """torchrun's `PET_<DEST>` environment default for an option that is not given."""
    name = f"PET_{dest.upper()}"
    var = call.command.assignments.get(name) or call.command.env.get(name)
    if var is None or (name not in call.command.assignments and not var.exported):
        return None
    return var_value(var, str, name)


def var_value(var: Var, convert, what: str) -> Value:
    return from_word(Word(var.value, var.span), convert, what)


def given_text(call: LauncherCall, option: str, dest: str) -> Value | None:
    """An option's value as text: from the command line, else (torchrun) from `PET_<DEST>`."""
    w = call.option(option)
    if w is not None:
        return from_word(w, str, option)
    return _env_option(call, dest)


def as_int(value: Value, what: str) -> Value:
    if not value.known:
        return value
    try:
        return Value(parse_int(value.value), value.span, value.origin)
    except ValueError:
        return unresolved(f"{what} {value.value!r} is not a number", value.span)


def min_max_nodes(value: Value) -> Value:
    """run.py parse_min_max_nnodes: `N` or `MIN:MAX`; elastic ranges are decided at run time."""
    if not value.known:
        return value
    parts = value.value.split(":")
    try:
        counts = [parse_int(p) for p in parts]
    except ValueError:
        return unresolved(f"--nnodes {value.value!r} is not N or MIN:MAX", value.span)
    if len(counts) == 1 or (len(counts) == 2 and counts[0] == counts[1]):
        return Value(counts[0], value.span, value.origin)
    return unresolved(f"--nnodes {value.value} is elastic: the node count is decided at run time", value.span)


# ---- resolution ---------------------------------------------------------------------------------
def product_of(a: Value | None, b: Value | None, note: str) -> Value:
    if a is None or b is None or not a.known or not b.known:
        missing = [v.note.removeprefix("needs ") for v in (a, b) if v is not None and not v.known and v.note]
        return unresolved("needs " + "; ".join(missing) if missing else "a factor is unknown")
    return Value(a.value * b.value, b.span or a.span, _origin(a, b), note.format(a=a.value, b=b.value))


def quotient_of(w: Value, n: Value, note: str, floor: bool = False) -> Value:
    if not w.known or not n.known:
        missing = [v.note.removeprefix("needs ") for v in (w, n) if not v.known and v.note]
        return unresolved("needs " + "; ".join(missing) if missing else "a count is unknown")
    if n.value <= 0 or (w.value % n.value and not floor):
        return Value(None, w.span, "derived", f"{w.value} processes do not divide evenly over {n.value} nodes")
    return Value(w.value // n.value, w.span, _origin(w, n), note.format(w=w.value, n=n.value))


def _origin(*parts: Value) -> str:
    """A value computed from others is derived, or assumed where one of them is."""
    return "assumed" if any(v.origin == "assumed" for v in parts) else "derived"
