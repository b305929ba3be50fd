"""What ms-swift's trainer (`swift sft|pt|rlhf`, run as swift/cli/<route>.py) decides beyond the HF Trainer's
arguments, from modelscope/ms-swift 3602360:

- its defaults (TrainArgumentsMixin, swift/trainers/arguments.py): per_device_train_batch_size 1,
  gradient_checkpointing True, and without --gradient_accumulation_steps max(1, ceil(16 / micro / world))
  micro-batches a step;
- `--deepspeed zero0|zero1|zero2|zero3|zero2_offload|zero3_offload` names a config ms-swift ships
  (SftArguments._init_deepspeed maps the name to swift/config/<name>.json): its ZeRO stage and CPU offload; its batch
  and precision keys are "auto", which the Trainer fills from the arguments;
- `--torch_dtype` sets the mixed precision where neither --bf16 nor --fp16 is given
  (ModelArguments._init_mixed_precision: bfloat16 -> bf16, float16 and float32 -> fp16);
- `--sequence_parallel_size N` splits each sequence over N ranks (Ulysses, with ring attention beyond the heads):
  dp = world / N (swift/sequence_parallel/sequence_parallel.py, dp_world_size).
"""

from __future__ import annotations

import re

from plint.values import Value, default

# the routes that train (swift/cli/main.py runs infer under torchrun too, but it trains nothing)
_ENTRY = re.compile(r"(?:^|/)swift/cli/(?:sft|pt|rlhf)\.py")
_WHERE = "ms-swift"

# swift/config/<name>.json: (ZeRO stage, offload_optimizer device, offload_param device)
PACKAGED_DEEPSPEED = {
    "zero0": (0, None, None),
    "zero1": (1, None, None),
    "zero2": (2, None, None),
    "zero3": (3, None, None),
    "zero2_offload": (2, "cpu", None),
    "zero3_offload": (3, "cpu", "cpu"),
}
# ModelArguments._init_mixed_precision: the AMP dtype each --torch_dtype gives
_MIXED_PRECISION = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp16", "bf16": "bf16", "fp16": "fp16"}
# the samples a step takes where no accumulation is given: accumulation = max(1, ceil(16 / micro / world))
DEFAULT_STEP_SAMPLES = 16


def mixed_precision(dtype: str) -> str | None:
    """The AMP precision ms-swift trains in for a --torch_dtype (its HF and Megatron backends alike), or None."""
    return _MIXED_PRECISION.get(dtype.removeprefix("torch."))


def is_swift(entrypoint: str | None) -> bool:
    return entrypoint is not None and _ENTRY.search(entrypoint) is not None


def swift_defaults() -> dict[str, Value]:
    """The HF-Trainer fields whose ms-swift default differs from transformers' (they apply when not given)."""
    return {
        "batch.micro": default(1, f"--per_device_train_batch_size not given: {_WHERE}'s default is 1"),
        "switch.gradient_checkpointing": default(
            True, f"--gradient_checkpointing not given: {_WHERE}'s default is true"
        ),
    }


def swift_facts(facts: dict[str, Value]) -> None:
    """Add what ms-swift makes of the HF-Trainer facts already read (plint.reading.sources.hf.hf_facts)."""
    _packaged_deepspeed(facts)
    _precision_from_dtype(facts)
    split = facts.get("trainer.sequence_parallel_size")
    if split is not None:
        note = f"{split.note or '--sequence_parallel_size'}: {_WHERE} splits each sequence over these ranks"
        facts["trainer.sequence_split"] = Value(split.value, split.span, split.origin, note)
    if "batch.grad_accum" not in facts and facts.get("arguments.incomplete") is None:
        facts["trainer.step_samples"] = default(
            DEFAULT_STEP_SAMPLES,
            f"--gradient_accumulation_steps not given: {_WHERE} runs max(1, ceil(16 / micro / world)) micro-batches",
        )


def _packaged_deepspeed(facts: dict[str, Value]) -> None:
    path = facts.get("deepspeed.config_path")
    if path is None or path.value not in PACKAGED_DEEPSPEED:
        return
    stage, optimizer, params = PACKAGED_DEEPSPEED[path.value]
    shipped = f"--deepspeed {path.value}: {_WHERE}'s packaged swift/config/{path.value}.json"
    del facts["deepspeed.config_path"]
    facts.pop("deepspeed.config_word", None)
    facts["parallel.zero_stage"] = Value(stage, path.span, "derived", f"{shipped} (ZeRO stage {stage})")
    for part, device in (("offload_optimizer", optimizer), ("offload_param", params)):
        if device is not None:
            facts[f"offload.{part}"] = Value(device, path.span, "derived", f"{shipped}: {part} on the {device}")


def _precision_from_dtype(facts: dict[str, Value]) -> None:
    dtype = facts.get("trainer.torch_dtype")
    if "precision" in facts or dtype is None:
        return
    if not dtype.known:
        facts["precision"] = dtype
        return
    amp = mixed_precision(str(dtype.value))
    if amp is not None:
        facts["precision"] = Value(
            amp, dtype.span, dtype.origin, f"--torch_dtype {dtype.value}: {_WHERE} trains in {amp}"
        )
