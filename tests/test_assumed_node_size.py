"""A fine-tuning launch on every GPU of its node (`deepspeed train.py` with no hostfile nor --num_gpus, torchrun
`--nproc-per-node gpu`, a count from torch.cuda.device_count()): plint assumes the node size of the (named or
assumed) GPU from the hardware catalog, says so (origin "assumed", a note naming how to state the count), and no
rule turns the guess into an error."""

from plint.catalog.hardware import lookup_gpu
from plint.checking.check import check_paths
from plint.report.json_report import file_json
from plint.report.text import render

Z3 = (
    '{"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", '
    '"train_batch_size": "auto", "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}}\n'
)


def _finetune(model: str = "meta-llama/Llama-2-7b-hf", config: str = "ds_z3.json", launch: str = "deepspeed") -> str:
    return (
        f"#!/bin/bash\n{launch} train.py \\\n    --model_name_or_path {model} \\\n    --deepspeed {config} \\\n"
        "    --bf16 True --model_max_length 2048 \\\n    --per_device_train_batch_size 4 \\\n"
        "    --gradient_accumulation_steps 2 --output_dir out\n"
    )


def _check(tmp_path, files: dict[str, str], **kwargs):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / "train.sh"], **kwargs)
    result.layout = result.layouts[0]
    return result


def test_deepspeed_without_hostfile_gets_the_catalog_node_size_as_assumed(tmp_path):
    result = _check(tmp_path, {"train.sh": _finetune(), "ds_z3.json": Z3})
    layout = file_json(result)["layout"]
    per_node = layout["provenance"]["cluster.gpus_per_node"]
    assert layout["cluster"]["gpus_per_node"] == lookup_gpu("h100-sxm").node_gpus == 8
    assert per_node["origin"] == "assumed"
    assert "gpus-per-node" in per_node["note"] and "every GPU of the launching node" in per_node["note"]
    assert layout["provenance"]["cluster.world_size"]["origin"] == "assumed"
    assert layout["provenance"]["parallel.dp"]["origin"] == "assumed"
    assert layout["provenance"]["batch.global"]["origin"] == "assumed"
    assert layout["estimate"]["memory_gib"]["total"] > 0  # the estimate is there, on the assumed node
    text = render([result])
    assert "gpus/node=8 (assumed)" in text and "GPUs/node  8: assumed" in text


def test_the_named_gpus_node_decides_and_a_part_without_one_stays_unknown(tmp_path):
    gb200 = _check(tmp_path, {"train.sh": _finetune(), "ds_z3.json": Z3}, gpu="gb200")
    assert gb200.layout.value("cluster.gpus_per_node") == 4  # a GB200 NVL72 compute tray
    pcie = _check(tmp_path, {"train.sh": _finetune(), "ds_z3.json": Z3}, gpu="h100-pcie")
    assert pcie.layout.value("cluster.gpus_per_node") is None
    assert pcie.layout.get("cluster.gpus_per_node").origin == "unresolved"


def test_a_stated_count_is_read_not_assumed(tmp_path):
    result = _check(tmp_path, {"train.sh": _finetune(launch="deepspeed --num_gpus 2"), "ds_z3.json": Z3})
    per_node = result.layout.get("cluster.gpus_per_node")
    assert per_node.value == 2 and per_node.origin != "assumed"


def test_torchrun_nproc_per_node_gpu_gets_the_node_size_too(tmp_path):
    result = _check(tmp_path, {"train.sh": _finetune(launch="torchrun --nproc_per_node gpu"), "ds_z3.json": Z3})
    per_node = result.layout.get("cluster.gpus_per_node")
    assert (per_node.value, per_node.origin) == (8, "assumed")
    assert result.layout.value("cluster.world_size") == 8


def test_configured_gpus_per_node_states_the_count_for_torchrun_gpu_too(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.plint]\ngpus-per-node = 4\n")
    result = _check(tmp_path, {"train.sh": _finetune(launch="torchrun --nproc_per_node gpu"), "ds_z3.json": Z3})
    per_node = result.layout.get("cluster.gpus_per_node")
    assert (per_node.value, per_node.origin) == (4, "derived") and "gpus-per-node = 4" in per_node.note
    assert result.layout.value("cluster.world_size") == 4


def test_predicted_oom_on_an_assumed_node_is_a_warning_naming_it(tmp_path):
    # Llama-2-70B at ZeRO-1 on a named H100: the weights alone overflow 80 GB, whatever the node, but the
    # optimizer's share rests on the assumed dp: a warning, never an error
    z1 = (
        '{"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", '
        '"train_batch_size": "auto", "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}}\n'
    )
    result = _check(
        tmp_path, {"train.sh": _finetune("meta-llama/Llama-2-70b-hf", "ds_z1.json"), "ds_z1.json": z1}, gpu="h100-sxm"
    )
    (oom,) = [d for d in result.diagnostics if d.code == "PL401"]
    assert oom.severity == "warning"
    assert "GPUs per node are assumed (8)" in oom.message
    assert not [d for d in result.diagnostics if d.severity == "error"]


def test_train_batch_size_against_an_assumed_dp_is_no_error(tmp_path):
    # all three written: the JSON holds only at dp 4, the node size is assumed (8): PL106 warns, naming the guess
    three = (
        '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, '
        '"zero_optimization": {"stage": 3}}\n'
    )
    result = _check(tmp_path, {"train.sh": _finetune(config="ds.json"), "ds.json": three}, gpu="h100-sxm")
    assert not [d for d in result.diagnostics if d.severity == "error"]
    (mismatch,) = [d for d in result.diagnostics if d.code == "PL106"]
    assert mismatch.severity == "warning" and "assumed (8)" in mismatch.message and mismatch.fix is None
    # train_batch_size and micro written, no batch flags: DeepSpeed would derive grad_accum 12 // 3 // 8 = 0 and
    # stop on a node of 8, but the node is a guess: grad_accum stays unknown, naming it, and no finding
    two = '{"train_batch_size": 12, "train_micro_batch_size_per_gpu": 3, "zero_optimization": {"stage": 3}}\n'
    script = "#!/bin/bash\ndeepspeed train.py --model_name_or_path meta-llama/Llama-2-7b-hf --deepspeed ds.json\n"
    result = _check(tmp_path, {"train.sh": script, "ds.json": two}, gpu="h100-sxm")
    assert not [d for d in result.diagnostics if d.severity in ("error", "warning")]
    accum = result.layout.get("batch.grad_accum")
    assert accum.value is None and "assumed GPUs per node" in accum.note


def test_the_same_mismatch_on_a_stated_node_stays_an_error(tmp_path):
    three = (
        '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, '
        '"zero_optimization": {"stage": 3}}\n'
    )
    result = _check(
        tmp_path, {"train.sh": _finetune(config="ds.json", launch="deepspeed --num_gpus 8"), "ds.json": three}
    )
    assert [d.severity for d in result.diagnostics if d.code in ("PL106", "PL004") or d.severity == "error"]
    assert any(d.severity == "error" for d in result.diagnostics)


def test_tp_across_the_assumed_node_is_a_warning(tmp_path):
    # Megatron with torchrun --nproc_per_node gpu and tp 16: more than the assumed 8 GPUs of an H100 node
    script = (
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nproc_per_node gpu pretrain_gpt.py "
        "--tensor-model-parallel-size 16 --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
        "--seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 16 "
        "--bf16\n"
    )
    result = _check(tmp_path, {"train.sh": script}, gpu="h100-sxm")
    assert result.layout.get("cluster.gpus_per_node").origin == "assumed"
    assert not [d for d in result.diagnostics if d.severity == "error"], [
        (d.code, d.message) for d in result.diagnostics if d.severity == "error"
    ]
    assert all("assumed (8)" in d.message for d in result.diagnostics if d.code in ("PL101", "PL201"))
