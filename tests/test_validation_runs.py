"""benchmarks/data/published_runs_validation.yaml: published runs held out from the cost model's calibration
(issue 24). The file loads in the calibration's schema, every run names its source, none is a calibration run,
and benchmarks/calibrate.py predicts every one of them, reading the facts they state (an NVLink domain wider
than a node, MXFP8, a fully sharded Megatron-Bridge run)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.test_corpus_script import _load

calibrate = _load("calibrate")

VALIDATION = Path(calibrate.DEFAULT_DATA).with_name("published_runs_validation.yaml")
RUNS = yaml.safe_load(VALIDATION.read_text())
BY_ID = {run["id"]: run for run in RUNS}
CALIBRATION = yaml.safe_load(calibrate.DEFAULT_DATA.read_text())


def _identity(run: dict) -> tuple:
    """What makes two entries the same measurement: model shape, GPU, GPU count, batch, precision."""
    model, cluster, layout = run["model"], run["cluster"], run["layout"]
    return (
        model.get("num_layers"),
        model.get("hidden_size"),
        calibrate._gpu(cluster.get("gpu") or ""),
        cluster.get("total_gpus"),
        layout.get("global_batch_seqs"),
        calibrate._precision(run.get("precision"), calibrate._gpu(cluster.get("gpu") or "") or ""),
    )


def test_the_validation_file_loads_and_every_run_names_its_source():
    assert 15 <= len(RUNS) <= 30
    assert len(BY_ID) == len(RUNS), "run ids repeat"
    for run in RUNS:
        assert str(run.get("source") or "").strip(), run["id"]
        assert {"model", "cluster", "layout", "result"} <= set(run), run["id"]
        result = run["result"]
        assert result.get("tokens_per_sec_per_gpu") or result.get("step_time_s"), run["id"]


def test_the_header_says_the_file_is_held_out():
    header = VALIDATION.read_text().split("\n- id:", 1)[0].lower()
    assert "validation" in header and "nothing is fitted or calibrated on this file" in header


def test_no_validation_run_is_a_calibration_run():
    calibration_ids = {run["id"] for run in CALIBRATION}
    calibration_runs = {_identity(run) for run in CALIBRATION}
    for run in RUNS:
        assert run["id"] not in calibration_ids
        assert _identity(run) not in calibration_runs, run["id"]


def test_calibrate_predicts_every_validation_run():
    result = calibrate.calibrate(VALIDATION)
    assert result["skipped"] == []
    assert {row["id"] for row in result["rows"]} == set(BY_ID)
    assert result["mape_dense"] is not None and result["mape_moe"] is not None


@pytest.mark.parametrize(
    ("run_id", "domain"),
    [("dgxc_llama31_405b_gb200_bf16_128gpu", 72), ("dgxc_llama31_8b_bf16_8gpu", 8)],
)
def test_a_stated_nvlink_domain_is_read(run_id, domain):
    """GB200 NVL72, 4 GPUs a node: the NVLink domain is the rack's 72, not the node's 4 (before: 4)."""
    inp, why = calibrate.to_input(BY_ID[run_id])
    assert inp is not None, why
    assert inp.nvlink_domain == domain


def test_mxfp8_is_read_as_its_recipe():
    """Megatron-Bridge's "FP8-MX" rows run MXFP8, not delayed scaling (before: delayed)."""
    inp, _ = calibrate.to_input(BY_ID["bridge_qwen3_235b_b200_64gpu_mxfp8"])
    assert (inp.precision, inp.options.fp8_recipe) == ("fp8", "mxfp8")
    current, _ = calibrate.to_input(BY_ID["bridge_llama3_70b_h100_64gpu_fp8cs"])
    assert current.options.fp8_recipe == "tensorwise"


def test_a_fully_sharded_bridge_run_is_zero3_not_the_distributed_optimizer():
    """Bridge runs default to the distributed optimizer; one whose table states FSDP shards its parameters
    (before: read as the distributed optimizer, the FSDP column ignored)."""
    sharded, _ = calibrate.to_input(BY_ID["bridge_llama3_8b_h100_8gpu_fp8cs_fsdp"])
    assert (sharded.zero_stage, sharded.distributed_optimizer) == (3, False)
    ddp, _ = calibrate.to_input(BY_ID["bridge_llama3_70b_h100_64gpu_fp8cs"])
    assert (ddp.zero_stage, ddp.distributed_optimizer) == (None, True)
