"""The baseline: findings accepted as they are, one `path code key` line each and no line numbers (as
ansible-lint's ignore file), so edits elsewhere in a script do not invalidate it. Baselined findings
stay in JSON and SARIF marked suppressed; entries that match nothing any more are reported (PL004)."""

from __future__ import annotations

import re
from pathlib import Path

DEFAULT_NAME = ".plint-baseline"
HEADER = "# plint baseline: `path code key` per accepted finding (plint check --write-baseline FILE)\n"


def key_of(diagnostic) -> str:
    return diagnostic.key or re.sub(r"\W+", "-", re.sub(r"\d+", "#", diagnostic.message)).strip("-")[:80]


def entry(diagnostic) -> tuple[str, str, str]:
    return diagnostic.path.replace("\\", "/"), diagnostic.code, key_of(diagnostic)


def write_baseline(path: Path, results) -> int:
    entries = sorted({entry(d) for r in results for d in r.diagnostics if d.suppressed is None})
    Path(path).write_text(HEADER + "".join(f"{p} {c} {k}\n" for p, c, k in entries))
    return len(entries)


def read_baseline(path: Path) -> set[tuple[str, str, str]]:
    out = set()
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(" ", 2)
        if len(parts) != 3:
            raise ValueError(f"{path}: bad baseline line {line!r}: expected `path code key`")
        out.add((parts[0], parts[1], parts[2]))
    return out
