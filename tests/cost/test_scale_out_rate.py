"""GPU.scale_out_rate_factor (issue 24): a synchronous job over several nodes runs its GEMMs and attention at
that share of the catalog's single-GPU rates, a job inside one node at the rates themselves. Worked by hand on
one GEMM and one attention core of an H100 SXM (989 TFLOP/s bf16, gemm_efficiency 0.76, attention 0.5)."""

import pytest
from plint.catalog.hardware import lookup_gpu
from plint.cost import ModelInput
from plint.cost.estimate import _dense_layer, _kernels, scale_out_rate

# h=4096, 32 heads, seq 4096, micro 1: the QKV GEMM is 4096 x 12288 x 4096 on one GPU (tp 1)
ONE_NODE = ModelInput(
    num_layers=1, hidden_size=4096, num_attention_heads=32, seq_length=4096, vocab_size=32000, gpu="h100-sxm"
)
TWO_NODES = ONE_NODE.replace(nnodes=2)


def test_h100_sxm_a100_80gb_and_their_die_siblings_carry_the_fitted_factor_others_none():
    h100 = lookup_gpu("h100-sxm")
    assert h100.scale_out_rate_factor == pytest.approx(0.89)
    assert lookup_gpu("h800").scale_out_rate_factor == h100.scale_out_rate_factor
    assert lookup_gpu("h200").scale_out_rate_factor == h100.scale_out_rate_factor
    a100 = lookup_gpu("a100-80gb")
    assert a100.scale_out_rate_factor == pytest.approx(0.94)
    assert lookup_gpu("a100-40gb").scale_out_rate_factor == a100.scale_out_rate_factor
    assert lookup_gpu("b200").scale_out_rate_factor == 1.0  # not fitted: too few runs over several nodes


def test_factor_applies_only_across_nodes():
    gpu = lookup_gpu("h100-sxm")
    assert scale_out_rate(ONE_NODE, gpu) == 1.0
    assert scale_out_rate(TWO_NODES, gpu) == pytest.approx(0.89)


def test_qkv_gemm_and_attention_core_by_hand():
    gpu = lookup_gpu("h100-sxm")
    flops = 2 * 4096 * 12288 * 4096
    # cap 0.76 over the ramp 1 + 256/4096 + 256/12288 + 256/4096 = 1.14583...
    one_node_s = flops / (989e12 * 0.76 / (1 + 256 / 4096 + 256 / 12288 + 256 / 4096))
    assert one_node_s == pytest.approx(6.2855e-4, rel=1e-4)  # 4.123e11 FLOPs at 656 TFLOP/s
    assert _dense_layer(_kernels(ONE_NODE, gpu)).qkv == pytest.approx(one_node_s, rel=1e-9)
    assert _dense_layer(_kernels(TWO_NODES, gpu)).qkv == pytest.approx(one_node_s / 0.89, rel=1e-9)
    # causal flash attention: 4 b s^2 d heads / 2 at 0.5 of the bf16 peak, 0.5 x 0.89 across nodes
    core_s = 4 * 4096 * 4096 * 128 * 32 * 0.5 / (989e12 * 0.5)
    assert _dense_layer(_kernels(ONE_NODE, gpu)).core == pytest.approx(core_s, rel=1e-9)
    assert _dense_layer(_kernels(TWO_NODES, gpu)).core == pytest.approx(core_s / 0.89, rel=1e-9)


def _benchmark(name: str):
    import importlib.util
    from pathlib import Path

    folder = Path(__file__).parents[2] / "benchmarks"  # each script puts its folder on sys.path for its imports
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_issue_24_subset_is_the_trainers_plint_reads():
    calibrate = _benchmark("calibrate")
    for framework in (
        "Megatron-LM (2021)",
        "Megatron-DeepSpeed",
        "NeMo (nvcr.io/nvidia/nemo:24.09) / Megatron-Core",
        "Megatron-Bridge / NeMo container 25.11",
        "GPT-NeoX",
    ):
        assert calibrate._read_by_plint({"framework": framework}), framework
    for framework in (
        "SwissArmyTransformer + DeepSpeed (3D parallel)",
        "torchtitan",
        "Composer / llm-foundry (PyTorch FSDP)",
    ):
        assert not calibrate._read_by_plint({"framework": framework}), framework


def test_catalog_value_is_the_fit_and_moves_only_multi_node_h100_runs():
    fit = _benchmark("fit_scale_out_rate")
    table = fit.errors_by_factor(fit.calibrate.DEFAULT_DATA, "h100-sxm")
    ids = fit.fitted_runs(table[1.0], "h100-sxm")
    assert len(ids) >= 10 and all(table[1.0][i]["multi_node"] for i in ids)
    errors = {f: {i: table[f][i]["error"] for i in ids} for f in fit.GRID}
    assert fit.best(errors, ids) == pytest.approx(lookup_gpu("h100-sxm").scale_out_rate_factor)
    assert not any(fit.point_errors_by_factor("h100-sxm").values())  # SC21's splits ran on A100s
    # it moves every multi-node H100 run; it is fitted on those of the part the entry describes, not on
    # torchtitan's 96 GB H100 held at 500 W, which the calibration maps to the entry for want of its own
    moved = {i for i, row in table[1.0].items() if row["gpu"] == "h100-sxm" and row["multi_node"]}
    assert set(ids) == {i for i in moved if table[1.0][i]["catalog_part"]}
    assert "torchtitan_llama31_405b_3d_512gpu_fp8" in moved - set(ids)
    unmoved = [i for i in table[1.0] if i not in moved]
    assert unmoved and all(table[0.8][i]["predicted"] == table[1.0][i]["predicted"] for i in unmoved)


def test_a100_value_is_the_fit_on_its_runs_and_sc21_measured_splits():
    """A100 80GB's factor is fitted on its nine multi-node calibration runs and SC21's measured splits together."""
    fit = _benchmark("fit_scale_out_rate")
    table = fit.errors_by_factor(fit.calibrate.DEFAULT_DATA, "a100-80gb")
    runs = fit.fitted_runs(table[1.0], "a100-80gb")
    points = fit.point_errors_by_factor("a100-80gb")
    assert len(runs) == 9 and len(points[1.0]) == 45
    errors = {f: {**{i: table[f][i]["error"] for i in runs}, **points[f]} for f in fit.GRID}
    assert fit.best(errors, [*runs, *points[1.0]]) == pytest.approx(lookup_gpu("a100-80gb").scale_out_rate_factor)
