"""One sticky comment per pull request: `plint check --format github --pr-comment`.

The pull request comes from $GITHUB_EVENT_PATH (the event payload), the API from $GITHUB_API_URL with
$GITHUB_TOKEN, the repository from $GITHUB_REPOSITORY. plint lists the pull request's comments (every
page), finds the one whose body starts with its marker, and edits it; it creates one only when there is
none. A comment that cannot be written (a fork's pull request under `pull_request`: the token is
read-only and GitHub answers 403) costs the comment, never the check: a warning annotation says so and
the report stays in the job summary; the exit code is the findings'.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

from plint.github.github_api import Client, GitHubError
from plint.report.pr_comment import MARKER, Context, render


@dataclass
class Outcome:
    action: str  # "created", "updated", "unchanged", "skipped", "failed"
    detail: str = ""
    comment_id: int | None = None
    what: str = "comment"  # "comment" (the sticky summary) or "review" (plint.github.review)


def pull_request(env) -> tuple[int, str] | None:
    """(number, head sha) of the pull request the event is about, or None."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            event = json.load(fh)
    except (OSError, ValueError):
        return None
    pr = event.get("pull_request") if isinstance(event, dict) else None
    if isinstance(pr, dict) and isinstance(pr.get("number"), int):
        head = pr.get("head")
        head = head if isinstance(head, dict) else {}
        return pr["number"], str(head.get("sha") or "")
    issue = event.get("issue") if isinstance(event, dict) else None
    if isinstance(issue, dict) and isinstance(issue.get("number"), int) and issue.get("pull_request"):
        return issue["number"], ""
    return None


def is_ours(comment) -> bool:
    """Our comment starts with the marker: a comment that quotes or mentions it elsewhere is not."""
    body = comment.get("body") if isinstance(comment, dict) else None
    return isinstance(body, str) and (body == MARKER or body.startswith(MARKER + "\n"))


def upsert(body: str, client: Client, repository: str, number: int) -> Outcome:
    comments = client.pages(f"/repos/{repository}/issues/{number}/comments?per_page=100")
    ours = [c for c in comments if is_ours(c) and isinstance(c.get("id"), int)]
    if ours:
        comment = ours[0]
        if comment.get("body") == body:
            return Outcome("unchanged", comment_id=comment["id"])
        client.request("PATCH", f"/repos/{repository}/issues/comments/{comment['id']}", {"body": body})
        return Outcome("updated", comment_id=comment["id"])
    created = client.request("POST", f"/repos/{repository}/issues/{number}/comments", {"body": body}).data
    return Outcome("created", comment_id=created.get("id") if isinstance(created, dict) else None)


def post(results, env=None, client: Client | None = None) -> Outcome:
    """Keep the pull request's one plint comment up to date; never raises for an API problem."""
    env = os.environ if env is None else env
    pr = pull_request(env)
    repository, token = env.get("GITHUB_REPOSITORY", ""), env.get("GITHUB_TOKEN", "")
    if pr is None:
        return Outcome("skipped", "not a pull request event (GITHUB_EVENT_PATH): no comment")
    if not repository or not (token or client):
        return Outcome("skipped", "GITHUB_REPOSITORY and GITHUB_TOKEN are needed to comment")
    number, head_sha = pr
    body = render(results, Context.from_env(env, sha=head_sha))
    client = client or Client(env.get("GITHUB_API_URL", "https://api.github.com"), token)
    try:
        return upsert(body, client, repository, number)
    except GitHubError as exc:
        why = (
            "the token may not comment here (a fork's pull request under `pull_request` gets a read-only "
            "token): the findings are in the annotations and the job summary"
            if exc.status == 403
            else "the findings are in the annotations and the job summary"
        )
        return Outcome("failed", f"cannot update the pull-request comment ({exc}); {why}")


def report(outcome: Outcome) -> None:
    """Say what happened: a warning annotation when the comment was lost, a log line otherwise."""
    from plint.report.github import escape_data

    if outcome.action == "failed":
        sys.stdout.write(f"::warning title=plint {outcome.what}::{escape_data(outcome.detail)}\n")
    else:
        text = f"{outcome.action} {outcome.what} {outcome.comment_id}" if outcome.comment_id else outcome.detail
        from plint.escape import log

        sys.stderr.write(f"plint: pull-request {outcome.what}: {log(text)}\n")
