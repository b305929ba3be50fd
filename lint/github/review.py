"""Findings on the lines a pull request changes, as one pull-request review: each an inline comment on
its line, a single-line fix as a ```suggestion block (GitHub shows "Commit suggestion" on review comments,
never on issue comments), beside the sticky summary comment.

The REST calls (docs.github.com, "REST API endpoints for pull requests" and "... for pull request
reviews"): GET /repos/{repo}/pulls/{n}/files (each file's `patch`, for the lines the pull request adds),
GET /repos/{repo}/pulls/{n}/comments (the review comments already there), and one
POST /repos/{repo}/pulls/{n}/reviews with `commit_id`, `event: COMMENT`, a `body` and `comments`
[{path, line, side: RIGHT, body}]. A review comment may sit only on a line of the diff; plint comments
on added lines only.

Idempotent across re-runs: each comment starts with a hidden marker naming the finding's fingerprint
(rule, path, layout key: no line numbers), and a finding whose fingerprint is already on the pull request
is not posted again; when nothing is new, no review is posted at all.
"""

from __future__ import annotations

import os
import re
from types import SimpleNamespace

from plint.github.github_api import Client, GitHubError
from plint.github.sticky_comment import Outcome, pull_request
from plint.report.common import fingerprint, visible
from plint.report.markdown import ICON, inline_markdown
from plint.report.pr_comment import Context, line_fix

MAX_COMMENTS = 50  # inline comments in one review: a bound, the sticky comment lists every finding
_HUNK = re.compile(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_MARKER = "<!-- plint:finding {} -->"
_MARKED = re.compile(r"<!-- plint:finding ([0-9a-f]{32}) -->(?:\n|$)")


def added_lines(patch: str) -> set[int]:
    """The head-side line numbers a unified diff's hunks add."""
    added: set[int] = set()
    line = 0
    for text in patch.split("\n"):
        hunk = _HUNK.match(text)
        if hunk:
            line = int(hunk.group(1))
        elif text.startswith("+"):
            added.add(line)
            line += 1
        elif text.startswith(" ") or text == "":
            line += 1
        # "-" lines are the base's; "\ No newline at end of file" is no line
    return added


def changed_lines(client: Client, repository: str, number: int) -> dict[str, set[int]]:
    files = client.pages(f"/repos/{repository}/pulls/{number}/files?per_page=100")
    return {
        f["filename"]: added_lines(f.get("patch") or "")
        for f in files
        if isinstance(f, dict) and isinstance(f.get("filename"), str)
    }


def posted_fingerprints(client: Client, repository: str, number: int) -> set[str]:
    """Fingerprints of the findings plint's review comments on this pull request already carry."""
    comments = client.pages(f"/repos/{repository}/pulls/{number}/comments?per_page=100")
    marked = (_MARKED.match(c.get("body") or "") for c in comments if isinstance(c, dict))
    return {m.group(1) for m in marked if m}


def finding_fingerprint(d, rel: str) -> str:
    """The finding's fingerprint with its path as the pull request names it (relative to the workspace)."""
    return fingerprint(SimpleNamespace(code=d.code, path=rel, key=d.key, message=d.message))


def review_comments(results, ctx: Context, changed: dict[str, set[int]], posted: set[str]) -> list[dict]:
    """An inline comment per finding on an added line whose fingerprint is not yet on the pull request."""
    comments: list[dict] = []
    seen = set(posted)
    for _, d in visible(results, errors_first=True):
        rel = ctx.rel(d.path)
        fix = line_fix(d, ctx)
        line = fix.line if fix is not None and fix.line in changed.get(rel, ()) else d.line
        key = finding_fingerprint(d, rel)
        if line not in changed.get(rel, ()) or key in seen:
            continue
        seen.add(key)
        comments.append(
            {
                "path": rel,
                "line": line,
                "side": "RIGHT",
                "body": comment_body(d, key, fix if fix is not None and fix.line == line else None),
            }
        )
        if len(comments) == MAX_COMMENTS:
            break
    return comments


def comment_body(d, key: str, fix) -> str:
    out = [
        _MARKER.format(key),
        f"{ICON.get(d.severity, '')} **{d.code}** `{d.name}` ({d.severity}): {inline_markdown(d.message)}",
    ]
    if fix is not None:
        fence = fix.fence()
        out += ["", f"Fix: {inline_markdown(fix.description)}", "", f"{fence}suggestion", fix.new, fence]
    return "\n".join(out) + "\n"


def post_review(results, env=None, client: Client | None = None) -> Outcome:
    """One review with the new findings on changed lines; never raises for an API problem."""
    env = os.environ if env is None else env
    pr = pull_request(env)
    repository, token = env.get("GITHUB_REPOSITORY", ""), env.get("GITHUB_TOKEN", "")
    if pr is None or not repository or not (token or client):
        return Outcome("skipped", "no pull request or no token: no review", what="review")
    number, head_sha = pr
    ctx = Context.from_env(env, sha=head_sha)
    client = client or Client(env.get("GITHUB_API_URL", "https://api.github.com"), token)
    try:
        comments = review_comments(
            results, ctx, changed_lines(client, repository, number), posted_fingerprints(client, repository, number)
        )
        if not comments:
            return Outcome("unchanged", "no new finding on a changed line", what="review")
        review = {
            "event": "COMMENT",
            "comments": comments,
            "body": f"plint: {len(comments)} new finding(s) on the lines this pull request changes; "
            "the summary comment lists them all.",
        }
        if head_sha:
            review["commit_id"] = head_sha
        created = client.request("POST", f"/repos/{repository}/pulls/{number}/reviews", review).data
    except GitHubError as exc:
        return Outcome(
            "failed",
            f"cannot post the pull-request review ({exc}); the findings are in the "
            "annotations, the summary comment and the job summary",
            what="review",
        )
    review_id = created.get("id") if isinstance(created, dict) else None
    return Outcome("created", f"{len(comments)} comment(s)", comment_id=review_id, what="review")
