"""What every reporter needs: stable fingerprints, docs links, relative paths, counts, fix records."""

from __future__ import annotations

import os
import re

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def fingerprint(diagnostic) -> str:
    """Stable across edits that move lines: rule, path and the layout key (or the message without
    digits, so a changed number does not make a new finding). Never the line number."""
    import hashlib  # only reporters that print fingerprints pay for it

    basis = diagnostic.key or re.sub(r"\d+", "#", diagnostic.message)
    path = diagnostic.path.replace("\\", "/")
    # surrogateescape: a message may quote undecodable bytes of the file (a fuzzed JSON key)
    return hashlib.sha256(f"{diagnostic.code}|{path}|{basis}".encode("utf-8", "surrogateescape")).hexdigest()[:32]


def docs_url(code: str) -> str:
    from plint.rules.base import DOCS_URL

    return DOCS_URL.format(code=code)


def relative(path: str) -> str:
    """A working-directory-relative, forward-slash path for SARIF and annotations (absolute when the
    file lies outside the working directory)."""
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
            if not rel.startswith(".."):
                path = rel
        except ValueError:  # another drive on Windows
            pass
    return path.replace(os.sep, "/")


# C0 controls but tab, DEL, C1 controls, and the bidirectional overrides that reorder what a terminal
# or a browser shows ("trojan source"): file-derived text shows them as escapes, never as themselves.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}


def printable(text: str, keep: str = "") -> str:
    """text with control characters as visible escapes (ESC as `\\x1b`, CR as `\\r`); those in `keep`
    stay. Idempotent: an escape contains no control character."""
    if text.isprintable() or not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else
                        _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                                   else f"\\u{ord(m.group()):04x}"), text)


def where(d) -> str:
    """`path:line:col`, or the path alone for a finding about a whole file."""
    return f"{d.path}:{d.line}:{d.col or 1}" if d.line else d.path


def visible(results, errors_first: bool = True):
    """(result, diagnostic) pairs that are not suppressed; errors first, or in file order."""
    pairs = [(r, d) for r in results for d in r.diagnostics if d.suppressed is None]
    position = (lambda p: (p[1].path, p[1].line or 0, p[1].col or 0, p[1].code))
    if errors_first:
        return sorted(pairs, key=lambda p: (SEVERITY_ORDER.get(p[1].severity, 3), *position(p)))
    return sorted(pairs, key=position)


def counts(results) -> dict[str, int]:
    """Files and findings by severity; suppressed findings counted apart, never by severity."""
    out = {"files": len(results), "error": 0, "warning": 0, "info": 0, "suppressed": 0}
    for r in results:
        for d in r.diagnostics:
            out["suppressed" if d.suppressed is not None else d.severity] += 1
    return out


def fix_json(fix) -> dict:
    """A rule's Fix (plint.rules.base.Fix) as the Diagnostic.fix dict every reporter reads."""
    return {"description": fix.description, "applicability": fix.applicability,
            "edits": [{"path": e.path, "start": e.start, "end": e.end, "text": e.text} for e in fix.edits]}


def fix_of(d) -> dict | None:
    """The diagnostic's fix with every field present (applicability defaults to "safe")."""
    if not d.fix:
        return None
    return {**d.fix, "description": d.fix.get("description", ""),
            "applicability": d.fix.get("applicability", "safe"), "edits": list(d.fix.get("edits", ()))}
