"""Megatron-LM and Megatron-DeepSpeed arguments: argparse semantics over expanded words, and the
layout facts they set.

Parsing follows argparse as the trainers configure it (allow_abbrev=False, so a prefix is an unknown
flag; `--x=v` and `--x v`; nargs; a negative number is a value). Defaults and derivations follow
Megatron's validate_args (shared/reference/megatron.md §1-§2): an absent flag takes the release's
default from the flag catalog, with origin "default".
"""

from __future__ import annotations

import re
from plint.record import field, record

from plint.catalog.flags import FlagCatalog, FlagSpec
from plint.shell.model import Word
from plint.values import Value, default, derived, from_word, parse_int, unresolved

_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+([eE][-+]?\d+)?$")


@record
class FlagUse:
    option: str
    flag_word: Word
    values: list[Word]
    spec: FlagSpec | None
    inline_value: bool = False

    @property
    def value(self) -> Word | None:
        return self.values[0] if self.values else None


@record
class TrainerArgs:
    uses: list[FlagUse] = field(default_factory=list)
    positionals: list[Word] = field(default_factory=list)
    opaque: list[Word] = field(default_factory=list)  # unknown words: cannot tell a flag from a value

    def all(self, key: str) -> list[FlagUse]:
        return [u for u in self.uses if u.option == key or (u.spec is not None and u.spec.dest == key)]

    def get(self, key: str) -> FlagUse | None:
        found = self.all(key)
        return found[-1] if found else None

    def get_any(self, *keys: str) -> FlagUse | None:
        """The last use among several spellings (argparse: the last one on the line wins)."""
        found = [u for k in keys for u in self.all(k)]
        return max(found, key=self.uses.index) if found else None


def _looks_like_option(text: str) -> bool:
    return text.startswith("-") and text != "-" and not _NEGATIVE.match(text)


def parse_trainer_args(words: list[Word], catalog: FlagCatalog) -> TrainerArgs:
    args = TrainerArgs()
    i = 0
    while i < len(words):
        w = words[i]
        t = w.text
        if t is None:
            display = w.display()
            if display.startswith("--") and "=" in display and "${" not in display.split("=", 1)[0]:
                name = display.split("=", 1)[0]
                args.uses.append(FlagUse(name, w, [w.after(len(name) + 1)], catalog.lookup(name), True))
            elif display.startswith("--") and "${" not in display:
                args.uses.append(FlagUse(display, w, [], catalog.lookup(display)))
            else:
                args.opaque.append(w)
            i += 1
            continue
        if not _looks_like_option(t):
            args.positionals.append(w)
            i += 1
            continue
        name, eq, _ = t.partition("=")
        spec = catalog.lookup(name)
        if eq and t.startswith("--"):
            args.uses.append(FlagUse(name, w.slice(0, len(name)), [w.slice(len(name) + 1)], spec, True))
            i += 1
            continue
        if spec is None:
            # unknown option: take a following non-option word as its value (argparse would reject both)
            values = []
            if i + 1 < len(words) and words[i + 1].text is not None and not _looks_like_option(words[i + 1].text):
                values = [words[i + 1]]
            args.uses.append(FlagUse(name, w, values, None))
            i += 1 + len(values)
            continue
        if not spec.takes_value:
            args.uses.append(FlagUse(name, w, [], spec))
            i += 1
            continue
        values: list[Word] = []
        j = i + 1
        if spec.nargs in ("+", "*"):
            while j < len(words) and (words[j].text is None or not _looks_like_option(words[j].text)):
                values.append(words[j])
                j += 1
        elif spec.nargs == "?":
            if j < len(words) and (words[j].text is None or not _looks_like_option(words[j].text)):
                values.append(words[j])
                j += 1
        else:
            # argparse does not take a word that looks like an option as a value ("expected one argument")
            count = spec.nargs if isinstance(spec.nargs, int) else 1
            while j < len(words) and len(values) < count and \
                    (words[j].text is None or not _looks_like_option(words[j].text)):
                values.append(words[j])
                j += 1
        args.uses.append(FlagUse(name, w, values, spec))
        i = j
    return args


# ---- facts ------------------------------------------------------------------------------------------
class _Facts:
    def __init__(self, args: TrainerArgs, catalog: FlagCatalog):
        self.args, self.catalog = args, catalog
        self.out: dict[str, Value] = {}

    def flag(self, *options: str) -> Value | None:
        use = self.args.get_any(*options)
        if use is None:
            return None
        return Value(True, use.flag_word.value_span, use.flag_word.origin if use.flag_word.known else "literal")

    def number(self, option: str, convert=parse_int, *aliases: str) -> Value | None:
        use = self.args.get_any(option, *aliases)
        if use is None:
            return None
        if not use.values:
            return Value(None, use.flag_word.value_span, "derived", f"{option} is given without a value")
        return from_word(use.values[0], convert, option)

    def with_default(self, key: str, option: str, convert=parse_int, fallback=None, note: str = "") -> Value:
        v = self.number(option, convert)
        if v is None:
            spec = self.catalog.lookup(option)
            value = spec.default if spec is not None and spec.default is not None else fallback
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            v = default(value, note or f"{option} not given: the trainer's default")
        self.out[key] = v
        return v


def _to_float(text: str) -> float:
    return float(text)


def _layout_stages(layout: str) -> int | None:
    """Stages in a --pipeline-model-parallel-layout string (pipes separate stages; `*N` repeats the
    preceding symbol or parenthesised group; commas are cosmetic)."""
    def expand(s: str, i: int) -> tuple[str, int]:
        out = ""
        while i < len(s):
            c = s[i]
            if c == "(":
                inner, i = expand(s, i + 1)
                unit = inner
            elif c == ")":
                return out, i + 1
            elif c in " ,":
                i += 1
                continue
            else:
                unit = c
                i += 1
            if c != "(":
                pass
            m = re.match(r"\*(\d+)", s[i:])
            if m:
                unit = unit * int(m.group(1))
                i += m.end()
            out += unit
        return out, i

    try:
        flat, _ = expand(layout.replace('"', "").replace("'", ""), 0)
    except RecursionError:
        return None
    if not flat or set(flat) - set("EtmL|"):
        return None
    return flat.count("|") + 1


def megatron_facts(args: TrainerArgs, catalog: FlagCatalog, flavour: str = "megatron") -> dict[str, Value]:
    f = _Facts(args, catalog)
    out = f.out
    ds = flavour == "megatron-deepspeed"
    tp = f.with_default("parallel.tp", "--tensor-model-parallel-size")
    pp = f.with_default("parallel.pp", "--pipeline-model-parallel-size")
    if catalog.lookup("--context-parallel-size") is not None:
        f.with_default("parallel.cp", "--context-parallel-size")
    else:
        out["parallel.cp"] = default(1, "this trainer has no context parallelism")
    ep_option = "--moe-expert-parallel-size" if ds else "--expert-model-parallel-size"
    f.with_default("parallel.ep", ep_option, fallback=1)
    etp = f.number("--expert-tensor-parallel-size")
    out["parallel.etp"] = etp if etp is not None else Value(
        tp.value, tp.span, "derived" if tp.known else tp.origin,
        "--expert-tensor-parallel-size not given: it defaults to the tensor-parallel size")
    sp = f.flag("--sequence-parallel")
    out["parallel.sequence_parallel"] = sp or default(False)
    dist = f.flag("--use-distributed-optimizer")
    out["parallel.distributed_optimizer"] = dist or default(False)
    if ds:
        z = f.number("--zero-stage", lambda s: int(float(s)))
        out["parallel.zero_stage"] = z if z is not None else default(1, "--zero-stage defaults to 1")
        out["ds_sequence_parallel_size"] = f.number("--ds-sequence-parallel-size") or default(1)
        npp = f.flag("--no-pipeline-parallel")
        out["megatron_deepspeed.no_pipeline_parallel"] = npp or default(False)
        partition = f.number("--pp-partition-method", str)
        if partition is not None:
            out["megatron_deepspeed.pp_partition_method"] = partition
    # virtual pipeline: three spellings, at most one allowed (validate_args)
    layers = f.number("--num-layers")
    if layers is not None:
        out["model.num_layers"] = layers
    per_stage = f.number("--num-layers-per-virtual-pipeline-stage")
    stages = f.number("--num-virtual-stages-per-pipeline-rank")
    layout = f.number("--pipeline-model-parallel-layout", str)
    embed = f.flag("--account-for-embedding-in-pipeline-split")
    loss = f.flag("--account-for-loss-in-pipeline-split")
    for key, v in (("pipeline.account_for_embedding", embed), ("pipeline.account_for_loss", loss),
                   ("parallel.pipeline_layout", layout)):
        if v is not None:
            out[key] = v
    for key, option in (("parallel.uneven_first", "--decoder-first-pipeline-num-layers"),
                        ("parallel.uneven_last", "--decoder-last-pipeline-num-layers")):
        v = f.number(option)
        if v is not None:
            out[key] = v
    vpp_sources = [v for v in (per_stage, stages, layout) if v is not None]
    out["parallel.vpp_spellings"] = derived(len(vpp_sources), "ways of setting virtual pipeline stages given")
    if stages is not None:
        out["parallel.vpp"] = stages if stages.value != 1 else derived(
            None, "--num-virtual-stages-per-pipeline-rank 1 means no interleaving", stages.span)
    elif per_stage is not None:
        out["parallel.vpp"] = _vpp_from_chunk(per_stage, layers, pp, embed, loss)
    elif layout is not None:
        if layout.known:
            n = _layout_stages(layout.value)
            if n is None:
                out["parallel.vpp"] = Value(None, layout.span, "derived",
                                            f"cannot read the pipeline layout {layout.value!r}")
            elif pp.known and pp.value and n % pp.value == 0:
                out["parallel.vpp"] = derived(n // pp.value if n // pp.value > 1 else None,
                                              f"{n} stages in the layout / pp {pp.value}", layout.span)
            else:
                out["parallel.vpp"] = Value(None, layout.span, "derived" if pp.known else "unresolved",
                                            f"{n} layout stages do not divide by pp {pp.value}")
        else:
            out["parallel.vpp"] = layout
    else:
        out["parallel.vpp"] = default(None, "no virtual pipeline flag: no interleaving")
    # batch
    f.with_default("batch.micro", "--micro-batch-size", fallback=1,
                   note="--micro-batch-size not given (Megatron requires it); taken as 1")
    glob = f.number("--global-batch-size")
    if glob is not None:
        out["batch.global"] = glob
    # model shape
    hidden = f.number("--hidden-size")
    heads = f.number("--num-attention-heads")
    for key, v in (("model.hidden_size", hidden), ("model.num_attention_heads", heads)):
        if v is not None:
            out[key] = v
    swiglu = f.flag("--swiglu")
    if swiglu is not None:
        out["model.swiglu"] = swiglu
    ffn = f.number("--ffn-hidden-size")
    if ffn is not None:
        out["model.ffn_hidden_size"] = ffn
    elif hidden is not None and hidden.known:
        h = hidden.value
        if swiglu is not None:
            out["model.ffn_hidden_size"] = derived(int((4 * h * 2 / 3) / 64) * 64,
                                                   f"--swiglu without --ffn-hidden-size: int((4*{h}*2/3)/64)*64")
        else:
            out["model.ffn_hidden_size"] = derived(4 * h, f"--ffn-hidden-size not given: 4 * {h}")
    gqa = f.flag("--group-query-attention")
    if gqa is not None:
        out["model.group_query_attention"] = gqa
        groups = f.number("--num-query-groups")
        out["model.num_query_groups"] = groups if groups is not None else default(
            catalog.default("num_query_groups") or 1, "--num-query-groups defaults to 1")
    elif heads is not None:
        out["model.num_query_groups"] = Value(heads.value, heads.span, "derived", "without "
                                              "--group-query-attention every head is its own group") \
            if heads.known else Value(None, heads.span, "unresolved", "needs model.num_attention_heads")
    seq = f.number("--seq-length") or f.number("--encoder-seq-length")
    if seq is not None:
        out["model.seq_length"] = seq
    for key, option in (("model.vocab_size", "--vocab-size"),
                        ("model.max_position_embeddings", "--max-position-embeddings"),
                        ("model.make_vocab_size_divisible_by", "--make-vocab-size-divisible-by"),
                        ("model.moe_ffn_hidden_size", "--moe-ffn-hidden-size"),
                        ("model.kv_channels", "--kv-channels"),
                        ("model.mtp_num_layers", "--mtp-num-layers"),
                        ("train_iters", "--train-iters"), ("train_samples", "--train-samples")):
        v = f.number(option)
        if v is not None:
            out[key] = v
    experts_use = args.get("--num-experts")
    if experts_use is not None and experts_use.values:
        values = [from_word(w, parse_int, "--num-experts") for w in experts_use.values]
        known = [v for v in values if v.known]
        if len(known) == len(values):
            top = max(values, key=lambda v: v.value)
            out["model.num_experts"] = top if top.value not in (0, 1) or not ds else derived(
                None if top.value <= 1 else top.value, "--num-experts 1: a dense model", top.span)
            if not ds and top.value == 0:
                out["model.num_experts"] = derived(None, "--num-experts 0 means no experts", top.span)
        else:
            out["model.num_experts"] = next(v for v in values if not v.known)
    experts = out.get("model.num_experts")
    if experts is not None and experts.value:
        topk_option = "--topk" if ds else "--moe-router-topk"
        f.with_default("model.moe_topk", topk_option, fallback=2 if not ds else 1)
    # precision
    bf16, fp16 = f.flag("--bf16"), f.flag("--fp16")
    fp8 = f.number("--fp8-format", str)
    if fp8 is not None:
        out["fp8"] = fp8
    if bf16 is not None and fp16 is not None:
        out["precision"] = Value(None, fp16.span, "derived", "both --fp16 and --bf16 are given")
    elif fp8 is not None and fp8.known:
        out["precision"] = Value("fp8", fp8.span, fp8.origin)
    elif bf16 is not None:
        out["precision"] = Value("bf16", bf16.span, bf16.origin)
    elif fp16 is not None:
        out["precision"] = Value("fp16", fp16.span, fp16.origin)
    else:
        out["precision"] = default("fp32", "neither --bf16 nor --fp16: parameters stay fp32")
    # recompute
    gran = f.number("--recompute-granularity", str)
    activations = f.flag("--recompute-activations")
    checkpoint = f.flag("--checkpoint-activations") if ds else None
    if activations is not None:
        out["recompute.granularity"] = Value("selective", activations.span, activations.origin,
                                             "--recompute-activations selects selective recompute"
                                             + (" (overriding --recompute-granularity)" if gran else ""))
    elif gran is not None:
        out["recompute.granularity"] = gran
    elif checkpoint is not None:
        out["recompute.granularity"] = Value("full", checkpoint.span, checkpoint.origin,
                                             "--checkpoint-activations: full activation checkpointing")
    else:
        out["recompute.granularity"] = default(None, "no recompute flag")
    for key, option, conv in (("recompute.method", "--recompute-method", str),
                              ("recompute.num_layers", "--recompute-num-layers", parse_int)):
        v = f.number(option, conv)
        out[key] = v if v is not None else default(None)
    # pointers other readers need
    config = args.get_any("--deepspeed_config", "--deepscale_config", "--deepspeed-config")
    if config is not None and config.values:
        out["deepspeed.config_path"] = from_word(config.values[0], str, "--deepspeed_config")
        out["deepspeed.config_word"] = Value(config.values[0].display(), config.values[0].value_span)
    enabled = f.flag("--deepspeed")
    if enabled is not None:
        out["deepspeed.enabled"] = enabled
    clip = f.number("--clip-grad", _to_float)
    if clip is not None:
        out["clip_grad"] = clip
    for key, option in (("overlap_grad_reduce", "--overlap-grad-reduce"),
                        ("overlap_param_gather", "--overlap-param-gather"),
                        ("tp_comm_overlap", "--tp-comm-overlap"),
                        ("parallel.use_tp_pp_dp_mapping", "--use-tp-pp-dp-mapping")):
        v = f.flag(option)
        if v is not None:
            out[key] = v
    return out


def _vpp_from_chunk(per_stage: Value, layers: Value | None, pp: Value, embed, loss) -> Value:
    if not per_stage.known:
        return per_stage
    if layers is None or not layers.known or not pp.known:
        return unresolved("virtual stages need --num-layers and the pipeline size", per_stage.span)
    total = layers.value + (1 if embed else 0) + (1 if loss else 0)
    if pp.value <= 0 or total % pp.value or per_stage.value <= 0 or (total // pp.value) % per_stage.value:
        return Value(None, per_stage.span, "derived",
                     f"{total} layers over pp {pp.value} do not split into chunks of {per_stage.value}")
    vpp = (total // pp.value) // per_stage.value
    if vpp == 1:
        return derived(None, f"--num-layers-per-virtual-pipeline-stage {per_stage.value} equals the layers per "
                             "stage: interleaving is off", per_stage.span)
    return derived(vpp, f"vpp = ({total} / {pp.value}) / {per_stage.value} "
                        "(layers per stage / --num-layers-per-virtual-pipeline-stage)", per_stage.span)
