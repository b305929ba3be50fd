"""ROLL's pipelines (plint.reading.sources.roll): the YAML the start script composes, the role trained with
megatron_train, its strategy_config, device_mapping and training_args."""

from plint.checking.check import check_paths
from plint.report.json_report import file_json

LAUNCH = "CONFIG_PATH=$(basename $(dirname $0))\npython examples/start_rlvr_pipeline.py --config_path $CONFIG_PATH --config_name rlvr\n"
CONFIG = """
num_gpus_per_node: 8
prompt_length: 2048
response_length: 4096
actor_train:
  model_args:
    dtype: bf16
  training_args:
    per_device_train_batch_size: 1
    gradient_accumulation_steps: 32
  strategy_args:
    strategy_name: megatron_train
    strategy_config:
      tensor_model_parallel_size: 1
      pipeline_model_parallel_size: 2
      virtual_pipeline_model_parallel_size: 8
      context_parallel_size: 4
      expert_model_parallel_size: 4
      sequence_parallel: true
      use_distributed_optimizer: true
  device_mapping: list(range(0,32))
actor_infer:
  strategy_args:
    strategy_name: vllm
  device_mapping: list(range(0,32))
"""


def _check(tmp_path, config: str = CONFIG, launch: str = LAUNCH, start: str = "start_rlvr_pipeline.py") -> dict:
    (tmp_path / ".git").mkdir(exist_ok=True)
    recipe = tmp_path / "examples" / "recipe"
    recipe.mkdir(parents=True, exist_ok=True)
    (tmp_path / "examples" / start).write_text("from roll.pipeline.rlvr.rlvr_pipeline import RLVRPipeline\n")
    (recipe / "rlvr.yaml").write_text(config)
    (recipe / "run.sh").write_text(launch)
    (result,) = check_paths([recipe / "run.sh"], root=str(tmp_path))
    return file_json(result)


def test_the_megatron_trained_role_from_the_composed_yaml(tmp_path):
    # fail before: no launch (python of a start script plint did not know)
    result = _check(tmp_path)
    layout = result["layout"]
    assert layout["trainer"] == "megatron" and layout["cluster"]["world_size"] == 32
    parallel = layout["parallel"]
    assert (parallel["tp"], parallel["pp"], parallel["vpp"], parallel["cp"], parallel["ep"], parallel["dp"]) == (
        1,
        2,
        8,
        4,
        4,
        4,
    )
    assert parallel["sequence_parallel"] is False  # mcore_adapter turns it off at tp 1
    assert parallel["distributed_optimizer"] is True
    assert (layout["batch"]["micro"], layout["batch"]["grad_accum"], layout["batch"]["global"]) == (1, 32, 128)
    assert layout["model"]["seq_length"] == 6144 and layout["precision"] == "bf16"
    # the GPUs of a node are the machine's count, read by ROLL at start-up: not the YAML's num_gpus_per_node
    assert layout["cluster"]["gpus_per_node"] is None and layout["cluster"]["nnodes"] is None
    # mcore_adapter runs no Megatron-LM validate_args: no CUDA_DEVICE_MAX_CONNECTIONS assertion to warn of
    assert not [d for d in result["diagnostics"] if d["code"] == "PL601"]


def test_the_defaults_of_mcore_adapter_and_roll(tmp_path):
    """Sizes not given keep a Hugging Face checkpoint's 1; no distributed optimizer unless asked; ROLL's micro-batch 8
    and accumulation 1; sequence_length wins over prompt + response."""
    config = """
sequence_length: 8192
sft_train:
  strategy_args:
    strategy_name: megatron_train
    strategy_config:
      tensor_model_parallel_size: 2
  device_mapping: "[0, 1, 2, 3]"
"""
    layout = _check(
        tmp_path, config, start="start_sft_pipeline.py", launch=LAUNCH.replace("rlvr_pipeline", "sft_pipeline")
    )["layout"]
    assert (layout["cluster"]["world_size"], layout["parallel"]["tp"], layout["parallel"]["dp"]) == (4, 2, 2)
    assert (layout["parallel"]["pp"], layout["parallel"]["distributed_optimizer"]) == (1, False)
    assert (layout["batch"]["micro"], layout["batch"]["grad_accum"]) == (8, 1)
    assert layout["model"]["seq_length"] == 8192 and layout["precision"] is None


def test_no_megatron_role_and_the_rollout_pipeline_are_no_megatron_launch(tmp_path):
    fsdp = CONFIG.replace("strategy_name: megatron_train", "strategy_name: fsdp2_train")
    assert (_check(tmp_path, fsdp)["layout"] or {}).get("trainer") != "megatron"
    rollout = LAUNCH.replace("start_rlvr_pipeline.py", "start_rlvr_rollout_pipeline.py")
    assert _check(tmp_path, launch=rollout, start="start_rlvr_rollout_pipeline.py")["layout"] is None


def test_a_config_nested_past_the_parser_s_recursion_is_not_read(tmp_path):
    result = _check(tmp_path, "a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert result["layout"] is None or result["layout"]["trainer"] != "megatron"
    assert not [d for d in result["diagnostics"] if d["code"] == "PL001"]  # no internal error


def test_a_device_mapping_past_any_gpu_count_is_not_evaluated(tmp_path):
    """`list(range(0, 10**30))` (or 5,000 digits, past Python's int limit) names no GPUs a job has: not read."""
    for stop in ("9" * 30, "9" * 5000):
        result = _check(
            tmp_path, CONFIG.replace("list(range(0,32))\nactor_infer", f"list(range(0,{stop}))\nactor_infer")
        )
        assert result["layout"]["cluster"]["world_size"] is None
        assert not [d for d in result["diagnostics"] if d["code"] == "PL001"]


def test_a_value_that_is_a_huge_aliased_mapping_is_named_by_its_kind(tmp_path):
    """`per_device_train_batch_size: *l24`, an alias of a mapping of 2**24 leaves: a note that printed it would never
    end; plint names it "a mapping"."""
    laughs = "\n".join(["l0: &l0 {a: 1, b: 2}"] + [f"l{i}: &l{i} {{a: *l{i - 1}, b: *l{i - 1}}}" for i in range(1, 25)])
    config = laughs + "\n" + CONFIG.replace("per_device_train_batch_size: 1", "per_device_train_batch_size: *l24")
    result = _check(tmp_path, config)
    assert result["layout"]["batch"]["micro"] is None
    assert "is a mapping" in result["layout"]["provenance"]["batch.micro"]["note"]
