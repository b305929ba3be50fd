"""HF-Trainer style arguments of plain DeepSpeed scripts: per-device batch, accumulation, precision,
sequence length and the DeepSpeed config path.

There is no parser table to check against (each script declares its own), so this is an
argparse-like scan for the names the HF Trainer (TrainingArguments via HfArgumentParser) and
DeepSpeed's own `add_config_arguments` use. HfArgumentParser accepts each field as `--name` and
`--name-with-dashes`; its bool fields take an optional value (`--bf16`, `--bf16 True`,
`--bf16=false`). The HF Trainer's `--deepspeed` takes a config path, while DeepSpeed's (and
Megatron-DeepSpeed's) `--deepspeed` is a plain switch next to `--deepspeed_config PATH`.
"""

from __future__ import annotations

from plint.reading.shell.model import Word
from plint.reading.sources.arglist import ArgumentGap, argument_gap, gap_fact, unknown_value
from plint.values import Value, from_word, parse_int

# HfArgumentParser's string_to_bool (case-insensitive)
_TRUE = frozenset({"yes", "true", "t", "y", "1"})
_FALSE = frozenset({"no", "false", "f", "n", "0"})

_INT_FIELDS = {
    "per_device_train_batch_size": "batch.micro",
    "gradient_accumulation_steps": "batch.grad_accum",
    "max_seq_length": "model.seq_length",  # TRL's SFTConfig and many scripts
    "model_max_length": "model.seq_length",  # the common fine-tuning scripts' ModelArguments
    "block_size": "model.seq_length",  # the HF examples' run_clm.py
    "cutoff_len": "model.seq_length",  # LLaMA-Factory's DataArguments
    "max_seq_len": "model.seq_length",  # DeepSpeed-Chat's main.py
    # ChatGLM-6B's ptuning/main.py: a prompt and a response, padded to their sum (seq2seq_length)
    "max_source_length": "seq2seq.source_length",
    "max_target_length": "seq2seq.target_length",
    "per_gpu_train_batch_size": "batch.micro",  # TrainingArguments' deprecated spelling
    "max_steps": "train_iters",
    "warmup_steps": "train_warmup_steps",  # TrainingArguments.warmup_steps
    # LoRA rank: PEFT's LoraConfig.r as the common scripts expose it (LLaVA, FastChat, TRL's
    # ModelConfig --lora_r; LLaMA-Factory --lora_rank; DeepSpeed-Chat --lora_dim, LoRA when > 0)
    "lora_r": "finetune.lora_rank",
    "lora_rank": "finetune.lora_rank",
    "lora_dim": "finetune.lora_dim",
    # quantized frozen weights: LLaVA's --bits 4|8 (16 = none), LLaMA-Factory's --quantization_bit
    "bits": "finetune.bits",
    "quantization_bit": "finetune.bits",
    # DeepSpeed-Chat's --zero_stage: the stage of the config its script builds (get_train_ds_config)
    "zero_stage": "deepspeed.script_zero_stage",
    # ms-swift's and LLaMA-Factory forks' sequence split; what it means is the trainer's (plint.reading.sources.swift_trainer)
    "sequence_parallel_size": "trainer.sequence_parallel_size",
}
# the fields whose default the entry script declares stand when the launch does not give them
SCRIPT_DEFAULT_FIELDS = {
    name: key for name, key in _INT_FIELDS.items() if key in ("batch.micro", "batch.grad_accum", "model.seq_length")
}
_PATH_FIELDS = ("deepspeed_config", "deepscale_config")  # DeepSpeed's add_config_arguments
_BOOL_FIELDS = ("bf16", "fp16")
# switches of TrainingArguments and of the common fine-tuning scripts' own dataclasses, each a bool field
# (HfArgumentParser: `--name`, `--name True`): TrainingArguments.gradient_checkpointing; LLaVA's --lora_enable;
# TRL's ModelConfig --use_peft, --load_in_4bit, --load_in_8bit; FastChat's and others' --use_lora;
# DeepSpeed-Chat's --gradient_checkpointing and --offload (store_true); InternVL's ModelArguments.grad_checkpoint
# (internvl_chat/internvl/train/internvl_chat_finetune.py: model.language_model._set_gradient_checkpointing())
_SWITCH_FIELDS = (
    "gradient_checkpointing",
    "lora_enable",
    "use_peft",
    "use_lora",
    "load_in_4bit",
    "load_in_8bit",
    "offload",
    "grad_checkpoint",
)
# the model a script fine-tunes (TRL, LLaVA, FastChat, LLaMA-Factory, the HF examples: --model_name_or_path;
# DeepSpeed-Chat's step 3: --actor_model_name_or_path); the first one given names it
_NAME_FIELDS = (
    "model_name_or_path",
    "actor_model_name_or_path",
    "pretrained_model_name_or_path",
    "base_model",
    "model_name",
    "model_path",
)


def _field(option: str) -> str | None:
    """The dataclass field an option names (`--per-device-train-batch-size` -> per_device_train_batch_size)."""
    if not option.startswith("--") or len(option) < 3:
        return None
    return option[2:].replace("-", "_")


def _is_option(word: Word) -> bool:
    text = word.text
    if text is None:
        return word.pieces[0].known and (word.pieces[0].text or "").startswith("--")
    return text.startswith("-") and text != "-" and not text.lstrip("-").replace(".", "", 1).isdigit()


def _value_of_option(words: list[Word], i: int) -> bool:
    """Whether words[i] stands where the option before it takes its value (`--output_dir "$OUT"`): the
    scripts' own parsers are unknown, so any option written without `=` is taken to want one, except the
    precision switches, which are read as bare switches."""
    if i == 0:
        return False
    before = words[i - 1].text
    return (
        before is not None
        and before.startswith("--")
        and "=" not in before
        and _field(before) not in _BOOL_FIELDS + _SWITCH_FIELDS
    )


def bool_word(word: Word | None) -> bool | None:
    text = word.text if word is not None else None
    if text is None:
        return None
    lowered = text.lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else None


def hf_facts(words: list[Word], defaults: dict[str, Value] | None = None) -> dict[str, Value]:
    """The facts the arguments give; `defaults`: the entry script's own defaults of fields not given, where no
    unknown part of the arguments may give them (plint.reading.sources.swift_trainer.swift_defaults)."""
    out: dict[str, Value] = {}
    precision: dict[str, Value] = {}  # the last setting of each of --bf16 / --fp16
    unknown: list[Word] = []  # words of unknown text that are no option's value: any flag may hide in them
    i = 0
    while i < len(words):
        w = words[i]
        written = w.known_prefix()
        option = written.split("=", 1)[0]
        name = _field(option)
        if _hydra_config_override(option) and "=" in written:
            _config(out, w.after(len(option) + 1), option)
            i += 1
            continue
        if name is None or (w.text is None and "=" not in written):
            if w.text is None and not _value_of_option(words, i):
                unknown.append(w)
            i += 1
            continue
        inline = w.after(len(option) + 1) if "=" in written else None
        following = words[i + 1] if inline is None and i + 1 < len(words) and not _is_option(words[i + 1]) else None
        value = inline or following
        consumed = 1
        if name in _INT_FIELDS and value is not None:
            out[_INT_FIELDS[name]] = from_word(value, parse_int, option)
            consumed += following is not None
        elif name in _PATH_FIELDS and value is not None:
            _config(out, value, option)
            consumed += following is not None
        elif name in _NAME_FIELDS and value is not None:
            out.setdefault("model.name", from_word(value, str, option))
            consumed += following is not None
        elif name == "torch_dtype" and value is not None:  # the dtype the model loads in (TRL, ms-swift)
            out["trainer.torch_dtype"] = from_word(value, str, option)
            consumed += following is not None
        elif name == "finetuning_type" and value is not None:  # LLaMA-Factory: lora | freeze | full
            out["finetune.method"] = from_word(value, str, option)
            consumed += following is not None
        elif name == "deepspeed":
            out["deepspeed.enabled"] = Value(True, w.value_span, w.origin, option)
            if value is not None:  # HF: --deepspeed PATH (DeepSpeed's own --deepspeed is a switch)
                _config(out, value, option)
                consumed += following is not None
        elif name == "fsdp" and value is not None:
            out["parallel.sharding"] = _fsdp_sharding(value, option)
            if value.text is not None and "offload" in value.text.split():  # FSDP's CPUOffload of params and grads
                out["fsdp.offload"] = Value(True, value.value_span, value.origin, f"HF Trainer {option} {value.text}")
            if value.text is not None and {"hybrid_shard", "hybrid_shard_zero2"} & set(value.text.split()):
                # replicas across nodes, each sharded inside one (plint.reading.normalise._dp_outer)
                out["fsdp.hybrid_shard"] = Value(
                    True, value.value_span, value.origin, f"HF Trainer {option} {value.text}"
                )
            consumed += following is not None
        elif name in _SWITCH_FIELDS:
            state = bool_word(value)
            if inline is not None:  # --x=true, or --x=$Y (unknown)
                out[f"switch.{name}"] = Value(
                    state,
                    inline.value_span,
                    inline.origin if state is not None else "unresolved",
                    f"{option}={inline.display()}",
                )
            elif state is None:  # a bare switch
                out[f"switch.{name}"] = Value(True, w.value_span, w.origin, option)
            else:
                assert value is not None  # a boolean was read from it
                out[f"switch.{name}"] = Value(state, value.value_span, value.origin, f"{option} {value.text}")
                consumed += following is not None
        elif name in _BOOL_FIELDS:
            state = bool_word(value)
            if inline is not None and state is None:  # --bf16=$X, or a value string_to_bool rejects
                precision[name] = Value(
                    None,
                    inline.value_span,
                    "unresolved" if not inline.known else "derived",
                    f"{option}={inline.display()} is not a boolean",
                )
            elif state is None:  # a bare switch: the next word is not a boolean, so it is not its value
                precision[name] = Value(True, w.value_span, w.origin, option)
            else:
                assert value is not None  # a boolean was read from it
                precision[name] = Value(state, value.value_span, value.origin, f"{option} {value.text}")
                consumed += following is not None
        i += consumed
    gap = argument_gap(unknown)
    if gap is None:
        for key, fallback in (defaults or {}).items():
            out.setdefault(key, fallback)
    _recompute(out)
    _adapters(out)
    _source_and_target_length(out)
    _precision(out, precision, gap)
    incomplete = gap_fact(gap)
    if incomplete is not None:
        out["arguments.incomplete"] = incomplete
    return out


# TrainingArguments.fsdp: words of transformers' FSDPOption (trainer_utils.py): full_shard, shard_grad_op,
# no_shard, hybrid_shard (full shard inside a node, replicas across), hybrid_shard_zero2, plus offload and
# auto_wrap, which say nothing about the sharding
_FSDP_SHARDING = {
    "full_shard": "parameters",
    "hybrid_shard": "parameters",
    "shard_grad_op": "gradients",
    "hybrid_shard_zero2": "gradients",
    "no_shard": "none",
}


def _fsdp_sharding(word: Word, option: str) -> Value:
    if word.text is None:
        return Value(None, word.value_span, "unresolved", f"{option} {word.display()}: its text is not known")
    found = [_FSDP_SHARDING[w] for w in word.text.split() if w in _FSDP_SHARDING]
    if not found:
        return Value(None, word.value_span, "derived", f"{option} {word.text!r} names no sharding strategy")
    return Value(found[0], word.value_span, word.origin, f"HF Trainer {option} {word.text}")


def _recompute(out: dict[str, Value]) -> None:
    """--gradient_checkpointing: transformers checkpoints each decoder layer (gradient_checkpointing_enable wraps
    every layer's forward in torch.utils.checkpoint), keeping its input and recomputing it in the backward:
    Megatron's full recompute, uniform, one layer per checkpoint."""
    switch = out.get("switch.gradient_checkpointing") or out.get("switch.grad_checkpoint")
    if switch is None or switch.value is not True:
        return
    out["recompute.granularity"] = Value("full", switch.span, switch.origin, f"{switch.note}: every layer recomputed")
    out["recompute.method"] = Value("uniform", switch.span, "derived", switch.note)
    out["recompute.num_layers"] = Value(1, switch.span, "derived", f"{switch.note}: one layer per checkpoint")


def _source_and_target_length(out: dict[str, Value]) -> None:
    """--max_source_length and --max_target_length where no sequence length is given: ChatGLM-6B's
    ptuning/main.py (preprocess_function_train) pads every training example to max_source_length +
    max_target_length."""
    source, target = out.get("seq2seq.source_length"), out.get("seq2seq.target_length")
    if "model.seq_length" in out or source is None or target is None:
        return
    if isinstance(source.value, int) and isinstance(target.value, int):
        out["model.seq_length"] = Value(
            source.value + target.value,
            source.span,
            "derived",
            f"{source.value} + {target.value} (--max_source_length + --max_target_length: each example padded to both)",
        )


def _adapters(out: dict[str, Value]) -> None:
    """finetune.lora (only the adapters train: PEFT freezes the base weights) and finetune.bits (the frozen
    weights quantized by bitsandbytes: 4 or 8; LLaVA's --bits 16 is none)."""
    switches = [out[f"switch.{n}"] for n in ("lora_enable", "use_peft", "use_lora") if f"switch.{n}" in out]
    method = out.get("finetune.method")
    on = next((v for v in switches if v.value is True), None)
    if on is None and method is not None and method.value == "lora":
        on = method
    dim = out.get("finetune.lora_dim")  # DeepSpeed-Chat: LoRA exactly when --lora_dim > 0 (its default is 0)
    if dim is not None and isinstance(dim.value, int) and dim.value > 0:
        on = on or dim
        out.setdefault("finetune.lora_rank", dim)
    if on is not None:
        out["finetune.lora"] = Value(True, on.span, on.origin, on.note)
    for name, bits in (("load_in_4bit", 4), ("load_in_8bit", 8)):
        switch = out.get(f"switch.{name}")
        if switch is not None and switch.value is True and "finetune.bits" not in out:
            out["finetune.bits"] = Value(bits, switch.span, switch.origin, switch.note)


def _hydra_config_override(key: str) -> bool:
    """`++deepspeed_config=PATH`, `train.deepspeed_config=PATH`: a Hydra override (optionally with `+`/`++`, a dotted
    key) of a field named as DeepSpeed's config path, which a Hydra entry script hands to deepspeed.initialize
    (X-LANCE/SLAM-LLM's finetune_deepspeed.py)."""
    return not key.startswith("-") and key.lstrip("+").rsplit(".", 1)[-1] in _PATH_FIELDS


def _config(out: dict[str, Value], word: Word, option: str) -> None:
    out["deepspeed.config_path"] = from_word(word, str, option)
    out["deepspeed.config_word"] = Value(word.display(), word.value_span)
    out["deepspeed.config_option"] = Value(option, word.value_span)  # which program reads it (PL510)


def _precision(out: dict[str, Value], given: dict[str, Value], gap: ArgumentGap | None) -> None:
    on = {name: v for name, v in given.items() if v.value is True}
    unknown = [v for v in given.values() if v.value is None]
    if len(on) == 2:
        out["precision"] = Value(None, on["fp16"].span, "derived", "both --fp16 and --bf16 are given")
    elif on:
        ((name, v),) = on.items()
        out["precision"] = Value(name, v.span, v.origin, v.note)
    elif unknown:
        out["precision"] = unknown[0]
    else:  # no precision flag among the known words: an unknown part may hold one
        part = gap.could_give(lambda option: _field(option) in _BOOL_FIELDS) if gap is not None else None
        if part is not None:
            out["precision"] = unknown_value(part)
