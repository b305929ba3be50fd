"""Bash arithmetic (`$(( ))`, `(( ))`, `let`) evaluated statically on the expression text.

Semantics follow bash: 64-bit wraparound, C operator precedence, `**` right-associative, variables
whose values are themselves expressions evaluated recursively, an empty or unset variable is 0.
A variable whose value is unknown makes the result unknown. Bash refuses numbers such as
`1_000_000` ("value too great for base"), and so does this evaluator, with bash's wording.
"""

from __future__ import annotations

import re
from plint.record import field, record
TYPE_CHECKING = False  # typing is imported by type checkers only: it costs start-up time
if TYPE_CHECKING:
    from typing import Callable

_MASK = (1 << 64) - 1
_TOKEN = re.compile(r"\s*(?:(?P<num>[0-9][0-9A-Za-z_#@]*)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                    r"|(?P<op>\*\*=|<<=|>>=|\*\*|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|[-+*/%&|^]=|[-+*/%<>=!~&|^?:(),]))")
_BINARY = {  # operator -> (precedence, right associative)
    ",": (1, False), "?": (3, True), "||": (4, False), "&&": (5, False), "|": (6, False), "^": (7, False),
    "&": (8, False), "==": (9, False), "!=": (9, False), "<": (10, False), ">": (10, False), "<=": (10, False),
    ">=": (10, False), "<<": (11, False), ">>": (11, False), "+": (12, False), "-": (12, False),
    "*": (13, False), "/": (13, False), "%": (13, False), "**": (15, True),
}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=", "**="}
MAX_DEPTH = 32


class ArithError(Exception):
    pass


@record
class ArithOutcome:
    value: int | None
    error: str | None = None
    unknown: list[str] = field(default_factory=list)
    assignments: dict[str, int | None] = field(default_factory=dict)


def _signed(v: int) -> int:
    v &= _MASK
    return v - (1 << 64) if v >> 63 else v


def _number(text: str) -> int:
    """A bash integer constant: decimal, 0x hex, leading-0 octal, or base#digits."""
    def bad() -> ArithError:
        return ArithError(f'{text}: value too great for base (error token is "{text}")')

    base, digits = 10, text
    if "#" in text:
        b, _, digits = text.partition("#")
        if not b.isdigit() or not 2 <= int(b) <= 64 or not digits:
            raise ArithError(f'{text}: invalid arithmetic base (error token is "{text}")')
        base = int(b)
    elif text[:2] in ("0x", "0X"):
        base, digits = 16, text[2:]
    elif len(text) > 1 and text[0] == "0":
        base, digits = 8, text[1:]
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ@_"
    value = 0
    for ch in digits:
        d = alphabet.find(ch) if base > 36 else alphabet.find(ch.lower()) if ch.isalpha() else alphabet.find(ch)
        if d < 0 or d >= base:
            raise bad()
        value = value * base + d
    return _signed(value)


class _Parser:
    def __init__(self, text: str, env: "_Env", depth: int):
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                rest = text[pos:].strip()
                raise ArithError(f"syntax error: operand expected (error token is \"{rest}\")")
            kind = m.lastgroup or "op"
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0
        self.env = env
        self.depth = depth

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise ArithError("syntax error: operand expected")
        self.i += 1
        return tok

    def parse(self) -> int | None:
        if not self.tokens:
            return 0
        value = self.expr(0, True)
        if self.peek() is not None:
            raise ArithError(f"syntax error in expression (error token is \"{self.peek()[1]}\")")
        return value

    # Each parse function takes `live`: False on a branch bash would not evaluate (short circuit),
    # where unknown names and division by zero do not matter.
    def expr(self, min_prec: int, live: bool) -> int | None:
        left = self.unary(live)
        while True:
            tok = self.peek()
            if tok is None or tok[0] != "op" or tok[1] not in _BINARY:
                return left
            op = tok[1]
            prec, right_assoc = _BINARY[op]
            if prec < min_prec:
                return left
            self.i += 1
            if op == "?":
                cond = left
                a = self.expr(0, live and cond != 0)
                if self.take()[1] != ":":
                    raise ArithError("syntax error: `:' expected for conditional expression")
                b = self.expr(prec, live and cond != 1 and cond is not None and cond == 0 or
                              (live and cond is None))
                left = None if cond is None else (a if cond else b)
                continue
            if op in ("&&", "||"):
                short = (left == 0) if op == "&&" else (left is not None and left != 0)
                right = self.expr(prec + 1, live and not short)
                if short:
                    left = 0 if op == "&&" else 1
                elif left is None or right is None:
                    left = None
                else:
                    left = int(bool(right))
                continue
            right = self.expr(prec if right_assoc else prec + 1, live)
            left = self.apply(op, left, right, live)

    def apply(self, op: str, a: int | None, b: int | None, live: bool) -> int | None:
        if op == ",":
            return b
        if a is None or b is None:
            return None
        if op in ("/", "%") and b == 0:
            if live:
                raise ArithError("division by 0 (error token is \"0\")")
            return 0
        if op == "**" and b < 0:
            raise ArithError("exponent less than 0")
        if op == "/":
            q = abs(a) // abs(b)
            return _signed(q if (a >= 0) == (b >= 0) else -q)
        if op == "%":
            r = abs(a) % abs(b)
            return _signed(r if a >= 0 else -r)
        result = {
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "**": lambda: pow(a, b, 1 << 64),
            "<<": lambda: a << (b & 63), ">>": lambda: a >> (b & 63), "&": lambda: a & b, "|": lambda: a | b,
            "^": lambda: a ^ b, "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
            ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
        }[op]()
        return _signed(result)

    def unary(self, live: bool) -> int | None:
        kind, text = self.take()
        if kind == "op":
            if text in ("+", "-", "!", "~"):
                v = self.unary(live)
                if v is None:
                    return None
                return _signed({"+": v, "-": -v, "!": int(v == 0), "~": ~v}[text])
            if text in ("++", "--"):
                nxt = self.peek()
                if nxt is None or nxt[0] != "name":
                    # not an increment: bash reads `--0` as two unary minus signs
                    v = self.unary(live)
                    return None if v is None else _signed(v if text == "--" else v)
                kind2, name = self.take()
                v = self.env.get(name, self.depth, live)
                new = None if v is None else _signed(v + (1 if text == "++" else -1))
                self.env.set(name, new, live)
                return new
            if text == "(":
                v = self.expr(0, live)
                if self.take()[1] != ")":
                    raise ArithError("syntax error: missing `)'")
                return v
            raise ArithError(f"syntax error: operand expected (error token is \"{text}\")")
        if kind == "num":
            return _number(text)
        # a name: maybe an assignment or a postfix ++/--
        nxt = self.peek()
        if nxt is not None and nxt[0] == "op" and nxt[1] in _ASSIGN:
            self.i += 1
            rhs = self.expr(2, live)
            if nxt[1] == "=":
                value = rhs
            else:
                value = self.apply(nxt[1][:-1], self.env.get(text, self.depth, live), rhs, live)
            self.env.set(text, value, live)
            return value
        if nxt is not None and nxt[0] == "op" and nxt[1] in ("++", "--"):
            self.i += 1
            v = self.env.get(text, self.depth, live)
            self.env.set(text, None if v is None else _signed(v + (1 if nxt[1] == "++" else -1)), live)
            return v
        return self.env.get(text, self.depth, live)


class _Env:
    def __init__(self, lookup: Callable[[str], str | None]):
        self.lookup = lookup
        self.assigned: dict[str, int | None] = {}
        self.unknown: list[str] = []

    def get(self, name: str, depth: int, live: bool) -> int | None:
        if name in self.assigned:
            return self.assigned[name]
        raw = self.lookup(name)
        if raw is None:
            if live and name not in self.unknown:
                self.unknown.append(name)
            return None
        raw = raw.strip()
        if raw == "":
            return 0
        if depth >= MAX_DEPTH:
            raise ArithError(f"{name}: expression recursion level exceeded")
        return _Parser(raw, self, depth + 1).parse()

    def set(self, name: str, value: int | None, live: bool) -> None:
        if live:
            self.assigned[name] = value


def evaluate(expr: str, lookup: Callable[[str], str | None]) -> ArithOutcome:
    env = _Env(lookup)
    try:
        value = _Parser(expr, env, 0).parse()
    except ArithError as exc:
        return ArithOutcome(None, str(exc), env.unknown, env.assigned)
    except (RecursionError, OverflowError, MemoryError):
        return ArithOutcome(None, "expression too complex", env.unknown, env.assigned)
    return ArithOutcome(value, None, env.unknown, env.assigned)
