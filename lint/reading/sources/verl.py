"""verl's trainers with a Megatron actor: `python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer KEY=VALUE
...` (volcengine/verl b178a3c). The driver is one process; it places the actor's ranks as Ray workers on trainer.nnodes
nodes of trainer.n_gpus_per_node GPUs each, and the launch's words are Hydra overrides of the named config
(`actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2`; a leading `+` or `++` adds the key). The layout is
the actor's: its Megatron sizes, its precision (megatron.dtype) and recompute (override_transformer_config), and per
optimizer step ppo_mini_batch_size prompts of rollout.n samples each (verl/workers/megatron_workers.py normalises
ppo_mini_batch_size *= rollout.n, //= dp), in micro-batches of ppo_micro_batch_size_per_gpu unless use_dynamic_bsz
cuts them by tokens. The driver starts its workers with CUDA_DEVICE_MAX_CONNECTIONS=1. Keys not given take the defaults of verl/trainer/config/_generated_ppo_megatron_trainer.yaml;
an unknown word among the overrides could set any key, so then they are unknown. The model is the HF checkpoint
actor_rollout_ref.model.path names: its shape is not in the launch.
"""

from __future__ import annotations

import re

from plint.reading.shell.model import Command, Piece, Var, Word
from plint.reading.sources.dotlist import (
    Overrides,
    absent,
    bool_value,
    given,
    int_value,
    option_names,
    samples_a_step,
)
from plint.reading.sources.launch_calls import with_environment
from plint.reading.sources.model_shape import checkpoint_shape
from plint.values import Value, derived, unresolved

_MAIN = re.compile(r"verl(?:\.\w+)*\.main_ppo")
_ACTOR = "actor_rollout_ref.actor."
_MEGATRON = _ACTOR + "megatron."
_TRANSFORMER = _MEGATRON + "override_transformer_config."
_CONFIG = "verl/trainer/config/_generated_ppo_megatron_trainer.yaml"
_WHERE = f"verl's default ({_CONFIG})"
# key -> (layout fact, verl's default; None: no default that decides it)
_INT_KEYS = {
    _MEGATRON + "tensor_model_parallel_size": ("parallel.tp", 1),
    _MEGATRON + "pipeline_model_parallel_size": ("parallel.pp", 1),
    _MEGATRON + "virtual_pipeline_model_parallel_size": ("parallel.vpp", None),
    _MEGATRON + "context_parallel_size": ("parallel.cp", 1),
    _MEGATRON + "expert_model_parallel_size": ("parallel.ep", 1),
    _MEGATRON + "expert_tensor_parallel_size": ("parallel.etp", None),
    _TRANSFORMER + "recompute_num_layers": ("recompute.num_layers", None),
}
_BOOL_KEYS = {
    _MEGATRON + "sequence_parallel": ("parallel.sequence_parallel", True),
    _MEGATRON + "use_distributed_optimizer": ("parallel.distributed_optimizer", True),
}
_TEXT_KEYS = {
    _TRANSFORMER + "recompute_granularity": ("recompute.granularity", None),
    _TRANSFORMER + "recompute_method": ("recompute.method", None),
}
_DTYPES = {
    "fp8": "fp8",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "fp16": "fp16",
    "float32": "fp32",
    "fp32": "fp32",
}


# what verl's driver sets in every Ray worker's environment (verl/trainer/constants_ppo.py, PPO_RAY_RUNTIME_ENV)
WORKER_ENV = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}


def with_worker_env(command: Command, at: Word, env: dict[str, str] = WORKER_ENV) -> Command:
    """The command with the variables a driver gives its workers (verl's by default) as assignments in front of it,
    placed at the module."""
    given = {
        name: Var(name, (Piece(value, at.value_span, "derived"),), exported=True, span=at.value_span)
        for name, value in env.items()
    }
    return with_environment(command, given)


def is_verl_main(module: str | None, words: list[Word]) -> bool:
    """verl's trainer module, or a recipe's own one (verl-recipe's recipe.dapo.main_dapo, main_gkd) given a
    --config-name and verl's actor overrides."""
    if module is None:
        return False
    if _MAIN.fullmatch(module) is not None:
        return True
    texts = [w.known_prefix() for w in words]
    named = any(t.startswith(("--config-name", "-cn")) for t in texts)
    return named and any(t.lstrip("+").startswith(_ACTOR) and "=" in t for t in texts)


def verl_sizes(words: list[Word], site) -> tuple[Value, Value, Value]:
    """(nodes, GPUs per node, world) of the actor's Ray workers."""
    found = Overrides(words)
    nodes = int_value(found, "trainer.nnodes", 1, _WHERE)
    per = int_value(found, "trainer.n_gpus_per_node", 8, _WHERE)
    if not (nodes.known and per.known):
        return nodes, per, unresolved("trainer.nnodes x trainer.n_gpus_per_node: one of them is not known", site)
    world = Value(
        nodes.value * per.value, per.span or nodes.span, "derived", "trainer.nnodes x trainer.n_gpus_per_node"
    )
    return nodes, per, world


def verl_megatron_actor(words: list[Word]) -> bool:
    """The actor runs on Megatron: the config is a Megatron one, or the strategy is set so."""
    found = Overrides(words)
    return "megatron" in (found.config_name or "") or found.text(_ACTOR + "strategy") == "megatron"


def verl_trainer(entrypoint: Word) -> Value:
    return derived("megatron", "verl's Megatron actor (its config's Megatron engine)", entrypoint.value_span)


def verl_facts(words: list[Word]) -> dict[str, Value]:
    """The actor's layout facts from the overrides, with verl's defaults where every word is known."""
    found = Overrides(words)
    out: dict[str, Value] = {}
    for key, (fact, fallback) in _INT_KEYS.items():
        value = int_value(found, key, fallback, _WHERE)
        if value.known or value.origin == "unresolved":
            out[fact] = value
    for key, (fact, truth) in _BOOL_KEYS.items():
        out[fact] = bool_value(found, key, truth, _WHERE)
    for key, (fact, _) in _TEXT_KEYS.items():
        out[fact] = given(found, key) or absent(found, key, None, _WHERE)
    fp8 = given(found, _TRANSFORMER + "fp8")
    dtype = given(found, _MEGATRON + "dtype") or absent(found, _MEGATRON + "dtype", "bfloat16", _WHERE)
    if fp8 is not None and (fp8.value is not None or fp8.origin == "unresolved"):  # TransformerConfig.fp8: e4m3, hybrid
        dtype = fp8 if not fp8.known else Value("fp8", fp8.span, fp8.origin, f"{_TRANSFORMER}fp8 {fp8.value}")
    out["precision"] = (
        Value(_DTYPES[dtype.value], dtype.span, dtype.origin, f"{_MEGATRON}dtype {dtype.value}")
        if dtype.known and dtype.value in _DTYPES
        else dtype
    )
    out.update(_batch(found))
    out.update(_overlaps(found))
    out.update(checkpoint_shape("verl"))
    out["trainer.option_names"] = option_names(
        "verl",
        {
            "--sequence-parallel": f"{_MEGATRON}sequence_parallel=True",
            "--use-distributed-optimizer": f"{_MEGATRON}use_distributed_optimizer=True",
            "--overlap-grad-reduce": f"{_MEGATRON}override_ddp_config.overlap_grad_reduce=True",
            "--overlap-param-gather": f"{_MEGATRON}override_ddp_config.overlap_param_gather=True",
        },
    )
    return out


def _overlaps(found: Overrides) -> dict[str, Value]:
    """The DDP overlaps, off unless override_ddp_config turns them on (verl/utils/megatron_utils.py builds the
    DistributedDataParallelConfig with overlap_grad_reduce False); present only when on or unknown, as the Megatron
    reader keeps them."""
    out = {}
    for name in ("overlap_grad_reduce", "overlap_param_gather"):
        setting = bool_value(found, _MEGATRON + "override_ddp_config." + name, False, _WHERE)
        if setting.value is not False:
            out[name] = setting
    return out


def _batch(found: Overrides) -> dict[str, Value]:
    prompts = int_value(found, _ACTOR + "ppo_mini_batch_size", 256, _WHERE)
    samples = int_value(found, "actor_rollout_ref.rollout.n", 1, _WHERE)
    out = {"batch.global": samples_a_step(prompts, samples, "ppo_mini_batch_size prompts of rollout.n samples")}
    dynamic = bool_value(found, _ACTOR + "use_dynamic_bsz", False, _WHERE)
    if dynamic.value is not False:
        out["batch.micro"] = unresolved("use_dynamic_bsz: the actor's micro-batches are cut by tokens", dynamic.span)
        return out
    micro = int_value(found, _ACTOR + "ppo_micro_batch_size_per_gpu", None, _WHERE)
    out["batch.micro"] = (
        micro
        if micro.known or micro.origin == "unresolved"
        else unresolved("no ppo_micro_batch_size_per_gpu: verl requires one (or use_dynamic_bsz)")
    )
    return out
