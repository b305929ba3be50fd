"""What a merged GPT-NeoX config says, as layout field paths and trainer facts (megatron/neox_arguments/
arguments.py `calculate_derived`, the defaults of neox_args.py and deepspeed_args.py, the MLP sizes of
megatron/model/transformer.py; the module docstring of plint.reading.sources.neox names each)."""

from __future__ import annotations

import reprlib
from typing import Any

from plint.reading.sources.neox_config import UNBUILT, Entry, NeoXConfig, nested
from plint.source import SourceFile
from plint.values import Value, default, derived, unresolved

_SHOWN = reprlib.Repr()  # how a message quotes a config value (see _shown)
_SHOWN.maxlevel = 2
_GATED = ("geglu", "reglu", "bilinear", "swiglu", "glu")


class _Values:
    """Typed reads of the merged config, each a Value pointing at where the file writes it."""

    def __init__(self, config: NeoXConfig):
        self.config = config

    def entry(self, key: str) -> Entry | None:
        return self.config.entries.get(key)

    def read(self, key: str, kind: type | tuple[type, ...], fallback: Any, why: str) -> Value:
        """The key's value, NeoX's default when absent from fully read files, unresolved otherwise."""
        entry = self.entry(key)
        if entry is not None:
            return self.of(entry, kind)
        return self.absent(key, fallback, why)

    def of(self, entry: Entry, kind: type | tuple[type, ...]) -> Value:
        value = entry.value
        origin = "assumed" if entry.assumed else "literal"
        note = f"{entry.path}: {entry.key}" + (f" ({entry.assumed})" if entry.assumed else "")
        if value is UNBUILT:
            return unresolved(f"{note}: a value plint does not build (a python tag)", entry.span)
        # validate_types accepts an int where a float is declared, never a float where an int is (2.0 is refused)
        if value is not None and not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return unresolved(f"{note}: {_shown(value)} is not {_kind_name(kind)}", entry.span)
        return Value(value, entry.span, origin, note)

    def absent(self, key: str, fallback: Any, why: str) -> Value:
        if self.config.unread:  # one note for every key the unread file may set: said once (PL002)
            return unresolved(self.config.unread[0])
        return default(fallback, f"{key} not set: GPT-NeoX's default {fallback!r} ({why})")


def _shown(value: Any) -> str:
    """A config value as a message quotes it, bounded: yaml aliases can nest one list in another so that its
    full repr is exponentially long; reprlib elides past a few items and levels, and fewer levels than its default
    (6 levels of 6 items is 300 KB) keep it to a line."""
    return _SHOWN.repr(value)


def _kind_name(kind) -> str:
    names = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(
        {"int": "an integer", "bool": "true/false", "str": "a string", "dict": "a mapping"}.get(k.__name__, k.__name__)
        for k in names
    )


def _at_least_one(size: Value, name: str) -> Value:
    """calculate_derived: a size below 1 counts as 1 (pipe_parallel_size 0 runs without a pipeline)."""
    if size.known and isinstance(size.value, int) and size.value < 1:
        return derived(1, f"{name} {size.value}: counted as 1 (arguments.py calculate_derived)", size.span)
    return size


def neox_facts(config: NeoXConfig, read_file=None, why_unread=None) -> dict[str, Value]:
    """What the merged config says, as layout field paths and trainer facts; `read_file` reads a tokenizer
    file the config names (where the script is run from, inside the checked tree), `why_unread` says why one
    that is there is not read."""
    v = _Values(config)
    out: dict[str, Value] = {}
    tp = _at_least_one(v.read("model_parallel_size", int, 1, "neox_args.py NeoXArgsParallelism"), "model_parallel_size")
    pipe = v.read("pipe_parallel_size", int, 0, "neox_args.py NeoXArgsParallelism")
    out["parallel.tp"] = tp
    out["parallel.pp"] = _at_least_one(pipe, "pipe_parallel_size")
    if pipe.known and isinstance(pipe.value, int):
        # is_pipe_parallel = pipe_parallel_size >= 1: the model stays a DeepSpeed PipelineModule (training.py
        # get_model: to_sequential() only without it), which DeepSpeed refuses beside ZeRO-2/3
        out["megatron_deepspeed.no_pipeline_parallel"] = Value(
            pipe.value < 1,
            pipe.span,
            pipe.origin,
            f"pipe_parallel_size {pipe.value}: "
            + (
                "the model runs without PipelineModule" if pipe.value < 1 else "the model is a DeepSpeed PipelineModule"
            ),
        )
    out["parallel.cp"] = default(1, "GPT-NeoX has no context parallelism")
    out["parallel.sequence_parallel"] = v.read("sequence_parallel", bool, False, "neox_args.py")
    out["parallel.distributed_optimizer"] = default(False, "GPT-NeoX shards optimizer states with ZeRO only")
    out["parallel.zero_stage"] = _zero_stage(v)
    _batch(v, out)
    out["precision"] = _precision(v)
    _recompute(v, out)
    _shape(v, out)
    _vocab(v, out, read_file or (lambda name: (None, None)), why_unread or (lambda name: None))
    return out


def _zero_stage(v: _Values) -> Value:
    zero = v.entry("zero_optimization")
    if zero is None:
        return v.absent("zero_optimization", 0, "ZERO_DEFAULTS stage 0 in arguments.py")
    stage = nested(zero, "stage")
    if stage is None:
        return unresolved(
            f"{zero.path}: zero_optimization has no 'stage': NeoX stops with a KeyError (calculate_derived)",
            zero.span,
        )
    return v.of(stage, int)


def _batch(v: _Values, out: dict[str, Value]) -> None:
    """The batch keys as written; normalise derives the rest once dp is known (calculate_batch_parameters)."""
    for key, path in (("train_micro_batch_size_per_gpu", "batch.micro"), ("train_batch_size", "batch.global")):
        entry = v.entry(key)
        if entry is not None:
            out[path] = v.of(entry, int)
        elif v.config.unread:
            out[path] = v.absent(key, None, "")
    out["batch.grad_accum"] = v.read("gradient_accumulation_steps", int, 1, "deepspeed_args.py")


def _precision(v: _Values) -> Value:
    """calculate_derived: fp16.enabled, then bf16.enabled, then `precision`, else fp32."""
    written = v.entry("precision")
    for key, name in (("fp16", "fp16"), ("bf16", "bf16")):
        entry = v.entry(key)
        enabled = nested(entry, "enabled") if entry is not None else None
        if enabled is not None and enabled.value is True:
            if written is not None and written.value not in (name, "bfloat16" if name == "bf16" else name):
                return unresolved(
                    f"{enabled.path}: {key}.enabled with precision {_shown(written.value)}: NeoX stops "
                    f'("DeepSpeed {key} field was set but precision conflicts")',
                    enabled.span,
                )
            origin = "assumed" if enabled.assumed else "literal"  # found above the script: a guess
            return Value(name, enabled.span, origin, f"{enabled.path}: {key}.enabled")
    if written is not None:
        value = v.of(written, str)
        if value.known:
            accepted = {"bfloat16": "bf16", "fp16": "fp16", "fp32": "fp32"}.get(str(value.value).lower())
            if accepted is None:
                return unresolved(f"{written.path}: precision {value.value!r} is not one NeoX accepts", written.span)
            return Value(accepted, value.span, value.origin, value.note)
        return value
    return v.absent("precision", "fp32", "no fp16/bf16 section enabled: calculate_derived sets fp32")


def _recompute(v: _Values, out: dict[str, Value]) -> None:
    """checkpoint_activations: every chunk of checkpoint_num_layers layers is recomputed (Megatron's full,
    uniform recompute)."""
    on = v.read("checkpoint_activations", bool, False, "neox_args.py NeoXArgsTraining")
    if on.known and on.value is True:
        out["recompute.granularity"] = Value("full", on.span, on.origin, on.note)
        out["recompute.method"] = Value("uniform", on.span, "derived", "checkpoint_activations: chunks of layers")
        out["recompute.num_layers"] = v.read("checkpoint_num_layers", int, 1, "neox_args.py NeoXArgsTraining")
    elif on.known:
        out["recompute.granularity"] = Value(None, on.span, on.origin, "checkpoint_activations off: no recompute")
    else:
        out["recompute.granularity"] = on


def _shape(v: _Values, out: dict[str, Value]) -> None:
    for key, path in (
        ("num_layers", "model.num_layers"),
        ("hidden_size", "model.hidden_size"),
        ("num_attention_heads", "model.num_attention_heads"),
        ("seq_length", "model.seq_length"),
        ("max_position_embeddings", "model.max_position_embeddings"),
    ):
        out[path] = v.read(key, int, None, "required: validate_values stops without it")
    heads = out["model.num_attention_heads"]
    kv = v.entry("num_kv_heads")
    if kv is not None and kv.value is not None:
        groups = v.of(kv, int)
        out["model.num_query_groups"] = groups
        if groups.known and heads.known and groups.value < heads.value:
            out["model.group_query_attention"] = Value(True, groups.span, groups.origin, groups.note)
    elif heads.known:
        out["model.num_query_groups"] = derived(heads.value, "no num_kv_heads: every head is its own group", heads.span)
    out["model.make_vocab_size_divisible_by"] = v.read("make_vocab_size_divisible_by", int, 128, "neox_args.py")
    experts = v.read("moe_num_experts", int, 1, "neox_args.py NeoXArgsMoE")
    if experts.known and isinstance(experts.value, int) and experts.value > 1:
        out["model.num_experts"] = experts
        out["model.moe_topk"] = v.read("moe_top_k", int, 1, "neox_args.py NeoXArgsMoE")
    elif experts.known:
        out["model.num_experts"] = derived(None, "moe_num_experts 1: a dense model", experts.span)
        out["parallel.ep"] = default(1, "a dense model: no expert parallelism")
    untied = v.entry("no_weight_tying")
    if untied is not None:
        out["model.untie_embeddings"] = v.of(untied, bool)
    _ffn(v, out)


def _vocab(v: _Values, out: dict[str, Value], read_config, why_unread) -> None:
    """The padded vocabulary train.py builds: tokenizer.py build_tokenizer sets padded_vocab_size to the
    tokenizer's vocab_size padded to a multiple of make_vocab_size_divisible_by * model_parallel_size
    (_vocab_size_with_padding), whatever the config says (train.py calls build_tokenizer before the model).
    The tokenizer's size is read where the tree holds its file: CharLevelTokenizer has 512 (build_tokenizer),
    GPT2BPETokenizer the entries of its vocab JSON (len(encoder)), HFTokenizer its tokenizer.json
    (Tokenizer.get_vocab_size(), added tokens included); any other is left unknown."""
    kind = v.read("tokenizer_type", str, "GPT2BPETokenizer", "neox_args.py NeoXArgsTokenizer")
    divisible = out["model.make_vocab_size_divisible_by"]
    tp = out["parallel.tp"]
    if not kind.known:
        out["model.vocab_size"] = kind
        return
    if not tp.known:
        out["model.vocab_size"] = unresolved(str(tp.note), tp.span)
        return
    if not divisible.known:
        out["model.vocab_size"] = unresolved(
            "needs tokenizer_type, make_vocab_size_divisible_by and model_parallel_size"
        )
        return
    name = str(kind.value).lower()
    size, where, how = None, kind, f"tokenizer_type {kind.value}"
    if name == "charleveltokenizer":
        size = 512
    elif name in ("gpt2bpetokenizer", "hftokenizer"):
        vocab_file = v.entry("vocab_file")
        if vocab_file is None or not isinstance(vocab_file.value, str):
            out["model.vocab_size"] = unresolved(f"{kind.value} without a vocab_file: build_tokenizer stops", kind.span)
            return
        source, _ = read_config(vocab_file.value)
        size = _tokenizer_size(source, name == "hftokenizer") if source is not None else None
        where, how = v.of(vocab_file, str), f"{vocab_file.value} ({kind.value})"
        if size is None:
            why = why_unread(vocab_file.value) if source is None else None  # there, but not read: say why
            out["model.vocab_size"] = unresolved(
                f"the tokenizer's vocabulary: {vocab_file.value} is "
                + (
                    "not a tokenizer file plint reads"
                    if source is not None
                    else f"not read ({why.why})"
                    if why is not None
                    else "not read (not in the checked tree)"
                ),
                vocab_file.span,
            )
            return
    else:
        out["model.vocab_size"] = unresolved(f"{kind.value}: plint does not read its vocabulary", kind.span)
        return
    multiple = int(divisible.value) * max(1, int(tp.value))
    padded = _round_up(size, multiple)
    note = f"{how}: {size} tokens, padded to a multiple of {multiple} (tokenizer.py _vocab_size_with_padding)"
    out["model.vocab_size"] = Value(padded, where.span, "assumed" if where.origin == "assumed" else "derived", note)


def _tokenizer_size(source: SourceFile, hf: bool) -> int | None:
    """Entries of a GPT-2 vocab JSON (a token -> id object), or of a tokenizers JSON (its model's vocab plus the
    added tokens it does not hold); None for anything else."""
    import json

    try:
        data = json.loads(source.text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    if not hf:
        return len(data) if data and all(isinstance(i, int) for i in data.values()) else None
    model = data.get("model")
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocab, dict):
        tokens = set(vocab)
    elif isinstance(vocab, list):  # Unigram: [token, score] pairs
        tokens = {t[0] for t in vocab if isinstance(t, list) and t}
    else:
        return None
    added = data.get("added_tokens") or []
    extra = {t.get("content") for t in added if isinstance(t, dict)} - tokens
    return len(tokens) + len(extra)


def _round_up(n: int, multiple: int) -> int:
    return multiple * ((n + multiple - 1) // multiple)


def _ffn(v: _Values, out: dict[str, Value]) -> None:
    """ParallelMLP's sizes: intermediate_size, else expansion_factor * hidden, else 4 * hidden; a gated
    activation takes 2/3 of it split in two halves; the input of the second linear layer (Megatron's
    ffn_hidden_size) rounded up to mlp_multiple_of."""
    hidden = out["model.hidden_size"]
    activation = v.read("activation", str, "gelu", "neox_args.py NeoXArgsModel")
    mlp_type = v.entry("mlp_type")
    if mlp_type is not None:
        _ffn_with_mlp_type(v, out, v.of(mlp_type, str), hidden, activation)
        return
    size = v.entry("intermediate_size")
    factor = v.entry("expansion_factor")
    multiple = v.read("mlp_multiple_of", int, 1, "neox_args.py NeoXArgsModel")
    if not hidden.known or not activation.known:  # the reason they are unknown (an unread config), said once
        out["model.ffn_hidden_size"] = unresolved(str((hidden if not hidden.known else activation).note))
        return
    if not multiple.known or not isinstance(hidden.value, int):
        out["model.ffn_hidden_size"] = unresolved("needs model.hidden_size, activation and mlp_multiple_of")
        return
    where: Value
    if size is not None and size.value is not None:
        where = v.of(size, int)
        if not where.known:
            out["model.ffn_hidden_size"] = where
            return
        ffn = int(where.value)
        how = f"intermediate_size {ffn}"
    elif factor is not None and factor.value is not None:
        where = v.of(factor, (int, float))
        if not where.known:
            out["model.ffn_hidden_size"] = where
            return
        ffn = int(where.value * hidden.value)
        how = f"expansion_factor {where.value} * hidden {hidden.value}"
    else:
        where, ffn, how = hidden, 4 * hidden.value, f"4 * hidden {hidden.value} (no intermediate_size)"
    gated = str(activation.value).lower() in _GATED
    ffn_in = int(ffn * 2 / 3) // 2 if gated else ffn
    m = max(1, int(multiple.value))
    size_in = _round_up(ffn_in, m)
    note = (
        f"{how}"
        + (f", {activation.value} gated: 2/3 of it in two halves" if gated else "")
        + (f", rounded up to a multiple of {m}" if m > 1 else "")
        + " (transformer.py ParallelMLP)"
    )
    out["model.ffn_hidden_size"] = derived(size_in, note, where.span)
    gating = f"activation {activation.value}" + (": gated" if gated else "")
    out["model.swiglu"] = derived(gated, gating, activation.span)


# GPT-NeoX releases with the mlp_type key: from "Support for LLaMA" (EleutherAI/gpt-neox 299b68cd, 2023-05) to
# "Hotfix llama models" (adbf5d6f, 2024-09), whose megatron/model/transformer.py sized the MLPs their own way
# (read at 0d4bdb96^): LLaMAParallelMLP takes intermediate_size (from f36aed7f, 2024-02) or 8h/3 rounded up to a
# multiple of 256 (its multiple_of), gated by SiLU; ParallelMLP ("regular") takes 4h, or for geglu an fc1 of 4h
# split in two halves of 2h, and ignores intermediate_size
_LLAMA_MULTIPLE_OF = 256


def _ffn_with_mlp_type(v: _Values, out: dict[str, Value], kind: Value, hidden: Value, activation: Value) -> None:
    """The MLP size of a config written for a release with mlp_type (llama or regular)."""
    if not kind.known or kind.value not in ("llama", "regular") or not isinstance(hidden.value, int):
        out["model.ffn_hidden_size"] = unresolved(f"mlp_type {kind.value!r}: needs hidden_size and llama or regular")
        return
    if kind.value == "llama":
        size = v.entry("intermediate_size")
        if size is not None and size.value is not None:
            out["model.ffn_hidden_size"] = v.of(size, int)
        else:
            rounded = _round_up(int(2 * hidden.value * 4 / 3), _LLAMA_MULTIPLE_OF)
            note = f"mlp_type llama: 8/3 * hidden {hidden.value}, rounded up to a multiple of 256 (LLaMAParallelMLP)"
            out["model.ffn_hidden_size"] = derived(rounded, note, kind.span)
        out["model.swiglu"] = derived(True, "mlp_type llama: SiLU-gated (LLaMAParallelMLP)", kind.span)
        return
    if not activation.known:
        out["model.ffn_hidden_size"] = unresolved(str(activation.note))
        return
    geglu = activation.value == "geglu"
    how = f"hidden {hidden.value}: " + ("half of geglu's 4h" if geglu else "4h") + " (mlp_type regular, ParallelMLP)"
    out["model.ffn_hidden_size"] = derived((2 if geglu else 4) * hidden.value, how, kind.span)
    out["model.swiglu"] = derived(geglu, f"activation {activation.value}", activation.span)
