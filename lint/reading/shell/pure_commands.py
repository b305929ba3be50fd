"""What the commands plint evaluates without running anything print: dirname, basename, pwd, cd, echo,
printf, realpath and seq compute their output from their words alone (coreutils' manuals, bash(1) for the
builtins), so `$(dirname "$0")`, `$(basename $CONFIG .sh)` and `$(seq 0 4)` are known where their words are. And
what some print in part: one count (`$(nvidia-smi -L | wc -l)`), or the path of a program (`$(which python3)`)."""

from __future__ import annotations

import os
import re

from plint.reading.shell.state import MAX_LOOP
from plint.reading.shell.unit import Unit

_INTEGER = re.compile(r"[+-]?\d+")
# wc(1)'s options that each make it print one count: -l lines, -w words, -c bytes, -m characters
WC_COUNTS = frozenset(("-l", "-w", "-c", "-m", "--lines", "--words", "--bytes", "--chars"))
# what prints the path of a program found on PATH, nothing when there is none: which(1), and bash(1)'s builtins
# `command -v NAME` and `type -P NAME` / `type -p NAME`
_LOOKUPS = (("which",), ("command", "-v"), ("type", "-P"), ("type", "-p"))


def pure_output(maybe_texts: list[str | None], cwd: str) -> tuple[str | None, str]:
    """What one pure command (dirname, basename, pwd, cd, echo, printf, realpath) prints, and the folder
    it leaves; None for any other command or a word known only at run time."""
    texts = [t for t in maybe_texts if t is not None]
    if not texts or len(texts) != len(maybe_texts):
        return None, cwd
    cmd, args = os.path.basename(texts[0]), [t for t in texts[1:] if not t.startswith("-")]
    if cmd == "seq":
        return _sequence(texts[1:]), cwd
    if cmd == "cd":
        return "", os.path.normpath(os.path.join(cwd, args[0] if args else cwd))
    if cmd == "pwd":
        return cwd, cwd
    if cmd == "dirname" and args:
        return os.path.dirname(args[0].rstrip("/")) or ".", cwd
    if cmd == "basename" and args:
        base = os.path.basename(args[0].rstrip("/"))
        if len(args) > 1 and base.endswith(args[1]) and base != args[1]:
            base = base[: -len(args[1])]
        return base, cwd
    if cmd in ("realpath", "readlink") and args:
        return os.path.normpath(os.path.join(cwd, args[0])), cwd
    if cmd == "echo":
        if texts[1:2] == ["-n"]:
            return " ".join(texts[1:]).replace("-n ", "", 1), cwd
        return " ".join(texts[1:]), cwd
    if cmd == "printf" and len(texts) > 1 and texts[1] in ("%s", "%s\\n", "%d"):
        return "".join(texts[2:]), cwd
    return None, cwd


def _sequence(args: list[str]) -> str | None:
    """`seq LAST`, `seq FIRST LAST`, `seq FIRST INCREMENT LAST` of integers, one number a line (coreutils seq(1));
    None for options, fractions, or more numbers than a loop plint follows (MAX_LOOP)."""
    if not 1 <= len(args) <= 3 or not all(_INTEGER.fullmatch(a) for a in args):
        return None
    numbers = [int(a) for a in args]
    first, step, last = (
        (1, 1, numbers[0]) if len(numbers) == 1 else (numbers[0], numbers[1] if len(numbers) == 3 else 1, numbers[-1])
    )
    if step == 0:
        return None
    values = range(first, last + (1 if step > 0 else -1), step)
    if len(values) > MAX_LOOP:
        return None
    return "".join(f"{v}\n" for v in values)


def prints_a_count(node, unit: Unit) -> bool:
    """Whether a command substitution prints one number: its last stage is `wc` with one count option
    reading its stdin (`nvidia-smi -L | wc -l`; wc(1) prints no file name then), or `ssh HOST 'CMD | wc -l'`
    running such a pipeline on the host. Read from the words as written: they are expanded once, elsewhere."""
    body = [c for c in node.named_children if c.type != "comment"]
    if len(body) != 1 or body[0].type not in ("pipeline", "command"):
        return False
    last = [c for c in body[0].named_children if c.type != "comment"][-1] if body[0].type == "pipeline" else body[0]
    if last.type != "command":
        return False
    words = [unit.text(c.start_byte, c.end_byte) for c in last.named_children if c.type != "variable_assignment"]
    if not words:
        return False
    name = words[0].rsplit("/", 1)[-1]
    if name == "wc":
        return len(words) == 2 and words[1] in WC_COUNTS
    remote = words[-1].strip("'\"") if name == "ssh" and len(words) > 2 else ""
    counted = re.search(r"\|\s*wc\s+(\S+)\s*$", remote)
    return counted is not None and counted.group(1) in WC_COUNTS


def program_lookup(body: list, unit: Unit) -> str | None:
    """The program a command substitution looks up on PATH (`$(which python3)`, `$(command -v deepspeed || true)`):
    its name, which a launch runs as bash would run the name itself; None for anything else. Where the program is not
    installed the substitution is empty, a way the script's author does not mean to run (so plint assumes it). Read
    from the words as written (a lookup's words are plain names): expanding them again here would double the work of
    each level of nested substitutions."""
    node = body[0] if len(body) == 1 else None
    if node is not None and node.type == "list":  # `LOOKUP || true`: the fallback prints nothing
        parts = [c for c in node.named_children if c.type != "comment"]
        operators = [c.type for c in node.children if not c.is_named]
        if len(parts) != 2 or operators != ["||"] or _written_words(parts[1], unit) not in (["true"], [":"]):
            return None
        node = parts[0]
    texts = _written_words(node, unit) if node is not None else []
    name = texts[-1] if texts else None
    if name is None or tuple(texts[:-1]) not in _LOOKUPS or not re.fullmatch(r"[\w.+-]+", name):
        return None
    return name


def _written_words(node, unit: Unit) -> list[str]:
    """A simple command's words as written; none for any other node."""
    if node.type != "command":
        return []
    return [unit.text(c.start_byte, c.end_byte) for c in node.named_children if c.type != "variable_assignment"]
