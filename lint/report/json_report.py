"""The JSON report (a contract: DESIGN.md, `plint check --format json`).

Every diagnostic keeps the contract fields and adds `docs_url`, a line-free `fingerprint`,
`fix.applicability` and `suppressed` (suppressed findings stay in the report, counted apart)."""

from __future__ import annotations

import json

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from plint import __version__


def file_json(result) -> dict[str, Any]:
    layouts = [layout.to_json() for layout in result.layouts]
    out: dict[str, Any] = {
        "path": result.path,
        "layout": layouts[0] if layouts else None,
        "diagnostics": [diagnostic_json(d) for d in result.diagnostics],
    }
    if len(layouts) > 1:
        out["layouts"] = layouts
    runs = [layout.extras.dry_run for layout in result.layouts if layout.extras.dry_run is not None]
    if runs:  # `check --dry-run`: the first layout's, and every one's when there are several
        out["dry_run"] = runs[0]
        if len(runs) > 1:
            out["dry_runs"] = runs
    return out


def diagnostic_json(d) -> dict[str, Any]:
    from plint.report.common import docs_url, fingerprint, fix_of

    out = d.to_json()
    out["fix"] = fix_of(d)
    out["docs_url"] = docs_url(d.code)
    out["fingerprint"] = fingerprint(d)
    return out


def summary(results) -> dict[str, int]:
    """{files, error, warning, info, suppressed}: severities count unsuppressed findings only."""
    from plint.report.common import counts

    return counts(results)


def render(results) -> str:
    doc = {"plint_version": __version__, "files": [file_json(r) for r in results], "summary": summary(results)}
    from plint.escape import json_text

    return json_text(json.dumps(doc, indent=2))
