"""GitHub workflow-command annotations, escaped as the runner expects; the full report also goes to
$GITHUB_STEP_SUMMARY when it is set (the runner shows only the first annotations of a step)."""

from __future__ import annotations

import os

from plint.report.common import relative, visible

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(d) -> str:
    props = [f"title={escape_property(f'plint {d.code} ({d.name})')}", f"file={escape_property(relative(d.path))}"]
    if d.line:
        props += [f"line={d.line}", f"col={d.col or 1}"]
        if d.end_line:
            props += [f"endLine={d.end_line}", f"endColumn={d.end_col or 1}"]
    return f"::{COMMAND[d.severity]} {','.join(props)}::{escape_data(d.message)}"


def render(results) -> str:
    lines = [annotation(d) for _, d in visible(results)]
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        from plint.report.markdown import render as markdown

        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(markdown(results) + "\n")
    return "\n".join(lines) if lines else "plint: no findings"
