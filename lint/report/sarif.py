"""SARIF 2.1.0: the rule records as driver.rules, relative URIs under %SRCROOT%, regions in Unicode code
points, stable partial fingerprints, suppressions for disabled or baselined findings, and tool
notifications for files plint could not read (validated against the OASIS schema in the tests)."""

from __future__ import annotations

import json
from pathlib import Path

from plint import __version__
from plint.report.common import fingerprint, relative

LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _rule(rule) -> dict:
    from plint.commands_docs import page

    return {
        "id": rule.code, "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.docs.what},
        "help": {"text": f"{rule.docs.why}\n\nFix: {rule.docs.fix}", "markdown": page(rule, markdown=True)},
        "helpUri": rule.docs_url,
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"tags": [rule.family], "fix_availability": rule.fix_availability},
    }


def _result(d, index: dict[str, int]) -> dict:
    location = {"physicalLocation": {"artifactLocation": {"uri": relative(d.path), "uriBaseId": "%SRCROOT%"}}}
    if d.line:
        region = {"startLine": d.line, "startColumn": d.col or 1}
        if d.end_line:
            region.update(endLine=d.end_line, endColumn=max(d.end_col or 1, 1))
        location["physicalLocation"]["region"] = region
    out = {"ruleId": d.code, "ruleIndex": index.get(d.code, -1), "level": LEVEL[d.severity],
           "message": {"text": d.message}, "locations": [location],
           "partialFingerprints": {"plint/v1": fingerprint(d)}}
    if out["ruleIndex"] < 0:
        del out["ruleIndex"]
    if d.suppressed is not None:
        out["suppressions"] = [{"kind": d.suppressed.get("kind", "inSource"),
                                "justification": d.suppressed.get("justification", "")}]
    return out


def render(results) -> str:
    from plint.rules.base import all_rules

    rules = list(all_rules().values())
    index = {r.code: i for i, r in enumerate(rules)}
    unreadable = [r for r in results if r.reading.unreadable]
    run = {
        "tool": {"driver": {"name": "plint", "version": __version__, "semanticVersion": __version__,
                            "informationUri": "https://github.com/plint-dev/plint",
                            "rules": [_rule(r) for r in rules]}},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(d, index) for r in results for d in r.diagnostics],
        "invocations": [{
            "executionSuccessful": not unreadable,
            "toolExecutionNotifications": [
                {"level": "error", "message": {"text": f"{r.path}: {r.reading.unreadable}"},
                 "locations": [{"physicalLocation": {"artifactLocation": {"uri": relative(r.path),
                                                                          "uriBaseId": "%SRCROOT%"}}}]}
                for r in unreadable],
        }],
    }
    return json.dumps({"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
                       "runs": [run]}, indent=2)
