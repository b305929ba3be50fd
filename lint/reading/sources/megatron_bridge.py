"""Megatron-Bridge's recipe runner: `torchrun ... scripts/training/run_recipe.py --recipe NAME [options] KEY=VALUE ...`
(NVIDIA-NeMo/Megatron-Bridge 067f987 scripts/training/run_recipe.py). The runner calls the recipe function NAME, which
builds a ConfigContainer (src/megatron/bridge/recipes), applies its convenience options as overrides
(COMMON_OVERRIDE_FIELDS: -gb is train.global_batch_size, -tp model.tensor_model_parallel_size, -sl
dataset.seq_length, ...) and then the trailing KEY=VALUE overrides, and trains Megatron-Core through Bridge, without
Megatron-LM's argument parser. The recipe is read from the checked tree (recipe_eval); its keys, under the overrides,
give the layout: model.*_parallel_size and sequence_parallel, train.micro_batch_size and global_batch_size,
mixed_precision (a recipe name such as "bf16_mixed", training/mixed_precision.py), model.recompute_granularity, and the
distributed optimizer when either ddp.use_distributed_optimizer or optimizer.use_distributed_optimizer is on
(training/config.py _validate_and_sync_distributed_optimizer_settings turns both on). A runner with
recipe_runner.py's sync_model_dataset_sequence_length trains at dataset.seq_length. A key the recipe does not set
takes its dataclass's default, which plint does not read: unknown, except the two distributed-optimizer switches,
False in Megatron-Core's DistributedDataParallelConfig and OptimizerConfig."""

from __future__ import annotations

import os
import re

from plint.reading.shell.model import Word
from plint.reading.sources.arglist import option_word
from plint.reading.sources.dotlist import MEGATRON_CORE_SIZES, Overrides, option_names, override_of
from plint.reading.sources.model_shape import checkpoint_shape
from plint.reading.sources.yaml_config import shown
from plint.reading.sources.recipe_eval import NOT_SET, Config, Recipes, Unknown, lookup
from plint.values import Value, derived, unresolved

RUNNER = "run_recipe.py"
MAX_TREE_FILES = 5000  # files and folders looked at when finding a recipe in the tree
# run_recipe.py's convenience options and the override each stands for (COMMON_OVERRIDE_FIELDS)
CONVENIENCE = {
    ("-gb", "--global_batch_size"): "train.global_batch_size",
    ("-mb", "--micro_batch_size"): "train.micro_batch_size",
    ("-sl", "--seq_length"): "dataset.seq_length",
    ("-tp", "--tensor_model_parallel_size"): "model.tensor_model_parallel_size",
    ("-pp", "--pipeline_model_parallel_size"): "model.pipeline_model_parallel_size",
    ("-cp", "--context_parallel_size"): "model.context_parallel_size",
    ("-vp", "--virtual_pipeline_model_parallel_size"): "model.virtual_pipeline_model_parallel_size",
    ("-ep", "--expert_model_parallel_size"): "model.expert_model_parallel_size",
    ("-etp", "--expert_tensor_parallel_size"): "model.expert_tensor_parallel_size",
}
_PRECISION = {"bf16_mixed": "bf16", "bf16-mixed": "bf16", "fp16_mixed": "fp16", "fp16-mixed": "fp16"}
_FP8 = re.compile(r"^(bf16|fp16)[_-]with[_-](fp8|mxfp8)[_-]")  # bf16_with_fp8_delayed_scaling_mixed, ...
_SHAPE = {
    "num_layers": "model.num_layers",
    "hidden_size": "model.hidden_size",
    "ffn_hidden_size": "model.ffn_hidden_size",
    "num_attention_heads": "model.num_attention_heads",
    "num_query_groups": "model.num_query_groups",
}


def recipe_word(words: list[Word]) -> Word | None:
    return option_word(words, "--recipe")


def is_bridge_recipe_run(entrypoint: str | None, words: list[Word]) -> bool:
    """Megatron-Bridge's recipe runner given a recipe by name."""
    return entrypoint is not None and os.path.basename(entrypoint) == RUNNER and recipe_word(words) is not None


def find_recipe(tree: str, name: str, read) -> tuple[Recipes, str] | None:
    """The recipes of the tree and the module that defines `name` (or re-exports it under that name); None when no
    module of a `recipes` folder does, or more than one defines it."""
    defines = re.compile(rf"^\s*def {re.escape(name)}\s*\(", re.M)
    exports = re.compile(rf"\b(?:import|as)\s+{re.escape(name)}\b")
    found, reexports, seen = [], [], 0
    for folder, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
        seen += len(files) + 1
        if seen > MAX_TREE_FILES:
            break
        if "recipes" not in folder[len(tree) :].split(os.sep):
            continue
        for file in sorted(f for f in files if f.endswith(".py")):
            text = read(os.path.join(folder, file)) or ""
            if defines.search(text):
                found.append(os.path.join(folder, file))
            elif exports.search(text):
                reexports.append(os.path.join(folder, file))
    modules = found or reexports[:1]
    if len(found) > 1 or not modules:
        return None
    return Recipes(read, _source_roots(modules[0], tree), tree), modules[0]


def _source_roots(module: str, tree: str) -> list[str]:
    """The folders an absolute import may start from: each folder from the recipe module's up to the tree's top (a
    namespace package such as `megatron` has no __init__.py to find its top by)."""
    roots: list[str] = []
    folder = os.path.dirname(module)
    while len(folder) >= len(tree) and len(roots) < 16:
        roots.append(folder)
        folder = os.path.dirname(folder)
    return roots


def read_recipe(recipes: Recipes, module_path: str, name: str) -> Config | Unknown:
    module = recipes.module(module_path)
    if module is None:
        return Unknown(f"{module_path} is not read")
    built = recipes.call(module, name)
    return built.root if hasattr(built, "root") else Unknown(f"{name} returns no config plint follows")


class RecipeSettings:
    """The recipe's keys under the launch's overrides."""

    def __init__(self, name: str, config: Config | Unknown, words: list[Word]):
        self.name, self.config = name, config
        self.dataset_option = option_word(words, "--dataset") is not None
        self.found = Overrides(words)
        for options, key in CONVENIENCE.items():  # an option is an override the trailing ones may replace
            word = next((w for w in (option_word(words, o) for o in options) if w is not None), None)
            if word is not None and key not in self.found.values:
                self.found.values[key] = word

    def get(self, key: str) -> Value:
        overridden = override_of(self.found, key)
        if overridden is not None:
            return overridden
        if isinstance(self.config, Unknown):
            return unresolved(f"recipe {self.name}: {self.config.why}")
        value = lookup(self.config, key)
        if value is NOT_SET:
            return unresolved(f"recipe {self.name} does not set {key} (its default, which plint does not read)")
        if isinstance(value, Unknown):
            return unresolved(f"recipe {self.name}: {key} {value.why}")
        if value is not None and not isinstance(value, (str, int, float, bool)):
            return unresolved(f"recipe {self.name}: {key} is no plain value")
        return derived(value, f"recipe {self.name}: {key} = {shown(value)}")

    def unset(self, key: str) -> bool:
        """No override gives `key` and no statement of the recipe sets it."""
        return (
            key not in self.found.values
            and not self.found.unknown
            and isinstance(self.config, Config)
            and lookup(self.config, key) is NOT_SET
        )

    def number(self, key: str) -> Value:
        value = self.get(key)
        if value.value is None or (isinstance(value.value, int) and not isinstance(value.value, bool)):
            return value
        return Value(None, value.span, "unresolved", f"{value.note}: not a whole number")

    def flag(self, key: str) -> Value:
        value = self.get(key)
        if value.value is None or isinstance(value.value, bool):
            return value
        return Value(None, value.span, "unresolved", f"{value.note}: not a boolean")


def bridge_trainer(entrypoint: Word) -> Value:
    return derived("megatron", "Megatron-Bridge's recipe runner: Megatron-Core through Bridge", entrypoint.value_span)


def bridge_facts(settings: RecipeSettings, syncs_sequence: bool) -> dict[str, Value]:
    """The layout facts of the recipe under the overrides."""
    out: dict[str, Value] = {}
    for name, fact in MEGATRON_CORE_SIZES.items():
        value = settings.number("model." + name)
        if value.value is not None or fact != "parallel.etp":
            out[fact] = value
    vpp = settings.get("model.virtual_pipeline_model_parallel_size")
    out["parallel.vpp"] = vpp if vpp.value is not None or not vpp.known else derived(None, f"{vpp.note}: none")
    out["parallel.sequence_parallel"] = settings.flag("model.sequence_parallel")
    out.update(checkpoint_shape("Megatron-Bridge"))  # the shape the recipe or the overrides give replaces these
    out["parallel.distributed_optimizer"] = _distributed_optimizer(settings)
    for name in ("overlap_grad_reduce", "overlap_param_gather"):  # present only when on or unknown
        setting = settings.flag("ddp." + name)
        if setting.value is not False:
            out[name] = setting
    out["batch.micro"] = settings.number("train.micro_batch_size")
    out["batch.global"] = settings.number("train.global_batch_size")
    out["model.seq_length"] = _sequence(settings, syncs_sequence, settings.dataset_option)
    out["precision"] = _precision(settings.get("mixed_precision"))
    granularity = settings.get("model.recompute_granularity")
    out["recompute.granularity"] = (
        granularity
        if granularity.value in (None, "full", "selective")
        else unresolved(f"{granularity.note}: not a recompute granularity")
    )
    for name, key in _SHAPE.items():
        shape = settings.number(key)
        if shape.known:
            out[f"model.{name}"] = shape
    out["trainer.validate_args"] = derived(False, "Megatron-Bridge trains without Megatron-LM's argument parser")
    out["trainer.option_names"] = option_names(
        "Megatron-Bridge",
        {
            "--sequence-parallel": "model.sequence_parallel=true",
            "--use-distributed-optimizer": "optimizer.use_distributed_optimizer=true",
            "--overlap-grad-reduce": "ddp.overlap_grad_reduce=true",
            "--overlap-param-gather": "ddp.overlap_param_gather=true",
        },
    )
    return out


def _distributed_optimizer(settings: RecipeSettings) -> Value:
    switches = [settings.get("ddp.use_distributed_optimizer"), settings.get("optimizer.use_distributed_optimizer")]
    on = next((s for s in switches if s.value is True), None)
    if on is not None:
        return Value(True, on.span, on.origin, f"{on.note} (Bridge turns the other switch on to match)")
    # a switch no statement sets keeps Megatron-Core's default, False (DistributedDataParallelConfig, OptimizerConfig)
    unset = [settings.unset("ddp.use_distributed_optimizer"), settings.unset("optimizer.use_distributed_optimizer")]
    if all(s.value is False or not_set for s, not_set in zip(switches, unset)):
        return derived(False, "ddp.use_distributed_optimizer and optimizer.use_distributed_optimizer both off")
    return next(s for s in switches if s.value is not False)


def _sequence(settings: RecipeSettings, syncs: bool, dataset_option: bool) -> Value:
    """The sequence length trained at: the model's, or where the runner sets the model's to the dataset's, the
    dataset's; unknown when the runner also builds the dataset itself (--dataset), from values of its own moment."""
    model, dataset = settings.number("model.seq_length"), settings.number("dataset.seq_length")
    if not syncs:
        return model
    if dataset_option:
        return unresolved("--dataset: the runner builds the dataset, whose sequence length the model then takes")
    if dataset.value is not None:
        return Value(dataset.value, dataset.span, dataset.origin, f"{dataset.note} (the runner sets the model's to it)")
    return dataset if not dataset.known else model


def _precision(recipe: Value) -> Value:
    if not recipe.known or recipe.value is None:
        return recipe if not recipe.known else unresolved(f"{recipe.note}: no mixed-precision recipe")
    name = str(recipe.value)
    if name in _PRECISION:
        return Value(_PRECISION[name], recipe.span, recipe.origin, recipe.note)
    if _FP8.match(name):
        return Value("fp8", recipe.span, recipe.origin, recipe.note)
    return unresolved(f"{recipe.note}: a mixed-precision recipe plint does not know")


_SYNCS = re.compile(r"sync_model_dataset_sequence_length|\.model\.seq_length\s*=\s*[\w.]*dataset[\w.]*seq_length")


def syncs_sequence_length(*runner_texts: str | None) -> bool:
    """Whether the runner sets the model's sequence length to the dataset's after the overrides (run_recipe.py itself
    in earlier Bridge, recipe_runner.py beside it since)."""
    return any(text is not None and _SYNCS.search(text) is not None for text in runner_texts)
