"""Imports every rule family so that their rules register (see base.all_rules)."""

from plint.rules import inputs  # noqa: F401  PL0xx
from plint.rules import arithmetic  # noqa: F401,E402  PL1xx
from plint.rules import topology  # noqa: F401,E402  PL2xx
from plint.rules import efficiency  # noqa: F401,E402  PL3xx
from plint.rules import keys_and_flags  # noqa: F401,E402  PL5xx
from plint.rules import environment  # noqa: F401,E402  PL6xx
from plint.rules import deepspeed_keys  # noqa: F401,E402  PL504, PL505, PL507
