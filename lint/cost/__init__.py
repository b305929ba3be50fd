"""The cost model: parameters, memory, FLOPs, communication, pipeline bubble, step time and MFU.

Pure functions of plain numbers (`ModelInput`) and the hardware catalog; nothing here reads files or
knows about rules. `estimate(ModelInput(...))` or `estimate(ModelInput.from_layout(layout))`.
"""

from plint.cost.estimate import Estimate, estimate
from plint.cost.flops import flops_per_step, flops_per_token
from plint.cost.model_input import ModelInput, Options
from plint.cost.params import count_params, padded_vocab
from plint.cost.schedule import bubble_fraction, layers_in_flight

__all__ = [
    "Estimate",
    "ModelInput",
    "Options",
    "bubble_fraction",
    "count_params",
    "estimate",
    "flops_per_step",
    "flops_per_token",
    "layers_in_flight",
    "padded_vocab",
]
