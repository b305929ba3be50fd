"""Pipeline schedules: the bubble and the activations a stage keeps in flight.

Conventions (planners.md sec. 8): the bubble is reported as a fraction of the *ideal* step, as
Narayanan et al. 2021 and Megatron do: (pp-1)/m for 1F1B, (pp-1)/(vpp*m) for the interleaved
schedule. GPipe instead quotes the share of the total, (pp-1)/(m+pp-1); `bubble_share_of_total`
converts. m is the number of micro-batches per step on each pipeline.

Schedules (`Options.pipeline_schedule`; None is Megatron's rule: interleaved when vpp > 1, else
1F1B). F, B, W are the forward, full backward (input + weight gradient) and weight-gradient times of
one micro-batch on one stage; a transformer layer's backward is two GEMMs per forward GEMM, so
F : B : W = 1 : 2 : 1 (`w_share` = W/(F+B) = 1/3) unless the caller says otherwise.
  "gpipe"        (p-1)(F+B)                 -> (p-1)/m        Huang et al. 2019 (GPipe)
  "1f1b"         (p-1)(F+B)                 -> (p-1)/m        Narayanan et al. 2021 (PipeDream-flush)
  "interleaved"  (p-1)(F+B)/v               -> (p-1)/(v*m)    Narayanan et al. 2021 sec. 2.2.2
  "zb-h1"        (p-1)(F+B-2W)              -> (p-1)(1-2w)/m  Qi et al. 2024 (Zero Bubble; their
                                                (p-1)(T_F+T_B-T_W) with T_B the input gradient only),
                                                1/3 of 1F1B when F = B-W = W; = ZB1P of the DualPipe README
  "zb-h2"        (p-1)(F+B-3W), floor 0     -> (p-1)(1-3w)/m  Qi et al. 2024; 0 when F = B-W = W
  "zb-v"         the ZB-H2 form over chunks of half a stage -> (p-1)(1-3w)/(2m), floor 0 (Qi et al. 2024)
  "dualpipe"     (PP/2-1)(F&B + B - 3W)     -> (p/2-1)(1 + B - 3w)/m with F&B = F+B = 1 (no credit for
                                                the overlap) and F = B-W, deepseek-ai/DualPipe README
  "dualpipev"    the same formula (DualPipe README; PyTorch ScheduleDualPipeV)
(F+B = 1 in the fractions; every bubble term is clamped at 0.)
"""

from __future__ import annotations

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev")
_ALIASES = {
    "pipedream-flush": "1f1b",
    "interleaved-1f1b": "interleaved",
    "interleaved1f1b": "interleaved",
    "vpp": "interleaved",
    "zero-bubble": "zb-h1",
    "zb": "zb-h1",
    "zbh1": "zb-h1",
    "zbh2": "zb-h2",
    "zbv": "zb-v",
    "zero-bubble-v": "zb-v",
    "dualpipe-v": "dualpipev",
}


def schedule_name(schedule: str | None, vpp: int | None = None) -> str:
    """The canonical schedule; None picks Megatron's rule (interleaved exactly when vpp > 1)."""
    if schedule is None:
        return "interleaved" if (vpp or 1) > 1 else "1f1b"
    key = schedule.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in SCHEDULES:
        raise ValueError(f"unknown pipeline schedule {schedule!r} (known: {', '.join(SCHEDULES)})")
    return key


def bubble_fraction(
    pp: int, num_microbatches: int, vpp: int | None = None, schedule: str | None = None, w_share: float = 1 / 3
) -> float:
    """Idle time of a step over its ideal (bubble-free) time, for the schedule (see the module doc)."""
    if pp <= 1 or num_microbatches <= 0:
        return 0.0
    name = schedule_name(schedule, vpp)
    m, w = num_microbatches, w_share
    if name in ("gpipe", "1f1b"):
        return (pp - 1) / m
    if name == "interleaved":
        return (pp - 1) / ((vpp or 1) * m)
    if name == "zb-h1":
        return (pp - 1) * max(0.0, 1 - 2 * w) / m
    if name == "zb-h2":
        return (pp - 1) * max(0.0, 1 - 3 * w) / m
    if name == "zb-v":
        return (pp - 1) * max(0.0, 1 - 3 * w) / (2 * m)
    # dualpipe / dualpipev: (p/2 - 1)(F&B + B - 3W) with F&B = F + B = 1 and B = 1 - F = 2/3 of it
    f = (1 - w) / 2  # F = B - W with F + B = 1: F = (1 - W)/2
    back = 1 - f
    return max(0.0, pp / 2 - 1) * max(0.0, 1 + back - 3 * w) / m


def bubble_share_of_total(pp: int, num_microbatches: int, vpp: int | None = None, schedule: str | None = None) -> float:
    """The same bubble as a share of the whole step (GPipe's convention)."""
    b = bubble_fraction(pp, num_microbatches, vpp, schedule)
    return b / (1 + b)


def layers_in_flight(
    num_layers: int, pp: int, num_microbatches: int, vpp: int | None = None, group: int | None = None
) -> float:
    """Layer-activations (in units of one layer for one micro-batch) the first stage holds at its peak.

    1F1B: stage 0 runs min(pp, m) forwards before its first backward, each over L/pp layers, so it
    holds min(pp, m) * L/pp (= L when m >= pp, independent of pp).
    Interleaved (v chunks of L/(pp*v) layers): Megatron's warm-up on rank 0 is (pp-1)*2 + (v-1)*g
    chunk-forwards, g = --microbatch-group-size-per-virtual-pipeline-stage (default pp;
    get_pp_rank_microbatches in megatron/core/pipeline_parallel/schedules.py), plus the one in progress:
    with g = pp, (pp*v + pp - 1) chunks = L*(1 + (pp-1)/(pp*v)) layers, the factor of megatron.md
    sec. 4.2; capped by the m*v chunk-forwards a step has.
    """
    if num_layers <= 0:
        return 0.0
    if pp <= 1:
        return float(num_layers)
    v = vpp or 1
    name = "interleaved" if v > 1 else "1f1b"
    return forwards_in_flight(name, pp, 0, num_microbatches, v, group) * num_layers / (pp * v)


def forwards_in_flight(
    schedule: str, pp: int, rank: int, num_microbatches: int, vpp: int | None = None, group: int | None = None
) -> int:
    """(Chunk-)forwards pipeline rank `rank` holds at its peak: its warm-up forwards and the one in progress
    (schedule: a name of schedule_name; one micro-batch's forward over the rank's layers, or over one of its v
    chunks under the interleaved schedule).

    Megatron-Core (megatron/core/pipeline_parallel/schedules.py, core_v0.12 to core_v0.19):
      1F1B          forward_backward_pipelining_without_interleaving: pp - rank - 1 warm-up forwards, capped by
                    m; then one forward before each backward: min(pp - rank, m)
      interleaved   get_pp_rank_microbatches: (pp - rank - 1)*2 + (v-1)*g warm-up chunk-forwards (g:
                    --microbatch-group-size-per-virtual-pipeline-stage, default pp), capped by the m*v a step has
    Other schedules (planners.md sec. 8), in the same per-rank form where their papers give one: GPipe keeps all
    m on every rank; ZB-H1 and ZB-V peak like 1F1B; ZB-H2 (Qi et al. 2024) fills each rank with forwards until
    micro-batch 0's backward reaches it: with F = B = 1, rank r starts at r and that backward at 2pp - 1 - r,
    so 2(pp - r) - 1 forwards (2pp - 1 on the first rank, 1 on the last); DualPipe and DualPipeV pp + 1 on
    every rank but the last (their README's activation column, per device), the last as 1F1B's.
    """
    m = max(1, num_microbatches)
    v = vpp or 1
    if schedule == "gpipe":
        return m
    if schedule == "interleaved" and v > 1:
        warmup = (pp - rank - 1) * 2 + (v - 1) * (group or pp)
        return min(warmup + 1, m * v)
    if schedule == "zb-h2":
        return min(2 * (pp - rank) - 1, m)
    if schedule in ("dualpipe", "dualpipev") and rank < pp - 1:
        return min(pp + 1, m)
    return min(pp - rank, m)  # 1F1B, ZB-H1, ZB-V; interleaved with one chunk is 1F1B
