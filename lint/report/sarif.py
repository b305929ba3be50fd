"""SARIF 2.1.0 for code scanning: every rule record as driver.rules, results with relative URIs under
%SRCROOT%, full regions in Unicode code points, line-free partial fingerprints, fixes as replacements,
suppressions for disabled or baselined findings, and PL001 findings also as tool notifications (with
executionSuccessful false when a file could not be read at all). tests/report/test_sarif.py validates
the output against the OASIS schema vendored in schemas/."""

from __future__ import annotations

import json
from pathlib import Path

from plint import __version__
from plint.report.common import fingerprint, fix_of, relative
from plint.source import SourceFile

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/plint-dev/plint"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
PARSE_ERROR = "PL001"  # findings about reading itself, echoed as tool execution notifications


def render(results) -> str:
    from plint.escape import json_text

    return json_text(json.dumps(sarif_log(results), indent=2))


def sarif_log(results) -> dict:
    from plint.rules.registry import all_rules

    rules = list(all_rules().values())
    index = {r.code: i for i, r in enumerate(rules)}
    run = {
        "tool": {
            "driver": {
                "name": "plint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [rule_descriptor(r) for r in rules],
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [result(d, index) for r in results for d in r.diagnostics],
        "invocations": [invocation(results, index)],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def rule_descriptor(rule) -> dict:
    from plint.report.rule_page import page

    fix = rule.fix.availability  # declared in the rule's record
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.docs.what},
        "help": {"text": f"{rule.docs.why}\n\nFix: {rule.fix.text}", "markdown": page(rule, markdown=True)},
        "helpUri": rule.docs_url,
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"tags": [rule.family], "fixAvailability": fix},
    }


def result(d, index: dict[str, int]) -> dict:
    out = {
        "ruleId": d.code,
        "level": LEVEL[d.severity],
        "message": {"text": d.message},
        "locations": [location(d)],
        "partialFingerprints": {"plint/v1": fingerprint(d)},
    }
    if d.code in index:
        out["ruleIndex"] = index[d.code]
    fix = fix_of(d)
    if fix is not None and fix["edits"]:
        out["fixes"] = [sarif_fix(fix)]
    if d.suppressed is not None:
        suppression = {
            "kind": "external" if d.suppressed.get("kind") == "external" else "inSource",
            "status": "accepted",
        }
        if d.suppressed.get("justification"):
            suppression["justification"] = d.suppressed["justification"]
        out["suppressions"] = [suppression]
    return out


def location(d) -> dict:
    physical: dict = {"artifactLocation": artifact(d.path)}
    if d.line:
        region = {"startLine": d.line, "startColumn": d.col or 1}
        if d.end_line:
            # SARIF's endColumn is the column after the region, as the spans' end_col is
            region.update(endLine=d.end_line, endColumn=max(d.end_col or 1, 1))
        physical["region"] = region
    return {"physicalLocation": physical}


def artifact(path: str) -> dict:
    rel = relative(path)
    if Path(rel).is_absolute():  # outside the working directory: an absolute file URI, no base
        return {"uri": Path(rel).as_uri()}
    from urllib.parse import quote

    return {"uri": quote(rel), "uriBaseId": "%SRCROOT%"}


def sarif_fix(fix: dict) -> dict:
    """Edits grouped by file; regions as lines and columns when the file reads back, else bytes."""
    by_path: dict[str, list[dict]] = {}
    for edit in fix["edits"]:
        by_path.setdefault(edit["path"], []).append(edit)
    changes = []
    for path, edits in by_path.items():
        source = _source(path)
        replacements = []
        for edit in sorted(edits, key=lambda e: e["start"]):
            if source is not None:
                span = source.span(edit["start"], edit["end"])
                region = {
                    "startLine": span.line,
                    "startColumn": span.col,
                    "endLine": span.end_line,
                    "endColumn": span.end_col,
                }
            else:
                region = {"byteOffset": edit["start"], "byteLength": max(0, edit["end"] - edit["start"])}
            replacements.append({"deletedRegion": region, "insertedContent": {"text": edit["text"]}})
        changes.append({"artifactLocation": artifact(path), "replacements": replacements})
    return {"description": {"text": fix["description"]}, "artifactChanges": changes}


def _source(path: str):
    try:
        return SourceFile.read(path)
    except OSError:
        return None


def invocation(results, index: dict[str, int]) -> dict:
    notifications = []
    for r in results:
        for d in r.diagnostics:
            if d.code != PARSE_ERROR:
                continue
            rule: dict[str, object] = {"id": d.code}
            if d.code in index:
                rule["index"] = index[d.code]
            note = {
                "level": LEVEL[d.severity],
                "message": {"text": d.message},
                "locations": [location(d)],
                "associatedRule": rule,
            }
            notifications.append(note)
    return {
        "executionSuccessful": not any(r.reading.unreadable for r in results),
        "toolExecutionNotifications": notifications,
    }
