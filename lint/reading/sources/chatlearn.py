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
from plint.reading.sources.arglist import option_word, passes_script_arguments
from plint.reading.sources.dotlist import MEGATRON_CORE_SIZES, load_mapping, scalar, shown
from plint.reading.sources.model_shape import checkpoint_shape
from plint.source import SourceFile
from plint.values import Value, derived, unresolved

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


class Settings:
    """The template's values under the overrides; `get` gives a Value for a dotted key."""

    def __init__(self, template: dict, source: str, words: list[Word]):
        self.template, self.source = template, source
        self.overrides: dict[str, Word] = {}
        self.unknown: Word | None = None
        for word in words:
            written = word.known_prefix()
            key, eq, _ = written.partition("=")
            if eq and not key.startswith("-") and "." in key:
                self.overrides[key] = word.after(len(key) + 1)
            elif word.text is None and not passes_script_arguments(word) and self.unknown is None:
                self.unknown = word

    def get(self, key: str, fallback=None) -> Value:
        """The override, else the template's value, else `fallback` (ChatLearn's own default where given)."""
        word = self.overrides.get(key)
        if word is not None:
            if word.text is None:
                return Value(None, word.value_span, "unresolved", f"{key}: its value is not known statically")
            return Value(scalar(word.text), word.value_span, word.origin, f"{key}={word.text}")
        if self.unknown is not None:
            return unresolved(f"`{self.unknown.display()}` among the overrides could set {key}", self.unknown.site)
        found = self.template
        for part in key.split("."):
            if not isinstance(found, dict) or part not in found:
                if fallback is not None:
                    return Value(fallback, None, "default", f"{key} is not in {self.source}: ChatLearn's default")
                return unresolved(f"{key} is not in {self.source}")
            found = found[part]
        if isinstance(found, str) and "${" in found:
            return unresolved(f"{key} is {found} in {self.source}, an interpolation plint does not resolve")
        return derived(found, f"{key}: {shown(found)} in {self.source}")


def read_template(source: SourceFile) -> dict | None:
    return load_mapping(source.text)


def megatron_backend(settings: Settings) -> bool:
    return settings.get(_RUNTIME + "train_backend").value == "megatron"


def chatlearn_facts(settings: Settings) -> dict[str, Value]:
    """The policy trainer's layout facts."""
    out: dict[str, Value] = {}
    for name, fact in _SIZES.items():
        value = settings.get(_TRAINER + name)
        if value.value is not None or value.origin == "unresolved":
            out[fact] = _int(value)
    for name, fact in _SWITCHES.items():
        out[fact] = _bool(settings.get(_TRAINER + name))
    for name, fact in _TEXTS.items():
        out[fact] = settings.get(_TRAINER + name)
    out["precision"] = _precision(settings)
    out["batch.global"] = _int(settings.get(_RUNTIME + "train_global_batch_size"))
    packing = _bool(settings.get(_TRAINER + "packing", False))
    out["batch.micro"] = (
        unresolved("models.policy_trainer.packing: micro-batches are packed by tokens", packing.span)
        if packing.value is not False
        else _int(settings.get(_RUNTIME + "train_micro_batch_size"))
    )
    out.update(checkpoint_shape("ChatLearn"))
    return out


def chatlearn_world(settings: Settings) -> Value:
    return _int(settings.get(_TRAINER + "num_gpu"))


def _precision(settings: Settings) -> Value:
    for name in ("bf16", "fp16"):
        value = _bool(settings.get(_TRAINER + name))
        if value.value is True:
            return Value(name, value.span, value.origin, value.note)
        if value.value is None and value.origin == "unresolved":
            return value
    return unresolved("neither models.policy_trainer.bf16 nor fp16: the checkpoint's dtype decides")


def _int(value: Value) -> Value:
    if value.value is None or (isinstance(value.value, int) and not isinstance(value.value, bool)):
        return value
    return Value(None, value.span, "unresolved", f"{value.note}: not a whole number")


def _bool(value: Value) -> Value:
    if value.value is None or isinstance(value.value, bool):
        return value
    return Value(None, value.span, "unresolved", f"{value.note}: not a boolean")
