"""Settings for one checked file (minimal: issue 3 adds discovery, validation and selection)."""

from __future__ import annotations

from plint.record import field, record
from typing import Any


@record
class Settings:
    assume: dict[str, str] = field(default_factory=dict)  # values for unresolved variables
    gpu: str | None = None
    thresholds: dict[str, Any] = field(default_factory=dict)
    releases: dict[str, str] = field(default_factory=dict)  # {"megatron": "0.16", "deepspeed": "0.19"}
