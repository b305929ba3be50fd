"""NeMo RL's trainers on its Megatron backend: `uv run examples/run_grpo.py --config CONFIG.yaml KEY=VALUE ...`
(NVIDIA-NeMo/RL 7ea279a; run_sft.py, run_dpo.py, run_distillation.py alike). The driver loads CONFIG.yaml with its
`defaults:` chain (nemo_rl/utils/config.py load_config_with_inheritance: each parent, relative to the file naming it,
merged under the child, a section marked `_override_` replacing its parent's), applies the KEY=VALUE overrides and
places the policy's workers on cluster.num_nodes x cluster.gpus_per_node GPUs. Under policy.megatron_cfg.enabled the
policy trains on Megatron-Core through Megatron-Bridge, from the config's own keys (nemo_rl/models/megatron/setup.py):
megatron_cfg's tensor, pipeline, context and expert model parallel sizes and sequence_parallel as given,
megatron_cfg.optimizer.use_distributed_optimizer, policy.precision (bfloat16, float16, float32), and a recompute only
under megatron_cfg.activation_checkpointing (recompute_granularity, full by default). A step trains
policy.train_global_batch_size samples in micro-batches of policy.train_micro_batch_size, unless
policy.sequence_packing.enabled packs them by tokens; DPO trains both sequences of each pair, so twice each
(nemo_rl/algorithms/dpo.py: gbs and mbs x 2). The model is the checkpoint policy.model_name names.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from plint.reading.shell.model import Word
from plint.reading.sources.arglist import option_word
from plint.reading.sources.dotlist import MEGATRON_CORE_SIZES, ConfigSettings, option_names
from plint.reading.sources.yaml_config import load_mapping
from plint.reading.sources.model_shape import checkpoint_shape
from plint.values import Value, derived, unresolved

_ENTRY = re.compile(r"(?:^|/)run_(?:grpo|dpo|sft|distillation|rm)\w*\.py$")
_MAX_PARENTS = 8  # files of one defaults chain
_MAX_MERGED = 100_000  # keys merged over one chain
_MEGATRON = "policy.megatron_cfg."
_DDP = _MEGATRON + "distributed_data_parallel_config."
_PRECISION = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def config_word(words: list[Word]) -> Word | None:
    return option_word(words, "--config")


def is_nemo_rl(entrypoint: str | None, words: list[Word]) -> bool:
    """One of NeMo RL's example drivers given a config."""
    return entrypoint is not None and _ENTRY.search(entrypoint) is not None and config_word(words) is not None


def load_config(path: str, read: Callable[[str], str | None]) -> tuple[dict | None, list[str]]:
    """The config at `path` merged over its defaults chain, and the files read; None when a file of the chain is not
    read, is no mapping, or the merge outgrows _MAX_MERGED (YAML aliases can make a small file a huge tree). `read`
    gives a file's text (None: not read)."""
    files: list[str] = []
    budget = [_MAX_MERGED]

    def load(name: str, depth: int) -> dict | None:
        text = read(name) if depth < _MAX_PARENTS and name not in files else None
        config = load_mapping(text) if text is not None else None
        if config is None:
            return None
        files.append(name)
        parents = config.pop("defaults", None)
        merged: dict = {}
        for parent in [parents] if isinstance(parents, str) else parents if isinstance(parents, list) else []:
            base = load(posixpath.normpath(posixpath.join(posixpath.dirname(name), str(parent))), depth + 1)
            if base is None:
                return None
            merged = _merge(merged, base, budget)
        return _merge(merged, config, budget)

    try:
        return load(path, 0), files
    except (_TooLarge, RecursionError):
        return None, files


class _TooLarge(Exception):
    pass


def _merge(base: dict, child: dict, budget: list[int]) -> dict:
    """OmegaConf.merge of two plain configs, a child's section marked `_override_: true` replacing the base's; each
    key merged spends one of `budget`."""
    out = dict(base)
    for key, value in child.items():
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooLarge
        if isinstance(value, dict) and value.get("_override_"):
            out[key] = {k: v for k, v in value.items() if k != "_override_"}
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value, budget)
        else:
            out[key] = value
    return out


def megatron_policy(settings: ConfigSettings) -> bool:
    return settings.flag(_MEGATRON + "enabled").value is True


def nemo_rl_trainer(entrypoint: Word) -> Value:
    return derived("megatron", "NeMo RL's Megatron policy (policy.megatron_cfg.enabled)", entrypoint.value_span)


def nemo_rl_cluster(settings: ConfigSettings) -> tuple[Value, Value, Value]:
    """(nodes, GPUs per node, world) of the cluster the driver builds."""
    nodes, per = settings.number("cluster.num_nodes"), settings.number("cluster.gpus_per_node")
    if not (nodes.known and per.known):
        return nodes, per, unresolved("cluster.num_nodes x cluster.gpus_per_node: one of them is not known")
    return nodes, per, derived(nodes.value * per.value, "cluster.num_nodes x cluster.gpus_per_node")


def nemo_rl_facts(settings: ConfigSettings, entrypoint: str) -> dict[str, Value]:
    """The Megatron policy's layout facts."""
    out: dict[str, Value] = {}
    for name, fact in MEGATRON_CORE_SIZES.items():
        value = settings.number(_MEGATRON + name)
        if value.value is not None or value.origin == "unresolved" or fact != "parallel.etp":
            out[fact] = value
    out["parallel.sequence_parallel"] = settings.flag(_MEGATRON + "sequence_parallel")
    out["parallel.distributed_optimizer"] = settings.flag(_MEGATRON + "optimizer.use_distributed_optimizer")
    for name in ("overlap_grad_reduce", "overlap_param_gather"):  # present only when on or unknown
        setting = settings.flag(_DDP + name)
        if setting.value is not False:
            out[name] = setting
    precision = settings.get("policy.precision")
    out["precision"] = (
        Value(_PRECISION[precision.value], precision.span, precision.origin, precision.note)
        if precision.value in _PRECISION
        else precision
        if not precision.known
        else unresolved(f"{precision.note}: not a precision NeMo RL accepts")
    )
    checkpointing = settings.flag(_MEGATRON + "activation_checkpointing")
    if checkpointing.value is True:
        granularity = settings.get(_MEGATRON + "recompute_granularity")
        out["recompute.granularity"] = (
            granularity if granularity.value is not None else derived("full", "full by default")
        )
    elif checkpointing.value is False:
        out["recompute.granularity"] = derived(None, f"{checkpointing.note}: no recompute")
    else:
        out["recompute.granularity"] = checkpointing
    out.update(_batch(settings, posixpath.basename(entrypoint).startswith("run_dpo")))
    out.update(checkpoint_shape("NeMo RL"))
    out["trainer.validate_args"] = derived(
        False, "NeMo RL trains through Megatron-Bridge, without Megatron-LM's parser"
    )
    out["trainer.option_names"] = option_names(
        "NeMo RL",
        {
            "--sequence-parallel": f"{_MEGATRON}sequence_parallel=true",
            "--use-distributed-optimizer": f"{_MEGATRON}optimizer.use_distributed_optimizer=true",
            "--overlap-grad-reduce": f"{_DDP}overlap_grad_reduce=true",
            "--overlap-param-gather": f"{_DDP}overlap_param_gather=true",
        },
    )
    return out


def _batch(settings: ConfigSettings, pairs: bool) -> dict[str, Value]:
    glob, micro = settings.number("policy.train_global_batch_size"), settings.number("policy.train_micro_batch_size")
    packed = settings.flag("policy.sequence_packing.enabled")
    if pairs:  # DPO: the chosen and the rejected sequence of each pair
        glob, micro = (
            Value(v.value * 2, v.span, "derived", f"{v.note}, x 2 (a pair's two sequences)") if v.known else v
            for v in (glob, micro)
        )
    if packed.value is not False:
        micro = unresolved("policy.sequence_packing.enabled: micro-batches are packed by tokens", packed.span)
    return {"batch.global": glob, "batch.micro": micro}
