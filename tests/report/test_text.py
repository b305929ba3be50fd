"""The text report: header, location, numbered source with carets under the exact characters, message,
help with the fix, docs link, summary; --concise one-liners; suppressed findings only counted; colour
only on a terminal."""

from click.testing import CliRunner
from plint.cli.commands import cli
from plint.report import text
from report_helpers import diagnostic, result, write_launch


def _caret_columns(lines, source_prefix):
    """(source line, caret line) for the numbered line that starts with source_prefix."""
    i = next(n for n, line in enumerate(lines) if line.startswith(source_prefix))
    return lines[i], lines[i + 1]


def test_full_finding_shows_header_location_caret_message_and_docs(tmp_path):
    path = write_launch(tmp_path, "#!/bin/bash\ntorchrun --tensor-model-parallel-size 16 x.py\n")
    d = diagnostic("PL201", "error", "tp 16 does not fit in the 8 GPUs of a node", path, 2, 39, 2, 41)
    out = text.render([result(path, d)], color=False)
    lines = out.splitlines()
    assert lines[0] == "PL201 [error] tp-spans-nodes"
    assert lines[1] == f"  --> {path}:2:39"
    source, carets = _caret_columns(lines, "2 | ")
    assert carets.index("^") == source.index("16") and carets.count("^") == 2
    assert "  = tp 16 does not fit in the 8 GPUs of a node" in lines
    assert lines[-3].endswith("/docs/rules/PL201.md")
    assert lines[-1] == "1 file(s) checked: 1 error(s), 0 warning(s), 0 info"


def test_carets_count_characters_and_cells_not_bytes(tmp_path):
    # "é" is two bytes and one cell, "模型" six bytes and four cells, the tab stops at a multiple of four
    path = write_launch(tmp_path, 'X="é模型"\tTP=3\n')
    d = diagnostic("PL101", "error", "bad", path, 1, 9, 1, 13)  # in characters, TP=3 starts at column 9
    source, carets = _caret_columns(text.render([result(path, d)], color=False).splitlines(), "1 | ")
    assert "\t" not in source and source.endswith('"   TP=3')
    cells_before = source.index("TP=3") + source.count("模") + source.count("型")
    assert carets.index("^") == cells_before and carets.count("^") == 4


def test_a_multi_line_span_shows_its_first_and_last_lines(tmp_path):
    body = "torchrun x.py \\\n" + "".join(f"    --flag-{i} \\\n" for i in range(6)) + "    --last 1\n"
    path = write_launch(tmp_path, body)
    d = diagnostic("PL305", "warning", "whole command", path, 1, 1, 8, 17)
    lines = text.render([result(path, d)], color=False).splitlines()
    gutter = [line.split(" |")[0].strip() for line in lines[2:] if line and not line.startswith("  ")][:-1]
    assert gutter == ["1", "...", "8"]
    _, last_carets = _caret_columns(lines, "8 | ")
    assert last_carets.count("^") == len("--last 1")


def test_help_line_and_diff_when_a_fix_exists(tmp_path):
    path = write_launch(tmp_path, "torchrun --global-batch-size 1000 x.py\n")
    start = path.read_bytes().index(b"1000")
    fix = {
        "description": "use 1008, the nearest valid global batch",
        "applicability": "unsafe",
        "edits": [{"path": str(path), "start": start, "end": start + 4, "text": "1008"}],
    }
    d = diagnostic("PL102", "error", "global batch 1000 ...", path, 1, 30, 1, 34, fix=fix)
    lines = text.render([result(path, d)], color=False).splitlines()
    # the help line names the command that applies an unsafe fix (issue 16)
    assert "  help: use 1008, the nearest valid global batch (unsafe fix: `plint fix --unsafe-fixes`)" in lines
    assert "    - torchrun --global-batch-size 1000 x.py" in lines
    assert "    + torchrun --global-batch-size 1008 x.py" in lines


def test_a_file_that_cannot_be_read_back_still_reports(tmp_path):
    d = diagnostic("PL001", "error", "binary file (contains NUL bytes)", tmp_path / "gone.sh")
    out = text.render([result(tmp_path / "gone.sh", d, unreadable="binary file")], color=False)
    assert out.splitlines()[:2] == ["PL001 [error] parse-error", f"  --> {tmp_path / 'gone.sh'}"]


def test_suppressed_findings_are_counted_not_printed(tmp_path):
    path = write_launch(tmp_path, "torchrun x.py\n")
    shown = diagnostic("PL002", "info", "shown", path, 1, 1, 1, 9)
    hidden = diagnostic(
        "PL201", "error", "hidden", path, 1, 1, 1, 9, suppressed={"kind": "inSource", "justification": "intended"}
    )
    for concise in (False, True):
        out = text.render([result(path, shown, hidden)], concise=concise, color=False)
        assert "hidden" not in out and "shown" in out
        assert out.splitlines()[-1] == "1 file(s) checked: 0 error(s), 0 warning(s), 1 info, 1 suppressed"


def test_concise_is_one_line_per_finding_in_file_order(tmp_path):
    a, b = tmp_path / "a.sh", tmp_path / "b.sh"
    results = [
        result(
            a, diagnostic("PL002", "info", "late", a, 9, 2, 9, 3), diagnostic("PL201", "error", "early", a, 2, 5, 2, 7)
        ),
        result(b, diagnostic("PL001", "error", "whole file", b)),
    ]
    assert text.render(results, concise=True).splitlines() == [
        f"{a}:2:5: PL201 [error] early",
        f"{a}:9:2: PL002 [info] late",
        f"{b}: PL001 [error] whole file",
        "2 file(s) checked: 2 error(s), 0 warning(s), 1 info",
    ]


def test_colour_only_when_asked_or_on_a_terminal(tmp_path, monkeypatch):
    path = write_launch(tmp_path, "torchrun x.py\n")
    results = [result(path, diagnostic("PL201", "error", "m", path, 1, 1, 1, 9))]
    assert "\x1b[" in text.render(results, color=True)
    plain = text.render(results, color=False)
    assert "\x1b[" not in plain
    # decided from the terminal: the CLI's output is not a TTY, and NO_COLOR wins on one
    assert text.render(results) == plain
    monkeypatch.setattr("sys.stdout.isatty", lambda: True, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert text.render(results) == plain


def test_output_is_deterministic(tmp_path):
    path = write_launch(tmp_path)
    runs = [CliRunner().invoke(cli, ["check", str(path)]).output for _ in range(2)]
    assert runs[0] == runs[1]


def test_cli_end_to_end_on_an_unresolved_launch(tmp_path, monkeypatch):
    write_launch(tmp_path)
    monkeypatch.chdir(tmp_path)
    full = CliRunner().invoke(cli, ["check", "launch.sh"])
    assert full.exit_code == 0  # info findings do not fail the run
    lines = full.output.splitlines()
    assert "PL002 [info] unresolved-value" in lines and "  --> launch.sh:3:19" in lines
    source, carets = _caret_columns(lines, "3 | ")
    assert source[carets.index("^") :].startswith("$NNODES") and carets.count("^") == len("$NNODES")
    assert any("--env NNODES=<value>" in line for line in lines)
    assert lines[-1] == "1 file(s) checked: 0 error(s), 0 warning(s), 1 info"
    concise = CliRunner().invoke(cli, ["check", "--concise", "launch.sh"]).output.splitlines()
    assert concise[0].startswith("launch.sh:3:19: PL002 [info] cluster.nnodes cannot be known statically")
    assert len(concise) == 2
