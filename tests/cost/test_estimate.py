"""The estimate as a whole: its JSON shape, its arithmetic identities and the direction of its effects."""

import pytest
from plint.cost import ModelInput, Options, estimate
from plint.cost.comm import Links, all_reduce, reduce_scatter
from plint.layout import Layout
from plint.values import Value

LLAMA3_70B = ModelInput(num_layers=80, hidden_size=8192, num_attention_heads=64, num_query_groups=8, seq_length=8192,
                        vocab_size=128256, ffn_hidden_size=28672, swiglu=True, untie_embeddings=True,
                        normalization="RMSNorm", add_bias_linear=False, tp=4, pp=4, vpp=5, cp=2,
                        sequence_parallel=True, distributed_optimizer=True, micro_batch=1, global_batch=4096,
                        gpu="h100-sxm", nnodes=256, gpus_per_node=8)


def test_json_matches_the_layout_contract():
    out = estimate(LLAMA3_70B).to_json()
    assert set(out["memory_gib"]) == {"weights", "grads", "optimizer", "activations", "other", "total", "usable"}
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
    assert mem["total"] == pytest.approx(sum(v for k, v in mem.items() if k not in ("total", "usable")))
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
    layout = _layout(model__num_layers=32, model__hidden_size=4096, model__num_attention_heads=32,
                     model__num_query_groups=8, model__seq_length=8192, model__vocab_size=128256,
                     model__ffn_hidden_size=14336, model__swiglu=True, parallel__tp=2, parallel__pp=2,
                     parallel__cp=1, parallel__dp=4, batch__micro=1, batch__global=64, cluster__world_size=16,
                     cluster__nnodes=2, cluster__gpus_per_node=8, cluster__gpu="h100-sxm", precision="bf16",
                     recompute__granularity="full")
    inp = ModelInput.from_layout(layout)
    assert (inp.tp, inp.pp, inp.data_parallel(), inp.nnodes, inp.recompute, inp.swiglu) == (2, 2, 4, 2, "full", True)
    assert estimate(inp).num_microbatches == 16


def test_from_layout_without_a_model_shape_is_none():
    assert ModelInput.from_layout(_layout(parallel__tp=2, cluster__world_size=8)) is None


def test_options_change_the_overlap_not_the_model():
    plain = estimate(LLAMA3_70B)
    overlapped = estimate(LLAMA3_70B.replace(options=Options(tp_comm_overlap=True, overlap_grad_reduce=True,
                                                             overlap_param_gather=True)))
    assert overlapped.step_time_s < plain.step_time_s and overlapped.params == plain.params
