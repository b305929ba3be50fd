"""A small client of GitHub's REST API on the standard library (urllib): JSON in and out, pages followed
through the `Link` header, one retry on a 5xx, and rate limits honoured with a bounded wait.

Rate limits (docs.github.com, "Rate limits for the REST API"): a 403 or 429 with `Retry-After` says how
many seconds to wait; one with `x-ratelimit-remaining: 0` says to wait until `x-ratelimit-reset` (epoch
seconds). A 403 without either is a permission refusal (a fork's pull request: the token is read-only).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable

MAX_WAIT_S = 60.0  # the longest a rate limit may hold a CI step before we give up the comment
TIMEOUT_S = 30.0
MAX_PAGES = 50  # 5,000 comments at 100 a page: a bound, not a pull request anyone has
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


class GitHubError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    data: Any


@dataclass
class Client:
    api_url: str
    token: str
    sleep: Callable[[float], None] = time.sleep
    now: Callable[[], float] = time.time
    max_wait_s: float = MAX_WAIT_S
    timeout_s: float = TIMEOUT_S
    requests: list[str] = field(default_factory=list)  # "METHOD url" of each request sent (tests, logs)

    def url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else self.api_url.rstrip("/") + path

    def request(self, method: str, path: str, body: Any = None) -> Response:
        """One call, retried once after a 5xx or a rate limit (waiting as told, at most max_wait_s)."""
        url = self.url(path)
        for attempt in (0, 1):
            response = self._send(method, url, body)
            if response.status < 400:
                return response
            wait = self._retry_after(response)
            if attempt == 0 and wait is not None:
                self.sleep(wait)
                continue
            message = response.data.get("message", "") if isinstance(response.data, dict) else ""
            raise GitHubError(response.status, message or "request failed")
        raise AssertionError("unreachable")

    def pages(self, path: str) -> list[Any]:
        """Every item of a paginated list, following `Link: <...>; rel="next"`."""
        items: list[Any] = []
        url: str | None = self.url(path)
        for _ in range(MAX_PAGES):
            if url is None:
                break
            response = self.request("GET", url)
            items.extend(response.data if isinstance(response.data, list) else [])
            match = _NEXT.search(response.headers.get("link", ""))
            url = match.group(1) if match else None
        return items

    def _retry_after(self, response: Response) -> float | None:
        """Seconds to wait before the one retry, or None when retrying cannot help."""
        if response.status >= 500:
            return 1.0
        if response.status not in (403, 429):
            return None
        headers = response.headers
        wait: float | None = None
        if headers.get("retry-after", "").strip().isdigit():
            wait = float(headers["retry-after"])
        elif headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset", "").isdigit():
            wait = max(0.0, float(headers["x-ratelimit-reset"]) - self.now()) + 1.0
        elif response.status == 429:
            wait = 60.0  # GitHub's advice for a secondary limit with neither header: at least a minute
        if wait is None or wait > self.max_wait_s:
            return None
        return wait

    def _send(self, method: str, url: str, body: Any) -> Response:
        self.requests.append(f"{method} {url}")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            url,
            data=data,
            method=method,
            headers={
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {self.token}",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "plint",
                **({"Content-Type": "application/json"} if data is not None else {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:  # noqa: S310 (https API URL)
                return Response(reply.status, _lower(reply.headers), _json(reply.read()))
        except urllib.error.HTTPError as exc:
            return Response(exc.code, _lower(exc.headers), _json(exc.read()))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise GitHubError(0, f"cannot reach {url}: {exc}") from None


def _lower(headers) -> dict[str, str]:
    return {k.lower(): v for k, v in (headers.items() if headers else ())}


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None
