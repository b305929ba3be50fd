"""What the commands plint evaluates without running anything print: dirname, basename, pwd, cd, echo,
printf, realpath, seq and expr's integer arithmetic compute their output from their words alone (coreutils'
manuals, bash(1) for the builtins), so `$(dirname "$0")`, `$(basename $CONFIG .sh)`, `$(seq 0 4)` and
`$(expr $NNODES \\* 8)` are known where their words are. And
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
    if cmd == "expr":
        return _integer_expression(texts[1:]), cwd
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


# expr(1)'s integer operators, by precedence: * / % bind tighter than + and -, each group left to right
_EXPR_OPERATORS = (("+", "-"), ("*", "/", "%"))
_EXPR_MAX_WORDS = 31


def _integer_expression(args: list[str]) -> str | None:
    """What `expr` prints for integer operands joined by + - * / % (coreutils expr(1): one word per operand and
    operator, `\\*` quoted from the shell; / and % truncate toward zero); None for anything else (comparisons,
    strings, parentheses, division by zero, where expr prints an error and nothing on stdout)."""
    if not args or len(args) % 2 == 0 or len(args) > _EXPR_MAX_WORDS:
        return None
    operands, operators = args[0::2], args[1::2]
    if not all(_INTEGER.fullmatch(a) for a in operands) or not all(o in "+-*/%" and len(o) == 1 for o in operators):
        return None
    # fold the tighter operators first, then + and -, each left to right
    values, pending = [int(operands[0])], []
    for op, text in zip(operators, operands[1:]):
        value = int(text)
        if op in _EXPR_OPERATORS[1]:
            left = values.pop()
            if op != "*" and value == 0:
                return None
            values.append(left * value if op == "*" else _truncated(left, value, op))
        else:
            pending.append(op)
            values.append(value)
    total = values[0]
    for op, value in zip(pending, values[1:]):
        total = total + value if op == "+" else total - value
    return str(total)


def _truncated(left: int, right: int, op: str) -> int:
    """C's / and % (toward zero), which expr uses, not Python's floor division."""
    quotient = abs(left) // abs(right) * (1 if (left >= 0) == (right >= 0) else -1)
    return quotient if op == "/" else left - right * quotient


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


def program_lookup(body: list, unit: Unit, expanded: list[str | None] | None = None) -> str | None:
    """The program a command substitution looks up on PATH (`$(which python3)`, `$(command -v deepspeed || true)`,
    `$(which $SCHEDULER)`): its name, which a launch runs as bash would run the name itself; None for anything else.
    Where the program is not installed the substitution is empty, a way the script's author does not mean to run (so
    plint assumes it). A lone command is read from its words as the caller already `expanded` them; a lookup
    `|| true` from its words as written (plain names): expanding them again here would double the work of each level
    of nested substitutions."""
    node = body[0] if len(body) == 1 else None
    if node is not None and node.type == "command" and expanded is not None:
        texts = [t for t in expanded if t is not None] if None not in expanded else []
        return _looked_up(texts)
    if node is not None and node.type == "list":  # `LOOKUP || true`: the fallback prints nothing
        parts = [c for c in node.named_children if c.type != "comment"]
        operators = [c.type for c in node.children if not c.is_named]
        if len(parts) != 2 or operators != ["||"] or _written_words(parts[1], unit) not in (["true"], [":"]):
            return None
        node = parts[0]
    return _looked_up(_written_words(node, unit) if node is not None else [])


def _looked_up(texts: list[str]) -> str | None:
    """The name a lookup command's words (`which NAME`, `command -v NAME`, `type -P NAME`) look up, else None."""
    name = texts[-1] if texts else None
    if name is None or tuple(texts[:-1]) not in _LOOKUPS or not re.fullmatch(r"[\w.+-]+", name):
        return None
    return name


def _written_words(node, unit: Unit) -> list[str]:
    """A simple command's words as written; none for any other node."""
    if node.type != "command":
        return []
    return [unit.text(c.start_byte, c.end_byte) for c in node.named_children if c.type != "variable_assignment"]


# the redirections that send a command's standard output to /dev/null (bash(1), REDIRECTION): `>`, `1>`, `>>`,
# `&>`, `&>>`, `>|`; `2>/dev/null` and its kin leave it where it was
_STDOUT_REDIRECTS = frozenset((">", "1>", ">>", "1>>", "&>", "&>>", ">|"))


def stdout_discarded(node) -> bool | None:
    """Whether a redirected statement drops its standard output: its redirections all go to /dev/null (or copy one
    descriptor onto another, `2>&1`); None when one goes anywhere else (a file plint does not follow)."""
    redirects = [c for c in node.children if c.type == "file_redirect"]
    if not redirects or len(redirects) != len(node.children) - 1:
        return None
    operators = set()
    for r in redirects:
        descriptor = r.child_by_field_name("descriptor")
        bare = [c for i, c in enumerate(r.children) if r.field_name_for_child(i) is None]
        operator = ((descriptor.text if descriptor is not None else b"") + (bare[0].text if bare else b"")).decode()
        target = r.child_by_field_name("destination")
        if target is None:
            return None
        if operator.endswith(">&") and target.text in (b"1", b"2"):
            continue
        if target.text != b"/dev/null":
            return None
        operators.add(operator)
    return bool(operators & _STDOUT_REDIRECTS)
