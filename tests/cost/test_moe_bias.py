"""gpt-oss's experts as Megatron-Core runs them (issue 24), hand-worked bytes: the output bias added expert by expert
in PyTorch over the routed copies (megatron/core/transformer/moe/experts.py TEGroupedMLP._apply_bias, core_v0.17.0;
none with --disable-bias-linear), and the clamp of --activation-func-clamp-value applied to the quick-GeGLU's input
outside its fused kernel (megatron/core/fusions/fused_bias_geglu.py weighted_bias_quick_geglu_impl)."""

from __future__ import annotations

import sys

import pytest
from plint.catalog.hardware import lookup_gpu
from plint.checking.check import check_paths
from plint.cost import ModelInput, Options, estimate
from plint.cost.layout_estimate import cost_input
from plint.cost.moe_time import expert_activation, expert_output_bias
from plint.rules.common import gpt, torchrun

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


def test_the_clamp_reads_and_writes_each_half_then_the_whole_again():
    gpu = lookup_gpu("b200")
    plain = estimate_module._kernels(MOE, gpu)
    clamped = estimate_module._kernels(MOE.replace(activation_clamp=7.0), gpu)
    copies = 2 * 4096 * 4
    hbm = gpu.hbm_tbps * 1e12 * MOE.options.hbm_efficiency
    # the gated fc1 output is 2 x 2880 wide: 8 bytes per element more, forward
    assert expert_activation(clamped) - expert_activation(plain) == pytest.approx(8 * copies * 2 * 2880 / hbm)


@pytest.mark.parametrize(
    "activation, clamp",
    [("--quick-geglu --activation-func-clamp-value 7.0", 7.0), ("--swiglu --activation-func-clamp-value 7.0", None)],
)
def test_the_launch_states_the_clamp_of_a_quick_geglu(tmp_path, activation, clamp):
    """The fused SwiGLU takes no clamp (experts.py bias_act_func); --quick-geglu is a gated unit like --swiglu.
    Before: --quick-geglu read as an ungated MLP, the clamp not read."""
    extra = f"--num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 8 {activation}"
    for name, text in torchrun(gpt(extra)).files.items():
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / "launch.sh"])
    inp = cost_input(result.layouts[0])
    assert (inp.swiglu, inp.activation_clamp) == (True, clamp)


def test_the_clamp_keeps_a_clamped_copy_of_fc1s_output_unless_moe_act_is_recomputed():
    """Without recompute the fused quick-GeGLU saves the clamped copy while the clamps keep fc1's output: 2 x 2880 x
    2 B more per routed copy and MoE layer; --recompute-modules moe_act checkpoints the whole activation. Before:
    no difference either way."""
    plain, clamped = MOE.replace(global_batch=16), MOE.replace(activation_clamp=7.0)
    extra = estimate(clamped).memory_gib["activations"] - estimate(plain).memory_gib["activations"]
    copies = 2 * 4096 * 4
    assert extra * 2**30 == pytest.approx(4 * copies * 2 * 2880 * 2, rel=1e-6)
    recompute = {"recompute": "selective", "recompute_modules": ("moe_act",)}
    assert estimate(clamped.replace(**recompute)).memory_gib["activations"] == pytest.approx(
        estimate(plain.replace(**recompute)).memory_gib["activations"]
    )
