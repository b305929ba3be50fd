"""The hardware catalog (schemas/hardware.json): GPUs with their peak rates, memory and the size of
their NVLink domain, and the spellings Slurm uses for them (`--gres=gpu:h100:8`, `--constraint=a100-80gb`)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from plint.record import record


@record(frozen=True)
class GPU:
    name: str
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    hbm_gib: float
    hbm_tbps: float
    nvlink_gbps: float
    scale_up_domain: int
    nic_gbps: float
    source: str


@lru_cache(maxsize=1)
def _catalog() -> dict:
    import plint.schemas

    return json.loads((Path(plint.schemas.__file__).parent / "hardware.json").read_text())


def _key(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower()).removeprefix("nvidia-")


def lookup_gpu(name: str | None) -> GPU | None:
    """A GPU by catalog name or any alias, case and separator insensitive."""
    if not name:
        return None
    wanted = _key(name)
    for canonical, spec in _catalog()["gpus"].items():
        if wanted == canonical or wanted in (_key(a) for a in spec["aliases"]):
            return GPU(canonical, spec["bf16_tflops"], spec["fp16_tflops"], spec["fp8_tflops"], spec["hbm_gib"],
                       spec["hbm_tbps"], spec["nvlink_gbps"], spec["scale_up_domain"], spec["nic_gbps"],
                       spec["source"])
    return None


def default_gpu() -> GPU:
    return lookup_gpu(_catalog()["default"])  # type: ignore[return-value]


def gpu_names() -> list[str]:
    return list(_catalog()["gpus"])
