"""Run the rules over what was read: configuration, selection, severities, suppression."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from plint.config import Settings
from plint.diagnostics import Diagnostic
from plint.read import FileReading


class Engine:
    def __init__(self, options) -> None:
        self.options = options
        self.fail_on: str | None = None
        self._settings: dict[Path | None, Settings] = {}
        self._baseline: set | None = None
        self._baseline_path: Path | None = None
        self._baseline_used: set = set()

    def settings_for(self, path: Path) -> Settings:
        """The configuration in force for a file: --config, else the nearest one (none with --isolated)."""
        from plint import config

        if getattr(self.options, "isolated", False):
            where = None
        elif getattr(self.options, "config_file", None) is not None:
            where = Path(self.options.config_file)
        else:
            where = config.discover(path)
        if where not in self._settings:
            self._settings[where] = config.load(where)
            if self.fail_on is None:
                self.fail_on = self._settings[where].fail_on
        return self._settings[where]

    def diagnose(self, reading: FileReading, settings: Settings) -> list[Diagnostic]:
        from plint.rules.base import RuleContext, all_rules

        out: list[Diagnostic] = []
        seen: set[tuple] = set()
        rules = self.selected(all_rules(), settings, reading.path)
        contexts = [RuleContext(reading, layout, settings) for layout in reading.layouts] or \
            [RuleContext(reading, None, settings)]
        for ctx in contexts:
            for rule in rules.values():
                if rule.needs_layout and ctx.layout is None:
                    continue
                for finding in self._findings(rule, ctx):
                    span = finding.span
                    ident = (rule.code, finding.message, span.path if span else None,
                             span.start if span else None)
                    if ident in seen:
                        continue
                    seen.add(ident)
                    severity = settings.severity.get(rule.code) or settings.severity.get(rule.name) \
                        or finding.severity or rule.severity
                    if severity == "off":
                        continue
                    d = Diagnostic.at(rule.code, rule.name, severity, finding.message, span, reading.path)
                    d.key = finding.key
                    out.append(d)
        return self.apply_baseline(self.suppress(reading, out), settings)

    def apply_baseline(self, diagnostics: list[Diagnostic], settings: Settings) -> list[Diagnostic]:
        from plint.baseline import DEFAULT_NAME, entry, read_baseline

        if self._baseline is None:
            explicit = getattr(self.options, "baseline", None)
            candidates = [Path(explicit)] if explicit else [
                settings.root / (settings.baseline or DEFAULT_NAME), Path.cwd() / DEFAULT_NAME]
            found = next((c for c in candidates if c.is_file()), None)
            if explicit and found is None:
                raise ValueError(f"--baseline: no such file: {explicit}")
            self._baseline_path = found
            self._baseline = read_baseline(found) if found is not None else set()
        if not self._baseline:
            return diagnostics
        for d in diagnostics:
            e = entry(d)
            if d.suppressed is None and e in self._baseline:
                d.suppressed = {"kind": "external", "justification": "baseline"}
                self._baseline_used.add(e)
        return diagnostics

    def suppress(self, reading: FileReading, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        """Apply `# plint: disable` directives of the file and of the files it sources; report unused ones."""
        from plint.rules.base import all_rules
        from plint.suppress import covers, read_directives

        texts = []
        if reading.source is not None and reading.kind == "shell":
            texts.append((reading.path, reading.source.text))
        if reading.shell is not None:
            from plint.source import SourceFile

            for path in dict.fromkeys(reading.shell.files_read):
                try:
                    src = SourceFile.read(path)
                except OSError:
                    continue
                display = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
                texts.append((display, src.text))
        directives = [d for path, text in texts if "plint:" in text for d in read_directives(path, text)]
        if not directives:
            return diagnostics
        for diag in diagnostics:
            for d in directives:
                if covers(d, diag.path, diag.line, diag.code, diag.name):
                    d.used = True
                    diag.suppressed = {"kind": "inSource", "justification": d.reason or "plint: disable"}
                    break
        rule = all_rules().get("PL004")
        if rule is not None and "PL004" in self.selected(all_rules(), self._settings.get(None)):
            for d in directives:
                if not d.used:
                    diagnostics.append(Diagnostic(
                        "PL004", rule.name, rule.severity,
                        f"this directive suppresses nothing ({', '.join(d.selectors)}); remove it",
                        d.path, d.line, d.col, d.line, d.end_col))
        return diagnostics

    @staticmethod
    def _findings(rule, ctx) -> list:
        """A rule's findings; a bug in one rule is reported on stderr instead of ending the run
        with a traceback (PLINT_STRICT=1, set by the tests, lets it raise)."""
        try:
            return list(rule.check(ctx))
        except Exception as exc:  # noqa: BLE001
            if os.environ.get("PLINT_STRICT") == "1":
                raise
            print(f"plint: internal error in rule {rule.code} on {ctx.reading.path}: {exc!r} "
                  "(the rule is skipped; please report it)", file=sys.stderr)
            return []

    def selected(self, rules: dict, settings: Settings | None = None, path: str | None = None) -> dict:
        """Rules in force: --select replaces the config's select, --extend-select and the config's
        extend-select add, --ignore, the config's ignore and its per-file-ignores remove. A selector
        is a code, a name, or a code prefix (PL1 selects a family)."""
        import fnmatch

        settings = settings or Settings()

        def matches(rule, selector: str) -> bool:
            return rule.name == selector.lower() or rule.code.startswith(selector.upper())

        select = self.options.select if self.options.select is not None else settings.select
        extend = list(getattr(self.options, "extend_select", None) or []) + settings.extend_select
        ignore = list(self.options.ignore or []) + settings.ignore
        if path is not None and settings.per_file_ignores:
            rel = os.path.relpath(os.path.abspath(path), settings.root)
            for pattern, codes in settings.per_file_ignores.items():
                if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(os.path.basename(path), pattern):
                    ignore += codes
        for selector in (select or []) + extend + ignore:
            if not any(matches(r, selector) for r in rules.values()):
                from difflib import get_close_matches

                near = get_close_matches(selector, [*rules, *(r.name for r in rules.values())], n=1)
                raise ValueError(f"unknown rule selector {selector!r}"
                                 + (f"; did you mean {near[0]!r}?" if near else ""))
        chosen = {c: r for c, r in rules.items()
                  if select is None or any(matches(r, s) for s in select + extend)}
        return {c: r for c, r in chosen.items() if not any(matches(r, s) for s in ignore)}

    def finish(self, results) -> None:
        """Baseline entries for the checked files that matched nothing are reported as PL004."""
        if not self._baseline:
            return
        checked = {r.path.replace("\\", "/"): r for r in results}
        for path, code, key in sorted(self._baseline - self._baseline_used):
            result = checked.get(path)
            if result is not None:
                result.diagnostics.append(Diagnostic(
                    "PL004", "unused-directive", "info",
                    f"baseline entry `{path} {code} {key}` ({self._baseline_path}) matches no finding; remove it",
                    path))
