"""Time plint's analytic rank layout, and (with --megatron) megatron-core building the same groups.

    python benchmarks/bench_ranks.py [--worlds 64,512,4096] [--runs N] [--megatron] [--ranks K]

Analytic: every group of every kind (plint.dryrun.ranks.KINDS) for each world, best and median of N runs.
--megatron (needs the dryrun extra): megatron-core's initialize_model_parallel on torch's fake process
groups, initialised as one rank at a time as plint's dry run does; it times the first rank visit and
extrapolates to the whole world, then (with --ranks K) times the dry run visiting K ranks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def layout_for(world: int) -> dict:
    """A realistic MoE layout for the world size: tp 8 inside a node, pp 4, cp 2, ep 8 with etp 1."""
    tp, pp, cp, ep = 8, min(4, world // 16) or 1, 2, 8
    return {"world_size": world, "tp": tp, "pp": pp, "cp": cp, "ep": ep, "etp": 1, "gpus_per_node": 8}


def bench_analytic(worlds: list[int], runs: int) -> None:
    from plint.dryrun.ranks import RankLayout

    for world in worlds:
        sizes = layout_for(world)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            RankLayout(world, sizes["tp"], sizes["pp"], sizes["cp"], sizes["ep"], sizes["etp"]).all_groups()
            times.append(time.perf_counter() - start)
        print(
            f"analytic  world {world:>6}: best {min(times) * 1e3:8.2f} ms, "
            f"median {statistics.median(times) * 1e3:8.2f} ms ({runs} runs, all kinds)"
        )


def bench_megatron(worlds: list[int], ranks: int | None) -> None:
    from plint.dryrun.groups import _megatron_core, _megatron_groups, dry_run

    start = time.perf_counter()
    mc = _megatron_core()
    if isinstance(mc, str):
        print(f"megatron-core: {mc}")
        return
    print(f"megatron-core {mc['version']}: import {time.perf_counter() - start:.2f} s")
    for world in worlds:
        sizes = layout_for(world)
        start = time.perf_counter()
        _megatron_groups(mc, world, sizes, "tp-cp-ep-dp-pp", None, max_ranks=1)
        one = time.perf_counter() - start
        print(f"megatron  world {world:>6}: one rank {one:6.3f} s, every rank ~{one * world:8.1f} s (extrapolated)")
        if ranks is not None:
            start = time.perf_counter()
            out = dry_run(sizes, max_ranks=min(ranks, world))
            print(
                f"          dry run visiting {out['coverage']['ranks']} ranks: {time.perf_counter() - start:.2f} s, "
                f"ok={out['ok']}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", default="64,512,4096")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--megatron", action="store_true")
    parser.add_argument("--ranks", type=int, default=None)
    args = parser.parse_args()
    worlds = [int(w) for w in args.worlds.split(",")]
    bench_analytic(worlds, args.runs)
    if args.megatron:
        bench_megatron(worlds, args.ranks)


if __name__ == "__main__":
    main()
