"""Fit the fixed costs of an iteration (Options.host_*_s, GPU.host_overhead_factor) on Megatron-LM's
functional tests' iteration times, and print the fit and its error.

The functional tests train small models (12 layers of hidden 512 on 8 GPUs) whose kernels take far less
than the host needs to dispatch them, so their iteration time is the fixed cost plint's GPU terms leave
out. The model (plint.cost.estimate.host_microbatch_s): one micro-batch on a pipeline stage takes
max(its GPU time, factor x (host_microbatch_s + layers x (host_layer_s + host_cp_layer_s [CP > 1]
+ MoE share x (host_moe_layer_s + grouped local experts x host_expert_s) [EP > 1]))), the pipeline bubble included; each iteration adds
factor x host_step_s. factor is 1 on DGX A100 and host_overhead_factor on DGX H100. The fit minimises the
sum of |log(predicted / measured)| (the median's loss) by Nelder-Mead over the seven numbers, from plint's
GPU-only estimate of each row (the same launch estimated with the fixed costs at zero). Only the functional
tests are used: the published runs' throughput (benchmarks/calibrate.py) is left to check the result.

    python benchmarks/fit_step_overhead.py --mirror DIR
"""

from __future__ import annotations

import argparse
import math
import signal
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import measured_memory  # noqa: E402  (the functional tests' rows and launches)

NAMES = (
    "host_step_s",
    "host_layer_s",
    "host_cp_layer_s",
    "host_moe_layer_s",
    "host_expert_s",
    "host_microbatch_s",
    "host_overhead_factor (DGX H100)",
)
ZERO_HOST = dict(
    host_step_s=0.0,
    host_layer_s=0.0,
    host_cp_layer_s=0.0,
    host_moe_layer_s=0.0,
    host_expert_s=0.0,
    host_microbatch_s=0.0,
)


def gpu_rows(mirror: Path) -> list[dict]:
    """Per functional-test row: the measured iteration time and plint's GPU-only terms."""
    from plint.cost import Options, estimate
    from plint.cost.host_dispatch import grouped_local_experts
    from plint.cost.layout_estimate import cost_input, layout_estimate
    from plint.cost.params import count_params
    from plint.cost.schedule import bubble_fraction
    from plint.reading.read import read_path

    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "launch.sh"
        for row, text in measured_memory.rows_of(mirror):
            if row.missed or not row.iteration_time_s:
                continue
            script.write_text(text)
            reading = read_path(script, gpu=row.gpu)
            full = layout_estimate(reading.layouts[0]) if reading.layouts else None
            if full is None or any("not modelled" in n for n in full.notes):
                continue
            inp = cost_input(reading.layouts[0])
            o = inp.options
            inp = inp.replace(options=Options(**{**{n: getattr(o, n) for n in o.__record_fields__}, **ZERO_HOST}))
            est = estimate(inp)
            c = count_params(inp)
            m, t = est.num_microbatches, est.time_s
            rows.append(
                {
                    "measured": row.iteration_time_s,
                    "gpu_step": est.step_time_s,
                    "hopper": row.gpu != "a100-80gb",
                    "gpu_microbatch": sum(t[k] for k in ("compute", "recompute", "tp", "cp", "ep", "pp")) / m,
                    "passes": m * (1 + bubble_fraction(inp.pp, m, inp.vpp, inp.options.pipeline_schedule)),
                    "layers": inp.num_layers / max(1, inp.pp),
                    "cp": inp.cp > 1,
                    "moe": (c.num_moe / inp.num_layers if inp.num_layers else 0.0) if inp.ep > 1 else 0.0,
                    "experts": grouped_local_experts(inp),
                }
            )
    return rows


def predicted(row: dict, x: list[float]) -> float:
    step, layer, cp, moe, expert, micro, hopper = (abs(v) for v in x)
    factor = hopper if row["hopper"] else 1.0
    moe_layer = row["moe"] * (moe + row["experts"] * expert)
    host = factor * (micro + row["layers"] * (layer + (cp if row["cp"] else 0.0) + moe_layer))
    return row["gpu_step"] + row["passes"] * max(0.0, host - row["gpu_microbatch"]) + factor * step


def loss(rows: list[dict], x: list[float]) -> float:
    return sum(abs(math.log(predicted(r, x) / r["measured"])) for r in rows)


def nelder_mead(f, x0: list[float], iterations: int = 4000) -> list[float]:
    """Minimise f from x0 (the standard reflection/expansion/contraction/shrink steps)."""
    n = len(x0)
    points = [x0[:]] + [[v * 1.5 if i == j else v for j, v in enumerate(x0)] for i in range(n)]
    values = [f(p) for p in points]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=values.__getitem__)
        points, values = [points[i] for i in order], [values[i] for i in order]
        centre = [sum(p[j] for p in points[:-1]) / n for j in range(n)]
        worst = points[-1]
        reflected = [c + (c - w) for c, w in zip(centre, worst)]
        fr = f(reflected)
        if fr < values[0]:
            expanded = [c + 2 * (c - w) for c, w in zip(centre, worst)]
            fe = f(expanded)
            points[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            points[-1], values[-1] = reflected, fr
        else:
            contracted = [c + 0.5 * (w - c) for c, w in zip(centre, worst)]
            fc = f(contracted)
            if fc < values[-1]:
                points[-1], values[-1] = contracted, fc
            else:
                best = points[0]
                points = [best] + [[b + 0.5 * (v - b) for v, b in zip(p, best)] for p in points[1:]]
                values = [values[0]] + [f(p) for p in points[1:]]
    return [abs(v) for v in points[min(range(n + 1), key=values.__getitem__)]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="an extracted Megatron-LM tree")
    ns = parser.parse_args(argv)
    rows = gpu_rows(ns.mirror)
    x = nelder_mead(lambda v: loss(rows, v), [0.03, 0.003, 0.001, 0.005, 0.0005, 0.001, 0.75])
    for name, value in zip(NAMES, x):
        print(f"{name:34} {value * 1e3:8.2f} ms" if name.endswith("_s") else f"{name:34} {value:8.3f}")
    for label, sel in (
        ("all", rows),
        ("DGX A100", [r for r in rows if not r["hopper"]]),
        ("DGX H100", [r for r in rows if r["hopper"]]),
    ):
        errors = [predicted(r, x) / r["measured"] - 1 for r in sel]
        before = [r["gpu_step"] / r["measured"] - 1 for r in sel]
        print(
            f"{label:9} {len(sel):4} rows: |error| median {100 * statistics.median(map(abs, errors)):5.1f}% "
            f"(signed {100 * statistics.median(errors):+5.1f}%, p90 "
            f"{100 * measured_memory.percentile([abs(e) for e in errors], 0.9):5.1f}%); without fixed costs "
            f"{100 * statistics.median(map(abs, before)):5.1f}%"
        )
    return 0


if __name__ == "__main__":
    # a table piped into `head` ends quietly, as a Unix tool does, not with a BrokenPipeError
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
