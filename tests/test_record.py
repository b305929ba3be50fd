"""`@record` (plint.record): the part of dataclasses plint uses, on both of its ways of filling fields."""

import pytest
from plint.record import FrozenInstanceError, field, record


@record(frozen=True)
class Plain:
    a: int
    b: list = field(default_factory=list)
    c: int = 3


@record
class Slotted:
    __slots__ = ("p", "q")
    p: int
    q: int


def test_positional_keyword_and_default_values():
    assert Plain(1) == Plain(1, [], 3) == Plain(a=1, c=3)
    assert repr(Plain(1, c=4)) == "Plain(a=1, b=[], c=4)"
    assert Plain(1).b is not Plain(1).b  # a fresh list per instance


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: Plain(), "missing argument 'a'"),
        (lambda: Plain(1, [], 3, 4), "takes 3 arguments, 4 given"),
        (lambda: Plain(1, d=2), "unexpected arguments ['d']"),
    ],
)
def test_bad_calls_are_type_errors(call, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace("[", r"\[")):
        call()


def test_frozen_records_refuse_assignment():
    with pytest.raises(FrozenInstanceError):
        Plain(1).a = 2


def test_slotted_records_fill_their_slots():
    s = Slotted(1, q=2)
    assert (s.p, s.q) == (1, 2) and not hasattr(s, "__dict__")
    with pytest.raises(TypeError, match="missing argument 'q'"):
        Slotted(1)
