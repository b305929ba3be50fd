"""Commands that plainly start training but became no launch: where each stands and why plint did not use it.

Facts only: rule PL005 turns them into a finding when a file yields no launch at all, so a script whose
launcher sits in a function nobody calls, behind a wrapper plint cannot see through, in a branch plint
found dead or after an `exit` is never reported clean without a word.

A command counts when, as written (before expansion), it runs a launcher (torchrun, deepspeed, accelerate
launch, `python -m torch.distributed.run|launch`, `python -m deepspeed.launcher.runner`, `ray job submit -- python`),
or a Python training entry point (`pretrain_*.py`, `finetune*.py`, `train*.py`, ...) with a trainer flag, either directly, through
a known wrapper or scheduler (nohup, srun, ...) or behind a word plint cannot know (`$LAUNCHER torchrun`).
Words of echo, printf and the like, comments and strings never count: the command must start with one of
those, not merely mention them.
"""

from __future__ import annotations

import posixpath
import re

from plint.record import record
from plint.source import SourceFile, Span
from plint.bounds import MAX_UNUSED_LAUNCHES

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable
    from plint.reading.shell.model import ShellResult

_LAUNCHERS = frozenset({"torchrun", "torchrun_jsc", "deepspeed", "accelerate"})
_LAUNCHER_MODULES = (
    "torch.distributed.run",
    "torch.distributed.launch",
    "deepspeed.launcher.runner",
    "accelerate.commands.launch",
    "torchrun_jsc",
)
# words that may stand before the launcher (schedulers, process wrappers, containers, environment managers)
_BEFORE = frozenset(
    {
        "srun",
        "mpirun",
        "mpiexec",
        "nohup",
        "time",
        "exec",
        "env",
        "stdbuf",
        "timeout",
        "nice",
        "ionice",
        "taskset",
        "chrt",
        "numactl",
        "nsys",
        "ncu",
        "uv",
        "conda",
        "mamba",
        "micromamba",
        "poetry",
        "pipenv",
        "apptainer",
        "singularity",
        "docker",
        "enroot",
        "xargs",
    }
)
# start ranks of whatever program follows
_SCHEDULERS = frozenset({"srun", "mpirun", "mpiexec", "aprun", "jsrun", "bcprun"})
_SHOWN = 80  # characters of a command quoted in a finding
_WORDS = 256  # words of a command looked at
_HELD_BYTES = 16 * 1024  # bytes of a value assigned to a variable looked at for a command string
_WORD_BYTES = 1024  # bytes of a word looked at: a launcher's, interpreter's or script's path is shorter, and a
# word holding nested commands (`$($($(...)))`) would otherwise be copied once per level (quadratic)
# a file none of whose text names a launcher, Python or a training script is not parsed again at all
_HINT = re.compile(rb"torchrun|deepspeed|srun|mpirun|mpiexec|aprun|accelerate|torch\.distributed|python|\.py\b|\.sh\b")


@record(frozen=True)
class UnusedLaunch:
    span: Span
    command: str  # as written, shortened
    why: str


def _base(text: str) -> str:
    return posixpath.basename(text.strip("\"'"))


def _is_python(name: str) -> bool:
    from plint.reading.sources.launch_calls import is_python

    return is_python(name)


def _unknown(text: str) -> bool:
    return text.lstrip("\"'").startswith("$")


def _launch_word(words: list[str]) -> int | None:
    """The index of the word that makes the command a training launch, or None. After a Python interpreter only
    a launcher module or a training script counts (`python -m pip install deepspeed` is no launch); a training
    script with a trainer flag, or Megatron's own entry points with none (their flags may all come from arrays)."""
    from plint.reading.sources.launch_calls import TRAINING_FLAGS, TRAINING_NAMES
    from plint.reading.sources.trainer import MEGATRON_ENTRYPOINTS

    flagged = any(w.split("=")[0] in TRAINING_FLAGS for w in words)
    if _submits_a_python_job(words):
        return 0  # `ray job submit -- python train.py ...`: the job's driver starts the training
    after_python = False
    for i, word in enumerate(words):
        name = _base(word)
        if name in _LAUNCHERS and not after_python:
            return i
        if name in _SCHEDULERS and i == 0 and _starts_a_program(words[1:]):
            return (
                i  # `mpirun -np 64 ... bash -c '... bash train.sh ...'`: the ranks run a script plint could not follow
            )
        python = _is_python(name)
        after_python = after_python or python
        if python and any(
            words[j] == "-m" and words[j + 1] in _LAUNCHER_MODULES for j in range(i + 1, min(i + 4, len(words) - 1))
        ):
            return i
        if name.endswith(".py") and (name in MEGATRON_ENTRYPOINTS or (name.startswith(TRAINING_NAMES) and flagged)):
            return i
    return None


def _submits_a_python_job(words: list[str]) -> bool:
    """`ray job submit [OPTIONS] -- python ...` (plint.reading.sources.launch_ray)."""
    if words[:3] != ["ray", "job", "submit"] or "--" not in words:
        return False
    after = words[words.index("--") + 1 :]
    return bool(after) and _is_python(_base(after[0]))


def _starts_a_program(words: list[str]) -> bool:
    """Whether a scheduler's words start a shell, a Python or a training script (`srun hostname` does not)."""

    for word in words:
        name = _base(word)
        if name in ("bash", "sh") or _is_python(name):
            return True
        if name.endswith((".py", ".sh")) and _named_for_training(name):
            return True
    return False


def _named_for_training(name: str) -> bool:
    """`pretrain_gpt.py`, `start_training.sh`, `run-finetune.sh`: a part of the name before its extension (split at
    `_`, `-` and `.`) is named for training (launch_calls.TRAINING_NAMES)."""
    from plint.reading.sources.launch_calls import TRAINING_NAMES

    return any(part.startswith(TRAINING_NAMES) for part in re.split(r"[_\-.]", name.lower())[:-1])


def _counts(words: list[str]) -> int | None:
    """The launch word's index when the command starts with it, a Python, a known wrapper or an unknown word."""
    at = _launch_word(words)
    if at is None:
        return None
    first = words[0]
    if at == 0 or _unknown(first) or _is_python(_base(first)) or _base(first) in _BEFORE:
        return at
    return None


# the scripts of a command that runs Megatron's or NeMo's data tools (launchers.DATA_TOOL_NAMES) and nothing that
# trains: `srun ... bash -c "python .../preprocess_data_for_megatron.py ..."` tokenizes a corpus
def _script_names(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"(?:^|[/\s\"'])(?:" + "|".join(map(re.escape, names)) + r")\w*\.py\b")


def _prepares_data(words: list[str]) -> bool:
    from plint.reading.sources.launch_calls import TRAINING_NAMES
    from plint.reading.sources.launchers import DATA_TOOL_NAMES

    text = " ".join(words)
    return _script_names(DATA_TOOL_NAMES).search(text) is not None and not _script_names(TRAINING_NAMES).search(text)


def _may_count(first: str) -> bool:
    """Whether a command starting with this word can count (see _counts), judged before its other words are
    read: most commands of a file start with something else."""
    name = _base(first)
    return (
        _unknown(first)
        or name in _LAUNCHERS
        or name in _SCHEDULERS
        or name in _BEFORE
        or name.endswith(".py")
        or _is_python(name)
        or name == "ray"  # `ray job submit -- python ...`
    )


def _words(node, data: bytes, limit: int = _WORDS) -> list[str]:
    """The command's words as written, the first _WORDS of them: the launcher, a wrapper's options, the
    interpreter and the training script all stand early (and a command of millions of words stays cheap)."""
    out = []
    for child in node.named_children:
        if child.type == "variable_assignment" or child.type.endswith("redirect") or child.type == "comment":
            continue
        out.append(
            data[child.start_byte : min(child.end_byte, child.start_byte + _WORD_BYTES)].decode("utf-8", "replace")
        )
        if len(out) >= limit:
            break
    return out


_BRANCHES = frozenset(
    {
        "if_statement",
        "elif_clause",
        "else_clause",
        "case_item",
        "while_statement",
        "for_statement",
        "c_style_for_statement",
        "list",
    }
)


def _scan(root) -> tuple[list, list]:
    """One walk of the tree: (each command with the innermost function or branch around it, None at the top
    level; each variable assignment), both in file order. The branch is carried down the walk, since
    tree-sitter finds a node's parent from the root (a walk up from each of thousands of nested launches took
    minutes); one walk, not one per question, since listing a node's children is most of a walk's cost (a
    statement of 100,000 assignments: 0.4 CPU s a walk)."""
    commands: list = []
    assignments: list = []
    stack = [(root, None)]
    while stack:
        n, within = stack.pop()
        kind = n.type
        if kind == "command":
            commands.append((n, within))
        elif kind == "variable_assignment":
            assignments.append(n)
        inner = n if kind == "function_definition" or kind in _BRANCHES else within
        stack.extend((c, inner) for c in reversed(n.named_children))
    return commands, assignments


def _held(node, data: bytes) -> tuple[str, list[str]] | None:
    """`CMD="deepspeed train.py ..."`: the variable and the words of a command string assigned to it."""
    name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
    if name is None or value is None or value.type not in ("string", "raw_string", "concatenation", "word"):
        return None
    # its first _HELD_BYTES: a command string is that short, and a value of megabytes split whole was seconds
    text = data[value.start_byte : min(value.end_byte, value.start_byte + _HELD_BYTES)].decode("utf-8", "replace")
    words = text.strip("\"'").replace("\\\n", " ").split()[:_WORDS]
    return data[name.start_byte : name.end_byte].decode("utf-8", "replace"), words


def _unread_training_script(node, first: list[str], data: bytes, source: SourceFile, result: ShellResult):
    """`bash examples/pretrain_gpt.sh ...` (or `./train.sh`) that the evaluator ran but could not read the script
    of (not found, a path known only at run time): the launch is inside a script plint did not see. Only a
    script named as training is (launch_calls.TRAINING_NAMES, as a part of its name): a missing helper is no
    evidence of a launch."""
    from plint.reading.shell.state import SHELLS

    shell = _base(first[0]) in SHELLS
    if not shell and not first[0].endswith(".sh"):  # most commands: neither a shell nor a script run by its path
        return None
    operands = [w for w in _words(node, data, 6)[1:] if not w.startswith("-")]  # `bash -x run.sh`: options first
    script = (operands[0] if operands else "") if shell else first[0]
    if not script.endswith(".sh") or not _named_for_training(_base(script)):
        return None
    span = source.span(node.start_byte, node.end_byte)
    said = next(
        (
            why
            for at, why in result.unread_scripts
            if at is not None and at.path == span.path and span.start <= at.start < span.end
        ),
        None,
    )
    if said is None:
        return None
    text = " ".join(" ".join(_words(node, data)).replace("\\\n", " ").split())
    return UnusedLaunch(span, _shortened(text), f"it runs the script {_base(script)}, which plint cannot read: {said}")


def _unread_through(result: ShellResult, name: str, source: SourceFile) -> str | None:
    """Why plint did not follow a command string it ran (`$CMD` on a line of its own): the script the string runs
    is one plint cannot read."""
    for at, why in result.unread_scripts:
        if at is None or at.path != source.path:
            continue
        written = source.data[at.start : at.end].decode("utf-8", "replace")
        if written in (f"${name}", f"${{{name}}}", f'"${name}"', f'"${{{name}}}"'):
            return f"plint ran it (${name}, line {at.line}), but the script it runs cannot be read: {why}"
    return None


def _shortened(text: str) -> str:
    """A command as a finding quotes it: its first _SHOWN characters."""
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _called_names(commands: list, data: bytes) -> set[str]:
    return {words[0] for c, _ in commands if (words := _words(c, data, 1))}


def _first_exit(root, data: bytes):
    """The first top-level `exit` command, or None: found once per file (looking for it again for each
    launch after it was quadratic in a file of many unreached launches)."""
    for top in root.named_children:
        if top.type == "command" and _words(top, data, 1) == ["exit"]:
            return top
    return None


def _exited_before(result, span) -> str | None:
    """Why bash never gets to `span`: the script ended at an `exit` above it on every way plint followed."""
    site = result.exit_site
    if site is None or site.path != span.path or site.start >= span.start:
        return None
    return f"the script exits before it (`exit` at line {site.line})"


def _why_not_reached(node, within, source: SourceFile, data: bytes, called: set[str], first_exit) -> str:
    if within is not None and within.type == "function_definition":
        name_node = within.child_by_field_name("name")
        name = data[name_node.start_byte : name_node.end_byte].decode() if name_node is not None else "?"
        if name not in called:
            return f"it is inside function {name}, which the script never calls"
        return f"it is inside function {name}, and plint reached no call of it"
    if within is not None:
        where = source.span(within.start_byte, within.end_byte)
        head = (
            data[within.start_byte : min(within.end_byte, within.start_byte + 256)]
            .decode("utf-8", "replace")
            .split("\n")[0][:60]
        )
        return f"it stands in a branch plint found is never taken (`{head.strip()}`, line {where.line})"
    if first_exit is not None and first_exit.end_byte <= node.start_byte:
        line = source.span(first_exit.start_byte, first_exit.end_byte).line
        return f"the script exits before it (`exit` at line {line})"
    return "plint did not reach it when reading the script"


def _why_unused(words: list[str], at: int) -> str:
    first = words[0]
    if _unknown(first):
        name = re.match(r"[\"']?\$\{?#?([A-Za-z_][A-Za-z0-9_]*)", first)
        supply = f"--env {name.group(1)}=..." if name else "--env NAME=VALUE"
        return (
            f"it starts with {first}, which plint cannot know (a launcher or wrapper held in a variable: "
            f"supply it with {supply})"
        )
    if at > 0 and not _is_python(_base(first)):
        return f"plint could not find the launch behind `{first}`"
    return "plint could not read a launch from it (its program or options are unknown)"


def unused_launches(sources: Iterable[SourceFile], result: ShellResult) -> list[UnusedLaunch]:
    """Training commands in the given files (the checked one first) that yielded no launch, in file order; then
    command strings the checked file assigns to a variable (`CMD="deepspeed train.py ..."`)."""
    from plint.reading.shell.parse import TooComplex, parse

    from plint.reading.shell.state import NOT_FOUND_PREFIX

    ran = {(c.site.path, c.site.start) for c in result.commands if c.site is not None}
    # commands bash refuses to run (`$ENV_ARGS torchrun ...`, ENV_ARGS holding NAME=value words): the error says why
    refused = {
        (p.span.path, p.span.start): p.message.split(" (", 1)[0]
        for p in result.problems
        if p.kind == "shell-error" and p.span is not None and p.message.startswith(NOT_FOUND_PREFIX)
    }
    out: list[UnusedLaunch] = []
    sources = list(sources)
    main = sources[0] if sources else None
    for source in sources:
        data = source.data
        if not _HINT.search(data):
            continue
        try:
            root = parse(data).root_node
        except TooComplex:  # the evaluator said so (PL002): no launch scan of a file past the syntax budget
            continue
        called: set[str] | None = None
        first_exit = None
        commands, assignments = _scan(root)
        for node, within in commands:
            first = _words(node, data, 1)
            unread = _unread_training_script(node, first, data, source, result) if first else None
            if unread is not None:
                out.append(unread)
                continue
            words = _words(node, data) if first and _may_count(first[0]) else None
            at = _counts(words) if words else None
            if at is None or words is None or _prepares_data(words):
                continue
            span = source.span(node.start_byte, node.end_byte)
            text = " ".join(" ".join(words).replace("\\\n", " ").split())
            text = _shortened(text)
            if (span.path, span.start) in ran:
                why = _why_unused(words, at)
            elif (span.path, span.start) in refused:
                why = f"bash cannot run it: {refused[(span.path, span.start)]}"
            elif (exited := _exited_before(result, span)) is not None:
                why = exited
            else:
                if called is None:
                    called, first_exit = _called_names(commands, data), _first_exit(root, data)
                why = _why_not_reached(node, within, source, data, called, first_exit)
            out.append(UnusedLaunch(span, text, why))
            if len(out) >= MAX_UNUSED_LAUNCHES:  # a bounded scan: PL005 says "at least" past it
                return out
        if source is not main:  # a string in a sourced file is no evidence that this file launches training
            continue
        for node in assignments:
            held = _held(node, data)
            if held is None or not held[1] or not _may_count(held[1][0]) or _counts(held[1]) is None:
                continue
            name, words = held
            span = source.span(node.start_byte, node.end_byte)
            text = " ".join(words)
            text = _shortened(text)
            why = (
                _exited_before(result, span)
                or _unread_through(result, name, source)
                or (
                    f"it is a command string held in ${name}, and plint could not follow it to a command that runs it "
                    "(eval of a value it cannot know, or never run)"
                )
            )
            out.append(UnusedLaunch(span, text, why))
    return out
