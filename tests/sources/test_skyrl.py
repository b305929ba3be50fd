"""SkyRL's trainers on its Megatron backend (plint.reading.sources.skyrl): dotlist overrides of its dataclass config, its
defaults where a key is not given, the policy's Ray workers on trainer.placement's GPUs."""

from plint.checking.check import check_paths
from plint.report.json_report import file_json

RL = "uv run --isolated --extra megatron -m skyrl.train.entrypoints.main_base trainer.strategy=megatron "


def _result(tmp_path, text: str) -> dict:
    (tmp_path / "run.sh").write_text(text)
    (result,) = check_paths([tmp_path / "run.sh"], root=str(tmp_path))
    return file_json(result)


def _layout(tmp_path, text: str) -> dict:
    layout = _result(tmp_path, text)["layout"]
    assert layout is not None
    return layout


def test_the_policy_layout_from_the_overrides(tmp_path):
    # fail before: no launch at all (python of a module plint did not know, no training flags)
    megatron = "trainer.policy.megatron_config."
    result = _result(
        tmp_path,
        RL + "trainer.placement.policy_num_nodes=2 trainer.placement.policy_num_gpus_per_node=8 "
        f"{megatron}tensor_model_parallel_size=4 {megatron}expert_model_parallel_size=8 "
        f"{megatron}expert_tensor_parallel_size=1 trainer.policy_mini_batch_size=64 generator.n_samples_per_prompt=5 "
        "trainer.micro_train_batch_size_per_gpu=4\n",
    )
    layout = result["layout"]
    assert (layout["trainer"], layout["cluster"]["world_size"], layout["cluster"]["nnodes"]) == ("megatron", 16, 2)
    parallel = layout["parallel"]
    assert (parallel["tp"], parallel["pp"], parallel["ep"], parallel["dp"]) == (4, 1, 8, 4)
    assert parallel["sequence_parallel"] is True and parallel["distributed_optimizer"] is True
    assert (layout["batch"]["global"], layout["batch"]["micro"], layout["batch"]["grad_accum"]) == (320, 4, 20)
    assert layout["precision"] == "bf16" and layout["recompute"]["granularity"] == "full"
    # SkyRL's driver gives its Megatron workers CUDA_DEVICE_MAX_CONNECTIONS=1 (prepare_runtime_environment)
    assert not [d for d in result["diagnostics"] if d["code"] == "PL601"]


def test_the_defaults_of_skyrl_s_config(tmp_path):
    """One GPU of one node, tp 1, 256 prompts x 5 samples a step in micro-batches of 1: SkyRL's dataclass defaults."""
    layout = _layout(tmp_path, RL + "trainer.policy.model.path=Qwen/Qwen3-0.6B\n")
    assert (layout["cluster"]["world_size"], layout["parallel"]["tp"], layout["parallel"]["sequence_parallel"]) == (
        1,
        1,
        False,
    )
    assert (layout["batch"]["global"], layout["batch"]["micro"]) == (1280, 1)
    assert layout["provenance"]["cluster.world_size"]["note"].startswith("trainer.placement.policy_num_nodes")


def test_fsdp_is_not_read_and_unknown_overrides_hide_the_defaults(tmp_path):
    fsdp = _result(tmp_path, "uv run -m skyrl.train.entrypoints.main_base trainer.policy.model.path=X\n")
    assert fsdp["layout"] is None  # trainer.strategy defaults to fsdp: no Megatron layout to read
    layout = _layout(tmp_path, RL + "trainer.bf16=false trainer.max_tokens_per_microbatch=8192 $EXTRA\n")
    assert layout["precision"] == "fp32" and layout["batch"]["micro"] is None
    assert layout["parallel"]["tp"] is None  # $EXTRA could set it
    assert "${EXTRA}" in layout["provenance"]["parallel.tp"]["note"]


def test_the_sft_trainer_and_its_own_defaults(tmp_path):
    """skyrl.train.main_sft: Megatron unless strategy=fsdp, 4 GPUs of one node, tp 2 and pp 2, 4 samples a step in
    micro-batches of 2 (SFTConfig's defaults)."""
    layout = _layout(tmp_path, "uv run --isolated --extra megatron python -m skyrl.train.main_sft model.path=X\n")
    assert (layout["cluster"]["world_size"], layout["parallel"]["tp"], layout["parallel"]["pp"]) == (4, 2, 2)
    assert (layout["parallel"]["dp"], layout["batch"]["global"], layout["batch"]["micro"]) == (1, 4, 2)
    given = _layout(
        tmp_path,
        "python -m skyrl.train.main_sft placement.num_gpus_per_node=8 megatron_config.tensor_model_parallel_size=1 "
        "megatron_config.pipeline_model_parallel_size=1 batch_size=16 micro_train_batch_size_per_gpu=1\n",
    )
    assert (given["parallel"]["dp"], given["batch"]["grad_accum"]) == (8, 2)
    fsdp = _result(tmp_path, "python -m skyrl.train.main_sft strategy=fsdp model.path=X\n")
    assert fsdp["layout"] is None
