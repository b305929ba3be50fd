"""The memory terms issue 23 added, each against a number worked out by hand: the logits at the loss per
cross-entropy variant, unfused attention (read from the launch, and Megatron's persistent score buffer),
the cuBLAS workspace inside the allocator, fp8's weight cache and fp8-saved inputs, and the error band."""

import pytest
from plint.cost import ModelInput, Options, count_params, estimate
from plint.cost.error_band import MEASURED_PEAK_ERROR, MIN_ROWS, ROWS_PER_GROUP, error_band, memory_features
from plint.cost.memory import (
    activation_bytes_per_token,
    attention_score_buffer_bytes,
    deferred_wgrad_bytes,
    fp8_weight_cache_bytes,
    loss_logit_bytes,
    stage_memory,
    stage_steady_bytes,
    workspace_bytes,
)
from tests.cost.test_memory import SMALL  # h=1024, 4 layers, 16 heads (d=64), f=4h, V=50304, b=2, s=1024, 8 GPUs

TOKENS = 2048
LAYER_FLASH = 34_880  # per token and layer: 10h + 8h + 4n + 4f (test_memory.test_small_gpt_activations)
MIB = 2**20


@pytest.mark.parametrize("kind, at_loss, saved", [("native", 6.0, 4.0), ("fused", 14.0, 4.0), ("te", 2.0, 2.0)])
def test_logits_at_the_loss_per_cross_entropy_variant(kind, at_loss, saved):
    inp = SMALL.replace(options=Options(cross_entropy=kind))
    assert loss_logit_bytes(inp) == (at_loss, saved)
    # the one stage: 4 layers, embedding mask h, output inputs 4h, then the logits of the one micro-batch
    acts = stage_memory(inp, count_params(inp), 8, last=False)["activations"]
    assert acts == TOKENS * (4 * LAYER_FLASH + 1024 + 4 * 1024 + at_loss * 50304)
    # native: 2048 x (139,520 + 5,120 + 301,824) = 914,358,272; fused adds 8 x 50,304 per token
    if kind == "fused":
        assert acts == 914_358_272 + TOKENS * 8 * 50304 == 1_738_539_008


def test_fp32_training_logits_are_their_own_copy():
    assert loss_logit_bytes(SMALL.replace(precision="fp32")) == (4.0, 4.0)


def test_unfused_attention_keeps_the_scores():
    """Without flash: softmax output 2 B + dropout mask 1 B + dropout output 2 B per score, 5 n s per token
    and layer instead of flash's 4n log-sum-exp: 5 x 16 x 1024 = 81,920."""
    unfused = SMALL.replace(options=Options(flash_attention=False))
    full, _ = activation_bytes_per_token(unfused, False)
    assert full == LAYER_FLASH - 4 * 16 + 5 * 16 * 1024 == 116_736


def test_megatron_local_attention_score_buffer():
    """Megatron's DotProductAttention takes a (b*n/tp, s, s) 16-bit buffer: 2 x 2 x 16 x 1024 x 1024 = 64 MiB,
    half at tp 2. It lives for the run: a workspace, in the allocator's peak and in its steady figure."""
    local = SMALL.replace(options=Options(flash_attention=False, attention_score_buffer=True, transformer_engine=False))
    assert attention_score_buffer_bytes(local) == 2 * 2 * 16 * 1024 * 1024 == 64 * MIB
    assert attention_score_buffer_bytes(local.replace(tp=2)) == 32 * MIB
    # no Transformer Engine workspace; PyTorch's two cuBLAS workspaces (test_torch_cublas_workspaces)
    assert workspace_bytes(local, hopper_or_later=True) == 64 * MIB + 2 * 32 * MIB
    plain = SMALL.replace(options=Options(flash_attention=False, transformer_engine=False))
    with_buffer, without = estimate(local).memory_gib, estimate(plain).memory_gib
    assert with_buffer["allocator_peak"] - without["allocator_peak"] == pytest.approx(64 / 1024)
    assert with_buffer["allocator_steady"] - without["allocator_steady"] == pytest.approx(64 / 1024)


def test_steady_figure_keeps_the_fp16_step_copy():
    """Megatron logs mem-allocated-bytes after the optimizer step, before the next zero_grad drops the fp32
    gradient copies the fp16 step made: 18 B + 4 B per parameter (2 weights, 2 fp16 grads, 12 fp32 master and
    Adam, 4 the copy) = 20 x 102,946,816 bytes, plus the workspaces on an H100: Transformer Engine's 32 MiB and
    PyTorch's two cuBLAS workspaces of 32 MiB."""
    fp16 = SMALL.replace(precision="fp16")
    c = count_params(fp16)
    assert stage_steady_bytes(fp16, c, last=False) == 20 * c.total == 20 * 102_946_816
    assert estimate(fp16).memory_gib["allocator_steady"] == pytest.approx((20 * c.total + 96 * MIB) / 2**30)
    # bf16 with fp32 gradient buffers makes no copy: 18 B
    assert stage_steady_bytes(SMALL, c, last=False) == 18 * c.total


def test_cublas_workspace_inside_the_allocator():
    """Transformer Engine's workspace: 32 MiB from Hopper on, 4 MiB before; none without TE. Beside it PyTorch's two
    cuBLAS workspaces (test_torch_cublas_workspaces): 2 x 32 MiB from Hopper on, 2 x 8.125 MiB before. The estimate
    counts them in the allocator peak and the total."""
    torch_h100, torch_a100 = 64 * MIB, 2 * (8 * MIB + 128 * 1024)
    assert workspace_bytes(SMALL, hopper_or_later=True) == 32 * MIB + torch_h100
    assert workspace_bytes(SMALL, hopper_or_later=False) == 4 * MIB + torch_a100
    assert workspace_bytes(SMALL.replace(options=Options(transformer_engine=False)), True) == torch_h100
    h100 = estimate(SMALL).memory_gib
    a100 = estimate(SMALL.replace(gpu="a100-80gb")).memory_gib
    assert h100["workspace"] == 96 / 1024 and a100["workspace"] == pytest.approx((4 + 16.25) / 1024)
    parts = h100["weights"] + h100["grads"] + h100["optimizer"] + h100["activations"]
    assert h100["allocator_peak"] == pytest.approx(parts + 96 / 1024)
    assert h100["total"] == pytest.approx(h100["allocator_peak"] + h100["other"])


def test_fp8_weight_cache_and_saved_inputs():
    """fp8 (delayed scaling): an fp8 copy and transpose of every layer GEMM weight, 2 B x 4 x (12h^2 + 7h) of
    the tensor-parallel part of each layer (QKV 3h^2+3h, proj h^2, fc1 4h^2+4h, fc2 4h^2; the row-parallel
    layers' biases are replicated); per token and layer the norms' outputs into QKV and fc1 and fc2's input are saved in fp8
    (-2h - f) and the projection's fp8 input beside the attention output (+nd): 34,880 - 2,048 - 4,096 + 1,024."""
    fp8 = SMALL.replace(precision="fp8")
    c = count_params(fp8)
    assert c.dense_layer_tp == 12 * 1024**2 + 7 * 1024
    assert fp8_weight_cache_bytes(fp8, c, 4) == 2 * 4 * (12 * 1024**2 + 7 * 1024) == 100_720_640
    assert fp8_weight_cache_bytes(fp8.replace(tp=2), c, 4) == 100_720_640 / 2
    mxfp8 = fp8.replace(options=Options(fp8_recipe="mxfp8"))
    assert fp8_weight_cache_bytes(mxfp8, c, 4) == pytest.approx((2 + 2 / 32) * 4 * (12 * 1024**2 + 7 * 1024))
    gathered = fp8.replace(options=Options(fp8_param_gather=True))
    assert fp8_weight_cache_bytes(gathered, c, 4) == 0.0
    full, _ = activation_bytes_per_token(fp8, False)
    assert full == LAYER_FLASH - 2 * 1024 - 4096 + 16 * 64 == 29_760
    bf16 = stage_memory(SMALL, c, 8, False)
    assert stage_memory(fp8, c, 8, False)["weights"] - bf16["weights"] == 100_720_640


def test_error_band_is_the_largest_measured_error_of_the_features_used():
    assert memory_features(SMALL) == []
    assert error_band(SMALL) == MEASURED_PEAK_ERROR["all"]
    tp_pp = SMALL.replace(tp=2, pp=2, options=Options(flash_attention=False))
    assert memory_features(tp_pp) == ["tp", "pp", "unfused attention"]
    assert error_band(tp_pp) == max(MEASURED_PEAK_ERROR[f] for f in ("tp", "pp", "unfused attention"))
    # a group measured on too few rows says nothing of its own: the whole set's figure stands
    thin = [f for f, n in ROWS_PER_GROUP.items() if n < MIN_ROWS and f in MEASURED_PEAK_ERROR]
    assert "fsdp" in thin
    assert error_band(SMALL.replace(megatron_fsdp=True, sharding="optimizer")) == MEASURED_PEAK_ERROR["all"]
    assert 0 < estimate(tp_pp).memory_gib["error_band"] == error_band(tp_pp)


def test_deferred_embedding_wgrad_keeps_inputs_and_logit_gradients():
    """--defer-embedding-wgrad-compute --wgrad-deferral-limit 2 with 8 micro-batches: at the last one's loss
    the output layer holds 2 earlier micro-batches' input (2h) and 16-bit logit gradient (2V/tp):
    2 x 2048 x (2,048 + 100,608) = 420,478,976 bytes; all 7 earlier ones at limit 0; none with one micro-batch."""
    c = count_params(SMALL)
    limited = SMALL.replace(options=Options(wgrad_deferral_limit=2))
    assert deferred_wgrad_bytes(limited, c, 8) == 2 * TOKENS * (2 * 1024 + 2 * 50304) == 420_478_976
    assert deferred_wgrad_bytes(SMALL.replace(options=Options(wgrad_deferral_limit=0)), c, 8) == 7 * TOKENS * 102_656
    assert deferred_wgrad_bytes(limited, c, 1) == 0.0 and deferred_wgrad_bytes(SMALL, c, 8) == 0.0
    assert (
        stage_memory(limited, c, 8, False)["activations"] - stage_memory(SMALL, c, 8, False)["activations"]
        == 420_478_976
    )


def test_routed_experts_keep_the_probability_product():
    """MoE, h=512, 8 experts of f_m=2048, top-2, tp 2 with SP, etp 1, no bias, MHA of 8 heads (d=64).
    Per token of the micro-batch and MoE layer, /tp: the dense part 8h/tp (norm inputs and MLP input, SP) +
    2 masks h/tp + Q,K,V,O 8h + 4n, then per routed copy k x (2h dispatched input + f_m x (2 fc1 output
    + 2 activation output + 2 the probability product fc2 keeps)) and the router's fp32 logits 4E/tp (SP).
    GELU experts keep the activation's output for the product's backward (experts.py bias_act_func);
    fused SwiGLU experts keep only the fused kernel's input, unless --no-bias-swiglu-fusion."""
    moe = ModelInput(
        num_layers=2,
        hidden_size=512,
        num_attention_heads=8,
        seq_length=1024,
        vocab_size=50304,
        num_experts=8,
        moe_topk=2,
        moe_ffn_hidden_size=2048,
        tp=2,
        ep=4,
        etp=1,
        sequence_parallel=True,
        add_bias_linear=False,
        nnodes=1,
        gpus_per_node=8,
    )
    keep, _ = activation_bytes_per_token(moe, True)
    dense_part = (8 + 2) * 512 / 2 + (8 * 512 + 4 * 8) / 2
    routed = 2 * (2 * 512 + (4 + 2) * 2048) / 2
    assert keep == dense_part + routed + 4 * 8 / 2 == 4_624 + 13_312 + 16
    glu = moe.replace(swiglu=True)
    fused, _ = activation_bytes_per_token(glu, True)
    unfused, _ = activation_bytes_per_token(glu.replace(options=Options(bias_swiglu_fusion=False)), True)
    assert unfused - fused == 2 * 4 * 2048 / 2  # k copies x 4 B per f_m unit, /tp


def test_microbatch_group_size_of_the_interleaved_schedule():
    """pp 4, 12 layers in v = 3 chunks of 1, m = 5, --microbatch-group-size-per-virtual-pipeline-stage 5:
    the last rank warms up with (v-1) x 5 = 10 chunk-forwards and runs one more before its first backward:
    11 one-layer chunks in flight, where the default group (pp = 4) gives (v-1) x 4 + 1 = 9. The first rank:
    (pp-1) x 2 + (v-1) x 5 + 1 = 17 chunks against 15 (with m = 8; m = 5 caps both at m x v = 15)."""
    inp = SMALL.replace(num_layers=12, pp=4, vpp=3, global_batch=20, micro_batch=2, nnodes=1, gpus_per_node=8)
    c = count_params(inp)
    grouped = inp.replace(options=Options(microbatch_group=5))
    per_layer = TOKENS * LAYER_FLASH
    last_default = stage_memory(inp, c, 5, last=True)["activations"]
    last_grouped = stage_memory(grouped, c, 5, last=True)["activations"]
    assert last_grouped - last_default == 2 * per_layer
    first_default = stage_memory(inp, c, 8, last=False)["activations"]
    first_grouped = stage_memory(grouped, c, 8, last=False)["activations"]
    assert first_grouped - first_default == 2 * per_layer
    assert stage_memory(grouped, c, 5, last=False)["activations"] == stage_memory(inp, c, 5, last=False)["activations"]


def test_uneven_end_stages_hold_their_own_layers():
    """--decoder-first-pipeline-num-layers 2 --decoder-last-pipeline-num-layers 2 of 12 on pp 4: the last stage
    holds 2 layers' weights and 1F1B's one micro-batch of 2 layers, not the fullest stage's 4."""
    even = SMALL.replace(num_layers=16, pp=4, nnodes=1, gpus_per_node=8)
    uneven = even.replace(first_stage_layers=2, last_stage_layers=2)
    c = count_params(even)
    layer = c.dense_layer_tp + c.dense_layer_rep
    e_last, u_last = stage_memory(even, c, 8, last=True), stage_memory(uneven, c, 8, last=True)
    assert e_last["weights"] - u_last["weights"] == 2 * 2 * layer  # 4 - 2 layers of bf16 weights
    assert e_last["activations"] - u_last["activations"] == 2 * TOKENS * LAYER_FLASH  # 1 micro-batch x 2 layers
    e_first, u_first = stage_memory(even, c, 8, last=False), stage_memory(uneven, c, 8, last=False)
    assert e_first["activations"] - u_first["activations"] == 4 * 2 * TOKENS * LAYER_FLASH  # pp = 4 micro-batches


def test_torch_cublas_workspaces(tmp_path):
    """PyTorch takes a cuBLAS workspace from its caching allocator per handle and stream, for the forward's thread
    and autograd's backward thread: CUBLAS_WORKSPACE_CONFIG=:4096:8 asks 4,096 KiB x 8 = 32 MiB each (64 MiB),
    ':4096:2:16:8' 8 MiB + 128 KiB each; unset, 32 MiB from Hopper on and 8.125 MiB before. The launch's export is
    read. Before: none of it was counted."""
    from plint.cost.memory import torch_cublas_workspace_bytes
    from plint.cost.model_input import cublas_workspace_config
    from plint.cost.layout_estimate import cost_input
    from plint.reading.read import read_path

    assert cublas_workspace_config(":4096:8") == 32 * MIB
    assert cublas_workspace_config(":4096:2:16:8") == 8 * MIB + 128 * 1024
    assert cublas_workspace_config("garbage") is None
    assert torch_cublas_workspace_bytes(SMALL, True) == 64 * MIB
    assert torch_cublas_workspace_bytes(SMALL, False) == 2 * (8 * MIB + 128 * 1024)
    script = tmp_path / "launch.sh"
    script.write_text(
        "export CUBLAS_WORKSPACE_CONFIG=:16:8\ntorchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 4 "
        "--hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
        "--micro-batch-size 2 --global-batch-size 16 --vocab-size 50257 --bf16\n"
    )
    inp = cost_input(read_path(script).layouts[0])
    assert inp.options.torch_cublas_workspace == 16 * 1024 * 8
    assert torch_cublas_workspace_bytes(inp, True) == 2 * 128 * 1024
