"""ChatLearn's trainer with a Megatron policy trainer: `python chatlearn/entrypoint.py ALGORITHM --config-file
template/grpo_megatron.yaml KEY=VALUE ...` (alibaba/ChatLearn b7af31a). The YAML template, read from the tree, gives
every setting; each `KEY=VALUE` word overrides one (a dotted path into it). The layout is the policy trainer's:
models.policy_trainer's Megatron sizes, sequence_parallel, use_distributed_optimizer, recompute_granularity and
bf16/fp16, and runtime_args' train_global_batch_size and train_micro_batch_size (a micro-batch of samples, unless
models.policy_trainer.packing, off by default in chatlearn/configs/base/base_model_config.py, packs them by
tokens). Its GPUs are models.policy_trainer.num_gpu; the model's shape
is the checkpoint's. A value the template writes as an interpolation (`${...}`), or that an unknown word could
override, is unknown.
"""

from __future__ import annotations

import re

from plint.reading.shell.model import Word
from plint.reading.sources.arglist import option_word
from plint.reading.sources.dotlist import MEGATRON_CORE_SIZES, ConfigSettings
from plint.reading.sources.model_shape import checkpoint_shape
from plint.values import Value, unresolved

_ENTRY = re.compile(r"(?:^|/)chatlearn/entrypoint\.py")
_TRAINER = "models.policy_trainer."
_RUNTIME = "runtime_args."
# override key -> layout fact
_SIZES = {
    **MEGATRON_CORE_SIZES,
    "virtual_pipeline_model_parallel_size": "parallel.vpp",
    "recompute_num_layers": "recompute.num_layers",
}
_SWITCHES = {
    "sequence_parallel": "parallel.sequence_parallel",
    "use_distributed_optimizer": "parallel.distributed_optimizer",
}
_TEXTS = {"recompute_granularity": "recompute.granularity", "recompute_method": "recompute.method"}


def template_of(words: list[Word]) -> Word | None:
    """The word naming the template after --config-file, or None."""
    return option_word(words, "--config-file")


def is_chatlearn(entrypoint: str | None, words: list[Word]) -> bool:
    return entrypoint is not None and _ENTRY.search(entrypoint) is not None and template_of(words) is not None


def megatron_backend(settings: ConfigSettings) -> bool:
    return settings.get(_RUNTIME + "train_backend").value == "megatron"


def chatlearn_facts(settings: ConfigSettings) -> dict[str, Value]:
    """The policy trainer's layout facts."""
    out: dict[str, Value] = {}
    for name, fact in _SIZES.items():
        value = settings.number(_TRAINER + name)
        if value.value is not None or value.origin == "unresolved":
            out[fact] = value
    for name, fact in _SWITCHES.items():
        out[fact] = settings.flag(_TRAINER + name)
    for name, fact in _TEXTS.items():
        out[fact] = settings.get(_TRAINER + name)
    out["precision"] = _precision(settings)
    out["batch.global"] = settings.number(_RUNTIME + "train_global_batch_size")
    packing = settings.flag(_TRAINER + "packing", False)
    out["batch.micro"] = (
        unresolved("models.policy_trainer.packing: micro-batches are packed by tokens", packing.span)
        if packing.value is not False
        else settings.number(_RUNTIME + "train_micro_batch_size")
    )
    out.update(checkpoint_shape("ChatLearn"))
    return out


def chatlearn_world(settings: ConfigSettings) -> Value:
    return settings.number(_TRAINER + "num_gpu")


def _precision(settings: ConfigSettings) -> Value:
    for name in ("bf16", "fp16"):
        value = settings.flag(_TRAINER + name)
        if value.value is True:
            return Value(name, value.span, value.origin, value.note)
        if value.value is None and value.origin == "unresolved":
            return value
    return unresolved("neither models.policy_trainer.bf16 nor fp16: the checkpoint's dtype decides")
