"""GitHub workflow-command annotations (`::error title=plint PL201 (tp-spans-nodes),file=...::message`),
errors first and escaped as the runner parses them. The runner shows only the first few annotations of
each kind per step, so a closing notice says when there are more, and the full markdown report is
appended to $GITHUB_STEP_SUMMARY when it is set."""

from __future__ import annotations

import os
import sys

from plint.report.common import counts, relative, visible, where
from plint.escape import RUNNER_COMMAND, log, workflow_data, workflow_property

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}
SHOWN_PER_KIND = 10  # annotations of one kind a step shows (reviewdog #411)
escape_data = workflow_data  # the names other modules import
escape_property = workflow_property


def annotation(d) -> str:
    path = relative(d.path)
    props = [f"title={escape_property(f'plint {d.code} ({d.name})')}"]
    message = d.message
    if RUNNER_COMMAND in path:
        # the runner reads this line as `::` first, so `##[` in `file=` is inert today; a path that holds it is
        # still left out of the properties and named, escaped, in the message (an annotation not on the file)
        message = f"{path}:{d.line or 1}: {message}"
        return f"::{COMMAND.get(d.severity, 'warning')} {','.join(props)}::{escape_data(message)}"
    props.append(f"file={escape_property(path)}")
    if d.line:
        props += [f"line={d.line}", f"col={d.col or 1}"]
        if d.end_line:
            props += [f"endLine={d.end_line}", f"endColumn={d.end_col or 1}"]
    return f"::{COMMAND.get(d.severity, 'warning')} {','.join(props)}::{escape_data(d.message)}"


def render(results) -> str:
    """At most SHOWN_PER_KIND annotations of each kind (the runner drops the rest); the others as plain
    log lines, a notice that says so, and the full report in the job summary."""
    pairs = visible(results, errors_first=True)
    lines = []
    per_kind: dict[str, int] = {}
    for _, d in pairs:
        per_kind[d.severity] = per_kind.get(d.severity, 0) + 1
        if per_kind[d.severity] <= SHOWN_PER_KIND:
            lines.append(annotation(d))
        else:
            lines.append(overflow_line(d))
    if any(n > SHOWN_PER_KIND for n in per_kind.values()):
        c = counts(results)
        lines.append(
            "::notice title=plint::"
            + escape_data(
                f"{len(pairs)} findings ({c['error']} errors, {c['warning']} warnings, {c['info']} info); "
                f"GitHub shows only the first {SHOWN_PER_KIND} annotations of each kind: the step summary "
                "lists them all"
            )
        )
    write_step_summary(results)
    write_outputs(results)
    return "\n".join(lines) if lines else "plint: no findings"


def overflow_line(d) -> str:
    """A finding past the annotations the runner shows: a plain log line, as inert as an annotation."""
    return f"plint: {log(where(d))}: {d.severity} {d.code} ({d.name}): {log(d.message)}"


def write_outputs(results) -> None:
    """`errors=N` and `warnings=N` for the step's outputs (the Action's), when $GITHUB_OUTPUT is set."""
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        return
    c = counts(results)
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"errors={c['error']}\nwarnings={c['warning']}\n")
    except OSError as exc:
        sys.stderr.write(f"plint: cannot write GITHUB_OUTPUT ({path}): {exc}\n")


def write_step_summary(results) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    from plint.report.markdown import render as markdown

    try:
        # backslashreplace: a lone surrogate (a JSON escape) the markdown quotes cannot stop the summary
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(markdown(results) + "\n")
    except OSError as exc:  # a summary we cannot write must not hide the annotations
        sys.stderr.write(f"plint: cannot write GITHUB_STEP_SUMMARY ({path}): {exc}\n")
