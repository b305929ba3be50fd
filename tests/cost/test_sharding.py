"""Sharded data parallelism (parallel.sharding): model states per GPU worked out by hand, and DeepSpeed's own
ZeRO-3 estimator (estimate_zero3_model_states_mem_needs in deepspeed/runtime/zero/stage3.py; deepspeed.md
sec. 4.1: no offload, GPU = 4L + 18P/N, L the largest module's parameters)."""

import pytest
from plint.cost import ModelInput, Options, count_params
from plint.cost.estimate import estimate
from plint.cost.memory import memory_bytes

GIB = 1 << 30

# Llama-3 8B as Megatron builds it: 32 layers, h 4096, GQA 8 groups of 128, SwiGLU f 14336, RMSNorm, no
# biases, rope, untied output layer, vocabulary 128,256 (a multiple of 128: no padding).
LLAMA3_8B = ModelInput(
    num_layers=32,
    hidden_size=4096,
    num_attention_heads=32,
    num_query_groups=8,
    kv_channels=128,
    ffn_hidden_size=14336,
    swiglu=True,
    normalization="RMSNorm",
    add_bias_linear=False,
    untie_embeddings=True,
    seq_length=8192,
    vocab_size=128256,
    hidden_dropout=0.0,
    attention_dropout=0.0,
    micro_batch=1,
    global_batch=128,
    nnodes=2,
    gpus_per_node=8,
    gpu="h100-sxm",
)
# per layer: QKV 4096 x (4096 + 2 x 1024), projection 4096^2, fc1 4096 x 2 x 14336, fc2 14336 x 4096, 2 norms
LAYER = 4096 * 6144 + 4096**2 + 4096 * 28672 + 14336 * 4096 + 2 * 4096
EMBEDDING = 128256 * 4096
P_8B = 32 * LAYER + 2 * EMBEDDING + 4096  # + the final norm
assert (LAYER, EMBEDDING, P_8B) == (218_112_000, 525_336_576, 8_030_261_248)


def test_megatron_fsdp_full_shard_llama3_8b_on_16_gpus():
    fsdp = LLAMA3_8B.replace(distributed_optimizer=True, megatron_fsdp=True, sharding="parameters")
    assert count_params(fsdp).total == P_8B
    mem = memory_bytes(fsdp, count_params(fsdp), 8)
    # bf16 weights, fp32 main grads, fp32 master + Adam (2 + 4 + 12 bytes) over dp 16, plus two un-sharded
    # units (docs/user-guide/features/megatron_fsdp.md, double buffering): the output layer (the largest
    # unit) and a transformer layer, weights (2 B) and gradients (4 B)
    units = EMBEDDING + LAYER
    assert mem["weights"] == pytest.approx(2 * P_8B / 16 + 2 * units)  # 2.32 GiB
    assert mem["grads"] == pytest.approx(4 * P_8B / 16 + 4 * units)  # 4.64 GiB
    assert mem["optimizer"] == pytest.approx(12 * P_8B / 16)  # 5.61 GiB
    assert round(mem["weights"] / GIB, 2) == 2.32 and round(mem["grads"] / GIB, 2) == 4.64
    # the distributed optimizer alone keeps whole weights and grads: the 90 GiB of the false PL401
    dist_opt = memory_bytes(LLAMA3_8B.replace(distributed_optimizer=True), count_params(fsdp), 8)
    assert (dist_opt["weights"], dist_opt["grads"]) == (2 * P_8B, 4 * P_8B)
    saved = 6 * P_8B - 6 * P_8B / 16 - 6 * (EMBEDDING + LAYER)  # 37.9 GiB
    assert sum(dist_opt.values()) - sum(mem.values()) == pytest.approx(saved)


@pytest.mark.parametrize(
    ("strategy", "weights", "grads"),
    [("optimizer", 2 * P_8B, 4 * P_8B), ("gradients", 2 * P_8B, 4 * P_8B / 16 + 4 * (EMBEDDING + LAYER))],
)
def test_megatron_fsdp_lesser_strategies(strategy, weights, grads):
    # optim: the distributed optimizer's shard alone; optim_grads: and the fp32 gradients, with the two
    # un-sharded units' gradient buffers; the weights stay whole
    inp = LLAMA3_8B.replace(distributed_optimizer=True, megatron_fsdp=True, sharding=strategy)
    mem = memory_bytes(inp, count_params(inp), 8)
    assert (mem["weights"], mem["grads"]) == (pytest.approx(weights), pytest.approx(grads))
    assert mem["optimizer"] == pytest.approx(12 * P_8B / 16)


# Llama-2 7B, DeepSpeed's worked example (deepspeed.md sec. 4.1: 6.74 B params, L = 32000 x 4096, one node of 8)
LLAMA2_7B = ModelInput(
    num_layers=32,
    hidden_size=4096,
    num_attention_heads=32,
    ffn_hidden_size=11008,
    swiglu=True,
    normalization="RMSNorm",
    add_bias_linear=False,
    untie_embeddings=True,
    seq_length=4096,
    vocab_size=32000,
    hidden_dropout=0.0,
    attention_dropout=0.0,
    micro_batch=1,
    global_batch=64,
    nnodes=1,
    gpus_per_node=8,
    gpu="a100-sxm-80gb",
    zero_stage=3,
)
P_7B = 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
L_7B = 32000 * 4096  # the embedding (and the output layer): larger than fc1, 2 x 11008 x 4096


def test_deepspeed_zero3_against_deepspeeds_estimator():
    c = count_params(LLAMA2_7B)
    assert c.total == P_7B == 6_738_415_616
    ds_estimate = 4 * L_7B + 18 * P_7B / 8  # estimate_zero3_model_states_mem_needs, no offload
    assert round(ds_estimate / GIB, 2) == 14.61  # the output deepspeed.md records
    # plint: 16-bit weights and gradients and fp32 master + Adam over dp 8, the largest module's gathered
    # weights and gradients (4L) ...
    mem = memory_bytes(LLAMA2_7B, c, 4)
    assert mem["weights"] == pytest.approx(2 * P_7B / 8 + 2 * L_7B)
    assert mem["grads"] == pytest.approx(2 * P_7B / 8 + 2 * L_7B)
    states = mem["weights"] + mem["grads"] + 12 * P_7B / 8
    # ... which is DeepSpeed's 4L + 18P/N less its 4 B of fp32 gradients plus the 2 B of 16-bit gradients
    # plint keeps through the backward; the fp32 copy (4P/N) exists only in the step, where plint adds
    # what it exceeds the freed activations by
    assert states == pytest.approx(ds_estimate - 2 * P_7B / 8)
    assert mem["optimizer"] == pytest.approx(12 * P_7B / 8 + max(0.0, 4 * P_7B / 8 - mem["activations"]))


def test_sharding_field_overrides_the_zero_stage_for_fsdp():
    # HF --fsdp full_shard: no ZeRO stage, parallel.sharding "parameters": sharded as ZeRO-3
    hf = LLAMA2_7B.replace(zero_stage=None, sharding="parameters")
    assert memory_bytes(hf, count_params(hf), 4)["weights"] == pytest.approx(2 * P_7B / 8 + 2 * L_7B)


def test_full_shard_all_gathers_every_micro_batch():
    # ZeRO-3 / FSDP gathers the weights forward and backward for every micro-batch: more DP traffic per
    # step than the distributed optimizer's one reduce-scatter and all-gather
    fsdp = LLAMA3_8B.replace(distributed_optimizer=True, megatron_fsdp=True, sharding="parameters")
    dist_opt = LLAMA3_8B.replace(distributed_optimizer=True)
    assert estimate(fsdp).time_s["dp"] > estimate(dist_opt).time_s["dp"]


# ---- hybrid sharding (parallel.dp_outer) -----------------------------------------------------------------
# Megatron's --num-distributed-optimizer-instances N splits the dp x cp group into N consecutive inner groups
# (megatron/core/parallel_state.py: intra-partial data-parallel groups of dp*cp/N ranks); the distributed
# optimizer shards over the inner group, reduce-scatters the gradients there and all-reduces the shard across
# the N instances (megatron/core/distributed/param_and_grad_buffer.py); Megatron-FSDP runs HSDP on the same
# groups (megatron/core/distributed/fsdp/mcore_fsdp_adapter.py, enable_hsdp = N > 1).

LLAMA3_8B_32 = LLAMA3_8B.replace(nnodes=4, distributed_optimizer=True)  # 4 nodes x 8: dp 32


def _links(inp):
    from plint.catalog.hardware import lookup_gpu
    from plint.cost.estimate import group_links as links

    return links(inp, lookup_gpu(inp.gpu))


def test_hybrid_distributed_optimizer_shards_over_the_inner_group_only():
    flat, hybrid = LLAMA3_8B_32, LLAMA3_8B_32.replace(dp_outer=4)
    assert (flat.shard_group(), hybrid.shard_group()) == (32, 8)
    c = count_params(flat)
    # 12 bytes of fp32 master + Adam per parameter over 8 ranks instead of 32: 11.22 GiB instead of 2.80
    assert memory_bytes(hybrid, c, 4)["optimizer"] == pytest.approx(12 * P_8B / 8)
    assert memory_bytes(flat, c, 4)["optimizer"] == pytest.approx(12 * P_8B / 32)
    assert round(12 * P_8B / 8 / GIB, 2) == 11.22 and round(12 * P_8B / 32 / GIB, 2) == 2.80
    # the weights (2 B) and fp32 gradients (4 B) stay whole under the distributed optimizer either way
    assert memory_bytes(hybrid, c, 4)["weights"] == memory_bytes(flat, c, 4)["weights"] == 2 * P_8B


def test_hybrid_distributed_optimizer_communicates_inside_the_inner_group():
    # no overlap flags: the DP time is all exposed. Inner groups of 8 consecutive ranks (tp 1) are one node
    # each: the reduce-scatter of the 4-byte gradients and the all-gather of the 2-byte weights run over
    # NVLink, ring steps 7/8 of the buffer; once per step the 1/8 shard of the gradients is all-reduced over
    # the 4 instances, one per node, 8 ranks apart: twice a ring's 3/4 of it over each GPU's NIC
    # (the alpha-beta link model, as for a GPU without measured collectives: tests/cost/test_collectives.py)
    alpha_beta = Options(measured_collectives=False)
    hybrid = LLAMA3_8B_32.replace(dp_outer=4, options=alpha_beta)
    links = _links(hybrid)
    nv, net = links.nvlink_bw, links.net_bw
    inner = 7 / 8 * 4 * P_8B / nv + 7 * links.alpha_nv + 7 / 8 * 2 * P_8B / nv + 7 * links.alpha_nv
    outer = 2 * (3 / 4 * 4 * P_8B / 8 / net + 3 * links.alpha_net)
    assert estimate(hybrid).time_s["dp"] == pytest.approx(inner + outer)
    # the flat group of 32 spans the 4 nodes in both collectives: a network share of 3/4 of 1/8 of each buffer
    flat = estimate(LLAMA3_8B_32.replace(options=alpha_beta)).time_s["dp"]
    assert flat == pytest.approx(inner + 3 / 4 * (4 + 2) * P_8B / 8 / net + 2 * 3 * links.alpha_net)
    # the optimizer step updates a shard 4x as large
    assert estimate(hybrid).time_s["optimizer"] == pytest.approx(4 * estimate(LLAMA3_8B_32).time_s["optimizer"])


def test_hybrid_megatron_fsdp_full_shard_over_one_node_replicated_over_two():
    # Megatron-FSDP optim_grads_params with 2 instances on 2 nodes: every state sharded over the 8 GPUs of a
    # node, the per-layer gathers and reduce-scatters as on one node alone, plus one all-reduce per step of
    # the fp32 gradient shard (4P/8 bytes) across the 2 replicas (megatron_fsdp.py: the outer-group reduce on
    # the last micro-batch)
    fsdp = dict(distributed_optimizer=True, megatron_fsdp=True, sharding="parameters")
    hsdp = LLAMA3_8B.replace(dp_outer=2, **fsdp)  # 16 GPUs, global 128: m = 8
    one_node = LLAMA3_8B.replace(nnodes=1, global_batch=64, **fsdp)  # 8 GPUs, global 64: m = 8
    c = count_params(hsdp)
    mem = memory_bytes(hsdp, c, 8)
    units = EMBEDDING + LAYER  # the two un-sharded units, as in the flat case above
    assert mem["weights"] == pytest.approx(2 * P_8B / 8 + 2 * units)
    assert mem["grads"] == pytest.approx(4 * P_8B / 8 + 4 * units)
    assert mem["optimizer"] == pytest.approx(12 * P_8B / 8)
    links = _links(hsdp)
    across = 2 * (1 / 2 * 4 * P_8B / 8 / links.net_bw + links.alpha_net)
    assert estimate(hsdp).time_s["dp"] == pytest.approx(estimate(one_node).time_s["dp"] + across)
    # --outer-dp-sharding-strategy optim: the optimizer over all 16, the gradient shard reduce-scattered (half
    # the all-reduce) and the updated 16-bit shard all-gathered across the replicas
    outer_optim = hsdp.replace(outer_optimizer_sharded=True)
    assert memory_bytes(outer_optim, c, 8)["optimizer"] == pytest.approx(12 * P_8B / 16)
    across = (1 / 2 * 4 * P_8B / 8 / links.net_bw + links.alpha_net) + (
        1 / 2 * 2 * P_8B / 8 / links.net_bw + links.alpha_net
    )
    assert estimate(outer_optim).time_s["dp"] == pytest.approx(estimate(one_node).time_s["dp"] + across)


def test_hybrid_sharding_is_read_from_megatron_and_hf_launches(tmp_path):
    from plint.checking.check import check_paths

    def layout(text: str):
        path = tmp_path / "launch.sh"
        path.write_text("#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n" + text)
        (result,) = check_paths([path])
        return result.layouts[0]

    common = (
        "torchrun --nnodes 4 --nproc_per_node 8 --node_rank 0 --master_addr n0 pretrain_gpt.py "
        "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 "
        "--max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 256 --bf16 "
    )
    hybrid = layout(common + "--use-distributed-optimizer --num-distributed-optimizer-instances 4\n")
    got = hybrid.get("parallel.dp_outer")
    assert (got.value, got.origin, got.span.line) == (4, "literal", 3)
    flat = layout(common + "--use-distributed-optimizer\n").get("parallel.dp_outer")
    assert (flat.value, flat.origin) == (1, "default")
    assert layout(common + "\n").get("parallel.dp_outer") is None  # nothing sharded, nothing replicated
    # HF --fsdp hybrid_shard: torch FSDP's HYBRID_SHARD shards inside a node and replicates across the 2 nodes
    hf = layout(
        "torchrun --nnodes 2 --nproc_per_node 8 --node_rank 0 --master_addr n0 train.py "
        "--output_dir out --fsdp 'hybrid_shard auto_wrap' --bf16\n"
    ).get("parallel.dp_outer")
    assert (hf.value, hf.origin) == (2, "derived") and "one replica per node" in hf.note


def _pl101(tmp_path, nodes: int, flags: str) -> list:
    """PL101's findings on a Megatron launch over nodes x 8 GPUs with these flags."""
    from plint.checking.check import check_paths

    path = tmp_path / "launch.sh"
    path.write_text(
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        f"torchrun --nnodes {nodes} --nproc_per_node 8 --node_rank 0 --master_addr n0 pretrain_gpt.py "
        f"{flags} --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        "--max-position-embeddings 2048 --micro-batch-size 1 --bf16\n"
    )
    (result,) = check_paths([path])
    return [d for d in result.diagnostics if d.code == "PL101"]


def test_hybrid_sharding_that_does_not_divide_dp_is_a_start_up_error(tmp_path):
    def findings(instances: int):
        return _pl101(
            tmp_path,
            3,
            "--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer "
            f"--num-distributed-optimizer-instances {instances} --global-batch-size 240",
        )

    # 24 GPUs / tp 2 = dp 12: 3 instances of 4 ranks divide it, 8 do not (megatron/core/parallel_state.py
    # asserts dp*cp % instances == 0)
    assert findings(3) == []
    (bad,) = findings(8)
    assert (
        bad.key == "parallel.dp_outer"
        and "dp*cp = 12 is not divisible by --num-distributed-optimizer-instances 8" in bad.message
    )


def test_hybrid_sharding_that_does_not_divide_the_expert_data_parallel_group_is_a_start_up_error(tmp_path):
    def findings(ep: int):
        return _pl101(
            tmp_path,
            2,
            "--use-distributed-optimizer --num-distributed-optimizer-instances 4 --num-experts 8 "
            f"--expert-model-parallel-size {ep} --moe-router-topk 2 --global-batch-size 256",
        )

    # 16 GPUs: dp 16 divides by 4 instances; the expert-data-parallel size 16/ep must as well
    # (megatron/core/parallel_state.py: "Expert data parallel size should be divisible by partial DistOpt
    # shard factor"): ep 2 leaves 8, ep 8 leaves 2 (review)
    assert findings(2) == []
    (bad,) = findings(8)
    assert (
        bad.key == "parallel.dp_outer"
        and "world/(etp*ep*pp) = 16/8 = 2 is not divisible by --num-distributed-optimizer-instances 4" in bad.message
    )


def test_the_planner_keeps_hybrid_sharding_to_layouts_it_divides():
    from plint.planning.plan import plan

    # 32 GPUs, 4 distributed-optimizer instances: every candidate's dp*cp is a multiple of 4, and its
    # optimizer is costed over dp*cp/4 ranks
    candidates = plan(LLAMA3_8B_32.replace(dp_outer=4, tp=1, pp=1)).candidates
    assert candidates
    for c in candidates:
        group = c.inp.data_parallel() * c.inp.cp
        assert group % 4 == 0 and c.inp.shard_group() == group // 4


def test_a_plan_no_layout_of_which_the_instances_divide_says_so_not_memory():
    from plint.planning.plan import plan
    from plint.planning.plan_report import render_text

    # 3 nodes x 8 = 24 GPUs with 16 instances: no dp*cp is a multiple of 16; nothing was estimated, so
    # "no layout fits within 90% of usable memory" would be false (review)
    result = plan(LLAMA3_8B.replace(nnodes=3, dp_outer=16, distributed_optimizer=True, global_batch=96))
    assert result.candidates == [] and result.considered == 0
    last = render_text(result).splitlines()[-1]
    assert "memory" not in last and "--num-distributed-optimizer-instances 16" in last and "PL101" in last


def test_zero_plus_plus_hpz_is_a_secondary_weight_copy_not_hybrid_sharding(tmp_path):
    # deepspeed/runtime/zero/partition_parameters.py: with zero_hpz_partition_size k the states stay split
    # over all of dp (ds_tensor) and each rank adds a secondary 16-bit copy split over k consecutive ranks
    # (ds_secondary_tensor, tensor_size // k); deepspeed/utils/groups.py builds those groups of min(k, world)
    from plint.checking.check import check_paths
    from plint.cost.layout_estimate import cost_input

    (tmp_path / "ds.json").write_text(
        '{"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 4, '
        '"bf16": {"enabled": true}, '
        '"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}}'
    )
    (tmp_path / "hostfile").write_text("node-0 slots=8\nnode-1 slots=8\n")
    (tmp_path / "launch.sh").write_text(
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        "deepspeed --num_nodes 2 --num_gpus 8 --hostfile hostfile pretrain_gpt.py --deepspeed --deepspeed_config "
        "ds.json --zero-stage 3 --no-pipeline-parallel --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
        "--seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 --bf16 "
        "--vocab-size 32000\n"
    )
    (result,) = check_paths([tmp_path / "launch.sh"])
    inp = cost_input(result.layouts[0])
    assert (inp.hpz_partition, inp.zero_stage, inp.data_parallel(), inp.dp_outer) == (8, 3, 16, 1)
    # Llama-2 7B on 16 GPUs: 16-bit weights over 16 ranks, the largest module gathered (2L), and the hpZ copy
    # over 8: 2P/16 + 2L + 2P/8
    hpz = LLAMA2_7B.replace(nnodes=2, hpz_partition=8)
    c = count_params(hpz)
    assert memory_bytes(hpz, c, 4)["weights"] == pytest.approx(2 * P_7B / 16 + 2 * L_7B + 2 * P_7B / 8)
    assert memory_bytes(hpz, c, 4)["optimizer"] == pytest.approx(12 * P_7B / 16)  # still over all 16
    # the backward gathers stay inside a node: less data-parallel time than plain ZeRO-3 on the two nodes
    assert estimate(hpz).time_s["dp"] < estimate(hpz.replace(hpz_partition=1)).time_s["dp"]


@pytest.mark.parametrize(
    "stage, offload_param, gpu_bytes, host_bytes, gpu_gib, host_gib",
    [
        # ZeRO-2, optimizer offloaded: GPU 2P, CPU P max(4N, 16) f
        (2, False, 2 * P_7B, P_7B * 32 * 1.5, 12.55, 301.30),
        # ZeRO-3, optimizer offloaded: GPU 4L + 2P/N, CPU 16P f (zero_init)
        (3, False, 4 * L_7B + 2 * P_7B / 8, 16 * P_7B * 1.5, 2.06, 150.65),
        # ZeRO-3, parameters too: GPU 4L, CPU 18P f (zero_init)
        (3, True, 4 * L_7B, 18 * P_7B * 1.5, 0.49, 169.48),
    ],
)
def test_cpu_offload_against_deepspeeds_estimators(stage, offload_param, gpu_bytes, host_bytes, gpu_gib, host_gib):
    """(issue 23) DeepSpeed's estimators (deepspeed.md sec. 4.1: one node of 8, additional_buffer_factor 1.5) on
    Llama-2 7B: the model states plint keeps on the GPU and the host memory it reports per node are the
    estimators' figures, and within 0.1% of the outputs deepspeed.md records for its 6.74 B example; with the
    optimizer on the CPU no fp32 gradient copy is made on the GPU."""
    from plint.cost.memory import host_memory_bytes

    inp = LLAMA2_7B.replace(zero_stage=stage, offload_optimizer=True, offload_param=offload_param)
    c = count_params(inp)
    mem = memory_bytes(inp, c, 4)
    assert mem["optimizer"] == 0.0
    assert mem["weights"] + mem["grads"] == pytest.approx(gpu_bytes)
    assert host_memory_bytes(inp, c) == pytest.approx(host_bytes)
    assert (mem["weights"] + mem["grads"]) / GIB == pytest.approx(gpu_gib, rel=1e-3, abs=0.005)
    assert host_bytes / GIB == pytest.approx(host_gib, rel=1e-3)
    assert estimate(inp).host_memory_gib == pytest.approx(host_memory_bytes(inp, c) / GIB)
    assert host_memory_bytes(LLAMA2_7B, c) is None and estimate(LLAMA2_7B).host_memory_gib is None
