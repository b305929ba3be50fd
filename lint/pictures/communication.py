"""The communication table of one launch: per parallel axis its collective, how often it runs, the bytes
it moves per step on one GPU, the link its group lands on, and the cost model's time for it
(Estimate.time_s, which already breaks the step down by axis) with its share of the step.

The counts and sizes follow the cost model's own accounting (plint/cost/estimate.py's module doc):
TP 4 collectives of b*s*h/cp 16-bit elements forward and 4 backward per layer; CP (cp-1) ring steps of
K and V forward, twice that backward; EP dispatch + combine forward and backward per MoE layer; PP one
send forward and one backward per micro-batch and chunk; DP one gradient reduction and (distributed
optimizer) one parameter all-gather per step. The link is where plint.cost.comm.Links puts the group:
NVLink when it stays inside one domain, the network otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from plint.catalog.hardware import lookup_gpu
from plint.cost.estimate import group_links  # the cost model's own placement of groups on links
from plint.cost.memory import stage_params, state_bytes
from plint.cost.params import count_params


@dataclass(frozen=True)
class CommRow:
    axis: str
    size: int
    collective: str
    how_often: str
    bytes_per_step: float
    link: str
    time_s: float
    share: float

    @property
    def label(self) -> str:
        """The group as the table names it: dp over dp x cp ranks reads "dp-cp"."""
        return f"{'dp-cp' if self.axis == 'dp' and self.cp > 1 else self.axis}={self.size}"

    cp: int = 1


def comm_rows(inp, est, strides: dict) -> list[CommRow]:
    """Rows for every axis of size > 1; `strides` are the dense grid's (plint.dryrun.ranks.Grid.strides)."""
    gpu = lookup_gpu(inp.gpu)
    if gpu is None:
        raise ValueError(f"no GPU named {inp.gpu!r} in the hardware catalog")
    links = group_links(inp, gpu)
    m = est.num_microbatches
    tp, cp, pp, v = max(1, inp.tp), max(1, inp.cp), max(1, inp.pp), inp.vpp or 1
    dp = inp.data_parallel()
    tokens = inp.micro_batch * inp.seq_length / cp
    h = inp.hidden_size
    layers = inp.num_layers / pp
    c = count_params(inp)
    step = est.step_time_s or 1.0

    def link(size: int, stride: int) -> str:
        return "NVLink" if links.on_nvlink(size, stride) else "network"

    def row(axis, size, collective, often, nbytes, where):
        t = est.time_s.get(axis, 0.0)
        return CommRow(axis, size, collective, often, nbytes, where, t, t / step, cp)

    rows = []
    if tp > 1:
        sp = "all-gather + reduce-scatter" if inp.sequence_parallel else "all-reduce"
        count = 8 * layers * m
        rows.append(
            row(
                "tp",
                tp,
                sp,
                f"8 per layer per micro-batch ({count:,.0f} per step)",
                count * 2 * tokens * h,
                link(tp, strides["tp"]),
            )
        )
    if cp > 1:
        g = inp.num_query_groups or inp.num_attention_heads
        d = inp.kv_channels or h // inp.num_attention_heads
        kv = 2 * tokens * g * d / tp * 2
        count = 3 * (cp - 1) * layers * m
        rows.append(
            row(
                "cp",
                cp,
                "ring send/recv of K, V",
                f"3(cp-1) per layer per micro-batch ({count:,.0f})",
                count * kv,
                link(cp, strides["cp"]),
            )
        )
    if inp.ep > 1 and c.num_moe:
        k = min(inp.moe_topk, inp.num_experts or 1)
        etp = inp.etp or tp
        count = 4 * c.num_moe / pp * m
        rows.append(
            row(
                "ep",
                inp.ep,
                "all-to-all (dispatch, combine)",
                f"4 per MoE layer per micro-batch ({count:,.0f})",
                count * tokens * k * h * 2 / tp,
                link(inp.ep, etp),
            )
        )
    if pp > 1:
        split = tp if inp.sequence_parallel else 1  # sequence parallelism splits the activations sent
        count = 2 * v * m
        rows.append(
            row(
                "pp",
                pp,
                "send/recv (point to point)",
                f"2 per micro-batch and chunk ({count:,})",
                count * 2 * tokens * h / split,
                link(pp, strides["pp"]),
            )
        )
    if dp * cp > 1:
        dense, experts, _ = stage_params(inp, c, last=pp > 1)
        _, grad_b, _, zero = state_bytes(inp)
        sharded = inp.distributed_optimizer or zero
        nbytes = grad_b * (dense + experts) + (2 * (dense + experts) if sharded else grad_b * (dense + experts))
        name = "reduce-scatter + all-gather" if sharded else "all-reduce"
        often = "every micro-batch (ZeRO-3)" if (inp.zero_stage or 0) >= 3 else "once per step"
        rows.append(row("dp", dp * cp, name, often, nbytes, link(dp * cp, strides["dp"] if cp == 1 else strides["cp"])))
    return rows
