"""`plint plan LAUNCH`: a plan for an existing launch's model, cluster and batch, and where that launch
stands among the plan's candidates (the `now` row).

A launch's own layout need not be a candidate: the search proposes only layouts that pass the trainer's
start-up checks, fit in memory as the rules judge it (plan.fits_in_memory), and use the lightest recompute that fits, and an
option given on the command line (--nodes, --global-batch) may leave the launch's own sizes inconsistent
with the new cluster. Ranking such a layout among the candidates ("#400 of 399") says nothing true, so
the row says that it is not among them, why, and where its predicted speed would put it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.cost import ModelInput

from plint.planning.plan import (
    MICRO_BATCHES,
    Candidate,
    Plan,
    changes,
    fits_in_memory,
    memory_band_high,
    nvlink_domain,
    plan,
    rank,
    uneven_split,
)


def plan_around(inp: ModelInput, model_name: str, top: int | None = None, headroom: float | None = None) -> Plan:
    """Plan for the model, cluster and global batch of an existing launch, and place that launch; `headroom`
    as for plan()."""
    from plint.catalog.hardware import lookup_gpu
    from plint.cost import estimate

    base = inp.replace(
        distributed_optimizer=True,
        options=inp.options.__class__(
            **{
                **{n: getattr(inp.options, n) for n in inp.options.__record_fields__},
                "overlap_grad_reduce": True,
                "overlap_param_gather": True,
            }
        ),
    )
    result = plan(base, model_name, top=None, headroom=headroom)
    est = estimate(inp)
    if est is not None:
        current = Candidate(inp, est)
        current.why = place(current, result, nvlink_domain(base, lookup_gpu(base.gpu)), headroom)
        result.current = current
    if top:
        result.candidates = result.candidates[:top]
    return result


def layout_key(inp: ModelInput) -> tuple:
    """What makes two inputs the same layout for the plan: the parallel sizes, micro-batch and recompute."""
    vpp = inp.vpp if (inp.vpp or 1) > 1 else None
    return inp.tp, inp.pp, vpp, inp.cp, inp.ep, inp.data_parallel(), inp.micro_batch, inp.recompute


def place(current: Candidate, result: Plan, domain: int, headroom: float | None = None) -> str:
    """The `why` of the launch's row: its rank when its layout is a candidate, else why it is not one; the
    memory test is the candidates' (plan.fits_in_memory with the same `headroom`)."""
    if not current.estimate.fits:
        return "does not fit in memory"
    n = len(result.candidates)
    faster = sum(1 for c in result.candidates if c.tokens > current.tokens)
    twin = next((k for k, c in enumerate(result.candidates) if layout_key(c.inp) == layout_key(current.inp)), None)
    fits = fits_in_memory(current.estimate, headroom)
    if twin is not None and faster < n and fits:
        # by the plan's own ranking rule (within NEAR_TIE of the fastest, the simplest first), not by speed alone
        ranked = rank([current, *result.candidates])  # first: an exact tie with its twin goes its way
        return f"would rank #{next(k for k, c in enumerate(ranked, 1) if c is current)} of {n}"
    if twin is not None:  # its layout is a candidate, but as written it is slower than all of them or too tight
        differs = changes(current, result.candidates[twin])
        reasons = ([] if fits else [_over_memory(current, headroom)]) + [
            f"#{twin + 1} is its layout with "
            + (", ".join(differs) if differs else "the plan's overlapped gradient reduction and parameter gathers")
        ]
    else:
        reasons = outside_search(current, result, domain, headroom)
    where = (
        "no candidate fits to compare with"
        if n == 0
        else "faster than all of them"
        if faster == 0
        else "slower than all of them"
        if faster == n
        else f"between #{faster} and #{faster + 1}"
    )
    return f"not among the {n} candidates ({'; '.join(reasons)}): {where}"


def _over_memory(current: Candidate, headroom: float | None) -> str:
    """Why a launch's memory keeps it out of the plan (plan.fits_in_memory), with its numbers."""
    memory = current.estimate.memory_gib
    if fits_in_memory(current.estimate):  # its band fits: the configured headroom is what it exceeds
        return (
            f"{memory['total']:.1f} GiB of {memory['usable']:.1f} usable per GPU: over the "
            f"{headroom:.0%} of usable that thresholds.memory-headroom allows"
        )
    return (
        f"{memory['total']:.1f} GiB of {memory['usable']:.1f} usable per GPU, up to "
        f"{memory_band_high(current.estimate):.1f} within its +-{100 * memory.get('error_band', 0.0):.0f}% "
        "error band: over usable memory (PL402)"
    )


def outside_search(current: Candidate, result: Plan, domain: int, headroom: float | None = None) -> list[str]:
    """Why the plan's search (plint.planning.plan.plan, whose filters these follow) did not propose the
    launch's layout: the start-up checks it fails, the sizes the search does not try, its memory."""
    inp, base = current.inp, result.base
    tp, pp, cp, ep, micro = inp.tp, inp.pp, inp.cp, inp.ep, inp.micro_batch
    vpp = inp.vpp if (inp.vpp or 1) > 1 else None
    dp, world = inp.data_parallel(), base.world_size
    layers, heads = base.num_layers, base.num_attention_heads
    groups = base.num_query_groups or heads
    global_batch = base.global_batch or world
    split = uneven_split(layers, pp) if pp <= layers and layers % pp else None
    out = []
    if tp * pp * cp * dp != world:
        out.append(f"tp {tp} x pp {pp} x cp {cp} x dp {dp} = {tp * pp * cp * dp} GPUs on a cluster of {world}")
    instances = max(1, base.dp_outer)
    if instances > 1 and (dp * cp) % instances:
        out.append(
            f"dp {dp} x cp {cp} = {dp * cp} is not a multiple of its {instances} distributed-optimizer "
            "instances (PL101)"
        )
    if tp > domain:
        out.append(f"tp {tp} spans more than the NVLink domain of {domain} GPUs (PL201)")
    elif tp & (tp - 1) or domain % tp:
        out.append(f"tp {tp}: the plan tries powers of two that divide the NVLink domain of {domain} GPUs")
    if heads % tp or groups % tp:
        out.append(f"{heads} attention heads and {groups} query groups do not both divide by tp {tp} (PL104)")
    if cp & (cp - 1):
        out.append(f"cp {cp}: the plan tries powers of two")
    if base.seq_length % (2 * cp):
        out.append(f"sequence {base.seq_length} does not divide by 2 x cp {cp} (PL109)")
    elif cp > 1 and base.seq_length // cp < 1024:
        out.append(f"cp {cp} leaves {base.seq_length // cp} tokens per rank: the plan keeps at least 1024")
    if pp > layers or layers % pp and split is None:
        out.append(f"{layers} layers do not split over pp {pp} (PL103)")
    if micro not in MICRO_BATCHES:
        out.append(f"micro-batch {micro}: the plan tries {', '.join(map(str, MICRO_BATCHES))}")
    if global_batch % (micro * dp):
        out.append(f"global batch {global_batch} is not divisible by micro-batch {micro} x dp {dp} (PL102)")
    per_stage = split[1] if split else layers // pp
    steps = global_batch // (micro * dp)  # micro-batches per step and replica
    if vpp and (pp == 1 or per_stage % vpp):
        out.append(
            f"vpp {vpp} with pp {pp}: the plan tries the virtual-stage counts that divide the "
            f"{per_stage} layers of a stage (PL108)"
        )
    elif vpp and steps < pp:
        out.append(f"vpp {vpp} with {steps} micro-batches per step, fewer than pp {pp} (PL108)")
    experts = base.num_experts or 0
    if ep > 1 and (experts % ep or (tp * cp * dp) % ep):
        out.append(f"ep {ep} does not divide {experts} experts and tp x cp x dp = {tp * cp * dp} GPUs (PL105)")
    if not fits_in_memory(current.estimate, headroom):
        out.append(_over_memory(current, headroom))
    lighter = next(
        (
            k
            for k, c in enumerate(result.candidates)
            if layout_key(c.inp)[:-1] == layout_key(inp)[:-1] and c.inp.recompute != inp.recompute
        ),
        None,
    )
    if not out and lighter is not None:
        other = result.candidates[lighter].inp.recompute
        out.append(
            f"recompute {inp.recompute or 'none'}: #{lighter + 1} is its layout with "
            f"{f'{other} recompute' if other else 'no recompute'}, the lightest that fits"
        )
    return out or [
        "its settings differ from those the plan gives every candidate (the distributed optimizer, "
        "overlapped gradient reduction and parameter gathers)"
    ]
