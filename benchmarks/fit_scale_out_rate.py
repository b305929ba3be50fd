"""Fit GPU.scale_out_rate_factor (schemas/hardware.json) on the calibration runs, with its leave-one-out error.

The coefficient is the share of a GPU's single-GPU sustained tensor-core rates (the catalog's gemm_efficiency
and attention_efficiency, from one GPU's microbenchmarks) that a synchronous job over several nodes delivers:
each step waits for the slowest of its GPUs, and parts held at a power cap differ from one another (the two
H100 SXMs this project has numbers for sustained 751 and 688 TFLOPS at 16384^3). It is fitted per GPU on
every calibration run on that GPU that spans nodes, dense and MoE, whatever the trainer, on the part the
entry describes (torchtitan's 96 GB, 500 W H100 is predicted as an H100 SXM but not fitted on): a grid from 0.80
to 1.00 by 0.01, the value that minimises their mean absolute error of tokens/s per GPU. On the GPU of SC21's
measured splits (A100 80GB; benchmarks/sc21_configurations.py) those points count too, each as one more
measurement of a job over several nodes: the runs alone sit at one split each, the points at many. H100 SXM (14
runs) and A100 80GB (9 runs, 45 points) are fitted; the other parts keep 1.0, and H800 and H200 take H100's value,
A100 40GB A100 80GB's (the same die, the same power cap).

Leave-one-out: each fitted run is predicted at the value fitted on the others; the script prints the mean of
those errors for the fitted runs and for issue 24's dense subset (benchmarks/calibrate.py), whose runs on
other GPUs keep their error.

    python benchmarks/fit_scale_out_rate.py [path/to/published_runs_calibration.yaml] [--gpu h100-sxm]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate  # noqa: E402  the calibration's own reading of the runs
import sc21_configurations  # noqa: E402  SC21's measured splits, read as the calibration reads its runs

GRID = [round(0.80 + i / 100, 2) for i in range(21)]


def errors_by_factor(path: Path, gpu: str) -> dict[float, dict[str, dict]]:
    """Per grid value, every calibration row (id -> row) with the GPU's factor at that value."""
    return {
        f: {r["id"]: r for r in calibrate.calibrate(path, gpu_fields={gpu: {"scale_out_rate_factor": f}})["rows"]}
        for f in GRID
    }


def point_errors_by_factor(gpu: str) -> dict[float, dict[str, float]]:
    """Per grid value, the error of every SC21 configuration point (id -> error) when `gpu` is the GPU they ran on;
    empty tables otherwise."""
    data, _ = sc21_configurations.load()
    if calibrate._gpu(data["gpu"]) != gpu:
        return {f: {} for f in GRID}
    return {
        f: {
            _point_id(r.point): r.error
            for r in sc21_configurations.predictions(gpu_fields={"scale_out_rate_factor": f})
        }
        for f in GRID
    }


def _point_id(p) -> str:
    return f"sc21 fig. {p.figure} tp {p.tp} pp {p.pp} batch {p.global_batch}" + ("" if p.scatter_gather else " whole")


def fitted_runs(rows: dict[str, dict], gpu: str) -> list[str]:
    """The runs the factor is fitted on: every run on the GPU that spans nodes, on the part the catalog entry
    describes (calibrate._catalog_part: not another variant of the die mapped to the entry)."""
    return sorted(i for i, r in rows.items() if r["gpu"] == gpu and r["multi_node"] and r["catalog_part"])


def best(table: dict[float, dict[str, float]], ids: list[str]) -> float:
    """The grid value with the least mean absolute error over `ids` (the smaller value on a tie: none seen)."""
    return min(GRID, key=lambda f: (sum(abs(table[f][i]) for i in ids), f))


def mape(errors: list[float]) -> float:
    return 100 * sum(abs(e) for e in errors) / len(errors)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=calibrate.DEFAULT_DATA)
    parser.add_argument("--gpu", default="h100-sxm")
    args = parser.parse_args(argv)
    table = errors_by_factor(args.path, args.gpu)
    runs = fitted_runs(table[1.0], args.gpu)
    points = point_errors_by_factor(args.gpu)
    errors = {f: {**{i: table[f][i]["error"] for i in runs}, **points[f]} for f in GRID}
    ids = [*runs, *points[1.0]]
    factor = best(errors, ids)
    own_fit = {i: best(errors, [j for j in ids if j != i]) for i in ids}
    held_out = {i: errors[own_fit[i]][i] for i in ids}
    print(f"{args.gpu}: scale_out_rate_factor {factor:.2f}, fitted on {len(runs)} runs and {len(points[1.0])} points")
    print(f"{'run or point':44} {'at 1.00':>8} {'fitted':>8} {'left out':>9} {'its fit':>8}")
    for i in ids:
        print(
            f"{i:44} {100 * errors[1.0][i]:+7.1f}% {100 * errors[factor][i]:+7.1f}% "
            f"{100 * held_out[i]:+8.1f}% {own_fit[i]:8.2f}"
        )
    for label, chosen in (("runs", runs), ("SC21 points", list(points[1.0])), ("runs and points", ids)):
        if chosen:
            print(
                f"MAPE of the fitted {label}: {mape([errors[1.0][i] for i in chosen]):.1f}% at 1.00, "
                f"{mape([errors[factor][i] for i in chosen]):.1f}% fitted, "
                f"{mape([held_out[i] for i in chosen]):.1f}% left out"
            )
    rows = table[factor]
    for label, chosen in (
        (
            "dense, trainers plint reads (issue 24's subset)",
            [i for i, r in rows.items() if r["read_by_plint"] and not r["moe"]],
        ),
        ("dense, all runs", [i for i, r in rows.items() if not r["moe"]]),
        ("MoE", [i for i, r in rows.items() if r["moe"]]),
    ):
        fitted = mape([rows[i]["error"] for i in chosen])
        left_out = mape([held_out.get(i, rows[i]["error"]) for i in chosen])
        print(f"MAPE {label} ({len(chosen)} runs): {fitted:.1f}% fitted, {left_out:.1f}% with each fitted run left out")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
