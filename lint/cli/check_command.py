"""`plint check`: its options (declared once), the run itself, and a click-free fast path.

`plint check` runs in every pre-commit and its budget is a few times Python's own start-up; importing
click alone costs about twice that start-up. So the console entry (plint.entry) parses an ordinary
`plint check ...` command line with the table below and runs it without importing click; anything
else (help, a bad option, a missing path, other commands) goes to the click CLI, which declares its
`check` options from the same table and calls the same `run`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from plint.source import probe, reading_from
from plint.root import MAX_FILE_BYTES
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

FORMATS = ("text", "json", "sarif", "github", "markdown", "gitlab", "junit", "rdjson")
FAIL_ON = ("error", "warning", "info", "never")
SEVERITIES = ("error", "warning", "info")
COLOR = ("auto", "always", "never")
STDIN = "-"
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


class Option:
    def __init__(
        self,
        flag: str,
        dest: str,
        kind: str = "value",
        choices: tuple[str, ...] | None = None,
        default: Any = None,
        metavar: str | None = None,
        help: str = "",  # noqa: A002
        short: str | None = None,
        aliases: tuple[str, ...] = (),
    ):
        self.flag, self.dest, self.kind, self.choices = flag, dest, kind, choices
        self.default, self.metavar, self.help, self.short = default, metavar, help, short
        self.aliases = aliases  # other spellings of the same option (ruff's --output-format for --format)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.flag, *self.aliases, *((self.short,) if self.short else ()))


OPTIONS: tuple[Option, ...] = (
    Option(
        "--format",
        "fmt",
        choices=FORMATS,
        default="text",
        aliases=("--output-format",),
        help="Output format (--output-format is the same option, as ruff names it): gitlab is GitLab's code "
        "quality report, junit JUnit XML, rdjson reviewdog's diagnostic format.",
    ),
    Option(
        "--fix",
        "fix",
        kind="flag",
        default=False,
        help="Apply the safe fixes first, as `plint fix` does (files are rewritten), then report what is left.",
    ),
    Option(
        "--unsafe-fixes",
        "unsafe_fixes",
        kind="flag",
        default=False,
        help="With --fix: also apply the unsafe fixes (layout changes), as `plint fix --unsafe-fixes`.",
    ),
    Option(
        "--severity",
        "severity",
        choices=SEVERITIES,
        short="-S",
        help="Show only findings at or above this severity. As with shellcheck's -S, the findings it hides "
        "do not count for the exit code either.",
    ),
    Option(
        "--exit-zero",
        "exit_zero",
        kind="flag",
        default=False,
        help="Exit 0 even when there are findings (2 still means a usage error).",
    ),
    Option(
        "--show-settings",
        "show_settings",
        kind="flag",
        default=False,
        help="Print the config file found for the first path and the settings in force, and exit.",
    ),
    Option("--concise", "concise", kind="flag", default=False, help="Text format: one line per finding."),
    Option(
        "--quiet",
        "quiet",
        kind="flag",
        default=False,
        short="-q",
        help="Text format: the findings only; nothing at all for a clean file.",
    ),
    Option(
        "--verbose",
        "verbose",
        kind="flag",
        default=False,
        short="-v",
        help="Text format: every file's layout, memory and step estimate, findings or not.",
    ),
    Option(
        "--statistics",
        "statistics",
        kind="flag",
        default=False,
        help="Text format: a count per rule instead of each finding.",
    ),
    Option(
        "--color",
        "color",
        choices=COLOR,
        default="auto",
        help="Colour the text output: auto (a terminal, unless NO_COLOR is set or TERM=dumb; "
        "FORCE_COLOR forces it), always or never.",
    ),
    Option(
        "--stdin-filename",
        "stdin_filename",
        metavar="NAME",
        help="Read the launch from standard input (the path `-`) as if it were the file NAME: config, "
        "per-file ignores and relative references resolve as for NAME.",
    ),
    Option(
        "--env",
        "env",
        kind="multi",
        default=(),
        metavar="NAME=VALUE",
        help="Seed a variable the script reads from its environment (digits name a positional parameter).",
    ),
    Option(
        "--assume",
        "assume",
        kind="multi",
        default=(),
        metavar="NAME=VALUE",
        help="Value for a variable the script sets from something only known at run time.",
    ),
    Option("--gpu", "gpu", metavar="NAME", help="The GPU the job runs on (overrides the files)."),
    Option(
        "--config",
        "config_file",
        metavar="FILE",
        help="Use this config file instead of the nearest pyproject.toml [tool.plint] / .plint.toml.",
    ),
    Option("--isolated", "isolated", kind="flag", default=False, help="Ignore every config file."),
    Option(
        "--trainer-source",
        "trainer_source",
        metavar="DIR",
        help="A training-code checkout whose megatron/arguments.py judges the flags when the launch's own "
        "tree has none.",
    ),
    Option(
        "--root",
        "root",
        metavar="DIR",
        help="Read files only under DIR (default: the git work tree of each checked file); the "
        "config's root and read-outside are then ignored.",
    ),
    Option("--select", "select", metavar="CODES", help="Only these rules (codes, names or prefixes, comma-separated)."),
    Option("--extend-select", "extend_select", metavar="CODES", help="Add these rules to the selection."),
    Option("--ignore", "ignore", metavar="CODES", help="Skip these rules (codes, names or prefixes)."),
    Option(
        "--baseline",
        "baseline",
        metavar="FILE",
        help="Accept the findings listed in this baseline (default: .plint-baseline beside the config).",
    ),
    Option(
        "--write-baseline",
        "write_baseline",
        metavar="FILE",
        help="Write every current finding to this baseline file and exit 0.",
    ),
    Option(
        "--dry-run",
        "dry_run",
        kind="flag",
        default=False,
        help="Also build each layout's process groups as the trainer would (megatron-core on fake "
        "process groups with the dryrun extra, else plint's analytic layout) and report them.",
    ),
    Option(
        "--pr-comment",
        "pr_comment",
        kind="flag",
        default=False,
        help="Also keep one sticky comment on the pull request ($GITHUB_EVENT_PATH) up to date, and post "
        "new findings on the lines it changes as one review with one-click suggestions, through "
        "GitHub's REST API ($GITHUB_API_URL, $GITHUB_TOKEN, $GITHUB_REPOSITORY).",
    ),
    Option(
        "--only-new-against",
        "only_new_against",
        metavar="REV",
        help="Report only findings that the git revision REV's version of the files did not have.",
    ),
    Option(
        "--fail-on",
        "fail_on",
        choices=FAIL_ON,
        help="Exit 1 when a finding is at or above this severity (default: error, or the config's fail-on).",
    ),
)


def parse_fast(argv: list[str]) -> dict | None:
    """Arguments of `plint check` when they are ordinary; None to let click handle (and explain) them."""
    by_flag = {name: o for o in OPTIONS for name in o.names}
    values: dict[str, Any] = {o.dest: (list(o.default) if o.kind == "multi" else o.default) for o in OPTIONS}
    paths: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            paths.extend(argv[i + 1 :])
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
    if not paths:  # like ruff: --stdin-filename alone reads standard input, no path at all checks `.`
        paths = [STDIN] if values["stdin_filename"] is not None else ["."]
    if not paths or any(p != STDIN and not probe(lambda: os.path.lexists(p)) for p in paths):
        return None
    values["paths"] = paths
    return values


def run(
    paths: list[Path],
    fmt: str = "text",
    concise: bool = False,
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
    write_baseline: str | None = None,
    dry_run: bool = False,
    trainer_source: str | None = None,
    root: str | None = None,
    pr_comment: bool = False,
    only_new_against: str | None = None,
    quiet: bool = False,
    verbose: bool = False,
    statistics: bool = False,
    color: str = "auto",
    stdin_filename: str | None = None,
    fix: bool = False,
    unsafe_fixes: bool = False,
    severity: str | None = None,
    exit_zero: bool = False,
    show_settings: bool = False,
) -> int:
    """Check the paths, print the report, return the exit code. Raises UsageError for bad input."""
    from plint.checking.check import check_options, check_paths

    _refuse_clashing_options(paths, fmt, quiet, verbose, statistics, fix, unsafe_fixes, write_baseline, stdin_filename)
    paths, stdin = standard_input(list(paths), stdin_filename)
    options = check_options(
        [p for p in paths if stdin is None or p != stdin[0]],
        env,
        assume,
        gpu,
        config_file,
        isolated,
        select,
        extend_select,
        ignore,
        baseline,
        trainer_source,
        root,
    )
    if show_settings:
        from plint.report.settings import render as render_settings

        sys.stdout.write(render_settings(paths[0] if paths else ".", options, fail_on) + "\n")
        return 0
    if fix:
        _fix_first(list(paths), options, unsafe_fixes, quiet)
    with _read_as_file(stdin):
        result = check_paths(list(paths), options)
    if only_new_against:
        from plint.github.only_new import keep_new

        keep_new(result, [str(p) for p in paths], only_new_against, options)
    if dry_run:  # torch, megatron-core and deepspeed are imported only here
        from plint.dryrun.groups import dry_run as build_groups

        for r in result.results:
            for layout in r.layouts:
                layout.extras.dry_run = build_groups(layout)
    if write_baseline:
        from plint.checking.baseline import write_baseline as write

        count = write(Path(write_baseline), result.results)
        sys.stderr.write(f"plint: wrote {count} finding(s) to {write_baseline}\n")
        return 0
    _limit_findings(result, severity)
    # every format says which findings `plint fix` fixes: the machine formats carry each fix's edits
    # (DESIGN.md), the text report marks them and counts them in its closing line
    if any(d.suppressed is None for r in result.results for d in r.diagnostics):
        from plint.fixing.fix import attach_fixes

        with _read_as_file(stdin):
            attach_fixes(result)
    text = _render(
        result, fmt, stdin, concise, color, "quiet" if quiet else "verbose" if verbose else "default", statistics
    )
    if text:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if result.notes and not quiet:  # not findings: stderr, so that no report format changes
        from plint.escape import log  # a note names a file and may quote it

        sys.stderr.write("".join(f"plint: {log(note)}\n" for note in result.notes))
    if pr_comment:
        _comment_on_the_pull_request(result)
    return _exit_code(result, "never" if exit_zero else fail_on or result.fail_on or "error", dry_run)


def _comment_on_the_pull_request(result) -> None:
    """--pr-comment: the sticky summary comment and the review with a comment on each finding's line."""
    from plint.github.review import post_review
    from plint.github.sticky_comment import post, report

    report(post(result.results))
    report(post_review(result.results))
    sys.stdout.flush()


def _refuse_clashing_options(
    paths: list[Path],
    fmt: str,
    quiet: bool,
    verbose: bool,
    statistics: bool,
    fix: bool,
    unsafe_fixes: bool,
    write_baseline: str | None,
    stdin_filename: str | None,
) -> None:
    """A UsageError for options that cannot go together."""
    from plint.checking.check import UsageError

    if quiet and verbose:
        raise UsageError("--quiet and --verbose: give one")
    if statistics and fmt != "text":
        raise UsageError("--statistics: counts are a text report (--format text)")
    if unsafe_fixes and not fix:
        raise UsageError("--unsafe-fixes applies fixes only with --fix (or use `plint fix --unsafe-fixes`)")
    if fix and (write_baseline or any(str(p) == STDIN for p in paths) or (not paths and stdin_filename)):
        raise UsageError("--fix rewrites files in place: not with `-` (standard input) or --write-baseline")


def _limit_findings(result, severity: str | None) -> None:
    """Bounded output: the budget of findings a report prints per file; with --severity, none below it."""
    from plint.checking.engine import limit_report

    for r in result.results:
        r.diagnostics = limit_report(r.diagnostics, r.path)
        # shellcheck's -S: below the level, neither shown nor counted (ShellCheck's checkScript in
        # src/ShellCheck/Checker.hs drops comments above csMinSeverity before any formatter or exit status)
        if severity is not None:
            r.diagnostics = [d for d in r.diagnostics if SEVERITY_RANK[d.severity] >= SEVERITY_RANK[severity]]


def _render(
    result, fmt: str, stdin: tuple[str, str, bytes] | None, concise: bool, color: str, detail: str, statistics: bool
) -> str:
    """The report in the format asked for."""
    if fmt == "text":
        from plint.report.color import use_color
        from plint.report.text import render

        findings = any(d.suppressed is None for r in result.results for d in r.diagnostics)
        coloured = use_color(color) if findings or color == "always" else False  # a clean report is plain
        with _read_as_file(stdin):  # snippets and fix diffs show what was checked, not the file on disk
            return render(result.results, concise=concise, color=coloured, detail=detail, statistics=statistics)
    from importlib import import_module

    with _read_as_file(stdin):  # rdjson reads the lines back for byte columns
        return import_module(f"plint.report.{'json_report' if fmt == 'json' else fmt}").render(result.results)


def _exit_code(result, fail_on: str, dry_run: bool) -> int:
    """1 when a dry run failed or a finding reaches --fail-on, else 0."""
    if (
        dry_run
        and fail_on != "never"
        and any(not layout.extras.dry_run["ok"] for r in result.results for layout in r.layouts)
    ):
        return 1
    if fail_on != "never" and any(
        d.suppressed is None and SEVERITY_RANK[d.severity] >= SEVERITY_RANK[fail_on]
        for r in result.results
        for d in r.diagnostics
    ):
        return 1
    return 0


def _fix_first(paths: list, options, unsafe: bool, quiet: bool) -> None:
    """`check --fix`: what `plint fix` does, before the check that reports what is left; what it did
    goes to stderr (ruff's summary), so the report on stdout keeps its format."""
    from plint.fixing.fix import fix_paths

    done = fix_paths([Path(p) for p in paths], unsafe=unsafe, options=options)
    lines = [f"plint: {why}" for why in done.reverted]
    if not quiet and done.fixed:
        lines.append(f"plint: fixed {len(done.fixed)} finding(s) in {len(done.changes)} file(s)")
    if lines:
        from plint.report.common import printable

        sys.stderr.write("".join(f"{printable(line)}\n" for line in lines))


def _read_as_file(stdin: tuple[str, str, bytes] | None):
    """While checking and reporting: standard input's bytes stand for the file it is checked as."""
    if stdin is None:
        from contextlib import nullcontext

        return nullcontext()

    return reading_from({stdin[1]: stdin[2]})


# Standard input as read, once per process: after a ValueError the console entry runs the check again
# through click (plint.entry), and that run must check the same bytes, not a drained stream (which
# checks as an empty, clean file: exit 0 for a broken launch).
_stdin_read: bytes | None = None


def standard_input(paths: list, stdin_filename: str | None) -> tuple[list, tuple[str, str, bytes] | None]:
    """The paths with `-` standing for standard input replaced by the name it is checked as (NAME of
    --stdin-filename, else `-`), and (that name, its real path, the bytes read), or None without `-`.
    At most one byte more than a launch file may have is read: the reader then says it is too large."""
    from plint.checking.check import UsageError

    named = [p for p in paths if str(p) == STDIN]
    if not paths and stdin_filename is not None:
        named, paths = [STDIN], [STDIN]
    if not named:
        if stdin_filename is not None:
            raise UsageError("--stdin-filename names standard input: give `-` as the path to check")
        return paths, None
    if len(named) > 1:
        raise UsageError("`-` (standard input) given more than once")

    name = stdin_filename if stdin_filename is not None else STDIN
    if not name or os.path.isdir(name):
        raise UsageError(
            f"--stdin-filename: {name!r} is a folder, not a file name" if name else "--stdin-filename: empty name"
        )
    try:  # the name need not exist, but the reader resolves it (pathlib refuses a symlink loop)
        Path(name).resolve()
    except (OSError, RuntimeError) as exc:
        raise UsageError(f"--stdin-filename: {name!r} cannot be resolved ({exc})") from None
    global _stdin_read
    if _stdin_read is None:
        _stdin_read = sys.stdin.buffer.read(MAX_FILE_BYTES + 1) if sys.stdin is not None else b""
    data = _stdin_read
    return [name if str(p) == STDIN else p for p in paths], (name, os.path.realpath(os.path.abspath(name)), data)
