"""Hardware numbers carry their sources; the calibration benchmark runs over the published runs."""

import math
from pathlib import Path

import pytest
from plint.catalog.hardware import gpu_names, lookup_gpu

NUMBERS = (
    "hbm_gib",
    "hbm_tbps",
    "nvlink_gbps",
    "scale_up_domain",
    "nic_gbps",
    "gemm_efficiency",
    "attention_efficiency",
)


def test_every_number_names_its_source():
    for name in gpu_names():
        gpu = lookup_gpu(name)
        for number in NUMBERS + ("bf16_tflops" if gpu.bf16_tflops else "fp16_tflops",):
            assert len(gpu.source_of(number)) > 10, (name, number)
        assert 0 < gpu.gemm_efficiency < 1 and 0 < gpu.attention_efficiency < 1


@pytest.mark.parametrize(
    "spelling, name",
    [
        ("h100_80gb", "h100-sxm"),
        ("a100-80gb", "a100-80gb"),
        ("A100_80G", "a100-80gb"),
        ("mi300x", "mi300x"),
        ("V100-SXM3-32GB", "v100-32gb"),
        ("H100-SXM5-80GB", "h100-sxm"),
    ],
)
def test_brief_spellings(spelling, name):
    assert lookup_gpu(spelling).name == name


def test_peaks_by_precision():
    h100, v100 = lookup_gpu("h100"), lookup_gpu("v100")
    assert h100.peak_tflops("fp8") == pytest.approx(2 * h100.peak_tflops("bf16"), rel=0.001)
    assert v100.peak_tflops("bf16") == v100.fp16_tflops  # Volta has no bf16: fp16 tensor cores


DATA = Path(__file__).parents[2] / "benchmarks" / "data" / "published_runs_calibration.yaml"


@pytest.mark.skipif(not DATA.exists(), reason="calibration data not available")
def test_calibration_runs_and_reports_both_families():
    import importlib.util

    spec = importlib.util.spec_from_file_location("calibrate", Path(__file__).parents[2] / "benchmarks/calibrate.py")
    calibrate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calibrate)
    result = calibrate.calibrate(DATA)
    assert any(r["moe"] for r in result["rows"]) and any(not r["moe"] for r in result["rows"])
    assert all(math.isfinite(r["predicted"]) and r["predicted"] > 0 for r in result["rows"])
    # a regression guard, not a pinned result: the dense error must not drift far from where it stands
    assert result["mape_dense"] < 20


def _calibrate_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("calibrate", Path(__file__).parents[2] / "benchmarks/calibrate.py")
    calibrate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calibrate)
    return calibrate


def _run(**changes):
    run = {
        "id": "x",
        "year": 2024,
        "framework": "Megatron-LM",
        "precision": "bf16",
        "source": "",
        "model": {
            "num_layers": 96,
            "hidden_size": 2880,
            "num_attention_heads": 64,
            "num_kv_heads": 8,
            "vocab_size": 50000,
            "seq_length": 4096,
            "family": "test",
            "notes": None,
        },
        "cluster": {"gpu": "H100-SXM5-80GB", "total_gpus": 1536, "gpus_per_node": 8},
        "layout": {"tp": 8, "pp": 12, "global_batch_seqs": 768, "notes": None},
        "result": {},
    }
    for key, value in changes.items():
        section, _, name = key.partition("__")
        if name:
            run[section][name] = value
        else:
            run[section] = value
    return run


def test_calibration_reads_stated_facts():
    calibrate = _calibrate_module()
    plain, _ = calibrate.to_input(_run())
    assert plain.kv_channels is None and plain.vpp is None and plain.options.fp8_recipe == "delayed"
    # a stated head size: 64 heads of dim 64 (not 2880 / 64 = 45)
    inp, _ = calibrate.to_input(_run(model__notes="64 q / 8 kv heads of dim 64"))
    assert inp.kv_channels == 64
    # "PP with interleaving" without a count: 96 layers / 12 stages = 8 chunks of one layer
    inp, _ = calibrate.to_input(_run(layout__notes="8-way TP, 12-way PP with interleaving"))
    assert inp.vpp == 8
    # fp8 with current scaling costs the amax pass
    inp, _ = calibrate.to_input(_run(precision="fp8 (current scaling)"))
    assert inp.precision == "fp8" and inp.options.fp8_recipe == "tensorwise"
    # a Megatron-Bridge MoE run without a stated expert TP: the Bridge recipes' ETP = 1
    moe = {"num_experts": 128, "top_k": 8, "expert_ffn_hidden_size": 1536, "shared_experts": 0}
    inp, _ = calibrate.to_input(_run(framework="Megatron-Bridge", model__moe=moe))
    assert inp.etp == 1 and inp.options.grad_reduce_bytes == 2  # Bridge: grad_reduce_in_fp32 false
    inp, _ = calibrate.to_input(_run(model__moe=moe))
    assert inp.etp is None and inp.options.grad_reduce_bytes is None  # Megatron-LM: ETP = TP, fp32 grads


def test_calibration_reads_the_zero3_era():
    calibrate = _calibrate_module()
    sharded = {"tp": 1, "pp": 1, "zero_stage": 3, "global_batch_seqs": 1536, "notes": None}
    # DeepSpeed ZeRO-3 of 2021 (before DeepSpeed#1170's prefetch) gathered without overlap
    old, _ = calibrate.to_input(_run(year=2021, framework="DeepSpeed ZeRO-3", layout=sharded))
    assert old.zero_stage == 3 and old.options.zero_overlap_comm is False
    # later DeepSpeed, and FSDP at any date, keep the default (overlap at ZeRO-3)
    new, _ = calibrate.to_input(_run(year=2023, framework="DeepSpeed ZeRO-3", layout=sharded))
    fsdp, _ = calibrate.to_input(_run(year=2021, framework="PyTorch FSDP", layout=sharded))
    assert new.options.zero_overlap_comm is None and fsdp.options.zero_overlap_comm is None
    # DeepSpeed's per-sub-module hooks vs FSDP's per-block unshard (the recompute's extra gather)
    assert old.options.zero3_engine == "deepspeed" and fsdp.options.zero3_engine == "fsdp"


@pytest.mark.skipif(not DATA.exists(), reason="calibration data not available")
def test_the_step_error_plint_prints_is_the_calibration_error():
    """The +- a step estimate carries is what benchmarks/calibrate.py measures now, to the figure it prints."""
    from plint.cost.error_band import MEASURED_STEP_ERROR

    result = _calibrate_module().calibrate(DATA)
    assert MEASURED_STEP_ERROR["dense"] == pytest.approx(result["mape_dense_plint_trainers"] / 100, abs=0.0005)
    assert MEASURED_STEP_ERROR["moe"] == pytest.approx(result["mape_moe"] / 100, abs=0.0005)
