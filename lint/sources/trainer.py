"""Which trainer a launch runs: Megatron-LM, Megatron-DeepSpeed, plain DeepSpeed, or unknown."""

from __future__ import annotations

import posixpath

from plint.shell.model import Word
from plint.values import Value

MEGATRON_ENTRYPOINTS = {"pretrain_gpt.py", "pretrain_bert.py", "pretrain_t5.py", "pretrain_mamba.py",
                        "pretrain_vlm.py", "pretrain_retro.py", "pretrain_gpt_core.py", "pretrain_ict.py",
                        "pretrain_vision_classify.py", "pretrain_llama.py", "pretrain_mixtral.py"}


def _is_megatron(entrypoint: Word | None) -> bool:
    if entrypoint is None:
        return False
    text = entrypoint.display()
    name = posixpath.basename(text)
    return name in MEGATRON_ENTRYPOINTS or (name.startswith("pretrain_") and name.endswith(".py")) \
        or "megatron" in text.lower() and name.endswith(".py") or text.startswith("megatron.")


def detect_trainer(entrypoint: Word | None, launcher: str | None, args: list[Word]) -> Value:
    texts = [w.text or "" for w in args]
    flags = {t.split("=", 1)[0] for t in texts}
    site = entrypoint.value_span if entrypoint is not None else None
    megatron = _is_megatron(entrypoint) or "--tensor-model-parallel-size" in flags and "--num-layers" in flags
    uses_deepspeed = bool(flags & {"--deepspeed", "--deepspeed_config", "--deepscale", "--deepscale_config"})
    if megatron and (uses_deepspeed or launcher == "deepspeed"):
        why = "--deepspeed on a Megatron entrypoint" if uses_deepspeed else "the deepspeed launcher runs a Megatron entrypoint"
        return Value("megatron-deepspeed", site, "derived", why)
    if megatron:
        return Value("megatron", site, "derived", "a Megatron-LM entrypoint")
    if launcher == "deepspeed" or uses_deepspeed:
        return Value("deepspeed", site, "derived",
                     "the deepspeed launcher" if launcher == "deepspeed" else "--deepspeed flags")
    return Value("unknown", site, "derived", "neither a Megatron entrypoint nor DeepSpeed flags")
