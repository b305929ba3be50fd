"""The estimate as a whole: its JSON shape, its arithmetic identities and the direction of its effects."""

import pytest
from plint.cost import ModelInput, Options, estimate
from plint.cost.comm import Links, all_reduce, reduce_scatter
from plint.layout import Layout
from plint.values import Value

ALPHA_BETA = Options(measured_collectives=False)  # links at fixed efficiencies and per-step latencies
LLAMA3_70B = ModelInput(
    num_layers=80,
    hidden_size=8192,
    num_attention_heads=64,
    num_query_groups=8,
    seq_length=8192,
    vocab_size=128256,
    ffn_hidden_size=28672,
    swiglu=True,
    untie_embeddings=True,
    normalization="RMSNorm",
    add_bias_linear=False,
    tp=4,
    pp=4,
    vpp=5,
    cp=2,
    sequence_parallel=True,
    distributed_optimizer=True,
    micro_batch=1,
    global_batch=4096,
    gpu="h100-sxm",
    nnodes=256,
    gpus_per_node=8,
)


def test_json_matches_the_layout_contract():
    out = estimate(LLAMA3_70B).to_json()
    # the contract's fields, plus (issue 23) the allocator's peak and steady figures, the workspaces
    # counted inside the allocator, the stage the peak is on and the per-stage figures (pp 4 here); and the
    # pipeline rank the peak is on (every rank is costed, not only the first and last)
    assert set(out["memory_gib"]) == {
        "weights",
        "grads",
        "optimizer",
        "activations",
        "other",
        "total",
        "usable",
        "workspace",
        "allocator_peak",
        "allocator_peak_stage",
        "allocator_peak_rank",
        "allocator_steady",
        "stages",
        "error_band",
    }
    assert set(out["memory_gib"]["stages"]) == {"first", "last"}
    assert out["memory_gib"]["allocator_peak_stage"] in ("first", "last")
    assert out["memory_gib"]["allocator_peak_rank"] in (0, 3)  # an even split: the first or the last rank
    for key in ("bubble_fraction", "step_time_s", "mfu", "tokens_per_s_per_gpu"):
        assert isinstance(out[key], float)


def test_identities():
    e = estimate(LLAMA3_70B)
    world = 2048
    assert e.num_microbatches == 4096 // (1 * 64)  # dp = 2048 / (4*4*2)
    assert e.bubble_fraction == pytest.approx(3 / (5 * 64))
    assert e.tokens_per_s_per_gpu == pytest.approx(4096 * 8192 / e.step_time_s / world)
    assert e.step_time_s == pytest.approx(sum(e.time_s.values()))
    mem = e.memory_gib
    # (issue 23: the parts now include the workspaces; the allocator's figures are the parts inside it)
    parts = ("weights", "grads", "optimizer", "activations", "workspace", "other")
    assert mem["total"] == pytest.approx(sum(mem[k] for k in parts))
    assert mem["allocator_peak"] == pytest.approx(mem["total"] - mem["other"])
    # between steps: the states and the run-long buffers (bf16 with fp32 gradients: no step copy)
    assert mem["allocator_steady"] == pytest.approx(mem["weights"] + mem["grads"] + mem["optimizer"] + mem["workspace"])
    assert mem["allocator_peak"] == pytest.approx(mem["stages"][mem["allocator_peak_stage"]]["allocator_peak"])
    assert 0 < e.mfu < 1


def test_more_microbatches_shrink_the_bubble_share():
    few = estimate(LLAMA3_70B.replace(global_batch=256, vpp=None))
    many = estimate(LLAMA3_70B.replace(global_batch=4096, vpp=None))
    assert few.bubble_fraction == pytest.approx(3 / 4) and many.bubble_fraction == pytest.approx(3 / 64)
    assert many.tokens_per_s_per_gpu > few.tokens_per_s_per_gpu


def test_tensor_parallel_across_nodes_costs_more():
    inside = LLAMA3_70B.replace(tp=8, pp=2, vpp=None)
    across = inside.replace(gpus_per_node=4, nnodes=512, nvlink_domain=4)
    assert estimate(across).time_s["tp"] > 1.5 * estimate(inside).time_s["tp"]


def test_recompute_trades_time_for_memory():
    base, full = estimate(LLAMA3_70B), estimate(LLAMA3_70B.replace(recompute="full"))
    assert full.memory_gib["activations"] < base.memory_gib["activations"] / 3
    assert full.time_s["recompute"] > 0.25 * base.time_s["compute"]


def test_unknown_gpu_gives_no_estimate():
    assert estimate(LLAMA3_70B.replace(gpu="tpu-v5p")) is None


def test_hierarchical_collectives():
    links = Links(domain=8, nvlink_bw=360e9, net_bw=42.5e9, alpha_nv=0.0, alpha_net=0.0, world=64)
    gib = 2.0**30
    # 8 ranks inside one node: ring on NVLink, 7/8 of the buffer
    assert reduce_scatter(links, gib, 8, 1) == pytest.approx(7 / 8 * gib / 360e9)
    # 8 ranks one per node (stride 8): the whole ring crosses the network
    assert reduce_scatter(links, gib, 8, 8) == pytest.approx(7 / 8 * gib / 42.5e9)
    # 16 ranks, 8 per node: NVLink stage, then 1/8 of the buffer over each NIC across 2 nodes
    assert reduce_scatter(links, gib, 16, 1) == pytest.approx(7 / 8 * gib / 360e9 + 1 / 2 * gib / 8 / 42.5e9)
    assert all_reduce(links, gib, 8, 1) == pytest.approx(2 * reduce_scatter(links, gib, 8, 1))


def _layout(**values):
    layout = Layout()
    for key, value in values.items():
        layout.set(key.replace("__", "."), Value(value, None, "literal"))
    return layout


def test_from_layout_reads_the_contract_fields():
    layout = _layout(
        model__num_layers=32,
        model__hidden_size=4096,
        model__num_attention_heads=32,
        model__num_query_groups=8,
        model__seq_length=8192,
        model__vocab_size=128256,
        model__ffn_hidden_size=14336,
        model__swiglu=True,
        parallel__tp=2,
        parallel__pp=2,
        parallel__cp=1,
        parallel__dp=4,
        batch__micro=1,
        batch__global=64,
        cluster__world_size=16,
        cluster__nnodes=2,
        cluster__gpus_per_node=8,
        cluster__gpu="h100-sxm",
        precision="bf16",
        recompute__granularity="full",
    )
    inp = ModelInput.from_layout(layout)
    assert (inp.tp, inp.pp, inp.data_parallel(), inp.nnodes, inp.recompute, inp.swiglu) == (2, 2, 4, 2, "full", True)
    assert estimate(inp).num_microbatches == 16


def test_from_layout_without_a_model_shape_is_none():
    assert ModelInput.from_layout(_layout(parallel__tp=2, cluster__world_size=8)) is None


def test_options_change_the_overlap_not_the_model():
    plain = estimate(LLAMA3_70B)
    overlapped = estimate(
        LLAMA3_70B.replace(options=Options(tp_comm_overlap=True, overlap_grad_reduce=True, overlap_param_gather=True))
    )
    assert overlapped.step_time_s < plain.step_time_s and overlapped.params == plain.params


def test_ring_collectives_pay_one_latency_per_step():
    # NCCL reduce-scatter / all-gather are rings: (n-1) * alpha (planners.md sec. 9)
    links = Links(domain=8, nvlink_bw=360e9, net_bw=42.5e9, alpha_nv=3e-6, alpha_net=8e-6, world=128)
    gib = 2.0**30
    # 16 ranks one per node: 15 network steps
    assert reduce_scatter(links, gib, 16, 8) == pytest.approx(15 / 16 * gib / 42.5e9 + 15 * 8e-6)
    # 16 ranks, 8 per node: 7 NVLink steps, then 1 network step between the 2 nodes on 1/8 of the buffer
    assert reduce_scatter(links, gib, 16, 1) == pytest.approx(
        7 / 8 * gib / 360e9 + 7 * 3e-6 + 1 / 2 * gib / 8 / 42.5e9 + 1 * 8e-6
    )


def test_pipeline_schedule_option_sets_the_bubble():
    one_f_one_b = estimate(LLAMA3_70B.replace(vpp=None))
    zb = estimate(LLAMA3_70B.replace(vpp=None, options=Options(pipeline_schedule="zb-h1")))
    # m = 64, pp = 4: 1F1B (4-1)/64; ZB-H1 (4-1)(1 - 2/3)/64 = 1/64, a third of the idle time
    assert one_f_one_b.bubble_fraction == pytest.approx(3 / 64)
    assert zb.bubble_fraction == pytest.approx(1 / 64)
    assert zb.time_s["bubble"] == pytest.approx(one_f_one_b.time_s["bubble"] / 3)
    assert zb.time_s["compute"] == pytest.approx(one_f_one_b.time_s["compute"])


def test_hidden_tp_traffic_still_costs_a_share_of_itself():
    # TP overlap leaves one ring step of the 4 collectives exposed (tp_fwd / tp, the GEMMs being far
    # longer); the other (tp-1)/tp is hidden and costs overlap_slowdown of itself: with tp = 4 and 0.2,
    # (1/4 + 0.2 * 3/4) / (1/4) = 1.6 times the exposed-only figure
    free = estimate(LLAMA3_70B.replace(options=Options(tp_comm_overlap=True, overlap_slowdown=0.0)))
    costly = estimate(LLAMA3_70B.replace(options=Options(tp_comm_overlap=True, overlap_slowdown=0.2)))
    assert costly.time_s["tp"] == pytest.approx(1.6 * free.time_s["tp"])


def test_megatron_backward_hides_tensor_parallel_collectives_under_its_gemms():
    # One layer, h = 4096, 32 heads (MHA), f = 4h, s = 2048, b = 1, tp = 2 on one node's NVLink.
    # A unit (one all-gather or reduce-scatter of b*s*h bf16 = 16,777,216 B over 2 ranks) costs
    # 1/2 * 16,777,216 / 360e9 + 3e-6 = 2.6302e-5 s. The forward has 4 units in the open either way.
    # Megatron's column-parallel backward (megatron/core/tensor_parallel/layers.py) runs its collectives
    # under GEMMs of its own: the QKV weight-gradient GEMM (2048 x 6144 x 4096 at 0.76 / (1 + 256/2048
    # + 256/6144 + 256/4096) of 989e12 = 1.69e-4 s) outlasts any of them, so each hidden unit costs
    # 0.2 of itself.
    #   without SP: an all-reduce (2 units) under each of the 2 weight-gradient GEMMs -> 4 * 0.2 = 0.8
    #   with SP: 2 output-gradient all-gathers in the open + (all-gather + reduce-scatter) under the
    #            input- and weight-gradient GEMMs of the 2 column-parallel layers -> 2 + 0.8 = 2.8
    #   before Sept 2021 (--no-async-tensor-model-parallel-allreduce): 4 in the open
    # (the alpha-beta link model, as for a GPU without measured collectives; tests/cost/test_collectives.py
    # covers the measured curves)
    layer = ModelInput(
        num_layers=1,
        hidden_size=4096,
        num_attention_heads=32,
        seq_length=2048,
        vocab_size=32000,
        tp=2,
        micro_batch=1,
        global_batch=4,
        gpu="h100-sxm",
        nnodes=1,
        gpus_per_node=8,
        options=ALPHA_BETA,
    )
    unit = 0.5 * 16_777_216 / 360e9 + 3e-6
    for sp, backward in ((False, 0.8), (True, 2.8)):
        shape = layer.replace(sequence_parallel=sp)
        assert estimate(shape).time_s["tp"] == pytest.approx((4 + backward) * unit)
        legacy = estimate(shape.replace(options=Options(tp_async_backward=False, measured_collectives=False)))
        assert legacy.time_s["tp"] == pytest.approx(8 * unit)


def test_fp8_current_scaling_reads_each_operand_once_more():
    # 2 layers, h = 1024, 8 heads of 128, MHA, f = 4096 (no GLU), 2048 tokens, one GPU, one micro-batch.
    # GEMM operands per token: 4h + 2nd + (n+2g)d + (1+1)f = 4096 + 2048 + 3072 + 8192 = 17408 elements;
    # current scaling adds a 2 B amax read per element: 2 * 2048 * 17408 B / (3.35e12 * 0.8 B/s) per
    # layer (forward and backward casts together) = 2.66057e-5 s, x 2 layers
    tiny = ModelInput(
        num_layers=2,
        hidden_size=1024,
        num_attention_heads=8,
        seq_length=2048,
        vocab_size=32000,
        ffn_hidden_size=4096,
        precision="fp8",
        micro_batch=1,
        global_batch=1,
        gpu="h100-sxm",
        nnodes=1,
        gpus_per_node=1,
    )
    delayed = estimate(tiny)
    current = estimate(tiny.replace(options=Options(fp8_recipe="tensorwise")))
    extra = 2 * 2 * 2048 * 17408 / (3.35e12 * 0.8)
    assert current.time_s["compute"] - delayed.time_s["compute"] == pytest.approx(extra, rel=1e-9)


def test_dualpipe_hides_the_expert_all_to_all():
    moe = ModelInput(
        num_layers=32,
        hidden_size=4096,
        num_attention_heads=32,
        num_query_groups=8,
        seq_length=4096,
        vocab_size=32000,
        ffn_hidden_size=14336,
        swiglu=True,
        num_experts=8,
        moe_topk=2,
        tp=1,
        pp=4,
        ep=8,
        sequence_parallel=False,
        distributed_optimizer=True,
        micro_batch=1,
        global_batch=256,
        gpu="h100-sxm",
        nnodes=4,
        gpus_per_node=8,
    )
    plain = estimate(moe)
    dual = estimate(moe.replace(options=Options(pipeline_schedule="dualpipe")))
    # the all-to-all (on NVLink: EP 8 inside the node) is shorter than a micro-batch's compute, so all of
    # it hides under the paired chunk and only the overlap share 0.2 of it remains
    assert plain.time_s["ep"] > 0
    assert dual.time_s["ep"] == pytest.approx(0.2 * plain.time_s["ep"])
    # pp = 4, m = 256 / (1 * 8) = 32: (4/2 - 1)(1 + 2/3 - 1) / 32 = (2/3) / 32
    assert dual.bubble_fraction == pytest.approx(2 / 3 / 32)
    # --overlap-moe-expert-parallel-comm pairs micro-batches the same way, but only in the interleaved schedule's
    # steady state (Megatron requires virtual stages with PP > 1): with vpp 2 the last stage warms up with
    # (2 - 1) x 4 + 1 = 5 of its 64 forward chunks, which run (as do 5 backward ones) in the open
    interleaved = moe.replace(vpp=2)
    paired = estimate(interleaved.replace(options=Options(moe_a2a_overlap=True)))
    assert paired.time_s["ep"] == pytest.approx((59 / 64 * 0.2 + 5 / 64) * estimate(interleaved).time_s["ep"])
    assert paired.bubble_fraction == pytest.approx(3 / 32 / 2)


# ---- DeepSpeed engines: the PipelineEngine's blocking p2p, ZeRO-1/2 without overlap_comm ----
GPT_16 = ModelInput(
    num_layers=8,
    hidden_size=4096,
    num_attention_heads=32,
    seq_length=2048,
    vocab_size=51200,
    tp=1,
    pp=2,
    micro_batch=1,
    global_batch=32,
    gpu="h100-sxm",
    nnodes=2,
    gpus_per_node=8,
)


def test_deepspeed_pipeline_engine_sends_four_blocking_transfers():
    # dp = 16 / 2 = 8, m = 32 / 8 = 4; PP's stride is tp*cp*dp = 8 = the node, so each send crosses the
    # network: 400 Gb/s / 8 * 0.85 = 42.5e9 B/s, alpha 8 us. One message = 2 B * b*s*h = 2*2048*4096
    # = 16,777,216 B -> 16,777,216 / 42.5e9 + 8e-6 = 4.02758e-4 s.
    p2p = 16_777_216 / 42.5e9 + 8e-6
    megatron = estimate(GPT_16)  # send_forward_recv_backward pairs: 2 transfers per micro-batch
    assert megatron.time_s["pp"] == pytest.approx(4 * 2 * p2p)  # 3.2221e-3 s
    deepspeed = estimate(GPT_16.replace(zero_stage=1))  # ZeRO with PP: DeepSpeed's PipelineEngine
    assert deepspeed.time_s["pp"] == pytest.approx(4 * 4 * p2p)  # 6.4441e-3 s
    # and it overlaps nothing, not even with p2p overlap asked for
    forced = estimate(GPT_16.replace(zero_stage=1, options=Options(overlap_p2p_comm=True)))
    assert forced.time_s["pp"] == pytest.approx(4 * 4 * p2p)


def test_pipeline_sends_split_over_the_tp_ranks_where_the_trainer_does():
    # tp 2: dp = 16 / 4 = 4, m = 32 / 4 = 8; PP's stride tp*cp*dp = 8 is the node, so sends cross the network.
    # Megatron-Core sends the whole 16,777,216 B from each TP rank; Megatron-LM's p2p of 2021 (scatter/gather, the
    # Megatron-DeepSpeed forks) and DeepSpeed's PipelineEngine send half of it from each and all-gather it over
    # NVLink on the receiver, forward and backward. Sequence parallelism already holds half on each rank.
    from plint.catalog.hardware import lookup_gpu
    from plint.cost.comm import all_gather
    from plint.cost.estimate import _kernels

    tp2 = GPT_16.replace(tp=2)
    whole, half = (n / 42.5e9 + 8e-6 for n in (16_777_216, 8_388_608))
    gather = all_gather(_kernels(tp2, lookup_gpu("h100-sxm")).links, 16_777_216, 2, 1)
    assert estimate(tp2).time_s["pp"] == pytest.approx(8 * 2 * whole)
    split = estimate(tp2.replace(options=Options(pp_scatter_gather=True)))
    assert split.time_s["pp"] == pytest.approx(8 * (2 * half + 2 * gather))
    assert split.time_s["pp"] < 0.6 * estimate(tp2).time_s["pp"]
    engine = estimate(tp2.replace(zero_stage=1))  # partitioned whatever the option (pipe_partitioned)
    assert engine.time_s["pp"] == pytest.approx(8 * (4 * half + 2 * gather))
    sequence_parallel = tp2.replace(sequence_parallel=True)
    assert estimate(sequence_parallel.replace(options=Options(pp_scatter_gather=True))).time_s["pp"] == pytest.approx(
        8 * 2 * half
    )


@pytest.mark.parametrize(
    "release, flags, split",
    [
        ("megatron-deepspeed", (), True),
        ("bigscience", (), True),
        ("megatron-deepspeed", ("--no-scatter-gather-tensors-in-pipeline",), False),
        ("0.16", (), False),  # megatron/core's p2p sends whole tensors; the flag is parsed and ignored
        ("0.4", (), False),
        (None, (), False),
    ],
)
def test_which_releases_split_the_pipeline_sends(release, flags, split):
    from plint.cost.layout_fields import pipeline_scatter_gather

    assert pipeline_scatter_gather(release, _Flags(*flags)) is split


def test_zero_1_and_2_reduce_after_the_backward_unless_overlap_comm():
    # DeepSpeed turns overlap_comm on by default only at ZeRO-3: at stage 1 the gradient reduce-scatter
    # and the parameter all-gather (2 B each per local parameter) follow the last backward in full
    single = GPT_16.replace(pp=1, zero_stage=1, options=ALPHA_BETA)  # the alpha-beta link model, as above
    default = estimate(single)
    explicit_off = estimate(single.replace(options=Options(zero_overlap_comm=False, measured_collectives=False)))
    on = estimate(single.replace(options=Options(zero_overlap_comm=True, measured_collectives=False)))
    assert default.time_s["dp"] == pytest.approx(explicit_off.time_s["dp"])
    assert on.time_s["dp"] < default.time_s["dp"]
    # 2 domains of 8: NVLink part 7/8 * B / (900/2 * 0.8 = 360e9) + 7 * 3 us, network part
    # 1/2 * (B/8) / 42.5e9 + 8 us, for B = 2 * P bytes; reduce-scatter then all-gather
    p = default.params
    nbytes = 2 * p

    def ring(b):
        return 7 / 8 * b / 360e9 + 7 * 3e-6 + 1 / 2 * (b / 8) / 42.5e9 + 8e-6

    assert default.time_s["dp"] == pytest.approx(2 * ring(nbytes), rel=1e-3)
    # ZeRO-3 keeps the overlap by default (prefetch): its exposed DP time is far below the full traffic
    z3 = estimate(single.replace(zero_stage=3))
    assert z3.time_s["dp"] < 3 * ring(nbytes)


def test_fsdp_with_pipeline_keeps_batched_p2p():
    # ZeRO-3 with PP > 1 is FSDP (DeepSpeed's PipelineEngine rejects ZeRO-2/3): two transfers per
    # micro-batch as in Megatron, 4 micro-batches x 2 x 4.02758e-4 s = 3.2221e-3 s (see above)
    p2p = 16_777_216 / 42.5e9 + 8e-6
    fsdp = estimate(GPT_16.replace(zero_stage=3))
    assert fsdp.time_s["pp"] == pytest.approx(4 * 2 * p2p)


def test_zero3_without_overlap_exposes_every_micro_batch_gather():
    # ZeRO-3 on 16 GPUs (2 nodes of 8), pp = 1, micro-batch 4: m = 128 / (4 * 16) = 2 micro-batches,
    # each gathering the 2 B parameters forward and backward and reduce-scattering 2 B gradients over
    # the 16 ranks (less traffic than one micro-batch's compute, so the default hides all of it)
    z3 = GPT_16.replace(pp=1, zero_stage=3, micro_batch=4, global_batch=128, options=ALPHA_BETA)  # (as above)
    hidden = estimate(z3)  # default: prefetch hides it, costing overlap_slowdown (0.2) of itself
    serial = estimate(z3.replace(options=Options(zero_overlap_comm=False, measured_collectives=False)))

    def ring(b):  # 7/8 over NVLink (360e9 B/s, 3 us a step), 1/2 of B/8 over the NIC (42.5e9 B/s, 8 us)
        return 7 / 8 * b / 360e9 + 7 * 3e-6 + 1 / 2 * (b / 8) / 42.5e9 + 8e-6

    per_mb = 3 * ring(2 * hidden.params)
    # the first layer's share is exposed in both; the rest costs 1 - 0.2 = 0.8 of itself more serialised
    assert serial.time_s["dp"] - hidden.time_s["dp"] == pytest.approx(2 * 0.8 * per_mb, rel=1e-3)


def test_deepspeed_zero3_gathers_again_for_a_recompute():
    # DeepSpeed hooks every sub-module: forward gather, recompute-forward gather, backward gather, plus
    # the gradient reduce-scatter of the same 2 B x params: 3 + 1 = 4 equal collectives per micro-batch
    # against FSDP's 2 + 1 = 3 (its block stays unsharded from the recompute to the backward). Without
    # overlap every one is exposed (the first layer's share scales alike): the ratio is 4 / 3.
    serial = Options(zero_overlap_comm=False)
    z3 = GPT_16.replace(pp=1, zero_stage=3, micro_batch=4, global_batch=128, recompute="full")
    deepspeed = estimate(z3.replace(options=serial))
    fsdp = estimate(z3.replace(options=Options(zero_overlap_comm=False, zero3_engine="fsdp")))
    assert deepspeed.time_s["dp"] / fsdp.time_s["dp"] == pytest.approx(4 / 3)
    # without recompute both gather twice
    plain = z3.replace(recompute=None)
    assert estimate(plain.replace(options=serial)).time_s["dp"] == pytest.approx(
        estimate(plain.replace(options=Options(zero_overlap_comm=False, zero3_engine="fsdp"))).time_s["dp"]
    )


class _Flags:
    def __init__(self, *present):
        self.given = set(present)

    def present(self, option):
        return option in self.given


@pytest.mark.parametrize(
    "release, flags, asynchronous",
    [
        ("0.16", (), True),
        ("0.16", ("--no-async-tensor-model-parallel-allreduce",), True),  # parsed, then ignored (0.7 on)
        ("0.6", ("--no-async-tensor-model-parallel-allreduce",), False),
        ("0.4", (), True),
        ("megatron-deepspeed", ("--no-async-tensor-model-parallel-allreduce",), False),
        ("megatron-deepspeed", (), True),
        ("bigscience", (), False),  # megatron/mpu/layers.py of 2021: copy_to_tensor_model_parallel_region, in line
        (None, (), True),
    ],
)
def test_which_releases_run_the_backward_tp_collectives_asynchronously(release, flags, asynchronous):
    from plint.cost.layout_fields import async_tp_backward

    assert async_tp_backward(release, _Flags(*flags)) is asynchronous


# ---- fixed costs of an iteration (issue 24; Options.host_*_s fitted by benchmarks/fit_step_overhead.py) ----
TINY = ModelInput(
    num_layers=4,
    hidden_size=256,
    num_attention_heads=4,
    seq_length=128,
    vocab_size=1024,
    micro_batch=1,
    global_batch=16,
    pp=2,
    gpu="a100-80gb",
    precision="bf16",
)


def test_a_tiny_models_micro_batch_waits_on_the_hosts_dispatch_of_its_layers():
    from plint.catalog.hardware import lookup_gpu
    from plint.cost.host_dispatch import host_microbatch_s
    from plint.cost.params import count_params

    o = Options()
    a100, h100 = lookup_gpu("a100-80gb"), lookup_gpu("h100-sxm")
    c = count_params(TINY)
    # 2 layers per stage on DGX A100: 0.58 ms + 2 x 5.08 ms = 10.74 ms; DGX H100's host at 0.751 of it: 8.066 ms
    assert host_microbatch_s(TINY, c, a100) == pytest.approx(o.host_microbatch_s + 2 * o.host_layer_s)
    assert host_microbatch_s(TINY, c, a100) == pytest.approx(0.01074)
    assert host_microbatch_s(TINY, c, h100) == pytest.approx(0.751 * 0.01074)
    # CP adds its ring's per-layer cost: 0.58 + 2 x (5.08 + 1.12) = 12.98 ms
    assert host_microbatch_s(TINY.replace(cp=2), c, a100) == pytest.approx(0.01298)
    est = estimate(TINY)
    m = est.num_microbatches  # 16 / (1 x dp 4) = 4
    gpu_microbatch = sum(est.time_s[k] for k in ("compute", "recompute", "tp", "cp", "ep", "pp")) / m
    assert gpu_microbatch < 0.01074  # the tiny layers' kernels take far less than their dispatch
    # each of the 4 micro-batches waits for the host, and the iteration's fixed 61.46 ms comes once
    assert est.time_s["overhead"] == pytest.approx(m * (0.01074 - gpu_microbatch) + 0.06146, rel=1e-6)
    # the 1F1B bubble (pp - 1)/m = 1/4 of 4 micro-batches of 10.74 ms each
    assert est.time_s["bubble"] == pytest.approx(0.01074, rel=1e-6)
    assert est.step_time_s == pytest.approx(sum(est.time_s.values()))


def test_a_large_models_layers_hide_the_hosts_dispatch():
    est = estimate(LLAMA3_70B)
    # every micro-batch's GPU time exceeds 80/pp layers x 5.08 ms: only the per-iteration cost remains
    assert est.time_s["overhead"] == pytest.approx(0.751 * Options().host_step_s)
