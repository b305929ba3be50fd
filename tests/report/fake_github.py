"""A local fake of the parts of GitHub's REST API the sticky comment and the review use: list an issue's
comments (paginated, `Link: rel="next"`), create one, edit one; list a pull request's files (with their
`patch`) and review comments, create a review whose comments must sit on lines of the diff (422 as
GitHub answers otherwise). Runs on 127.0.0.1 in a thread; `inject` queues
answers (a 502, a 403, a rate limit) for the next requests; `log` records every request."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

MAX_REQUESTS = 200  # a client that loops is stopped here (the test then fails on the count)


class FakeGitHub:
    def __init__(self, page_size: int = 100):
        self.comments: dict[int, list[dict]] = {}
        self.files: dict[int, list[dict]] = {}  # pull request -> [{"filename", "patch"}]
        self.review_comments: dict[int, list[dict]] = {}
        self.reviews: dict[int, list[dict]] = {}
        self.page_size = page_size
        self.next_id = 1000
        self.log: list[str] = []
        self.injected: list[tuple[int, dict, dict]] = []  # (status, headers, body) for the next requests
        self.read_only = False  # a fork's token: writes answer 403
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                fake.handle(self, "GET")

            def do_POST(self):
                fake.handle(self, "POST")

            def do_PATCH(self):
                fake.handle(self, "PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.timeout = 5
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def add(self, number: int, body: str, login: str = "github-actions[bot]") -> dict:
        comment = {"id": self.next_id, "body": body, "user": {"login": login, "type": "Bot"}}
        self.next_id += 1
        self.comments.setdefault(number, []).append(comment)
        return comment

    def inject(self, status: int, headers: dict | None = None, body: dict | None = None) -> None:
        self.injected.append((status, headers or {}, body or {"message": f"injected {status}"}))

    # ---- the handler ---------------------------------------------------------------------------
    def handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        with self.lock:
            self.log.append(f"{method} {req.path}")
            if len(self.log) > MAX_REQUESTS:
                return self.reply(req, 500, {"message": "too many requests in one test"})
            if req.headers.get("Authorization") != "Bearer test-token":
                return self.reply(req, 401, {"message": "Bad credentials"})
            if self.injected:
                status, headers, body = self.injected.pop(0)
                return self.reply(req, status, body, headers)
            length = int(req.headers.get("Content-Length") or 0)
            payload = json.loads(req.rfile.read(length)) if length else None
            url = urlparse(req.path)
            listing = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", url.path)
            pulls = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/(files|comments|reviews)", url.path)
            single = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)", url.path)
            if method in ("POST", "PATCH") and self.read_only:
                return self.reply(req, 403, {"message": "Resource not accessible by integration"})
            if listing and method == "GET":
                return self.list(req, url, self.comments.get(int(listing.group(2)), []))
            if pulls and method == "GET" and pulls.group(3) != "reviews":
                kept = self.files if pulls.group(3) == "files" else self.review_comments
                return self.list(req, url, kept.get(int(pulls.group(2)), []))
            if pulls and method == "POST" and pulls.group(3) == "reviews":
                return self.review(req, int(pulls.group(2)), payload)
            if listing and method == "POST":
                comment = self.add(int(listing.group(2)), payload["body"])
                return self.reply(req, 201, comment)
            if single and method == "PATCH":
                for comments in self.comments.values():
                    for comment in comments:
                        if comment["id"] == int(single.group(2)):
                            comment["body"] = payload["body"]
                            return self.reply(req, 200, comment)
            return self.reply(req, 404, {"message": "Not Found"})

    def review(self, req, number: int, payload: dict) -> None:
        """A review as GitHub takes it: every comment on a line of its file's diff (head side), else 422."""
        diff_lines = {f["filename"]: _head_lines(f.get("patch", "")) for f in self.files.get(number, [])}
        for c in payload.get("comments", []):
            if (
                not {"path", "line", "body"} <= set(c)
                or c.get("side", "RIGHT") != "RIGHT"
                or c["line"] not in diff_lines.get(c["path"], ())
            ):
                return self.reply(
                    req, 422, {"message": "Unprocessable Entity", "errors": ["Line could not be resolved"]}
                )
        review = {
            "id": self.next_id,
            "body": payload.get("body", ""),
            "event": payload.get("event"),
            "commit_id": payload.get("commit_id"),
        }
        self.next_id += 1
        self.reviews.setdefault(number, []).append(review)
        for c in payload.get("comments", []):
            self.review_comments.setdefault(number, []).append(
                {"id": self.next_id, "pull_request_review_id": review["id"], **c}
            )
            self.next_id += 1
        return self.reply(req, 200, review)

    def list(self, req, url, comments: list) -> None:
        query = parse_qs(url.query)
        per_page = min(int(query.get("per_page", ["30"])[0]), self.page_size)
        page = int(query.get("page", ["1"])[0])
        chunk = comments[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(comments):
            headers["Link"] = f'<{self.url}{url.path}?per_page={per_page}&page={page + 1}>; rel="next"'
        self.reply(req, 200, chunk, headers)

    @staticmethod
    def reply(req, status: int, body, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        req.send_response(status)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            req.send_header(key, value)
        req.end_headers()
        req.wfile.write(data)


def _head_lines(patch: str) -> set[int]:
    """Head-side line numbers a review comment may sit on: the hunks' added and context lines."""
    lines, line = set(), 0
    for text in patch.split("\n"):
        hunk = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", text)
        if hunk:
            line = int(hunk.group(1))
        elif text[:1] in ("+", " "):
            lines.add(line)
            line += 1
    return lines
