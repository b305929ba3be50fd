"""Run the rules over what was read: selection, severities, suppression (grown by issue 3)."""

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

    def settings_for(self, path: Path) -> Settings:
        return Settings()

    def diagnose(self, reading: FileReading, settings: Settings) -> list[Diagnostic]:
        from plint.rules.base import RuleContext, all_rules

        out: list[Diagnostic] = []
        seen: set[tuple] = set()
        rules = self.selected(all_rules())
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
                    d = Diagnostic.at(rule.code, rule.name, finding.severity or rule.severity,
                                      finding.message, span, reading.path)
                    d.key = finding.key
                    out.append(d)
        return self.suppress(reading, out)

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
        if rule is not None and self._selected_code("PL004"):
            for d in directives:
                if not d.used:
                    diagnostics.append(Diagnostic(
                        "PL004", rule.name, rule.severity,
                        f"this directive suppresses nothing ({', '.join(d.selectors)}); remove it",
                        d.path, d.line, d.col, d.line, d.end_col))
        return diagnostics

    def _selected_code(self, code: str) -> bool:
        from plint.rules.base import all_rules

        return code in self.selected(all_rules())

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

    def selected(self, rules: dict) -> dict:
        """--select / --ignore by code, name or code prefix (PL1 selects a family)."""
        def matches(rule, selector: str) -> bool:
            return rule.name == selector.lower() or rule.code.startswith(selector.upper())

        for selector in (self.options.select or []) + (self.options.ignore or []):
            if not any(matches(r, selector) for r in rules.values()):
                from difflib import get_close_matches

                near = get_close_matches(selector, [*rules, *(r.name for r in rules.values())], n=1)
                raise ValueError(f"unknown rule selector {selector!r}"
                                 + (f"; did you mean {near[0]!r}?" if near else ""))
        chosen = {c: r for c, r in rules.items()
                  if self.options.select is None or any(matches(r, s) for s in self.options.select)}
        return {c: r for c, r in chosen.items() if not any(matches(r, s) for s in self.options.ignore or [])}

    def finish(self, results) -> None:
        """Whole-run work after every file (unused directives, baseline bookkeeping)."""
