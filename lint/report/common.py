"""What every reporter needs: stable fingerprints, docs links, relative paths."""

from __future__ import annotations

import os
import re


def fingerprint(diagnostic) -> str:
    """Stable across edits that move lines: rule, path and the layout key (or the message without digits)."""
    import hashlib  # only reporters that print fingerprints pay for it

    basis = diagnostic.key or re.sub(r"\d+", "#", diagnostic.message)
    return hashlib.sha256(f"{diagnostic.code}|{diagnostic.path}|{basis}".encode()).hexdigest()[:32]


def docs_url(code: str) -> str:
    from plint.rules.base import DOCS_URL

    return DOCS_URL.format(code=code)


def relative(path: str) -> str:
    """A repository-relative, forward-slash path for SARIF and annotations."""
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
            if not rel.startswith(".."):
                path = rel
        except ValueError:
            pass
    return path.replace(os.sep, "/")


def visible(results):
    """(result, diagnostic) pairs that are not suppressed, errors first."""
    order = {"error": 0, "warning": 1, "info": 2}
    pairs = [(r, d) for r in results for d in r.diagnostics if d.suppressed is None]
    return sorted(pairs, key=lambda p: (order[p[1].severity], p[1].path, p[1].line or 0, p[1].col or 0))
