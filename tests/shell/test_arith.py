"""Bash arithmetic, checked against real bash."""

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plint.shell.arith import evaluate

BASH = shutil.which("bash")


def bash_value(expr: str) -> str:
    proc = subprocess.run([BASH, "-c", f"echo $(( {expr} ))"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "ERROR"


def test_bash_refuses_underscored_numbers_with_its_own_words():
    out = evaluate("1_000_000", lambda n: None)
    assert out.value is None and 'value too great for base (error token is "1_000_000")' in out.error


def test_variables_are_evaluated_recursively_and_unknowns_propagate():
    env = {"A": "3", "B": "A*2", "E": ""}
    assert evaluate("A*B + E", env.get).value == 18
    out = evaluate("GPUS*NODES", {"GPUS": "8"}.get)
    assert out.value is None and out.unknown == ["NODES"]
    assert evaluate("0 && X", {}.get).value == 0  # short circuit: X never evaluated


def test_assignments_are_reported():
    out = evaluate("i=2, j=i*3", {}.get)
    assert out.value == 6 and out.assignments == {"i": 2, "j": 6}


operand = st.integers(-50, 50).map(str) | st.sampled_from(["0x1f", "010", "2#101", "A", "B"])
operator = st.sampled_from(["+", "-", "*", "/", "%", "<<", ">>", "<", ">=", "==", "!=", "&", "|", "^",
                            "&&", "||", "**"])


@st.composite
def expressions(draw, depth=3):
    if depth == 0 or draw(st.booleans()):
        return draw(operand)
    kind = draw(st.sampled_from(["binary", "unary", "ternary", "paren"]))
    if kind == "unary":
        return draw(st.sampled_from(["-", "!", "~"])) + draw(expressions(depth=depth - 1))
    if kind == "paren":
        return "(" + draw(expressions(depth=depth - 1)) + ")"
    if kind == "ternary":
        return f"{draw(expressions(depth=depth - 1))} ? {draw(expressions(depth=depth - 1))} : " \
               f"{draw(expressions(depth=depth - 1))}"
    op = draw(operator)
    right = draw(expressions(depth=depth - 1))
    if op == "**":
        right = str(draw(st.integers(0, 5)))
    return f"{draw(expressions(depth=depth - 1))} {op} {right}"


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@settings(max_examples=300, deadline=None)
@given(expressions())
def test_agrees_with_bash(expr):
    env = {"A": "7", "B": "A+1"}
    expected = subprocess.run([BASH, "-c", f"A=7; B='A+1'; echo $(( {expr} ))"], capture_output=True,
                              text=True)
    out = evaluate(expr, env.get)
    if expected.returncode != 0:
        assert out.error is not None, (expr, out)
    else:
        assert out.error is None and str(out.value) == expected.stdout.strip(), (expr, out)
