"""Megatron-DeepSpeed without --fp16/--bf16 runs in the DeepSpeed config's precision: under --deepspeed the
engine casts the fp32-built model's parameters to the config's fp16 or bf16 (deepspeed/runtime/engine.py
_configure_distributed_model)."""

import pytest

from plint.checking.check import check_paths
from plint.report.json_report import file_json

LAUNCH = (
    "deepspeed --num_gpus 8 pretrain_gpt.py {deepspeed} --deepspeed_config ds.json --zero-stage 1 "
    "--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --max-position-embeddings 1024 "
    "--micro-batch-size 2 --global-batch-size 16 {flag}\n"
)


def _layout(tmp_path, ds: str, deepspeed: str = "--deepspeed", flag: str = ""):
    (tmp_path / "launch.sh").write_text(LAUNCH.format(deepspeed=deepspeed, flag=flag))
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 2, ' + ds + "}")
    (result,) = check_paths([tmp_path / "launch.sh"])
    return file_json(result)["layout"]


@pytest.mark.parametrize("half", ["fp16", "bf16"])
def test_the_engine_casts_to_the_configs_precision(tmp_path, half):
    layout = _layout(tmp_path, f'"{half}": {{"enabled": true}}')
    assert layout["precision"] == half
    assert layout["provenance"]["precision"]["note"].endswith(f"ds.json: {half}.enabled")


def test_a_config_without_half_precision_leaves_fp32(tmp_path):
    layout = _layout(tmp_path, '"fp16": {"enabled": false}')
    assert layout["precision"] == "fp32" and layout["provenance"]["precision"]["origin"] == "default"


def test_no_engine_casts_without_deepspeed(tmp_path):
    # without --deepspeed the fork trains with Megatron's own loop, its config unused
    assert _layout(tmp_path, '"fp16": {"enabled": true}', deepspeed="")["precision"] == "fp32"
