"""Transformer Engine keeps no fp8 transpose of a weight on Blackwell with per-tensor scaling.

TE's is_non_tn_fp8_gemm_supported() (transformer_engine/pytorch/utils.py) holds for compute capability 10.x, and
there Float8TensorBase.update_usage drops the transpose: a GEMM weight's fp8 cache is 1 B (not 2), an fp8
parameter (--fp8-param-gather) 1 B instead of the 2 the weights count. mxfp8 quantizes its columnwise copy with
scales of its own on every GPU. Before this, Megatron-Bridge's Llama 3.1 405B on 256 GB200 (TP4 PP16 VP4, fp8
current scaling, measured at 864 tokens/s per GPU) was predicted 180.3 GiB of 173.0 usable: a PL401 error on a
run NVIDIA publishes."""

import pytest
from plint.catalog.hardware import lookup_gpu
from plint.cost import ModelInput, Options, count_params
from plint.cost.memory import fp8_transpose_dropped, fp8_weight_cache_bytes, stage_memory

from fixture_paths import ROOT
from plint.checking.check import check_paths

TINY = ModelInput(
    num_layers=4,
    hidden_size=1024,
    num_attention_heads=16,
    seq_length=1024,
    vocab_size=50304,
    micro_batch=2,
    global_batch=16,
    nnodes=1,
    gpus_per_node=8,
    precision="fp8",
)
GEMM = 4 * (12 * 1024**2 + 7 * 1024)  # the layers' GEMM weights (tests/cost/test_measured_terms.py)


def test_the_catalog_names_compute_capabilities():
    assert lookup_gpu("b200").compute_capability == lookup_gpu("gb200").compute_capability == "10.0"
    assert lookup_gpu("h100-sxm").compute_capability == "9.0"
    assert lookup_gpu("mi300x").compute_capability is None


@pytest.mark.parametrize(
    ("gpu", "recipe", "dropped"),
    [
        ("b200", "tensorwise", True),
        ("gb200", "delayed", True),
        ("b200", "mxfp8", False),
        ("b200", "blockwise", False),
        ("h100-sxm", "tensorwise", False),
        ("mi300x", "tensorwise", False),
    ],
)
def test_the_transpose_is_dropped_only_for_per_tensor_recipes_on_blackwell(gpu, recipe, dropped):
    assert fp8_transpose_dropped(TINY.replace(gpu=gpu, options=Options(fp8_recipe=recipe))) is dropped


def test_blackwell_per_tensor_weights_take_one_byte_less():
    c = count_params(TINY)
    hopper = TINY.replace(options=Options(fp8_recipe="tensorwise"))
    blackwell = hopper.replace(gpu="b200")
    assert fp8_weight_cache_bytes(hopper, c, 4) == 2 * GEMM
    assert fp8_weight_cache_bytes(blackwell, c, 4) == GEMM
    gathered = Options(fp8_recipe="tensorwise", fp8_param_gather=True)
    assert fp8_weight_cache_bytes(hopper.replace(options=gathered), c, 4) == 0.0
    assert fp8_weight_cache_bytes(blackwell.replace(options=gathered), c, 4) == -GEMM
    mx = blackwell.replace(options=Options(fp8_recipe="mxfp8"))
    assert fp8_weight_cache_bytes(mx, c, 4) == pytest.approx((2 + 2 / 32) * GEMM)
    weights = stage_memory(blackwell.replace(options=gathered), c, 8, False)["weights"]
    assert stage_memory(hopper.replace(options=gathered), c, 8, False)["weights"] - weights == GEMM


def test_the_bridge_405b_gb200_launch_is_no_out_of_memory_error():
    (result,) = check_paths(
        [ROOT / "fixtures" / "good-heldout" / "bridge_llama31_405b_gb200_256gpu_fp8cs" / "launch.sh"]
    )
    assert not [d.code for d in result.diagnostics if d.severity == "error"]
