"""Parameters counted the way Megatron-LM builds the model.

Per transformer layer (shared/reference/megatron.md sec. 4.2; d = kv_channels, n heads, g query groups):
  attention   QKV h*(n*d + 2*g*d) + projection n*d*h; biases (n*d + 2*g*d) on QKV when
              add_bias_linear or --add-qkv-bias, h on the projection when add_bias_linear
  MLP         fc1 h*f*(2 with SwiGLU: gate and up), fc2 f*h; biases f*(1|2) and h
  norms       two per layer, h weights each (+h biases for LayerNorm, none for RMSNorm); with
              --qk-layernorm two more over one head's width d (q_layernorm, k_layernorm)
  MoE layer   router h*E (+E bias when add_bias_linear), E experts of width f_m (each an MLP as
              above), shared experts of total width f_s
Model: word embedding V_pad*h (V padded to a multiple of make_vocab_size_divisible_by*tp), learned
position embedding max_pos*h when used, a final norm, and a second V_pad*h output layer when untied.

Also what one GPU holds of it (TP shards the matrices and column-parallel biases; norms and
row-parallel biases are replicated; routed experts are split over ep*etp).

Checked against megatron-core 0.16.1's GPTModel built on the meta device for GPT-, Llama-, Qwen-
and MoE-shaped models (tests/cost/test_megatron_parity.py). Megatron's own theoretical estimate
(training/theoretical_memory_usage.py) leaves out the linear biases, the position embedding and the
QK norms; this count does not (the parity test of the memory model says where that matters).
"""

from __future__ import annotations

from plint.cost.model_input import ModelInput


class ParamCounts:
    """Plain numbers (no record machinery: the estimator builds one per call)."""

    __slots__ = (
        "active",
        "active_experts_per_layer",
        "dense_layer",
        "dense_layer_rep",
        "dense_layer_tp",
        "embedding",
        "experts_per_layer",
        "final_norm",
        "moe_layer",
        "moe_layer_rep",
        "moe_layer_tp",
        "mtp_dense",
        "mtp_experts",
        "num_dense",
        "num_moe",
        "output",
        "output_bias",
        "position",
        "total",
        "vocab_padded",
    )

    # the attributes, declared for type checkers (__slots__ alone declares no type); count_params sets them all.
    # The dense layer is an average over the pattern of a hybrid stack, hence a float.
    active: float
    active_experts_per_layer: int
    dense_layer: float
    dense_layer_rep: float
    dense_layer_tp: float
    embedding: int
    experts_per_layer: int
    final_norm: int
    moe_layer: int
    moe_layer_rep: int
    moe_layer_tp: int
    mtp_dense: tuple[float, float]
    mtp_experts: int
    num_dense: int
    num_moe: int
    output: int
    output_bias: int
    position: int
    total: float
    vocab_padded: int

    def __repr__(self) -> str:
        return "ParamCounts(" + ", ".join(f"{k}={getattr(self, k)}" for k in self.__slots__) + ")"


def padded_vocab(vocab: int, tp: int, divisible_by: int = 128) -> int:
    """Megatron pads the vocabulary to a multiple of divisible_by * tp (megatron.md sec. 1.3)."""
    multiple = max(1, divisible_by) * max(1, tp)
    return -(-vocab // multiple) * multiple


def moe_layer_flags(inp: ModelInput) -> list[bool]:
    """Which layers are MoE layers (--moe-layer-freq: an int k makes layer i MoE when i % k == 0)."""
    layers = inp.num_layers
    if not inp.num_experts:
        return [False] * layers
    freq = inp.moe_layer_freq
    if isinstance(freq, tuple):
        pattern = [bool(x) for x in freq[:layers]]
        return pattern + [True] * (layers - len(pattern))
    k = max(1, int(freq))
    return [i % k == 0 for i in range(layers)]


def _mlp(h: int, width: int, gated: bool, bias: bool) -> tuple[int, int, int]:
    """(TP-sharded weights and biases, replicated biases, total) of one MLP."""
    up = width * (2 if gated else 1)
    sharded = h * up + width * h + (up if bias else 0)
    replicated = h if bias else 0
    return sharded, replicated, sharded + replicated


HYBRID_MODELLED_SYMBOLS = frozenset("M*-")  # Mamba, attention and MLP layers; MoE ('E') and others are not costed


def hybrid_modelled(inp: ModelInput) -> bool:
    """Whether the input is a hybrid stack whose every layer the cost model knows (HYBRID_MODELLED_SYMBOLS)."""
    pattern = inp.hybrid_pattern
    if not pattern:
        return False
    return set(pattern) <= HYBRID_MODELLED_SYMBOLS


def mamba_dims(inp: ModelInput) -> tuple[int, int, int, int]:
    """(d_inner, heads, groups, state dim) of the Mamba mixer (megatron/core/ssm/mamba_mixer.py MambaMixer.__init__:
    d_inner = expand (2) x h, or heads x head dim when --mamba-num-heads is given; heads = d_inner / head dim)."""
    heads = inp.mamba_num_heads
    d_inner = heads * inp.mamba_head_dim if heads else 2 * inp.hidden_size
    return d_inner, heads or d_inner // inp.mamba_head_dim, inp.mamba_num_groups, inp.mamba_state_dim


def mamba_layer_params(inp: ModelInput, norm: int) -> tuple[int, int]:
    """(TP-sharded, replicated) parameters of one Mamba layer (hybrid_layer_specs.py hybrid_stack_spec: MambaLayer whose
    mixer's in_proj is a TELayerNormColumnParallelLinear). MambaMixer (bias=False): in_proj h x (2 d_inner + 2 groups
    x state + heads) for z, x, B, C and dt; conv1d over d_inner + 2 groups x state channels, kernel 4 (d_conv) plus
    a bias; dt_bias, A_log and D one per head; the gated RMSNorm's d_inner weights; out_proj d_inner x h. All of
    it is split over TP (heads and groups divide by tp); the fused input norm is replicated."""
    h = inp.hidden_size
    d_inner, heads, groups, state = mamba_dims(inp)
    conv_channels = d_inner + 2 * groups * state
    sharded = (
        h * (2 * d_inner + 2 * groups * state + heads) + conv_channels * (4 + 1) + 3 * heads + d_inner + d_inner * h
    )
    return sharded, norm


def _hybrid_layer_means(
    inp: ModelInput, attention: tuple[int, int], mlp: tuple[int, int], norm: int
) -> tuple[float, float]:
    """(TP-sharded, replicated) parameters per layer of the hybrid stack, averaged over its pattern: an attention
    layer is a TransformerLayer with the self-attention alone and its fused input norm, an MLP layer (MLPLayer) the
    MLP alone with its fused norm."""
    per_symbol = {"M": mamba_layer_params(inp, norm), "*": attention, "-": mlp}
    pattern = inp.hybrid_pattern or ""
    layers = max(1, len(pattern))
    return (sum(per_symbol[x][0] for x in pattern) / layers, sum(per_symbol[x][1] for x in pattern) / layers)


def mla_params(inp: ModelInput, per_elem: int) -> tuple[int, int]:
    """(TP-sharded, replicated) parameters of multi-latent attention's projections (megatron/core/transformer/
    multi_latent_attention.py MLASelfAttention.__init__; megatron/core/models/gpt/gpt_layer_specs.py: the down
    projections are TELinear, duplicated on every TP rank; the up projections column-parallel, with the q/kv
    layernorm fused in under --qk-layernorm and IdentityOp without; all without bias): linear_q_down_proj h x q_lora_rank
    and linear_q_up_proj q_lora_rank x n(qk + rope) (or linear_q_proj h x n(qk + rope) without a q rank),
    linear_kv_down_proj h x (kv_lora_rank + rope), linear_kv_up_proj kv_lora_rank x n(qk + v), linear_proj n v x h.
    The projection's bias and the layer's norms are the caller's."""
    h, n = inp.hidden_size, inp.num_attention_heads
    q_head = inp.qk_head_dim + inp.qk_pos_emb_head_dim
    rq, rkv = inp.q_lora_rank, inp.kv_lora_rank
    sharded = (rq or h) * n * q_head + rkv * n * (inp.qk_head_dim + inp.v_head_dim) + n * inp.v_head_dim * h
    replicated = (h * rq if rq else 0) + h * (rkv + inp.qk_pos_emb_head_dim)
    if inp.qk_layernorm:
        replicated += per_elem * ((rq or 0) + rkv)
    return sharded, replicated


def mtp_layer_params(
    inp: ModelInput, c: ParamCounts, moe_flags: list[bool], norm: int
) -> tuple[tuple[float, float], int]:
    """((TP-sharded, replicated), routed experts) parameters of one multi-token prediction layer (megatron/core/
    transformer/multi_token_prediction.py MultiTokenPredictionLayer.__init__: enorm, hnorm and final_layernorm, eh_proj
    a column-parallel 2h x h without bias, and a transformer layer of the decoder's last layer's spec,
    gpt_layer_specs.py get_gpt_mtp_block_spec_for_backend: spec.layer_specs[-1]); the embedding and the output
    layer are the model's own."""
    if not inp.mtp_num_layers:
        return (0, 0), 0
    h = inp.hidden_size
    moe = bool(moe_flags and moe_flags[-1])
    layer = (c.moe_layer_tp, c.moe_layer_rep) if moe else (c.dense_layer_tp, c.dense_layer_rep)
    return (2 * h * h + layer[0], 3 * norm + layer[1]), (c.experts_per_layer if moe else 0)


def count_params(inp: ModelInput, qk_layernorm: bool | None = None) -> ParamCounts:
    """Parameters of the model `inp` describes. `qk_layernorm` (--qk-layernorm) defaults to the
    input's field of that name when it has one, else False."""
    if qk_layernorm is None:
        qk_layernorm = bool(getattr(inp, "qk_layernorm", False))
    h, n = inp.hidden_size, inp.num_attention_heads
    d = inp.kv_channels or h // n
    g = inp.num_query_groups or n
    f = inp.ffn_width()
    per_elem = 2 if inp.normalization.lower() == "layernorm" else 1  # weight (+ bias for LayerNorm)
    norm = per_elem * h
    bias = inp.add_bias_linear
    qkv = n * d + 2 * g * d
    attn_tp = h * qkv + n * d * h + (qkv if (bias or inp.add_qkv_bias) else 0)
    attn_rep = (h if bias else 0) + 2 * norm  # projection bias and the two norms of the layer
    if qk_layernorm:
        attn_rep += 2 * per_elem * d  # q and k norms over one head (replicated across TP)
    if inp.multi_latent_attention:
        attn_tp, attn_rep = mla_params(inp, norm // h)
        attn_rep += (h if bias else 0) + 2 * norm
    mlp_tp, mlp_rep, _ = _mlp(h, f, inp.swiglu, bias)

    c = ParamCounts()
    c.vocab_padded = padded_vocab(inp.vocab_size, inp.tp, inp.make_vocab_size_divisible_by)
    c.embedding = c.vocab_padded * h
    position = inp.options.position_embedding
    learned = position == "learned_absolute" or (position is None and inp.max_position_embeddings is not None)
    c.position = (inp.max_position_embeddings or inp.seq_length) * h if learned else 0
    c.output = c.embedding if inp.untie_embeddings else 0
    c.output_bias = 0
    c.final_norm = norm
    c.dense_layer_tp, c.dense_layer_rep = attn_tp + mlp_tp, attn_rep + mlp_rep
    if inp.encoder_decoder:
        # T5 (megatron/core/models/T5/t5_model.py T5Model.__init__): a "layer" here is an encoder layer and a
        # decoder layer, the decoder's with a pre-cross-attention norm and a cross-attention (t5_spec.py: linear_q,
        # linear_kv, linear_proj; megatron/core/transformer/attention.py CrossAttention: q n*d wide, kv 2*g*d);
        # the encoder and the decoder block each end in a final norm; the tied output layer (T5LMHead) keeps a
        # column-parallel bias of V_pad (bias=share_embeddings_and_output_weights)
        cross_tp = h * n * d + h * 2 * g * d + n * d * h + ((n * d + 2 * g * d) if bias else 0)
        cross_rep = (h if bias else 0) + norm
        c.dense_layer_tp, c.dense_layer_rep = 2 * c.dense_layer_tp + cross_tp, 2 * c.dense_layer_rep + cross_rep
        c.final_norm = 2 * norm
        c.output_bias = 0 if inp.untie_embeddings else c.vocab_padded
    c.dense_layer = c.dense_layer_tp + c.dense_layer_rep

    if hybrid_modelled(inp):
        c.dense_layer_tp, c.dense_layer_rep = _hybrid_layer_means(
            inp, (attn_tp, attn_rep - norm), (mlp_tp, mlp_rep + norm), norm
        )
        c.dense_layer = c.dense_layer_tp + c.dense_layer_rep
    flags = moe_layer_flags(inp)
    c.num_moe = sum(flags)
    c.num_dense = inp.num_layers - c.num_moe
    if c.num_moe:
        experts = inp.num_experts or 0
        fm = inp.moe_ffn_hidden_size or f
        _, _, one_expert = _mlp(h, fm, inp.swiglu, bias)
        c.experts_per_layer = experts * one_expert
        c.active_experts_per_layer = min(inp.moe_topk, experts) * one_expert
        shared_tp, shared_rep, _ = (
            _mlp(h, inp.moe_shared_expert_size, inp.swiglu, bias) if inp.moe_shared_expert_size else (0, 0, 0)
        )
        c.moe_layer_tp = attn_tp + shared_tp
        # the router (and its bias) is replicated
        c.moe_layer_rep = attn_rep + shared_rep + h * experts + (experts if bias else 0)
    else:
        c.experts_per_layer = c.active_experts_per_layer = 0
        c.moe_layer_tp = c.moe_layer_rep = 0
    c.moe_layer = c.moe_layer_tp + c.moe_layer_rep
    c.mtp_dense, c.mtp_experts = mtp_layer_params(inp, c, flags, norm)
    blocks = c.num_dense * c.dense_layer + c.num_moe * c.moe_layer
    outer = c.embedding + c.position + c.output + c.output_bias + c.final_norm
    mtp = inp.mtp_num_layers * (c.mtp_dense[0] + c.mtp_dense[1] + c.mtp_experts)
    c.total = blocks + c.num_moe * c.experts_per_layer + outer + mtp
    c.active = blocks + c.num_moe * c.active_experts_per_layer + outer + mtp
    return c
