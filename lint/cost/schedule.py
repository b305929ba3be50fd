"""Pipeline schedules: the bubble and the activations a stage keeps in flight.

Conventions (planners.md sec. 8): the bubble is reported as a fraction of the *ideal* step, as
Narayanan et al. 2021 and Megatron do: (pp-1)/m for 1F1B, (pp-1)/(vpp*m) for the interleaved
schedule. GPipe instead quotes the share of the total, (pp-1)/(m+pp-1); `bubble_share_of_total`
converts. m is the number of micro-batches per step on each pipeline.
"""

from __future__ import annotations


def bubble_fraction(pp: int, num_microbatches: int, vpp: int | None = None) -> float:
    """Idle time of a 1F1B / interleaved-1F1B step over its ideal (bubble-free) time."""
    if pp <= 1 or num_microbatches <= 0:
        return 0.0
    return (pp - 1) / ((vpp or 1) * num_microbatches)


def bubble_share_of_total(pp: int, num_microbatches: int, vpp: int | None = None) -> float:
    """The same bubble as a share of the whole step (GPipe's convention)."""
    b = bubble_fraction(pp, num_microbatches, vpp)
    return b / (1 + b)


def layers_in_flight(num_layers: int, pp: int, num_microbatches: int, vpp: int | None = None) -> float:
    """Layer-activations (in units of one layer for one micro-batch) the first stage holds at its peak.

    1F1B: stage 0 runs min(pp, m) forwards before its first backward, each over L/pp layers, so it
    holds min(pp, m) * L/pp (= L when m >= pp, independent of pp).
    Interleaved (v chunks of L/(pp*v) layers): Megatron's warm-up on rank 0 is (pp-1)*2 + (v-1)*pp
    chunk-forwards, plus the one in progress: (pp*v + pp - 1) chunks = L*(1 + (pp-1)/(pp*v)) layers,
    the factor of megatron.md sec. 4.2; capped by the m*v chunk-forwards a step has.
    """
    if num_layers <= 0:
        return 0.0
    m = max(1, num_microbatches)
    if pp <= 1:
        return float(num_layers)
    v = vpp or 1
    if v == 1:
        return min(pp, m) * num_layers / pp
    chunks = min((pp - 1) * 2 + (v - 1) * pp + 1, m * v)
    return chunks * num_layers / (pp * v)
