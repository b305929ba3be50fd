"""MoE as it runs (issue 24 item 3): the token dispatcher's bytes (allgather, alltoall, flex), the busiest
expert-parallel rank (Options.moe_load_imbalance), and the launch flags that choose them; hand-worked."""

from __future__ import annotations

import sys

import pytest
from plint.catalog.hardware import lookup_gpu
from plint.checking.check import check_paths
from plint.cost import ModelInput, Options
from plint.cost.comm import Links, all_gather, all_to_all
from plint.cost.layout_estimate import cost_input
from plint.cost.moe_time import a2a_overlapped_layer, paired_share
from plint.rules.common import gpt, torchrun

estimate_module = sys.modules["plint.cost.estimate"]  # plint.cost.estimate the name is the function

MOE = ModelInput(
    num_layers=4,
    hidden_size=4096,
    num_attention_heads=32,
    seq_length=4096,
    vocab_size=32000,
    swiglu=True,
    num_experts=64,
    moe_topk=8,
    moe_ffn_hidden_size=1024,
    ep=16,
    etp=1,
    micro_batch=1,
    global_batch=64,
    gpu="h100-sxm",
    nnodes=2,
    gpus_per_node=8,
)
TOKEN_BYTES = 4096 * 4096 * 2  # one micro-batch's tokens of h = 4096 in bf16


def _kernels(**options):
    inp = MOE.replace(options=Options(measured_collectives=False, **options))
    return estimate_module._kernels(inp, lookup_gpu("h100-sxm"))


def test_all_to_all_sends_only_the_network_bytes_it_is_given_across_nodes():
    links = Links(8, 100e9, 10e9, 0.0, 0.0, 16)
    # 16 MB over 16 ranks on 2 nodes: 7/16 over NVLink (70 us), 8/16 over the NIC (800 us); the longer counts
    assert all_to_all(links, 16e6, 16, 1) == pytest.approx(8e6 / 10e9)
    # DeepEP-style forwarding: 2 MB cross the NIC (200 us), the NVLink share is unchanged
    assert all_to_all(links, 16e6, 16, 1, network_bytes=2e6) == pytest.approx(2e6 / 10e9)


def test_the_three_dispatchers_move_their_own_bytes():
    k = _kernels()
    links = k.links
    # alltoall: each of the 4096 tokens to its 8 experts' ranks, 8 x 32 MiB spread over 16 ranks on 2 nodes
    alltoall = estimate_module._token_dispatch(k, 4096, 8, 16, 1)
    assert alltoall == pytest.approx(all_to_all(links, 8 * TOKEN_BYTES, 16, 1))
    # allgather: every rank's 32 MiB gathered by all 16, whatever the routing
    allgather = estimate_module._token_dispatch(_kernels(moe_dispatcher="allgather"), 4096, 8, 16, 1)
    assert allgather == pytest.approx(all_gather(links, 16 * TOKEN_BYTES, 16, 1))
    # flex: a token crosses to the other node once if any of its 8 experts is there: 1 - (1/2)^8 = 0.99609
    flex = estimate_module._token_dispatch(_kernels(moe_dispatcher="flex"), 4096, 8, 16, 1)
    assert flex == pytest.approx(all_to_all(links, 8 * TOKEN_BYTES, 16, 1, network_bytes=0.99609375 * TOKEN_BYTES))
    # the network share alone is 4 copies for alltoall (8 x 8/16) against 0.996 for flex
    net = links.net_bw
    assert alltoall - links.alpha_net - 7 * links.alpha_nv == pytest.approx(4 * TOKEN_BYTES / net)
    assert flex - links.alpha_net == pytest.approx(
        max(0.99609375 * TOKEN_BYTES / net, 8 * TOKEN_BYTES * 7 / 16 / links.nvlink_bw) + 7 * links.alpha_nv
    )


def test_the_busiest_expert_rank_sets_the_moe_layer():
    base = estimate_module._moe_layer(_kernels(moe_load_imbalance=1.0))
    busy = estimate_module._moe_layer(_kernels(moe_load_imbalance=1.12))
    assert busy[2] == pytest.approx(1.12 * base[2])  # its all-to-all receives 12% more
    assert busy[0] > base[0] and busy[1] > base[1]  # and its expert GEMMs and permutes process 12% more rows
    # without expert parallelism every GPU holds every expert: no rank waits for another
    one = MOE.replace(ep=1, nnodes=1, global_batch=32)
    kernels = [
        estimate_module._kernels(one.replace(options=Options(moe_load_imbalance=f)), lookup_gpu("h100-sxm"))
        for f in (1.0, 1.12)
    ]
    assert estimate_module._moe_layer(kernels[0]) == estimate_module._moe_layer(kernels[1])


@pytest.mark.parametrize(
    "flags, dispatcher, overlap",
    [
        ("", "allgather", False),  # Megatron's default (megatron/training/arguments.py)
        ("--moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm", "alltoall", True),
        ("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep", "flex", False),
    ],
)
def test_the_launch_chooses_the_dispatcher_and_its_overlap(tmp_path, flags, dispatcher, overlap):
    extra = f"--num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 8 {flags}".strip()
    for name, text in torchrun(gpt(extra)).files.items():
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / "launch.sh"])
    options = cost_input(result.layouts[0]).options
    assert (options.moe_dispatcher, options.moe_a2a_overlap) == (dispatcher, overlap)


def test_node_limited_routing_reaches_fewer_remote_nodes():
    """DeepSeek-V3's router (--moe-router-num-groups 8 --moe-router-group-topk 4; Megatron's group_limited_topk):
    each token's 8 experts lie in 4 of 8 contiguous expert groups. Hand-worked remote nodes for DeepEP's forwarding:
    free routing over 8 nodes reaches 7 x (1 - (7/8)^8) = 4.59; one group a node, 4 of 8 chosen, a remote node
    is reached with 1 - C(7,4)/C(8,4) = 1/2: 3.5; two groups a node over 4 nodes: 3 x (1 - C(6,4)/C(8,4)) = 2.36;
    a group over 2 of 16 nodes: 15 x 4/8 x (1 - (1/2)^2) = 5.625."""
    from plint.cost.moe_time import remote_nodes

    dsv3 = MOE.replace(num_experts=256, moe_topk=8)
    limited = dsv3.replace(moe_router_groups=8, moe_router_group_topk=4)
    assert remote_nodes(dsv3, 8) == pytest.approx(7 * (1 - (7 / 8) ** 8))
    assert remote_nodes(limited, 8) == pytest.approx(3.5)
    assert remote_nodes(limited, 4) == pytest.approx(3 * (1 - 15 / 70))
    assert remote_nodes(limited, 16) == pytest.approx(15 * 0.5 * 0.75)
    assert remote_nodes(limited, 1) == 0.0
    assert remote_nodes(limited, 3) == remote_nodes(dsv3, 3)  # groups that do not align with nodes: free routing
    # only the flex dispatcher sends a token once per node; alltoall sends every copy, groups or not
    k_free, k_limited = (
        estimate_module._kernels(
            inp.replace(ep=64, nnodes=8, options=Options(measured_collectives=False, moe_dispatcher=d)),
            lookup_gpu("h100-sxm"),
        )
        for inp, d in ((dsv3, "flex"), (limited, "flex"))
    )
    free, fewer = (estimate_module._token_dispatch(k, 4096, 8, 64, 1) for k in (k_free, k_limited))
    assert fewer < free
    assert fewer == pytest.approx(all_to_all(k_limited.links, 8 * TOKEN_BYTES, 64, 1, network_bytes=3.5 * TOKEN_BYTES))


def test_the_launch_sets_group_limited_routing(tmp_path):
    extra = "--num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 8"
    extra += " --moe-router-num-groups 4 --moe-router-group-topk 2"
    for name, text in torchrun(gpt(extra)).files.items():
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / "launch.sh"])
    inp = cost_input(result.layouts[0])
    assert (inp.moe_router_groups, inp.moe_router_group_topk) == (4, 2)


def test_paired_layers_hide_each_all_to_all_under_its_own_phase():
    """Megatron's combined 1F1B (model_chunk_schedule_plan.py): combine backward | attention forward; dispatch
    forward + backward | experts backward + forward; combine forward | attention backward. Hand-worked with one
    all-to-all of 3 ms, an attention forward of 1 ms and an experts forward of 2 ms, overlap slowdown 0.2."""
    k = _kernels(overlap_slowdown=0.2)
    exposed = a2a_overlapped_layer(k, 3e-3, 1e-3, 2e-3)
    # 3 - 1 = 2 ms exposed + 0.2 x 1; 6 under 6: none + 0.2 x 6; 3 - 2 = 1 exposed + 0.2 x 2
    assert exposed == pytest.approx((2 + 0.2) * 1e-3 + 1.2e-3 + (1 + 0.4) * 1e-3)
    # a single window over the whole layer (9 ms of compute against 12 of all-to-all) would expose 3 + 0.2 x 9
    assert exposed > (3 + 1.8) * 1e-3


@pytest.mark.parametrize(
    "m, vpp, group, share",
    [
        (32, 2, 4, 59 / 64),  # last rank warms up (2 - 1) x 4 chunks, plus the overlap's one extra forward
        (128, 4, 8, (512 - 25) / 512),  # DeepSeek-V3's Bridge run: pp 8, vpp 4, 128 micro-batches
        (5, 1, 1, 4 / 5),  # no pipeline: the first forward has no backward to pair with
    ],
)
def test_only_the_steady_state_pairs_micro_batches(m, vpp, group, share):
    assert paired_share(m, vpp, group) == pytest.approx(share)
