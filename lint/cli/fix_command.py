"""`plint fix` on the command line: the options of `plint check`, the fixing (plint.fixing.fix), then what
is printed: the diff or the findings left and a summary, and the exit code."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from plint.fixing.fix import FileChange, fix_paths, hidden_fixes

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def run_fix(
    paths: list[Path],
    unsafe_fixes: bool = False,
    diff: bool = False,
    env=(),
    assume=(),
    gpu: str | None = None,
    config_file: str | None = None,
    isolated: bool = False,
    select: str | None = None,
    extend_select: str | None = None,
    ignore: str | None = None,
    fail_on: str | None = None,
    baseline: str | None = None,
    fmt: str = "text",
    concise: bool = True,
    write_baseline: str | None = None,
    trainer_source: str | None = None,
    root: str | None = None,
    quiet: bool = False,
    color: str = "auto",
) -> int:
    """`plint fix`: fix, print the diff or the remaining findings (concise) and a summary; the exit
    code (like ruff: 0 when nothing at or above fail-on remains; with diff, 1 when there would be
    changes). Takes the options of `plint check` (plint.cli.check_command.OPTIONS) so that the click
    command can declare them from the same table. Raises UsageError (a ValueError) for bad input.
    `quiet`: no summary line; `color`: the diff coloured (plint.report.color.use_color)."""
    from plint.checking.check import UsageError, check_options
    from plint.report.color import use_color
    from plint.report.text import concise_line

    if fmt not in (None, "text"):
        raise UsageError("--format: plint fix prints text only (use plint check for other formats)")
    if write_baseline:
        raise UsageError("--write-baseline: use plint check --write-baseline")
    if any(str(p) == "-" for p in paths):
        raise UsageError("plint fix edits files in place: `-` (standard input) is for plint check")
    options = check_options(
        paths, env, assume, gpu, config_file, isolated, select, extend_select, ignore, baseline, trainer_source, root
    )
    result = fix_paths([Path(p) for p in paths], unsafe=unsafe_fixes, diff=diff, options=options)
    hidden = 0 if unsafe_fixes else hidden_fixes(result)
    summary = result.summary() + (
        f" ({hidden} hidden fix{'es' if hidden > 1 else ''} can be enabled with `plint fix --unsafe-fixes`)"
        if hidden
        else ""
    )
    from plint.escape import log

    for why in result.reverted:  # names files and quotes findings
        sys.stderr.write(f"plint: {log(why)}\n")
    if diff:
        sys.stdout.write(diff_text(result.changes, use_color(color)))
        sys.stdout.flush()
        if not quiet:
            sys.stderr.write(f"plint: {summary}\n")
        return 1 if result.changes else 0
    from plint.report.common import visible

    lines = (
        [concise_line(d) for _, d in visible(result.remaining.results, errors_first=False)]
        if result.remaining is not None
        else []
    )
    sys.stdout.write("".join(f"{line}\n" for line in lines) + ("" if quiet else summary + "\n"))
    sys.stdout.flush()
    level = fail_on or (result.remaining.fail_on if result.remaining is not None else None) or "error"
    if level != "never" and any(
        SEVERITY_RANK[d.severity] >= SEVERITY_RANK[level] for d in result.remaining_diagnostics
    ):
        return 1
    return 0


DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


def diff_text(changes: list[FileChange], color: bool) -> str:
    """The unified diffs of the changes, each line ending in a newline (the summary never runs into
    the last one). For a terminal, coloured as git colours diffs and with the file's control characters
    shown as escapes (report.common.printable); piped, exactly what `patch` applies, but in a GitHub
    Actions step (GITHUB_ACTIONS=true, set by the runner), where the log is read for workflow commands
    and the diff quotes a pull request's lines: there no line of it forms one (plint.escape.inert)."""
    text = "".join(c.diff() for c in changes)
    if not text or not (color or sys.stdout.isatty()):
        if os.environ.get("GITHUB_ACTIONS") == "true":
            from plint.escape import inert

            return "".join(inert(line) for line in text.splitlines(keepends=True))
        return text
    from plint.escape import log

    lines = [log(line.removesuffix("\r"), keep="\t") for line in text.split("\n")[:-1]]  # newline-ended
    if not color:
        return "".join(f"{line}\n" for line in lines)
    from plint.report.color import paint

    return paint(
        [[(next((style for prefix, style in DIFF_STYLES if line.startswith(prefix)), ""), line)] for line in lines]
    )
