"""How far the memory and step-time estimates are from what was measured: memory per feature a launch uses,
the step by model family.

`MEASURED_PEAK_ERROR` is the median of |allocator_peak / mem-max-allocated-bytes - 1| over the rows of
Megatron-LM's functional tests that use each feature, as `benchmarks/measured_memory.py --band-table`
prints it (the rows and their measured bytes: benchmarks/memory/manifest.json). It is calibration data, not
a per-run constant: one figure per feature group, the same for every launch. A launch's band is the largest
figure of the groups it is in (the whole set's where it is in none, or where a group has too few rows).
The median, not a high percentile: the tail is mostly rows whose container did what the launch cannot say
(an older Transformer Engine falling back to unfused attention), and a band that wide would warn on
launches that run (docs/cost-model.md gives both figures per group).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.cost.model_input import ModelInput

# Megatron-LM d98e8a64 (functional tests, golden values dev/lts x dgx_a100/dgx_h100), covered rows only
MEASURED_PEAK_ERROR = {
    "all": 0.021,
    "cp": 0.022,
    "distributed optimizer": 0.018,
    "ep/moe": 0.031,
    "fp16": 0.013,
    "fp8": 0.006,
    "fsdp": 0.028,
    "mla/mtp": 0.013,
    "pp": 0.017,
    "recompute": 0.024,
    "tp": 0.025,
    "unfused attention": 0.013,
    "vpp": 0.007,
}
# groups with fewer covered rows than this fall back to the whole set's figure
MIN_ROWS = 10
ROWS_PER_GROUP = {
    "all": 363,
    "cp": 49,
    "distributed optimizer": 107,
    "ep/moe": 65,
    "fp16": 17,
    "fp8": 3,
    "fsdp": 6,
    "mla/mtp": 5,
    "pp": 213,
    "recompute": 5,
    "tp": 209,
    "unfused attention": 181,
    "vpp": 47,
}


def memory_features(inp: ModelInput) -> list[str]:
    """The feature groups of the harness a launch is in (benchmarks/measured_memory.py features())."""
    found = []
    checks = (
        ("tp", inp.tp > 1),
        ("pp", inp.pp > 1),
        ("vpp", bool(inp.vpp and inp.vpp > 1)),
        ("cp", inp.cp > 1),
        ("ep/moe", bool(inp.num_experts)),
        ("distributed optimizer", inp.distributed_optimizer),
        ("recompute", inp.recompute is not None),
        ("fp8", inp.precision == "fp8"),
        ("fp16", inp.precision == "fp16"),
        ("fsdp", inp.megatron_fsdp),
        ("unfused attention", not inp.options.flash_attention),
        ("mla/mtp", inp.multi_latent_attention or inp.mtp_num_layers > 0),
    )
    for name, used in checks:
        if used:
            found.append(name)
    return found


def error_band(inp: ModelInput) -> float:
    """The relative error (0.04 for +-4%) the memory estimate of this launch carries."""
    measured = [
        MEASURED_PEAK_ERROR[f]
        for f in memory_features(inp)
        if f in MEASURED_PEAK_ERROR and ROWS_PER_GROUP.get(f, 0) >= MIN_ROWS
    ]
    return max(measured) if measured else MEASURED_PEAK_ERROR["all"]


def memory_band(memory_gib: dict) -> tuple[float, float]:
    """(low, high) GiB of an estimate's total within its measured error band (Estimate.memory_gib: the band is
    a share of the allocator peak; the runtime reserve outside the allocator carries none). The memory rules
    and the planner judge "fits" by it."""
    spread = memory_gib.get("error_band", 0.0) * memory_gib.get("allocator_peak", memory_gib["total"])
    return memory_gib["total"] - spread, memory_gib["total"] + spread


# Mean absolute error of the predicted tokens/s per GPU (so of the step time, for the same global batch) over the
# calibration runs of the trainers plint reads, as `python benchmarks/calibrate.py` prints it ("MAPE dense,
# trainers plint reads" and "MAPE MoE"; benchmarks/data/published_runs_calibration.yaml). A test recomputes both
# figures, so a change to the cost model that moves them has to move these too.
MEASURED_STEP_ERROR = {"dense": 0.074, "moe": 0.152}


def step_error(inp: ModelInput) -> float:
    """The relative error (0.074 for +-7.4%) the step-time estimate of this launch carries."""
    return MEASURED_STEP_ERROR["moe" if inp.num_experts else "dense"]
