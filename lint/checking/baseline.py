"""The baseline: findings accepted as they are, one `path code key` line each and no line numbers (as
ansible-lint's ignore file), so edits elsewhere in a script do not invalidate it. Paths are relative
to the baseline file's folder, so the file works from any working directory. Baselined findings
stay in JSON and SARIF marked suppressed; entries that match nothing any more are reported (PL004)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from plint.checking.config import UsageError
from plint.record import field, record

DEFAULT_NAME = ".plint-baseline"
HEADER = (
    "# plint baseline: one accepted finding per line, `path code key` (no line numbers; paths relative\n"
    "# to this file). Written by `plint check --write-baseline FILE`; delete lines as findings get fixed.\n"
)
UNBASELINED = ("PL004",)
# a key may hold a lone surrogate (a JSON key's "\\ud800" escape, a file name that is not UTF-8): written
# and read back as the same character
SURROGATES = "surrogatepass"  # a stale directive or entry is to be deleted, not accepted


def key_of(diagnostic) -> str:
    """What a finding is about: its layout key, else its message with the numbers taken out (so a
    changed value still matches) as one token."""
    if diagnostic.key:
        return re.sub(r"\s+", "-", diagnostic.key)
    return re.sub(r"\W+", "-", re.sub(r"\d+(\.\d+)?", "#", diagnostic.message)).strip("-")[:80] or "-"


def _relative(path: str, folder: Path) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(folder)).replace(os.sep, "/")


def entry(diagnostic, folder: Path) -> tuple[str, str, str]:
    return _relative(diagnostic.path, folder), diagnostic.code, key_of(diagnostic)


def write_baseline(path: Path, results) -> int:
    """Write every finding not suppressed in the source (those a baseline accepted included); the count."""
    folder = Path(path).parent
    entries = sorted(
        {
            entry(d, folder)
            for r in results
            for d in r.diagnostics
            if d.code not in UNBASELINED and (d.suppressed is None or d.suppressed.get("kind") == "external")
        }
    )
    Path(path).write_text(
        HEADER + "".join(f"{p} {c} {k}\n" for p, c, k in entries), encoding="utf-8", errors=SURROGATES
    )
    return len(entries)


def read_baseline(path: Path) -> set[tuple[str, str, str]]:
    out = set()
    try:
        text = Path(path).read_text(encoding="utf-8", errors=SURROGATES)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the baseline: {exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 3:
            raise UsageError(f"{path}:{number}: bad baseline line {line!r}: expected `path code key`")
        out.add((parts[0], parts[1], parts[2]))
    return out


@record
class Baseline:
    path: Path
    entries: set
    used: set = field(default_factory=set)

    @classmethod
    def read(cls, path: Path) -> Baseline:
        return cls(Path(path), read_baseline(path))

    def accept(self, diagnostic) -> bool:
        """Mark a finding the baseline lists as suppressed (kind external)."""
        if diagnostic.suppressed is not None or diagnostic.code in UNBASELINED:
            return False
        e = entry(diagnostic, self.path.parent)
        if e not in self.entries:
            return False
        self.used.add(e)
        diagnostic.suppressed = {"kind": "external", "justification": "baseline"}
        return True

    def stale(self, checked_path: str) -> list[tuple[str, str, str]]:
        """Entries for a checked file that matched no finding of this run."""
        rel = _relative(checked_path, self.path.parent)
        return sorted(e for e in self.entries - self.used if e[0] == rel)
