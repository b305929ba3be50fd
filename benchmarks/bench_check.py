"""Time `plint check` on one fixture against a bare `python -c pass`, in the same run.

    python benchmarks/bench_check.py [FIXTURE] [--runs N]

Prints the minimum and median wall time of each and the ratio of the medians (the issue's budget:
at most 3x, more than 5x is a defect). Runs alternate so machine noise hits both alike.

Both run with bytecode caching on, as an installed plint has it (pip compiles a wheel's modules when it
installs them): a PYTHONDONTWRITEBYTECODE left in the environment would make every start compile all
~80 modules plint imports, and time the compiler, not plint (about 5x instead of 2x on a 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FIXTURE = ROOT / "fixtures" / "launches" / "megatron-arrays-llama3-8b" / "launch.sh"


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixture", nargs="?", default=str(DEFAULT_FIXTURE))
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    bare = [sys.executable, "-c", "pass"]
    # the console script users run (`python -m plint` would add runpy's import to the bill)
    script = Path(sys.executable).with_name("plint")
    plint = [
        str(script) if script.exists() else sys.executable,
        *([] if script.exists() else ["-m", "plint"]),
        "check",
        args.fixture,
    ]
    if subprocess.run(plint, capture_output=True, env=env).returncode not in (0, 1):
        sys.exit(f"plint check failed on {args.fixture}")
    for cmd in (bare, plint):  # warm the file cache (and, with bytecode, write it)
        timed(cmd, env)
    bare_t, plint_t = [], []
    for _ in range(args.runs):
        bare_t.append(timed(bare, env))
        plint_t.append(timed(plint, env))
    for label, ts in (("python -c pass", bare_t), ("plint check", plint_t)):
        print(f"{label:16s} min {min(ts) * 1000:7.1f} ms   median {statistics.median(ts) * 1000:7.1f} ms")
    ratio = statistics.median(plint_t) / statistics.median(bare_t)
    verdict = "ok" if ratio <= 3 else ("over target" if ratio <= 5 else "DEFECT (> 5x)")
    print(f"ratio (median): {ratio:.2f}x  [{verdict}; target <= 3x]")


if __name__ == "__main__":
    main()
