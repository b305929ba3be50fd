"""reviewdog's Diagnostic Format as one JSON document (`plint check --format rdjson`; reviewdog
`-f=rdjson`), as proto/rdf/reviewdog.proto and proto/rdf/jsonschema/DiagnosticResult.json in
reviewdog/reviewdog define it: {source, diagnostics: [{message, location {path, range {start, end}},
severity, code {value, url}, suggestions}]}. Lines and columns start at 1, a column counts UTF-8
bytes and the end is exclusive; a safe fix becomes `suggestions` (reviewdog's suggested changes)."""

from __future__ import annotations

import json

from plint.report.common import docs_url, fix_of, printable, relative, visible
from plint.escape import json_text

SEVERITY = {"error": "ERROR", "warning": "WARNING", "info": "INFO"}
SOURCE = {"name": "plint", "url": "https://github.com/plint-dev/plint"}


def render(results) -> str:
    from plint.report.text import SourceLines  # files read back through the root of the check, once each

    sources = SourceLines()
    diagnostics = []
    for r, d in visible(results, errors_first=False):
        sources.root = getattr(r.reading, "root", None)
        diagnostics.append(diagnostic(d, sources))
    return json_text(json.dumps({"source": SOURCE, "diagnostics": diagnostics}, indent=2))


def diagnostic(d, sources) -> dict:
    location: dict = {"path": printable(relative(d.path))}
    if d.line:
        lines = sources.lines(d.path)
        start = {"line": d.line, "column": _byte_column(lines, d.line, d.col or 1)}
        end_line = d.end_line or d.line
        end = {"line": end_line, "column": _byte_column(lines, end_line, d.end_col)} if d.end_col else None
        location["range"] = {"start": start, **({"end": end} if end else {})}
    out = {
        "message": printable(d.message),
        "location": location,
        "severity": SEVERITY.get(d.severity, "INFO"),
        "source": SOURCE,
        "code": {"value": d.code, "url": docs_url(d.code)},
    }
    suggestions = _suggestions(d, sources)
    if suggestions:
        out["suggestions"] = suggestions
    return out


def _byte_column(lines: list[str] | None, line: int, col: int) -> int:
    """plint's columns count characters; rdjson's count UTF-8 bytes."""
    if not lines or not 0 < line <= len(lines):
        return col
    return len(lines[line - 1][: col - 1].encode("utf-8", "surrogateescape")) + 1


def _suggestions(d, sources) -> list[dict]:
    """A safe fix's edits in the finding's own file (reviewdog applies a suggestion to location.path)."""
    fix = fix_of(d)
    if fix is None or fix["applicability"] != "safe":
        return []
    data = sources.data(d.path)
    if data is None or any(e["path"] != d.path for e in fix["edits"]):
        return []
    return [
        {"range": {"start": _position(data, e["start"]), "end": _position(data, e["end"])}, "text": e["text"]}
        for e in fix["edits"]
    ]


def _position(data: bytes, offset: int) -> dict:
    """A byte offset of the file as rdjson's (line, UTF-8 byte column), both from 1."""
    offset = max(0, min(offset, len(data)))
    line_start = data.rfind(b"\n", 0, offset) + 1
    return {"line": data.count(b"\n", 0, offset) + 1, "column": offset - line_start + 1}
