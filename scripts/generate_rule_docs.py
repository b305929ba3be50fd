"""Write docs/rules/<CODE>.md for every rule, and docs/rules/README.md, from the rule records.

    python scripts/generate_rule_docs.py [OUT_DIR]

tests/test_rule_docs.py regenerates into a temporary folder and fails when the committed pages are stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "rules"


def generate(out: Path) -> list[Path]:
    from plint.commands_docs import page
    from plint.rules.base import all_rules

    out.mkdir(parents=True, exist_ok=True)
    written = []
    rows = ["# plint rules", "", "Generated from the rule records by scripts/generate_rule_docs.py.", "",
            "| code | name | severity | fix | summary |", "|---|---|---|---|---|"]
    for rule in all_rules().values():
        path = out / f"{rule.code}.md"
        path.write_text(page(rule, markdown=True))
        written.append(path)
        rows.append(f"| [{rule.code}]({rule.code}.md) | {rule.name} | {rule.severity} | {rule.fix_availability} "
                    f"| {rule.summary} |")
    index = out / "README.md"
    index.write_text("\n".join(rows) + "\n")
    written.append(index)
    return written


if __name__ == "__main__":
    for p in generate(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT):
        print(p)
