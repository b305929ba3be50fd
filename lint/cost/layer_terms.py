"""Step-time terms of what a layer adds beyond the GPT decoder's, for plint.cost.estimate: multi-latent attention
(--multi-latent-attention), the output layer's precision under fp8, and the forward time selective recompute
replays by --recompute-modules."""

from __future__ import annotations

from typing import Protocol

from plint.cost.memory import recomputed_modules
from plint.cost.model_input import ModelInput


class KernelRates(Protocol):
    """What these terms read of plint.cost.estimate's _Kernels (a frozen record): one GPU's rates and a layout's
    per-GPU shapes."""

    @property
    def inp(self) -> ModelInput: ...

    @property
    def tokens(self) -> float: ...  # rows of every GEMM on this GPU: b*s/cp

    @property
    def sp(self) -> int: ...  # TP when sequence parallel, else 1

    @property
    def gemm_peak(self) -> float: ...

    @property
    def attn_peak(self) -> float: ...

    @property
    def attn_eff(self) -> float: ...

    @property
    def hbm(self) -> float: ...

    @property
    def gate(self) -> int: ...

    def gemm(self, rows: float, cols: float, inner: float, count: float = 1.0) -> float: ...

    def hidden(self, comm: float, window: float) -> float: ...


def mla_attention(k: KernelRates, causal: float) -> tuple[float, float, float]:
    """(query/key/value projections, output projection, attention core) forward of multi-latent attention on one
    GPU, seconds (megatron/core/transformer/multi_latent_attention.py MLASelfAttention, core_v0.15.0: the down
    projections linear_q_down_proj h -> q_lora_rank and linear_kv_down_proj h -> kv_lora_rank + rope are
    duplicated on every TP rank and run on the sequence-parallel shard, gathered afterwards; the up projections
    linear_q_up_proj q_lora_rank -> n(qk + rope) (linear_q_proj h -> n(qk + rope) without a query rank) and
    linear_kv_up_proj kv_lora_rank -> n(qk + v) are column-parallel, linear_proj n v -> h row-parallel, as
    params.mla_params counts them). The core multiplies queries and keys of qk + rope channels and the scores by
    values of v channels: (qk + rope + v) / 2d of a d-channel core's FLOPs."""
    inp = k.inp
    h, n, s = inp.hidden_size, inp.num_attention_heads, inp.seq_length
    tp, cp, tokens = max(1, inp.tp), max(1, inp.cp), k.tokens
    q_head = inp.qk_head_dim + inp.qk_pos_emb_head_dim
    rq, rkv = inp.q_lora_rank, inp.kv_lora_rank
    down = k.gemm(tokens / k.sp, rkv + inp.qk_pos_emb_head_dim, h) + (k.gemm(tokens / k.sp, rq, h) if rq else 0.0)
    up = mla_up_projections(k)
    out_proj = k.gemm(tokens, h, n * inp.v_head_dim / tp)
    core = 2 * inp.micro_batch * s * (s / cp) * (q_head + inp.v_head_dim) * (n / tp) * causal
    return down + up, out_proj, core / (k.attn_peak * k.attn_eff)


def mla_up_projections(k: KernelRates) -> float:
    """Forward of multi-latent attention's column-parallel up projections (linear_q_up_proj, or linear_q_proj
    without a query rank, and linear_kv_up_proj) on one GPU, seconds: what --recompute-modules mla_up_proj replays."""
    inp = k.inp
    n, tp = inp.num_attention_heads, max(1, inp.tp)
    q_head = inp.qk_head_dim + inp.qk_pos_emb_head_dim
    return k.gemm(k.tokens, n * q_head / tp, inp.q_lora_rank or inp.hidden_size) + k.gemm(
        k.tokens, n * (inp.qk_head_dim + inp.v_head_dim) / tp, inp.kv_lora_rank
    )


def selective_replay(k: KernelRates, core: float, dense_mlp: float, moe: tuple[float, ...] | None) -> float:
    """Forward time one layer's selective recompute replays before its backward, seconds, by --recompute-modules
    (memory.recomputed_modules; megatron/core/transformer/transformer_layer.py and moe/moe_layer.py, core_v0.15.0):
    core_attn the attention core (`core`), mla_up_proj the up projections, layernorm the norms that are modules of
    their own (a MoE layer's pre_mlp_layernorm, multi-latent attention's input_layernorm: read and write 2h bytes
    per token each), mlp a dense layer's MLP (TransformerLayer: never a MoELayer), moe the whole MoE layer with its
    dispatch and combine, moe_act the experts' activation, shared_experts the shared experts. `dense_mlp`: a dense
    layer's MLP forward (its GEMMs and activation); `moe`: the MoE layer's (experts + router GEMMs, activation and
    permutes, all-to-all, activation alone, shared experts) forward, None for a dense layer."""
    inp = k.inp
    mods = recomputed_modules(inp)
    t = core if "core_attn" in mods else 0.0
    if "mla_up_proj" in mods and inp.multi_latent_attention:
        t += mla_up_projections(k)
    if "layernorm" in mods:
        norms = (moe is not None) + inp.multi_latent_attention
        t += norms * 2 * 2 * k.tokens / k.sp * inp.hidden_size / k.hbm
    if moe is None:
        return t + (dense_mlp if "mlp" in mods else 0.0)
    mlp, act, dispatch, activation, shared = moe
    if "moe" in mods:
        return t + mlp + act + dispatch
    return t + (activation if "moe_act" in mods else 0.0) + (shared if "shared_experts" in mods else 0.0)


def bf16_head_factor(k: KernelRates) -> float:
    """How much longer the output layer's GEMMs take than k.gemm's rate: Megatron's fp8 training leaves the output
    layer in bf16 (megatron/core/models/gpt/gpt_model.py, core_v0.15.0: GPTModel.output_layer is tensor_parallel's
    ColumnParallelLinear, a plain matmul that TE's fp8_autocast does not touch), so it runs at the bf16 peak and
    plateau, not the fp8 ones; 1 otherwise. (torchtitan's float8 converter converts it unless filter_fqns names
    it; plint estimates no torchtitan launch.)"""
    if k.inp.precision != "fp8" or k.attn_peak <= 0:
        return 1.0
    return k.gemm_peak / k.attn_peak * k.inp.options.fp8_gemm_factor
