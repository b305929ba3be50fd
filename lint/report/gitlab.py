"""GitLab's code quality report (`plint check --format gitlab`), the artifact a merge request's code quality
widget reads (`artifacts: reports: codequality:`): a JSON array of issues, each with `description`,
`check_name`, `fingerprint`, `severity` and `location` {`path`, `lines`: {`begin`}}, the fields GitLab's
documentation (docs.gitlab.com, ci/testing/code_quality, "Code Quality report format") requires.

GitLab keeps one issue per fingerprint, so each is unique in the report: plint's line-free fingerprint,
with the number of earlier findings that share it (two identical findings on different lines stay two)."""

from __future__ import annotations

import hashlib
import json

from plint.report.common import fingerprint, printable, relative, visible
from plint.escape import json_text

# GitLab's scale is info, minor, major, critical, blocker: plint's error blocks no merge by itself
# (the exit code does), so it is `major`, as ruff reports its findings
SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def issue(d, occurrence: int) -> dict:
    base = fingerprint(d)
    unique = base if occurrence == 0 else hashlib.sha256(f"{base}#{occurrence}".encode()).hexdigest()[:32]
    return {
        "description": printable(f"{d.code} {d.message}"),
        "check_name": f"{d.code} {d.name}",
        "fingerprint": unique,
        "severity": SEVERITY.get(d.severity, "info"),
        "location": {"path": printable(relative(d.path)), "lines": {"begin": d.line or 1}},
    }


def render(results) -> str:
    seen: dict[str, int] = {}
    issues = []
    for _, d in visible(results, errors_first=False):
        base = fingerprint(d)
        issues.append(issue(d, seen.get(base, 0)))
        seen[base] = seen.get(base, 0) + 1
    return json_text(json.dumps(issues, indent=2))
