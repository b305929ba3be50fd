"""Concrete alternatives to a launch's layout, for advice that must name a better one (PL202, PL203, PL301).

An alternative keeps everything the launch's authors chose for reasons plint cannot see (the GPUs, the
global batch, the model, sharding, recompute, precision) and changes only the sizes one rule speaks of:
the pipeline (its size, virtual stages per rank and micro-batch) for the bubble, the context-parallel size
for a ring that crosses nodes, the expert-parallel size for an all-to-all that crosses nodes. Each one
passes the start-up checks its sizes meet in Megatron-LM (megatron/training/arguments.py validate_args and
parallel_state): layers divide over pp x vpp (PL103, PL108), or, where they do not, the alternative carries the
uneven split Megatron accepts (TransformerConfig.__post_init__) and is costed on it, the global batch over
micro-batch x dp (PL102),
the interleaved schedule has at least pp micro-batches per step (a multiple of pp before core 0.10; PL108,
plint.catalog.interleaving), the experts and their GPUs divide
over ep (PL105), the sequence over 2 x cp (PL109).

An alternative is advice only when it fits (the caller's memory test), the cost model predicts its step
shorter by more than the share it cannot tell apart, and at least half of the time saved is the part of the
step the rule is about (else the advice is about something else).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from plint.catalog.interleaving import Interleaving
from plint.catalog.interleaving import interleaving as interleaving_demands
from plint.cost.layout_estimate import SPLIT_FIELDS, split_fields
from plint.planning.plan import (
    MICRO_BATCHES,
    a2a_overlap_starts,
    divisors,
    pipeline_partitions,
    powers_of_two_dividing,
)

if TYPE_CHECKING:
    from plint.cost import Estimate, ModelInput

Alternative = tuple["ModelInput", "Estimate"]


def _global_batch(inp: ModelInput) -> int:
    return inp.global_batch or inp.micro_batch * inp.data_parallel()


# the flags each way of splitting the layers unevenly needs, as the release in force must know them: uneven
# first/last stages interleave only with --num-virtual-stages-per-pipeline-rank (megatron/training/arguments.py,
# validate_args: "please use --num-virtual-stages-per-pipeline-rank ... when enable uneven pipeline parallelism")
FIRST_LAST = "--decoder-first-pipeline-num-layers"
STAGES_PER_RANK = "--num-virtual-stages-per-pipeline-rank"
LAYOUT = "--pipeline-model-parallel-layout"


def pipeline_layouts(
    inp: ModelInput,
    interleaving: bool = True,
    has_flag: Callable[[str], bool] = lambda flag: False,
    demands: Interleaving | None = None,
) -> Iterator[ModelInput]:
    """Every (pp, vpp, micro-batch) of the launch's GPUs, batch and other sizes that Megatron accepts,
    that still pipelines (pp >= 2: dropping the pipeline is PL302's advice) with a micro-batch no larger than
    the launch's (a larger one lengthens every fill and drain: a gain from it comes from larger GEMMs, PL310's
    advice, not from the bubble). `interleaving`: whether the trainer has virtual pipeline stages
    (Megatron-LM; the Megatron-DeepSpeed forks do not). Each carries the split of the layers it runs with
    (pipeline_splits): where the layers do not divide over its pp, an uneven one made by flags the release
    knows (`has_flag`), costed rank by rank. `demands`: what the release's interleaved schedule accepts (PL108;
    the newest release's by default)."""
    world, layers = inp.world_size, inp.num_layers
    group = max(1, inp.tp) * max(1, inp.cp)
    global_batch = _global_batch(inp)
    if world % group:
        return
    # PL108: interleaving needs pp >= 2, or 3 without p2p overlap (parallel_state, schedules.py), and enough
    # micro-batches (a multiple of pp before core 0.10)
    demands = demands or interleaving_demands(overlap_p2p=inp.options.overlap_p2p_comm is not False)
    for pp in divisors(world // group):
        if pp < 2 or pp > layers:
            continue
        dp = world // (group * pp)
        if inp.ep > 1 and (group * dp) % inp.ep:  # PL105: ep divides one stage's GPUs
            continue
        for vpp, split in pipeline_splits(inp, pp, interleaving and pp >= demands.min_pp, has_flag):
            for micro in sorted({*MICRO_BATCHES, inp.micro_batch}):
                if micro > inp.micro_batch or global_batch % (micro * dp):
                    continue
                if vpp and not demands.accepts(pp, global_batch // (micro * dp)):
                    continue
                yield inp.replace(pp=pp, vpp=vpp, dp=dp, micro_batch=micro, **split)


def pipeline_splits(
    inp: ModelInput, pp: int, interleaving: bool, has_flag: Callable[[str], bool]
) -> Iterator[tuple[int | None, dict]]:
    """(vpp, the ModelInput fields of its split) for each way of laying the launch's layers over `pp` ranks
    that Megatron accepts: at the launch's own pp its own uneven split as written (then only the micro-batch
    is another), and the planner's splits (plint.planning.plan.pipeline_partitions: even where the layers
    divide, else uneven first/last stages or a balanced --pipeline-model-parallel-layout; the checks of
    megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__, 'Uneven PP' and 'PP
    layout', made by plint.cost.pipeline_stages), each costed on its own partition, never on the launch's."""
    if pp == inp.pp and inp.pipeline_split is not None:
        yield inp.vpp, {}
    for vpp, _, _, layout, part in pipeline_partitions(inp.num_layers, pp):
        if (vpp and not interleaving) or (part is not None and (part.how, vpp) == (inp.pipeline_split, inp.vpp)):
            continue  # no interleaving, or the launch's own split, yielded above
        if part is None:  # an even split: none of the launch's uneven flags
            yield vpp, dict.fromkeys(SPLIT_FIELDS)
            continue
        needs = [LAYOUT] if layout else [FIRST_LAST] + ([STAGES_PER_RANK] if vpp else [])
        if not all(has_flag(flag) for flag in needs):
            continue
        yield vpp, split_fields(part)


def split_flags(new: ModelInput) -> str:
    """The flags that make `new`'s split of the layers, as a user writes them: its uneven flags (with the
    virtual stages per rank that uneven first/last stages need to interleave), or '' for an even split."""
    how = new.pipeline_split or ""
    if how.startswith(LAYOUT):  # the layout string quoted: its '(', '|' and '*' are shell syntax
        return f"{LAYOUT} {shlex.quote(how[len(LAYOUT) :].strip())}"
    if how and (new.vpp or 1) > 1:
        return f"{how} {STAGES_PER_RANK} {new.vpp}"
    return how


def describe_pipeline(new: ModelInput, old: ModelInput) -> str:
    """The sizes that differ, as `pp 8, vpp 4, micro-batch 1`, and the split of the layers where it is another
    (`pp 4, with --decoder-first-pipeline-num-layers 11 --decoder-last-pipeline-num-layers 11`)."""
    parts = [f"pp {new.pp}"] if new.pp != old.pp else []
    if (new.vpp or 1) != (old.vpp or 1):
        parts.append(f"vpp {new.vpp or 1}")
    if new.micro_batch != old.micro_batch:
        parts.append(f"micro-batch {new.micro_batch}")
    split = split_change(new, old)
    return ", ".join(parts) + (f", {split}" if split else "")


def split_change(new: ModelInput, old: ModelInput) -> str:
    """How the flags that split the layers over the pipeline change from `old` to `new` ('' when they do not):
    `with --decoder-first-pipeline-num-layers 11 --decoder-last-pipeline-num-layers 11 (in place of ...)`, or
    `evenly split (without ...)` where the launch's uneven flags must go (Megatron applies them at any pp:
    megatron/core/transformer/transformer_block.py get_num_layers_to_build; at pp 1 the one rank would build
    the last stage's count only)."""
    written, wanted = split_flags(old), split_flags(new)
    if written == wanted:
        return ""
    if not wanted:
        return f"evenly split (without {written})"
    return f"with {wanted}" + (f" in place of {written}" if written else "")


def context_layouts(inp: ModelInput, domain: int | None = None, smallest: int = 2) -> Iterator[ModelInput]:
    """Smaller context-parallel sizes, down to `smallest` (2 for PL202: dropping the axis is PL302's advice;
    1 for PL307) and, with a `domain`, only those whose tp x cp group fits in the NVLink domain; the GPUs
    freed go to data parallelism (PL109: the sequence splits into 2 x cp chunks; PL102: the batch still
    divides)."""
    tp = max(1, inp.tp)
    for cp in powers_of_two_dividing(inp.cp):
        if cp < smallest or cp >= inp.cp or inp.seq_length % (2 * cp):
            continue
        if domain is not None and (tp * cp > domain or domain % (tp * cp)):
            continue
        dp = inp.world_size // (tp * max(1, inp.pp) * cp)
        if _global_batch(inp) % (inp.micro_batch * dp):
            continue
        yield inp.replace(cp=cp, dp=dp)


def expert_layouts(inp: ModelInput, domain: int) -> Iterator[ModelInput]:
    """Smaller expert-parallel sizes (of at least 2: dropping the axis is PL302's advice) whose etp x ep
    group fits in the NVLink domain (PL105: they divide the experts and one stage's GPUs); the experts per
    GPU grow, the dense layout stays."""
    etp = inp.etp or max(1, inp.tp)
    stage = inp.world_size // max(1, inp.pp)
    for ep in divisors(inp.num_experts or 1):
        if ep < 2 or ep >= inp.ep or etp * ep > domain or domain % (etp * ep) or stage % (etp * ep):
            continue
        yield inp.replace(ep=ep)


def faster(
    inp: ModelInput,
    est: Estimate,
    candidates: Iterable[ModelInput],
    part: str | None,
    fits: Callable[[Estimate], bool],
    min_gain: float,
    estimate: Callable[[ModelInput], Estimate | None],
) -> Alternative | None:
    """The fastest candidate that fits, whose step is predicted shorter than the launch's by more than
    `min_gain` (a share of the step) and which owes at least half of the time saved to `part` of the step
    (a key of Estimate.time_s: "bubble", "cp", "ep"; None: wherever it comes from); None when there is none."""
    best: Alternative | None = None
    spent = est.time_s.get(part, 0.0) if part else 0.0
    for candidate in candidates:
        if not a2a_overlap_starts(candidate):
            continue  # the launch's expert all-to-all overlap stays: a layout Megatron then refuses is no advice
        variant = estimate(candidate)
        if variant is None or not fits(variant):
            continue
        saved = est.step_time_s - variant.step_time_s
        if saved <= 0 or (part and spent - variant.time_s.get(part, 0.0) < saved / 2):
            continue
        if best is None or variant.step_time_s < best[1].step_time_s:
            best = (candidate, variant)
    if best is None or best[1].step_time_s > (1 - min_gain) * est.step_time_s:
        return None
    return best


def faster_pipeline(
    inp: ModelInput,
    est: Estimate,
    fits: Callable[[Estimate], bool],
    min_gain: float,
    estimate: Callable[[ModelInput], Estimate | None],
    interleaving: bool = True,
    has_flag: Callable[[str], bool] = lambda flag: False,
    demands: Interleaving | None = None,
) -> Alternative | None:
    """The pipeline layout of the launch (another pp, vpp or smaller micro-batch) that PL301 names."""
    current = (inp.pp, inp.vpp or 1, inp.micro_batch)
    candidates = (
        c
        for c in pipeline_layouts(inp, interleaving, has_flag, demands)
        if (c.pp, c.vpp or 1, c.micro_batch) != current
    )
    return faster(inp, est, candidates, "bubble", fits, min_gain, estimate)


def without_axis(inp: ModelInput, axis: str) -> ModelInput | None:
    """The same launch with one axis set to 1 and its GPUs given to data parallelism; None when the
    result would be invalid (the global batch no longer divides)."""
    size = getattr(inp, axis)
    dp = inp.data_parallel()
    changes: dict = {axis: 1}
    if axis != "ep":  # experts are carved out of data parallelism: dropping EP frees no GPUs
        dp *= size
        changes["dp"] = dp
    if axis == "tp":
        changes["sequence_parallel"] = False
        changes["etp"] = None if inp.etp in (None, inp.tp) else inp.etp
    if axis == "pp":  # one stage holds every layer: no uneven split (its flags go too, needless_parallelism)
        changes["vpp"] = None
        changes.update(dict.fromkeys(SPLIT_FIELDS))
        if inp.options.wgrad_deferral_limit is not None:
            # Megatron refuses --defer-embedding-wgrad-compute without a pipeline (ModelParallelConfig.__post_init__,
            # megatron/core/model_parallel_config.py: "Cannot defer embedding wgrad compute when pipeline model
            # parallel is not used"): the simpler launch drops it, and its buffers
            fields = {name: getattr(inp.options, name) for name in inp.options.__record_fields__}
            changes["options"] = inp.options.__class__(**{**fields, "wgrad_deferral_limit": None})
    if axis == "ep" and (inp.num_experts or 0) <= 1:
        return None
    if axis == "ep" and inp.options.moe_a2a_overlap:
        # no expert all-to-all left to hide, and TransformerConfig.__post_init__ asserts ep > 1 under
        # --overlap-moe-expert-parallel-comm (megatron/core/transformer/transformer_config.py): it goes too
        fields = {name: getattr(inp.options, name) for name in inp.options.__record_fields__}
        changes["options"] = inp.options.__class__(**{**fields, "moe_a2a_overlap": False})
    global_batch = inp.global_batch or inp.micro_batch * inp.data_parallel()
    if global_batch % (inp.micro_batch * dp):
        return None
    return inp.replace(**changes)
