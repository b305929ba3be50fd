"""Hold the step-time model's trade between tensor, pipeline and data parallelism against SC21's measurements.

SC21 sec. 5.4 (benchmarks/data/sc21_parallel_configurations.yaml) ran one model on the same 64 A100s under
different splits: Figure 13 a 162B model at (tp, pp) from (32, 2) to (2, 32), Figures 14 and 15 a 5.9B model at
(pp, dp) and (tp, dp) from (2, 32) to (32, 2); sec. 5.7's Figure 18 ran GPT-3 175B on 96 A100s (tp 8, pp 12,
interleaved) with the pipeline's sends split over the TP ranks and whole (Options.pp_scatter_gather). The
calibration runs each sit at one split; these points say what moving between splits costs, which is what
`plint plan` ranks. Every point is read as benchmarks/calibrate.py reads
an SC21 run (the same era settings, no per-point constants) and its measured teraFLOP/s per GPU converted to
tokens/s by the paper's FLOP definition, as calibrate.py does.

Prints each point's measured and predicted throughput, the step's shares of tensor-parallel communication and of
the host-dispatch floor (fixed per-iteration costs), per figure and batch size the split measured fastest and the
one plint predicts fastest, the mean absolute error per figure, the error on the speed ratio of every two splits of
a figure and batch (what `plint plan`'s ranking of them rests on) with the pairs it orders against the measurement,
and per split the time the model misses (measured
step - predicted step) as a line over the micro-batches a step runs: a part per step and a part per micro-batch
(docs/cost-model.md, "What Figure 15 measures that the model lacks"), with the host-dispatch floor and without it.

    python benchmarks/sc21_configurations.py
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import linear_regression

import yaml
from plint.catalog.hardware import lookup_gpu
from plint.cost import Estimate, Options, estimate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate import _gpu_with, published_tokens_per_s, to_input  # noqa: E402  read as the calibration reads SC21's runs

DATA = Path(__file__).resolve().parent / "data" / "sc21_parallel_configurations.yaml"
# the FLOP definition of SC21's throughput figures (eq. 3), in calibrate.published_tokens_per_s's words
SC21_FLOPS = "Megatron SC21 formula 96*B*s*l*h^2*(1+s/6h+V/16lh): counts the recompute forward"


@dataclass(frozen=True)
class Point:
    figure: int
    tp: int
    pp: int
    global_batch: int
    measured_tflops: float
    model: dict
    gpus: int = 64
    layers_per_virtual_stage: int | None = None
    scatter_gather: bool = True  # the pipeline's sends split over the TP ranks (Megatron-LM of 2021's default)

    @property
    def split(self) -> tuple[int, int, int, bool]:
        """What tells this point's configuration apart within its figure, batch aside."""
        return self.figure, self.tp, self.pp, self.scatter_gather


@dataclass(frozen=True)
class Prediction:
    point: Point
    measured: float  # tokens/s per GPU
    predicted: float
    estimate: Estimate
    host_step_s: float = 0.0  # the per-iteration host cost inside estimate.time_s["overhead"] (no micro-batch floor)

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured

    def share(self, part: str) -> float:
        return self.estimate.time_s[part] / self.estimate.step_time_s

    @property
    def measured_step_s(self) -> float:
        """The measured step: the same tokens per step at the measured rate."""
        return self.estimate.step_time_s * self.predicted / self.measured

    def missed_s(self, host_floor: bool = True) -> float:
        """Measured step - predicted step, seconds; without the host floor: less the part of the fixed per-iteration
        costs that is the micro-batches' host-dispatch floor (what is left is Options.host_step_s)."""
        predicted = self.estimate.step_time_s
        if not host_floor:
            predicted -= self.estimate.time_s["overhead"] - self.host_step_s
        return self.measured_step_s - predicted


def load(path: Path = DATA) -> tuple[dict, list[Point]]:
    data = yaml.safe_load(path.read_text())
    points = [
        Point(
            fig["figure"],
            tp,
            pp,
            batch,
            tflops,
            fig["model"],
            fig.get("gpus", data["gpus"]),
            fig.get("layers_per_virtual_stage"),
            fig.get("scatter_gather", True),
        )
        for fig in data["figures"]
        for tp, pp, batch, tflops in fig["points"]
    ]
    return data, points


def as_run(data: dict, point: Point) -> dict:
    """The point as a calibration entry of SC21's era: Megatron-LM of 2021, fp16, full recompute, no SP."""
    h = point.model["hidden_size"]
    return {
        "id": f"sc21_fig{point.figure}_tp{point.tp}_pp{point.pp}_b{point.global_batch}",
        "year": 2021,
        "framework": "Megatron-LM (2021)",
        "precision": "fp16 mixed precision",
        "source": data["source"],
        "model": {
            **point.model,
            "family": "GPT-3 style dense decoder (learned pos emb, 4h GeLU MLP)",
            "ffn_hidden_size": 4 * h,
            "num_kv_heads": point.model["num_attention_heads"],
            "vocab_size": data["vocab_size"],
            "seq_length": data["seq_length"],
        },
        "cluster": {
            "gpu": data["gpu"],
            "total_gpus": point.gpus,
            "gpus_per_node": data["gpus_per_node"],
            "inter_node_gbps_per_gpu": data["inter_node_gbps_per_gpu"],
        },
        "layout": {
            "tp": point.tp,
            "pp": point.pp,
            "dp": point.gpus // (point.tp * point.pp),
            "sequence_parallel": False,
            "recompute": "full",
            "micro_batch_size": data["micro_batch"],
            "global_batch_seqs": point.global_batch,
        },
        "result": {"tflops_per_gpu": point.measured_tflops, "tflops_definition": SC21_FLOPS},
    }


def predict(data: dict, point: Point, gpu_fields: dict | None = None) -> Prediction:
    """The point's prediction; `gpu_fields` replaces those catalog fields of its GPU (a fit, as calibrate's)."""
    run = as_run(data, point)
    inp, why = to_input(run)
    if inp is None:
        raise ValueError(f"{run['id']}: {why}")
    options = {n: getattr(inp.options, n) for n in inp.options.__record_fields__}
    per_chunk = point.layers_per_virtual_stage
    vpp = inp.num_layers // (point.pp * per_chunk) if per_chunk else None
    inp = inp.replace(vpp=vpp, options=Options(**{**options, "pp_scatter_gather": point.scatter_gather}))
    measured, _ = published_tokens_per_s(run, inp)
    gpu = _gpu_with(inp.gpu, gpu_fields) or lookup_gpu(inp.gpu)
    est = estimate(inp, gpu)
    host_step = gpu.host_overhead_factor * inp.options.host_step_s  # as estimate._step_times adds it
    return Prediction(point, measured, est.tokens_per_s_per_gpu, est, host_step)


def predictions(path: Path = DATA, gpu_fields: dict | None = None) -> list[Prediction]:
    data, points = load(path)
    return [predict(data, p, gpu_fields) for p in points]


@dataclass(frozen=True)
class MissedLine:
    """A split's missed time (measured - predicted step) over its batch sizes as per_step + per_microbatch x m."""

    point: Point  # one of the split's points (its batch aside)
    per_step_s: float
    per_microbatch_s: float
    points: int


def missed_line(samples: list[tuple[int, float]]) -> tuple[float, float]:
    """(per step, per micro-batch) of the least-squares line through (micro-batches, missed seconds) samples."""
    slope, intercept = linear_regression([float(m) for m, _ in samples], [t for _, t in samples])
    return intercept, slope


def missed_lines(rows: list[Prediction], host_floor: bool = True) -> list[MissedLine]:
    """Per split measured at two batch sizes or more, the line its missed time draws over the micro-batches."""
    lines = []
    for split in sorted({r.point.split for r in rows}):
        group = [r for r in rows if r.point.split == split]
        if len({r.estimate.num_microbatches for r in group}) < 2:
            continue
        samples = [(r.estimate.num_microbatches, r.missed_s(host_floor)) for r in group]
        per_step, per_microbatch = missed_line(samples)
        lines.append(MissedLine(group[0].point, per_step, per_microbatch, len(group)))
    return lines


def _split(p: Point) -> str:
    dp = p.gpus // (p.tp * p.pp)
    return f"tp {p.tp:2d} pp {p.pp:2d} dp {dp:2d}" + ("" if p.scatter_gather else " whole sends")


@dataclass(frozen=True)
class Pair:
    """Two splits of one figure and batch: what plan's ranking of them rests on."""

    a: Prediction
    b: Prediction

    @property
    def predicted_ratio(self) -> float:
        return self.a.predicted / self.b.predicted

    @property
    def measured_ratio(self) -> float:
        return self.a.measured / self.b.measured

    @property
    def ratio_error(self) -> float:
        """How far the predicted speed ratio of the two is from the measured one (0.05: 5% off)."""
        return abs(self.predicted_ratio / self.measured_ratio - 1)

    @property
    def reversed(self) -> bool:
        """plint predicts one faster and the paper measured the other faster."""
        return (self.predicted_ratio - 1) * (self.measured_ratio - 1) < 0


def pairs(rows: list[Prediction]) -> list[Pair]:
    groups: dict[tuple[int, int], list[Prediction]] = {}
    for r in rows:
        groups.setdefault((r.point.figure, r.point.global_batch), []).append(r)
    return [Pair(a, b) for group in groups.values() for i, a in enumerate(group) for b in group[i + 1 :]]


def print_pairs(rows: list[Prediction]) -> None:
    """The model's error on the ratio between two splits (what a ranking of them rests on), and how often it orders
    them against the measurement, overall and among the pairs it predicts within a margin of each other."""
    found = pairs(rows)
    errors = sorted(p.ratio_error for p in found)
    print(f"\npairs of splits of one figure and batch: {len(found)}; the predicted ratio of their speeds is off by")
    print(f"  {100 * errors[len(errors) // 2]:.1f}% at the median, {100 * sum(errors) / len(errors):.1f}% on average")
    for margin in (0.02, 0.05, 0.10, 0.15, None):
        close = [p for p in found if margin is None or abs(p.predicted_ratio - 1) <= margin]
        what = "all pairs" if margin is None else f"predicted within {100 * margin:.0f}%"
        print(f"  {what}: {len(close)}, ordered against the measurement: {sum(p.reversed for p in close)}")
    for p in found:
        if p.reversed:
            print(
                f"  reversed: figure {p.a.point.figure} batch {p.a.point.global_batch}, {_split(p.a.point)} against"
                f" {_split(p.b.point)}: predicted x{p.predicted_ratio:.2f}, measured x{p.measured_ratio:.2f}"
            )


def main() -> int:
    rows = predictions()
    print("fig  batch  split                            measured  predicted   error   tp comm  host floor")
    for r in rows:
        p = r.point
        print(
            f"{p.figure:3d}  {p.global_batch:5d}  {_split(p):31s}  {p.measured_tflops:6.0f} TF"
            f"  {p.measured_tflops * (1 + r.error):6.1f} TF  {100 * r.error:+6.1f}%"
            f"  {100 * r.share('tp'):6.1f}%  {100 * r.share('overhead'):6.1f}%"
        )
    print("\nfastest split, measured / predicted:")
    for fig, batch in sorted({(r.point.figure, r.point.global_batch) for r in rows}):
        group = [r for r in rows if (r.point.figure, r.point.global_batch) == (fig, batch)]
        best_measured = max(group, key=lambda r: r.measured)
        best_predicted = max(group, key=lambda r: r.predicted)
        print(f"  figure {fig} batch {batch:3d}: {_split(best_measured.point)} / {_split(best_predicted.point)}")
    print()
    for fig in sorted({r.point.figure for r in rows}):
        group = [r for r in rows if r.point.figure == fig]
        print(f"MAPE figure {fig}: {100 * sum(abs(r.error) for r in group) / len(group):.1f}%")
    print_pairs(rows)
    print("\nmissed time (measured - predicted step) = per step + per micro-batch x m, with / without the host floor:")
    without = {x.point.split: x for x in missed_lines(rows, host_floor=False)}
    for line in missed_lines(rows):
        bare = without[line.point.split]
        print(
            f"  figure {line.point.figure} {_split(line.point)}:"
            f" {line.per_step_s:+6.3f} s + {1000 * line.per_microbatch_s:+6.1f} ms x m"
            f"   /  {bare.per_step_s:+6.3f} s + {1000 * bare.per_microbatch_s:+6.1f} ms x m"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
