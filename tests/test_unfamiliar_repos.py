"""Constructs met in repositories nobody working on plint had read (issue 26), each alone.

Fixtures under fixtures/launches cover the larger cases (ds-config-from-repo-root, deepspeed-json-alone,
accelerate-deepspeed-options, hf-trainer-fsdp-torchrun); these are the small ones a finding or one
field shows.
"""

from __future__ import annotations

from pathlib import Path

from plint.checking.check import check_paths
from plint.report.json_report import file_json


def _check(folder: Path, name: str, text: str) -> dict:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    (result,) = check_paths([path])
    return file_json(result)


def test_an_unset_deepspeed_config_path_is_said(tmp_path):
    got = _check(tmp_path, "launch.sh", "deepspeed --num_gpus 2 train.py --deepspeed $DS_CONFIG_PATH "
                 "--per_device_train_batch_size 2 --bf16\n")
    messages = [d["message"] for d in got["diagnostics"] if d["code"] == "PL002"]
    assert any("DeepSpeed config path is unknown" in m for m in messages), messages
    assert got["layout"]["parallel"]["zero_stage"] is None


def test_a_missing_deepspeed_config_is_said(tmp_path):
    got = _check(tmp_path, "launch.sh", "deepspeed --num_gpus 2 train.py --deepspeed configs/zero2.json "
                 "--per_device_train_batch_size 2 --bf16\n")
    messages = [d["message"] for d in got["diagnostics"] if d["code"] == "PL002"]
    assert any("configs/zero2.json is neither in the repository" in m for m in messages), messages


def test_an_unknown_script_without_a_precision_flag_has_no_default_precision(tmp_path):
    got = _check(tmp_path, "launch.sh", "torchrun --nproc_per_node 2 finetune.py --per_device_train_batch_size 4\n")
    layout = got["layout"]
    assert layout["trainer"] == "unknown"
    assert layout["precision"] is None
    assert layout["provenance"]["precision"]["origin"] == "unresolved"


def test_a_config_alone_gets_no_auto_warnings(tmp_path):
    got = _check(tmp_path, "zero3.json", '{"bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": "auto",'
                 ' "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}\n')
    assert got["layout"]["parallel"]["zero_stage"] == 3
    assert got["layout"]["precision"] is None
    assert [d["code"] for d in got["diagnostics"]] == []
