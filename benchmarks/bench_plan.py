"""How long `plint plan` searches: Llama-3 405B on 16,384 H100s at sequence 8192 (the issue's case),
and smaller clusters, timed in-process after import.

    python benchmarks/bench_plan.py [repeats]
"""

from __future__ import annotations

import sys
import time

from plint.planning.plan import base_input, model_from_preset, plan

CASES = (
    ("llama3-405b", 2048, 8192, 2048),
    ("llama3-70b", 128, 8192, 1024),
    ("mixtral-8x7b", 64, 4096, 2048),
    ("deepseek-v3", 256, 4096, 8192),
)


def main(repeats: int = 3) -> None:
    for preset, nodes, seq, batch in CASES:
        base = base_input(model_from_preset(preset), nodes, 8, "h100-sxm", seq, batch)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            result = plan(base, preset, top=10)
            times.append(time.perf_counter() - start)
        print(
            f"{preset:13} {nodes * 8:6,} GPUs  {min(times):6.3f} s  ({result.considered:,} layouts estimated, "
            f"best {result.candidates[0].tokens:,.0f} tokens/s per GPU)"
            if result.candidates
            else f"{preset:13} {nodes * 8:6,} GPUs  {min(times):6.3f} s  (nothing fits)"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
