"""The DeepSpeed release a config is judged against (issue 14, point 5): the release the configuration
names (`deepspeed = "0.14"`), else the one the checked tree pins (reading.sources.requirement_pins: `deepspeed==X` in
a requirements file or pyproject.toml), else the DeepSpeed installed beside plint (its version from the package
metadata: nothing is imported), else the release plint's shipped schema was built from, assumed.

Keys DeepSpeed removed or renamed after a release are no error for that release
(shared/reference/deepspeed.md §0: the removed top-level blocks are rejected after v0.19.5; aio.thread_count
was renamed in v0.16.4)."""

from __future__ import annotations

import os
import re
import sys
from plint.record import record

REMOVED_BLOCKS_REJECTED_FROM = (0, 19, 6)
RENAMED_IN = {"aio.thread_count": (0, 16, 4)}
# The first release whose parser of a section rejects a key it does not know: the section's pydantic model (a
# DeepSpeedConfigModel, extra="forbid" in deepspeed/runtime/config_utils.py since v0.7.0) first in that release's tree
# (deepspeedai/DeepSpeed tags: `class DeepSpeedZeroConfig(DeepSpeedConfigModel)` in v0.7.0, the monitors' in v0.8.1,
# HybridEngineConfig in v0.9.0, CompileConfig in v0.13.2, CometConfig in v0.14.3, TPTrainingConfig in v0.16.4,
# DeepSpeedBF16Config and DeepSpeedFP16Config in v0.17.1, commit e440506 "Enable pydantic configuration for mixed
# precision"; comms_logger's own CommsConfig forbade extras from v0.7.0). Before it, the section was read with
# dict.get, which passes over an unknown key in silence.
STRICT_FROM_THE_START = (0, 7, 0)  # the first release with pydantic sections: strict since then is strict everywhere
STRICT_SINCE = {
    "zero_optimization": (0, 7, 0),
    "comms_logger": (0, 7, 0),
    "tensorboard": (0, 8, 1),
    "wandb": (0, 8, 1),
    "csv_monitor": (0, 8, 1),
    "hybrid_engine": (0, 9, 0),
    "compile": (0, 13, 2),
    "comet": (0, 14, 3),
    "tensor_parallel": (0, 16, 4),
    "bf16": (0, 17, 1),
    "bfloat16": (0, 17, 1),
    "fp16": (0, 17, 1),
}


@record(frozen=True)
class DeepSpeedInForce:
    version: tuple[int, ...]
    # "DeepSpeed 0.19.8 as configured" | "... as pinned in requirements.txt" | "... installed" | "..., assumed"
    label: str
    assumed: bool

    def at_least(self, release: tuple[int, ...]) -> bool:
        return self.version >= release


def _parse(text: str) -> tuple[int, ...] | None:
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    return tuple(int(x) for x in m.groups(default="0")) if m else None


def deepspeed_in_force(configured: str | None, shipped: str, pinned: tuple[str, str] | None = None) -> DeepSpeedInForce:
    """`pinned`: (version, the file of the checked tree that pins it)."""
    if configured and (version_configured := _parse(configured)):
        return DeepSpeedInForce(version_configured, f"DeepSpeed {configured} as configured", False)
    if pinned and (version_pinned := _parse(pinned[0])):
        return DeepSpeedInForce(version_pinned, f"DeepSpeed {pinned[0]} as pinned in {pinned[1]}", False)
    installed = None
    if _may_be_installed("deepspeed"):
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("deepspeed")
        except PackageNotFoundError:
            pass
    if installed and (version_installed := _parse(installed)):
        return DeepSpeedInForce(version_installed, f"DeepSpeed {installed} (installed)", False)
    return DeepSpeedInForce(_parse(shipped) or (0,), f"DeepSpeed {shipped}, assumed", True)


def _may_be_installed(name: str) -> bool:
    """False only when no folder on sys.path holds a NAME-*.dist-info or .egg-info and no other finder
    lists distributions: then importlib.metadata (about 10 ms to import on `plint check`) would find
    none either. Anything else (a zip on sys.path, an unreadable folder) asks importlib.metadata."""
    if any(
        hasattr(finder, "find_distributions") and getattr(finder, "__name__", "") != "PathFinder"
        for finder in sys.meta_path
    ):
        return True
    prefix = name.lower().replace("-", "_")
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            continue
        except OSError:  # a zip file, a file, an unreadable folder
            return True
        for item in names:
            low = item.lower().replace("-", "_")
            if low.startswith(prefix) and low.endswith((".dist_info", ".egg_info", ".egg_link", ".egg")):
                return True
    return False
