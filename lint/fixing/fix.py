"""`plint fix`: apply the fixers' byte-range edits to the original text, like ruff's `--fix`.

Each pass checks the files (in memory), asks the fixers (plint.fixing.fixers) for the fix of every
unsuppressed diagnostic, applies the fixes whose edits do not overlap, and checks the result again:
a pass that adds an error-level finding (or makes a script that `bash -n` accepted fail it) is
retried fix by fix and the fixes that add one are reverted and reported. Passes repeat until no fix
applies (at most MAX_PASSES). Nothing is re-rendered: comments and formatting stay. Files are written
atomically (a temporary file in the same folder, then os.replace, mode bits kept), and only inside the
root of the check, never through a symlink (plint.fixing.fix_writes); `--diff` prints a unified diff per file
instead and writes nothing. Safe fixes only, unless `unsafe=True`.
"""

from __future__ import annotations

import os
from pathlib import Path

from plint.diagnostics import fingerprint, fix_json
from plint.record import field, record
from plint.root import read_regular
from plint.source import reading_from

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plint.checking.check import CheckOptions, CheckRun
    from plint.diagnostics import Diagnostic
    from plint.rules.base import Fix

MAX_PASSES = 5
SHELL_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch", "")


def _lines(data: bytes) -> list[str]:
    """The lines of a file as diff and patch count them: ended by a newline only. (str.splitlines also
    breaks at a form feed, a lone CR, U+0085 or U+2028, which would put `\\ No newline at end of file`
    in the middle of a diff that `patch` then refuses.)"""
    *lines, last = data.decode("utf-8", "surrogateescape").split("\n")
    return [line + "\n" for line in lines] + ([last] if last else [])


@record
class FileChange:
    path: str  # as reports show it
    real: str  # the file written
    before: bytes
    after: bytes

    def diff(self) -> str:
        import difflib

        old, new = _lines(self.before), _lines(self.after)
        lines = difflib.unified_diff(old, new, fromfile=self.path, tofile=self.path)
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


@record
class AppliedFix:
    code: str
    path: str
    line: int | None
    message: str
    fix: Fix


@record
class FixRun:
    changes: list[FileChange] = field(default_factory=list)
    fixed: list[AppliedFix] = field(default_factory=list)
    reverted: list[str] = field(default_factory=list)  # why a fix was not kept
    remaining: CheckRun | None = None  # the check of the fixed files
    passes: int = 0
    written: bool = False
    dry: bool = False  # --diff: nothing is written

    @property
    def remaining_diagnostics(self) -> list[Diagnostic]:
        if self.remaining is None:
            return []
        return [d for r in self.remaining.results for d in r.diagnostics if d.suppressed is None]

    def summary(self) -> str:
        n, m, k = len(self.fixed), len(self.changes), len(self.remaining_diagnostics)
        verb = "fixed" if self.written else "would fix" if self.changes or self.dry else "fixed"
        return f"{verb} {n} finding(s) in {m} file(s), {k} remaining"


# ---- reading files from memory -------------------------------------------------------------------


def overlay(files: dict[str, bytes]):
    """While active, the files in `files` (real path -> bytes) read as their in-memory text."""

    return reading_from(files)


def _check(paths: list[Path], options, files: dict[str, bytes]):
    from plint.checking.check import check_paths

    with overlay(files):
        return check_paths(paths, options)


def _errors(run) -> dict[str, int]:
    """Unsuppressed error-level findings by fingerprint (rule, path, key: no line numbers)."""
    out: dict[str, int] = {}
    for r in run.results:
        for d in r.diagnostics:
            if d.suppressed is None and d.severity == "error":
                k = fingerprint(d)
                out[k] = out.get(k, 0) + 1
    return out


def _new_errors(before: dict[str, int], after_run) -> list[str]:
    after = _errors(after_run)
    new = {k for k, n in after.items() if n > before.get(k, 0)}
    return [
        f"{d.path}:{d.line}: {d.code} {d.message}"
        for r in after_run.results
        for d in r.diagnostics
        if d.suppressed is None and d.severity == "error" and fingerprint(d) in new
    ]


_BASH: list = []


def _bash() -> str | None:
    if not _BASH:
        import shutil

        _BASH.append(shutil.which("bash"))
    return _BASH[0]


def bash_accepts(data: bytes) -> bool | None:
    """`bash -n` on a script's text; None when bash is not installed."""
    bash = _bash()
    if bash is None:
        return None
    import subprocess

    try:
        done = subprocess.run([bash, "-n"], input=data, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.returncode == 0


def _is_shell(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in SHELL_SUFFIXES


# ---- applying edits ------------------------------------------------------------------------------


def _key(fix) -> tuple:
    return tuple(sorted((os.path.realpath(os.path.abspath(e.path)), e.start, e.end, e.text) for e in fix.edits))


def apply_edits(data: bytes, edits: list[tuple[int, int, str]]) -> bytes:
    """Apply non-overlapping (start, end, text) edits of the original bytes."""
    out, pos = [], 0
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1])):
        out.append(data[pos:start])
        out.append(text.encode("utf-8", "surrogateescape"))
        pos = end
    out.append(data[pos:])
    return b"".join(out)


def _apply(files: dict[str, bytes], fixes: list) -> dict[str, bytes] | None:
    """New file contents with the fixes applied (they do not overlap), None if an edit is out of range."""
    by_file: dict[str, list] = {}
    for fix in fixes:
        for real, start, end, text in _key(fix):
            by_file.setdefault(real, []).append((start, end, text))
    out = dict(files)
    for real, edits in by_file.items():
        data = files[real]
        if any(e[1] > len(data) or e[0] > e[1] for e in edits):
            return None
        out[real] = apply_edits(data, edits)
    return out


def _overlaps(a: tuple, taken: list[tuple]) -> bool:
    """Whether a fix's edits touch (or insert at the same place as) an edit already taken."""
    for real, start, end, _ in a:
        for r2, s2, e2, _ in taken:
            if real == r2 and (
                start < e2
                and s2 < end
                or start == s2
                or (start == end and s2 < start < e2)
                or (s2 == e2 and start < s2 < end)
            ):
                return True
    return False


# ---- the fixing loop ----------------------------------------------------------------------------


def _candidates(run, files: dict[str, bytes], unsafe: bool, refused: set) -> list[tuple]:
    """(diagnostic, fix) for every diagnostic a fixer fixes, first come first served per place."""
    from plint.fixing.fixers import FixContext, fix_for, fixable_codes

    codes = fixable_codes(unsafe)
    out: list[tuple] = []
    taken: list[tuple] = []
    seen: set = set()
    for result in run.results:
        ctx = None
        for d in result.diagnostics:
            if d.suppressed is not None or d.code not in codes or _ident(d) in refused:
                continue
            if ctx is None:
                ctx = FixContext(result.reading, None, files)
            fix = fix_for(d, ctx, unsafe)
            if fix is None:
                continue
            edits = _key(fix)
            # edits must stay in files that exist (not one the script writes) and change something
            for real, *_ in edits:
                if real not in files and result.reading.root is not None:
                    try:  # only where the check read: plint.root
                        files[real] = result.reading.root.read(real)
                    except (OSError, ValueError):
                        pass
            if any(real not in files for real, *_ in edits):
                continue
            if all(files[real][s:e] == t.encode("utf-8", "surrogateescape") for real, s, e, t in edits):
                continue
            if edits in seen:  # the same fix found through two layouts or two checked files
                continue
            if edits in refused or _overlaps(edits, taken):
                continue
            seen.add(edits)
            taken.extend(edits)
            out.append((d, fix))
    return out


def _ident(d) -> tuple:
    """A diagnostic across passes (lines move, the message and key do not)."""
    return (d.code, d.path, d.key, d.message)


def _load_files(paths: list[Path]) -> dict[str, bytes]:
    from plint.checking.check import expand_paths

    out = {}
    for p in expand_paths(paths):
        real = os.path.realpath(os.path.abspath(p))
        try:
            out[real] = read_regular(real)  # a FIFO or a device is not opened
        except (OSError, ValueError):
            continue
    return out


def _validate(
    before_errors,
    original: dict[str, bytes],
    new_files: dict[str, bytes],
    paths,
    options,
    bash_ok: dict[str, bool | None],
):
    """(run, problems): the check of new_files, and what got worse (new errors, bash -n failing)."""
    run = _check(paths, options, new_files)
    problems = _new_errors(before_errors, run)
    for real, data in new_files.items():
        if data is original.get(real) or data == original.get(real) or not _is_shell(real):
            continue
        if len(data) > BASH_CHECK_BYTES:  # bash -n would cost seconds: tree-sitter's parse judges the fix
            if real in original and _parses_clean(original[real]) and not _parses_clean(data):
                problems.append(f"{real}: the result no longer parses")
            continue
        if real not in bash_ok:
            bash_ok[real] = bash_accepts(original[real]) if real in original else None
        if bash_ok[real] and bash_accepts(data) is False:
            problems.append(f"{real}: `bash -n` rejects the result")
    return run, problems


# `bash -n` takes about a second per 3 MiB of text (a long word, issue 30's fuzzer): past this size a fix is
# judged by tree-sitter-bash's parse instead, which plint has already paid for: no error node where there was none
BASH_CHECK_BYTES = 1 << 20


def _parses_clean(data: bytes) -> bool:
    from plint.reading.shell.parse import TooComplex, has_error, parse

    try:
        return not has_error(parse(data))
    except TooComplex:
        return False


def compatible_fixes(kept: list[tuple], check_together) -> tuple[list[tuple], Any, Any, list[tuple]]:
    """The fixes of a pass that hold together, each fine alone: all of them when they do, else taken in the
    order of their findings, each kept only if the ones kept so far and it still add nothing bad (ruff keeps
    the first fix where two conflict). check_together(fixes) -> (files, run, problems).
    Returns (kept fixes, their files, their run, [(diagnostic, fix, why refused)])."""
    files, run, problems = check_together([f for _, f in kept])
    if not problems:
        return kept, files, run, []
    chosen: list[tuple] = []
    conflicts: list[tuple] = []
    files = run = None
    for d, fix in kept:
        trial_files, trial_run, why = check_together([f for _, f in chosen] + [fix])
        if why:
            codes = sorted({c.code for c, _ in chosen})
            with_whom = f"the {', '.join(codes)} fix{'es' if len(codes) > 1 else ''}" if codes else "the others"
            conflicts.append((d, fix, f"fine alone, not with {with_whom}: " + "; ".join(why[:3])))
            continue
        chosen.append((d, fix))
        files, run = trial_files, trial_run
    return chosen, files, run, conflicts


def fix_paths(
    paths: list[Path], unsafe: bool = False, diff: bool = False, options: CheckOptions | None = None, **kwargs
) -> FixRun:
    """Fix the files under paths in place (or, with diff=True, only compute the changes).
    Keyword arguments are a shorthand for CheckOptions fields, as for check_paths. Only files inside
    the root of the check are written (plint.fixing.fix_writes), never through a symlink."""
    from plint.checking.check import CheckOptions
    from plint.fixing.fix_writes import unwritable, write_atomic

    from plint.fixing.fix_writes import remove_stale_temps

    options = options or CheckOptions(**kwargs)
    paths = [Path(p) for p in paths]
    remove_stale_temps(paths)
    files = _load_files(paths)
    originals = dict(files)
    bash_ok: dict[str, bool | None] = {}
    out = FixRun()
    refused: set = set()
    run = first_run = _check(paths, options, files)
    for _ in range(MAX_PASSES):
        candidates = _candidates(run, files, unsafe, refused)
        if not candidates:
            break
        out.passes += 1
        originals.update({k: v for k, v in files.items() if k not in originals})
        before = _errors(run)
        new_files = _apply(files, [f for _, f in candidates])
        new_run, problems = (
            (None, ["an edit lies outside its file"])
            if new_files is None
            else _validate(before, originals, new_files, paths, options, bash_ok)
        )
        if problems:
            # one fix at a time: keep those that add nothing bad, report the others
            kept = []
            for d, fix in candidates:
                alone = _apply(files, [fix])
                _, why = (
                    (None, ["an edit lies outside its file"])
                    if alone is None
                    else _validate(before, originals, alone, paths, options, bash_ok)
                )
                if why:
                    refused.update((_key(fix), _ident(d)))
                    out.reverted.append(
                        f"{d.path}:{d.line}: {d.code} fix reverted ({fix.description}): " + "; ".join(why[:3])
                    )
                else:
                    kept.append((d, fix))
            if not kept:
                continue

            def check_together(fixes: list) -> tuple:
                together = _apply(files, fixes)
                if together is None:
                    return None, None, ["an edit lies outside its file"]
                checked, why = _validate(before, originals, together, paths, options, bash_ok)
                return together, checked, why

            candidates, new_files, new_run, conflicts = compatible_fixes(kept, check_together)
            for d, fix, why in conflicts:
                refused.update((_key(fix), _ident(d)))
                out.reverted.append(f"{d.path}:{d.line}: {d.code} fix reverted ({fix.description}): " + why)
            if not candidates:
                continue
        assert new_files is not None and new_run is not None  # no problems: the edits applied and were checked
        files, run = new_files, new_run
        out.fixed.extend(AppliedFix(d.code, d.path, d.line, d.message, f) for d, f in candidates)
    out.remaining = run
    # a file read for a candidate of the last pass and never edited is not changed (it has no original)
    changed = [real for real, data in files.items() if data != originals.get(real, data)]
    rejected = _new_dry_run_problems(first_run, run, changed) if changed else {}
    refusals = unwritable(first_run, paths, changed)
    for real in changed:
        if real in refusals:
            out.reverted.append(f"{_display(real)}: not written, {refusals[real]}")
            continue
        if rejected.get(real):
            out.reverted.append(
                f"{_display(real)}: not written, the dry run rejects the fixed layout: "
                + "; ".join(sorted(rejected[real])[:3])
            )
            continue
        out.changes.append(FileChange(_display(real), real, originals[real], files[real]))
    out.changes.sort(key=lambda c: c.path)
    out.dry = diff
    if not diff:
        for change in out.changes:
            write_atomic(change.real, change.after)
        out.written = bool(out.changes)
    return out


def _dry_run_problems(run, changed: list[str]) -> dict[str, set[str]]:
    """The dry run's problems per changed file (megatron-core's groups with the dryrun extra, plint's
    analytic layout without it)."""
    from plint.dryrun.groups import dry_run

    # megatron-core's groups cost torch's start-up (about 2 s and 300 MB): PLINT_DRY_RUN_BACKEND=analytic keeps
    # to plint's own layout, as the fuzzer and the budget tests do to measure plint alone
    backend = os.environ.get("PLINT_DRY_RUN_BACKEND", "auto")
    backend = backend if backend in ("auto", "analytic", "megatron-core") else "auto"
    out: dict[str, set[str]] = {}
    for r in run.results:
        real = os.path.realpath(os.path.abspath(r.path))
        if real in changed:
            for layout in r.layouts:
                out.setdefault(real, set()).update(p["message"] for p in dry_run(layout, backend=backend)["problems"])
    return out


def _new_dry_run_problems(before, after, changed: list[str]) -> dict[str, set[str]]:
    """What the dry run rejects in the fixed files that it did not reject before the fix."""
    old, new = _dry_run_problems(before, changed), _dry_run_problems(after, changed)
    return {real: new[real] - old.get(real, set()) for real in new if new[real] - old.get(real, set())}


def _display(real: str) -> str:
    rel = os.path.relpath(real)
    return real if rel.startswith("..") else rel


# ---- the diagnostics' `fix` field ----------------------------------------------------------------


def attach_fixes(run, unsafe: bool = True) -> None:
    """Fill Diagnostic.fix ({description, applicability, edits}) for every diagnostic a fixer fixes
    (for `plint check --format json|sarif` and the text report's help: diff)."""
    from plint.fixing.fixers import FixContext, fix_for, fixable_codes

    codes = fixable_codes(unsafe)
    for result in run.results:
        ctx = None
        for d in result.diagnostics:
            if d.fix is not None or d.code not in codes:
                continue
            ctx = ctx or FixContext(result.reading)
            fix = fix_for(d, ctx, unsafe)
            if fix is not None:
                d.fix = fix_json(fix)


# ---- the command ---------------------------------------------------------------------------------


def hidden_fixes(result: FixRun) -> int:
    """Findings left after a safe fix that `--unsafe-fixes` would fix (ruff's "hidden fixes"), judged
    on the fixed text (in memory under --diff)."""
    if result.remaining is None or not result.remaining_diagnostics:
        return 0
    with overlay({c.real: c.after for c in result.changes}):
        attach_fixes(result.remaining, unsafe=True)
    return sum(1 for d in result.remaining_diagnostics if d.fix and d.fix.get("applicability") == "unsafe")
