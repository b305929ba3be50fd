"""Run the rules over what was read: configuration, selection, severities, suppression, baseline.

Selection follows ruff: the configuration's select/extend-select/ignore apply first, then the
command line's (a --select starts over, --extend-select adds, --ignore removes); within one layer
the more specific selector wins (a code or a name beats a prefix, a longer prefix a shorter one),
and ignore wins a tie. per-file-ignores remove last. `severity = {X = "off"}` turns a rule off.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from plint.source import probe, read_bytes
from plint.checking.config import Settings, UsageError
from plint.diagnostics import Diagnostic
from plint.reading.read import FileReading
from plint.bounds import MAX_FINDINGS_PER_FILE, MAX_FINDINGS_PER_RULE
from plint.escape import log

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.checking.baseline import Baseline

BASELINE_NAME = ".plint-baseline"  # plint.checking.baseline.DEFAULT_NAME, not imported when there is no baseline
EXACT = 1000  # the specificity of a code or a name; a prefix counts its length


def specificity(rule, selector: str) -> int | None:
    """How specifically a selector names a rule: None when it does not."""
    if not selector:
        return None
    if selector.upper() == rule.code or selector.lower() == rule.name:
        return EXACT
    return len(selector) if rule.code.startswith(selector.upper()) else None


def _display(path: str) -> str:
    """A path as reports show it: relative to the working directory when under it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


class Engine:
    def __init__(self, options) -> None:
        self.options = options
        self.fail_on: str | None = None  # the first configuration's fail-on
        self._rules: dict = {}  # code -> Rule, once loaded
        self._config_of_folder: dict[Path, Path | None] = {}  # absolute folder -> its config file
        self._settings: dict[Path | None, Settings] = {}
        self._directives: dict[str, list] = {}  # absolute path -> directives, read once per run
        self._first_reader: dict[str, str] = {}  # absolute path of a sourced file -> the checked file
        self._baselines: dict[Path | None, Baseline | None] = {}  # absolute baseline path (None: none) -> Baseline

    # -- configuration -------------------------------------------------------------------------

    @property
    def rules(self) -> dict:
        if not self._rules:
            from plint.rules.registry import all_rules

            self._rules = all_rules()
            for flag, selectors in (
                ("--select", self.options.select),
                ("--ignore", self.options.ignore),
                ("--extend-select", getattr(self.options, "extend_select", None)),
            ):
                self._check_selectors(flag, selectors or [])
        return self._rules

    def _check_selectors(self, where: str, selectors: list[str]) -> None:
        for selector in selectors:
            if not any(specificity(r, selector) for r in self._rules.values()):
                near = self.suggest(selector)
                raise UsageError(
                    f"{where}: unknown rule selector {selector!r}"
                    + (f"; did you mean {near!r}?" if near else "")
                    + " (a code like PL303, a name like sequence-parallel-off, or a prefix like PL3)"
                )

    def suggest(self, selector: str) -> str | None:
        """The rule code, name or prefix a mistyped selector most likely meant."""
        from difflib import get_close_matches

        upper = selector.upper()
        if upper.startswith("PL"):  # O for 0 and l or I for 1 are the usual slips in a code
            fixed = "PL" + upper[2:].translate(str.maketrans("OIL", "011"))
            if fixed != upper and any(specificity(r, fixed) for r in self.rules.values()):
                return fixed
        names = [*self.rules, *(r.name for r in self.rules.values())]
        near = get_close_matches(selector.lower(), names, n=1) or get_close_matches(upper, names, n=1)
        return near[0] if near else None

    def settings_for(self, path: str | Path) -> Settings:
        """The configuration in force for a file: --config, else the nearest one (none with --isolated).
        Loaded and checked once per config file; ValueError when it is wrong."""
        from plint.checking import config

        folder = Path(os.path.abspath(path)).parent
        if folder not in self._config_of_folder:
            self._config_of_folder[folder] = config.in_force(
                folder, getattr(self.options, "config_file", None), getattr(self.options, "isolated", False)
            )
        where = self._config_of_folder[folder]
        if where not in self._settings:
            settings = config.load(where)
            self.rules  # noqa: B018  (loads the catalog, checks the command line's selectors)
            for key, selectors in settings.selector_lists():
                self._check_selectors(settings.where(key), selectors)
            self._settings[where] = settings
            if self.fail_on is None:
                self.fail_on = settings.fail_on
        return self._settings[where]

    # -- selection and severity ----------------------------------------------------------------

    def selected(self, settings: Settings | None = None, path: str | None = None) -> dict:
        """The rules in force for a file (see the module docstring)."""
        settings = settings or Settings()
        o = self.options
        enabled = set(self.rules)
        layers = (
            (settings.select, settings.extend_select, settings.ignore),
            (o.select, getattr(o, "extend_select", None), o.ignore),
        )
        for select, extend, ignore in layers:
            positive = list(select or []) + list(extend or [])
            if select is None and not positive and not ignore:
                continue
            kept = set()
            for code, rule in self.rules.items():
                plus = max((s for s in (specificity(rule, x) for x in positive) if s), default=0)
                minus = max((s for s in (specificity(rule, x) for x in ignore or []) if s), default=0)
                if plus > minus or (not plus and not minus and (select is None and code in enabled)):
                    kept.add(code)
            enabled = kept
        if path is not None and settings.per_file_ignores:
            import fnmatch

            rel = os.path.relpath(os.path.abspath(path), settings.root).replace(os.sep, "/")
            for pattern, selectors in settings.per_file_ignores.items():
                if (
                    fnmatch.fnmatchcase(rel, pattern)
                    or fnmatch.fnmatchcase(os.path.basename(path), pattern)
                    or (pattern.startswith("**/") and fnmatch.fnmatchcase(rel, pattern[3:]))
                ):
                    enabled = {c for c in enabled if not any(specificity(self.rules[c], s) for s in selectors)}
        return {c: r for c, r in self.rules.items() if c in enabled and self.severity_override(r, settings) != "off"}

    @staticmethod
    def severity_override(rule, settings: Settings) -> str | None:
        """The configured severity of a rule (the most specific selector wins), None when none is."""
        best, rank = None, 0
        for selector, level in settings.severity.items():
            s = specificity(rule, selector)
            if s and s > rank:
                best, rank = level, s
        return best

    # -- running -------------------------------------------------------------------------------

    def diagnose(self, reading: FileReading, settings: Settings) -> list[Diagnostic]:
        from plint.cost.layout_estimate import layout_estimate
        from plint.rules.base import RuleContext

        out: list[Diagnostic] = []
        seen: set[tuple] = set()
        rules = self.selected(settings, reading.path)
        for layout in reading.layouts:  # once per layout, with the configuration's cluster facts
            layout_estimate(layout, settings)
        contexts = [RuleContext(reading, layout, settings) for layout in reading.layouts] or [
            RuleContext(reading, None, settings)
        ]
        for ctx in contexts:
            for rule in rules.values():
                if rule.needs_layout and ctx.layout is None:
                    continue
                override = self.severity_override(rule, settings)
                for finding in self._findings(rule, ctx):
                    span = finding.span
                    ident = (rule.code, finding.message, span.path if span else None, span.start if span else None)
                    if ident in seen:  # the same finding from two layouts of one file
                        continue
                    seen.add(ident)
                    severity = override or finding.severity or rule.severity
                    d = Diagnostic.at(rule.code, rule.name, severity, finding.message, span, reading.path)
                    d.key = finding.key
                    out.append(d)
        if settings.per_file_ignores:
            out = self._per_file_ignored(out, reading.path, settings)
        self._suppress(reading, out)
        baseline = self._baseline_for(settings)
        if baseline is not None:
            for d in out:
                baseline.accept(d)
        return out

    def _per_file_ignored(self, diagnostics: list[Diagnostic], checked: str, settings: Settings) -> list[Diagnostic]:
        """Drop findings located in another file (a DeepSpeed JSON, a sourced script) that the
        per-file-ignores of that file's path rule out: JSON cannot carry a directive."""
        in_force: dict[str, dict] = {}
        kept = []
        for d in diagnostics:
            if d.path != checked and d.path not in in_force:
                in_force[d.path] = self.selected(settings, d.path)
            if d.path == checked or d.code in in_force[d.path]:
                kept.append(d)
        return kept

    @staticmethod
    def _findings(rule, ctx) -> list:
        """A rule's findings; a bug in one rule is reported on stderr instead of ending the run
        with a traceback (PLINT_STRICT=1, set by the tests, lets it raise)."""
        try:
            return list(rule.check(ctx))
        except Exception as exc:  # noqa: BLE001
            if os.environ.get("PLINT_STRICT") == "1":
                raise
            print(  # the path and the exception may quote the file: escaped for a log line
                f"plint: internal error in rule {rule.code} on {log(ctx.reading.path)}: {log(repr(exc))} "
                "(the rule is skipped; please report it)",
                file=sys.stderr,
            )
            return []

    # -- inline suppression --------------------------------------------------------------------

    def _directives_of(self, abs_path: str, text: str | None = None) -> list:
        if abs_path not in self._directives:
            if text is None:
                try:
                    text = read_bytes(abs_path).decode("utf-8", "surrogateescape")
                except OSError:
                    text = ""
            if may_hold_directives(text):
                from plint.checking.suppress import read_directives

                self._directives[abs_path] = read_directives(abs_path, text)
            else:
                self._directives[abs_path] = []  # most files: no directive, no tree to walk
        return self._directives[abs_path]

    def _suppress(self, reading: FileReading, diagnostics: list[Diagnostic]) -> None:
        """Apply the `# plint: disable` directives of the file and of the files it sources."""
        directives = []
        own = os.path.abspath(reading.path)
        if reading.kind == "shell" and reading.source is not None:
            directives += self._directives_of(own, reading.source.text)
            self._first_reader.setdefault(own, own)
        for sourced in reading.shell.files_read if reading.shell is not None else ():
            if os.path.isfile(sourced):
                directives += self._directives_of(sourced)
                self._first_reader.setdefault(sourced, own)
        if not directives:
            return
        from plint.checking.suppress import covers

        for diag in diagnostics:
            where = os.path.abspath(diag.path)
            for d in directives:
                selector = covers(d, where, diag.line, diag.code, diag.name)
                if selector is not None:
                    d.used.add(selector)
                    diag.suppressed = {"kind": "inSource", "justification": d.reason or "plint: disable"}
                    break
        for d in directives:  # a `# noqa` over a finding left standing: PL004 says what to write instead
            if d.noqa:
                d.under.update(
                    diag.code
                    for diag in diagnostics
                    if diag.suppressed is None
                    and diag.line
                    and where_is(d, diag)
                    and (not d.selectors or diag.code in d.selectors)
                )

    def _unused_directives(self, abs_path: str) -> list[Diagnostic]:
        """PL004 for the directives of one file that suppressed nothing in this run. A directive
        naming PL004 itself (`# plint: disable-file=unused-directive`) is judged after the others,
        since what it suppresses are their PL004 findings."""
        from plint.checking.suppress import covers

        rule = self.rules.get("PL004")
        settings = self.settings_for(abs_path)
        if rule is None or "PL004" not in self.selected(settings, abs_path):
            return []
        severity = self.severity_override(rule, settings) or rule.severity
        directives = self._directives[abs_path]
        out = []
        for last_pass in (False, True):
            for d in directives:
                message = self._directive_problem(d, rule, last_pass)
                if message is None:
                    continue
                diag = Diagnostic(
                    rule.code,
                    rule.name,
                    severity,
                    message,
                    _display(abs_path),
                    d.line,
                    d.col,
                    d.line,
                    d.end_col,
                    key="directive",
                )
                for other in directives:
                    selector = covers(other, abs_path, d.line, rule.code, rule.name) if other is not d else None
                    if selector is not None and not last_pass:
                        other.used.add(selector)
                        diag.suppressed = {"kind": "inSource", "justification": other.reason or "plint: disable"}
                        break
                out.append(diag)
        return out

    def _directive_problem(self, d, rule, last_pass: bool) -> str | None:
        """What is wrong with a directive after the run, or None. The first pass leaves out
        selectors naming `rule` (PL004), the last pass looks at those alone."""
        if d.problem is not None:
            return None if last_pass else f"{d.problem}; it suppresses nothing"
        if d.noqa:
            return None if last_pass else noqa_hint(d)
        about_self = {s for s in d.selectors if s.upper() == rule.code or s.lower() == rule.name}
        judged = [s for s in d.selectors if (s in about_self) == last_pass]
        unknown = [s for s in judged if not any(specificity(r, s) == EXACT for r in self.rules.values())]
        unused = [s for s in judged if s not in d.used and s not in unknown]
        if not unknown and not unused:
            return None
        parts = []
        for s in unknown:
            near = self.suggest(s)
            parts.append(f"`{s}` is not a rule code or name" + (f" (did you mean `{near}`?)" if near else ""))
        if unused and len(unused) == len(d.selectors):
            parts.append(f"this directive suppresses nothing ({', '.join(unused)}); remove it")
        elif unused:
            parts.append(f"{', '.join(unused)} suppresses nothing here; remove it from the list")
        return "; ".join(parts)

    # -- baseline ------------------------------------------------------------------------------

    def _baseline_for(self, settings: Settings):
        """The baseline in force: --baseline, else the config's `baseline`, else .plint-baseline
        beside the config file or in the working directory (none with --isolated); None when none."""
        explicit = getattr(self.options, "baseline", None)
        if explicit:
            if not probe(Path(explicit).is_file):
                raise UsageError(f"--baseline: no such file: {explicit}")
            found = Path(explicit)
        elif getattr(self.options, "isolated", False):
            found = None  # --isolated reads no file it was not given
        else:
            candidates = [settings.root / (settings.baseline or BASELINE_NAME), Path.cwd() / BASELINE_NAME]
            found = next((c for c in candidates if probe(c.is_file)), None)
        key = Path(os.path.abspath(found)) if found is not None else None
        if key not in self._baselines:
            if key is None:
                self._baselines[key] = None
            else:
                from plint.checking.baseline import Baseline  # only when there is one: most runs have none

                self._baselines[key] = Baseline.read(key)
        return self._baselines[key]

    def _stale_entries(self, result, reported: set) -> list[Diagnostic]:
        """PL004 for the baseline entries about a checked file (or a file it sources) that
        matched nothing; each (baseline, file) once per run."""
        rule = self.rules.get("PL004")
        paths = [result.path] + [_display(p) for p in (result.reading.shell.files_read if result.reading.shell else ())]
        out = []
        for baseline in self._baselines.values():
            if baseline is None:
                continue
            for path in dict.fromkeys(paths):
                if (baseline.path, os.path.abspath(path)) in reported:
                    continue
                reported.add((baseline.path, os.path.abspath(path)))
                settings = self.settings_for(path)
                if rule is None or "PL004" not in self.selected(settings, path):
                    continue
                for p, code, key in baseline.stale(path):
                    out.append(
                        Diagnostic(
                            rule.code,
                            rule.name,
                            self.severity_override(rule, settings) or rule.severity,
                            f"baseline entry `{p} {code} {key}` ({_display(str(baseline.path))}) matches no finding; "
                            "remove it",
                            path,
                            key="baseline",
                        )
                    )
        return out

    # -- end of run ----------------------------------------------------------------------------

    def finish(self, results) -> None:
        """Report what only the whole run can tell: directives that suppressed nothing (a file
        sourced by several scripts counts its uses over all of them) and stale baseline entries."""
        by_path = {os.path.abspath(r.path): r for r in results}
        touched = set()
        for abs_path, directives in self._directives.items():
            if not directives:
                continue
            home = by_path.get(abs_path) or by_path.get(self._first_reader.get(abs_path, ""))
            if home is not None:
                home.diagnostics.extend(self._unused_directives(abs_path))
                touched.add(id(home))
        reported: set = set()
        for result in results:
            stale = self._stale_entries(result, reported)
            if stale:
                result.diagnostics.extend(stale)
                touched.add(id(result))
        for result in results:
            if id(result) in touched:
                result.diagnostics.sort(key=Diagnostic.sort_key)


def may_hold_directives(text: str) -> bool:
    """Whether a file may hold a `# plint:` directive or a `# noqa`: most files have neither, and then
    neither the suppression module is imported nor a tree walked."""
    return "plint" in text or "noqa" in text.lower()


def where_is(d, diag: Diagnostic) -> bool:
    """Whether a finding lies on the lines a directive covers, in its own file."""
    return os.path.abspath(diag.path) == d.path and d.first <= diag.line <= d.last


def noqa_hint(d) -> str | None:
    """PL004's words for a `# noqa` comment: plint does not read it, and the directive it reads instead.
    A bare `# noqa` that sits on no finding is another tool's business: nothing to say."""
    codes = list(d.selectors) or sorted(d.under)
    if not codes:
        return None
    written = f"# noqa: {', '.join(d.selectors)}" if d.selectors else "# noqa"
    return (
        f"`{written}` is flake8's and ruff's directive: plint does not read it, and it suppresses nothing; "
        f"plint's is `# plint: disable={','.join(codes)} -- reason`"
    )


def limit_report(diagnostics: list[Diagnostic], path: str) -> list[Diagnostic]:
    """The findings a report prints for one file (plint.bounds): the first MAX_FINDINGS_PER_RULE of each
    rule, MAX_FINDINGS_PER_FILE in all, and per rule one finding counting the rest, so a file with
    20,000 unknown flags prints kilobytes, not 30 MB of SARIF. `fix` and baselines see every finding."""

    if len(diagnostics) <= MAX_FINDINGS_PER_RULE:
        return diagnostics
    shown: dict[str, int] = {}
    hidden: dict[str, list[Diagnostic]] = {}
    out: list[Diagnostic] = []
    for d in diagnostics:
        if shown.get(d.code, 0) >= MAX_FINDINGS_PER_RULE or len(out) >= MAX_FINDINGS_PER_FILE:
            hidden.setdefault(d.code, []).append(d)
            continue
        shown[d.code] = shown.get(d.code, 0) + 1
        out.append(d)
    rank = {"error": 0, "warning": 1, "info": 2}
    for code, rest in hidden.items():
        # the count keeps the worst severity of what it hides, so the exit status does not change
        live = [d for d in rest if d.suppressed is None]
        worst = min(live or rest, key=lambda d: rank.get(d.severity, 3))
        note = Diagnostic.at(
            code,
            worst.name,
            worst.severity,
            f"{len(rest)} more {code} finding(s) in this file not shown (plint reports at most "
            f"{MAX_FINDINGS_PER_RULE} per rule and {MAX_FINDINGS_PER_FILE} per file)",
            None,
            path,
        )
        note.suppressed = None if live else worst.suppressed  # all of them suppressed: so is the count
        out.append(note)
    return out
