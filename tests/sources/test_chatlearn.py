"""ChatLearn with a Megatron policy trainer: `python chatlearn/entrypoint.py grpo --config-file TEMPLATE KEY=VALUE`,
the template read from the tree under the overrides (plint.reading.sources.chatlearn)."""

from plint.checking.check import check_paths
from plint.report.json_report import file_json

TEMPLATE = """runtime_args:
  train_backend: megatron
  train_micro_batch_size: 8
  train_global_batch_size: 512
models:
  policy_trainer:
    bf16: True
    num_gpu: 1
    tensor_model_parallel_size: 1
    pipeline_model_parallel_size: 1
    expert_model_parallel_size: 1
    context_parallel_size: 1
    virtual_pipeline_model_parallel_size: null
    sequence_parallel: True
    use_distributed_optimizer: True
    recompute_granularity: null
    max_prompt_tokens_length: ${models.policy.max_prompt_tokens_length}
"""
RUN = (
    "python chatlearn/entrypoint.py grpo --config-file template/grpo_megatron.yaml "
    "runtime_args.train_global_batch_size=2048 models.policy_trainer.num_gpu=8 "
    "models.policy_trainer.tensor_model_parallel_size=2 models.policy_trainer.pipeline_model_parallel_size=2 {extra}\n"
)


def _checked(tmp_path, extra: str = "", template: str = TEMPLATE):
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "template").mkdir(exist_ok=True)
    (tmp_path / "template" / "grpo_megatron.yaml").write_text(template)
    (tmp_path / "run.sh").write_text(RUN.format(extra=extra))
    (result,) = check_paths([tmp_path / "run.sh"])
    return file_json(result)["layout"]


def test_the_policy_trainers_layout_from_the_template_and_the_overrides(tmp_path):
    # fail before: no launch (a python script named entrypoint.py given no training flag)
    layout = _checked(tmp_path)
    assert (layout["trainer"], layout["entrypoint"], layout["cluster"]["world_size"]) == (
        "megatron",
        "entrypoint.py",
        8,
    )
    assert (layout["parallel"]["tp"], layout["parallel"]["pp"], layout["parallel"]["dp"]) == (2, 2, 2)
    assert (layout["batch"]["global"], layout["batch"]["micro"], layout["batch"]["grad_accum"]) == (2048, 8, 128)
    assert (layout["precision"], layout["parallel"]["distributed_optimizer"]) == ("bf16", True)
    assert "template/grpo_megatron.yaml" in layout["provenance"]["parallel.cp"]["note"]


def test_packing_and_an_unknown_override(tmp_path):
    layout = _checked(tmp_path, "models.policy_trainer.packing=True models.policy_trainer.num_gpu=${num_device}")
    assert layout["batch"]["micro"] is None and "tokens" in layout["provenance"]["batch.micro"]["note"]
    assert layout["cluster"]["world_size"] is None
    assert layout["parallel"]["tp"] == 2


def test_an_fsdp_trainer_is_not_read_as_megatron(tmp_path):
    layout = _checked(tmp_path, template=TEMPLATE.replace("train_backend: megatron", "train_backend: fsdp"))
    assert layout["trainer"] != "megatron" and layout["cluster"]["world_size"] == 8


def test_a_template_outside_the_checked_tree_is_not_read(tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    (tmp_path / "outside.yaml").write_text(TEMPLATE)  # beside the tree, never read
    _checked(tree, template=TEMPLATE.replace("train_backend: megatron", "train_backend: fsdp"))  # the tree's own
    (tree / "run.sh").write_text(RUN.format(extra="").replace("template/grpo_megatron.yaml", "../outside.yaml"))
    (result,) = check_paths([tree / "run.sh"])
    layout = file_json(result)["layout"]
    assert layout is None or layout["trainer"] != "megatron"
