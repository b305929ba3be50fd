"""Issue 14's measurement: launch files kept inside checkouts of Megatron forks, checked with the fork's own
parser beside them. Counts PL501/PL506 findings (by severity) over every shell file of each checkout, then
plants a misspelt flag in each launch that passes Megatron flags and counts how many plint still catches.

    python benchmarks/fork_flags.py /path/to/bigcode-checkout /path/to/epfllm-checkout ...
    python benchmarks/fork_flags.py --python /other/venv/bin/python ...   # another plint, for a before/after

A checkout is a folder holding megatron/arguments.py (a `git archive` of the fork at a commit); it needs a
`.git` entry (a folder will do) so plint takes it as the work tree. Nothing is written inside it but the
planted copies, which are removed again.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

SHELL = ("*.sh", "*.slurm", "*.sbatch", "*.bash")
PLANT = re.compile(r"--num([-_])layers\b")  # a flag every Megatron launch passes (epfLLM spells it with `_`)


def check(python: str, path: Path, cwd: Path) -> dict | None:
    proc = subprocess.run(
        [python, "-m", "plint", "check", "--format", "json", str(path)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    try:
        return json.loads(proc.stdout)["files"][0]
    except (ValueError, KeyError, IndexError):
        return None


def measure(python: str, checkout: Path) -> dict:
    counts: Counter = Counter()
    files = sorted({f for pattern in SHELL for f in checkout.rglob(pattern) if ".git" not in f.parts})
    planted = caught = 0
    for f in files:
        result = check(python, f, checkout)
        if result is None:
            counts["crash"] += 1
            continue
        for d in result["diagnostics"]:
            if d["code"] in ("PL501", "PL506"):
                counts[f"{d['code']} {d['severity']}"] += 1
        text = f.read_text(errors="replace")
        if result["layout"] and result["layout"].get("trainer", "").startswith("megatron") and PLANT.search(text):
            copy = f.with_name(f".plint-planted-{f.name}")
            copy.write_text(PLANT.sub(r"--num\1layer", text, count=1))
            try:
                planted += 1
                found = check(python, copy, checkout) or {"diagnostics": []}
                caught += any(
                    d["code"] == "PL501" and re.search(r"--num[-_]layer\b(?!s)", d["message"])
                    for d in found["diagnostics"]
                )
            finally:
                copy.unlink()
    return {"files": len(files), "counts": dict(counts), "planted": planted, "caught": caught}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--python", default=sys.executable, help="the Python whose plint is measured")
    args = ap.parse_args()
    for checkout in args.checkouts:
        m = measure(args.python, checkout)
        counts = ", ".join(f"{k}: {v}" for k, v in sorted(m["counts"].items())) or "none"
        print(
            f"{checkout.name}: {m['files']} shell files; PL501/PL506 {counts}; "
            f"planted typo caught in {m['caught']} of {m['planted']}"
        )


if __name__ == "__main__":
    main()
