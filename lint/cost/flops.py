"""Model FLOPs as Megatron-LM counts them (`num_floating_point_operations`, megatron.md sec. 4.1).

Per token (T = tokens, e = 3 with SwiGLU else 2, V the padded vocabulary):
  6*h*e*(f*L_dense + (f_m*k + f_s)*L_moe)   MLPs (routed experts count top-k of them)
  + 6*h*d*(2n + 2g)*L                        QKV and output projections
  + 6*h*V                                    the output layer
  + 6*d*n*s*L      attention core, causal    (Megatron >= 0.12: QK^T and AV halved by the mask)
   or 12*d*n*s*L   attention core, full      (Megatron <= 0.11, SC21 and NeMo/dgxc tables)
The 6 is 2 (multiply-add) x 3 (forward, input gradient, weight gradient). Norms, biases, routers and
embeddings' lookups are not counted. Conventions:
  "megatron"      the >= 0.12 count above (plint's MFU uses this one and says so)
  "megatron_old"  the full-attention count (SC21: 72*B*s*L*h^2*(1 + s/6h + V/12hL) for MHA, f = 4h)
  "6n"            6 x active parameters (the Chinchilla/Kaplan rule; no attention core)
Recompute adds forward FLOPs only (hardware FLOPs, not model FLOPs): a full recompute re-runs each
layer's forward (+1/3 of the layer terms; the output layer is not recomputed), selective recompute
re-runs the attention core forward.
"""

from __future__ import annotations

from plint.cost.model_input import ModelInput
from plint.cost.params import ParamCounts, count_params

CONVENTIONS = ("megatron", "megatron_old", "6n")


def flops_terms(inp: ModelInput, counts: ParamCounts | None = None) -> tuple[float, float, float]:
    """(layer GEMMs, attention core as causal, output layer) FLOPs per token, fwd+bwd, whole model."""
    c = counts or count_params(inp)
    h, n = inp.hidden_size, inp.num_attention_heads
    d = inp.kv_channels or h // n
    g = inp.num_query_groups or n
    f = inp.ffn_width()
    e = 3 if inp.swiglu else 2
    fm = inp.moe_ffn_hidden_size or f
    k = min(inp.moe_topk, inp.num_experts or 0)
    mlp = 6 * h * e * (f * c.num_dense + (fm * k + inp.moe_shared_expert_size) * c.num_moe)
    projections = 6 * h * d * (2 * n + 2 * g) * inp.num_layers
    core_causal = 6 * d * n * inp.seq_length * inp.num_layers
    head = 6 * h * c.vocab_padded
    return float(mlp + projections), float(core_causal), float(head)


def flops_per_token(
    inp: ModelInput, convention: str = "megatron", counts: ParamCounts | None = None, recompute: str | None = None
) -> float:
    """Model FLOPs per token under a convention; with `recompute` ("full"/"selective") the hardware
    FLOPs that recomputation adds are included."""
    if convention == "6n":
        c = counts or count_params(inp)
        return 6.0 * c.active
    layers, core, head = flops_terms(inp, counts)
    if convention == "megatron_old":
        core *= 2
    elif convention != "megatron":
        raise ValueError(f"unknown FLOP convention {convention!r} (known: {', '.join(CONVENTIONS)})")
    total = layers + core + head
    if recompute == "full":
        total += (layers + core) / 3
    elif recompute == "selective":
        total += core / 3
    return total


def flops_per_step(inp: ModelInput, convention: str = "megatron", counts: ParamCounts | None = None) -> float:
    """Model FLOPs of one optimizer step: global batch x sequence length tokens."""
    batch = inp.global_batch or inp.micro_batch * inp.data_parallel()
    return flops_per_token(inp, convention, counts) * batch * inp.seq_length
