"""Time `plint show` on the 16,384-GPU launch (tests/pictures/launches/cluster-16k): the whole command
in a fresh process (start-up, reading, cost model, pictures), for each output format.

    python benchmarks/bench_show.py [--runs N] [--path LAUNCH]

Prints best and median wall seconds per format; the issue asks for under one second.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests" / "pictures" / "launches" / "cluster-16k" / "launch.sh"


def time_show(path: Path, fmt: str, runs: int) -> list[float]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            cmd = [sys.executable, "-m", "plint", "show", str(path), "--format", fmt]
            if fmt in ("html", "svg"):
                cmd += ["-o", str(Path(tmp) / f"show.{fmt}")]
            start = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--path", type=Path, default=DEFAULT)
    args = parser.parse_args()
    for fmt in ("text", "html", "svg", "markdown"):
        times = time_show(args.path, fmt, args.runs)
        print(
            f"plint show --format {fmt:<8} best {min(times):.3f} s  median {statistics.median(times):.3f} s "
            f"({args.runs} runs)"
        )


if __name__ == "__main__":
    main()
