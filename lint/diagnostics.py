"""Diagnostics: what plint reports (a contract: DESIGN.md, "Each diagnostic")."""

from __future__ import annotations

import re

from plint.record import field, record
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from plint.source import Span
from plint.bounds import clip

SEVERITIES = ("error", "warning", "info")


@record
class Diagnostic:
    code: str
    name: str
    severity: str
    message: str
    path: str
    line: int | None = None
    col: int | None = None
    end_line: int | None = None
    end_col: int | None = None
    fix: dict[str, Any] | None = None
    key: str | None = None  # the layout field / config key it is about (baseline, fingerprints)
    suppressed: dict[str, str] | None = None  # {"kind": "inSource"|"external", "justification": ...}
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def at(cls, code: str, name: str, severity: str, message: str, span: Span | None, path: str) -> "Diagnostic":
        message = clip(message)  # a message quoting a 64 KiB value stays readable, and the output bounded
        if span is None:
            return cls(code, name, severity, message, path)
        return cls(code, name, severity, message, span.path, span.line, span.col, span.end_line, span.end_col)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line or 0, self.col or 0, self.code)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
            "fix": self.fix,
            "key": self.key,
            "suppressed": self.suppressed,
        }


def fingerprint(diagnostic: Any) -> str:
    """A finding's identity, stable across edits that move lines: rule, path and the layout key (or the
    message without digits, so a changed number does not make a new finding). Never the line number.
    Baselines, `plint fix` (new errors) and the reporters that print fingerprints read it; `diagnostic`
    is a Diagnostic or a finding read back from a report (code, path, key, message)."""
    import hashlib  # only what prints or compares fingerprints pays for it

    basis = diagnostic.key or re.sub(r"\d+", "#", diagnostic.message)
    path = diagnostic.path.replace("\\", "/")
    return hashlib.sha256(_utf8(f"{diagnostic.code}|{path}|{basis}")).hexdigest()[:32]


def _utf8(text: str) -> bytes:
    """surrogateescape: a message may quote undecodable bytes of the file; surrogatepass: or a lone
    surrogate a JSON escape wrote (`"\\ud800"`), which surrogateescape cannot encode."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def fix_json(fix: Any) -> dict[str, Any]:
    """A rule's Fix (plint.rules.base.Fix) as the Diagnostic.fix dict every reporter reads."""
    return {
        "description": fix.description,
        "applicability": fix.applicability,
        "edits": [{"path": e.path, "start": e.start, "end": e.end, "text": e.text} for e in fix.edits],
    }
