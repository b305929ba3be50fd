"""The sticky pull-request comment against a local fake of GitHub's REST API (127.0.0.1, a thread):
created once, edited in place, an all-clear when clean, found on a later page, a 403 that costs the
comment and not the check, one retry on a 5xx, rate limits waited out (bounded), another bot's
look-alike comment left alone, the body under GitHub's limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from fake_github import FakeGitHub
from plint.github.github_api import Client
from plint.report import pr_comment
from plint.report.pr_comment import MARKER
from plint.github.sticky_comment import is_ours, post, report
from report_helpers import diagnostic, result, write_launch

SHA = "0123456789abcdef0123456789abcdef01234567"
PR = 7


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def env(tmp_path, fake):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR, "head": {"sha": SHA}}}))
    return {
        "GITHUB_API_URL": fake.url,
        "GITHUB_TOKEN": "test-token",
        "GITHUB_REPOSITORY": "octo/repo",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "4242",
        "GITHUB_WORKSPACE": str(tmp_path),
    }


def client(fake, sleeps: list, now: float | None = None) -> Client:
    return Client(fake.url, "test-token", sleep=sleeps.append, **({"now": lambda: now} if now else {}), timeout_s=5)


def findings(tmp_path, *messages):
    path = str(tmp_path / "a.sh")
    return [result(path, *[diagnostic("PL102", "error", m, path, 3 + i, 1) for i, m in enumerate(messages)])]


def test_created_once_then_edited_in_place(tmp_path, fake, env):
    sleeps: list = []
    first = post(findings(tmp_path, "global batch 10 is not divisible"), env, client(fake, sleeps))
    assert first.action == "created" and len(fake.comments[PR]) == 1
    body = fake.comments[PR][0]["body"]
    assert body.startswith(MARKER + "\n")
    assert "1 file(s) checked: 1 error(s), 0 warning(s)" in body
    assert f"https://github.com/octo/repo/blob/{SHA}/a.sh#L3" in body
    assert "https://github.com/octo/repo/actions/runs/4242" in body
    second = post(findings(tmp_path, "global batch 12 is not divisible", "another"), env, client(fake, sleeps))
    assert second.action == "updated" and second.comment_id == first.comment_id
    assert len(fake.comments[PR]) == 1 and "another" in fake.comments[PR][0]["body"]
    assert [line.split()[0] for line in fake.log] == ["GET", "POST", "GET", "PATCH"]
    assert sleeps == []


def test_all_clear_replaces_the_findings(tmp_path, fake, env):
    post(findings(tmp_path, "broken"), env, client(fake, []))
    outcome = post([result(str(tmp_path / "a.sh"))], env, client(fake, []))
    assert outcome.action == "updated" and len(fake.comments[PR]) == 1
    body = fake.comments[PR][0]["body"]
    assert "All clear" in body and "broken" not in body and body.startswith(MARKER)
    # the same body again is not sent again
    assert post([result(str(tmp_path / "a.sh"))], env, client(fake, [])).action == "unchanged"


def test_our_comment_found_on_a_later_page(tmp_path, env):
    with FakeGitHub(page_size=2) as fake:
        env = {**env, "GITHUB_API_URL": fake.url}
        for i in range(3):
            fake.add(PR, f"a human comment {i}", login="someone")
        ours = fake.add(PR, MARKER + "\n## plint\nold")
        outcome = post(findings(tmp_path, "new finding"), env, client(fake, []))
    assert outcome.action == "updated" and outcome.comment_id == ours["id"]
    assert len(fake.comments[PR]) == 4 and "new finding" in ours["body"]
    assert sum(entry.startswith("GET") for entry in fake.log) == 2  # page 1, then the Link to page 2


def test_another_bots_look_alike_comment_is_left_alone(tmp_path, fake, env):
    markdown_report = fake.add(PR, "<!-- plint -->\n## plint\nfrom `plint check --format markdown`", login="other[bot]")
    quoting = fake.add(PR, f"I saw this in the bot's comment:\n{MARKER}\n## plint", login="other[bot]")
    prefixed = fake.add(PR, MARKER + "-not-quite\n## plint", login="other[bot]")
    outcome = post(findings(tmp_path, "x"), env, client(fake, []))
    assert outcome.action == "created" and len(fake.comments[PR]) == 4
    assert not any(is_ours(c) for c in (markdown_report, quoting, prefixed))
    assert "from `plint check" in markdown_report["body"] and quoting["body"].startswith("I saw")


def test_a_read_only_token_costs_the_comment_not_the_check(tmp_path, fake, env, capsys):
    fake.read_only = True
    outcome = post(findings(tmp_path, "x"), env, client(fake, []))
    assert outcome.action == "failed" and "403" in outcome.detail and "fork" in outcome.detail
    assert PR not in fake.comments
    report(outcome)
    assert capsys.readouterr().out.startswith("::warning title=plint comment::cannot update")


def test_one_retry_after_a_5xx(tmp_path, fake, env):
    sleeps: list = []
    fake.inject(502)
    outcome = post(findings(tmp_path, "x"), env, client(fake, sleeps))
    assert outcome.action == "created" and len(sleeps) == 1
    assert [line.split()[0] for line in fake.log] == ["GET", "GET", "POST"]


def test_a_second_5xx_gives_up_the_comment(tmp_path, fake, env):
    sleeps: list = []
    fake.inject(502)
    fake.inject(503)
    outcome = post(findings(tmp_path, "x"), env, client(fake, sleeps))
    assert outcome.action == "failed" and "503" in outcome.detail and len(fake.log) == 2 and len(sleeps) == 1


def test_rate_limits_are_waited_out_within_a_bound(tmp_path, fake, env):
    sleeps: list = []
    fake.inject(429, {"Retry-After": "3"})
    assert post(findings(tmp_path, "x"), env, client(fake, sleeps)).action == "created"
    assert sleeps == [3.0]
    now = time.time()
    fake.inject(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(now) + 10)})
    assert post(findings(tmp_path, "y"), env, client(fake, sleeps, now=now)).action == "updated"
    assert sleeps[1] == pytest.approx(11.0, abs=1)
    # a reset an hour away is not waited for: the comment is given up at once
    fake.inject(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(now) + 3600)})
    assert post(findings(tmp_path, "z"), env, client(fake, sleeps, now=now)).action == "failed"
    assert len(sleeps) == 2


def test_not_a_pull_request_or_no_token_skips(tmp_path, fake, env):
    (tmp_path / "push.json").write_text(json.dumps({"ref": "refs/heads/main"}))
    assert post([], {**env, "GITHUB_EVENT_PATH": str(tmp_path / "push.json")}).action == "skipped"
    assert post([], {**env, "GITHUB_TOKEN": ""}).action == "skipped"
    assert fake.log == []


def test_the_body_stays_under_githubs_limit(tmp_path):
    many = findings(tmp_path, *[f"finding {i} " + "x" * 300 for i in range(400)])
    body = pr_comment.render(many, pr_comment.Context(repository="o/r", sha=SHA, workspace=str(tmp_path)))
    assert len(body) <= pr_comment.LIMIT
    assert "more finding(s) not shown" in body and body.startswith(MARKER)


def test_file_text_cannot_mention_or_link(tmp_path):
    body = pr_comment.render(
        findings(tmp_path, "ping @admin see http://evil.example <img src=x>"),
        pr_comment.Context(workspace=str(tmp_path)),
    )
    assert "@admin" not in body and "http://evil" not in body and "<img" not in body


def test_a_single_line_fix_is_a_folded_diff(tmp_path):
    """Issue 29 moved the one-click ```suggestion to the review (an issue comment gets no "Commit
    suggestion" button); the summary comment shows the line before and after."""
    path = tmp_path / "a.sh"
    path.write_text("#!/bin/bash\nGBS=10\n")
    start = path.read_bytes().index(b"10")
    d = diagnostic(
        "PL102",
        "error",
        "not divisible",
        str(path),
        2,
        5,
        fix={"description": "round it", "edits": [{"path": str(path), "start": start, "end": start + 2, "text": "16"}]},
    )
    body = pr_comment.render([result(str(path), d)], pr_comment.Context(workspace=str(tmp_path)))
    assert "```diff\n  -GBS=10\n  +GBS=16\n  ```" in body and "suggestion" not in body


def test_check_keeps_one_comment_across_runs_end_to_end(tmp_path, fake, env):
    """`plint check --format github --pr-comment` twice, as a CI step would run it: one comment."""
    launch = write_launch(tmp_path)
    outputs = tmp_path / "github_output"
    run_env = {**os.environ, **env, "GITHUB_OUTPUT": str(outputs)}
    run_env.pop("GITHUB_STEP_SUMMARY", None)
    for _ in range(2):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "plint",
                "check",
                "--format",
                "github",
                "--pr-comment",
                "--root",
                str(tmp_path),
                str(launch),
            ],
            env=run_env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert done.returncode in (0, 1), done.stderr
        assert "::" in done.stdout and "pull-request comment" in done.stderr
    assert len(fake.comments[PR]) == 1
    comment_calls = [line.split()[0] for line in fake.log if "/issues/" in line]
    assert comment_calls == ["GET", "POST", "GET"]  # the second run: unchanged
    assert "PL002" in fake.comments[PR][0]["body"]
    assert "errors=" in outputs.read_text() and "warnings=" in outputs.read_text()


def test_a_suggestion_cannot_be_closed_by_the_files_backticks(tmp_path):
    path = tmp_path / "a.sh"
    path.write_text("#!/bin/bash\nGBS=10 # ```` ends? \n")
    start = path.read_bytes().index(b"10")
    d = diagnostic(
        "PL102",
        "error",
        "x",
        str(path),
        2,
        5,
        fix={"description": "@someone", "edits": [{"path": str(path), "start": start, "end": start + 2, "text": "16"}]},
    )
    body = pr_comment.render([result(str(path), d)], pr_comment.Context(workspace=str(tmp_path)))
    assert "  `````diff\n  -GBS=10 # ```` ends? \n  +GBS=16 # ```` ends? \n  `````" in body
    assert "@someone" not in body


def _rendered(body: str) -> str:
    """The comment as GitHub's renderer would turn it into HTML (CommonMark with raw HTML, GFM tables)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(body)


def _texts(html: str, tag: str) -> list[str]:
    """The text content of every `tag` element, entities decoded, inner tags dropped."""
    from html.parser import HTMLParser

    class Collect(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.depth, self.found = 0, []

        def handle_starttag(self, name, attrs):
            if name == tag:
                self.depth += 1
                self.found.append("")

        def handle_endtag(self, name):
            if name == tag:
                self.depth -= 1

        def handle_data(self, data):
            if self.depth:
                self.found[-1] += data

    parser = Collect()
    parser.feed(html)
    return parser.found


def test_a_fix_summary_renders_without_literal_escapes(tmp_path):
    """Issue 29: `<summary>` is raw HTML, where markdown is not parsed: `gradient\\_accumulation` showed its
    backslashes. The rendered summary reads as the fix's description, its code span as <code>."""
    path = tmp_path / "ds.json"
    path.write_text('{"gradient_accumulation_steps": 3}\n')
    start = path.read_bytes().index(b"3")
    d = diagnostic(
        "PL102",
        "error",
        "x",
        str(path),
        1,
        35,
        fix={
            "description": "set gradient_accumulation_steps to 4 (*dp* x `micro_batch`) <b>",
            "edits": [{"path": str(path), "start": start, "end": start + 1, "text": "4"}],
        },
    )
    html = _rendered(pr_comment.render([result(str(path), d)], pr_comment.Context(workspace=str(tmp_path))))
    summaries = _texts(html, "summary")
    assert "fix: set gradient_accumulation_steps to 4 (*dp* x micro_batch) <b>" in summaries, summaries
    assert "micro_batch" in _texts(html, "code") and "<b>" not in html
    rule_summary = next(s for s in summaries if s.startswith("PL102"))
    assert "\\" not in rule_summary and "`" not in rule_summary


def test_memory_bars_keep_their_proportions(tmp_path):
    """Issue 29: in a code span the spaces that pad a bar to its width collapsed (and the line wrapped):
    each bar now sits in a code block, as wide as the text report draws it."""
    from plint.checking.check import check_paths
    from plint.report.text import BAR_WIDTH

    launch = tmp_path / "a.sh"
    launch.write_text(
        "#!/bin/bash\ntorchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
        "--micro-batch-size 1 --global-batch-size 8 --num-layers 4 --hidden-size 512 "
        "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --bf16\n"
    )
    run = check_paths([launch])
    html = _rendered(pr_comment.render(run.results, pr_comment.Context(workspace=str(tmp_path))))
    # the bar lines (the GPU line beside them names the GPU, with no bar)
    bars = [
        line
        for block in _texts(html, "pre")
        for line in block.splitlines()
        if line.split()[:1] in (["memory/GPU"], ["step"])
    ]
    assert [b.split()[0] for b in bars] == ["memory/GPU", "step"]
    for bar in bars:
        drawn = bar[bar.index("[") : bar.index("]") + 1]
        assert len(drawn) == BAR_WIDTH + 2, bar
