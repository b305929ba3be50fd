"""`wc -l`, `sort [-u]`, `uniq` and `head` over text plint knows line by line (plint.reading.shell.lines)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plint.reading.shell.lines import RUNNERS, run_head, run_sort, run_uniq, run_wc
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


TOOLS = {
    "wc": shutil.which("wc"),
    "sort": shutil.which("sort"),
    "uniq": shutil.which("uniq"),
    "head": shutil.which("head"),
}


@pytest.mark.skipif(not all(TOOLS.values()), reason="coreutils are not installed")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(st.sampled_from(["a", "b", "node1", "node10", "node2", ""]), max_size=8),
    ended=st.booleans(),
    call=st.sampled_from([("wc", "-l"), ("sort",), ("sort", "-u"), ("uniq",), ("head", "-n", "2"), ("head", "-3")]),
)
def test_known_text_as_coreutils_give_it(lines, ended, call):
    """On known text each tool writes what the real one writes (sort in the C locale, byte order)."""
    text = "\n".join(lines) + ("\n" if ended and lines else "")
    real = subprocess.run(
        [TOOLS[call[0]], *call[1:]], input=text, capture_output=True, text=True, env={"LC_ALL": "C"}, check=True
    ).stdout
    mine = run(RUNNERS[call[0]], text, *call[1:])
    assert mine == (real.lstrip() if call[0] == "wc" else real)


def test_nested_line_tools_are_each_expanded_once(tmp_path):
    """A line tool's words are expanded once a level, even where its output stays unknown (`wc -c`): twice a
    level doubled the work at each of 40 levels until the work budget stopped the file."""
    from plint.checking.check import check_paths

    nested = "$(wc -c " * 40 + "x" + ")" * 40
    launch = "torchrun --nproc_per_node 4 pretrain_gpt.py --num-layers 2\n"
    (tmp_path / "launch.sh").write_text(f"X={nested}\n{launch}")
    (result,) = check_paths([tmp_path / "launch.sh"])
    assert not any("work budget" in d.message for d in result.diagnostics)
    assert result.layouts and result.layouts[0].value("cluster.gpus_per_node") == 4


def test_the_evaluator_names_every_line_tool():
    from plint.reading.shell.state import LINE_TOOLS

    assert LINE_TOOLS == set(RUNNERS)


@pytest.mark.parametrize(
    "condition, decided",
    [
        ('echo "$ARGS" | grep -q -- "--is-scaling-mode"', "no"),  # the flag is commented out of ARGS
        ('echo "$ARGS" | grep -q -- "--fake-tp"', "yes"),
        ('echo "$ARGS" | grep -qF -- "--fake-tp"', None),  # a bundle of flags: not read
        ('echo "$ARGS" | grep -q -F "--fake-tp"', None),  # -F's pattern starting with a dash is an option
        ('echo "$ARGS" | grep -q "fake.tp"', None),  # a regular expression: not evaluated
        ('echo "$ARGS" | grep -q -i "FAKE"', None),  # an option plint does not read
        ('echo "$ARGS" | grep -q fake args.txt', None),  # a file: grep reads it, not the pipe
        ('echo "$UNSET" | grep -q fake', None),  # text known only at run time
    ],
)
def test_grep_q_over_known_text_decides_a_condition(run, condition, decided):
    # failed before: `if echo "$SIM_ARGS" | grep -q -- "--is-scaling-mode"` (a Megatron simulator fork) was
    # undecided, and the tp, pp and GPUs per node its branch resets unknown
    script = f'ARGS=" --fake-world-size 8 --fake-tp 2 "\nif {condition}; then X=yes; else X=no; fi\n'
    value = run(script).variables["X"].value[0]
    assert value.text == decided
    if decided is not None and shutil.which("bash") and shutil.which("grep"):  # as bash and grep decide it
        real = subprocess.run(["bash", "-c", script + 'printf %s "$X"'], capture_output=True, text=True, env={})
        assert real.stdout == decided
