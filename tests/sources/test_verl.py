"""verl's trainer with a Megatron actor, `python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer KEY=VALUE`:
the actor's layout from the Hydra overrides, verl's defaults where they are not given (plint.reading.sources.verl)."""

import pytest

from plint.checking.check import check_paths
from plint.report.json_report import file_json

A = "actor_rollout_ref.actor."
M = A + "megatron."
GRPO = (
    "python3 -m verl.trainer.main_ppo --config-path=config --config-name='ppo_megatron_trainer.yaml' "
    "algorithm.adv_estimator=grpo actor_rollout_ref.model.path=Qwen/Qwen2-7B-Instruct "
    f"{M}tensor_model_parallel_size=2 {M}pipeline_model_parallel_size=2 {A}ppo_mini_batch_size=256 "
    f"{A}ppo_micro_batch_size_per_gpu=4 actor_rollout_ref.rollout.n=5 trainer.n_gpus_per_node=8 trainer.nnodes=2 "
)


def _checked(tmp_path, text: str, config: str | None = None):
    (tmp_path / ".git").mkdir(exist_ok=True)
    if config is not None:
        (tmp_path / ".plint.toml").write_text(config)
    (tmp_path / "run.sh").write_text(text + "\n")
    (result,) = check_paths([tmp_path / "run.sh"])
    return file_json(result)["layout"], {d.code for d in result.diagnostics}


def test_the_actors_layout_from_the_overrides(tmp_path):
    # fail before: no launch (one python process running a module not named for training)
    layout, codes = _checked(tmp_path, GRPO + '"$@"')
    assert (layout["launcher"], layout["trainer"], layout["entrypoint"]) == (None, "megatron", "verl.trainer.main_ppo")
    assert (layout["cluster"]["nnodes"], layout["cluster"]["world_size"]) == (2, 16)
    assert (layout["parallel"]["tp"], layout["parallel"]["pp"], layout["parallel"]["dp"]) == (2, 2, 4)
    # 256 prompts x 5 samples a step, 4 a micro-batch: 1280 / (4 x 4) = 80 micro-batches
    assert (layout["batch"]["global"], layout["batch"]["micro"], layout["batch"]["grad_accum"]) == (1280, 4, 80)
    # verl's defaults: the distributed optimizer, sequence parallelism, bf16; its workers get CUDA_DEVICE_MAX_CONNECTIONS
    assert (layout["parallel"]["distributed_optimizer"], layout["parallel"]["sequence_parallel"]) == (True, True)
    assert layout["precision"] == "bf16"
    assert not codes & {"PL601", "PL105", "PL305"}


def test_dynamic_batches_and_an_unknown_override(tmp_path):
    layout, _ = _checked(tmp_path, GRPO + f"{A}use_dynamic_bsz=True $EXTRA")
    assert layout["batch"]["micro"] is None and "tokens" in layout["provenance"]["batch.micro"]["note"]
    assert layout["parallel"]["cp"] is None  # $EXTRA could set it
    assert layout["parallel"]["tp"] == 2  # given


@pytest.mark.parametrize(
    "extra, expected",
    [
        (f"{M}override_transformer_config.recompute_granularity=full", "full"),
        (f"+{M}override_transformer_config.recompute_granularity=selective", "selective"),
    ],
)
def test_recompute_from_the_transformer_overrides(tmp_path, extra, expected):
    layout, _ = _checked(tmp_path, GRPO + extra)
    assert layout["recompute"]["granularity"] == expected


def test_an_fsdp_actor_is_not_read(tmp_path):
    text = "python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.strategy=fsdp trainer.n_gpus_per_node=8"
    layout, _ = _checked(tmp_path, text)
    assert layout is None


def test_the_model_shape_is_the_checkpoints_unless_configured(tmp_path):
    layout, _ = _checked(tmp_path, GRPO)
    assert layout["model"]["num_layers"] is None
    assert "[tool.plint] model" in layout["provenance"]["model.num_layers"]["note"]
    layout, _ = _checked(tmp_path, GRPO, 'model = "Qwen/Qwen2.5-7B"\n')
    assert layout["model"]["num_layers"] == 28


def test_fp8_training_from_the_transformer_overrides(tmp_path):
    layout, _ = _checked(tmp_path, GRPO + f'+{M}override_transformer_config.fp8="e4m3"')
    assert layout["precision"] == "fp8"


RECIPE = (
    "ray job submit --no-wait -- python3 -m recipe.dapo.main_dapo --config-name dapo_megatron_trainer "
    f"{M}context_parallel_size=2 {A}ppo_mini_batch_size=32 actor_rollout_ref.rollout.n=16 "
    "trainer.nnodes=2 trainer.n_gpus_per_node=8"
)


def test_a_recipes_own_trainer_under_ray_job_submit(tmp_path):
    # verl-recipe's DAPO: its own module, verl's overrides, submitted to a Ray cluster (was: trainer unknown, no sizes)
    layout, codes = _checked(tmp_path, RECIPE)
    assert (layout["launcher"], layout["trainer"], layout["entrypoint"]) == ("ray", "megatron", "recipe.dapo.main_dapo")
    assert (layout["cluster"]["world_size"], layout["parallel"]["cp"], layout["parallel"]["dp"]) == (16, 2, 8)
    assert layout["batch"]["global"] == 512
    assert "PL601" not in codes  # verl sets CUDA_DEVICE_MAX_CONNECTIONS in its workers


def test_a_module_with_hydra_overrides_of_another_kind_is_not_verl(tmp_path):
    layout, _ = _checked(tmp_path, "python3 -m mytool.main --config-name x model.lr=1e-5 trainer.nnodes=2")
    assert layout is None
