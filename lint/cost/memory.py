"""Memory per GPU on each pipeline rank and on the most loaded one, in bytes.

Model states (bytes per parameter; megatron.md sec. 4.2, planners.md secs. 2-3; Megatron's
docs/user-guide/features/dist_optimizer.md table):
  Megatron, bf16/fp8: 2 weights + 4 fp32 main grads + 12 optimizer (fp32 main params, Adam m and v);
      fp16 (and bf16 with --grad-reduce-in-bf16): 2 + 2 + 12; fp32: 4 + 4 + 8. The distributed
      optimizer shards only the optimizer part, over the dp x cp group (DDP builds its buffers on
      intra_dp_cp_group): 6 + 12/(dp*cp) for bf16. Experts shard theirs over the expert-data-parallel
      group world/(pp*ep*etp). (Megatron's theoretical_memory_usage.py divides by dp alone, without cp.)
      --use-precision-aware-optimizer: the moments in their chosen dtypes and, for bf16 params with
      fp32 master params, 2 bytes of remainders: 2 + 4 + 4 = 10 with every dtype left at fp32.
  DeepSpeed ZeRO / FSDP: 2 + 2 + 12 (fp32 master, Adam) for 16-bit training; stage 1 shards the
      optimizer over dp, stage 2 the grads too, stage 3 the weights too, plus the largest module's gathered
      16-bit weights and gradients (DeepSpeed's estimator, 4L: `gathered_bytes`); `parallel.sharding`
      says which (FSDP full shard as stage 3, shard_grad_op as 2). Megatron-FSDP keeps Megatron's bytes
      and shards them as its --data-parallel-sharding-strategy says, plus two un-sharded units. Hybrid
      sharding (parallel.dp_outer: Megatron --num-distributed-optimizer-instances, HF hybrid_shard) shards
      each of these over the inner group of dp*cp/dp_outer ranks only and keeps dp_outer replicas (Megatron-
      FSDP's --outer-dp-sharding-strategy optim shards the optimizer over the outer group as well). DeepSpeed's
      ZeRO++ hpZ is not that: its states stay over all of dp, plus a 16-bit weight copy split over k ranks. DeepSpeed's BF16_Optimizer (bf16 at stage 0 with the pipeline engine, or at
      stage 1 with fp32 gradient accumulation; plint.catalog.deepspeed_engine) shards like stage 1 and keeps a
      gradient accumulation buffer beside the bf16 gradients: 2 + (2 + 2) + 12/dp, or 2 + (2 + 4) + 12/dp
      with data_types.grad_accum_dtype fp32.
  With 16-bit gradients the optimizer step also makes an fp32 copy of its shard's gradients (4 bytes,
      step_grad_copy_bytes); it exists only after the backward has freed the activations, so the peak
      counts only what it exceeds them by (Megatron's docs table, 4 + 16/d for fp16, and DeepSpeed's
      estimators, 18 bytes, count it as a state).
Activations per layer per micro-batch (Korthikanti et al. 2022, re-derived for GQA, SwiGLU, flash
attention, CP and MoE; bytes per token of the micro-batch on one GPU, 16-bit activations):
  10h    norms' inputs (2 x 2h), QKV and MLP inputs (2 x 2h), two dropout masks (2 x h; none at
         --hidden-dropout 0); replicated across TP unless sequence parallel divides them by tp
  (4nd + 4gd)/tp     Q, K, V and the attention output kept by flash attention (MHA: 8h/tp)
  4n/tp              flash attention's fp32 softmax statistics (log-sum-exp)
  5ns/tp             instead, without flash attention and without selective recompute: softmax
                     output, dropout mask and dropout output (the s^2 term selective recompute drops;
                     2ns/tp at --attention-dropout 0, the softmax output alone)
  4f/tp, 6f/tp       MLP: fc1 output and activation output; SwiGLU keeps gate and up (2 x 2f) and 2f
  MoE layer: k routed copies of the token per GPU, each with its dispatched input (2h, x etp) and the
         expert MLP above at width f_m, plus the shared expert and fp32 router logits (4E)
  (MHA, f = 4h: 10 + 24/tp without SP, 34/tp with SP = Korthikanti's Table 2 without the 5as/h
  attention term, plus the 4n/tp statistics.)
The tokens of a micro-batch on one GPU are b*s/cp. Recompute: selective with flash attention keeps the
same (the s^2 term it drops is already gone); full keeps each layer's input (2h, /tp with SP) and one
layer's full set while it recomputes; method "block" recomputes only the first r layers of each chunk.
Each pipeline rank holds its own layers (plint.cost.rank_load.rank_layers: an uneven split puts more on some) and
its own forwards in flight (`rank_load.rank_layers_in_flight`: rank r of 1F1B min(pp - r, m) micro-batches, L layers on the
first stage with m >= pp; interleaved (pp - r - 1)*2 + (v-1)*g + 1 chunks, L*(1 + (pp-1)/(pp*v)) on the
first; GPipe, ZB-H2 and DualPipe per Options.pipeline_schedule). The first stage adds the embedding output's dropout mask for each
micro-batch whose chunk 0 is in flight (`embedding_microbatches`); the stage with the output layer
keeps, for one micro-batch (all m under GPipe), the final norm's and output layer's inputs (4h, /tp
with SP) and the fp32 logits (4*V/tp per token). The busiest rank is reported (rank_load.candidate_ranks: the first,
the last, and the middle ranks whose layers differ from those before them). The runtime reserve (CUDA context, workspaces, NCCL buffers) is
Options.runtime_reserve_gib, added by estimate.py; tests/cost/test_megatron_memory_parity.py lists
every difference from Megatron's own theoretical formula.
Model families beyond the GPT decoder, each in its own function: T5's encoder-decoder
(encoder_decoder_layer_bytes: a layer pair per encoder token, the decoder over --decoder-seq-length), Mamba hybrids
(hybrid_layer_bytes: Mamba, attention-only and MLP-only layers averaged over the pattern), multi-latent attention
(mla_attention_bytes) and multi-token prediction layers on the last stage (mtp_layer_bytes). Run-long buffers in the
allocator: workspace_bytes (Transformer Engine's and PyTorch's cuBLAS workspaces, Megatron's own Q.K^T buffer).
"""

from __future__ import annotations

from plint.catalog.hardware import lookup_gpu
from plint.cost.model_input import ModelInput
from plint.cost.params import ParamCounts, hybrid_modelled, mamba_dims, moe_layer_flags
from plint.cost.rank_load import candidate_ranks, embedding_microbatches, end_rank, rank_layers, rank_layers_in_flight
from plint.cost.schedule import schedule_name

GIB = float(1 << 30)


def state_bytes(inp: ModelInput) -> tuple[float, float, float, bool]:
    """(weights, grads, optimizer) bytes per parameter held through forward and backward, and whether
    this is DeepSpeed-style ZeRO. The optimizer's fp32 copy of 16-bit gradients is not among them:
    see step_grad_copy_bytes."""
    precision = inp.precision
    zero = inp.zero_stage is not None and inp.zero_stage > 0 and not inp.distributed_optimizer
    if precision == "fp32":
        return 4.0, 4.0, 8.0, zero
    if inp.ds_bf16_optimizer_accum_bytes is not None:  # DeepSpeed's BF16_Optimizer: ZeRO-1-like
        return 2.0, 2.0 + inp.ds_bf16_optimizer_accum_bytes, 12.0, True
    if zero:
        return 2.0, 2.0, 12.0, True
    grad = float(inp.options.grad_reduce_bytes or (2 if precision == "fp16" else 4))
    # fp32 main params and Adam's two moments, or what --use-precision-aware-optimizer keeps of them
    return 2.0, grad, inp.optimizer_bytes or 12.0, False


def step_grad_copy_bytes(inp: ModelInput) -> float:
    """Bytes per parameter of the fp32 gradient copy the optimizer makes for its shard when gradients
    are 16-bit (fp16, bf16 with --grad-reduce-in-bf16, DeepSpeed ZeRO). It lives only in the optimizer
    step, after the backward has freed the activations: megatron-core's distributed optimizer sets
    `shard_main_param.grad = shard_model_grad.float()` in the step and `zero_grad` (first thing in
    train_step) drops it; DeepSpeed ZeRO-1/2 and 3 set the fp32 partition's `.grad` in `step()` and
    set it to None right after. (Megatron's docs table, 4 + 16/d for fp16, and DeepSpeed's
    estimators, 18 bytes, count it with the states, which is right for the step but not for the
    forward/backward peak.)"""
    if inp.ds_bf16_optimizer_accum_bytes is not None or inp.optimizer_bytes is not None:
        # BF16_Optimizer points .grad at its accumulation buffer (counted with the gradients); the
        # precision-aware optimizer steps on decoupled_grad = the gradient buffer's shard: no copy either
        return 0.0
    w, grad, _, zero = state_bytes(inp)
    return 4.0 if w == 2.0 and (zero or grad < 4) else 0.0


def stage_params(inp: ModelInput, c: ParamCounts, last: bool) -> tuple[float, float, float]:
    """(dense params, expert params, largest layer's params) one GPU of the first or last stage holds."""
    return rank_params(inp, c, end_rank(inp, last))


def rank_params(inp: ModelInput, c: ParamCounts, rank: int) -> tuple[float, float, float]:
    """(dense params, expert params, largest layer's params) one GPU of pipeline rank `rank` holds: its own
    layers, the embedding on rank 0, the output layer (or the tied embedding's copy), the final norm and the
    MTP layers on the last rank."""
    pp, tp = max(1, inp.pp), max(1, inp.tp)
    share = rank_layers(inp, rank) / max(1, inp.num_layers)
    dense_layers, moe_layers = c.num_dense * share, c.num_moe * share
    dense = dense_layers * (c.dense_layer_tp / tp + c.dense_layer_rep) + moe_layers * (
        c.moe_layer_tp / tp + c.moe_layer_rep
    )
    etp = inp.etp or tp
    experts = moe_layers * c.experts_per_layer / max(1, inp.ep * etp)
    if rank == 0:
        dense += c.embedding / tp + c.position
    if rank == pp - 1:
        # the multi-token prediction layers sit on the last stage (multi_token_prediction.py get_mtp_num_layers_to_build)
        k = inp.mtp_num_layers
        dense += k * (c.mtp_dense[0] / tp + c.mtp_dense[1])
        experts += k * c.mtp_experts / max(1, inp.ep * (inp.etp or tp))
        dense += (
            c.final_norm
            + c.output_bias / tp
            + (c.output / tp if inp.untie_embeddings else (c.embedding / tp if pp > 1 else 0))
        )
    largest = max(
        c.dense_layer_tp / tp + c.dense_layer_rep,
        c.moe_layer_tp / tp + c.moe_layer_rep + (c.experts_per_layer / max(1, inp.ep * etp) if c.num_moe else 0),
    )
    return dense, experts, largest


def largest_module_params(inp: ModelInput, c: ParamCounts) -> float:
    """Parameters of the largest module holding parameters directly, per GPU: the word embedding or
    output layer (V_pad*h/tp) or a layer's largest linear (the MLP's first, 2fh with SwiGLU)."""
    tp = max(1, inp.tp)
    h, f = inp.hidden_size, inp.ffn_width()
    return max(c.embedding, c.output, (2 if inp.swiglu else 1) * f * h) / tp


def gathered_bytes(inp: ModelInput, c: ParamCounts, largest_layer: float) -> tuple[float, float]:
    """Bytes of un-sharded (weights, gradients) a GPU holds beside its shards.

    DeepSpeed ZeRO-3 (and FSDP full shard, costed the same): the largest directly-parametered module's
    16-bit weights and gradients, 4L: `estimate_zero3_model_states_mem_needs` in
    deepspeed/runtime/zero/stage3.py (largest_layer_memory = 4 * largest_layer_params; deepspeed.md
    sec. 4.1); for Llama that module is the embedding or the output layer, not a transformer layer.
    Megatron-FSDP un-shards whole units (a transformer layer; the embedding and the output layer are
    units of their own) and keeps at most two of them un-sharded at once, parameters and gradients
    (docs/user-guide/features/megatron_fsdp.md, "Double Buffering"): the largest unit and a layer, with
    16-bit weights at optim_grads_params and the gradient buffer from optim_grads on.
    """
    level = inp.sharding_level()
    if not inp.megatron_fsdp:
        module = largest_module_params(inp, c) if level >= 3 else 0.0
        return 2.0 * module, 2.0 * module
    _, g_b, _, _ = state_bytes(inp)
    tp = max(1, inp.tp)
    units = max(largest_layer, (c.embedding + c.position) / tp, c.output / tp) + largest_layer
    return (2.0 * units if level >= 3 else 0.0), (g_b * units if level >= 2 else 0.0)


def activation_bytes_per_token(inp: ModelInput, moe: bool) -> tuple[float, float]:
    """(bytes kept per token for one layer with no recompute, bytes kept with full recompute)."""
    h, n, tp = inp.hidden_size, inp.num_attention_heads, max(1, inp.tp)
    d = inp.kv_channels or h // n
    g = inp.num_query_groups or n
    sp = tp if inp.sequence_parallel else 1
    # norm inputs and QKV/MLP inputs (4 x 2h) and the two residual dropouts' masks (2 x 1 B), which a
    # dropout of 0 does not keep: F.dropout(x, p=0) returns x itself, fused or not
    masks = 2.0 if inp.hidden_dropout > 0 else 0.0
    keep = (8.0 + masks) * h / sp + (
        mla_attention_bytes(inp) if inp.multi_latent_attention else (4 * n * d + 4 * g * d) / tp
    )
    if inp.options.flash_attention:
        keep += 4.0 * n / tp  # fp32 log-sum-exp per head and token
    elif "core_attn" not in recomputed_modules(inp):
        # the unfused core keeps softmax output (2 B), its dropout mask (1 B) and dropout output (2 B)
        # per score (with attention dropout 0, the output is the softmax output: 2 B); selective
        # recompute of core_attn exists to drop exactly these
        keep += (5.0 if inp.attention_dropout > 0 else 2.0) * n * inp.seq_length / tp
    mlp_factor = 6 if inp.swiglu else 4
    if inp.precision == "fp8":
        # Transformer Engine saves its fp8 GEMMs' inputs in fp8 for the backward (transformer_engine/pytorch/
        # module/linear.py, layernorm_linear.py, layernorm_mlp.py: the quantized input is what ctx keeps):
        # the norms' outputs feeding QKV and fc1 (1 B instead of 2: -2h/sp) and fc2's input, the activation
        # output (1 B instead of 2: -f); the projection's fp8 input is kept beside the bf16 attention
        # output the attention core saves for its own backward (+nd)
        keep += -2.0 * h / sp + n * (inp.v_head_dim if inp.multi_latent_attention else d) / tp
        mlp_factor -= 1
    if moe:
        fm = inp.moe_ffn_hidden_size or inp.ffn_hidden_size or 4 * h
        k = min(inp.moe_topk, inp.num_experts or 1)
        etp = inp.etp or tp
        keep += k * (2.0 * h * etp + (mlp_factor + expert_activation_extra_bytes(inp)) * fm) / tp
        keep += mlp_factor * inp.moe_shared_expert_size / tp + 4.0 * (inp.num_experts or 0) / sp
    else:
        keep += mlp_factor * inp.ffn_width() / tp
    return keep - selective_module_savings(inp, moe, mlp_factor), 2.0 * h / sp


# --recompute-modules the cost model knows (megatron/core/transformer/transformer_config.py recompute_modules); the
# others (gdn_norm_out, gdp_in_proj, gdp_qkv, mhc) leave the launch 'not modelled'
COSTED_RECOMPUTE_MODULES = frozenset(
    {"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"}
)


def recomputed_modules(inp: ModelInput) -> frozenset[str]:
    """The modules selective recompute recomputes: --recompute-modules, core_attn alone by default
    (TransformerConfig.__post_init__); none without --recompute-granularity selective."""
    return frozenset(inp.recompute_modules) if inp.recompute == "selective" else frozenset()


def selective_module_savings(inp: ModelInput, moe: bool, mlp_factor: int) -> float:
    """Bytes per token and layer that --recompute-modules frees beyond core_attn (activation_bytes_per_token's terms;
    megatron/core/transformer/transformer_layer.py and moe/moe_layer.py: "mlp", "moe" and "shared_experts" checkpoint
    the module and keep its input, which the layer keeps anyway; "moe_act", "layernorm" and "mla_up_proj" discard
    their outputs after the forward and recompute them before the backward, CheckpointWithoutOutput):
      mlp             a dense layer's fc1 input (2h, 1 B in fp8; /tp with SP) and the MLP's mlp_factor x f
      moe             a MoE layer's routed copies, shared experts and router logits: all of the MoE additions
      moe_act         the experts' activation output and the probability product, per routed copy
      shared_experts  the shared experts' mlp_factor x f_s
      layernorm       the outputs of the norms that are modules of their own: a MoE layer's pre_mlp_layernorm and
                      multi-latent attention's input_layernorm (2h each, /tp with SP; fused norms have none)
      mla_up_proj     multi-latent attention's query, key and value (the up projections' and rope's outputs)
    The one module rebuilt at a time during the backward is transient and not counted."""
    mods = recomputed_modules(inp)
    if not mods - {"core_attn"}:
        return 0.0
    h, tp = inp.hidden_size, max(1, inp.tp)
    sp = tp if inp.sequence_parallel else 1
    saved = 0.0
    if not moe and "mlp" in mods:
        saved += (1.0 if inp.precision == "fp8" else 2.0) * h / sp + mlp_factor * inp.ffn_width() / tp
    if moe:
        fm = inp.moe_ffn_hidden_size or inp.ffn_hidden_size or 4 * h
        k = min(inp.moe_topk, inp.num_experts or 1)
        shared = mlp_factor * inp.moe_shared_expert_size / tp
        if "moe" in mods:
            etp = inp.etp or tp
            saved += k * (2.0 * h * etp + (mlp_factor + expert_activation_extra_bytes(inp)) * fm) / tp
            saved += shared + 4.0 * (inp.num_experts or 0) / sp
        else:
            if "moe_act" in mods:
                saved += k * (2.0 + expert_activation_extra_bytes(inp)) * fm / tp
            if "shared_experts" in mods:
                saved += shared
        if "layernorm" in mods:
            saved += (1.0 if inp.precision == "fp8" else 2.0) * h / sp
    if inp.multi_latent_attention:
        if "layernorm" in mods:
            saved += (1.0 if inp.precision == "fp8" else 2.0) * h / sp
        if "mla_up_proj" in mods:
            q_head = inp.qk_head_dim + inp.qk_pos_emb_head_dim
            saved += (4.0 * inp.num_attention_heads * q_head + 2.0 * inp.num_attention_heads * inp.v_head_dim) / tp
    return saved


def mlp_part_bytes(inp: ModelInput) -> float:
    """Bytes per token the MLP half of a dense layer keeps (activation_bytes_per_token's MLP terms): the pre-MLP norm's
    input and fc1's input (2h each, fc1's 1 B in fp8; /tp with SP), the residual dropout's mask, and the MLP's
    4f (6f SwiGLU; one f less in fp8) over tp."""
    h, tp = inp.hidden_size, max(1, inp.tp)
    sp = tp if inp.sequence_parallel else 1
    fp8 = inp.precision == "fp8"
    norms = (3.0 if fp8 else 4.0) + (1.0 if inp.hidden_dropout > 0 else 0.0)
    factor = (6 if inp.swiglu else 4) - (1 if fp8 else 0)
    return norms * h / sp + factor * inp.ffn_width() / tp


def mamba_layer_bytes(inp: ModelInput) -> float:
    """Bytes per token one Mamba layer keeps for its backward (megatron/core/ssm/mamba_mixer.py MambaMixer.forward and
    _ssm_training, the memory-efficient path): in_proj's fused norm keeps its input and in_proj its normed input (2h
    each, /tp with SP); mamba_split_conv1d_scan_combined (mamba_ssm/ops/triton/ssd_combined.py
    MambaSplitConv1dScanCombinedFn) saves its zxBCdt input, the contiguous copy _ssm_training makes (2 B x (2 d_inner +
    2 groups x state + heads)), and the SSM's un-gated output out_x (2 d_inner), and recomputes the convolution and
    the scan; the gated RMSNorm keeps its input and out_proj its input (2 d_inner each); all of the mixer's over tp;
    the residual dropout's mask (h)."""
    h, tp = inp.hidden_size, max(1, inp.tp)
    sp = tp if inp.sequence_parallel else 1
    d_inner, heads, groups, state = mamba_dims(inp)
    mask = 1.0 if inp.hidden_dropout > 0 else 0.0
    return (4.0 + mask) * h / sp + (2.0 * (2 * d_inner + 2 * groups * state + heads) + 6.0 * d_inner) / tp


def hybrid_layer_bytes(inp: ModelInput, dense_full: float) -> float:
    """Bytes per token kept per layer of a hybrid stack, averaged over its pattern: a Mamba layer (mamba_layer_bytes),
    an attention layer (a dense layer without its MLP half) or an MLP layer (the MLP half, mlp_part_bytes)."""
    mlp = mlp_part_bytes(inp)
    per_symbol = {"M": mamba_layer_bytes(inp), "*": dense_full - mlp, "-": mlp}
    pattern = inp.hybrid_pattern or ""
    return sum(per_symbol[x] for x in pattern) / max(1, len(pattern))


def mtp_layer_bytes(inp: ModelInput, c: ParamCounts, saved_logit_bytes: float) -> float:
    """Bytes per token one multi-token prediction layer keeps at the loss's peak (megatron/core/transformer/
    multi_token_prediction.py MultiTokenPredictionLayer.forward and process_mtp_loss, which runs before the main
    loss): enorm's input, the embedding of the shifted tokens (2h) and its dropout mask (h), eh_proj's input, the
    concatenated normed halves (4h), the layer's own activations (a MoE layer where the decoder's last layer is
    one), final_layernorm's input and the output layer's input (4h), all h-wide terms /tp with SP, and the loss's
    saved logits (saved_logit_bytes per logit, V/tp)."""
    tp = max(1, inp.tp)
    sp = tp if inp.sequence_parallel else 1
    moe = bool(c.num_moe and moe_layer_flags(inp)[-1])
    layer, _ = activation_bytes_per_token(inp, moe)
    mask = 1.0 if inp.hidden_dropout > 0 else 0.0
    return (10.0 + mask) * inp.hidden_size / sp + layer + saved_logit_bytes * c.vocab_padded / tp


def decoder_tokens_share(inp: ModelInput) -> float:
    """Decoder tokens per encoder token: --decoder-seq-length / --encoder-seq-length for T5, else 1."""
    if not inp.encoder_decoder:
        return 1.0
    return (inp.decoder_seq_length or inp.seq_length) / max(1, inp.seq_length)


def encoder_decoder_layer_bytes(inp: ModelInput, encoder_full: float, encoder_ckpt: float) -> tuple[float, float]:
    """(bytes kept with no recompute, with full recompute) of one encoder layer and one decoder layer of T5, per
    encoder token (seq_length is --encoder-seq-length).

    The decoder layer (megatron/core/models/T5/t5_spec.py decoder_model_with_transformer_engine_default_spec) is a
    GPT layer over the decoder's s_d tokens (activation_bytes_per_token with s_d as the sequence) plus a
    cross-attention (megatron/core/transformer/transformer_layer.py forward; attention.py CrossAttention), per
    decoder token: pre_cross_attn_layernorm's input and linear_q's input (2h each, /tp with SP), the residual
    dropout's mask (h), Q and the attention output (2nd each, /tp), and the core's statistics (4n/tp with flash
    attention) or, unfused, its s_d x s_e scores as activation_bytes_per_token counts them; per encoder token, the
    K and V linear_kv makes of the encoder's output in every decoder layer (2gd each, /tp)."""
    h, n, tp = inp.hidden_size, inp.num_attention_heads, max(1, inp.tp)
    d = inp.kv_channels or h // n
    g = inp.num_query_groups or n
    sp = tp if inp.sequence_parallel else 1
    share = decoder_tokens_share(inp)
    decoder_full, decoder_ckpt = activation_bytes_per_token(
        inp.replace(seq_length=round(inp.seq_length * share)), False
    )
    cross = (4.0 + (1.0 if inp.hidden_dropout > 0 else 0.0)) * h / sp + 4.0 * n * d / tp
    if inp.options.flash_attention:
        cross += 4.0 * n / tp
    elif "core_attn" not in recomputed_modules(inp):
        cross += (5.0 if inp.attention_dropout > 0 else 2.0) * n * inp.seq_length / tp
    full = encoder_full + share * (decoder_full + cross) + 4.0 * g * d / tp
    return full, encoder_ckpt + share * decoder_ckpt


def mla_attention_bytes(inp: ModelInput) -> float:
    """Bytes per token multi-latent attention keeps beyond its norm's input and the down projections' input (which
    the dense layer's 4h counts as it counts QKV's): the latents the up projections keep as inputs, q_lora_rank and
    kv_lora_rank wide (2 B each, /tp with SP; twice that with --qk-layernorm, whose fused norm keeps its input and its
    output), and what the core attention keeps, the contiguous query and key, n(qk + rope) each, the value, n v, and
    the output linear_proj keeps, n v (2 B each, /tp) (megatron/core/transformer/multi_latent_attention.py
    MLASelfAttention.get_query_key_value_tensors: query, key and value made contiguous after the rope)."""
    tp = max(1, inp.tp)
    sp = tp if inp.sequence_parallel else 1
    n, q_head = inp.num_attention_heads, inp.qk_head_dim + inp.qk_pos_emb_head_dim
    latents = (inp.q_lora_rank or 0) + inp.kv_lora_rank
    return (4.0 if inp.qk_layernorm else 2.0) * latents / sp + (4.0 * n * q_head + 4.0 * n * inp.v_head_dim) / tp


def expert_activation_extra_bytes(inp: ModelInput) -> float:
    """Bytes per routed token copy and expert-MLP unit the experts' activation keeps beyond the dense MLP's, which
    --recompute-modules moe_act frees: the probability product (routed_probs_product_bytes) and, with a clamp
    (ModelInput.activation_clamp), the clamped copy of the gated fc1 output (2 x 2 B), which the fused quick-GeGLU
    saves while the clamps' backward keeps the fc1 output itself (megatron/core/fusions/fused_bias_geglu.py
    weighted_bias_quick_geglu_impl and WeightedQuickGeGLUFunction, core_v0.17.0)."""
    return routed_probs_product_bytes(inp) + (4.0 if inp.activation_clamp and inp.swiglu else 0.0)


def routed_probs_product_bytes(inp: ModelInput) -> float:
    """Bytes per routed token copy and expert-MLP unit kept beyond the dense MLP's for the router's
    probabilities, which the experts multiply into the activation's output (megatron/core/transformer/moe/
    experts.py, TEGroupedMLP.forward bias_act_func; SequentialMLP's MLP the same way through per_token_scale):
    without a fused kernel the product's backward keeps the activation's output (2 B) besides the product that
    fc2 keeps. Gated (SwiGLU) experts run weighted_bias_swiglu_impl, which keeps only its input, unless
    --no-bias-swiglu-fusion: then the GLU's two halves' product and the activation are kept too (2 + 2 B).
    Non-gated activations have no fused weighted kernel in TEGroupedMLP (it rejects them)."""
    if not inp.swiglu:
        return 2.0
    return 4.0 if not inp.options.bias_swiglu_fusion else 0.0


def stage_memory(inp: ModelInput, c: ParamCounts, num_microbatches: int, last: bool) -> dict[str, float]:
    """weights, grads, optimizer, activations (bytes) of one GPU of the first (last=False) or last
    pipeline stage; with pp == 1 both are the one stage (pass last=False)."""
    return rank_memory(inp, c, num_microbatches, end_rank(inp, last))


def rank_memory(inp: ModelInput, c: ParamCounts, num_microbatches: int, rank: int) -> dict[str, float]:
    """weights, grads, optimizer, activations (bytes) of one GPU of pipeline rank `rank` (0 to pp - 1)."""
    return _rank_parts(inp, c, num_microbatches, rank)[0]


def stage_steady_bytes(inp: ModelInput, c: ParamCounts, last: bool) -> float:
    """What the first or last stage's GPU holds between steps (rank_steady_bytes)."""
    return rank_steady_bytes(inp, c, end_rank(inp, last))


def rank_steady_bytes(inp: ModelInput, c: ParamCounts, rank: int) -> float:
    """What the rank's GPU holds between steps, when Megatron logs mem-allocated-bytes (training_log, after
    the optimizer step): the weights, gradient buffers and optimizer states, and the step's fp32 gradient
    copies, which the optimizer leaves on its main parameters' .grad until the next step's zero_grad."""
    parts, step_copy = _rank_parts(inp, c, 1, rank)
    return (
        parts["weights"] + parts["grads"] + parts["optimizer"] - max(0.0, step_copy - parts["activations"]) + step_copy
    )


def _rank_parts(inp: ModelInput, c: ParamCounts, num_microbatches: int, rank: int) -> tuple[dict[str, float], float]:
    """rank_memory's parts and the step's fp32 gradient copy (bytes)."""
    w_b, g_b, o_b, zero = state_bytes(inp)
    pp, tp = max(1, inp.pp), max(1, inp.tp)
    # the dp x cp group the states are sharded over (its inner part under hybrid sharding), the expert-data-
    # parallel group for the experts', and the optimizer's (the whole group at --outer-dp-sharding-strategy optim)
    shard, expert_dp = inp.shard_group(), inp.expert_shard_group()
    outer = max(1, inp.dp_outer) if inp.outer_optimizer_sharded else 1
    opt_shard, opt_expert_dp = shard * outer, expert_dp * outer
    tokens = inp.micro_batch * inp.seq_length / max(1, inp.cp)
    sp = tp if inp.sequence_parallel else 1
    holds_output = rank == pp - 1  # the output layer and the loss (and the embedding too without a pipeline)
    layers = rank_layers(inp, rank)

    dense, experts, largest = rank_params(inp, c, rank)
    weights = (dense + experts) * w_b + fp8_weight_cache_bytes(inp, c, layers)
    grads = (dense + experts) * g_b
    level = inp.sharding_level()
    if zero or (inp.sharding is not None and not inp.megatron_fsdp and level >= 2):
        # ZeRO / FSDP partitions over the whole data-parallel group, which with DeepSpeed-Ulysses (costed as
        # cp) is the sequence-data-parallel group dp x sp (deepspeed/runtime/sequence_parallel/parallel_state_sp.py)
        optimizer = (dense + experts) * o_b / shard if level >= 1 else (dense + experts) * o_b
        if level >= 2:
            grads /= shard
        if level >= 3:
            gathered_w, gathered_g = gathered_bytes(inp, c, largest)
            weights = weights / shard + gathered_w
            grads += gathered_g
            if inp.hpz_partition > 1:  # ZeRO++ hpZ's secondary copy (partition_parameters.py _partition_param_sec)
                weights += (dense + experts) * w_b / inp.hpz_partition
        weights, grads, optimizer = _offloaded(
            inp, weights, grads, optimizer, gathered_bytes(inp, c, largest) if level >= 3 else (0.0, 0.0)
        )
    elif inp.megatron_fsdp:
        # Megatron-FSDP keeps Megatron's states (bf16 weights, fp32 main grads unless
        # --grad-reduce-in-bf16, fp32 master + Adam) and shards them over the dp x cp group (experts
        # over the expert-data-parallel group) as its strategy says, plus the unsharded units in flight
        optimizer = dense * o_b / opt_shard + experts * o_b / opt_expert_dp if level >= 1 else (dense + experts) * o_b
        if level >= 2:
            grads = dense * g_b / shard + experts * g_b / expert_dp
        if level >= 3:
            weights = dense * w_b / shard + experts * w_b / expert_dp
        gathered_w, gathered_g = gathered_bytes(inp, c, largest)
        weights += gathered_w
        grads += gathered_g
    elif inp.distributed_optimizer:
        optimizer = dense * o_b / shard + experts * o_b / expert_dp
    else:
        optimizer = (dense + experts) * o_b
    # sharded as the optimizer is; none on the GPU when the optimizer steps on the CPU
    step_copy = 0.0 if inp.offload_optimizer else optimizer * step_grad_copy_bytes(inp) / o_b

    moe_share = c.num_moe / inp.num_layers if inp.num_layers else 0.0
    full, ckpt = activation_bytes_per_token(inp, False)
    if c.num_moe:
        moe_full, _ = activation_bytes_per_token(inp, True)
        full = (1 - moe_share) * full + moe_share * moe_full
    if inp.encoder_decoder:
        full, ckpt = encoder_decoder_layer_bytes(inp, full, ckpt)
    if hybrid_modelled(inp):
        full = hybrid_layer_bytes(inp, full)
    # tokens of the decoder, which the embedding also runs and the output layer and the loss see (T5)
    out_tokens = tokens * decoder_tokens_share(inp)
    v = inp.vpp or 1
    chunk_layers = layers / v
    if inp.recompute == "full":
        r = inp.recompute_num_layers or 1
        if inp.recompute_method == "block":
            frac = min(1.0, r / max(1e-9, chunk_layers))
            per_layer, working = frac * ckpt + (1 - frac) * full, full
        else:  # uniform: one checkpoint per r layers, r layers rebuilt at a time
            per_layer, working = ckpt / r, r * full
    else:
        per_layer, working = full, 0.0
    in_flight = rank_layers_in_flight(inp, num_microbatches, rank)
    acts = tokens * (in_flight * per_layer + working)
    if rank == 0 and inp.hidden_dropout > 0:
        # the embedding output's dropout mask (1 B per element; Megatron's embedding dropout is
        # --hidden-dropout), /tp with sequence parallel
        embedded = tokens + (out_tokens if inp.encoder_decoder else 0.0)
        acts += embedded * inp.hidden_size / sp * embedding_microbatches(inp, num_microbatches)
    output, at_the_loss = output_stage_bytes(inp, c, num_microbatches, tokens) if holds_output else (0.0, 0.0)
    acts += output
    # the peak is at the loss or, where the unfused core's backward holds more than the loss did, at the backward
    # of the stage's last layer
    acts = max(acts, acts - at_the_loss + unfused_core_backward_bytes(inp))
    # the step's fp32 gradient copy takes the place of the freed activations: it adds only its excess
    optimizer += max(0.0, step_copy - acts)
    return {"weights": weights, "grads": grads, "optimizer": optimizer, "activations": acts}, step_copy


def output_stage_bytes(inp: ModelInput, c: ParamCounts, num_microbatches: int, tokens: float) -> tuple[float, float]:
    """(activation bytes the output stage adds, the part of them the loss holds for the micro-batch in flight,
    which is gone before that micro-batch's layers run their backward): the final norm's input and the output
    layer's input (2 B each, /tp with SP) and the logits at the loss (loss_logit_bytes) of one micro-batch, except
    under GPipe, whose last stage runs every forward before the first backward and keeps what the loss saved for
    each earlier one; the encoder's final norm (T5), deferred embedding wgrad inputs and MTP layers."""
    tp = max(1, inp.tp)
    sp = tp if inp.sequence_parallel else 1
    out_tokens = tokens * decoder_tokens_share(inp)
    gpipe = max(1, inp.pp) > 1 and schedule_name(inp.options.pipeline_schedule, inp.vpp) == "gpipe"
    outputs = max(1, num_microbatches) if gpipe else 1
    at_loss, saved = loss_logit_bytes(inp)
    at_the_loss = out_tokens * (4.0 * inp.hidden_size / sp + c.vocab_padded / tp * at_loss)
    acts = outputs * out_tokens * 4.0 * inp.hidden_size / sp
    acts += out_tokens * c.vocab_padded / tp * (at_loss + (outputs - 1) * saved)
    if inp.encoder_decoder:
        # the encoder's final norm: its input and its output, the encoder_hidden_states every decoder layer's
        # cross-attention linear_kv keeps as its input (one tensor, saved by reference)
        acts += tokens * 4.0 * inp.hidden_size / sp
    acts += deferred_wgrad_bytes(inp, c, num_microbatches)
    acts += out_tokens * inp.mtp_num_layers * mtp_layer_bytes(inp, c, saved)
    return acts, at_the_loss


# Bytes per GEMM weight of Transformer Engine's fp8 weight cache per recipe: an fp8 copy for the forward and
# its transpose for the backward's data gradient (1 + 1) with per-tensor scaling (delayed, tensorwise);
# mxfp8 adds an 8-bit scale per 32 values to each (1/32 + 1/32); blockwise one fp32 scale per 128x128 block
# of the weight (negligible).
FP8_WEIGHT_CACHE_BYTES = {"delayed": 2.0, "tensorwise": 2.0, "mxfp8": 2.0 + 2.0 / 32, "blockwise": 2.0}
# The per-tensor recipes' fp8 tensor (Float8Tensor) keeps its transpose only where the GPU's fp8 GEMMs take the
# TN layout alone: Transformer Engine's is_non_tn_fp8_gemm_supported() (transformer_engine/pytorch/utils.py) holds
# for compute capability 10.x and 13+ (Blackwell), and there Float8TensorBase.update_usage (transformer_engine/
# pytorch/tensor/_internal/float8_tensor_base.py) serves columnwise use from the data itself and drops the
# transpose; mxfp8 and blockwise quantize columnwise data of their own (other scales) on every GPU.
PER_TENSOR_FP8_RECIPES = frozenset({"delayed", "tensorwise"})


def fp8_transpose_dropped(inp: ModelInput) -> bool:
    """Whether Transformer Engine keeps no fp8 transpose of a GEMM weight: a per-tensor recipe on a GPU whose fp8
    GEMMs take every layout (PER_TENSOR_FP8_RECIPES)."""
    if inp.options.fp8_recipe not in PER_TENSOR_FP8_RECIPES:
        return False
    gpu = lookup_gpu(inp.gpu)
    if gpu is None or not gpu.compute_capability:
        return False
    major = int(gpu.compute_capability.split(".")[0])
    return 10 <= major < 12 or major >= 13


def fp8_weight_cache_bytes(inp: ModelInput, c: ParamCounts, stage_layers: float) -> float:
    """Transformer Engine's fp8 copies of the layers' GEMM weights (the tensor-parallel part of each layer and the
    experts), kept across the micro-batches of a step and between steps: Megatron passes is_first_microbatch,
    and TE's modules cache the quantized weight and its transpose in their _fp8_workspaces (transformer_engine/
    pytorch/module/base.py get_weight_workspace with cache_name "weight"). The output layer and the embedding are
    Megatron's own layers and stay 16-bit. With --fp8-param-gather the weights are built as TE's fp8 tensors
    (fp8_model_init in megatron/core/transformer/transformer_block.py's TE spec): the fp8 data and its transpose
    (1 + 1 B) take the place of the 16-bit weight (2 B) counted with the weights, and nothing is cached. Where the
    transpose is dropped (fp8_transpose_dropped: Blackwell, per-tensor scaling) each GEMM weight is 1 B less: the
    cache is 1 B, and an fp8 parameter 1 B instead of the 2 counted with the weights (a negative adjustment)."""
    if inp.precision != "fp8":
        return 0.0
    dropped = 1.0 if fp8_transpose_dropped(inp) else 0.0
    if inp.options.fp8_param_gather and not dropped:
        return 0.0
    tp = max(1, inp.tp)
    share = stage_layers / max(1, inp.num_layers)
    dense_layers, moe_layers = c.num_dense * share, c.num_moe * share
    etp = inp.etp or tp
    gemm = dense_layers * c.dense_layer_tp / tp + moe_layers * (
        c.moe_layer_tp / tp + c.experts_per_layer / max(1, inp.ep * etp)
    )
    if inp.options.fp8_param_gather:
        return -gemm * dropped
    return gemm * (FP8_WEIGHT_CACHE_BYTES.get(inp.options.fp8_recipe, 2.0) - dropped)


def loss_logit_bytes(inp: ModelInput) -> tuple[float, float]:
    """(bytes per logit at the loss's peak, bytes per logit kept for the backward) on the output stage.

    Megatron's GPTModel (megatron/core/models/gpt/gpt_model.py, compute_language_model_loss) still holds the
    output layer's 16-bit logits (2 B) while the loss runs, and only drops them when the forward returns:
      native  tensor_parallel.vocab_parallel_cross_entropy (megatron/core/tensor_parallel/cross_entropy.py,
              VocabParallelCrossEntropy.calculate_logits_max) makes an fp32 copy (4 B) and takes exp and
              the softmax in place on it: 2 + 4 at the peak, the fp32 softmax (4 B) saved. The backward
              turns that softmax into the gradient in place and casts it to 16 bits: 4 + 2 again.
      fused   --cross-entropy-loss-fusion (megatron/core/fusions/fused_cross_entropy.py) runs the same steps as
              three functions compiled by jit_fuser (torch.compile from torch 2.2, megatron/core/jit.py), each
              returning a new tensor that the forward's local names keep until it returns: the fp32 copy
              (calculate_logits_max), exp_logits (calculate_predicted_logits) and the softmax
              (calculate_cross_entropy_loss): 2 + 4 + 4 + 4 at the peak; the softmax (4) saved.
      te      --cross-entropy-fusion-impl te: Transformer Engine's parallel_cross_entropy writes the gradient
              into the 16-bit logits in its forward (transformer_engine/pytorch/cross_entropy.py) and keeps
              them: 2, and 2 saved.
    fp32 training (no 16-bit logits): 4 B logits, the copy is the same tensor."""
    if inp.precision == "fp32":
        return 4.0, 4.0
    kind = inp.options.cross_entropy
    if kind == "te":
        return 2.0, 2.0
    return (14.0 if kind == "fused" else 6.0), 4.0


def deferred_wgrad_bytes(inp: ModelInput, c: ParamCounts, num_microbatches: int) -> float:
    """--defer-embedding-wgrad-compute: the output layer appends its input (2h per token, /tp with SP) to
    embedding_activation_buffer in each forward and its 16-bit logit gradient (2V/tp) to grad_output_buffer in each
    backward, up to --wgrad-deferral-limit micro-batches (0: all), and computes the weight gradient from them after
    the last one (megatron/core/tensor_parallel/layers.py ColumnParallelLinear.forward and
    LinearWithGradAccumulationAndAsyncCommunication.backward). At the last micro-batch's loss the earlier ones'
    are held: min(m - 1, limit)."""
    limit = inp.options.wgrad_deferral_limit
    if limit is None:
        return 0.0
    m = max(1, num_microbatches)
    held = m - 1 if limit == 0 else min(m - 1, limit)
    sp = max(1, inp.tp) if inp.sequence_parallel else 1
    tokens = inp.micro_batch * inp.seq_length / max(1, inp.cp)
    return held * tokens * (2.0 * inp.hidden_size / sp + 2.0 * c.vocab_padded / max(1, inp.tp))


def fused_softmax_runs(inp: ModelInput) -> bool:
    """Whether the unfused core's softmax runs Megatron's fused scale-mask-softmax kernel rather than torch's softmax
    (megatron/core/fusions/fused_softmax.py FusedScaleMaskSoftmax.is_kernel_available, core_v0.16.1: the fusion on, a
    16-bit input, 16 < sk <= 4096, sq, sk and the batch x heads on this GPU multiples of 4)."""
    sq = inp.seq_length / max(1, inp.cp)
    heads = inp.num_attention_heads / max(1, inp.tp)
    return (
        inp.options.masked_softmax_fusion
        and inp.precision in ("bf16", "fp16")
        and 16 < inp.seq_length <= 4096
        and sq % 4 == 0
        and inp.seq_length % 4 == 0
        and (inp.micro_batch * heads) % 4 == 0
    )


def unfused_core_backward_bytes(inp: ModelInput) -> float:
    """Bytes one layer's unfused attention core (no flash) holds beyond the activations it saved while its backward
    runs, for one micro-batch on this GPU (megatron/core/transformer/dot_product_attention.py forward: softmax,
    attention dropout, then bmm with V), per score of its heads:
      2     the gradient of the probabilities, which bmm's backward returns as a new tensor
      +2    a second such tensor beside it: attention dropout's backward (p > 0) returns one, and so does torch's
            softmax backward; the fused softmax kernel's backward writes into its input ("backward pass is
            completely in-place", megatron/fused_kernels/scaled_upper_triang_masked_softmax_cuda.cu bwd_cuda)
      +5|2  under selective recompute of core_attn, the rebuilt core's softmax output, dropout mask and dropout
            output (5; the softmax output alone at attention dropout 0), which activation_bytes_per_token drops
    The first layer to run its backward does so with every other activation of the micro-batch still held."""
    if inp.options.flash_attention:
        return 0.0
    per_score = 2.0
    if inp.attention_dropout > 0 or not fused_softmax_runs(inp):
        per_score += 2.0
    if "core_attn" in recomputed_modules(inp):
        per_score += 5.0 if inp.attention_dropout > 0 else 2.0
    heads = inp.num_attention_heads / max(1, inp.tp)
    return per_score * inp.micro_batch * heads * inp.seq_length * inp.seq_length / max(1, inp.cp)


def attention_score_buffer_bytes(inp: ModelInput) -> float:
    """Megatron's own DotProductAttention (--transformer-impl local, --attention-backend local) multiplies
    Q by K into a buffer taken from the global memory buffer (parallel_state.get_global_memory_buffer()
    .get_tensor((b*np, sq, sk)), megatron/core/transformer/dot_product_attention.py forward), which is
    allocated once and kept for the run: 2 B per score of one micro-batch's heads on this GPU."""
    heads = inp.num_attention_heads / max(1, inp.tp)
    return 2.0 * inp.micro_batch * heads * inp.seq_length * inp.seq_length / max(1, inp.cp)


# cuBLAS's recommended workspace: 4 MiB before Hopper, 32 MiB from Hopper on (cuBLAS documentation,
# cublasSetWorkspace); Transformer Engine allocates one of that size as a torch tensor for its GEMMs
# (transformer_engine/pytorch/module/base.py get_cublas_workspace_size_bytes: 32 MiB at compute
# capability >= 9, else 4 MiB), so it counts in torch.cuda.max_memory_allocated().
CUBLAS_WORKSPACE_BYTES = {"hopper+": 32 * 2**20, "older": 4 * 2**20}


def workspace_bytes(inp: ModelInput, hopper_or_later: bool) -> float:
    """Buffers inside the caching allocator that live for the whole run, beside the states: Transformer
    Engine's cuBLAS workspace, PyTorch's own cuBLAS workspaces (torch_cublas_workspace_bytes), and Megatron's
    own attention's Q.K^T buffer (attention_score_buffer_bytes)."""
    te = (
        float(CUBLAS_WORKSPACE_BYTES["hopper+" if hopper_or_later else "older"])
        if inp.options.transformer_engine
        else 0.0
    )
    return (
        te
        + torch_cublas_workspace_bytes(inp, hopper_or_later)
        + (attention_score_buffer_bytes(inp) if inp.options.attention_score_buffer else 0.0)
    )


# PyTorch's cuBLAS workspace per handle and stream when CUBLAS_WORKSPACE_CONFIG is not set (aten/src/ATen/cuda/
# CublasHandlePool.cpp parseChosenWorkspaceSize: ":4096:8", 32 MiB, on Hopper and Blackwell (compute capability
# 9 to 12), else ":4096:2:16:8", 8 MiB + 128 KiB); cuBLASLt shares it (getCUDABlasLtWorkspace, unified by default)
TORCH_CUBLAS_WORKSPACE_BYTES = {"hopper+": 4096 * 1024 * 8, "older": 4096 * 1024 * 2 + 16 * 1024 * 8}
# Handles that take one: the forward's, on the Python thread, and the backward's, on autograd's device thread
# (DeviceThreadHandlePool reserves a handle per thread; getNewWorkspace allocates one per handle and stream)
TORCH_CUBLAS_HANDLES = 2


def torch_cublas_workspace_bytes(inp: ModelInput, hopper_or_later: bool) -> float:
    """PyTorch's cuBLAS workspaces, which getNewWorkspace takes from the caching allocator (so they count in
    torch.cuda.memory_allocated()) for each cuBLAS handle and stream that runs a GEMM through PyTorch (Megatron's own
    linears, the output layer among them): TORCH_CUBLAS_HANDLES of the size CUBLAS_WORKSPACE_CONFIG sets
    (Options.torch_cublas_workspace), else PyTorch's default for the GPU."""
    size = inp.options.torch_cublas_workspace
    if size is None:
        size = TORCH_CUBLAS_WORKSPACE_BYTES["hopper+" if hopper_or_later else "older"]
    return float(TORCH_CUBLAS_HANDLES * size)


def _offloaded(
    inp: ModelInput, weights: float, grads: float, optimizer: float, gathered: tuple[float, float]
) -> tuple[float, float, float]:
    """DeepSpeed ZeRO with its states in host memory (zero_optimization.offload_optimizer / offload_param
    device cpu), as DeepSpeed's own estimators count the GPU (deepspeed/runtime/zero/stage_1_and_2.py
    estimate_zero2_model_states_mem_needs: 2P with the optimizer offloaded; stage3.py
    estimate_zero3_model_states_mem_needs: 4L + 2P/N with the optimizer offloaded, 4L with the parameters too;
    shared/reference/deepspeed.md sec. 4.1): the optimizer states and the gradient partitions live on the CPU,
    the GPU keeps the 16-bit weights (their partition at stage 3, none of them with offload_param) and the
    gathered module's weights and gradients."""
    if not inp.offload_optimizer:
        return weights, grads, optimizer
    gathered_w, gathered_g = gathered
    if inp.offload_param and (inp.zero_stage or 0) >= 3:
        return gathered_w, gathered_g, 0.0
    return weights, gathered_g, 0.0


def host_memory_bytes(inp: ModelInput, c: ParamCounts) -> float | None:
    """Host memory per node for the model states DeepSpeed offloads, by DeepSpeed's own estimators as they are
    (plint.cost.host_memory: estimate_zero2_model_states_mem_needs, estimate_zero3_model_states_mem_needs with
    zero.Init, as Hugging Face and Megatron-DeepSpeed build ZeRO-3 models), applied to the parameters of one
    model-parallel rank (each offloads its own shard of the model). None without CPU offload."""
    from plint.cost.host_memory import offload_host_bytes

    if not inp.offload_optimizer or not inp.zero_stage:
        return None
    model_parallel = max(1, inp.tp * inp.pp)
    return offload_host_bytes(
        c.total / model_parallel, inp.zero_stage, True, inp.offload_param, max(1, inp.gpus_per_node), max(1, inp.nnodes)
    )


def rank_memories(inp: ModelInput, c: ParamCounts, num_microbatches: int) -> dict[int, dict[str, float]]:
    """weights, grads, optimizer, activations (bytes) of each rank that can hold the peak (candidate_ranks), by
    pipeline rank: {0: ...} without a pipeline."""
    return {rank: rank_memory(inp, c, num_microbatches, rank) for rank in candidate_ranks(inp)}


def memory_bytes(inp: ModelInput, c: ParamCounts, num_microbatches: int) -> dict[str, float]:
    """weights, grads, optimizer, activations (bytes) of the most loaded pipeline rank's GPU (the earliest on a
    tie)."""
    ranks = rank_memories(inp, c, num_microbatches)
    return ranks[max(ranks, key=lambda rank: (sum(ranks[rank].values()), -rank))]
