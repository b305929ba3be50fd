"""ms-swift's `swift sft|pt|rlhf|infer`: torchrun from NPROC_PER_NODE / NNODES / NODE_RANK / MASTER_ADDR /
MASTER_PORT when either of the first two is set, else one python process (swift/cli/main.py, cli_main)."""

import pytest

from plint.checking.check import check_paths
from plint.report.json_report import file_json

ARGS = "--model Qwen/Qwen2.5-7B-Instruct --tuner_type full --per_device_train_batch_size 2 --deepspeed zero2\n"


def _layout(tmp_path, text: str) -> dict | None:
    (tmp_path / "train.sh").write_text(text)
    (result,) = check_paths([tmp_path / "train.sh"], root=str(tmp_path))
    return file_json(result)["layout"]


def test_nproc_per_node_makes_it_torchrun(tmp_path):
    # fail before: no launch (PL005 or silence): `swift` was no launcher plint knew
    layout = _layout(tmp_path, "NPROC_PER_NODE=8 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 swift sft " + ARGS)
    assert layout is not None
    assert (layout["launcher"], layout["entrypoint"], layout["cluster"]["world_size"]) == ("torchrun", "sft.py", 8)
    assert layout["provenance"]["cluster.world_size"]["path"].endswith("train.sh")
    assert layout["trainer"] == "deepspeed" and layout["batch"]["micro"] == 2


def test_the_multi_node_variables_are_torchruns_options(tmp_path):
    text = "export NNODES=2\nexport NODE_RANK=1\nexport MASTER_ADDR=10.0.0.1\nNPROC_PER_NODE=4 swift rlhf " + ARGS
    layout = _layout(tmp_path, text)
    assert (layout["cluster"]["nnodes"], layout["cluster"]["world_size"], layout["parallel"]["dp"]) == (2, 8, 8)


def test_without_either_variable_it_is_one_python_process(tmp_path):
    layout = _layout(tmp_path, "swift sft " + ARGS)
    assert layout is not None and layout["launcher"] is None and layout["entrypoint"] == "sft.py"
    assert layout["cluster"]["world_size"] == 1


@pytest.mark.parametrize("route", ["export", "deploy", "web-ui"])
def test_routes_that_do_not_train_are_no_launch(tmp_path, route):
    assert _layout(tmp_path, f"NPROC_PER_NODE=8 swift {route} --model X\n") is None


# ---- what ms-swift's trainer decides (plint.reading.sources.swift_trainer) -------------------------------------


def _of(layout: dict, *paths: str) -> tuple:
    out = []
    for path in paths:
        section, _, name = path.partition(".")
        out.append(layout[section][name] if name else layout[section])
    return tuple(out)


@pytest.mark.parametrize(
    ("name", "stage", "sharding"),
    [
        ("zero1", 1, "optimizer"),
        ("zero2", 2, "gradients"),
        ("zero3", 3, "parameters"),
        ("zero3_offload", 3, "parameters"),
    ],
)
def test_a_packaged_deepspeed_config_by_name(tmp_path, name, stage, sharding):
    # fail before: zero_stage null ("the DeepSpeed config zero2 is neither in the repository ...")
    layout = _layout(tmp_path, f"NPROC_PER_NODE=8 swift sft --deepspeed {name} --torch_dtype bfloat16\n")
    assert _of(layout, "parallel.zero_stage", "parallel.sharding") == (stage, sharding)
    assert f"swift/config/{name}.json" in layout["provenance"]["parallel.zero_stage"]["note"]


def test_a_config_path_is_still_read_as_a_file(tmp_path):
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 1}, "bf16": {"enabled": true}}')
    layout = _layout(tmp_path, "NPROC_PER_NODE=8 swift sft --deepspeed ds.json\n")
    assert _of(layout, "parallel.zero_stage", "precision") == (1, "bf16")


@pytest.mark.parametrize(("dtype", "precision"), [("bfloat16", "bf16"), ("float16", "fp16"), ("float32", "fp16")])
def test_torch_dtype_sets_the_mixed_precision(tmp_path, dtype, precision):
    # fail before: precision null (no --bf16/--fp16 among the flags of a script plint does not know)
    assert _layout(tmp_path, f"NPROC_PER_NODE=8 swift sft --torch_dtype {dtype}\n")["precision"] == precision


def test_bf16_given_wins_over_torch_dtype(tmp_path):
    layout = _layout(tmp_path, "NPROC_PER_NODE=8 swift sft --torch_dtype float16 --bf16 true\n")
    assert layout["precision"] == "bf16"


def test_its_defaults_micro_1_checkpointing_and_16_samples_a_step(tmp_path):
    # fail before: micro null, accumulation 1 (transformers' default, not ms-swift's), recompute null
    layout = _layout(tmp_path, "NPROC_PER_NODE=4 swift sft --torch_dtype bfloat16\n")
    assert _of(layout, "batch.micro", "batch.grad_accum", "batch.global") == (1, 4, 16)  # ceil(16 / 1 / 4) = 4
    assert layout["recompute"]["granularity"] == "full"
    assert layout["provenance"]["batch.grad_accum"]["origin"] == "default"


def test_checkpointing_turned_off_and_accumulation_given(tmp_path):
    text = "NPROC_PER_NODE=8 swift sft --gradient_checkpointing false --gradient_accumulation_steps 3\n"
    layout = _layout(tmp_path, text)
    assert _of(layout, "batch.micro", "batch.grad_accum", "batch.global") == (1, 3, 24)
    assert layout["recompute"]["granularity"] is None


def test_sequence_parallel_size_splits_the_world(tmp_path):
    # fail before: cp and dp null (a trainer's own sequence split plint did not read)
    text = "NPROC_PER_NODE=8 swift sft --sequence_parallel_size 4 --per_device_train_batch_size 2 --gradient_accumulation_steps 8\n"
    layout = _layout(tmp_path, text)
    assert _of(layout, "parallel.cp", "parallel.dp", "batch.global") == (4, 2, 32)


def test_an_unknown_part_of_the_arguments_keeps_the_defaults_unknown(tmp_path):
    layout = _layout(tmp_path, "NPROC_PER_NODE=8 swift sft --torch_dtype bfloat16 $EXTRA_ARGS\n")
    assert _of(layout, "batch.micro", "batch.global") == (None, None)
    assert layout["recompute"]["granularity"] is None


def test_the_same_flags_of_another_script_keep_the_hf_trainers_meaning(tmp_path):
    (tmp_path / "train.py").write_text("from transformers import Trainer\n")
    layout = _layout(tmp_path, "torchrun --nproc_per_node 8 train.py --deepspeed zero2 --torch_dtype bfloat16\n")
    assert _of(layout, "parallel.zero_stage", "precision", "batch.micro") == (None, None, None)


# ---- Megatron-SWIFT: `megatron sft|pt|rlhf` (plint.reading.sources.swift_megatron) --------------------------------

MEGATRON_SWIFT = (
    "NPROC_PER_NODE=8 megatron sft --model Qwen/Qwen2.5-7B-Instruct --tensor_model_parallel_size 2 "
    "--sequence_parallel true --micro_batch_size 2 --global_batch_size 64 --recompute_granularity none "
    "--overlap_grad_reduce true --overlap_param_gather true\n"
)


def test_megatron_swift_is_megatron_under_torchrun(tmp_path):
    # fail before: no launch (`megatron` was no command plint knew)
    layout = _layout(tmp_path, MEGATRON_SWIFT)
    assert _of(layout, "launcher", "trainer", "entrypoint", "cluster.world_size") == (
        "torchrun",
        "megatron",
        "sft.py",
        8,
    )
    assert _of(layout, "parallel.tp", "parallel.dp", "parallel.sequence_parallel") == (2, 4, True)
    assert _of(layout, "batch.micro", "batch.global", "batch.grad_accum") == (2, 64, 8)
    assert layout["recompute"]["granularity"] is None  # `none`: no recompute


def test_megatron_swift_defaults_are_its_own(tmp_path):
    layout = _layout(tmp_path, "NPROC_PER_NODE=4 megatron pt --model M --pipeline_model_parallel_size 2\n")
    # MegatronArguments: micro 1, global 16, selective recompute, the distributed optimizer on
    assert _of(layout, "parallel.pp", "parallel.dp", "batch.micro", "batch.global") == (2, 2, 1, 16)
    assert _of(layout, "recompute.granularity", "parallel.distributed_optimizer") == ("selective", True)
    assert layout["precision"] is None  # the checkpoint's dtype: not in the launch
    assert "checkpoint" in layout["provenance"]["precision"]["note"]


def test_megatron_swift_flags_are_not_judged_by_megatron_lms_parser(tmp_path):
    (tmp_path / "train.sh").write_text(MEGATRON_SWIFT)
    (result,) = check_paths([tmp_path / "train.sh"], root=str(tmp_path))
    codes = {d.code for d in result.diagnostics}
    assert not codes & {"PL501", "PL506", "PL306"}  # underscore fields, `true` values, overlaps given
    assert _layout(tmp_path, MEGATRON_SWIFT.replace("--sequence_parallel true", "--bf16 true"))["precision"] == "bf16"


def test_megatron_swift_unknown_arguments_keep_defaults_unknown(tmp_path):
    layout = _layout(tmp_path, 'NPROC_PER_NODE=8 megatron sft --model M "${EXTRA[@]}"\n')
    assert _of(layout, "parallel.tp", "batch.global", "recompute.granularity") == (None, None, None)


def test_megatron_export_trains_nothing(tmp_path):
    assert _layout(tmp_path, "NPROC_PER_NODE=8 megatron export --model M --to_hf true\n") is None
