"""What the host pays per local expert of a MoE layer (issue 24): TE GroupedLinear launches one cuBLAS GEMM per
expert (Options.host_expert_s, fitted by benchmarks/fit_step_overhead.py on Megatron-LM's functional tests)."""

from __future__ import annotations

import pytest
from plint.catalog.hardware import lookup_gpu
from plint.cost import Options
from plint.cost.host_dispatch import grouped_local_experts, host_microbatch_s
from plint.cost.params import count_params
from tests.cost.test_estimate import TINY

# TINY (4 layers, 2 pipeline stages of 2) made MoE: 16 experts over EP 4, 4 local experts per GPU
MOE = TINY.replace(ep=4, num_experts=16, moe_topk=2)


def test_grouped_experts_cost_the_host_per_local_expert_per_moe_layer():
    o = Options(host_microbatch_s=1e-3, host_layer_s=5e-3, host_moe_layer_s=4e-3, host_expert_s=0.25e-3)
    a100 = lookup_gpu("a100-80gb")
    grouped = MOE.replace(moe_grouped_gemm=True, options=o)
    c = count_params(grouped)
    assert grouped_local_experts(grouped) == 4
    # 1 ms + 2 layers x (5 ms + 4 ms + 4 local experts x 0.25 ms) = 21 ms
    assert host_microbatch_s(grouped, c, a100) == pytest.approx(0.021)
    # twice the experts over the same EP: 8 local, 2 x 1 ms more
    assert host_microbatch_s(grouped.replace(num_experts=32), c, a100) == pytest.approx(0.023)


def test_sequential_experts_and_ep1_add_no_per_expert_term():
    o = Options(host_microbatch_s=1e-3, host_layer_s=5e-3, host_moe_layer_s=4e-3, host_expert_s=0.25e-3)
    a100 = lookup_gpu("a100-80gb")
    sequential = MOE.replace(options=o)  # Megatron's default: SequentialMLP, priced by host_moe_layer_s alone
    c = count_params(sequential)
    assert grouped_local_experts(sequential) == 0
    assert host_microbatch_s(sequential, c, a100) == pytest.approx(0.019)  # 1 + 2 x (5 + 4)
    # without EP the MoE layer's host terms are not applied at all (as fitted)
    assert host_microbatch_s(sequential.replace(ep=1, moe_grouped_gemm=True), c, a100) == pytest.approx(0.011)


def test_moe_grouped_gemm_is_read_from_the_launch(tmp_path):
    from plint.cost.layout_estimate import cost_input
    from plint.reading.read import read_path

    flags = (
        "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
        "--micro-batch-size 1 --global-batch-size 16 --num-experts 16 --expert-model-parallel-size 4 --bf16"
    )
    launch = tmp_path / "train.sh"
    values = []
    for extra in ("", " --moe-grouped-gemm"):
        launch.write_text(f"torchrun --nproc-per-node 8 pretrain_gpt.py {flags}{extra}\n")
        reading = read_path(launch, gpu="h100-sxm")
        values.append(cost_input(reading.layouts[0]).moe_grouped_gemm)
    assert values == [False, True]
