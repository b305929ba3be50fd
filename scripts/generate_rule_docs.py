"""Write docs/rules/<CODE>.md for every rule and docs/rules/README.md, and the rule fixtures
fixtures/rules/<CODE>/{bad,good}/ (the records' examples as files), from the rule records.

    python scripts/generate_rule_docs.py [DOCS_DIR [FIXTURES_DIR]]

tests/test_rule_docs.py regenerates into a temporary folder and fails when committed files are stale,
and runs every fixture: bad must fire its rule, good must not.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "rules"
DEFAULT_FIXTURES = ROOT / "fixtures" / "rules"


def generate(out: Path) -> list[Path]:
    from plint.report.rule_page import page
    from plint.rules.registry import all_rules

    out.mkdir(parents=True, exist_ok=True)
    written = []
    rows = [
        "# plint rules",
        "",
        "Generated from the rule records by scripts/generate_rule_docs.py.",
        "",
        "| code | name | family | severity | fix | summary |",
        "|---|---|---|---|---|---|",
    ]
    for rule in all_rules().values():
        path = out / f"{rule.code}.md"
        path.write_text(page(rule, markdown=True))
        written.append(path)
        summary = rule.summary.replace("|", "\\|")  # a table cell
        rows.append(
            f"| [{rule.code}]({rule.code}.md) | {rule.name} | {rule.family} | {rule.severity} "
            f"| {rule.fix.availability} | {summary} |"
        )
    index = out / "README.md"
    index.write_text("\n".join(rows) + "\n")
    written.append(index)
    for stale in set(out.glob("PL*.md")) - set(written):  # a rule that no longer exists
        stale.unlink()
    return written


def generate_fixtures(out: Path) -> list[Path]:
    from plint.rules.registry import all_rules

    written = []
    for rule in all_rules().values():
        for kind, example in (("bad", rule.docs.bad), ("good", rule.docs.good)):
            folder = out / rule.code / kind
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in example.files.items():
                (folder / name).write_text(text)
                written.append(folder / name)
    return written


if __name__ == "__main__":
    for p in generate(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT):
        print(p)
    for p in generate_fixtures(Path(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_FIXTURES):
        print(p)
