"""Megatron-SWIFT: ms-swift's `megatron sft|pt|rlhf` runs swift/cli/_megatron/<route>.py, which trains Megatron-Core
models under ms-swift's own argument dataclass, not Megatron-LM's parser (modelscope/ms-swift 3602360,
swift/megatron/arguments/megatron_args.py, MegatronArguments). Its fields carry Megatron's option names with
underscores (`--tensor_model_parallel_size 2`), its booleans take a value (`--sequence_parallel true`, HfArgumentParser),
and its defaults are its own: micro-batch 1, global batch 16, selective recompute (`none` is none), the distributed
optimizer on, every parallel size 1. The precision is --bf16/--fp16, else the one --torch_dtype gives
(ModelArguments._init_mixed_precision), else the model checkpoint's dtype; the model's shape is its checkpoint's
(converted when the run starts), so the launch does not state it.
"""

from __future__ import annotations

import re

from plint.reading.shell.model import Word
from plint.reading.sources.arglist import argument_gap, gap_fact, options_given
from plint.reading.sources.hf import bool_word
from plint.reading.sources.dotlist import option_names
from plint.reading.sources.model_shape import checkpoint_shape
from plint.reading.sources.swift_trainer import mixed_precision
from plint.values import Value, default, from_word, parse_int, unresolved

_ENTRY = re.compile(r"(?:^|/)swift/cli/_megatron/(?:sft|pt|rlhf)\.py")
_WHO = "Megatron-SWIFT"

# field -> (layout fact, its default in MegatronArguments; None: no default the launch can lean on)
_INT_FIELDS = {
    "tensor_model_parallel_size": ("parallel.tp", 1),
    "pipeline_model_parallel_size": ("parallel.pp", 1),
    "context_parallel_size": ("parallel.cp", 1),
    "expert_model_parallel_size": ("parallel.ep", 1),
    "expert_tensor_parallel_size": ("parallel.etp", 1),
    "virtual_pipeline_model_parallel_size": ("parallel.vpp", None),
    "micro_batch_size": ("batch.micro", 1),
    "global_batch_size": ("batch.global", 16),
    "recompute_num_layers": ("recompute.num_layers", None),
}
_BOOL_FIELDS = {
    "sequence_parallel": ("parallel.sequence_parallel", False),
    "use_distributed_optimizer": ("parallel.distributed_optimizer", True),
}
_TEXT_FIELDS = {
    "recompute_granularity": ("recompute.granularity", "selective"),
    "recompute_method": ("recompute.method", None),
}
# the overlaps (each off by default in MegatronArguments), as the Megatron reader keeps them: present only when on
# or unknown, since rules test for their absence
_OVERLAPS = {
    "overlap_grad_reduce": "overlap_grad_reduce",
    "overlap_param_gather": "overlap_param_gather",
    "tp_comm_overlap": "tp_comm_overlap",
    "moe_shared_expert_overlap": "moe_shared_expert_overlap",
}


def is_megatron_swift(entrypoint: str | None) -> bool:
    return entrypoint is not None and _ENTRY.search(entrypoint) is not None


def megatron_swift_trainer(entrypoint: Word) -> Value:
    return Value(
        "megatron",
        entrypoint.value_span,
        "derived",
        f"{_WHO} (ms-swift's `megatron` command): Megatron-Core under ms-swift's MegatronArguments",
    )


def megatron_swift_facts(words: list[Word]) -> dict[str, Value]:
    """Layout facts from the arguments of swift/cli/_megatron/<route>.py, with MegatronArguments' defaults where the
    whole argument list is known."""
    given, unknown = options_given(words, lambda name: name[2:].replace("-", "_"))  # by MegatronArguments field
    gap = gap_fact(argument_gap(unknown))
    out: dict[str, Value] = {}
    for table, convert in ((_INT_FIELDS, _int), (_BOOL_FIELDS, _bool), (_TEXT_FIELDS, _text)):
        for field_name, (key, fallback) in table.items():
            found = _given(given, field_name, convert)
            if found is None:
                found = gap if gap is not None else _default(field_name, fallback)
            if found is not None:
                out[key] = found
    _no_recompute(out)
    for field_name, key in _OVERLAPS.items():
        on = _given(given, field_name, _bool)
        if on is not None and on.value is not False:
            out[key] = on
        elif on is None and gap is not None:
            out[key] = gap
    out["precision"] = _precision(given, gap)
    out.update(checkpoint_shape(_WHO))
    flags = ("--sequence-parallel", "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather")
    out["trainer.option_names"] = option_names(_WHO, {f: f"--{f[2:].replace('-', '_')} true" for f in flags})
    if gap is not None:
        out["arguments.incomplete"] = gap
    return out


def _given(given: dict[str, tuple[Word, Word | None]], name: str, convert) -> Value | None:
    if name not in given:
        return None
    option, value = given[name]
    return convert(value, f"--{name}", option)


def _int(value: Word | None, option: str, _: Word) -> Value:
    if value is None:
        return unresolved(f"{option} without a value")
    return from_word(value, parse_int, option)


def _bool(value: Word | None, option: str, word: Word) -> Value:
    if value is None:  # HfArgumentParser: a bare boolean field is true
        return Value(True, word.value_span, word.origin, option)
    state = bool_word(value)
    if state is None:
        return Value(None, value.value_span, "unresolved", f"{option} {value.display()}: not a boolean plint can read")
    return Value(state, value.value_span, value.origin, f"{option} {value.text}")


def _text(value: Word | None, option: str, _: Word) -> Value:
    if value is None:
        return unresolved(f"{option} without a value")
    return from_word(value, str, option)


def _default(name: str, fallback) -> Value | None:
    if fallback is None:
        return None
    return default(fallback, f"--{name} not given: {_WHO}'s default {str(fallback).lower()}")


def _no_recompute(out: dict[str, Value]) -> None:
    """`--recompute_granularity none` is no recompute (MegatronArguments.__post_init__)."""
    granularity = out.get("recompute.granularity")
    if granularity is not None and granularity.value == "none":
        out["recompute.granularity"] = Value(None, granularity.span, granularity.origin, f"{granularity.note}: none")


def _precision(given: dict[str, tuple[Word, Word | None]], gap: Value | None) -> Value:
    for name in ("bf16", "fp16"):
        if name in given:
            option, value = given[name]
            state = _bool(value, f"--{name}", option)
            if state.value is True:
                return Value(name, state.span, state.origin, state.note)
    if "torch_dtype" in given:
        option, value = given["torch_dtype"]
        dtype = _text(value, "--torch_dtype", option)
        amp = mixed_precision(str(dtype.value)) if dtype.known else None
        if amp is not None:
            return Value(amp, dtype.span, dtype.origin, f"--torch_dtype {dtype.value}: {_WHO} trains in {amp}")
        return dtype if not dtype.known else unresolved(f"--torch_dtype {dtype.value}: not a dtype plint knows")
    if gap is not None:
        return gap
    return unresolved(f"no --bf16, --fp16 or --torch_dtype: {_WHO} trains in the model checkpoint's dtype")
