"""The rule registry: imports every family (importing one registers its rules in plint.rules.base)
and looks rules up. Families import plint.rules.base only, so the arrows point one way."""

from __future__ import annotations

from plint.rules import (  # noqa: F401
    arithmetic,  # PL1xx: what the trainer rejects at start-up
    batch_arithmetic,  # PL102, PL106, PL113: the batch sizes the trainer rejects
    cost,  # PL301, PL302, PL308, PL310, PL401, PL402: the rules on the cost model
    deepspeed_keys,  # PL504, PL505, PL507-PL510: DeepSpeed config keys and syntax
    efficiency,  # PL3xx
    environment,  # PL6xx
    host_memory,  # PL403: the host memory of ZeRO's CPU offload
    inputs,  # PL0xx: what plint could not read or know
    keys_and_flags,  # PL5xx: trainer flags
    topology,  # PL2xx
)
from plint.rules.base import RULES, Rule


def all_rules() -> dict[str, Rule]:
    """Every rule, by code."""
    return dict(sorted(RULES.items()))


def find_rule(code_or_name: str) -> Rule | None:
    rules = all_rules()
    key = code_or_name.strip()
    if key.upper() in rules:
        return rules[key.upper()]
    return next((r for r in rules.values() if r.name == key.lower()), None)
