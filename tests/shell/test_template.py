"""`${VAR}` / `$VAR` templates filled by envsubst or sed, and slots left unfilled."""

import os
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plint.checking.check import check_paths
from plint.reading.shell.model import MappedText, Piece, Word
from plint.reading.shell.sed import _regex, run_sed
from plint.reading.shell.template import mark_unfilled

TEMPLATE = '{"bs": ${GBS}, "mbs": $MBS, "stage": ${ZERO}}\n'


def virtual(result, name):
    return next(v for k, v in result.virtual_files.items() if os.path.basename(k) == name)


def test_envsubst_fills_exported_variables_from_an_input_redirect(run):
    r = run("export GBS=64 MBS=2\nexport ZERO=1\nenvsubst < tpl.json > ds.json\n", files={"tpl.json": TEMPLATE})
    content = virtual(r, "ds.json").content
    assert content.render() == '{"bs": 64, "mbs": 2, "stage": 1}\n'
    i = content.render().index("64")
    assert os.path.basename(content.locate(i, i + 2).path) == "main.sh"  # the value points at its assignment


def test_envsubst_leaves_unexported_and_unset_slots_unknown(run):
    r = run("export GBS=64\nMBS=2\ncat tpl.json | envsubst > ds.json\n", files={"tpl.json": TEMPLATE})
    pieces = virtual(r, "ds.json").content.pieces
    reasons = {p.name: p.reason for p in pieces if not p.known}
    assert set(reasons) == {"MBS", "ZERO"}
    assert "set in the script but not exported" in reasons["MBS"] and "unfilled template slot $MBS" in reasons["MBS"]
    assert "is not set in the script" in reasons["ZERO"]


def test_envsubst_shell_format_limits_the_variables(run):
    r = run("export GBS=64 MBS=2 ZERO=3\nenvsubst '$GBS ${ZERO}' < tpl.json > ds.json\n", files={"tpl.json": TEMPLATE})
    assert virtual(r, "ds.json").content.render() == '{"bs": 64, "mbs": $MBS, "stage": 3}\n'


def test_envsubst_options_are_not_evaluated(run):
    # what `envsubst --variables` prints is not followed: the file it writes is known only at run time
    r = run("export GBS=64\nenvsubst --variables < tpl.json > ds.json\n", files={"tpl.json": TEMPLATE})
    pieces = virtual(r, "ds.json").content.pieces
    assert pieces and not any(p.known for p in pieces)
    assert "ds.json holds what the command at line 2 writes, known only at run time" in pieces[0].reason


def test_sed_reads_dollar_brace_slots_literally(run):
    r = run(
        'GBS=64\ncp tpl.json ds.json\nsed -i "s/\\${GBS}/$GBS/" ds.json\n'
        "sed -i 's/\\$MBS/2/; s/${ZERO}/3/' ds.json\n",
        files={"tpl.json": TEMPLATE},
    )
    assert virtual(r, "ds.json").content.render() == '{"bs": 64, "mbs": 2, "stage": 3}\n'


def test_sed_basic_regex_translation():
    assert _regex("${GBS}").fullmatch("${GBS}")
    assert _regex("a$").search("xa") and not _regex("a$").search("ax")  # `$` anchors at the end only
    assert _regex("^B.T*").match("BATT")
    assert _regex("\\$X").fullmatch("$X")
    assert _regex("a\\{2\\}") is None  # an interval (a GNU operator): not evaluated
    assert _regex("[0-9]\\+").fullmatch("128") and _regex("[[:alpha:]_]*").fullmatch("a_B")  # brackets, `\\+`
    assert _regex("${GBS}", extended=True) is None  # braces are an interval in ERE


def test_mark_unfilled_makes_each_left_slot_unknown():
    marked = mark_unfilled(MappedText([Piece('{"a": ${X}, "b": 2, "c": "$Y"}', None)]), "ds.json")
    unknown = [p for p in marked.pieces if not p.known]
    assert [p.name for p in unknown] == ["X", "Y"]
    assert "unfilled template slot ${X} in ds.json" in unknown[0].reason
    assert marked.render().count('"b": 2') == 1


def codes(path):
    (result,) = check_paths([path])
    return [(d.code, d.message) for d in result.diagnostics]


def test_a_template_alone_is_named_not_a_parse_error(tmp_path):
    (tmp_path / "tpl.json").write_text('{"train_batch_size": ${GBS},\n "zero_optimization": {"stage": $ZERO}}\n')
    found = codes(tmp_path / "tpl.json")
    assert [c for c, _ in found] == ["PL002"]
    assert "is a template: ${GBS}, $ZERO are filled by the script" in found[0][1]


def test_broken_json_with_a_slot_is_still_a_parse_error(tmp_path):
    (tmp_path / "a.json").write_text('{"train_batch_size": ${GBS} "x": 1}\n')
    (tmp_path / "b.json").write_text('{"train_batch_size": 8, "fp16": {"enabled": TRUE}}\n')
    assert "PL001" in [c for c, _ in codes(tmp_path / "a.json")]
    assert "PL001" in [c for c, _ in codes(tmp_path / "b.json")]


def test_an_unfilled_slot_through_the_launch_is_unresolved_not_invalid(tmp_path):
    (tmp_path / "tpl.json").write_text(
        '{"train_micro_batch_size_per_gpu": ${MBS}, "gradient_accumulation_steps": 2,'
        ' "zero_optimization": {"stage": ${ZERO}}}\n'
    )
    (tmp_path / "launch.sh").write_text(
        'MBS=4\nsed "s/\\${MBS}/$MBS/" tpl.json > ds.json\ndeepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n'
    )
    found = codes(tmp_path / "launch.sh")
    assert "PL001" not in [c for c, _ in found]
    (message,) = [m for c, m in found if c == "PL002" and "ZERO" in m]
    assert "unfilled template slot ${ZERO}" in message and "add the slot to the script's sed/envsubst" in message


def test_envsubst_sees_assignments_before_it(run):
    r = run("GBS=32 MBS=1 ZERO=0 envsubst < tpl.json > ds.json\n", files={"tpl.json": TEMPLATE})
    assert virtual(r, "ds.json").content.render() == '{"bs": 32, "mbs": 1, "stage": 0}\n'
    assert "GBS" not in r.variables  # the prefix assignment lasts for that command only


SED = shutil.which("sed")


@pytest.mark.skipif(SED is None, reason="sed is not installed")
@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(st.sampled_from(["a", "ab", "bab", "host1", "", "x.y"]), max_size=6),
    ended=st.booleans(),
    script=st.sampled_from(["s/$/ slots=4/", "s/^/x /", "s/b/Z/", "s/b/Z/g", "s/a.*/q/", "s/./-/", "s/^$/E/"]),
)
def test_sed_edits_line_by_line_as_sed(lines, ended, script):
    """On known text plint's `s` commands write what GNU sed writes: each line edited on its own (a `s` without
    g replaces the first match of each line; `^` and `$` anchor at each line)."""
    text = "\n".join(lines) + ("\n" if ended and lines else "")
    real = subprocess.run([SED, script], input=text, capture_output=True, text=True, check=True).stdout
    out = run_sed([Word.of(script)], MappedText([Piece(text)]), lambda w: None, lambda w, c: None)
    assert out is not None and "".join(p.text or "" for p in out.pieces) == real
