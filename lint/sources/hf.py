"""HF-Trainer style arguments of plain DeepSpeed scripts: per-device batch, accumulation, precision,
and the DeepSpeed config path (the HF Trainer's `--deepspeed` takes a path, unlike Megatron-DeepSpeed's)."""

from __future__ import annotations

from plint.shell.model import Word
from plint.values import Value, from_word, parse_int

_TRUE = {"true", "1", "yes", "True"}
_INT_FLAGS = {"--per_device_train_batch_size": "batch.micro", "--per-device-train-batch-size": "batch.micro",
              "--train_micro_batch_size_per_gpu": "batch.micro", "--micro_batch_size": "batch.micro",
              "--gradient_accumulation_steps": "batch.grad_accum",
              "--gradient-accumulation-steps": "batch.grad_accum",
              "--max_seq_length": "model.seq_length", "--model_max_length": "model.seq_length",
              "--seq_length": "model.seq_length", "--block_size": "model.seq_length"}
_PATH_FLAGS = ("--deepspeed", "--deepspeed_config", "--deepspeed-config", "--ds_config")


def hf_facts(words: list[Word]) -> dict[str, Value]:
    out: dict[str, Value] = {}
    i = 0
    while i < len(words):
        w = words[i]
        t = w.text
        if t is None or not t.startswith("--"):
            i += 1
            continue
        name, eq, _ = t.partition("=")
        value = w.slice(len(name) + 1) if eq else (words[i + 1] if i + 1 < len(words) else None)
        takes_next = not eq and value is not None and not (value.text or "").startswith("--")
        if name in _INT_FLAGS and value is not None:
            out[_INT_FLAGS[name]] = from_word(value, parse_int, name)
        elif name in _PATH_FLAGS and value is not None and takes_next or name in _PATH_FLAGS and eq:
            out["deepspeed.config_path"] = from_word(value, str, name)
            out["deepspeed.config_word"] = Value(value.display(), value.value_span)
        elif name in ("--bf16", "--fp16"):
            on = True
            if (eq or takes_next) and value is not None and value.text is not None:
                on = value.text in _TRUE
                if value.text not in _TRUE and value.text not in ("false", "False", "0", "no"):
                    takes_next = False
                    on = True
            if on:
                out["precision"] = Value(name[2:], w.value_span, w.origin)
        i += 1 + (1 if takes_next and not eq and name in (*_INT_FLAGS, *_PATH_FLAGS, "--bf16", "--fp16") else 0)
    return out
