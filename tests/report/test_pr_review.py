"""The pull-request review (issue 29): findings on the lines a pull request adds as inline comments of
one review, a single-line fix as a one-click ```suggestion, against the local fake of GitHub's REST API;
nothing posted twice across re-runs (fingerprints), findings on untouched lines left to the summary
comment, an API refusal costing the review and not the check."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fake_github import FakeGitHub
from markdown_it import MarkdownIt
from plint.github.github_api import Client
from plint.github.review import added_lines, post_review
from report_helpers import diagnostic, result

SHA = "0123456789abcdef0123456789abcdef01234567"
PR = 7
LAUNCH = "#!/bin/bash\nGBS=10\nMBS=1\necho @someone\n"
# the pull request adds lines 2 and 4 (GBS and the echo); line 3 is context
PATCH = "@@ -1,2 +1,4 @@\n #!/bin/bash\n+GBS=10\n MBS=1\n+echo @someone"


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        server.files[PR] = [{"filename": "a.sh", "patch": PATCH}]
        yield server


@pytest.fixture
def env(tmp_path, fake):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR, "head": {"sha": SHA}}}))
    (tmp_path / "a.sh").write_text(LAUNCH)
    return {
        "GITHUB_API_URL": fake.url,
        "GITHUB_TOKEN": "test-token",
        "GITHUB_REPOSITORY": "octo/repo",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_WORKSPACE": str(tmp_path),
    }


def client(fake) -> Client:
    return Client(fake.url, "test-token", sleep=lambda s: None, timeout_s=5)


def _gbs_finding(tmp_path, message="global batch 10 is not divisible by dp 4"):
    path = tmp_path / "a.sh"
    start = path.read_bytes().index(b"10")
    return diagnostic(
        "PL102",
        "error",
        message,
        str(path),
        2,
        5,
        key="gbs",
        fix={
            "description": "global batch 10 -> 12 for `dp` 4",
            "edits": [{"path": str(path), "start": start, "end": start + 2, "text": "12"}],
        },
    )


def _findings(tmp_path, *extra):
    path = str(tmp_path / "a.sh")
    untouched = diagnostic("PL305", "warning", "micro-batch 1 on an untouched line", path, 3, 1, key="mbs")
    return [result(path, _gbs_finding(tmp_path), untouched, *extra)]


def test_added_lines_of_a_patch():
    assert added_lines(PATCH) == {2, 4}
    assert added_lines("@@ -10,3 +20,3 @@ def f():\n ctx\n-old\n+new\n ctx\n\\ No newline at end of file") == {21}
    assert added_lines("@@ -1 +1,2 @@\n+a\n+b\n@@ -9,0 +10 @@\n+c") == {1, 2, 10}


def test_findings_on_changed_lines_are_one_review_with_a_one_click_suggestion(tmp_path, fake, env):
    outcome = post_review(_findings(tmp_path), env, client(fake))
    assert outcome.action == "created" and outcome.what == "review"
    (review,) = fake.reviews[PR]
    assert review["event"] == "COMMENT" and review["commit_id"] == SHA
    (comment,) = fake.review_comments[PR]  # the finding on line 3 (not changed) stays in the summary comment
    assert (comment["path"], comment["line"], comment["side"]) == ("a.sh", 2, "RIGHT")
    fences = [t for t in MarkdownIt("commonmark").parse(comment["body"]) if t.type == "fence"]
    assert [(f.info, f.content) for f in fences] == [("suggestion", "GBS=12\n")]
    assert "**PL102**" in comment["body"] and "<code>" not in comment["body"]


def test_re_runs_post_nothing_twice(tmp_path, fake, env):
    post_review(_findings(tmp_path), env, client(fake))
    again = post_review(_findings(tmp_path), env, client(fake))
    assert again.action == "unchanged" and len(fake.reviews[PR]) == 1 and len(fake.review_comments[PR]) == 1
    assert not [line for line in fake.log[3:] if line.startswith("POST")]
    # the number changed (same fingerprint: rule, path, key) and a new finding on line 4 appeared
    echo = diagnostic("PL002", "info", "$X is unknown", str(tmp_path / "a.sh"), 4, 6)
    third = post_review(
        [result(str(tmp_path / "a.sh"), _gbs_finding(tmp_path, "global batch 10 vs dp 8"), echo)], env, client(fake)
    )
    assert third.action == "created" and len(fake.reviews[PR]) == 2
    assert [c["line"] for c in fake.review_comments[PR]] == [2, 4]


def test_file_text_in_a_review_comment_cannot_mention_or_link(tmp_path, fake, env):
    echo = diagnostic(
        "PL002", "info", "ping @someone <img src=x> see #1 and http://evil.example", str(tmp_path / "a.sh"), 4, 6
    )
    post_review([result(str(tmp_path / "a.sh"), echo)], env, client(fake))
    body = fake.review_comments[PR][0]["body"]
    assert "@someone" not in body and "<img" not in body and "#1" not in body and "http://evil" not in body


def test_a_refused_review_costs_the_review_not_the_check(tmp_path, fake, env):
    fake.files[PR] = [{"filename": "a.sh", "patch": PATCH}]
    fake.read_only = True
    outcome = post_review(_findings(tmp_path), env, client(fake))
    assert outcome.action == "failed" and "403" in outcome.detail and PR not in fake.reviews


def test_a_line_github_cannot_resolve_is_a_failed_review_not_a_traceback(tmp_path, fake, env):
    """The fake answers 422 as GitHub does for a comment off the diff (a head that moved since)."""
    fake.files[PR] = [{"filename": "a.sh", "patch": PATCH}]
    from plint.github import review

    comments = review.review_comments(
        _findings(tmp_path), review.Context(workspace=str(tmp_path)), {"a.sh": {2, 3}}, set()
    )
    assert [c["line"] for c in comments] == [2, 3]
    fake.files[PR] = [{"filename": "a.sh", "patch": "@@ -1 +1 @@\n+#!/bin/bash"}]
    outcome = post_review(_findings(tmp_path), env, client(fake))
    assert outcome.action == "unchanged"  # nothing on an added line: no request that could fail
    fake.files[PR] = [{"filename": "a.sh", "patch": PATCH}]
    fake.inject(200, body=[{"filename": "a.sh", "patch": PATCH}])
    fake.inject(200, body=[])
    fake.inject(422, body={"message": "Unprocessable Entity"})
    outcome = post_review(_findings(tmp_path), env, client(fake))
    assert outcome.action == "failed" and "422" in outcome.detail


def test_check_posts_the_review_once_across_runs_end_to_end(tmp_path, fake, env):
    """`plint check --format github --pr-comment` twice, as the Action runs it: one summary comment and one
    review whose comment carries the suggestion."""
    launch = tmp_path / "a.sh"
    launch.write_text(
        "#!/bin/bash\ntorchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py "
        "--tensor-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 6 --num-layers 4 "
        "--hidden-size 512 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024\n"
    )
    fake.files[PR] = [{"filename": "a.sh", "patch": "@@ -0,0 +1,2 @@\n+#!/bin/bash\n+torchrun ..."}]
    run_env = {**os.environ, **env}
    run_env.pop("GITHUB_STEP_SUMMARY", None)
    run_env.pop("GITHUB_OUTPUT", None)
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
        assert done.returncode == 1, done.stderr  # PL102: dp 4 does not divide 6
        assert "pull-request review" in done.stderr
    assert len(fake.comments[PR]) == 1 and len(fake.reviews[PR]) == 1
    bodies = [c["body"] for c in fake.review_comments[PR]]
    assert any("**PL102**" in b and "```suggestion\n" in b for b in bodies), bodies
    assert all(c["line"] == 2 for c in fake.review_comments[PR])
