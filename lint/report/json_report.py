"""The JSON report (a contract: DESIGN.md, `plint check --format json`)."""

from __future__ import annotations

import json
TYPE_CHECKING = False  # typing is imported by type checkers only: it costs start-up time
if TYPE_CHECKING:
    from typing import Any

from plint import __version__


def file_json(result) -> dict[str, Any]:
    layouts = [layout.to_json() for layout in result.layouts]
    out: dict[str, Any] = {
        "path": result.path,
        "layout": layouts[0] if layouts else None,
        "diagnostics": [_diagnostic(d) for d in result.diagnostics],
    }
    if len(layouts) > 1:
        out["layouts"] = layouts
    return out


def _diagnostic(d) -> dict[str, Any]:
    from plint.report.common import docs_url, fingerprint

    out = d.to_json()
    out["docs_url"] = docs_url(d.code)
    out["fingerprint"] = fingerprint(d)
    return out


def summary(results) -> dict[str, Any]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for r in results:
        for d in r.diagnostics:
            if d.suppressed is None:  # suppressed findings are kept in the report but not counted
                counts[d.severity] = counts.get(d.severity, 0) + 1
            else:
                counts["suppressed"] = counts.get("suppressed", 0) + 1
    return {"files": len(results), **counts}


def render(results) -> str:
    doc = {"plint_version": __version__, "files": [file_json(r) for r in results],
           "summary": summary(results)}
    return json.dumps(doc, indent=2)
