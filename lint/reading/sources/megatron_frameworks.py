"""Frameworks that parse a launch with Megatron-LM's own parser and then set some arguments themselves, whatever the
launch says. Which one drives the run is read from the in-tree module through which its entry script imports
megatron (plint.reading.sources.entry_script.megatron_through).

- slime (THUDM/slime 624b824, slime/backends/megatron_utils/arguments.py, _set_default_megatron_args): the
  distributed optimizer always, and bf16 unless --fp16; with --num-steps-per-rollout the global batch is
  --rollout-batch-size x --n-samples-per-prompt (default 1) // --num-steps-per-rollout (slime/utils/arguments.py,
  slime_validate_args).
- miles, slime's fork (radixark/miles 31f1ca9, miles/backends/megatron_utils/arguments.py, set_default_megatron_args;
  miles/utils/arguments.py): the same, except that the distributed optimizer is on only for Adam (no --optimizer, or
  adam) and off with --multi-lora-n-adapters.
"""

from __future__ import annotations

import re

from plint.values import Value, unresolved

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.reading.sources.megatron_args import TrainerArgs

_FRAMEWORKS = {
    "slime": (re.compile(r"(?:^|/)slime/"), "slime/backends/megatron_utils/arguments.py, _set_default_megatron_args"),
    "miles": (re.compile(r"(?:^|/)miles/"), "miles/backends/megatron_utils/arguments.py, set_default_megatron_args"),
}


def framework_of(megatron_module: str | None) -> str | None:
    """The framework whose module imports megatron for the entry script, when plint knows what it sets."""
    if megatron_module is None:
        return None
    return next((name for name, (path, _) in _FRAMEWORKS.items() if path.search(megatron_module)), None)


def apply_framework(framework: str | None, facts: dict[str, Value], args: TrainerArgs) -> None:
    """Set what the framework sets over the arguments' facts."""
    if framework not in _FRAMEWORKS:
        return
    source = _FRAMEWORKS[framework][1]
    steps = args.get("--num-steps-per-rollout")
    if steps is not None:
        facts["batch.global"] = _slime_global_batch(args, steps.value)
    facts["parallel.distributed_optimizer"] = _distributed_optimizer(framework, source, args)
    precision = facts.get("precision")
    if precision is not None and precision.value == "fp32":  # Megatron's own default: no precision flag given
        facts["precision"] = Value("bf16", None, "derived", f"{framework} trains in bf16 unless --fp16 ({source})")


def _distributed_optimizer(framework: str, source: str, args: TrainerArgs) -> Value:
    if framework == "slime":
        return Value(True, None, "derived", f"slime turns the distributed optimizer on itself ({source})")
    optimizer = args.get("--optimizer")
    adapters = args.get("--multi-lora-n-adapters")
    name = optimizer.value.text if optimizer is not None and optimizer.value is not None else "adam"
    lora = _int(adapters.value) if adapters is not None else 0
    if name is None or lora is None:
        return unresolved(f"{framework} turns the distributed optimizer on for Adam only ({source})")
    on = name.lower() == "adam" and lora == 0
    why = "Adam" if on else f"--optimizer {name}" if name.lower() != "adam" else "--multi-lora-n-adapters"
    return Value(
        on, None, "derived", f"{framework} turns the distributed optimizer {'on' if on else 'off'} for {why} ({source})"
    )


def _slime_global_batch(args: TrainerArgs, steps_word) -> Value:
    rollout, samples = args.get("--rollout-batch-size"), args.get("--n-samples-per-prompt")
    steps = _int(steps_word)
    prompts = _int(rollout.value) if rollout is not None else None
    per_prompt = _int(samples.value) if samples is not None else 1
    where = steps_word.value_span if steps_word is not None else None
    if not steps or not prompts or not per_prompt:
        return unresolved(
            "slime's global batch is --rollout-batch-size x --n-samples-per-prompt // --num-steps-per-rollout, "
            "and one of them is not known",
            where,
        )
    return Value(
        prompts * per_prompt // steps,
        where,
        "derived",
        f"{prompts} x {per_prompt} // {steps} (slime: --rollout-batch-size x --n-samples-per-prompt // "
        "--num-steps-per-rollout)",
    )


def _int(word) -> int | None:
    text = word.text if word is not None else None
    return int(text) if text is not None and text.isdigit() and len(text) < 10 else None
