"""`wc -l`, `sort [-u]`, `uniq` and `head` over text plint knows line by line (plint.reading.shell.lines)."""

from __future__ import annotations

import pytest

from plint.reading.shell.lines import run_head, run_sort, run_uniq, run_wc
from plint.reading.shell.model import MappedText, Piece, Word


def run(tool, text: str | MappedText, *args: str) -> str | None:
    given = text if isinstance(text, MappedText) else MappedText([Piece(text)])
    out = tool([Word.of(a) for a in args], given, lambda w: None)
    return None if out is None else "".join(p.text if p.text is not None else "?" for p in out.pieces)


def test_known_text():
    assert run(run_wc, "a\nb\nc\n", "-l") == "3\n"
    assert run(run_wc, "a\nb", "--lines") == "1\n"  # wc counts newlines: the last line has none
    assert run(run_sort, "b\na\nb\n") == "a\nb\nb\n"
    assert run(run_sort, "b\na\nb\n", "-u") == "a\nb\n"
    assert run(run_uniq, "a\na\nb\na\n") == "a\nb\na\n"
    assert run(run_head, "a\nb\nc\n", "-n", "2") == "a\nb\n"
    assert run(run_head, "a\nb\nc\n", "-1") == "a\n"
    assert run(run_head, "a\nb\nc\n", "--lines=2") == "a\nb\n"


@pytest.mark.parametrize(
    "tool, args",
    [
        (run_wc, ("-c",)),
        (run_wc, ()),
        (run_sort, ("-n",)),
        (run_sort, ("-k", "2")),
        (run_uniq, ("-c",)),
        (run_head, ("-c", "5")),
    ],
)
def test_options_that_change_the_output_otherwise_leave_it_unknown(tool, args):
    assert run(tool, "b\na\n", *args) is None


def test_an_unknown_word_on_its_own_line_is_counted_not_compared():
    host = Piece(None, reason="a host", name="H", one_word=True)
    text = MappedText([host, Piece("\n"), Piece(None, reason="another", name="G", one_word=True), Piece("\n")])
    assert run(run_wc, text, "-l") == "2\n"
    assert run(run_sort, text, "-u") is None  # $H and $G may be the same text
    assert run(run_uniq, text) is None


def test_unknown_text_that_may_hold_a_newline_is_not_counted():
    text = MappedText([Piece(None, reason="$X has no default", name="X"), Piece("\n")])
    assert run(run_wc, text, "-l") is None
