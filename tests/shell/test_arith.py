"""Bash arithmetic, checked against the real bash: values, refusals word for word, unknowns."""

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plint.reading.shell.arith import evaluate

BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")

# variables the bash side sets; `lookup` gives "" for any other name, as bash reads an unset one
VARIABLES = {"A": "7", "B": "A+1", "E": "", "N": "-3"}


def lookup(name: str) -> str:
    return VARIABLES.get(name, "")


def bash(expr: str, extra: dict[str, str] | None = None) -> tuple[str | None, str | None]:
    """(stdout, None) or (None, the message after bash's `bash: line 1: ` prefix)."""
    env = {**VARIABLES, **(extra or {})}
    script = "".join(f"{k}='{v}'; " for k, v in env.items()) + f"echo $(({expr}))"
    proc = subprocess.run([BASH, "-c", script], capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip().split("line 1: ", 1)[-1]
    return proc.stdout.strip(), None


def ours(expr: str, look=lookup) -> tuple[str | None, str | None]:
    out = evaluate(expr, look)
    return (None if out.value is None else str(out.value)), out.error


# ---- examples: each compared with bash itself ------------------------------------------------------
EXAMPLES = [
    # constants: decimal, octal, hex, BASE#DIGITS, wraparound, and bash's refusals
    "0x1F + 010",
    "64#_@",
    "36#Z",
    "10#08",
    "0x",
    "00",
    "9223372036854775808",
    "99999999999999999999",
    "1_000_000",
    "2 + 1_000",
    "08",
    "08 + 1",
    "1e3",
    "0x1g",
    "65#1",
    "1#1",
    "2#",
    "2#2",
    "2#-1",
    "0#1",
    "0x#1",
    "0.5",
    "37#Z",
    # operators, precedence, C division and shifts
    "-2**2",
    "2 ** 3 ** 2",
    "2**63",
    "2**64",
    "0 ** 0",
    "(-3) ** 3",
    "17 % -5",
    "-17 % 5",
    "-17 / 5",
    "-9223372036854775808 / -1",
    "-9223372036854775808 % -1",
    "9223372036854775807 + 1",
    "1 << 64",
    "1 << -1",
    "-8 >> 1",
    "7 >> 65",
    "1 < 2 < 3",
    "5 == 5 == 1",
    "!0 + ~5",
    "+-+-3",
    "--5",
    "++5",
    "4 ? 5 ? 6 : 7 : 8",
    "1 ? 2, 3 : 4",
    "3 ? 4 : 5, 6",
    "1,2,3",
    "  \t 3 +\n 4",
    # short circuits skip the dead side, division by zero and all
    "0 && 1/0",
    "1 || 1/0",
    "1 ? 2 : 1/0",
    "0 ? 1/0 : 3",
    "1 && 1/0",
    "0 && 2 ** -1",
    "0 && 08",
    # variables: recursive, empty, unset, assignments and increments
    "A * B",
    "B ** 2",
    "E + 1",
    "UNSET + 1",
    "N * N",
    "x = A, x += B, x",
    "x = y = 4",
    "i = 3, i--, i",
    "++i, ++i",
    "x++ + 1",
    "x+++1",
    "x---1",
    "x ++",
    "a <<= 2",
    "a = 5, a >>= 1, a",
    "q=2,q**3",
    "a[1] + 2",
    "0 && (x = 5), x",
    "a ? b = 1 : 2",
    "1 ? b = 5 : 2",
    "x = 0 && 1/0",
    # refusals, worded as bash words them
    "1 / 0",
    "5 % 0",
    "1/0+2",
    "8 /  0",
    "x /= 0",
    "x /= 0 , 1",
    "2 ** -1",
    "1 +",
    "1 2",
    "a b",
    "$",
    "'1'",
    "1 +@",
    "2 @",
    "(1) @",
    "1 = 2",
    "1 + a = 2",
    "(a) = 3",
    "-x = 3",
    "x++ = 3",
    "a **= 2",
    "1 ? 2 : 3 = 4",
    "0 ? 1 : 2 = 3",
    "1 ? 2",
    "1 ? : 3",
    "1 ?",
    "--x++",
    "--4++",
    "()",
    "!",
    "1 ^^ 2",
    "xx[",
    "b[1",
]


@needs_bash
@pytest.mark.parametrize("expr", EXAMPLES)
def test_agrees_with_bash_on_examples(expr):
    assert ours(expr) == bash(expr)


@needs_bash
def test_variables_whose_values_refuse():
    extra = {"X": "1/0", "Z": "1_0", "W": "3 4", "P": "("}
    look = {**VARIABLES, **extra}
    for expr in ("X + 1", "Z + 1", "W", "P", "0 && X", "1 || X", "0 ? X : 3"):
        assert ours(expr, lambda n: look.get(n, "")) == bash(expr, extra), expr


@needs_bash
@pytest.mark.parametrize(
    "cycle", [{"V": "Q", "Q": "V"}, {"V": "Q", "Q": "R", "R": "V"}, {"V": "V+1"}, {"V": "1 + (Q)", "Q": "2 * V"}]
)
def test_variables_naming_each_other_fail_as_in_bash(cycle):
    """Bash recurses 1024 levels and then names the expression it was reading there."""
    for expr in ("V", "V + 1", "2 * (V)"):
        assert ours(expr, lambda n: cycle.get(n, "")) == bash(expr, cycle), expr


def test_the_underscore_number_is_refused_with_bash_words():
    out = evaluate("1_000_000", lookup)
    assert out.value is None
    assert out.error == '1_000_000: value too great for base (error token is "1_000_000")'


def test_double_quotes_are_removed_as_the_shell_does():
    assert evaluate('"1 + 2" * 3', lookup).value == 7


# ---- unknowns -------------------------------------------------------------------------------------
def unknown_u(name: str) -> str | None:
    return None if name == "U" else lookup(name)


def test_unknown_variables_make_the_result_unknown_and_are_named():
    out = evaluate("GPUS * NODES", {"GPUS": "8"}.get)
    assert out.value is None and out.error is None and out.unknown == ["NODES"]
    out = evaluate("B * U", unknown_u)
    assert out.value is None and out.unknown == ["U"]
    assert evaluate("U * 0", unknown_u).value is None  # honest: no algebra on unknowns
    out = evaluate("K * 2", {"K": "U + 1", "U": None}.get)  # unknown inside a variable's value
    assert out.value is None and out.unknown == ["U"]


def test_short_circuits_ignore_unknowns_on_the_dead_side():
    assert evaluate("0 && U", unknown_u).value == 0
    assert evaluate("1 || U", unknown_u).value == 1
    assert evaluate("1 ? 4 : U", unknown_u).value == 4
    out = evaluate("0 && U", unknown_u)
    assert out.unknown == []


def test_refusals_that_depend_on_an_unknown_leave_the_result_unknown():
    for expr in ("U ? 1/0 : 2", "U && 1/0", "1 / U", "U || 2 ** -1"):
        out = evaluate(expr, unknown_u)
        assert out.value is None and out.error is None, expr
    out = evaluate("U + 1/0", unknown_u)  # refused whatever U is
    assert out.error == '1/0: division by 0 (error token is "0")'.replace("1/0", "U + 1/0")


def test_assignments_are_reported_for_the_caller():
    out = evaluate("i = 2, j = i * 3, k++", lookup)
    assert out.value == 0 and out.assignments == {"i": 2, "j": 6, "k": 1}
    out = evaluate("n += U", unknown_u)
    assert out.value is None and out.assignments == {"n": None}
    out = evaluate("U && (m = 5)", unknown_u)  # may or may not run: m becomes unknown
    assert out.assignments == {"m": None}
    assert evaluate("0 && (m = 5)", unknown_u).assignments == {}


def test_subscripts_are_evaluated_and_looked_up_by_element():
    seen = []

    def look(name):
        seen.append(name)
        return {"i": "1", "a[2]": "40"}.get(name, "")

    assert evaluate("a[i + 1] + 2", look).value == 42 and "a[2]" in seen
    assert evaluate("a[U]", unknown_u).value is None


def test_variables_evaluated_in_a_loop_that_changes_them_are_given_up_not_refused():
    out = evaluate("V", {"V": "i++ < 100 ? V : 0", "i": ""}.get)
    assert out.error is None and out.value is None


def test_bad_input_never_raises():
    for expr in ("(" * 5000 + "1" + ")" * 5000, "\x00", "a[[[", "1 ? ? ?", "#", "0x" * 100):
        evaluate(expr, lookup)


# ---- property tests against bash ------------------------------------------------------------------
OPERATORS = ["+", "-", "*", "/", "%", "<<", ">>", "<", "<=", ">", ">=", "==", "!=", "&", "|", "^", "&&", "||", ","]
operands = (
    st.integers(-40, 40).map(str)
    | st.integers(0, 2**64).map(str)
    | st.sampled_from(["0x1f", "010", "2#101", "64#@", "A", "B", "E", "N", "UNSET", "09", "x", "1_0"])
)


@st.composite
def expressions(draw, depth=3, names=("A", "B", "E", "N", "UNSET", "x")):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(operands)
    sub = expressions(depth=depth - 1, names=names)
    kind = draw(
        st.sampled_from(["binary", "binary", "binary", "unary", "ternary", "paren", "power", "assign", "increment"])
    )
    if kind == "unary":
        return draw(st.sampled_from(["-", "!", "~", "+", "- "])) + draw(sub)
    if kind == "paren":
        return "(" + draw(sub) + ")"
    if kind == "ternary":
        return f"{draw(sub)} ? {draw(sub)} : {draw(sub)}"
    if kind == "power":
        return f"{draw(sub)} ** {draw(st.integers(-1, 4))}"
    if kind == "assign":
        op = draw(st.sampled_from(["=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="]))
        return f"{draw(st.sampled_from(names))} {op} {draw(sub)}"
    if kind == "increment":
        name = draw(st.sampled_from(names))
        return draw(st.sampled_from([f"{name}++", f"++{name}", f"{name}--", f"--{name}"]))
    return f"{draw(sub)} {draw(st.sampled_from(OPERATORS))} {draw(sub)}"


@needs_bash
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions())
def test_agrees_with_bash(expr):
    assert ours(expr) == bash(expr), expr


@needs_bash
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions(names=("A", "x", "U")).filter(lambda e: "U" in e))
def test_what_is_known_despite_an_unknown_holds_for_every_value(expr):
    """A value reported with U unknown is bash's whatever U is; so is a refusal (its wording may
    differ: with some values bash stops earlier, at a division by U)."""
    out = evaluate(expr, unknown_u)
    if out.value is None and out.error is None:
        return
    for u in ("0", "1", "-5", "64"):
        value, error = bash(expr, {"U": u})
        if out.error is not None:
            assert error is not None, (expr, u)
        else:
            assert (str(out.value), None) == (value, error), (expr, u)
