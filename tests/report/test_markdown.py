"""The markdown pull-request comment: marker, summary table, findings by file, rule details folded."""

from click.testing import CliRunner
from plint.cli.commands import cli
from plint.report import markdown
from plint.rules.registry import find_rule
from report_helpers import diagnostic, result, write_launch


def test_summary_table_findings_by_file_and_details(monkeypatch):
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    results = [result("b.sh", diagnostic("PL201", "error", "tp 16 spans nodes", "b.sh", 7, 34, 7, 36)),
               result("a.sh", diagnostic("PL002", "info", "$NNODES is unknown", "a.sh", 3, 19),
                      diagnostic("PL305", "warning", "suppressed-message", "a.sh", 1, 1,
                                 suppressed={"kind": "inSource", "justification": "x"}))]
    body = markdown.render(results)
    lines = body.splitlines()
    assert lines[0] == "<!-- plint -->" and lines[1] == "## plint"
    assert "| 2 | 1 | 0 | 1 |" in lines and "1 suppressed finding(s) not shown." in lines
    assert lines.index("### `a.sh`") < lines.index("### `b.sh`")  # files by path
    assert "- ❌ **PL201** `tp-spans-nodes` (error) at `b.sh:7:34`: tp 16 spans nodes" in lines
    assert "- ℹ️ **PL002** `unresolved-value` (info) at `a.sh:3:19`: $NNODES is unknown" in lines
    assert "suppressed-message" not in body
    why = " ".join(find_rule("PL201").docs.why.split())
    assert why in body and body.count("<details>") == 2  # once per rule that fired, not per finding


def test_clean_run_and_commit(monkeypatch):
    monkeypatch.setenv("GITHUB_SHA", "0123456789abcdef")
    body = markdown.render([result("a.sh")])
    assert body.splitlines()[1] == "## plint (0123456)" and body.rstrip().endswith("No findings.")
    assert "<details>" not in body


def test_messages_cannot_open_html_tags_but_code_spans_stay_literal():
    d = diagnostic("PL002", "info", "supply it with --env NNODES=<value>; or `--assume N=<v>`", "a.sh", 1, 1)
    body = markdown.render([result("a.sh", d)])
    assert "NNODES=&lt;value&gt;; or `--assume N=<v>`" in body


def test_a_long_report_is_cut_to_fit_a_comment():
    many = [diagnostic("PL102", "error", "x" * 500, f"f{i}.sh", 1, 1) for i in range(300)]
    body = markdown.render([result(d.path, d) for d in many])
    assert len(body) < 65_536 and "more finding(s)" in body


def test_cli_end_to_end_on_an_unresolved_launch(tmp_path, monkeypatch):
    write_launch(tmp_path)
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(cli, ["check", "--format", "markdown", "launch.sh"])
    assert run.exit_code == 0
    assert run.output.startswith("<!-- plint -->") and "| 1 | 0 | 0 | 1 |" in run.output
    assert "**PL002** `unresolved-value` (info) at `launch.sh:3:19`" in run.output
