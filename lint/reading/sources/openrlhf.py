"""What OpenRLHF's trainers (openrlhf/cli/train_*.py: sft, dpo, rm, kto, prm, kd, ppo_ray, ...) make of their own
arguments, read from OpenRLHF/OpenRLHF v0.3.7 to 3c3be62 (2026-08). They train with DeepSpeed
(openrlhf/utils/deepspeed/deepspeed.py, DeepspeedStrategy), whose config they build from these arguments
(openrlhf/utils/deepspeed/deepspeed_utils.py, get_train_ds_config). From v0.10.4 the arguments are dotted
(`--ds.zero_stage`); before, underscored (`--zero_stage`):

- the ZeRO stage: --zero_stage / --ds.zero_stage, 2 when not given (every release, every trainer);
- the micro-batch: --micro_train_batch_size / --train.micro_batch_size; its default differs by trainer and release
  (8, 4 or 1), so it is read only when given;
- the global batch: --train_batch_size / --train.batch_size, 128 when not given (every release); the accumulation
  is train_batch_size x ring_attn_size x tensor_parallel_size // micro // world (DeepspeedStrategy.__init__),
  which is global // (micro x dp);
- --ring_attn_size / --ds.ring_attn_size: ring attention over that many ranks splits each sequence, and
  --ds_tensor_parallel_size / --ds.tensor_parallel_size: DeepSpeed AutoTP; dp = world / ring / tp (the
  strategy's ("dp", "sp", "tp") device mesh), 1 each when not given;
- the precision: the --bf16 switch (before v0.10.4; without it the config enables neither bf16 nor fp16, and how
  the model is loaded then is the model's own dtype, so it is left unknown), from v0.10.4 --ds.param_dtype bf16|fp16,
  bf16 when not given;
- gradient checkpointing: --gradient_checkpointing (read with the HF Trainer's arguments), from v0.10.4
  --model.gradient_checkpointing_enable (--actor. in ppo_ray): transformers' checkpointing of each layer.
"""

from __future__ import annotations

import re

from plint.reading.shell.model import Word
from plint.reading.sources.arglist import options_given
from plint.values import Value, default, from_word, parse_int

_MODULE = re.compile(r"openrlhf\.cli\.train_\w+")
_PATH = re.compile(r"(?:^|/)openrlhf/cli/train_\w+\.py")
_SCRIPT = re.compile(r"(?:^|/)cli/train_\w+\.py")
_WHERE = "OpenRLHF"
_SOURCE = "openrlhf/utils/deepspeed/deepspeed.py, DeepspeedStrategy"

# each fact's options, the underscored spelling first
_ZERO_STAGE = ("--zero_stage", "--ds.zero_stage")
_MICRO = ("--micro_train_batch_size", "--train.micro_batch_size")
_GLOBAL = ("--train_batch_size", "--train.batch_size")
_RING = ("--ring_attn_size", "--ds.ring_attn_size")
_AUTOTP = ("--ds_tensor_parallel_size", "--ds.tensor_parallel_size")
_PARAM_DTYPE = "--ds.param_dtype"
_CHECKPOINTING = ("--model.gradient_checkpointing_enable", "--actor.gradient_checkpointing_enable")
DEFAULT_ZERO_STAGE = 2
DEFAULT_GLOBAL_BATCH = 128


def is_openrlhf(program: str | None, is_module: bool, script_path: str | None, imports: frozenset[str]) -> bool:
    """Whether the launch runs one of OpenRLHF's trainers: `-m openrlhf.cli.train_sft`, openrlhf/cli/train_sft.py, or
    a cli/train_*.py of a copy of OpenRLHF in the tree (it imports openrlhf)."""
    if program is None:
        return False
    if is_module:
        return _MODULE.fullmatch(program) is not None
    if _PATH.search(program) or (script_path is not None and _PATH.search(script_path)):
        return True
    return _SCRIPT.search(program) is not None and "openrlhf" in imports


def openrlhf_trainer(entrypoint: Word | None) -> Value:
    name = entrypoint.display() if entrypoint is not None else "openrlhf"
    return Value(
        "deepspeed",
        entrypoint.value_span if entrypoint is not None else None,
        "derived",
        f"{name}: OpenRLHF's trainer, which trains with DeepSpeed ({_SOURCE})",
    )


def openrlhf_facts(facts: dict[str, Value], words: list[Word]) -> None:
    """Add what OpenRLHF makes of its arguments to the HF-Trainer facts already read from them
    (plint.reading.sources.hf.hf_facts: --bf16, --gradient_checkpointing)."""
    given, _ = options_given(words)
    complete = facts.get("arguments.incomplete") is None  # a default holds only where no unknown word may set it
    facts.pop("deepspeed.script_zero_stage", None)
    stage = _int_fact(given, _ZERO_STAGE)
    if stage is None and complete:
        stage = default(DEFAULT_ZERO_STAGE, f"--zero_stage not given: {_WHERE}'s default is {DEFAULT_ZERO_STAGE}")
    if stage is not None:
        facts["parallel.zero_stage"] = stage
    micro = _int_fact(given, _MICRO)
    if micro is not None:
        facts["batch.micro"] = micro
    glob = _int_fact(given, _GLOBAL)
    if glob is None and complete:
        glob = default(
            DEFAULT_GLOBAL_BATCH, f"--train_batch_size not given: {_WHERE}'s default is {DEFAULT_GLOBAL_BATCH}"
        )
    if glob is not None:
        facts["trainer.global_batch"] = Value(
            glob.value,
            glob.span,
            glob.origin,
            f"{glob.note}; {_WHERE} accumulates global // (micro x dp) micro-batches ({_SOURCE})",
        )
    for key, names, what in (
        ("trainer.sequence_split", _RING, "ring attention splits each sequence over these ranks"),
        ("trainer.tensor_split", _AUTOTP, "DeepSpeed AutoTP shards the model over these ranks"),
    ):
        size = _int_fact(given, names)
        if size is not None:
            facts[key] = Value(size.value, size.span, size.origin, f"{size.note}: {what} ({_SOURCE})")
    _precision(facts, given, complete)
    _checkpointing(facts, given)


def _int_fact(given: dict[str, tuple[Word, Word | None]], names: tuple[str, ...]) -> Value | None:
    """The integer the last of the options gives (the dotted spelling wins where both are written), or None."""
    for name in reversed(names):
        if name in given:
            _, value = given[name]
            if value is None:
                return Value(None, given[name][0].value_span, "derived", f"{name} without a value")
            read = from_word(value, parse_int, name)
            return read if read.note else Value(read.value, read.span, read.origin, name)
    return None


def _precision(facts: dict[str, Value], given: dict[str, tuple[Word, Word | None]], complete: bool) -> None:
    if _PARAM_DTYPE in given:
        _, value = given[_PARAM_DTYPE]
        if value is not None:
            dtype = from_word(value, str, _PARAM_DTYPE)
            facts["precision"] = (
                dtype
                if not dtype.known or dtype.value in ("bf16", "fp16")
                else Value(
                    None,
                    dtype.span,
                    "derived",
                    f"{_PARAM_DTYPE} {dtype.value}: not a dtype {_WHERE} accepts (bf16, fp16)",
                )
            )
        return
    dotted = any(name.startswith(("--ds.", "--train.", "--model.", "--actor.")) for name in given)
    if dotted and "precision" not in facts and complete:  # v0.10.4 on: --ds.param_dtype, bf16 by default
        facts["precision"] = default("bf16", f"{_PARAM_DTYPE} not given: {_WHERE}'s default is bf16")


def _checkpointing(facts: dict[str, Value], given: dict[str, tuple[Word, Word | None]]) -> None:
    for name in _CHECKPOINTING:
        if name in given:
            w = given[name][0]
            note = f"{name}: transformers checkpoints each layer"
            facts["recompute.granularity"] = Value("full", w.value_span, w.origin, f"{note}: every layer recomputed")
            facts["recompute.method"] = Value("uniform", w.value_span, "derived", note)
            facts["recompute.num_layers"] = Value(1, w.value_span, "derived", f"{note}: one layer per checkpoint")
