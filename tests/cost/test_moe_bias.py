"""The experts' output bias (issue 24, gpt-oss): Megatron-Core's grouped experts add fc2's bias expert by expert in
PyTorch over the routed copies (megatron/core/transformer/moe/experts.py TEGroupedMLP._apply_bias, core_v0.17.0);
with --disable-bias-linear there is none. Hand-worked bytes."""

from __future__ import annotations

import sys

import pytest
from plint.catalog.hardware import lookup_gpu
from plint.cost import ModelInput, Options, estimate
from plint.cost.moe_time import expert_output_bias

estimate_module = sys.modules["plint.cost.estimate"]  # plint.cost.estimate the name is the function

MOE = ModelInput(
    num_layers=4,
    hidden_size=2880,
    num_attention_heads=64,
    kv_channels=64,
    num_query_groups=8,
    seq_length=4096,
    vocab_size=32000,
    swiglu=True,
    add_bias_linear=True,
    num_experts=128,
    moe_topk=4,
    moe_ffn_hidden_size=2880,
    ep=8,
    etp=1,
    micro_batch=2,
    global_batch=16,
    gpu="b200",
    nnodes=1,
    gpus_per_node=8,
    options=Options(moe_load_imbalance=1.0),
)


def test_the_output_bias_moves_24_bytes_per_routed_copy_and_channel():
    gpu = lookup_gpu("b200")
    k = estimate_module._kernels(MOE, gpu)
    copies = 2 * 4096 * 4  # micro-batch 2 of 4096 tokens, each to 4 experts, a balanced EP rank
    hbm = gpu.hbm_tbps * 1e12 * MOE.options.hbm_efficiency
    assert expert_output_bias(k) == pytest.approx(24 * copies * 2880 / hbm)


def test_disable_bias_linear_has_no_output_bias():
    k = estimate_module._kernels(MOE.replace(add_bias_linear=False), lookup_gpu("b200"))
    assert expert_output_bias(k) == 0.0


def test_the_step_pays_the_output_bias_once_per_moe_layer_and_micro_batch():
    """Before: a MoE model with biases cost the same as without (apart from the biases' few parameters)."""
    with_bias, without = estimate(MOE), estimate(MOE.replace(add_bias_linear=False))
    k = estimate_module._kernels(MOE, lookup_gpu("b200"))
    micro_batches = 16 // (2 * 8)
    added = with_bias.time_s["compute"] - without.time_s["compute"]
    assert added == pytest.approx(micro_batches * 4 * expert_output_bias(k), rel=1e-3)
