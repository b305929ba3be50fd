"""Bash arithmetic (`$(( ))`, `(( ))`, `let`) evaluated statically on the expression text.

The grammar, the tokenising quirks and the error messages follow bash 5.2 (`expr.c`), checked
against a real bash by tests/shell/test_arith.py: 64-bit two's-complement wraparound, C
precedence with unary minus binding tighter than `**`, `--5` read as two minus signs, integer
constants in decimal, 0x hex, leading-0 octal and BASE#DIGITS, variables whose values are
themselves expressions evaluated recursively, an unset or empty variable read as 0.

What is not known statically stays unknown: `lookup` returns None for a variable whose value
cannot be known, and every result that depends on it is None, with the variable named in
`ArithOutcome.unknown`. `&&`, `||` and `?:` skip their dead side as bash does, so an unknown (or a
division by zero) there does not matter. An error is reported only where bash would certainly
refuse the expression; a refusal that depends on an unknown value leaves the result unknown.
"""

from __future__ import annotations

from plint.record import field, record
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Callable

_WRAP = 1 << 64
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHARS = _LETTERS | frozenset("0123456789")
_NUMBER_CHARS = _NAME_CHARS | frozenset("#@")
_DIGITS = frozenset("0123456789")
_SPACE = " \t\n"  # bash skips these between tokens
_BLANK = " \t"  # and these at the start of an expression it quotes in an error
_OPERATOR_CHARS = frozenset("=><+-*/%!()&|^~?:,")  # characters bash accepts as (part of) an operator
_OPERAND_TOKENS = ("num", "name")
# binary operators by precedence, loosest first (`**` is handled apart: right associative)
_PRECEDENCE = {
    "||": 1,
    "&&": 2,
    "|": 3,
    "^": 4,
    "&": 5,
    "==": 6,
    "!=": 6,
    "<": 7,
    ">": 7,
    "<=": 7,
    ">=": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "%": 10,
}
# bash's limit on nested evaluations (MAX_EXPR_RECURSION_LEVEL); only reached by a cycle of variables
BASH_RECURSION_LIMIT = 1024
# how deep plint follows variables naming variables before giving up (the result is then unknown)
MAX_DEPTH = 40

# How sure it is that the text being read is evaluated: bash skips the dead side of && || ?:
DEAD, MAYBE, LIVE = 0, 1, 2


@record
class ArithOutcome:
    value: int | None  # None when unknown or refused
    error: str | None = None  # bash would refuse the expression; worded as bash words it
    unknown: list[str] = field(default_factory=list)  # variables whose values are unknown
    # variables the expression assigns (`i++`, `x = 3`, `n += 2`): the value, None when unknown
    assignments: dict[str, int | None] = field(default_factory=dict)


class ArithError(Exception):
    """Bash refuses the expression."""


class _GaveUp(Exception):
    """Too deep to follow statically: the result is unknown, not an error."""


def _signed(value: int) -> int:
    value %= _WRAP
    return value - _WRAP if value >> 63 else value


def _constant(token: str) -> int:
    """A bash integer constant (the characters bash reads as one number: alnum, _, @, #)."""
    base, i, has_base = 10, 0, False
    if token[0] == "0":
        if len(token) == 1:
            return 0
        if token[1] in "xX":
            base, i = 16, 2
        else:
            base, i = 8, 1
        has_base = True
    value = 0
    while i < len(token):
        c = token[i]
        i += 1
        if c == "#":
            if has_base:
                raise ArithError("invalid number")
            if not 2 <= value <= 64:
                raise ArithError("invalid arithmetic base")
            base, value, has_base = value, 0, True
            if i >= len(token) or token[i] == "#":
                raise ArithError("invalid integer constant")
            continue
        if c in _DIGITS:
            digit = ord(c) - 48
        elif "a" <= c <= "z":
            digit = ord(c) - 87
        elif "A" <= c <= "Z":  # upper case repeats lower case up to base 36, then continues from 36
            digit = ord(c) - (55 if base <= 36 else 29)
        else:
            digit = 62 if c == "@" else 63
        if digit >= base:
            raise ArithError("value too great for base")
        value = _signed(value * base + digit)
    return value


def _binary(op: str, a: int, b: int) -> int:
    if op == "/":
        q = abs(a) // abs(b)
        return _signed(q if (a < 0) == (b < 0) else -q)  # C truncates toward zero
    if op == "%":
        r = abs(a) % abs(b)
        return _signed(-r if a < 0 else r)  # C: the remainder takes the dividend's sign
    if op == "+":
        return _signed(a + b)
    if op == "-":
        return _signed(a - b)
    if op == "*":
        return _signed(a * b)
    if op == "<<":
        return _signed(a << (b & 63))  # x86-64 masks the shift count, so `1 << 64` is 1 in bash
    if op == ">>":
        return a >> (b & 63)
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    return int({"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op])


class _State:
    """What one evaluation shares across the nested expressions of variable values."""

    def __init__(self, lookup: Callable[[str], str | None]):
        self.lookup = lookup
        self.assigned: dict[str, int | None] = {}
        self.unknown: list[str] = []
        # bash may refuse the expression depending on an unknown value (a division by it): a value
        # computed regardless is then not certain
        self.may_refuse = False
        self.writes = 0  # assignments so far: a repeated frame is a cycle only without writes between
        # one frame per expression being read: (its text, where the variable it is reading starts,
        # writes so far); frame 0 is the expression itself
        self.frames: list[tuple[str, int, int]] = []


class _Expression:
    """One expression text: bash's tokenizer and recursive-descent parser, evaluating as it goes."""

    def __init__(self, text: str, state: _State, mode: int):
        self.text = text
        self.state = state
        self.mode = mode
        self.pos = 0  # where the next token starts (after skipping blanks)
        self.tok: str | None = None  # the current token; None before the first
        self.last: str | None = None  # the token before it
        self.tok_value: int | str | None = None  # a number's value, a name, an `op=`'s operator
        self.tok_start: int | None = None  # bash's `lasttp`: the last token actually read
        self.lvalue: str | None = None  # the name just read, when the operand so far is only that name

    # ---- errors -----------------------------------------------------------------------------------
    def error(self, message: str, token_at: int | None = None, upto: int | None = None) -> ArithError:
        """Bash's wording: `EXPRESSION: MESSAGE (error token is "REST")`."""
        at = self.tok_start if token_at is None else token_at
        shown = self.text if upto is None else self.text[:upto]
        token = self.text[at:upto] if at is not None else ""
        return ArithError(f'{shown.lstrip(_BLANK)}: {message} (error token is "{token}")')

    # ---- tokens -----------------------------------------------------------------------------------
    def advance(self) -> None:
        text, n = self.text, len(self.text)
        i = self.pos
        while i < n and text[i] in _SPACE:
            i += 1
        if i >= n:
            self.last, self.tok, self.pos = self.tok, "eof", i
            return
        self.tok_start = i
        c = text[i]
        j = i + 1
        value: int | str | None = None
        if c in _LETTERS:
            while j < n and text[j] in _NAME_CHARS:
                j += 1
            if j < n and text[j] == "[":
                close = self.subscript_end(j)
                if close < 0:
                    raise self.error("bad array subscript")
                j = close + 1
            kind, value = "name", text[i:j]
        elif c in _DIGITS:
            while j < n and text[j] in _NUMBER_CHARS:
                j += 1
            try:
                value = _constant(text[i:j])
            except ArithError as exc:  # bash shows the expression only up to the bad number
                raise self.error(str(exc), i, j) from None
            kind = "num"
        else:
            kind, j, value = self.operator(i)
        self.last, self.tok, self.tok_value, self.pos = self.tok, kind, value, j

    def operator(self, i: int) -> tuple[str, int, str | None]:
        text = self.text
        c, c1 = text[i], text[i + 1 : i + 2]
        pair = c + c1
        if pair in ("==", "!=", ">=", "<=", "&&", "||", "**"):
            return pair, i + 2, None
        if pair in ("<<", ">>"):
            if text[i + 2 : i + 3] == "=":
                return "op=", i + 3, pair
            return pair, i + 2, None
        if pair in ("++", "--"):
            if self.tok == "name":
                return "post" + pair, i + 2, None
            if self.tok == "num" and self.last in ("pre++", "pre--"):  # `--x++`
                raise self.error(f"{pair}: assignment requires lvalue")
            k = i + 2
            while k < len(text) and text[k] in _SPACE:
                k += 1
            if k < len(text) and text[k] in _LETTERS:
                return "pre" + pair, i + 2, None
            return c, i + 1, None  # `--5` is two minus signs
        if c1 == "=" and c in "*/%+-&^|":
            return "op=", i + 2, c
        if c not in _OPERATOR_CHARS:
            if self.tok in _OPERAND_TOKENS:
                raise self.error("syntax error: invalid arithmetic operator")
            raise self.error("syntax error: operand expected")
        return c, i + 1, None

    def subscript_end(self, open_at: int) -> int:
        depth = 0
        for k in range(open_at, len(self.text)):
            if self.text[k] == "[":
                depth += 1
            elif self.text[k] == "]":
                depth -= 1
                if depth == 0:
                    return k
        return -1

    # ---- grammar, loosest first ------------------------------------------------------------------
    def run(self) -> int | None:
        if not self.text.strip(_SPACE):
            return 0
        self.advance()
        value = self.comma()
        if self.tok != "eof":
            raise self.error("syntax error in expression")
        return value

    def comma(self) -> int | None:
        value = self.assignment()
        while self.tok == ",":
            self.advance()
            value = self.assignment()
        return value

    def assignment(self) -> int | None:
        value = self.conditional()
        if self.tok not in ("=", "op="):
            return value
        name = self.lvalue
        if name is None:
            raise self.error("attempted assignment to non-variable")
        op = str(self.tok_value) if self.tok == "op=" else None
        self.advance()
        rhs = self.assignment()
        if op is None:
            result = rhs
        elif op in "/%" and rhs == 0:
            if self.mode == LIVE:
                raise self.error("division by 0")
            result = self.maybe_refused() if self.mode == MAYBE else value
        elif value is None or rhs is None:
            if op in "/%" and rhs is None:
                self.maybe_refused()
            result = None
        else:
            result = _binary(str(op), value, rhs)
        self.assign(name, result)
        self.lvalue = None
        return result

    def conditional(self) -> int | None:
        condition = self.binary(1)
        if self.tok != "?":
            return condition
        outer = self.mode
        self.mode = self.branch_mode(outer, condition, True)
        self.advance()
        if self.tok in ("eof", ":"):
            raise self.error("expression expected")
        if_true = self.comma()
        if self.tok != ":":
            raise self.error("`:' expected for conditional expression")
        self.mode = self.branch_mode(outer, condition, False)
        self.advance()
        if self.tok == "eof":
            raise self.error("expression expected")
        if_false = self.conditional()
        self.mode = outer
        self.lvalue = None
        if condition is None:
            return None
        return if_true if condition else if_false

    @staticmethod
    def branch_mode(outer: int, condition: int | None, taken_when_true: bool) -> int:
        if condition is None:
            return min(outer, MAYBE)
        return outer if bool(condition) == taken_when_true else DEAD

    def binary(self, min_precedence: int) -> int | None:
        left = self.power()
        while self.tok in _PRECEDENCE and _PRECEDENCE[self.tok] >= min_precedence:
            op = str(self.tok)
            after_op = self.pos
            outer = self.mode
            if op == "&&":
                self.mode = self.branch_mode(outer, left, True)
            elif op == "||":
                self.mode = self.branch_mode(outer, left, False)
            self.advance()
            right = self.binary(_PRECEDENCE[op] + 1)
            self.mode = outer
            self.lvalue = None
            left = self.combine(op, left, right, after_op)
        return left

    def combine(self, op: str, left: int | None, right: int | None, after_op: int) -> int | None:
        if op == "&&":
            if left == 0:
                return 0
            return None if left is None or right is None else int(right != 0)
        if op == "||":
            if left is not None and left != 0:
                return 1
            return None if left is None or right is None else int(right != 0)
        if op in "/%" and right == 0:
            if self.mode == LIVE:
                while after_op < len(self.text) and self.text[after_op] in _BLANK:
                    after_op += 1
                raise self.error("division by 0", after_op)
            if self.mode == MAYBE:
                return self.maybe_refused()
            right = 1  # bash's own stand-in on a skipped side
        if op in "/%" and right is None:
            self.maybe_refused()
        if left is None or right is None:
            return None
        return _binary(op, left, right)

    def power(self) -> int | None:
        base = self.unary()
        if self.tok != "**":
            return base
        self.advance()
        exponent = self.power()
        self.lvalue = None
        if exponent == 0:
            return 1
        if exponent is not None and exponent < 0:
            if self.mode == MAYBE:  # refused only if the branch runs
                return self.maybe_refused()
            raise self.error("exponent less than 0")  # bash checks this even on a skipped side
        if exponent is None:
            return self.maybe_refused()  # a negative one is refused
        if base is None:
            return None
        return _signed(pow(base, exponent, _WRAP))

    def unary(self) -> int | None:
        op = self.tok
        if op not in ("!", "~", "-", "+"):
            return self.primary()
        self.advance()
        value = self.unary()
        self.lvalue = None
        if value is None:
            return None
        if op == "!":
            return int(value == 0)
        if op == "~":
            return ~value
        return _signed(-value) if op == "-" else value

    def primary(self) -> int | None:
        tok = self.tok
        if tok in ("pre++", "pre--"):
            self.advance()
            if self.tok != "name":
                raise self.error("identifier expected after pre-increment or pre-decrement")
            name = str(self.tok_value)
            old = self.variable(name, self.tok_start or 0)
            value = None if old is None else _signed(old + (1 if tok == "pre++" else -1))
            self.assign(name, value)
            self.tok, self.last = "num", tok  # as bash does, so that `++x++` and `++x = 1` are refused
            self.advance()
            self.lvalue = None
            return value
        if tok == "(":
            self.advance()
            value = self.comma()
            if self.tok != ")":
                raise self.error("missing `)'")
            self.advance()
            self.lvalue = None
            return value
        if tok == "num":
            number = self.tok_value
            assert isinstance(number, int)  # the tokenizer gives a "num" its value
            self.advance()
            self.lvalue = None
            return number
        if tok == "name":
            name, start = str(self.tok_value), self.tok_start or 0
            self.advance()
            if self.tok == "=":  # about to be assigned: bash does not read it
                self.lvalue = name
                return 0
            value = self.variable(name, start)
            if self.tok in ("post++", "post--"):
                if value is not None:
                    self.assign(name, _signed(value + (1 if self.tok == "post++" else -1)))
                else:
                    self.assign(name, None)
                self.tok, self.last = "num", "name"
                self.advance()
                self.lvalue = None
                return value
            self.lvalue = name
            return value
        raise self.error("syntax error: operand expected")

    # ---- variables --------------------------------------------------------------------------------
    def variable(self, name: str, start: int) -> int | None:
        """The value of the variable read at `start`, as bash reads it in arithmetic."""
        if self.mode == DEAD:
            return 0
        if "[" in name:
            name = self.element(name)
            if name.endswith("[?]"):
                return None
        state = self.state
        if name in state.assigned:
            return state.assigned[name]
        raw = state.lookup(name)
        if raw is None:
            if name not in state.unknown:
                state.unknown.append(name)
            return None
        if not raw.strip(_SPACE):
            return 0
        return self.nested(raw, start)

    def element(self, reference: str) -> str:
        """`a[i+1]` -> `a[2]`: the subscript evaluated (`a[?]` when it is unknown)."""
        base, _, rest = reference.partition("[")
        index = _Expression(rest[:-1], self.state, self.mode).run()
        return f"{base}[{'?' if index is None else index}]"

    def nested(self, raw: str, start: int) -> int | None:
        """A variable whose value is itself an expression, read in this expression's mode."""
        frames = self.state.frames
        here = (self.text, start, self.state.writes)
        if here in frames:
            raise self.cycle(frames.index(here), here)
        if len(frames) >= MAX_DEPTH:
            raise _GaveUp()
        frames.append(here)
        try:
            return _Expression(raw, self.state, self.mode).run()
        except ArithError:
            if self.mode == MAYBE:  # bash refuses it only if this side runs
                return self.maybe_refused()
            raise
        finally:
            frames.pop()

    def cycle(self, first: int, here: tuple[str, int, int]) -> ArithError:
        """Variables that name each other: bash recurses until its limit and reports the expression
        it is reading there, which repeats with the cycle's period."""
        frames = self.state.frames + [here]
        period = len(frames) - 1 - first
        text, start, _ = frames[first + (BASH_RECURSION_LIMIT - 1 - first) % period]
        return ArithError(
            f'{text.lstrip(_BLANK)}: expression recursion level exceeded (error token is "{text[start:]}")'
        )

    def maybe_refused(self) -> int | None:
        """Bash refuses here for some values of the unknowns (or if this side runs): the result
        is unknown, and so is any value computed after it."""
        if self.mode != DEAD:
            self.state.may_refuse = True
        return None

    def assign(self, name: str, value: int | None) -> None:
        if self.mode == DEAD:
            return
        if "[" in name:
            name = self.element(name)
        self.state.assigned[name] = value if self.mode == LIVE else None
        self.state.writes += 1


def evaluate(expr: str, lookup: Callable[[str], str | None]) -> ArithOutcome:
    """Evaluate `expr` as bash would; `lookup(name)` gives a variable's text ("" when empty or
    unset, None when unknown). Subscripted names are looked up as `NAME[INDEX]`."""
    state = _State(lookup)
    text = expr.replace('"', "")  # quote removal: `$(( "$A" + 1 ))`
    try:
        value = _Expression(text, state, LIVE).run()
    except ArithError as exc:
        return ArithOutcome(None, str(exc), state.unknown, state.assigned)
    except (_GaveUp, RecursionError, MemoryError):
        return ArithOutcome(None, None, state.unknown, state.assigned)
    return ArithOutcome(None if state.may_refuse else value, None, state.unknown, state.assigned)
