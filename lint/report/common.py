"""What every reporter needs: stable fingerprints, docs links, relative paths, counts, fix records."""

from __future__ import annotations

import os

from plint.diagnostics import fingerprint as fingerprint, fix_json as fix_json  # the reporters' too
from plint.escape import printable  # noqa: F401 (the base escaper: plint.escape)

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


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


def where(d) -> str:
    """`path:line:col`, or the path alone for a finding about a whole file."""
    return f"{d.path}:{d.line}:{d.col or 1}" if d.line else d.path


def visible(results, errors_first: bool = True):
    """(result, diagnostic) pairs that are not suppressed; errors first, or in file order."""
    pairs = [(r, d) for r in results for d in r.diagnostics if d.suppressed is None]

    def position(p):
        return p[1].path, p[1].line or 0, p[1].col or 0, p[1].code

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


def fix_of(d) -> dict | None:
    """The diagnostic's fix with every field present (applicability defaults to "safe")."""
    if not d.fix:
        return None
    return {
        **d.fix,
        "description": d.fix.get("description", ""),
        "applicability": d.fix.get("applicability", "safe"),
        "edits": list(d.fix.get("edits", ())),
    }
