"""Parameter and FLOP counts against numbers worked out by hand from the published shapes."""

import pytest
from plint.cost import ModelInput, count_params, flops_per_token, padded_vocab

LLAMA3_8B = ModelInput(
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
)
GPT3_175B = ModelInput(
    num_layers=96,
    hidden_size=12288,
    num_attention_heads=96,
    seq_length=2048,
    vocab_size=50257,
    max_position_embeddings=2048,
)


def test_llama3_8b_is_8_03_billion():
    h, kv, f, v = 4096, 8 * 128, 14336, 128256
    attention = h * (h + 2 * kv) + h * h  # QKV with 8 KV groups, output projection, no biases
    mlp = 3 * h * f  # gate, up, down
    norms = 2 * h  # two RMSNorms (weights only)
    expected = 32 * (attention + mlp + norms) + 2 * v * h + h  # untied embedding and output, final norm
    assert expected == 8_030_261_248
    assert count_params(LLAMA3_8B).total == expected


def test_gpt3_175b_with_biases_layernorm_and_learned_positions():
    h = 12288
    per_layer = 12 * h * h + 13 * h  # 4h^2+4h attention, 8h^2+5h MLP, 2 x 2h LayerNorm
    vocab = 50304  # 50257 padded to a multiple of 128
    expected = 96 * per_layer + vocab * h + 2048 * h + 2 * h
    assert count_params(GPT3_175B).total == expected
    assert round(expected / 1e9, 1) == 174.6  # the count the GPT-3 paper and SC21 print


def test_vocab_padding_follows_tensor_parallel_size():
    assert padded_vocab(50257, 1) == 50304
    assert padded_vocab(50257, 8) == 51200  # multiple of 128 * 8
    assert padded_vocab(128256, 1) == 128256  # already a multiple of 128


def test_moe_counts_shared_experts_layer_frequency_and_active_params():
    base = {
        "num_layers": 4,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "seq_length": 128,
        "vocab_size": 256,
        "ffn_hidden_size": 256,
        "swiglu": True,
        "normalization": "RMSNorm",
        "add_bias_linear": False,
    }
    dense = count_params(ModelInput(**base))
    moe = count_params(
        ModelInput(
            **base, num_experts=8, moe_topk=2, moe_ffn_hidden_size=32, moe_shared_expert_size=64, moe_layer_freq=2
        )
    )
    h = 64
    expert = 3 * h * 32
    shared = 3 * h * 64
    router = h * 8
    # layers 0 and 2 are MoE (i % 2 == 0): their dense MLP is replaced by router + shared + 8 experts
    assert moe.num_moe == 2
    assert moe.total == dense.total + 2 * (router + shared + 8 * expert - 3 * h * 256)
    assert moe.active == moe.total - 2 * 6 * expert  # top-2 of 8 experts are active


def test_flops_per_token_as_megatron_counts_them():
    # 6*h*e*f*L + 6*h*d*(2n+2g)*L + 6*h*V + 6*d*n*s*L (causal), Megatron >= 0.12, megatron.md sec. 4.1
    mlp, proj, head, core = 33_822_867_456, 8_053_063_680, 3_152_019_456, 6_442_450_944
    assert flops_per_token(LLAMA3_8B) == mlp + proj + head + core
    assert flops_per_token(LLAMA3_8B, "megatron_old") == mlp + proj + head + 2 * core  # full attention


def test_old_convention_equals_the_sc21_closed_form():
    gpt = GPT3_175B.replace(vocab_size=51200)  # SC21 uses V = 51200
    L, h, s, V = 96, 12288, 2048, 51200
    sc21_no_recompute = 72 * L * h * h * (1 + s / (6 * h) + V / (12 * h * L))
    sc21_with_recompute = 96 * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    assert flops_per_token(gpt, "megatron_old") == pytest.approx(sc21_no_recompute, rel=1e-12)
    assert flops_per_token(gpt, "megatron_old", recompute="full") == pytest.approx(sc21_with_recompute, rel=1e-12)


def test_unknown_convention_is_refused():
    with pytest.raises(ValueError):
        flops_per_token(LLAMA3_8B, "palm")


def test_vocab_padding_honours_make_vocab_size_divisible_by():
    # multiple = divisible_by * tp: 50257 -> ceil(50257/512)*512 = 99*512 = 50688 at tp=4
    assert padded_vocab(50257, 4) == 50688
    assert padded_vocab(50257, 1, 64) == 50304  # ceil(50257/64) = 786; 786*64 = 50304
    assert padded_vocab(50257, 2, 1) == 50258  # divisible_by 1 still pads to a multiple of tp


def test_qk_layernorm_kv_channels_and_qkv_bias_by_hand():
    # h=64, 8 heads of d=16 (n*d = 128 != h), 4 query groups, RMSNorm, no linear biases but --add-qkv-bias
    from plint.cost import Options

    inp = ModelInput(
        num_layers=2,
        hidden_size=64,
        num_attention_heads=8,
        num_query_groups=4,
        kv_channels=16,
        seq_length=64,
        vocab_size=300,
        ffn_hidden_size=160,
        swiglu=True,
        normalization="RMSNorm",
        add_bias_linear=False,
        add_qkv_bias=True,
        options=Options(position_embedding="rope"),
    )
    qkv = 8 * 16 + 2 * 4 * 16  # 128 + 128 = 256 output features
    attention = 64 * qkv + qkv + 128 * 64  # QKV weight and bias, projection 128 -> 64
    mlp = 3 * 64 * 160
    layer = attention + mlp + 2 * 64
    assert layer == 16_384 + 256 + 8192 + 30_720 + 128 == 55_680
    vocab = 384  # 300 padded to 128
    assert count_params(inp).total == 2 * layer + vocab * 64 + 64  # tied, final RMSNorm
    # --qk-layernorm: per layer an RMSNorm over one head for Q and one for K: 2 * 16 weights
    assert count_params(inp, qk_layernorm=True).total == count_params(inp).total + 2 * 2 * 16


def test_router_bias_and_learned_positions_by_hand():
    # LayerNorm, biases on, learned positions (max 32), tied; layer 1 of 2 is MoE with 4 experts of f=64
    inp = ModelInput(
        num_layers=2,
        hidden_size=32,
        num_attention_heads=4,
        seq_length=32,
        vocab_size=200,
        ffn_hidden_size=64,
        num_experts=4,
        moe_topk=2,
        moe_layer_freq=(0, 1),
        max_position_embeddings=32,
    )
    h, f = 32, 64
    attention = 3 * h * h + 3 * h + h * h + h  # 4,224
    mlp = h * f + f + f * h + h  # 4,192
    norms = 2 * 2 * h  # two LayerNorms, weight and bias
    dense = attention + mlp + norms
    moe = attention + norms + h * 4 + 4 + 4 * mlp  # router weight and bias, four experts
    total = dense + moe + 256 * h + 32 * h + 2 * h  # embedding (200 -> 256) 8,192, positions 1,024, norm 64
    assert (dense, moe) == (8_544, 21_252)
    assert count_params(inp).total == total == 39_076
    # with RoPE instead the position table goes away
    from plint.cost import Options

    rope = inp.replace(options=Options(position_embedding="rope"))
    assert count_params(rope).total == total - 32 * h
