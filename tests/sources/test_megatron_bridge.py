"""Megatron-Bridge's recipe runner (plint.reading.sources.megatron_bridge, recipe_eval): the recipe function followed
through the tree's recipe modules, under the launch's convenience options and KEY=VALUE overrides."""

from __future__ import annotations

from pathlib import Path

from plint.checking.check import check_paths
from plint.report.json_report import file_json

RUNNER = "import argparse\nfrom megatron.bridge.training.config import ConfigContainer\n"
SYNCING_RUNNER = RUNNER + "def sync(config):\n    config.model.seq_length = config.dataset.seq_length\n"
COMMON = """
from megatron.bridge.training.config import ConfigContainer, TrainingConfig, DistributedDataParallelConfig
from megatron.bridge.recipes.utils.optimizer_utils import distributed_fused_adam_with_cosine_annealing


def _pretrain_common(seq_length=4096) -> ConfigContainer:
    opt_cfg, scheduler_cfg = distributed_fused_adam_with_cosine_annealing(max_lr=3e-4)
    return ConfigContainer(
        model=None,
        train=TrainingConfig(global_batch_size=512, micro_batch_size=1),
        optimizer=opt_cfg,
        scheduler=scheduler_cfg,
        ddp=DistributedDataParallelConfig(overlap_grad_reduce=True, overlap_param_gather=True),
        dataset=GPTDatasetConfig(seq_length=seq_length),
        mixed_precision="bf16_mixed",
    )
"""
OPTIMIZER = """
def distributed_fused_adam_with_cosine_annealing(max_lr=1e-4, min_lr=None):
    optimizer = OptimizerConfig(optimizer="adam", lr=max_lr, use_distributed_optimizer=True)
    return optimizer, SchedulerConfig(lr_decay_style="cosine")
"""
LLAMA = """
from ..common import _pretrain_common
from megatron.bridge.models import AutoBridge

BASE_TP = 2


def llama3_8b_pretrain_8gpu_h100_bf16_config() -> ConfigContainer:
    cfg = _pretrain_common(seq_length=8192)
    cfg.model = AutoBridge.from_hf_pretrained("meta-llama/Meta-Llama-3-8B").to_megatron_provider(load_weights=False)
    cfg.model.tensor_model_parallel_size = BASE_TP
    cfg.model.pipeline_model_parallel_size = 1
    cfg.model.context_parallel_size = 2
    cfg.model.sequence_parallel = cfg.model.tensor_model_parallel_size > 1
    cfg.model.seq_length = 8192
    if cfg.model.context_parallel_size > 1:
        cfg.model.expert_model_parallel_size = 1
    cfg.model.recompute_granularity = None
    return cfg


def llama3_8b_branchy_config(fast: bool = False) -> ConfigContainer:
    cfg = llama3_8b_pretrain_8gpu_h100_bf16_config()
    if os.environ.get("FAST"):
        cfg.model.tensor_model_parallel_size = 4
    apply_site_tweaks(cfg.train)
    return cfg
"""
INIT = "from .llama3 import llama3_8b_pretrain_8gpu_h100_bf16_config as llama3_8b_pretrain_config\n"


def _tree(tmp_path: Path, launch: str, runner: str = SYNCING_RUNNER) -> dict:
    files = {
        "scripts/training/run_recipe.py": runner,
        "src/megatron/bridge/__init__.py": "",
        "src/megatron/bridge/recipes/__init__.py": "",
        "src/megatron/bridge/recipes/common.py": COMMON,
        "src/megatron/bridge/recipes/utils/__init__.py": "",
        "src/megatron/bridge/recipes/utils/optimizer_utils.py": OPTIMIZER,
        "src/megatron/bridge/recipes/llama/__init__.py": INIT,
        "src/megatron/bridge/recipes/llama/llama3.py": LLAMA,
        "examples/launch.sh": launch,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / "examples/launch.sh"], root=str(tmp_path))
    return file_json(result)


TORCHRUN = "cd $(dirname $0)/..\ntorchrun --nproc_per_node=8 scripts/training/run_recipe.py --recipe "


def test_the_recipe_is_followed_through_the_tree_under_the_overrides(tmp_path):
    got = _tree(tmp_path, TORCHRUN + "llama3_8b_pretrain_config -gb 64 train.micro_batch_size=2\n")
    layout = got["layout"]
    assert layout["trainer"] == "megatron" and layout["cluster"]["world_size"] == 8
    parallel = layout["parallel"]
    assert (parallel["tp"], parallel["pp"], parallel["cp"], parallel["ep"], parallel["dp"]) == (2, 1, 2, 1, 2)
    assert parallel["sequence_parallel"] is True and parallel["distributed_optimizer"] is True
    assert (layout["batch"]["micro"], layout["batch"]["global"], layout["batch"]["grad_accum"]) == (2, 64, 16)
    assert layout["model"]["seq_length"] == 8192 and layout["precision"] == "bf16"
    assert layout["recompute"]["granularity"] is None
    provenance = layout["provenance"]
    assert "recipe llama3_8b_pretrain_config: model.context_parallel_size = 2" in provenance["parallel.cp"]["note"]
    assert provenance["batch.global"]["origin"] == "literal"  # the -gb option, with its place in the launch
    assert not [d for d in got["diagnostics"] if d["severity"] == "error"]


def test_a_trailing_override_beats_a_convenience_option(tmp_path):
    got = _tree(tmp_path, TORCHRUN + "llama3_8b_pretrain_config -tp 4 model.tensor_model_parallel_size=1\n")
    assert got["layout"]["parallel"]["tp"] == 1


def test_the_runner_that_syncs_trains_at_the_dataset_s_length(tmp_path):
    """-sl sets dataset.seq_length; a runner that then sets the model's length to the dataset's trains at it; one
    that does not, at the model's."""
    launch = TORCHRUN + "llama3_8b_pretrain_config -sl 2048\n"
    assert _tree(tmp_path, launch)["layout"]["model"]["seq_length"] == 2048
    assert _tree(tmp_path, launch, runner=RUNNER)["layout"]["model"]["seq_length"] == 8192


def test_what_the_recipe_does_not_decide_stays_unknown(tmp_path):
    """An `if` on the environment, and a helper plint cannot read handed cfg.train: those keys are unknown, not the
    values before them; what the model provider builds (its vpp, its shape) is unknown too."""
    layout = _tree(tmp_path, TORCHRUN + "llama3_8b_branchy_config\n")["layout"]
    assert layout["parallel"]["tp"] is None and layout["parallel"]["cp"] == 2
    assert layout["batch"]["micro"] is None and layout["batch"]["global"] is None
    assert "apply_site_tweaks" in layout["provenance"]["batch.micro"]["note"]
    assert layout["model"]["num_layers"] is None


def test_a_recipe_not_in_the_tree_leaves_its_keys_unknown(tmp_path):
    """Bridge installed as a package: only the overrides are known."""
    layout = _tree(tmp_path, TORCHRUN + "qwen3_8b_pretrain_config model.tensor_model_parallel_size=4\n")["layout"]
    assert layout["trainer"] == "megatron" and layout["parallel"]["tp"] == 4
    assert layout["parallel"]["pp"] is None and "plint finds once" in layout["provenance"]["parallel.pp"]["note"]


def test_a_recipe_that_calls_itself_ends(tmp_path):
    loop = LLAMA + "\n\ndef looping_config():\n    return looping_config()\n"
    (tmp_path / "src/megatron/bridge/recipes/llama").mkdir(parents=True)
    (tmp_path / "src/megatron/bridge/recipes/llama/extra.py").write_text(loop.replace("..common", "..common"))
    layout = _tree(tmp_path, TORCHRUN + "looping_config\n")["layout"]
    assert layout["trainer"] == "megatron" and layout["parallel"]["tp"] is None


def test_a_recipe_nested_past_python_s_stack_is_unknown_not_a_crash(tmp_path):
    deep = "def deep_config():\n    cfg = ConfigContainer(train=TrainingConfig(micro_batch_size=1))\n"
    deep += "    cfg.train.global_batch_size = " + "+".join(["1"] * 900) + "\n    return cfg\n"
    (tmp_path / "src/megatron/bridge/recipes/deep").mkdir(parents=True)
    (tmp_path / "src/megatron/bridge/recipes/deep/deep.py").write_text(deep)
    got = _tree(tmp_path, TORCHRUN + "deep_config\n")
    assert got["layout"]["trainer"] == "megatron" and got["layout"]["batch"]["global"] in (None, 900)
    assert not [d for d in got["diagnostics"] if "please report it" in d["message"]]


def test_a_relative_import_that_climbs_out_of_the_tree_is_not_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text("def helper(cfg):\n    cfg.train.global_batch_size = 999\n")
    climbing = "from " + "." * 7 + "outside.evil import helper\n\n\ndef climbing_config():\n"
    climbing += "    cfg = ConfigContainer(train=TrainingConfig(global_batch_size=16, micro_batch_size=1))\n"
    climbing += "    helper(cfg)\n    return cfg\n"
    repo = tmp_path / "repo"
    (repo / "src/megatron/bridge/recipes/x").mkdir(parents=True)
    (repo / "src/megatron/bridge/recipes/x/x.py").write_text(climbing)
    layout = _tree(repo, TORCHRUN + "climbing_config\n")["layout"]
    assert layout["batch"]["global"] is None  # the helper is not read: what it is handed is unknown, never 999
