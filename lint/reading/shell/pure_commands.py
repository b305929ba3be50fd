"""What the commands plint evaluates without running anything print: dirname, basename, pwd, cd, echo,
printf, realpath and seq compute their output from their words alone (coreutils' manuals, bash(1) for the
builtins), so `$(dirname "$0")`, `$(basename $CONFIG .sh)` and `$(seq 0 4)` are known where their words are."""

from __future__ import annotations

import os
import re

from plint.reading.shell.state import MAX_LOOP

_INTEGER = re.compile(r"[+-]?\d+")


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
