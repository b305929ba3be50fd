"""Imports every rule family so that their rules register (see base.all_rules)."""

from plint.rules import (  # noqa: F401
    arithmetic,  # PL1xx: what the trainer rejects at start-up
    cost,  # PL301, PL302, PL308, PL310, PL401, PL402: the rules on the cost model
    deepspeed_keys,  # PL504, PL505, PL507: DeepSpeed config keys
    efficiency,  # PL3xx
    environment,  # PL6xx
    inputs,  # PL0xx: what plint could not read or know
    keys_and_flags,  # PL5xx: trainer flags
    topology,  # PL2xx
)
