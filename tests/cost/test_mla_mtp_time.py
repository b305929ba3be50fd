"""Step time of what DeepSeek-V3-style models add (issue 24 item 3, "what else is missing"): multi-latent
attention's projections and core, the multi-token prediction layer and its second output layer on the last stage,
and selective recompute by --recompute-modules; against numbers worked out by hand at round rates."""

import pytest
from plint.cost import count_params
from plint.cost.estimate import _dense_layer, _Kernels, _stage_microbatch
from plint.cost.layer_terms import mla_attention, selective_replay

from tests.cost.test_family_step_time import _unit_kernels
from tests.cost.test_model_families import MLA_SMALL as MLA_RANKS_32_16

# h=64, 4 heads; MLA with query rank 16, key-value rank 8, qk 8 + rope 4 channels, v 8; 32 tokens, one GPU
MLA_SMALL = MLA_RANKS_32_16.replace(q_lora_rank=16, kv_lora_rank=8)
# the same with two MoE layers: 4 experts of width 32, top-2
MOE_SMALL = MLA_SMALL.replace(num_experts=4, moe_topk=2, moe_ffn_hidden_size=32)


def test_mla_projections_and_core():
    """Down projections 2 x 32 x (8 + 4) x 64 + 2 x 32 x 16 x 64 = 114,688 FLOPs, up projections 2 x 32 x 4(8 + 4)
    x 16 + 2 x 32 x 4(8 + 8) x 8 = 81,920: 0.196608 us; linear_proj 2 x 32 x 64 x 32 = 131,072: 0.131072 us; the
    causal core 2 x 32 x 32 x (12 + 8) x 4 x 0.5 = 81,920 FLOPs: 0.08192 us (a 16-channel head's core would be
    4 x 32 x 32 x 16 x 4 x 0.5 = 131,072)."""
    qkv, out_proj, core = mla_attention(_unit_kernels(MLA_SMALL, 32), 0.5)
    assert (qkv, out_proj, core) == pytest.approx((0.196608e-6, 0.131072e-6, 0.08192e-6))
    layer = _dense_layer(_unit_kernels(MLA_SMALL, 32))
    assert layer.projections == pytest.approx(0.196608e-6 + 0.131072e-6)
    assert layer.core == pytest.approx(0.08192e-6)


def test_selective_recompute_replays_only_the_named_modules():
    k = _unit_kernels(MLA_SMALL.replace(recompute="selective", recompute_modules=("mla_up_proj", "layernorm")), 32)
    layer = _dense_layer(k)
    # the up projections (81,920 FLOPs) and MLA's input norm (read and write 2 x 64 B per token, 32 tokens)
    assert selective_replay(k, layer.core, layer.mlp + layer.activation, None) == pytest.approx(
        0.08192e-6 + 2 * 2 * 32 * 64 / 1e9
    )
    # moe_act: the experts' activation alone, 2 B x 64 routed copies x (2 + 1) x 32 values (the gate factor is 1 here)
    moe = _unit_kernels(MOE_SMALL.replace(recompute="selective", recompute_modules=("moe_act",)), 32)
    parts = (1.0, 2.0, 3.0, 2 * 64 * 3 * 32 / 1e9, 5.0)  # (experts, act + permutes, a2a, activation, shared)
    assert selective_replay(moe, 7.0, 0.0, parts) == pytest.approx(2 * 64 * 3 * 32 / 1e9)
    # core_attn alone, Megatron's default, replays the core and nothing of the MoE
    default = _unit_kernels(MOE_SMALL.replace(recompute="selective"), 32)
    assert selective_replay(default, 7.0, 0.0, parts) == 7.0
    # moe replays the whole MoE layer with its dispatch and combine
    whole = _unit_kernels(MOE_SMALL.replace(recompute="selective", recompute_modules=("moe",)), 32)
    assert selective_replay(whole, 7.0, 0.0, parts) == pytest.approx(1.0 + 2.0 + 3.0)


def test_mtp_adds_a_layer_and_an_output_layer_to_the_last_stage():
    """One MTP depth: a transformer layer of the last layer's kind (MoE here), eh_proj 2 x 32 x 64 x 128 =
    524,288 FLOPs forward (x 3 with the backward), and the output layer and loss once more."""
    plain = _stage_microbatch(_unit_kernels(MOE_SMALL, 32), count_params(MOE_SMALL))
    mtp_input = MOE_SMALL.replace(mtp_num_layers=1)
    mtp = _stage_microbatch(_unit_kernels(mtp_input, 32), count_params(mtp_input))
    per_layer = plain["compute"] / 2  # two MoE layers, one stage
    assert mtp["compute"] - plain["compute"] == pytest.approx(per_layer + plain["head"] + 3 * 0.524288e-6)
    assert mtp["head"] == plain["head"]


def test_fp8_training_runs_the_output_layer_in_bf16():
    """GPTModel.output_layer is a plain ColumnParallelLinear, outside TE's fp8_autocast: at an fp8 peak of 2 and a
    bf16 peak of 1 TFLOP/s, with fp8 GEMMs at 0.87 of the bf16 plateau's share, its GEMMs take 2 x 0.87 = 1.74
    times what k.gemm gives at the fp8 rate (32 tokens x 1,024 padded vocabulary x 64: 3 x 4,194,304 FLOPs)."""
    inp = MLA_SMALL.replace(precision="fp8")
    fp8 = _Kernels(inp, None, 32, 1, 2e12, 1e12, 1.0, 1.0, 0.0, 1e9, 1, 0.0)
    bf16 = _Kernels(MLA_SMALL, None, 32, 1, 1e12, 1e12, 1.0, 1.0, 0.0, 1e9, 1, 0.0)
    c = count_params(inp)
    cross_entropy = 24 * 32 * c.vocab_padded / 1e9
    head_fp8 = _stage_microbatch(fp8, c)["head"] - cross_entropy
    assert head_fp8 == pytest.approx(3 * 2 * 32 * 1024 * 64 / 2e12 * 1.74)
    assert _stage_microbatch(bf16, c)["head"] - cross_entropy == pytest.approx(3 * 2 * 32 * 1024 * 64 / 1e12)
