"""SkyRL's trainers on its Megatron backend (NovaSky-AI/SkyRL a956457, the `skyrl.train` package): `python -m
skyrl.train.entrypoints.main_base trainer.strategy=megatron KEY=VALUE ...` (an algorithm's own module, such as the
DAPO example's, takes the same keys) and `python -m skyrl.train.main_sft KEY=VALUE ...`. The driver is one process
that places the policy's ranks as Ray workers; the launch's words are OmegaConf dotlist overrides of SkyRL's
dataclass config, whose defaults stand for every key not given (skyrl/train/config/config.py, sft_config.py):

- RL: trainer.strategy (fsdp unless megatron is given); the policy on trainer.placement.policy_num_nodes x
  policy_num_gpus_per_node GPUs (1 x 1); its sizes under trainer.policy.megatron_config (tensor, pipeline, context
  and expert model parallel sizes 1; expert_tensor_parallel_size unset, Megatron's tp); per optimizer step
  trainer.policy_mini_batch_size prompts (256) of generator.n_samples_per_prompt samples (5), in micro-batches of
  trainer.micro_train_batch_size_per_gpu (1) unless trainer.max_tokens_per_microbatch > 0 cuts them by tokens
  (skyrl/train/utils/utils.py validate_batch_sizes); bf16 unless trainer.bf16=false;
- SFT: strategy megatron by default; placement.num_nodes x placement.num_gpus_per_node (1 x 4); megatron_config's
  tensor and pipeline sizes 2 and 2 (SFTConfig's own defaults); batch_size samples a step (4) in micro-batches of
  micro_train_batch_size_per_gpu (2), or one bin of packed sequences each under use_sequence_packing
  (build_skyrl_config_for_sft); trainer.bf16 keeps its default, bf16;
- both: Megatron's sequence parallelism exactly when tp > 1 (provider.sequence_parallel, workers/megatron/
  megatron_worker.py), the distributed optimizer (use_distributed_optimizer set on the DDP config there), and
  transformer_config_kwargs' defaults backfilled under any override: full recompute, uniform, one layer
  (DEFAULT_TRANSFORMER_CONFIG_KWARGS).
The model is the HF checkpoint model.path names: its shape is not in the launch.
"""

from __future__ import annotations

import re

from plint.reading.shell.model import Word
from plint.reading.sources.dotlist import (
    Overrides,
    absent,
    bool_value,
    given,
    int_value,
    option_names,
    samples_a_step,
)
from plint.reading.sources.model_shape import checkpoint_shape
from plint.values import Value, derived, unresolved

_MAIN = re.compile(r"skyrl\.train\.entrypoints\.main_base")
_SFT = re.compile(r"skyrl\.train\.main_sft")
_WHERE = "SkyRL's default (skyrl/train/config/config.py)"
_SFT_WHERE = "SkyRL's SFT default (skyrl/train/config/sft_config.py)"
_SIZES = (
    ("tensor_model_parallel_size", "parallel.tp"),
    ("pipeline_model_parallel_size", "parallel.pp"),
    ("context_parallel_size", "parallel.cp"),
    ("expert_model_parallel_size", "parallel.ep"),
)


class _Keys:
    """Where one of SkyRL's two configs keeps what plint reads, and its defaults."""

    def __init__(self, sft: bool):
        self.sft = sft
        self.where = _SFT_WHERE if sft else _WHERE
        self.megatron = "megatron_config." if sft else "trainer.policy.megatron_config."
        self.nodes = "placement.num_nodes" if sft else "trainer.placement.policy_num_nodes"
        self.per_node = "placement.num_gpus_per_node" if sft else "trainer.placement.policy_num_gpus_per_node"
        self.per_node_default = 4 if sft else 1
        self.strategy = "strategy" if sft else "trainer.strategy"
        self.micro = "micro_train_batch_size_per_gpu" if sft else "trainer.micro_train_batch_size_per_gpu"
        self.micro_default = 2 if sft else 1

    def size_default(self, key: str) -> int:
        return 2 if self.sft and key in ("tensor_model_parallel_size", "pipeline_model_parallel_size") else 1


def _keys(module: str | None) -> _Keys:
    return _Keys(module is not None and _SFT.fullmatch(module) is not None)


def is_skyrl_main(module: str | None, words: list[Word]) -> bool:
    """SkyRL's RL or SFT entry module, or an algorithm's own module given SkyRL's trainer placement."""
    if module is None:
        return False
    if _MAIN.fullmatch(module) or _SFT.fullmatch(module):
        return True
    return any(w.known_prefix().startswith("trainer.placement.policy_num_") for w in words)


def skyrl_megatron(module: str | None, words: list[Word]) -> bool:
    """The policy trains on SkyRL's Megatron backend (the SFT trainer's default; RL's only when asked)."""
    keys = _keys(module)
    strategy = Overrides(words).text(keys.strategy)
    return strategy == "megatron" or (keys.sft and strategy is None)


# what SkyRL's driver sets in every Ray worker's environment under trainer.strategy=megatron
# (skyrl/train/utils/utils.py, prepare_runtime_environment)
WORKER_ENV = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}


def skyrl_sizes(module: str | None, words: list[Word], site) -> tuple[Value, Value, Value]:
    """(nodes, GPUs per node, world) of the policy's Ray workers."""
    keys, found = _keys(module), Overrides(words)
    nodes = int_value(found, keys.nodes, 1, keys.where)
    per = int_value(found, keys.per_node, keys.per_node_default, keys.where)
    if not (nodes.known and per.known):
        return nodes, per, unresolved(f"{keys.nodes} x {keys.per_node}: one of them is not known", site)
    world = Value(nodes.value * per.value, per.span or nodes.span, "derived", f"{keys.nodes} x {keys.per_node}")
    return nodes, per, world


def skyrl_trainer(entrypoint: Word) -> Value:
    return derived(
        "megatron", "SkyRL's Megatron backend (Megatron-Core through Megatron-Bridge)", entrypoint.value_span
    )


def skyrl_facts(module: str | None, words: list[Word]) -> dict[str, Value]:
    """The policy's layout facts from the overrides, with SkyRL's defaults where every word is known."""
    keys, found = _keys(module), Overrides(words)
    out: dict[str, Value] = {}
    for key, fact in _SIZES:
        out[fact] = int_value(found, keys.megatron + key, keys.size_default(key), keys.where)
    etp = given(found, keys.megatron + "expert_tensor_parallel_size")
    if etp is not None:
        out["parallel.etp"] = int_value(found, keys.megatron + "expert_tensor_parallel_size", None, keys.where)
    tp = out["parallel.tp"]
    out["parallel.sequence_parallel"] = (
        Value(tp.value > 1, tp.span, "derived", "SkyRL turns Megatron's sequence parallelism on exactly when tp > 1")
        if tp.known
        else tp
    )
    out["parallel.distributed_optimizer"] = derived(True, "SkyRL's Megatron worker uses the distributed optimizer")
    for name in ("overlap_grad_reduce", "overlap_param_gather"):  # MegatronDDPConfig: both off unless given
        setting = bool_value(found, keys.megatron + "ddp_config." + name, False, keys.where)
        if setting.value is not False:
            out[name] = setting
    out.update(_recompute(found, keys))
    out["precision"] = _precision(found, keys)
    out.update(_batch(found, keys))
    out.update(checkpoint_shape("SkyRL"))
    ddp = keys.megatron + "ddp_config."
    out["trainer.option_names"] = option_names(
        "SkyRL",
        {
            "--overlap-grad-reduce": f"{ddp}overlap_grad_reduce=true",
            "--overlap-param-gather": f"{ddp}overlap_param_gather=true",
        },
    )
    return out


def _recompute(found: Overrides, keys: _Keys) -> dict[str, Value]:
    kwargs = keys.megatron + "transformer_config_kwargs."
    granularity = given(found, kwargs + "recompute_granularity") or absent(
        found, kwargs + "recompute_granularity", "full", keys.where
    )
    out = {"recompute.granularity": granularity}
    if granularity.value == "full":
        out["recompute.method"] = given(found, kwargs + "recompute_method") or absent(
            found, kwargs + "recompute_method", "uniform", keys.where
        )
        out["recompute.num_layers"] = int_value(found, kwargs + "recompute_num_layers", 1, keys.where)
    return out


def _precision(found: Overrides, keys: _Keys) -> Value:
    bf16 = bool_value(found, "trainer.bf16", True, _WHERE) if not keys.sft else None
    if bf16 is None:
        return derived("bf16", "SkyRL's SFT trainer keeps trainer.bf16's default, true")
    if not bf16.known:
        return bf16
    return Value("bf16" if bf16.value else "fp32", bf16.span, bf16.origin, bf16.note)


def _batch(found: Overrides, keys: _Keys) -> dict[str, Value]:
    if keys.sft:
        glob = int_value(found, "batch_size", 4, keys.where)
        packed = bool_value(found, "use_sequence_packing", False, keys.where)
        if packed.value is not False:
            return {
                "batch.global": glob,
                "batch.micro": unresolved(
                    "use_sequence_packing: one bin of packed sequences a micro-batch", packed.span
                ),
            }
        return {"batch.global": glob, "batch.micro": int_value(found, keys.micro, keys.micro_default, keys.where)}
    prompts = int_value(found, "trainer.policy_mini_batch_size", 256, keys.where)
    samples = int_value(found, "generator.n_samples_per_prompt", 5, keys.where)
    out = {
        "batch.global": samples_a_step(
            prompts, samples, "policy_mini_batch_size prompts of n_samples_per_prompt samples"
        )
    }
    budget = int_value(found, "trainer.max_tokens_per_microbatch", -1, keys.where)
    if not budget.known:
        out["batch.micro"] = budget
    elif budget.value > 0:
        out["batch.micro"] = unresolved("trainer.max_tokens_per_microbatch: micro-batches cut by tokens", budget.span)
    else:
        out["batch.micro"] = int_value(found, keys.micro, keys.micro_default, keys.where)
    return out
