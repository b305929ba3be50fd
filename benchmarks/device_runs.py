"""plint's estimates against Megatron-LM training runs measured on one GPU (benchmarks/gpu/README.md).

Each run is a launch in benchmarks/gpu/launches/ that Megatron-LM's own pretrain_gpt.py ran on the device; its
peak and steady allocated memory (Megatron's report_memory after the second iteration: max allocated and
allocated) and its iteration time (the median of iterations 3 to 10, the first two warm up) are kept in
benchmarks/data/gpu/h200_megatron_runs.json. This prints, per run, plint's allocator peak and steady memory and
its step time against them, nothing fitted here.

    python benchmarks/device_runs.py                   # the table
    python benchmarks/device_runs.py --from-logs DIR   # rebuild the JSON from run_probes.sh's logs (probe.tar.gz)
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUNS = HERE / "data" / "gpu" / "h200_megatron_runs.json"
LAUNCHES = HERE / "gpu" / "launches"
MIB = float(1 << 20)
GIB = float(1 << 30)

ITERATION = re.compile(r"iteration\s+(\d+)/\s*\d+ \|.*?elapsed time per iteration \(ms\): ([0-9.]+)")
MEMORY = re.compile(r"\(after 2 iterations\) memory \(MB\) \| allocated: ([0-9.]+) \| max allocated: ([0-9.]+)")
PARAMETERS = re.compile(r"number of parameters on \(tensor, pipeline\) model parallel rank \(0, 0\): (\d+)")
ERROR = re.compile(r"^(?:\[rank0\]: )?(\w+Error: .*)$", re.MULTILINE)


def run_from_log(name: str, text: str) -> dict:
    """One run's record from its Megatron log: iteration times (ms), memory after two iterations (MiB), the
    parameter count it printed, or the error that stopped it."""
    record: dict = {"launch": f"benchmarks/gpu/launches/{name}.sh"}
    iterations = [float(ms) for _, ms in sorted((int(i), ms) for i, ms in ITERATION.findall(text))]
    memory = MEMORY.search(text)
    if not iterations or memory is None:
        errors = ERROR.findall(text)
        record["error"] = errors[-1] if errors else "no iteration logged"
        return record
    params = PARAMETERS.search(text)
    record.update(
        parameters=int(params.group(1)) if params else None,
        iteration_ms=iterations,
        allocated_mib=float(memory.group(1)),
        max_allocated_mib=float(memory.group(2)),
    )
    return record


def step_seconds(run: dict) -> float:
    """The run's iteration time: the median of iterations 3 on (the first two warm up)."""
    return statistics.median(run["iteration_ms"][2:]) / 1e3


def estimate(run: dict, gpu: str) -> tuple[float, float, float]:
    """plint's (allocator peak GiB, allocator steady GiB, step time s) for the run's launch."""
    from plint.cost.layout_estimate import layout_estimate
    from plint.reading.read import read_path

    reading = read_path(ROOT / run["launch"], gpu=gpu)
    est = layout_estimate(reading.layouts[0])
    if est is None:
        raise SystemExit(f"{run['launch']}: plint gives no estimate")
    mem = est.memory_gib
    return mem["allocator_peak"], mem["allocator_steady"], est.step_time_s


def table(data: dict) -> int:
    gpu = data["taken"]["gpu_catalog_name"]
    print(
        f"{'run':36} {'peak GiB':>9} {'plint':>7} {'error':>7} {'steady':>7} {'plint':>7} {'error':>7}"
        f" {'step s':>7} {'plint':>7} {'error':>7}"
    )
    peak_errors, steady_errors, step_errors = [], [], []
    for run in data["runs"]:
        name = Path(run["launch"]).stem
        if "error" in run:
            print(f"{name:36} not run: {run['error']}")
            continue
        peak, steady, step = estimate(run, gpu)
        measured_peak, measured_steady = run["max_allocated_mib"] * MIB / GIB, run["allocated_mib"] * MIB / GIB
        measured_step = step_seconds(run)
        errors = (peak / measured_peak - 1, steady / measured_steady - 1, step / measured_step - 1)
        peak_errors.append(errors[0])
        steady_errors.append(errors[1])
        step_errors.append(errors[2])
        print(
            f"{name:36} {measured_peak:9.2f} {peak:7.2f} {100 * errors[0]:+6.1f}% {measured_steady:7.2f} {steady:7.2f}"
            f" {100 * errors[1]:+6.1f}% {measured_step:7.3f} {step:7.3f} {100 * errors[2]:+6.1f}%"
        )
    for label, errors in (("peak", peak_errors), ("steady", steady_errors), ("step time", step_errors)):
        if errors:
            worst = max(errors, key=abs)
            print(
                f"{label}: mean |error| {100 * statistics.mean(abs(e) for e in errors):.1f}%, worst {100 * worst:+.1f}%"
            )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-logs", type=Path, help="run_probes.sh's log folder: rewrite the runs in the JSON")
    ns = parser.parse_args(argv)
    data = json.loads(RUNS.read_text())
    if ns.from_logs is not None:
        data["runs"] = [
            run_from_log(launch.stem, (ns.from_logs / f"{launch.stem}.log").read_text(errors="replace"))
            for launch in sorted(LAUNCHES.glob("*.sh"))
            if (ns.from_logs / f"{launch.stem}.log").is_file()
        ]
        RUNS.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {len(data['runs'])} runs to {RUNS.relative_to(ROOT)}")
        return 0
    return table(data)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
