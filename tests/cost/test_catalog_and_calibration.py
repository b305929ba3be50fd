"""Hardware numbers carry their sources; the calibration benchmark runs over the published runs."""

import math
from pathlib import Path

import pytest
from plint.catalog.hardware import gpu_names, lookup_gpu

NUMBERS = ("hbm_gib", "hbm_tbps", "nvlink_gbps", "scale_up_domain", "nic_gbps", "gemm_efficiency",
           "attention_efficiency")


def test_every_number_names_its_source():
    for name in gpu_names():
        gpu = lookup_gpu(name)
        for number in NUMBERS + ("bf16_tflops" if gpu.bf16_tflops else "fp16_tflops",):
            assert len(gpu.source_of(number)) > 10, (name, number)
        assert 0 < gpu.gemm_efficiency < 1 and 0 < gpu.attention_efficiency < 1


@pytest.mark.parametrize("spelling, name", [("h100_80gb", "h100-sxm"), ("a100-80gb", "a100-80gb"),
                                            ("A100_80G", "a100-80gb"), ("mi300x", "mi300x"),
                                            ("V100-SXM3-32GB", "v100-32gb"), ("H100-SXM5-80GB", "h100-sxm")])
def test_brief_spellings(spelling, name):
    assert lookup_gpu(spelling).name == name


def test_peaks_by_precision():
    h100, v100 = lookup_gpu("h100"), lookup_gpu("v100")
    assert h100.peak_tflops("fp8") == pytest.approx(2 * h100.peak_tflops("bf16"), rel=0.001)
    assert v100.peak_tflops("bf16") == v100.fp16_tflops  # Volta has no bf16: fp16 tensor cores


DATA = Path("/work/shared/data/published_runs_calibration.yaml")


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
