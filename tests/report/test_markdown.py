"""The markdown pull-request comment: marker, summary table, findings by file, rule details folded."""

import re

from click.testing import CliRunner
from plint.cli.commands import cli
from plint.report import markdown
from plint.rules.registry import find_rule
from report_helpers import diagnostic, result, write_launch


def test_summary_table_findings_by_file_and_details(monkeypatch):
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    results = [
        result("b.sh", diagnostic("PL201", "error", "tp 16 spans nodes", "b.sh", 7, 34, 7, 36)),
        result(
            "a.sh",
            diagnostic("PL002", "info", "$NNODES is unknown", "a.sh", 3, 19),
            diagnostic(
                "PL305",
                "warning",
                "suppressed-message",
                "a.sh",
                1,
                1,
                suppressed={"kind": "inSource", "justification": "x"},
            ),
        ),
    ]
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


def test_the_report_stays_within_githubs_limit_with_everything_counted():
    """Issue 30: the rule <details> blocks were appended after the findings' 60,000-character cut (a real
    30-file folder gave 68,726 characters). Every part now counts against GitHub's 65,536."""
    from plint.rules.registry import all_rules

    codes = sorted(all_rules())
    many = [
        diagnostic(codes[i % len(codes)], "warning", f"finding {i} " + "x" * 400, f"dir/f{i:03}.sh", 1, 1)
        for i in range(400)
    ]
    body = markdown.render([result(d.path, d) for d in many])
    assert len(body) <= markdown.LIMIT, len(body)
    assert "more finding(s)" in body and body.count("<details>") == body.count("</details>")
    explained = body.count("<details>")
    assert 0 < explained < len(codes) and f"({len(codes) - explained} rule(s) not explained here" in body
    assert body.count("```") % 2 == 0


def test_a_real_folder_of_findings_stays_within_the_limit(tmp_path, monkeypatch):
    """The same through `plint check --format markdown` on a folder of launches with pictures and findings."""
    from fixture_paths import FIXTURES

    launches = sorted(FIXTURES.glob("*/launch.sh"))
    for i in range(4):
        for launch in launches:
            (tmp_path / f"{i}-{launch.parent.name}.sh").write_bytes(launch.read_bytes())
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(cli, ["check", "--format", "markdown", "."])
    assert run.exit_code in (0, 1), run.output
    assert "more finding(s)" in run.output and len(run.output) <= 65_536, len(run.output)


def test_a_file_name_cannot_mention_embed_or_link(tmp_path, monkeypatch):
    """Issue 30: the picture's title (the path) went into `<summary>` raw, so a file named like this
    mentioned, embedded an image and linked an issue. Rendered as GitHub would (CommonMark with raw
    HTML), the page has no such element and shows the name as written."""
    from html.parser import HTMLParser

    from markdown_it import MarkdownIt

    name = "@someone <img src=x onerror=alert(1)> #1 [l](https:evil) *b* |t| `c`.sh"
    (tmp_path / name).write_text(
        "#!/bin/bash\ntorchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
        "--pipeline-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 8 --num-layers 4 "
        "--hidden-size 512 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --bf16\n"
    )
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(cli, ["check", "--format", "markdown", name])
    assert "Device grid" in run.output, run.output
    html = MarkdownIt("commonmark").enable("table").render(run.output)

    class Elements(HTMLParser):
        tags: list = []
        texts: list = []  # outside code: where GitHub links mentions and issue numbers
        in_code = 0

        def handle_starttag(self, tag, attrs):
            self.tags.append((tag, dict(attrs)))
            self.in_code += tag in ("code", "pre")

        def handle_endtag(self, tag):
            self.in_code -= tag in ("code", "pre")

        def handle_data(self, data):
            if not self.in_code:
                self.texts.append(data)

    page = Elements(convert_charrefs=True)
    page.feed(html)
    assert not [t for t, _ in page.tags if t in ("img", "em", "script")]
    assert all(a["href"].startswith("https://github.com/plint-dev/plint/") for t, a in page.tags if t == "a")
    summary = next(t for t in page.texts if t.startswith("Device grid"))
    assert name in summary.replace("\u200b", "")  # shown as written
    for text in page.texts:
        assert not re.search(r"@[A-Za-z0-9]|#\d", text), text
