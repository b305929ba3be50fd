"""Step time of model families beyond the GPT decoder (issues 23/24), against numbers worked out by hand: T5's
decoder stack with its cross-attention and its LM head over the decoder's tokens, a hybrid stack's Mamba,
attention-only and MLP-only layers, and the host's dispatch of both."""

import pytest
from plint.catalog.hardware import lookup_gpu
from plint.cost import ModelInput, count_params
from plint.cost.estimate import (
    _cross_attention,
    _Kernels,
    _mamba_layer,
    _stage_microbatch,
)
from plint.cost.host_dispatch import host_microbatch_s

# h=64, 4 heads of d=16, f=256, two layers; encoder 32 tokens, decoder 8; V=1000 (padded to 1024)
T5_SMALL = ModelInput(
    num_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    seq_length=32,
    vocab_size=1000,
    ffn_hidden_size=256,
    max_position_embeddings=32,
    encoder_decoder=True,
    decoder_seq_length=8,
    gpus_per_node=1,
)
# a Mamba layer (head dim 16, 2 groups, state 8: d_inner 128, 8 heads), an attention layer and an MLP layer
HYBRID_SMALL = ModelInput(
    num_layers=3,
    hidden_size=64,
    num_attention_heads=4,
    seq_length=32,
    vocab_size=1000,
    ffn_hidden_size=256,
    hybrid_pattern="M*-",
    mamba_head_dim=16,
    mamba_num_groups=2,
    mamba_state_dim=8,
    gpus_per_node=1,
)


def _unit_kernels(inp: ModelInput, tokens: float) -> _Kernels:
    """Round rates for hand arithmetic: GEMMs and attention at 1 TFLOP/s flat (no ramp), HBM at 1 GB/s, one GPU."""
    return _Kernels(inp, None, tokens, 1, 1e12, 1e12, 1.0, 1.0, 0.0, 1e9, 1, 0.0)


def test_t5_cross_attention_forward():
    """linear_q over the 8 decoder tokens 2 x 8 x 64 x 64 = 65,536 FLOPs, linear_kv over the 32 encoder tokens
    2 x 32 x 128 x 64 = 524,288, linear_proj 65,536: 0.65536 us; the core, not causal, 4 x 8 x 32 x 16 x 4 =
    65,536 FLOPs: 0.065536 us; the norm, residual, Q and output 2 x 8 x (5 x 64 + 2 x 64) = 7,168 B: 7.168 us."""
    enc = _unit_kernels(T5_SMALL, 32)
    dec = _unit_kernels(T5_SMALL.replace(seq_length=8), 8)
    assert _cross_attention(enc, dec) == pytest.approx(0.65536e-6 + 0.065536e-6 + 7.168e-6)


def test_mamba_layer_forward():
    """in_proj 2 x 32 x 296 x 64 = 1,212,416 FLOPs and out_proj 2 x 32 x 64 x 128 = 524,288: 1.736704 us. Per
    token: conv1d and scan 2 x (3 x 160 + 8 + 4 x 128) = 2,000 B, the fp32 chunk states 16 x 128 x 8 / 128 = 128 B,
    the fused norm and residual 10 x 64 = 640 B: 2,768 B x 32 tokens = 88,576 B: 88.576 us."""
    assert _mamba_layer(_unit_kernels(HYBRID_SMALL, 32)) == pytest.approx(1.736704e-6 + 88.576e-6)


def test_t5_microbatch_counts_the_decoder_and_its_head():
    """A T5 layer pair costs more than its encoder layer by the decoder layer over 8 tokens and the
    cross-attention; the LM head runs over the 8 decoder tokens: 3 x 2 x 8 x 1024 x 64 FLOPs (= 3.145728 us) + the
    fp32 cross-entropy 24 x 8 x 1024 B (= 196.608 us). Before: a GPT stack over 32 tokens (its head 4x that)."""
    c = count_params(T5_SMALL)
    pair = _stage_microbatch(_unit_kernels(T5_SMALL, 32), c)
    gpt = T5_SMALL.replace(encoder_decoder=False, decoder_seq_length=None)
    encoder = _stage_microbatch(_unit_kernels(gpt, 32), count_params(gpt))
    assert pair["head"] == pytest.approx(3.145728e-6 + 196.608e-6)
    enc = _unit_kernels(T5_SMALL, 32)
    dec = _unit_kernels(T5_SMALL.replace(seq_length=8), 8)
    decoder_gpt = _stage_microbatch(_unit_kernels(gpt.replace(seq_length=8), 8), count_params(gpt))
    expected = encoder["compute"] + decoder_gpt["compute"] + 2 * 3 * _cross_attention(enc, dec)
    assert pair["compute"] == pytest.approx(expected)


def test_hybrid_microbatch_averages_its_layer_types():
    """M*-: the Mamba layer, the attention layer (a dense layer's projections, core and half its element-wise
    passes) and the MLP layer (its MLP, activation and the other half), forward and 2x backward, together equal a
    dense layer plus a Mamba layer. Before: three dense layers."""
    k = _unit_kernels(HYBRID_SMALL, 32)
    hybrid = _stage_microbatch(k, count_params(HYBRID_SMALL))
    dense = HYBRID_SMALL.replace(hybrid_pattern=None, num_layers=1)
    one_dense = _stage_microbatch(_unit_kernels(dense, 32), count_params(dense))
    assert hybrid["compute"] == pytest.approx(one_dense["compute"] + 3 * _mamba_layer(k))


def test_host_dispatch_counts_both_t5_stacks_and_hybrid_sub_layers():
    """Host dispatch: 0.58 ms per micro-batch + 5.08 ms per transformer layer (Options). T5's two layers are four
    (encoder and decoder): 0.58 + 4 x 5.08 = 20.9 ms; M*- is 1 + 0.5 + 0.5 = 2 layers: 0.58 + 2 x 5.08 = 10.74 ms."""
    gpu = lookup_gpu("h100-sxm")
    assert gpu is not None
    f = gpu.host_overhead_factor
    assert host_microbatch_s(T5_SMALL, count_params(T5_SMALL), gpu) == pytest.approx(f * 20.9e-3)
    assert host_microbatch_s(HYBRID_SMALL, count_params(HYBRID_SMALL), gpu) == pytest.approx(f * 10.74e-3)
