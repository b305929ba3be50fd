"""ROLL's pipelines with a Megatron-trained role: `python examples/start_rlvr_pipeline.py --config_path DIR
--config_name NAME` (alibaba/ROLL 8eb27cc). The start script composes the YAML DIR/NAME.yaml beside it with Hydra
(initialize(config_path) is relative to the start script) and places each role (actor_train, sft_train, student, ...)
on the GPU indices of its device_mapping; the layout is the role trained with strategy_args.strategy_name
megatron_train, whose strategy_config goes into mcore_adapter's TrainingArguments by name:

- the sizes (tensor, pipeline, virtual pipeline, context, expert model parallel): None when not given, which keeps the
  checkpoint's own, 1 for the Hugging Face checkpoints the recipes load (mcore_adapter/training_args.py,
  DistributingParallelArguments); sequence_parallel False unless given, and off at tp 1 (models/model_config.py
  "cannot use sequence parallelism"); use_distributed_optimizer False unless given; recompute_granularity unset;
- the ranks: len(device_mapping), a Python expression ROLL evaluates (`list(range(0,16))`, worker_config.py); the
  GPUs of a node are the machine's own count, read at start-up whatever num_gpus_per_node says
  (roll/configs/base_config.py __post_init__: current_platform.device_count()), so the node count is unknown;
- the batch: training_args.per_device_train_batch_size (8) a micro-batch, gradient_accumulation_steps (1) of them
  per data-parallel rank a step (base_config.py set_old_logprobs_status), so global = micro x accumulation x dp;
- the sequence: sequence_length, else prompt_length (1024) + response_length (base_config.py __post_init__);
- bf16 when the role's model_args.dtype is bf16 (worker_config.py sets training_args.bf16).
The model is the checkpoint `pretrain` names: its shape is not in the launch.
"""

from __future__ import annotations

import ast
import posixpath
import re

from plint.reading.shell.model import Word
from plint.reading.sources.arglist import option_word
from plint.reading.sources.dotlist import MEGATRON_CORE_SIZES, option_names
from plint.reading.sources.yaml_config import shown
from plint.reading.sources.model_shape import checkpoint_shape
from plint.values import Value, default, derived, unresolved

_START = re.compile(r"(?:^|/)start_(?!\w*rollout)\w*pipeline\.py")
_ROLES = ("actor_train", "sft_train", "student")  # the trained role of each pipeline, when several train on Megatron
_RANGE = re.compile(r"\s*list\(\s*range\(\s*(\d{1,6})\s*,\s*(\d{1,6})\s*(?:,\s*(\d{1,6})\s*)?\)\s*\)\s*")  # GPU indices
_INTERPOLATION = re.compile(r"\$\{(\w+)\}")
_CODE = "mcore_adapter/training_args.py"
# the Megatron-LM switches whose strategy_config key is their name in underscores
_MEGATRON_SWITCHES = (
    "--sequence-parallel",
    "--use-distributed-optimizer",
    "--overlap-grad-reduce",
    "--overlap-param-gather",
)
_SIZES = {key: fact for key, fact in MEGATRON_CORE_SIZES.items() if fact != "parallel.etp"}


def is_roll_pipeline(entrypoint: str | None, words: list[Word]) -> bool:
    """A ROLL start script that trains, given its config (the rollout-only pipelines train nothing)."""
    return (
        entrypoint is not None
        and _START.search(entrypoint) is not None
        and option_word(words, "--config_path") is not None
        and option_word(words, "--config_name") is not None
    )


def config_name(entrypoint: str, words: list[Word]) -> str | None:
    """The YAML the start script composes: DIR/NAME.yaml beside it, as the launch names them; None when unknown."""
    folder, name = option_word(words, "--config_path"), option_word(words, "--config_name")
    if folder is None or name is None or folder.text is None or name.text is None:
        return None
    return posixpath.join(posixpath.dirname(entrypoint), folder.text, name.text + ".yaml")


def trained_role(config: dict) -> tuple[str, dict] | None:
    """(name, section) of the role ROLL trains on Megatron, or None."""
    roles = [
        (name, section)
        for name, section in config.items()
        if isinstance(section, dict)
        and isinstance(section.get("strategy_args"), dict)
        and section["strategy_args"].get("strategy_name") == "megatron_train"
    ]
    return min(roles, key=lambda r: _ROLES.index(r[0]) if r[0] in _ROLES else len(_ROLES), default=None)


def roll_trainer(entrypoint: Word, role: str, path: str) -> Value:
    return derived("megatron", f"ROLL's {role} trained with megatron_train ({path})", entrypoint.value_span)


def roll_world(role: dict, role_name: str, path: str) -> Value:
    """The trained role's ranks: len(device_mapping)."""
    mapping = role.get("device_mapping")
    where = f"{role_name}.device_mapping in {path}"
    if isinstance(mapping, str) and len(mapping) < 4096 and mapping.lstrip().startswith("["):
        try:
            mapping = ast.literal_eval(mapping)  # a literal only: never evaluated as code
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return unresolved(f"{where} is not a list plint reads")
    if isinstance(mapping, list):
        return derived(len(mapping), f"{where}: {len(mapping)} GPUs")
    found = _RANGE.fullmatch(mapping) if isinstance(mapping, str) else None
    if found is None:
        return unresolved(f"{where} is {shown(mapping)}: not a list or list(range(...)) plint evaluates")
    start, stop, step = int(found[1]), int(found[2]), int(found[3] or 1)
    count = len(range(start, stop, step)) if step > 0 else 0
    return derived(count, f"{where}: {mapping} is {count} GPUs")


def roll_facts(config: dict, role_name: str, role: dict, path: str) -> dict[str, Value]:
    """The trained role's layout facts."""
    strategy = _section(role["strategy_args"], "strategy_config")
    where = f"{role_name}.strategy_args.strategy_config in {path}"
    out: dict[str, Value] = {}
    for key, fact in _SIZES.items():
        out[fact] = _int(strategy, key, where, f"not set: the checkpoint's own, 1 for a Hugging Face one ({_CODE})")
    out["parallel.vpp"] = _int(strategy, "virtual_pipeline_model_parallel_size", where, None)
    tp = out["parallel.tp"]
    sp = _flag(strategy, "sequence_parallel", where)
    if tp.value == 1 and sp.value:
        sp = derived(False, "sequence_parallel at tp 1: mcore_adapter turns it off (models/model_config.py)")
    out["parallel.sequence_parallel"] = sp
    out["parallel.distributed_optimizer"] = _flag(strategy, "use_distributed_optimizer", where)
    for name in ("overlap_grad_reduce", "overlap_param_gather"):  # off unless given (present only when on or unknown)
        setting = _flag(strategy, name, where)
        if setting.value is not False:
            out[name] = setting
    granularity = strategy.get("recompute_granularity")
    out["recompute.granularity"] = (
        derived(granularity, f"recompute_granularity: {granularity} in {where}")
        if granularity in ("full", "selective")
        else default(None, f"no recompute_granularity in {where}")
    )
    training = _section(role, "training_args")
    args_where = f"{role_name}.training_args in {path}"
    out["batch.micro"] = _int(training, "per_device_train_batch_size", args_where, "ROLL's default", 8)
    out["batch.grad_accum"] = _int(training, "gradient_accumulation_steps", args_where, "ROLL's default", 1)
    dtype = _section(role, "model_args").get("dtype")
    out["precision"] = (
        derived("bf16", f"{role_name}.model_args.dtype: bf16 in {path}")
        if dtype == "bf16"
        else unresolved(f"{role_name}.model_args.dtype is {shown(dtype)} in {path}: the checkpoint's dtype decides")
    )
    out.update(checkpoint_shape("ROLL"))
    out["model.seq_length"] = _sequence(config, path)  # what Megatron is given, whatever the checkpoint's context
    # mcore_adapter builds Megatron-Core's configs itself: Megatron-LM's validate_args, and its start-up checks, never run
    out["trainer.validate_args"] = derived(False, "ROLL trains through mcore_adapter, without Megatron-LM's parser")
    key = f"{role_name}.strategy_args.strategy_config."
    out["trainer.option_names"] = option_names(
        "ROLL",
        {flag: f"{key}{flag[2:].replace('-', '_')}: true" for flag in _MEGATRON_SWITCHES},
    )
    return out


def _section(parent: dict, key: str) -> dict:
    found = parent.get(key)
    return found if isinstance(found, dict) else {}


def _resolved(config: dict, value):
    """A value with a top-level `${name}` interpolation resolved, or None when it cannot be."""
    if isinstance(value, str):
        found = _INTERPOLATION.fullmatch(value.strip())
        return config.get(found[1]) if found and isinstance(config.get(found[1]), int) else None
    return value


def _sequence(config: dict, path: str) -> Value:
    explicit = _resolved(config, config.get("sequence_length"))
    if isinstance(explicit, int) and not isinstance(explicit, bool):
        return derived(explicit, f"sequence_length: {explicit} in {path}")
    prompt = _resolved(config, config.get("prompt_length", 1024))
    response = _resolved(config, config.get("response_length"))
    if isinstance(prompt, int) and isinstance(response, int):
        return derived(prompt + response, f"prompt_length {prompt} + response_length {response} in {path}")
    return unresolved(f"sequence_length, or prompt_length + response_length, is not a number plint reads in {path}")


def _int(section: dict, key: str, where: str, why: str | None, fallback: int = 1) -> Value:
    value = section.get(key)
    if value is None:
        return default(fallback, f"{key} {why}") if why else default(None)
    if isinstance(value, int) and not isinstance(value, bool):
        return derived(value, f"{key}: {value} in {where}")
    return unresolved(f"{key} is {shown(value)} in {where}: not a whole number")


def _flag(section: dict, key: str, where: str) -> Value:
    value = section.get(key)
    if value is None:
        return default(False, f"{key} not set in {where}: mcore_adapter's default, off ({_CODE})")
    if isinstance(value, bool):
        return derived(value, f"{key}: {value} in {where}")
    return unresolved(f"{key} is {shown(value)} in {where}: not a boolean")
