"""plint's memory model against Megatron-LM's theoretical memory report.

`_megatron_states` and `_megatron_activations` below restate, in this file's own words, what Megatron's
report_theoretical_memory prints (megatron/training/theoretical_memory_usage.py, NVIDIA/Megatron-LM
main as of 2026-08; summarised in shared/reference/megatron.md sec. 4.2):

  weights+optimizer of the most loaded rank (pipeline stage 0):
    per layer, biases ignored: attention 2h^2(1 + g/n)(nd/h); dense MLP 2hf (x3/2 SwiGLU); shared
    experts 2h f_s (x3/2); routed experts 2h f_m E (x3/2); two norms 2h*ns (ns = 1 RMSNorm, 2
    LayerNorm); router hE (+E with add_bias_linear); final norm ns*h; embedding hV (one copy, a
    second only when untied and pp == 1); no position embedding.
    shard = (TP-split part / pp + embedding) / tp + replicated part / pp + experts / pp / (ep*etp)
    bytes = 18 per parameter, or 6 + 12/dp with the distributed optimizer (dp WITHOUT cp); experts
    6 + 12/edp, edp = world / (pp*ep*etp). It assumes bf16 (no fp16/fp32 branch).
  activations of stage 0:
    (a) sequence parallel AND selective recompute: per layer s*b*h*(18 + 4f/h), times num_layers,
        + 8*s*b*pp (input ids) + s*b*h*pp (embedding dropout), times (1 + (pp-1)/(pp*v)) when
        interleaved else min(1, m/pp) when pp > 1; + 4*s*b*h*(1 + V/h) when pp == 1; all / tp.
    (b) anything else: per layer s*b*h*(10 + 24/tp), the same embedding and pipeline terms (not / tp),
        + 2*(s*b*V/tp + s*b*h) when pp == 1, all times 1.05.

Every test asserts plint == Megatron + the differences, each named and derived by hand; the numbers
pinned at the end are worked out by hand as well. Megatron also leaves out the runtime reserve
(CUDA context, workspaces, NCCL buffers: Options.runtime_reserve_gib, which estimate.py adds) and
allocator fragmentation (Options.fragmentation), so it is compared here with plint's memory_bytes /
stage_memory, which do not include them either.
"""

from __future__ import annotations

import pytest
from plint.cost import ModelInput, Options, count_params, padded_vocab
from plint.cost.memory import memory_bytes, stage_memory

ROPE = Options(position_embedding="rope")


# ---------------------------------------------------------------- Megatron's formula, restated ----
def _megatron_states(inp: ModelInput) -> float:
    h, n, L = inp.hidden_size, inp.num_attention_heads, inp.num_layers
    d = inp.kv_channels or h // n
    g = inp.num_query_groups or n
    f = inp.ffn_hidden_size or 4 * h
    gate = 1.5 if inp.swiglu else 1.0
    ns = 1 if inp.normalization == "RMSNorm" else 2
    tp, pp, ep = inp.tp, inp.pp, inp.ep
    etp = inp.etp or tp
    vocab = padded_vocab(inp.vocab_size, tp, inp.make_vocab_size_divisible_by)
    attention = 2 * h * h * (1 + g / n) * (n * d / h)
    norms = 2 * h * ns
    if inp.num_experts:
        E = inp.num_experts
        freq = inp.moe_layer_freq
        pattern = list(freq) if isinstance(freq, tuple) else [1 if i % freq == 0 else 0 for i in range(L)]
        moe_layers = sum(pattern)
        routed = 2 * h * (inp.moe_ffn_hidden_size or f) * E * gate
        router = h * E + (E if inp.add_bias_linear else 0)
    else:
        moe_layers, routed, router = 0, 0.0, 0
    dense_layers = L - moe_layers
    shared = 2 * h * inp.moe_shared_expert_size * gate
    split = (attention + 2 * h * f * gate) * dense_layers + (attention + shared) * moe_layers
    replicated = norms * dense_layers + (norms + router) * moe_layers + ns * h
    experts = routed * moe_layers
    embedding = h * vocab
    tp_part = (split / pp + embedding) / tp
    if inp.untie_embeddings and pp == 1:
        tp_part += embedding / tp
    rep_part = replicated / pp
    exp_part = experts / pp / (etp * ep)
    dp = inp.world_size // (tp * pp * inp.cp)
    edp = inp.world_size // (etp * ep * pp)

    def per_param(group: int) -> float:
        return 6 + 12 / group if inp.distributed_optimizer else 18

    return (tp_part + rep_part) * per_param(dp) + exp_part * per_param(edp)


def _megatron_activations(inp: ModelInput, m: int) -> float:
    s, b, h, L = inp.seq_length, inp.micro_batch, inp.hidden_size, inp.num_layers
    f = inp.ffn_hidden_size or 4 * h
    tp, pp, v = inp.tp, inp.pp, inp.vpp
    vocab = padded_vocab(inp.vocab_size, tp, inp.make_vocab_size_divisible_by)
    branch_a = inp.sequence_parallel and inp.recompute == "selective"
    per_layer = s * b * h * (18 + 4 * f / h) if branch_a else s * b * h * (10 + 24 / tp)
    total = per_layer * L + 8 * s * b * pp + s * b * h * pp
    if v is not None:
        total *= 1 + (pp - 1) / (pp * v)
    elif pp > 1:
        total *= min(1, m / pp)
    if branch_a:
        if pp == 1:
            total += 4 * s * b * h * (1 + vocab / h)
        return total / tp
    if pp == 1:
        total += 2 * (s * b * vocab / tp + s * b * h)
    return total * 1.05


def _plint_states(inp: ModelInput, last: bool = False) -> float:
    mem = stage_memory(inp, count_params(inp), 8, last=last)
    return mem["weights"] + mem["grads"] + mem["optimizer"]


def _plint_acts(inp: ModelInput, m: int, last: bool = False) -> float:
    return stage_memory(inp, count_params(inp), m, last=last)["activations"]


LLAMA = ModelInput(
    num_layers=32,
    hidden_size=4096,
    num_attention_heads=32,
    num_query_groups=8,
    seq_length=8192,
    vocab_size=128256,
    ffn_hidden_size=14336,
    swiglu=True,
    untie_embeddings=True,
    normalization="RMSNorm",
    add_bias_linear=False,
    max_position_embeddings=8192,
    options=ROPE,
    tp=2,
    nnodes=1,
    gpus_per_node=8,
)
GPT3 = ModelInput(
    num_layers=96,
    hidden_size=12288,
    num_attention_heads=96,
    seq_length=2048,
    vocab_size=51200,
    max_position_embeddings=2048,
    tp=8,
    pp=8,
    sequence_parallel=True,
    recompute="selective",
    micro_batch=1,
    global_batch=64,
    nnodes=8,
    gpus_per_node=8,
)
MOE = ModelInput(
    num_layers=16,
    hidden_size=2048,
    num_attention_heads=16,
    num_query_groups=4,
    seq_length=4096,
    vocab_size=151936,
    ffn_hidden_size=8192,
    swiglu=True,
    normalization="RMSNorm",
    add_bias_linear=False,
    num_experts=64,
    moe_topk=8,
    moe_ffn_hidden_size=768,
    moe_shared_expert_size=1536,
    moe_layer_freq=(0, 1, 1, 1) * 4,
    untie_embeddings=True,
    options=ROPE,
    tp=2,
    ep=8,
    etp=1,
    sequence_parallel=True,
    distributed_optimizer=True,
    nnodes=2,
    gpus_per_node=8,
)


# ---------------------------------------------------------------- weights + optimizer ----
def test_states_equal_for_a_bias_free_rope_model_on_one_stage():
    # RMSNorm, no biases, RoPE, untied, pp = 1: both count the same tensors the same way
    assert _plint_states(LLAMA) == pytest.approx(_megatron_states(LLAMA), rel=1e-12)
    sharded = LLAMA.replace(distributed_optimizer=True)
    assert _plint_states(sharded) == pytest.approx(_megatron_states(sharded), rel=1e-12)


def test_states_equal_for_moe_with_expert_parallel_and_distributed_optimizer():
    # experts / (ep*etp) with their optimizer over edp = 16/(1*8*1) = 2, the rest over dp = 16/2 = 8
    assert _plint_states(MOE) == pytest.approx(_megatron_states(MOE), rel=1e-12)


def test_states_differ_by_the_final_norm_megatron_spreads_over_stages():
    # Megatron puts the final norm (h, RMSNorm) into the block it divides by pp, so stage 0 carries h/pp
    # of it; in the real model it sits whole on the last stage (plint's last-stage figure has it)
    inp = LLAMA.replace(pp=2, nnodes=2)
    assert _megatron_states(inp) - _plint_states(inp) == pytest.approx(18 * 4096 / 2, rel=1e-9)


def test_states_differ_by_biases_and_learned_positions():
    # GPT-3 shapes at tp=8, pp=8: Megatron ignores the linear biases and the position embedding.
    # plint stage 0 has 12 layers; per layer the column-parallel biases (QKV 3h, fc1 4h) split over
    # tp and the row-parallel ones (projection h, fc2 h) replicated: 7h/8 + 2h; positions 2048*h.
    # Megatron instead charges h*2/8 of the final LayerNorm (ns*h / pp) to stage 0.
    h = 12288
    extra = 12 * (7 * h / 8 + 2 * h) + 2048 * h - 2 * h / 8
    assert _plint_states(GPT3) - _megatron_states(GPT3) == pytest.approx(18 * extra, rel=1e-9)


def test_states_differ_by_context_parallel_in_the_optimizer_shard():
    # cp = 2 on 8 GPUs with tp = 2: dp = 2. DDP shards over dp*cp = 4; Megatron's report divides by dp.
    inp = LLAMA.replace(cp=2, distributed_optimizer=True)
    params = _megatron_states(LLAMA) / 18  # the shard's parameter count (pp = 1, identical model)
    assert _megatron_states(inp) - _plint_states(inp) == pytest.approx(12 * params * (1 / 2 - 1 / 4), rel=1e-9)


# ---------------------------------------------------------------- activations ----
def test_gpt3_activations_branch_a():
    # SP + selective, MHA, f = 4h: per token per layer both have 34h/tp; plint adds flash attention's
    # fp32 log-sum-exp (4n/tp) and leaves out the 8 bytes of input ids Megatron charges per token
    # and in-flight micro-batch. Both keep L layer-sets and pp embedding masks (m = 8 = pp).
    s, b, n, L, tp, pp = 2048, 1, 96, 96, 8, 8
    diff = s * b * L * 4 * n / tp - 8 * s * b * pp / tp
    assert _plint_acts(GPT3, 8) - _megatron_activations(GPT3, 8) == pytest.approx(diff, rel=1e-9)
    # with m = 4 < pp both scale everything by m/pp = 1/2
    assert _plint_acts(GPT3, 4) - _megatron_activations(GPT3, 4) == pytest.approx(diff / 2, rel=1e-9)


def test_gpt3_activations_interleaved():
    # v = 2: both keep L*(1 + (pp-1)/(pp*v)) layer-sets on stage 0 (plint: (pp-1)*2 + (v-1)*pp + 1 = 23
    # chunks of 6 layers = 138 = 96 * 1.4375). The embedding terms differ: Megatron scales pp masks
    # and ids by 1.4375 (11.5 micro-batches); plint keeps min(m, 2pp) = 16 masks and no ids.
    inp = GPT3.replace(vpp=2)
    s, b, h, n, L, tp, pp = 2048, 1, 12288, 96, 96, 8, 8
    factor = 1 + 7 / 16
    diff = s * b * L * factor * 4 * n / tp + s * b * h * (16 - pp * factor) / tp - 8 * s * b * pp * factor / tp
    assert _plint_acts(inp, 16) - _megatron_activations(inp, 16) == pytest.approx(diff, rel=1e-9)


def test_gqa_swiglu_one_stage_branch_a():
    # Llama shapes, tp = 2, SP + selective, pp = 1. Per token and layer Megatron has (18h + 4f)/tp,
    # which assumes n*d = h, g = n and a single fc1 output; plint has 10h + 4nd + 4gd + 4n + 6f.
    # Difference per layer: (4nd + 4gd - 8h + 4n + 2f)/tp = (4*4096 + 4*1024 - 8*4096 + 128 + 28672)/2.
    # Output terms: Megatron 4h + 4V per token (/ tp), plint 4h + 6V (the 16-bit logits beside the loss's
    # fp32 copy, issue 23); the embedding differs by Megatron's 8 bytes of ids.
    inp = LLAMA.replace(sequence_parallel=True, recompute="selective")
    s, b, L, tp = 8192, 1, 32, 2
    per_layer = (4 * 4096 + 4 * 1024 - 8 * 4096 + 4 * 32 + 2 * 14336) / tp
    assert per_layer == 8256
    V = 128256
    diff = s * b * (L * per_layer - 8 / tp + 2 * V / tp)
    assert _plint_acts(inp, 1) - _megatron_activations(inp, 1) == pytest.approx(diff, rel=1e-9)


def test_branch_b_without_sequence_parallel():
    # tp = 2, no SP, no recompute, MHA f = 4h (GPT-3 shapes, 4 layers, pp = 1). Megatron: per layer
    # sbh(10 + 24/tp), + 8sb ids + sbh mask + 2(sbV/tp + sbh) output, x1.05 for temporaries. plint: the
    # same layer terms + 4n/tp, no ids, 16-bit logits and their fp32 copy 6V/tp (Megatron 2 bytes) and 4h for the
    # final norm's and output layer's inputs (Megatron 2h); no 1.05.
    inp = GPT3.replace(num_layers=4, tp=2, pp=1, sequence_parallel=False, recompute=None, nnodes=1)
    s, b, h, n, L, tp, V = 2048, 1, 12288, 96, 4, 2, 51200
    assert padded_vocab(51200, 2) == V
    without_overhead = _megatron_activations(inp, 1) / 1.05
    diff = s * b * (L * 4 * n / tp - 8 + 4 * V / tp + 2 * h)
    assert _plint_acts(inp, 1) - without_overhead == pytest.approx(diff, rel=1e-9)


def test_branch_b_with_sequence_parallel_but_no_selective_recompute():
    # Megatron takes branch (b) whenever selective recompute is off, so with SP it keeps the 10h of
    # each layer and the embedding mask whole on every TP rank; plint divides them by tp.
    inp = GPT3.replace(num_layers=4, tp=4, pp=1, recompute=None, nnodes=1)
    s, b, h, n, L, tp, V = 2048, 1, 12288, 96, 4, 4, 51200
    without_overhead = _megatron_activations(inp, 1) / 1.05
    diff = s * b * (L * (4 * n / tp - 10 * h * (1 - 1 / tp)) - 8 - h * (1 - 1 / tp) + 4 * V / tp + 4 * h / tp - 2 * h)
    assert _plint_acts(inp, 1) - without_overhead == pytest.approx(diff, rel=1e-9)


def test_full_recompute_megatron_does_not_model():
    # Megatron's report ignores full recompute (branch (b) as if nothing were recomputed). plint keeps
    # each layer's input (2h/tp with SP) for the 12 layers of stage 0 and each of the pp = 8 micro-
    # batches in flight, plus one layer's full set while it is rebuilt, plus the embedding masks.
    inp = GPT3.replace(recompute="full", recompute_method="uniform", recompute_num_layers=1)
    s, h, n, tp = 2048, 12288, 96, 8
    layer = 34 * h / tp + 4 * n / tp  # 52,272 bytes per token
    expected = s * (96 * 2 * h / tp + layer + 8 * h / tp)
    assert expected == 2048 * (294_912 + 52_272 + 12_288)
    assert _plint_acts(inp, 8) == expected
    assert _megatron_activations(inp, 8) > 5 * expected  # Megatron: ~10h per layer kept on every rank


# ---------------------------------------------------------------- numbers pinned by hand ----
def test_gpt3_175b_pinned_by_hand():
    # Megatron branch (a), stage 0 of tp=8, pp=8, m=8: (sbh*34*L + 8sb*pp + sbh*pp)/tp
    #   = (2048*12288*34*96 + 8*2048*8 + 2048*12288*8) / 8
    #   = (82,141,249,536 + 131,072 + 201,326,592) / 8 = 10,292,838,400 bytes
    assert _megatron_activations(GPT3, 8) == 10_292_838_400
    # plint: 2048 * (96 * (52,224 + 48) + 8 * 1536) = 2048 * (5,018,112 + 12,288) = 10,302,259,200
    assert _plint_acts(GPT3, 8) == 10_302_259_200
    # states: Megatron stage 0 = 18 * ((96/8 * 12h^2 + 51200 h) / 8 + (96 * 4h + 2h) / 8)
    h = 12288
    #   12 * 12h^2 = 144 * 150,994,944 = 21,743,271,936; 51200 h = 629,145,600; sum / 8 = 2,796,552,192
    #   replicated LayerNorms (96 layers x 4h + final 2h) / 8 = 386 * 12288 / 8 = 592,896
    params = (12 * 12 * h * h + 51200 * h) / 8 + (96 * 4 * h + 2 * h) / 8
    assert params == 2_796_552_192 + 592_896
    assert _megatron_states(GPT3) == 18 * params


def test_megatron_reports_stage_zero_plint_reports_the_larger():
    # untied Llama with pp = 4, m = 1: stage 0 holds one micro-batch (1F1B with m < pp) and the
    # last stage holds the output layer, its inputs and the fp32 logits, so plint reports the last
    inp = LLAMA.replace(pp=4, nnodes=4)
    c = count_params(inp)
    first, last = stage_memory(inp, c, 1, last=False), stage_memory(inp, c, 1, last=True)
    assert sum(last.values()) > sum(first.values())
    assert memory_bytes(inp, c, 1) == last
