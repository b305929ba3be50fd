"""GitHub workflow-command annotations: titled, relative, escaped, errors first, a closing notice when
the runner would hide some, and the markdown report appended to $GITHUB_STEP_SUMMARY."""

from click.testing import CliRunner
from plint.cli.commands import cli
from plint.report import github
from report_helpers import diagnostic, result, write_launch


def test_escaping_of_data_and_properties():
    assert github.escape_data("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext: a,b"
    assert github.escape_property("dir,1/a:b%.sh\n") == "dir%2C1/a%3Ab%25.sh%0A"
    # `%` first: an already escaped-looking text is escaped again, not decoded
    assert github.escape_data("%0A") == "%250A"


def test_annotation_line():
    d = diagnostic("PL102", "error", "50% done\nnext: a,b", "dir,1/a:b.sh", 3, 4, 3, 9)
    assert github.annotation(d) == (
        "::error title=plint PL102 (global-batch-indivisible),file=dir%2C1/a%3Ab.sh,line=3,col=4,"
        "endLine=3,endColumn=9::50%25 done%0Anext: a,b"
    )


def test_info_is_a_notice_and_whole_file_findings_have_no_position():
    d = diagnostic("PL001", "info", "cannot read", "blob.sh")
    assert github.annotation(d) == "::notice title=plint PL001 (parse-error),file=blob.sh::cannot read"


def test_errors_first_suppressed_left_out(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    results = [
        result(
            "a.sh",
            diagnostic("PL002", "info", "first in file", "a.sh", 1, 1),
            diagnostic("PL305", "warning", "second", "a.sh", 2, 1),
            diagnostic("PL201", "error", "hidden", "a.sh", 2, 5, suppressed={"kind": "inSource"}),
        ),
        result("b.sh", diagnostic("PL201", "error", "last in file order", "b.sh", 9, 1)),
    ]
    lines = github.render(results).splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["::error", "::warning", "::notice"]
    assert "hidden" not in "".join(lines)


def test_a_notice_says_when_github_would_hide_annotations(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    many = [diagnostic("PL102", "error", f"finding {i}", "a.sh", i, 1) for i in range(1, 13)]
    lines = github.render([result("a.sh", *many)]).splitlines()
    assert len(lines) == 13 and lines[-1].startswith("::notice title=plint::12 findings (12 errors")


def test_clean_run(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert github.render([result("a.sh")]) == "plint: no findings"


def test_step_summary_gets_the_markdown_report(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    github.render([result("a.sh", diagnostic("PL201", "error", "tp spans nodes", "a.sh", 1, 1))])
    written = summary.read_text()
    assert written.startswith("earlier step\n<!-- plint -->") and "tp spans nodes" in written


def test_an_unwritable_step_summary_does_not_lose_the_annotations(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing-dir" / "summary.md"))
    out = github.render([result("a.sh", diagnostic("PL201", "error", "m", "a.sh", 1, 1))])
    assert out.startswith("::error ") and "GITHUB_STEP_SUMMARY" in capsys.readouterr().err


def test_cli_end_to_end_on_an_unresolved_launch(tmp_path, monkeypatch):
    write_launch(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    run = CliRunner().invoke(cli, ["check", "--format", "github", "launch.sh"])
    assert run.exit_code == 0
    (line,) = run.output.splitlines()
    assert line.startswith(
        "::notice title=plint PL002 (unresolved-value),file=launch.sh,line=3,col=19,"
        "endLine=3,endColumn=26::cluster.nnodes cannot be known statically"
    )
    assert "**PL002**" in (tmp_path / "summary.md").read_text()


def test_at_most_ten_annotations_of_each_kind_the_rest_in_the_log(monkeypatch, tmp_path):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "out"))
    many = [diagnostic("PL102", "error", f"error {i}", "a.sh", i, 1) for i in range(1, 13)]
    many += [diagnostic("PL305", "warning", f"warning {i}", "a.sh", i, 1) for i in range(1, 14)]
    lines = github.render([result("a.sh", *many)]).splitlines()
    assert sum(line.startswith("::error ") for line in lines) == 10
    assert sum(line.startswith("::warning ") for line in lines) == 10
    assert sum(line.startswith("plint: a.sh:") for line in lines) == 5  # the rest, as plain log lines
    assert lines[-1].startswith("::notice title=plint::25 findings (12 errors, 13 warnings")
    assert (tmp_path / "out").read_text() == "errors=12\nwarnings=13\n"
