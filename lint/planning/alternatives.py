"""Concrete alternatives to a launch's layout, for advice that must name a better one (PL301).

An alternative keeps everything the launch's authors chose for reasons plint cannot see (the GPUs, the
global batch, the model, tensor, context and expert parallelism, sharding, recompute, precision) and
changes only how the model is pipelined: the pipeline size, the virtual stages per rank and the
micro-batch (no larger than the launch's). Each alternative passes the start-up checks those sizes meet in Megatron-LM
(megatron/training/arguments.py validate_args): layers divide over pp x vpp (PL103, PL108), the global
batch over micro-batch x dp (PL102), the interleaved schedule has at least pp micro-batches per step
(PL108), and the experts' GPUs divide (PL105).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from plint.planning.plan import MICRO_BATCHES, _divisors

if TYPE_CHECKING:
    from plint.cost import Estimate, ModelInput


def bubble_share(est: Estimate) -> float:
    """The idle pipeline time as a share of the whole step."""
    return est.time_s.get("bubble", 0.0) / est.step_time_s if est.step_time_s > 0 else 0.0


def pipeline_layouts(inp: ModelInput, interleaving: bool = True) -> Iterator[ModelInput]:
    """Every (pp, vpp, micro-batch) of the launch's GPUs, batch and other sizes that Megatron accepts, the
    launch's own included, that still pipelines (pp >= 2: dropping the pipeline is PL302's advice) with a
    micro-batch no larger than the launch's (a larger one lengthens every fill and drain: a gain from it
    comes from larger GEMMs, PL310's advice, not from the bubble). `interleaving`: whether the trainer has
    virtual pipeline stages (Megatron-LM; the Megatron-DeepSpeed forks do not)."""
    world, layers = inp.world_size, inp.num_layers
    group = max(1, inp.tp) * max(1, inp.cp)
    global_batch = inp.global_batch or inp.micro_batch * inp.data_parallel()
    if world % group:
        return
    for pp in _divisors(world // group):
        if pp < 2 or pp > layers or layers % pp:
            continue
        dp = world // (group * pp)
        if inp.ep > 1 and (group * dp) % inp.ep:  # PL105: ep divides one stage's GPUs
            continue
        # PL108: interleaving needs pp >= 2, or 3 without p2p overlap (parallel_state, schedules.py)
        minimum_pp = 3 if inp.options.overlap_p2p_comm is False else 2
        vpps = [None] + ([v for v in _divisors(layers // pp) if v > 1] if interleaving and pp >= minimum_pp else [])
        for vpp in vpps:
            for micro in sorted({*MICRO_BATCHES, inp.micro_batch}):
                if micro > inp.micro_batch or global_batch % (micro * dp):
                    continue
                if vpp and global_batch // (micro * dp) < pp:
                    continue
                yield inp.replace(pp=pp, vpp=vpp, dp=dp, micro_batch=micro)


def faster_pipeline(inp: ModelInput, est: Estimate, fits: Callable[[Estimate], bool], min_gain: float,
                    estimate: Callable[[ModelInput], Estimate | None],
                    interleaving: bool = True) -> tuple[ModelInput, Estimate] | None:
    """The fastest pipeline layout of the launch that fits (`fits`), whose step is predicted shorter by more
    than `min_gain` (the share of the step the cost model cannot tell apart) and which owes at least half of
    that gain to a smaller bubble (else the advice is about something else); None when there is none."""
    best: tuple[ModelInput, Estimate] | None = None
    current = (inp.pp, inp.vpp or 1, inp.micro_batch)
    idle = est.time_s.get("bubble", 0.0)
    for candidate in pipeline_layouts(inp, interleaving):
        if (candidate.pp, candidate.vpp or 1, candidate.micro_batch) == current:
            continue
        variant = estimate(candidate)
        if variant is None or not fits(variant):
            continue
        saved = est.step_time_s - variant.step_time_s
        if saved <= 0 or idle - variant.time_s.get("bubble", 0.0) < saved / 2:
            continue
        if best is None or variant.step_time_s < best[1].step_time_s:
            best = (candidate, variant)
    if best is None or best[1].step_time_s > (1 - min_gain) * est.step_time_s:
        return None
    return best
