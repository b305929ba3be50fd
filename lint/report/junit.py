"""JUnit XML (`plint check --format junit`), the test report Jenkins, GitLab and Azure Pipelines show:
`<testsuites>` holding one `<testsuite>` per checked file, a `<testcase>` per finding with its `<failure>`,
and one passing `<testcase>` for a file with nothing to say, so every checked file is counted. The
structure is the one of the JUnit XML schema the CI systems read (testsuite name/tests/failures/errors,
testcase name/classname, failure message/type); built with xml.etree, which escapes the text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from plint.report.common import printable, relative, visible, where
from plint.escape import RUNNER_COMMAND


def _text(value: str) -> str:
    """File-derived text XML 1.0 can carry: control characters as visible escapes (report.common.printable),
    a file name's undecodable bytes (lone surrogates) as backslash escapes."""
    return printable(value).encode("utf-8", "backslashreplace").decode("utf-8")


def render(results) -> str:
    by_file: dict[str, list] = {r.path: [] for r in results}
    for r, d in visible(results, errors_first=False):
        by_file.setdefault(r.path, []).append(d)
    total = sum(len(found) for found in by_file.values())
    root = ET.Element(
        "testsuites",
        name="plint",
        tests=str(sum(max(1, len(f)) for f in by_file.values())),
        failures=str(total),
        errors="0",
    )
    for path, found in by_file.items():
        name = _text(relative(path))
        suite = ET.SubElement(
            root,
            "testsuite",
            name=name,
            tests=str(max(1, len(found))),
            failures=str(len(found)),
            errors="0",
            skipped="0",
        )
        if not found:
            ET.SubElement(suite, "testcase", name="no findings", classname=name)
        for d in found:
            case = ET.SubElement(
                suite, "testcase", name=f"{d.code} {d.name}", classname=name, file=name, line=str(d.line or 1)
            )
            failure = ET.SubElement(case, "failure", message=_text(d.message), type=d.severity)
            failure.text = _text(f"{where(d)}: {d.code} [{d.severity}] {d.message}")
    ET.indent(root)
    # `##[` anywhere in a log line is a workflow command to the Actions runner; `&#91;` is the same `[` to XML
    document = ET.tostring(root, encoding="unicode").replace(RUNNER_COMMAND, "##&#91;")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + document
