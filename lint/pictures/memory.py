"""Memory per pipeline stage, from the cost model: the first stage (embedding, most activations in
flight), the busiest middle rank where one can hold the peak (an uneven split: the estimate's
memory_gib.stages.middle) and the last (output layer and its logits) via plint.cost.memory.rank_memory, against
the estimate's usable HBM. Other middle ranks hold no more than those drawn (rank_load.candidate_ranks)."""

from __future__ import annotations

from dataclasses import dataclass

from plint.cost.memory import GIB, rank_memory
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
    """(the first, the busiest middle where the estimate names one, and the last stage's memory, usable GiB)."""
    c = count_params(inp)
    # everything outside the states and activations: the runtime reserve and the run-long buffers inside the
    # allocator (cuBLAS workspace, Megatron's attention buffer), the same for every stage
    other = est.memory_gib.get("other", 0.0) + est.memory_gib.get("workspace", 0.0)

    def bar(label: str, rank: int) -> StageMemory:
        parts = {k: v / GIB for k, v in rank_memory(inp, c, est.num_microbatches, rank).items()}
        return StageMemory(label, {**{k: parts[k] for k in PARTS[:-1]}, "other": other})

    if inp.pp <= 1:
        return [bar("every GPU", 0)], est.memory_gib["usable"]
    middle = (est.memory_gib.get("stages") or {}).get("middle")
    bars = [bar("stage 0 (first)", 0)]
    if middle:
        bars.append(bar(f"stage {middle['rank']} (busiest middle)", middle["rank"]))
    return [*bars, bar(f"stage {inp.pp - 1} (last)", inp.pp - 1)], est.memory_gib["usable"]
