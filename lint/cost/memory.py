"""Memory per GPU on the most loaded pipeline stage, in bytes.

Model states (bytes per parameter; megatron.md sec. 4.2, planners.md secs. 2-3):
  Megatron, bf16/fp8: 2 weights + 4 fp32 main grads + 12 optimizer (fp32 main params, Adam m and v);
      fp16: 2 + 2 + 16 (the optimizer also keeps an fp32 copy of the grads); fp32: 4 + 4 + 8.
      The distributed optimizer shards only the optimizer part over dp*cp (6 + 12/(dp*cp) for bf16);
      experts shard theirs over the expert-data-parallel group world/(pp*ep*etp).
  DeepSpeed ZeRO / FSDP: 2 + 2 + 16 (fp32 master, fp32 grads, Adam) for 16-bit training; stage 1
      shards the optimizer over dp, stage 2 the grads too, stage 3 the weights too (plus two layers'
      gathered weights in flight).
Activations per layer per micro-batch (Korthikanti et al. 2022, re-derived for GQA, SwiGLU, flash
attention, CP and MoE; bytes per token of the micro-batch on one GPU, 16-bit activations):
  10h    norms' inputs (2 x 2h), QKV and MLP inputs (2 x 2h), two dropout masks (2 x h);
         replicated across TP unless sequence parallel divides them by tp
  (4nd + 4gd)/tp     Q, K, V and the attention output kept by flash attention (MHA: 8h/tp)
  4n/tp              flash attention's fp32 softmax statistics
  5ns/tp             only without flash attention: softmax output, dropout mask and output (the s^2 term)
  4f/tp, 6f/tp       MLP: fc1 output and activation output; SwiGLU keeps gate and up (2 x 2f) and 2f
  MoE layer: k routed copies of the token per GPU, each with its dispatched input (2h, x etp) and the
         expert MLP above at width f_m, plus the shared expert and fp32 router logits (4E)
  (MHA, f = 4h, no SP: 10 + 24/tp, Korthikanti's Table 2 without the 5as/h attention term.)
The tokens of a micro-batch on one GPU are b*s/cp. Recompute: selective with flash attention keeps the
same (the s^2 term it drops is already gone); full keeps each layer's input (2h, /tp with SP) and one
layer's full set while it recomputes; method "block" recomputes only the first r layers of each chunk.
Times the layers in flight on the first stage (schedule.layers_in_flight). First stage adds the
embedding dropout mask; the stage with the output layer keeps fp32 logits (4*V/tp per token, one
micro-batch). The larger of first and last stage is reported.
"""

from __future__ import annotations

from plint.cost.model_input import ModelInput
from plint.cost.params import ParamCounts
from plint.cost.schedule import layers_in_flight

GIB = float(1 << 30)


def state_bytes(inp: ModelInput) -> tuple[float, float, float, bool]:
    """(weights, grads, optimizer) bytes per parameter, and whether this is DeepSpeed-style ZeRO."""
    precision = inp.precision
    zero = inp.zero_stage is not None and inp.zero_stage > 0 and not inp.distributed_optimizer
    if precision == "fp32":
        return 4.0, 4.0, 8.0, zero
    if zero:
        return 2.0, 2.0, 16.0, True
    grad = inp.options.grad_reduce_bytes
    if precision == "fp16":
        return 2.0, float(grad or 2), 16.0, False
    return 2.0, float(grad or 4), 12.0, False


def stage_params(inp: ModelInput, c: ParamCounts, last: bool) -> tuple[float, float, float]:
    """(dense params, expert params, largest layer's params) one GPU of the first or last stage holds."""
    pp, tp = max(1, inp.pp), max(1, inp.tp)
    share = 1.0 / pp
    dense_layers, moe_layers = c.num_dense * share, c.num_moe * share
    dense = dense_layers * (c.dense_layer_tp / tp + c.dense_layer_rep) + moe_layers * (c.moe_layer_tp / tp + c.moe_layer_rep)
    etp = inp.etp or tp
    experts = moe_layers * c.experts_per_layer / max(1, inp.ep * etp)
    first = not last or pp == 1
    if first:
        dense += c.embedding / tp + c.position
    if last or pp == 1:
        dense += c.final_norm + (c.output / tp if inp.untie_embeddings else (c.embedding / tp if pp > 1 else 0))
    largest = max(c.dense_layer_tp / tp + c.dense_layer_rep,
                  c.moe_layer_tp / tp + c.moe_layer_rep + (c.experts_per_layer / max(1, inp.ep * etp) if c.num_moe else 0))
    return dense, experts, largest


def activation_bytes_per_token(inp: ModelInput, moe: bool) -> tuple[float, float]:
    """(bytes kept per token for one layer with no recompute, bytes kept with full recompute)."""
    h, n, tp = inp.hidden_size, inp.num_attention_heads, max(1, inp.tp)
    d = inp.kv_channels or h // n
    g = inp.num_query_groups or n
    sp = tp if inp.sequence_parallel else 1
    keep = 10.0 * h / sp + (4 * n * d + 4 * g * d + 4 * n) / tp
    if not inp.options.flash_attention:
        keep += 5.0 * n * inp.seq_length / tp
    mlp_factor = 6 if inp.swiglu else 4
    if moe:
        fm = inp.moe_ffn_hidden_size or inp.ffn_hidden_size or 4 * h
        k = min(inp.moe_topk, inp.num_experts or 1)
        etp = inp.etp or tp
        keep += k * (2.0 * h * etp + mlp_factor * fm) / tp
        keep += mlp_factor * inp.moe_shared_expert_size / tp + 4.0 * (inp.num_experts or 0) / sp
    else:
        keep += mlp_factor * (inp.ffn_hidden_size or 4 * h) / tp
    return keep, 2.0 * h / sp


def memory_bytes(inp: ModelInput, c: ParamCounts, num_microbatches: int) -> dict[str, float]:
    """weights, grads, optimizer, activations (bytes) of the most loaded stage's GPU."""
    w_b, g_b, o_b, zero = state_bytes(inp)
    dp = inp.data_parallel()
    shard = dp * max(1, inp.cp)
    etp = inp.etp or inp.tp
    expert_dp = max(1, inp.world_size // max(1, inp.pp * inp.ep * etp))
    tokens = inp.micro_batch * inp.seq_length / max(1, inp.cp)
    moe_share = c.num_moe / inp.num_layers if inp.num_layers else 0.0
    full, ckpt = activation_bytes_per_token(inp, False)
    if c.num_moe:
        moe_full, _ = activation_bytes_per_token(inp, True)
        full = (1 - moe_share) * full + moe_share * moe_full
    stage_layers = inp.num_layers / max(1, inp.pp)
    v = inp.vpp or 1
    if inp.recompute == "full":
        r = inp.recompute_num_layers or 1
        if inp.recompute_method == "block":
            frac = min(1.0, r / max(1e-9, stage_layers / v))
            per_layer, working = frac * ckpt + (1 - frac) * full, full
        else:  # uniform: one checkpoint per r layers, r layers rebuilt at a time
            per_layer, working = ckpt / r, r * full
    else:
        per_layer, working = full, 0.0
    sp = inp.tp if inp.sequence_parallel else 1
    best: dict[str, float] | None = None
    for last in ((False, True) if inp.pp > 1 else (False,)):
        dense, experts, largest = stage_params(inp, c, last)
        weights = (dense + experts) * w_b
        grads = (dense + experts) * g_b
        if zero:
            stage = inp.zero_stage or 0
            optimizer = (dense + experts) * o_b / dp
            if stage >= 2:
                grads /= dp
            if stage >= 3:
                weights = weights / dp + 2 * largest * w_b  # two gathered layers in flight
        elif inp.distributed_optimizer:
            optimizer = dense * o_b / shard + experts * o_b / expert_dp
        else:
            optimizer = (dense + experts) * o_b
        if last and inp.pp > 1:
            chunks = min((v - 1) * inp.pp + 1, max(1, num_microbatches) * v)
            in_flight = chunks * inp.num_layers / (inp.pp * v)
        else:
            in_flight = layers_in_flight(inp.num_layers, inp.pp, num_microbatches, inp.vpp)
        acts = tokens * (in_flight * per_layer + working)
        if not last:
            acts += tokens * inp.hidden_size / sp * min(inp.pp, max(1, num_microbatches))  # embedding dropout mask
        if last or inp.pp == 1:
            acts += tokens * 4.0 * c.vocab_padded / max(1, inp.tp)  # fp32 logits for the cross-entropy
        out = {"weights": weights, "grads": grads, "optimizer": optimizer, "activations": acts}
        if best is None or sum(out.values()) > sum(best.values()):
            best = out
    return best  # type: ignore[return-value]
