"""Memory per pipeline stage, from the cost model: the first stage (embedding, most activations in
flight) and the last (output layer and its logits) via plint.cost.memory.stage_memory, against the
estimate's usable HBM. Middle stages hold the plain layers and fewer activations than the first."""

from __future__ import annotations

from dataclasses import dataclass

from plint.cost.memory import GIB, stage_memory
from plint.cost.params import count_params

PARTS = ("weights", "grads", "optimizer", "activations", "other")


@dataclass(frozen=True)
class StageMemory:
    label: str  # "stage 0", "stage 3 (last)", "every stage"
    gib: dict  # PARTS -> GiB

    @property
    def total(self) -> float:
        return sum(self.gib.values())


def stage_bars(inp, est) -> tuple[list[StageMemory], float]:
    """(the first and last stage's memory, usable GiB)."""
    c = count_params(inp)
    # everything outside the states and activations: the runtime reserve and the run-long buffers inside the
    # allocator (cuBLAS workspace, Megatron's attention buffer), the same for every stage
    other = est.memory_gib.get("other", 0.0) + est.memory_gib.get("workspace", 0.0)

    def bar(label: str, last: bool) -> StageMemory:
        parts = {k: v / GIB for k, v in stage_memory(inp, c, est.num_microbatches, last=last).items()}
        return StageMemory(label, {**{k: parts[k] for k in PARTS[:-1]}, "other": other})

    if inp.pp <= 1:
        return [bar("every GPU", False)], est.memory_gib["usable"]
    return [bar("stage 0 (first)", False), bar(f"stage {inp.pp - 1} (last)", True)], est.memory_gib["usable"]
