"""Step-time terms of a MoE layer as Megatron runs it (issue 24 item 3), for plint.cost.estimate: the routed copies
the busiest expert rank processes, the experts' activation and shared experts a recompute replays, and the expert
all-to-all under --overlap-moe-expert-parallel-comm, phase by phase and only in the schedule's steady state."""

from __future__ import annotations

from math import comb

from plint.cost.layer_terms import KernelRates
from plint.cost.model_input import ModelInput


def expert_slots(k: KernelRates) -> float:
    """Routed token copies this GPU's experts process in one micro-batch: the busiest EP rank's, which the others
    wait for (Options.moe_load_imbalance)."""
    inp = k.inp
    tp, etp = max(1, inp.tp), inp.etp or max(1, inp.tp)
    imbalance = inp.options.moe_load_imbalance if inp.ep > 1 else 1.0
    return k.tokens * min(inp.moe_topk, inp.num_experts or 1) * etp / tp * imbalance


def expert_activation(k: KernelRates) -> float:
    """Forward of the experts' activation over this GPU's routed copies (read the fc1 output, write its
    activation; gated: both halves), seconds: what --recompute-modules moe_act replays. With a clamp
    (ModelInput.activation_clamp) the fused quick-GeGLU's caller first clamps each half of the fc1 output and
    concatenates them again, outside the kernel (megatron/core/fusions/fused_bias_geglu.py
    weighted_bias_quick_geglu_impl, core_v0.17.0): each half read and written, then the whole read and written,
    8 bytes per element of the gated width."""
    inp = k.inp
    fm = inp.moe_ffn_hidden_size or inp.ffn_width()
    width = fm / (inp.etp or max(1, inp.tp))
    clamp = 8 * k.gate * width if inp.activation_clamp else 0.0
    return expert_slots(k) * (2 * (2 + k.gate) * width + clamp) / k.hbm


def expert_output_bias(k: KernelRates) -> float:
    """Forward and backward of the experts' output bias on this GPU's routed copies, seconds (0 with
    --disable-bias-linear). The grouped experts leave fc2's bias to the layer (megatron/core/transformer/moe/
    experts.py, core_v0.17.0: TEGroupedMLP builds linear_fc2 with skip_bias_add=True, and _apply_bias adds each
    local expert's bias times the routing probability to its tokens' rows one expert at a time, in PyTorch, then
    concatenates them): forward the bias-prob product written, read with the output and their sum written, the sum
    read and the concatenation written, 12 bytes per element of the copies x h (bf16); backward the gradients of
    bias and probability, each a product of the output gradient reduced over tokens or h, ~12 bytes more."""
    inp = k.inp
    if not inp.add_bias_linear:
        return 0.0
    return 24 * expert_slots(k) * inp.hidden_size / k.hbm


def shared_experts(k: KernelRates) -> float:
    """Forward GEMMs of a MoE layer's shared experts on one GPU (column- then row-parallel over TP), seconds."""
    inp, fs = k.inp, k.inp.moe_shared_expert_size
    if not fs:
        return 0.0
    tp = max(1, inp.tp)
    return k.gemm(k.tokens, fs * k.gate / tp, inp.hidden_size) + k.gemm(k.tokens, inp.hidden_size, fs / tp)


def a2a_overlapped_layer(k: KernelRates, a2a: float, attention_fwd: float, experts_fwd: float) -> float:
    """Exposed expert all-to-all of one MoE layer whose forward (of one micro-batch) runs paired with its backward
    (of another) under --overlap-moe-expert-parallel-comm, seconds. Megatron-Core's combined 1F1B
    (megatron/core/models/common/model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run, core_v0.15.0) runs
    the layer in three phases, the communication stream against the computation stream:
        combine backward               | attention + router forward
        dispatch forward + backward    | experts backward (dgrad, wgrad) + experts forward
        combine forward                | router + attention backward
    `a2a` is one dispatch or combine (they move the same bytes); a backward lasts twice its forward. Each phase
    exposes what its communication outlasts its computation, and the hidden rest costs Options.overlap_slowdown."""
    return k.hidden(a2a, attention_fwd) + k.hidden(2 * a2a, 3 * experts_fwd) + k.hidden(a2a, 2 * attention_fwd)


def paired_share(m: int, vpp: int, group: int) -> float:
    """Share of the last pipeline stage's forward (and backward) chunks that run paired with a backward (forward)
    under --overlap-moe-expert-parallel-comm: all but its warm-up (megatron/core/pipeline_parallel/schedules.py
    get_pp_rank_microbatches, core_v0.15.0: on the last rank (vpp - 1) x the micro-batch group per virtual stage
    (pp by default) when interleaved, plus the one extra forward the overlap schedules so that every 1F1B step
    pairs independent micro-batches; the forward with nothing to pair without a pipeline). Megatron requires
    virtual stages for the overlap with PP > 1 (TransformerConfig.__post_init__)."""
    chunks = m * vpp
    warmup = (vpp - 1) * group + 1 if vpp > 1 else 1
    return max(0.0, (chunks - warmup) / chunks)


def remote_nodes(inp: ModelInput, nodes: int) -> float:
    """Expected remote nodes one token's routed copies reach when the EP group spans `nodes` nodes of its experts
    in order (contiguous experts per EP rank, contiguous EP ranks per node), each copy to an expert chosen at
    random: (nodes - 1)(1 - (1 - 1/nodes)^topk). Under group-limited routing (megatron/core/transformer/moe/
    moe_utils.py group_limited_topk, core_v0.14.0: the experts in num_groups contiguous groups, a token's top-k
    taken inside its group_topk best groups, scored by the sum of their top topk/group_topk experts; "node-limited
    routing" when the groups are the EP group's nodes, as DeepSeek-V3's 8 groups, 4 chosen) a node is reached when
    one of its groups is chosen, each chosen group taken to receive a copy (its top experts are what chose it):
    with q groups a node, 1 - C(G - q, K) / C(G, K); a group over s nodes takes topk/K copies spread over them."""
    if nodes <= 1:
        return 0.0
    topk = min(inp.moe_topk, inp.num_experts or 1)
    free = (nodes - 1) * (1 - (1 - 1 / nodes) ** topk)
    groups, chosen = inp.moe_router_groups or 0, inp.moe_router_group_topk or 0
    if groups <= 1 or not 0 < chosen < groups or (inp.num_experts or 0) % groups:
        return free
    if groups % nodes == 0:  # whole groups on each node
        per_node = groups // nodes
        return min(free, (nodes - 1) * (1 - comb(groups - per_node, chosen) / comb(groups, chosen)))
    if nodes % groups == 0:  # each group over several nodes
        span = nodes // groups
        return min(free, (nodes - 1) * chosen / groups * (1 - (1 - 1 / span) ** (topk / chosen)))
    return free
