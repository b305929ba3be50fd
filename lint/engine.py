"""Run the rules over what was read: selection, severities, suppression (grown by issue 3)."""

from __future__ import annotations

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
        rules = all_rules()
        contexts = [RuleContext(reading, layout, settings) for layout in reading.layouts] or \
            [RuleContext(reading, None, settings)]
        for ctx in contexts:
            for rule in rules.values():
                if rule.needs_layout and ctx.layout is None:
                    continue
                for finding in rule.check(ctx):
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
        return out

    def finish(self, results) -> None:
        """Whole-run work after every file (unused directives, baseline bookkeeping)."""
