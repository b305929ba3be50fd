"""`plint check`: its options (declared once), the run itself, and a click-free fast path.

`plint check` runs in every pre-commit and its budget is a few times Python's own start-up; importing
click alone costs about twice that start-up. So the console entry (plint.entry) parses an ordinary
`plint check ...` command line with the table below and runs it without importing click; anything
else (help, a bad option, a missing path, other commands) goes to the click CLI, which declares its
`check` options from the same table and calls the same `run`.
"""

from __future__ import annotations

import sys

from plint.source import path_exists
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

FORMATS = ("text", "json", "sarif", "github", "markdown")
FAIL_ON = ("error", "warning", "info", "never")
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


class Option:
    def __init__(self, flag: str, dest: str, kind: str = "value", choices: tuple[str, ...] | None = None,
                 default: Any = None, metavar: str | None = None, help: str = ""):  # noqa: A002
        self.flag, self.dest, self.kind, self.choices = flag, dest, kind, choices
        self.default, self.metavar, self.help = default, metavar, help


OPTIONS: tuple[Option, ...] = (
    Option("--format", "fmt", choices=FORMATS, default="text", help="Output format."),
    Option("--concise", "concise", kind="flag", default=False, help="Text format: one line per finding."),
    Option("--env", "env", kind="multi", default=(), metavar="NAME=VALUE",
           help="Seed a variable the script reads from its environment (digits name a positional parameter)."),
    Option("--assume", "assume", kind="multi", default=(), metavar="NAME=VALUE",
           help="Value for a variable the script sets from something only known at run time."),
    Option("--gpu", "gpu", metavar="NAME", help="The GPU the job runs on (overrides the files)."),
    Option("--config", "config_file", metavar="FILE",
           help="Use this config file instead of the nearest pyproject.toml [tool.plint] / .plint.toml."),
    Option("--isolated", "isolated", kind="flag", default=False, help="Ignore every config file."),
    Option("--trainer-source", "trainer_source", metavar="DIR",
           help="A training-code checkout whose megatron/arguments.py judges the flags when the launch's own "
                "tree has none."),
    Option("--root", "root", metavar="DIR",
           help="Read files only under DIR (default: the git work tree of each checked file); the "
                "config's root and read-outside are then ignored."),
    Option("--select", "select", metavar="CODES", help="Only these rules (codes, names or prefixes, comma-separated)."),
    Option("--extend-select", "extend_select", metavar="CODES", help="Add these rules to the selection."),
    Option("--ignore", "ignore", metavar="CODES", help="Skip these rules (codes, names or prefixes)."),
    Option("--baseline", "baseline", metavar="FILE",
           help="Accept the findings listed in this baseline (default: .plint-baseline beside the config)."),
    Option("--write-baseline", "write_baseline", metavar="FILE",
           help="Write every current finding to this baseline file and exit 0."),
    Option("--dry-run", "dry_run", kind="flag", default=False,
           help="Also build each layout's process groups as the trainer would (megatron-core on fake "
                "process groups with the dryrun extra, else plint's analytic layout) and report them."),
    Option("--pr-comment", "pr_comment", kind="flag", default=False,
           help="Also keep one sticky comment on the pull request ($GITHUB_EVENT_PATH) up to date through "
                "GitHub's REST API ($GITHUB_API_URL, $GITHUB_TOKEN, $GITHUB_REPOSITORY)."),
    Option("--only-new-against", "only_new_against", metavar="REV",
           help="Report only findings that the git revision REV's version of the files did not have."),
    Option("--fail-on", "fail_on", choices=FAIL_ON,
           help="Exit 1 when a finding is at or above this severity (default: error, or the config's fail-on)."),
)


def parse_fast(argv: list[str]) -> dict | None:
    """Arguments of `plint check` when they are ordinary; None to let click handle (and explain) them."""
    by_flag = {o.flag: o for o in OPTIONS}
    values: dict[str, Any] = {o.dest: (list(o.default) if o.kind == "multi" else o.default) for o in OPTIONS}
    paths: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            paths.extend(argv[i + 1:])
            break
        if not arg.startswith("-") or arg == "-":
            paths.append(arg)
            i += 1
            continue
        flag, eq, inline = arg.partition("=")
        opt = by_flag.get(flag)
        if opt is None:
            return None
        if opt.kind == "flag":
            if eq:
                return None
            values[opt.dest] = True
            i += 1
            continue
        if eq:
            value = inline
            i += 1
        elif i + 1 < len(argv):
            value = argv[i + 1]
            i += 2
        else:
            return None
        if opt.choices is not None and value not in opt.choices:
            return None
        if opt.kind == "multi":
            values[opt.dest].append(value)
        else:
            values[opt.dest] = value
    if not paths or any(not path_exists(p) for p in paths):
        return None
    values["paths"] = paths  # strings: the check path does not import pathlib (plint.source)
    return values


def run(paths: list[Path], fmt: str = "text", concise: bool = False, env=(), assume=(), gpu: str | None = None,
        config_file: str | None = None, isolated: bool = False, select: str | None = None,
        extend_select: str | None = None, ignore: str | None = None, fail_on: str | None = None,
        baseline: str | None = None, write_baseline: str | None = None, dry_run: bool = False,
        trainer_source: str | None = None, root: str | None = None, pr_comment: bool = False,
        only_new_against: str | None = None) -> int:
    """Check the paths, print the report, return the exit code. Raises UsageError for bad input."""
    from plint.checking.check import check_options, check_paths

    options = check_options(paths, env, assume, gpu, config_file, isolated, select, extend_select, ignore,
                            baseline, trainer_source, root)
    result = check_paths(list(paths), options)
    if only_new_against:
        from plint.github.only_new import keep_new

        keep_new(result, list(paths), only_new_against, options)
    if dry_run:  # torch, megatron-core and deepspeed are imported only here
        from plint.dryrun.groups import dry_run as build_groups

        for r in result.results:
            for layout in r.layouts:
                layout.extras["dry_run"] = build_groups(layout)
    if write_baseline:
        from pathlib import Path

        from plint.checking.baseline import write_baseline as write

        count = write(Path(write_baseline), result.results)
        sys.stderr.write(f"plint: wrote {count} finding(s) to {write_baseline}\n")
        return 0
    from plint.checking.engine import limit_report

    for r in result.results:  # bounded output: the budget of findings a report prints per file
        r.diagnostics = limit_report(r.diagnostics, r.path)
    if fmt in ("json", "sarif") or pr_comment:  # the machine formats carry each fix's edits (DESIGN.md)
        from plint.fixing.fix import attach_fixes

        attach_fixes(result)
    if fmt == "text":
        from plint.report.text import render

        text = render(result.results, concise=concise)
    else:
        from importlib import import_module

        text = import_module(f"plint.report.{'json_report' if fmt == 'json' else fmt}").render(result.results)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    for note in result.notes:  # not findings: stderr, so that no report format changes
        sys.stderr.write(f"plint: {note}\n")
    if pr_comment:
        from plint.github.sticky_comment import post, report

        report(post(result.results))
        sys.stdout.flush()
    fail_on = fail_on or result.fail_on or "error"
    if dry_run and fail_on != "never" and any(
            not layout.extras["dry_run"]["ok"] for r in result.results for layout in r.layouts):
        return 1
    if fail_on != "never" and any(
            d.suppressed is None and SEVERITY_RANK[d.severity] >= SEVERITY_RANK[fail_on]
            for r in result.results for d in r.diagnostics):
        return 1
    return 0
