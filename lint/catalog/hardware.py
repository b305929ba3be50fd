"""The hardware catalog (schemas/hardware.json): GPUs with their peak rates, memory and the size of
their NVLink domain, the spellings Slurm uses for them (`--gres=gpu:h100:8`, `--constraint=a100-80gb`),
and the source of every number."""

from __future__ import annotations

import re
from functools import lru_cache

from plint.record import field, record


@record(frozen=True)
class GPU:
    name: str
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    hbm_gib: float
    hbm_tbps: float
    nvlink_gbps: float  # vendor figure: both directions together, per GPU
    scale_up_domain: int
    nic_gbps: float  # Gb/s per GPU, one direction
    source: str
    gemm_efficiency: float = 0.8  # fraction of the dense peak a large, well-shaped GEMM sustains
    attention_efficiency: float = 0.5  # fraction fused attention sustains (fwd+bwd, causal FLOPs)
    # the fixed costs of an iteration (Options.host_*_s, fitted on DGX A100) on the host that drives this
    # GPU, as a share of a DGX A100's: DGX H100's functional tests' fixed costs fit at 0.751 of it
    host_overhead_factor: float = 1.0
    # the GPUs of the usual node built on this part (DGX/HGX: 8; a GB200 compute tray: 4); None where nodes of
    # many sizes are sold (PCIe cards). Only assumed, and said so, for a launch that uses every GPU of its node
    node_gpus: int | None = None
    # CUDA compute capability ("9.0": Hopper, "10.0": Blackwell B200/GB200); None where the catalog has none (AMD)
    compute_capability: str | None = None
    sources: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)  # (number, source)
    # the share of the single-GPU sustained rates above (gemm_efficiency, attention_efficiency) that a synchronous
    # job over several nodes delivers: each step waits for its slowest GPU, and parts held at a power cap differ
    # (fitted on the calibration set's multi-node runs, benchmarks/fit_scale_out_rate.py; 1.0 where not fitted)
    scale_out_rate_factor: float = 1.0

    def peak_tflops(self, precision: str | None = "bf16") -> float:
        """Dense peak TFLOP/s of the GEMMs of a training precision: the fp8 rate for fp8, the fp16 rate
        for fp16, else bf16; a GPU without bf16 units (V100) falls back to fp16."""
        if precision == "fp8" and self.fp8_tflops:
            return self.fp8_tflops
        if precision == "fp16" and self.fp16_tflops:
            return self.fp16_tflops
        return self.bf16_tflops or self.fp16_tflops or 0.0

    def source_of(self, number: str) -> str:
        return dict(self.sources).get(number, self.source)

    @property
    def rack_scale(self) -> bool:
        """Whether its NVLink domain joins several nodes (GB200 NVL72: 72 GPUs over trays of 4). The largest
        NVLink baseboard (HGX, DGX) holds 8 GPUs: a domain that large or smaller ends at its node."""
        return self.scale_up_domain > BASEBOARD_GPUS

    def nvlink_domain(self, gpus_per_node: int) -> int:
        """The GPUs one NVLink domain joins on nodes of `gpus_per_node`: the rack's for a rack-scale part,
        else at most the node's (a 4-GPU node of HGX-class parts joins 4, not the baseboard's 8)."""
        return self.scale_up_domain if self.rack_scale else min(self.scale_up_domain, gpus_per_node)


BASEBOARD_GPUS = 8


@lru_cache(maxsize=1)
def _catalog() -> dict:
    from plint.schemas import read_json

    return read_json("hardware.json")


def _key(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower()).removeprefix("nvidia-")


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    """Every spelling (canonical name and aliases, normalised) -> canonical name."""
    out: dict[str, str] = {}
    for canonical, spec in _catalog()["gpus"].items():
        out[_key(canonical)] = canonical
        for alias in spec["aliases"]:
            out.setdefault(_key(alias), canonical)
    return out


@lru_cache(maxsize=64)
def _build(canonical: str) -> GPU:
    spec = _catalog()["gpus"][canonical]
    return GPU(
        canonical,
        spec["bf16_tflops"],
        spec["fp16_tflops"],
        spec["fp8_tflops"],
        spec["hbm_gib"],
        spec["hbm_tbps"],
        spec["nvlink_gbps"],
        spec["scale_up_domain"],
        spec["nic_gbps"],
        spec["source"],
        spec.get("gemm_efficiency", 0.8),
        spec.get("attention_efficiency", 0.5),
        spec.get("host_overhead_factor", 1.0),
        spec.get("node_gpus"),
        spec.get("compute_capability"),
        tuple(sorted(spec.get("sources", {}).items())),
        scale_out_rate_factor=spec.get("scale_out_rate_factor", 1.0),
    )


def lookup_gpu(name: str | None) -> GPU | None:
    """A GPU by catalog name or any alias, case and separator insensitive."""
    if not name or not isinstance(name, str):
        return None
    canonical = _index().get(_key(name))
    return _build(canonical) if canonical is not None else None


def ambiguous_parts(name: str | None) -> list[str] | None:
    """The catalog GPUs a name sold in two memory sizes stands for ("a100": 40 and 80 GB), smaller
    first; None for a name that means one GPU. lookup_gpu gives the larger."""
    if not name or not isinstance(name, str):
        return None
    parts = _catalog().get("ambiguous", {}).get(_key(name))
    return parts if isinstance(parts, list) else None  # "_why" explains the table, it is no GPU name


def unknown_gpu(name: str) -> str | None:
    """Why `name` names no GPU of the catalog, with the nearest spelling it knows; None when it names one.
    One check for every way a GPU is named (--gpu of each command, [tool.plint] gpu), so a typo
    (`h100sxm`) is a usage error everywhere instead of an estimate that silently goes missing."""
    if lookup_gpu(name) is not None:
        return None
    from difflib import get_close_matches

    near = get_close_matches(_key(name), list(_index()), n=1, cutoff=0.6)
    hint = f"; did you mean {_index()[near[0]]!r}?" if near else ""
    return f"unknown GPU {name!r}{hint} (known: {', '.join(gpu_names())})"


def default_gpu() -> GPU:
    return lookup_gpu(_catalog()["default"])  # type: ignore[return-value]


def gpu_names() -> list[str]:
    return list(_catalog()["gpus"])


def link_latencies_s() -> tuple[float, float]:
    """Per-step latency (alpha) of a collective on NVLink and across the network, in seconds."""
    links = _catalog().get("links", {})
    return links.get("nvlink_alpha_us", 3.0) * 1e-6, links.get("network_alpha_us", 8.0) * 1e-6
