"""Megatron-LM and Megatron-DeepSpeed arguments: the layout facts they set, read from the command line
that plint.reading.sources.megatron_args parses.

Defaults and derivations follow each trainer's validate_args (shared/reference/megatron.md §1-§2;
deepspeed.md §6.2; the forks' megatron/arguments.py): an absent flag takes the release's default from
the flag catalog, with origin "default".
"""

from __future__ import annotations

import re

from plint.catalog.flags import FlagCatalog
from plint.reading.sources.arglist import argument_gap, gap_fact, overridable, unknown_value

# the command line's parser and the pipeline layout's, imported from here by the reader and the cost model
from plint.reading.sources.megatron_args import FlagUse as FlagUse
from plint.reading.sources.megatron_args import TrainerArgs as TrainerArgs
from plint.reading.sources.megatron_args import layout_stages as layout_stages
from plint.reading.sources.megatron_args import parse_trainer_args as parse_trainer_args
from plint.reading.sources.megatron_mlp import ffn_hidden_size
from plint.values import Value, derived, from_word, parse_int, unresolved

# ---- facts -----------------------------------------------------------------------------------------


def integer(text: str) -> int:
    """argparse `type=int` (named for the notes of values that fail to convert)."""
    return parse_int(text)


def number(text: str) -> float:
    return float(text)


def text(value: str) -> str:
    return value


def _release_key(catalog: FlagCatalog) -> tuple[int, int]:
    """Release order for version-dependent behaviour; development snapshots count as newest."""
    m = re.fullmatch(r"(\d+)\.(\d+)", catalog.release)
    return (int(m.group(1)), int(m.group(2))) if m else (99, 0)


# The options whose absence a field's default rests on (an unknown part holding one makes the field unknown)
_VPP_OPTIONS = (
    "--num-layers-per-virtual-pipeline-stage",
    "--num-virtual-stages-per-pipeline-rank",
    "--pipeline-model-parallel-layout",
    "--hybrid-layer-pattern",
)
_GQA_OPTIONS = ("--group-query-attention", "--num-query-groups", "--num-key-value-heads")
_PRECISION_OPTIONS = ("--bf16", "--fp16", "--fp8-format", "--fp8-hybrid", "--fp8-e4m3")
_RECOMPUTE_OPTIONS = (
    "--recompute-granularity",
    "--recompute-activations",
    "--recompute-num-layers",
    "--checkpoint-activations",
    "--activations-checkpoint-method",
    "--checkpoint-num-layers",
    "--activations-checkpoint-num-layers",
)


class _Reader:
    """Reads flags of one parsed command line into Values."""

    def __init__(self, args: TrainerArgs, catalog: FlagCatalog):
        self.args, self.catalog = args, catalog
        self.out: dict[str, Value] = {}
        # an absent flag may still hide in words whose text is unknown: then it is unresolved, not defaulted
        self.gap = argument_gap(args.opaque, self.takes_value)

    def takes_value(self, option: str) -> bool:
        spec = self.catalog.lookup(option)
        return spec is None or spec.takes_value is not False

    def _named(self, option: str):
        """The catalog's action for a Megatron option the reader asks about by its Megatron-LM name, under the
        parser's own spelling (FlagCatalog.spelling)."""
        spelled = self.catalog.spelling(option)
        return self.catalog.lookup(spelled) if spelled is not None else None

    def _matcher(self, options: tuple[str, ...]):
        """Whether an option as written is one of `options` or shares a dest with one of them."""
        dests = {spec.dest for spec in map(self._named, options) if spec is not None and spec.dest}

        def matches(written: str) -> bool:
            spec = self.catalog.lookup(written)
            return written in options or (spec is not None and spec.dest in dests)

        return matches

    def has(self, option: str) -> bool:
        return self._named(option) is not None

    def use(self, *options: str, known_only: bool = True) -> FlagUse | None:
        """The winning use among spellings (and their aliases). Options the release's parser lacks
        are left out by default: argparse stops at them, so they set nothing (PL501 reports them)."""
        dests = {spec.dest for spec in map(self._named, options) if spec is not None and spec.dest}
        found = [
            u
            for u in self.args.uses
            if (u.spec is not None or not known_only)
            and (u.option in options or (u.spec is not None and u.spec.dest in dests))
        ]
        return found[-1] if found else None

    def flag(self, *options: str) -> Value | None:
        """True when a store_true flag is given (the last spelling wins), else None."""
        use = self.use(*options)
        if use is None:
            return None
        return Value(True, use.flag_word.value_span, use.flag_word.origin)

    def value(self, option: str, convert=integer) -> Value | None:
        """The value of a given option; None when it is absent."""
        use = self.use(option)
        if use is None:
            return None
        if not use.values:
            return Value(None, use.flag_word.value_span, "unresolved", f"{use.option} is given without a value")
        value = from_word(use.values[0], convert, use.option)
        later = argument_gap(self.args.opaque_after(use), self.takes_value)
        part = later.could_give(self._matcher((option,))) if later is not None and value.known else None
        return overridable(value, use.option, part) if part is not None else value

    def absent(self, value, note: str, origin: str = "default", span=None, options: tuple[str, ...] = ()) -> Value:
        """What options that are not on the known part of the line leave: the trainer's default (or a value
        derived from their absence) when no unknown part could give one of them, else unresolved."""
        # options the parser in force does not define cannot be in an unknown part either: argparse would stop
        # at them (a fork without grouped-query attention keeps one group per head whatever $MODEL_ARGS holds)
        defined = not options or any(self._named(option) is not None for option in options)
        part = self.gap.could_give(self._matcher(options)) if self.gap is not None and defined else None
        if part is not None:
            return unknown_value(part)
        if not defined and self.gap is not None:
            note += f" (the parser in force defines none of {', '.join(options)}, so no unknown word can give one)"
        return Value(value, span, origin, note)

    def default(self, option: str, fallback=None, note: str = "") -> Value:
        """The trainer's own default for an absent option (from the catalog when it has one)."""
        spec = self._named(option)
        value = fallback
        if spec is not None and spec.has_literal_default and spec.default is not None:
            value = spec.default
        if isinstance(value, float) and value.is_integer() and spec is not None and spec.type == "int":
            value = int(value)
        if not note:
            if spec is None:
                note = f"{self.catalog.flavour} {self.catalog.release} has no {option}"
            else:
                note = f"{option} not given: the default in {self.catalog.release}"
                if spec.shape_from:
                    note += f" (as in {spec.shape_from}: this release's table has names only)"
        if spec is None:  # the release has no such option: no word of the list can set it, nor is it a default
            return derived(value, note)
        return self.absent(value, note, options=(option,))

    def setting(self, key: str, option: str, convert=integer, fallback=None, note: str = "") -> Value:
        v = self.value(option, convert)
        if v is None:
            v = self.default(option, fallback, note)
        self.out[key] = v
        return v

    def put(self, key: str, value: Value | None) -> None:
        if value is not None:
            self.out[key] = value


def megatron_facts(args: TrainerArgs, catalog: FlagCatalog, flavour: str = "megatron") -> dict[str, Value]:
    """Layout facts (DESIGN.md field paths, plus extra keys rules use) from parsed trainer args."""
    r = _Reader(args, catalog)
    fork = flavour == "megatron-deepspeed"
    _, pp = _parallel(r, fork)
    _virtual_pipeline(r, fork, pp)
    _batch(r)
    _model(r, fork)
    _precision(r, fork)
    _recompute(r, fork)
    _pointers(r)
    r.put("arguments.incomplete", gap_fact(r.gap))  # only for a part that could hold any flag
    return r.out


def _parallel(r: _Reader, fork: bool) -> tuple[Value, Value]:
    """tp, pp, cp, ep, etp, sequence parallel, distributed optimizer; ZeRO and Ulysses for the forks."""
    out = r.out
    tp = r.setting("parallel.tp", "--tensor-model-parallel-size", fallback=1)
    pp = r.setting("parallel.pp", "--pipeline-model-parallel-size", fallback=1)
    r.setting("parallel.cp", "--context-parallel-size", fallback=1)
    # expert parallelism: Megatron-LM --expert-model-parallel-size; the deepspeedai fork
    # --moe-expert-parallel-size (DeepSpeed MoE); bigscience has no MoE
    ep_option = "--moe-expert-parallel-size" if fork else "--expert-model-parallel-size"
    r.setting("parallel.ep", ep_option, fallback=1)
    out["parallel.etp"] = _expert_tp(r, fork, tp)
    r.put("parallel.sequence_parallel", r.flag("--sequence-parallel") or r.default("--sequence-parallel", False))
    if r.flag("--sequence-parallel") is not None:
        r.put("sequence_parallel_flag", r.flag("--sequence-parallel"))  # as written, before tp 1 turns it off
    r.put(
        "parallel.distributed_optimizer",
        r.flag("--use-distributed-optimizer") or r.default("--use-distributed-optimizer", False),
    )
    _megatron_fsdp(r)
    _torch_fsdp2(r)
    if not fork:
        # hybrid sharding: the distributed optimizer's (and Megatron-FSDP's) states sharded over dp*cp/N
        # consecutive ranks and replicated N times (megatron/core/parallel_state.py: the intra-partial
        # data-parallel groups; megatron/core/distributed/fsdp/mcore_fsdp_adapter.py: HSDP when N > 1)
        r.put("parallel.dp_outer", r.value("--num-distributed-optimizer-instances"))
    if r.has("--use-tp-pp-dp-mapping"):
        r.put("parallel.use_tp_pp_dp_mapping", r.flag("--use-tp-pp-dp-mapping"))
    # without --deepspeed the fork builds Megatron's own optimizer and no DeepSpeed engine (megatron/training.py,
    # setup_model_and_optimizer: `if args.deepspeed:`), so there is no ZeRO stage at all
    deepspeed = (r.flag("--deepspeed") or r.absent(False, "no --deepspeed", options=("--deepspeed",))) if fork else None
    if deepspeed is not None and not (deepspeed.known and not deepspeed.value):
        # Megatron's own copy of the stage (zero.Init at 3); the JSON's stage is what DeepSpeed runs.
        # Both forks declare it type=int, default=1.0 (a float): deepspeed.md §6.2.
        r.setting(
            "parallel.zero_stage",
            "--zero-stage",
            fallback=1,
            note="--zero-stage not given: the fork's default 1.0 (declared type=int), i.e. stage 1",
        )
    if fork:
        r.setting("ds_sequence_parallel_size", "--ds-sequence-parallel-size", fallback=1)
        r.put(
            "megatron_deepspeed.no_pipeline_parallel",
            r.flag("--no-pipeline-parallel") or r.default("--no-pipeline-parallel", False),
        )
        r.put("megatron_deepspeed.pp_partition_method", r.value("--pp-partition-method", text))
    return tp, pp


# Megatron-FSDP's --data-parallel-sharding-strategy (megatron/training/arguments.py: choices no_shard, optim,
# optim_grads, optim_grads_params; default no_shard up to 0.17, optim_grads_params from 0.18;
# docs/user-guide/features/megatron_fsdp.md: DDP, ZeRO-1, ZeRO-2, ZeRO-3) as the layout's parallel.sharding
FSDP_SHARDING = {
    "no_shard": "none",
    "optim": "optimizer",
    "optim_grads": "gradients",
    "optim_grads_params": "parameters",
}


def _megatron_fsdp(r: _Reader) -> None:
    """--use-megatron-fsdp (0.14 on; --use-custom-fsdp in 0.12 and 0.13, an alias kept later) and its strategy."""
    fsdp = r.flag("--use-megatron-fsdp", "--use-custom-fsdp")
    if fsdp is None:
        return
    r.put("megatron_fsdp", fsdp)
    strategy = r.setting(
        "megatron_fsdp.strategy", "--data-parallel-sharding-strategy", text, fallback="optim_grads_params"
    )
    r.setting("megatron_fsdp.outer_strategy", "--outer-dp-sharding-strategy", text, fallback="no_shard")
    if strategy.known and strategy.value in FSDP_SHARDING:
        r.put(
            "parallel.sharding",
            Value(
                FSDP_SHARDING[strategy.value],
                strategy.span,
                strategy.origin,
                f"Megatron-FSDP --data-parallel-sharding-strategy {strategy.value}",
            ),
        )
    else:
        r.put("parallel.sharding", strategy)


def _torch_fsdp2(r: _Reader) -> None:
    """--use-torch-fsdp2 (0.10 on): torch's fully_shard wraps every layer and the model
    (megatron/core/distributed/torch_fully_sharded_data_parallel.py, TorchFullyShardedDataParallel.__init__), so
    parameters, gradients and optimizer states are sharded over the data-parallel group; validate_args forbids
    the distributed optimizer beside it ("--use-torch-fsdp2 is not supported with MCore's distributed optimizer")."""
    fsdp2 = r.flag("--use-torch-fsdp2")
    if fsdp2 is None:
        return
    r.put("torch_fsdp2", fsdp2)
    r.put(
        "parallel.sharding",
        Value(
            "parameters",
            fsdp2.span,
            "derived",
            "--use-torch-fsdp2: torch FSDP2 shards parameters, gradients and optimizer states",
        ),
    )


def _expert_tp(r: _Reader, fork: bool, tp: Value) -> Value:
    if fork:
        # the deepspeedai fork splits experts over TP only with --enable-expert-tensor-parallelism
        # (megatron/core/tensor_parallel/layers.py: moe and not enable_expert_tensor_parallelism -> 1)
        on = r.flag("--enable-expert-tensor-parallelism")
        if on is not None:
            return Value(
                tp.value,
                on.span,
                "derived" if tp.known else tp.origin,
                "--enable-expert-tensor-parallelism: experts are split like the dense layers (tp)",
            )
        if not r.has("--enable-expert-tensor-parallelism"):  # nothing in the list could change it
            return derived(1, "this trainer has no expert tensor parallelism")
        return r.absent(
            1,
            "experts are not split over tensor-parallel ranks without --enable-expert-tensor-parallelism",
            options=("--enable-expert-tensor-parallelism",),
        )
    etp = r.value("--expert-tensor-parallel-size")
    if etp is not None:
        return etp
    note = (
        "--expert-tensor-parallel-size not given: it defaults to the tensor-parallel size"
        if r.has("--expert-tensor-parallel-size")
        else f"Megatron {r.catalog.release} splits experts over the tensor-parallel ranks"
    )
    if not tp.known:
        return Value(None, tp.span, tp.origin, tp.note or note)
    if not r.has("--expert-tensor-parallel-size"):  # the release has no option that could change it
        return derived(tp.value, note, tp.span)
    return r.absent(tp.value, note, "derived", tp.span, options=("--expert-tensor-parallel-size",))


def _virtual_pipeline(r: _Reader, fork: bool, pp: Value) -> None:
    """parallel.vpp from whichever spelling is given (validate_args: at most one of them)."""
    out = r.out
    layers = r.value("--num-layers")
    if layers is not None:
        out["model.num_layers"] = layers
    elif (encoder := r.value("--encoder-num-layers")) is not None and encoder.known:
        # validate_args (megatron/training/arguments.py) sets num_layers to --encoder-num-layers when
        # --num-layers is absent; T5's decoder is built from that config too (examples/t5/pretrain_t5.py
        # model_provider: only encoder_config.num_layers is set apart)
        out["model.num_layers"] = derived(
            encoder.value, "--num-layers not given: validate_args takes --encoder-num-layers", encoder.span
        )
    chunk = r.value("--num-layers-per-virtual-pipeline-stage")
    stages = r.value("--num-virtual-stages-per-pipeline-rank")
    layout = r.value("--pipeline-model-parallel-layout", text)
    hybrid = r.value("--hybrid-layer-pattern", text)
    embed = r.flag("--account-for-embedding-in-pipeline-split")
    loss = r.flag("--account-for-loss-in-pipeline-split")
    standalone = r.flag("--standalone-embedding-stage")
    for key, v in (
        ("pipeline.account_for_embedding", embed),
        ("pipeline.account_for_loss", loss),
        ("pipeline.standalone_embedding_stage", standalone),
        ("parallel.pipeline_layout", layout),
        ("model.hybrid_layer_pattern", hybrid),
        ("parallel.uneven_first", r.value("--decoder-first-pipeline-num-layers")),
        ("parallel.uneven_last", r.value("--decoder-last-pipeline-num-layers")),
    ):
        r.put(key, v)
    given = [v for v in (chunk, stages, layout) if v is not None]
    out["parallel.vpp_spellings"] = derived(len(given), "ways of setting virtual pipeline stages given")
    # 0.14+ (and layouts, 0.13+) turn a single virtual stage off; older releases and the forks keep 1
    collapse = not fork and _release_key(r.catalog) >= (0, 14)
    if layout is not None:
        out["parallel.vpp"] = _vpp_from_layout(layout, pp)
    elif stages is not None:
        if stages.known and stages.value == 1 and collapse:
            out["parallel.vpp"] = derived(
                None, "--num-virtual-stages-per-pipeline-rank 1 means no interleaving", stages.span
            )
        else:
            out["parallel.vpp"] = stages
    elif chunk is not None:
        out["parallel.vpp"] = _vpp_from_chunk(chunk, layers, pp, embed, loss, standalone, fork, collapse)
    elif hybrid is not None:
        _hybrid_pattern(r, hybrid, pp)
    else:
        out["parallel.vpp"] = r.absent(None, "no virtual pipeline flag: no interleaving", options=_VPP_OPTIONS)


def _vpp_from_layout(layout: Value, pp: Value) -> Value:
    if not layout.known:
        return layout
    stages, why = layout_stages(layout.value)
    if stages is None:
        return Value(None, layout.span, "derived", f"cannot read the pipeline layout {layout.value!r}: {why}")
    n = len(stages)
    if not pp.known or not pp.value:
        return Value(None, layout.span, "unresolved", f"{n} layout stages over an unknown pp: {pp.note}")
    if n % pp.value:
        return Value(None, layout.span, "derived", f"{n} layout stages do not split over pp {pp.value}")
    vpp = n // pp.value
    return derived(
        vpp if vpp > 1 else None,
        f"{n} stages in the layout / pp {pp.value}" + ("" if vpp > 1 else ": no interleaving"),
        layout.span,
    )


def _vpp_from_chunk(
    chunk: Value, layers: Value | None, pp: Value, embed, loss, standalone, fork: bool, collapse: bool
) -> Value:
    """--num-layers-per-virtual-pipeline-stage k: vpp = (L' / pp) / k (megatron.md §2.13)."""
    if not chunk.known:
        return chunk
    if layers is None or not layers.known or not pp.known:
        why = "--num-layers is not given" if layers is None else (layers.note if not layers.known else pp.note)
        return unresolved(
            "virtual stages from --num-layers-per-virtual-pipeline-stage need the layers and pp: " + str(why),
            chunk.span,
        )
    total = layers.value + (1 if embed else 0) + (1 if loss else 0)
    stages = pp.value - (1 if standalone else 0)  # ≤0.10 --standalone-embedding-stage: pp-1 hold layers
    what = f"{total} layers" + (" (counting embedding/loss)" if embed or loss else "")
    if stages <= 0 or chunk.value <= 0:
        return Value(
            None, chunk.span, "derived", f"{what} over pp {pp.value} do not split into chunks of {chunk.value}"
        )
    if fork:
        # the forks floor-divide and only assert L % k == 0 (megatron/arguments.py)
        if total % chunk.value:
            return Value(None, chunk.span, "derived", f"{what} do not split into chunks of {chunk.value}")
        vpp = (total // stages) // chunk.value
    else:
        if total % stages or (total // stages) % chunk.value:
            return Value(
                None, chunk.span, "derived", f"{what} over pp {stages} do not split into chunks of {chunk.value}"
            )
        vpp = (total // stages) // chunk.value
    if vpp == 1 and collapse:
        return derived(
            None,
            f"--num-layers-per-virtual-pipeline-stage {chunk.value} equals the layers per stage: interleaving is off",
            chunk.span,
        )
    note = f"vpp = ({total} / {stages}) / {chunk.value} (layers per stage / --num-layers-per-virtual-pipeline-stage)"
    if vpp == 1:
        note += "; this release still runs the interleaved schedule with one chunk"
    return derived(vpp, note, chunk.span)


def _hybrid_pattern(r: _Reader, hybrid: Value, pp: Value) -> None:
    """--hybrid-layer-pattern (0.17+) sets num_layers and, with `|`, the virtual stages
    (megatron/core/models/hybrid/hybrid_layer_allocation.py: the main pattern precedes the first `/`)."""
    if not hybrid.known:
        r.out["parallel.vpp"] = hybrid
        return
    main = hybrid.value.split("/")[0]
    r.out["model.num_layers"] = derived(
        len(main.replace("|", "")), "layers in --hybrid-layer-pattern (it overrides --num-layers)", hybrid.span
    )
    segments = main.count("|") + 1
    if not pp.known or not pp.value:
        r.out["parallel.vpp"] = unresolved(f"{segments} pattern segments over an unknown pp", hybrid.span)
    elif segments == 1 or segments <= pp.value:
        r.out["parallel.vpp"] = derived(
            None, f"{segments} segment(s) in --hybrid-layer-pattern: no interleaving", hybrid.span
        )
    elif segments % pp.value:
        r.out["parallel.vpp"] = Value(
            None, hybrid.span, "derived", f"{segments} pattern segments do not split over pp {pp.value}"
        )
    else:
        r.out["parallel.vpp"] = derived(
            segments // pp.value, f"{segments} pattern segments / pp {pp.value}", hybrid.span
        )


def _batch(r: _Reader) -> None:
    # --micro-batch-size defaults to None in every release's parser (the flag catalog), and validate_args
    # multiplies it by dp: a launch without it stops at start-up. 1 is plint's assumption, not a reading.
    micro = r.value("--micro-batch-size")
    r.out["batch.micro"] = (
        micro
        if micro is not None
        else r.absent(
            1,
            "--micro-batch-size not given (the trainer's default is None and it stops without one): plint assumes 1",
            "assumed",
            options=("--micro-batch-size",),
        )
    )
    glob = r.value("--global-batch-size")
    r.out["batch.global"] = (
        glob
        if glob is not None
        else r.absent(
            None,
            "--global-batch-size not given: micro * dp (one micro-batch per step)",
            options=("--global-batch-size",),
        )
    )
    r.put("rampup_batch_size", r.value("--rampup-batch-size", text))


def _model(r: _Reader, fork: bool) -> None:
    out = r.out
    hidden = r.value("--hidden-size")
    heads = r.value("--num-attention-heads")
    for key, option, v in (
        ("model.hidden_size", "--hidden-size", hidden),
        ("model.num_attention_heads", "--num-attention-heads", heads),
    ):
        out[key] = (
            v
            if v is not None
            else r.absent(None, f"{option} not given (the trainer requires it)", "missing", options=(option,))
        )
    if "model.num_layers" not in out:
        out["model.num_layers"] = r.absent(
            None,
            "--num-layers not given (the trainer requires it)",
            "missing",
            options=("--num-layers", "--hybrid-layer-pattern"),
        )
    swiglu = r.flag("--swiglu")
    r.put("model.swiglu", swiglu)
    out["model.ffn_hidden_size"] = ffn_hidden_size(r, hidden, swiglu)
    _query_groups(r, heads)
    seq = r.value("--seq-length") or r.value("--encoder-seq-length")
    # validate_args (megatron/training/arguments.py) asserts --encoder-seq-length when --seq-length is absent
    out["model.seq_length"] = (
        seq
        if seq is not None
        else r.absent(
            None,
            "--seq-length not given, nor --encoder-seq-length (the trainer requires one)",
            "missing",
            options=("--seq-length", "--encoder-seq-length"),
        )
    )
    vocab = r.value("--vocab-size")
    out["model.vocab_size"] = (
        vocab
        if vocab is not None
        else r.absent(None, "--vocab-size not given: the tokenizer sets it at run time", options=("--vocab-size",))
    )
    r.put("model.max_position_embeddings", r.value("--max-position-embeddings"))
    for key, option in (
        ("model.make_vocab_size_divisible_by", "--make-vocab-size-divisible-by"),
        ("model.moe_ffn_hidden_size", "--moe-ffn-hidden-size"),
        ("model.kv_channels", "--kv-channels"),
        ("model.mtp_num_layers", "--mtp-num-layers"),
        ("train_iters", "--train-iters"),
        ("train_samples", "--train-samples"),
    ):
        r.put(key, r.value(option))
    _experts(r, fork)


def _multi_query(r: _Reader) -> Value | None:
    """One query group for BigCode's multi-query attention: `--attention-head-type multiquery` (bigcode-project/
    Megatron-LM 7c325cd megatron/arguments.py, also in Pai-Megatron-Patch) gives every query head one shared key
    and value projection of kv-channels (megatron/model/transformer.py ParallelAttention: `key_value` is a plain
    linear layer, not split over tp). Read whether or not the parser in force defines the flag: only those forks
    do, and in them it is how the launch sets its groups."""
    use = r.use("--attention-head-type", known_only=False)
    if use is None or not use.values:
        return None
    kind = from_word(use.values[0], text, use.option)
    if kind.value != "multiquery":
        return None
    return Value(1, kind.span, kind.origin, "--attention-head-type multiquery: one key/value head for every query head")


def _query_groups(r: _Reader, heads: Value | None) -> None:
    out = r.out
    multi_query = _multi_query(r)
    if multi_query is not None:
        out["model.num_query_groups"] = multi_query
        return
    if r.has("--num-key-value-heads"):
        # deepspeedai fork: GQA via --num-key-value-heads, defaulting to the head count
        kv = r.value("--num-key-value-heads")
        if kv is not None:
            out["model.num_query_groups"] = kv
            out["model.group_query_attention"] = Value(True, kv.span, kv.origin, "--num-key-value-heads")
            return
    else:
        gqa = r.flag("--group-query-attention")
        if gqa is not None:
            out["model.group_query_attention"] = gqa
            out["model.num_query_groups"] = r.value("--num-query-groups") or r.default("--num-query-groups", 1)
            return
    from_checkpoint = r.flag("--use-checkpoint-args")
    if from_checkpoint is not None and r.use("--load") is not None:
        # load_args_from_checkpoint sets num_query_groups and group_query_attention from the checkpoint's args,
        # whatever the command line says (megatron/training/checkpointing.py, core_r0.8.0: _set_arg(..., force=True))
        out["model.num_query_groups"] = Value(
            None,
            from_checkpoint.span,
            "unresolved",
            "--use-checkpoint-args: the checkpoint at --load sets the query groups (when it holds arguments)",
        )
        return
    if heads is not None and heads.known:
        out["model.num_query_groups"] = r.absent(
            heads.value,
            "without grouped-query attention every head is its own group",
            "derived",
            heads.span,
            options=_GQA_OPTIONS,
        )
    elif heads is not None:
        out["model.num_query_groups"] = Value(None, heads.span, "unresolved", "needs model.num_attention_heads")
    else:
        out["model.num_query_groups"] = r.absent(
            None,
            "one group per attention head; --num-attention-heads not given",
            options=_GQA_OPTIONS + ("--num-attention-heads",),
        )


def _experts(r: _Reader, fork: bool) -> None:
    out = r.out
    use = r.use("--num-experts")
    if use is not None and use.values:
        # the deepspeedai fork takes a list (nargs +, one count per --expert-interval group; 1 = dense)
        values = [from_word(w, integer, "--num-experts") for w in use.values]
        unknown = next((v for v in values if not v.known), None)
        if unknown is not None:
            out["model.num_experts"] = unknown
        else:
            top = max(values, key=lambda v: v.value)
            if top.value == 0 or (fork and top.value == 1):
                out["model.num_experts"] = derived(None, f"--num-experts {top.value}: a dense model", top.span)
            else:
                out["model.num_experts"] = top
    elif use is not None:
        out["model.num_experts"] = Value(None, use.flag_word.value_span, "unresolved", "--num-experts has no value")
    else:
        out["model.num_experts"] = r.absent(None, "--num-experts not given: a dense model", options=("--num-experts",))
    experts = out["model.num_experts"]
    if experts.value:
        topk_option = "--topk" if fork else "--moe-router-topk"
        r.setting("model.moe_topk", topk_option, fallback=1 if fork else 2)


def _precision(r: _Reader, fork: bool) -> None:
    out = r.out
    bf16, fp16 = r.flag("--bf16"), r.flag("--fp16")
    fp8 = r.value("--fp8-format", text)
    if fp8 is None and fork:  # the deepspeedai fork's older spellings (dest fp8_e4m3 / fp8_hybrid)
        for option, fmt in (("--fp8-hybrid", "hybrid"), ("--fp8-e4m3", "e4m3")):
            given = r.flag(option)
            if given is not None:
                fp8 = Value(fmt, given.span, given.origin, option)
    r.put("fp8", fp8)
    if bf16 is not None and fp16 is not None:
        out["precision"] = Value(None, fp16.span, "derived", "both --fp16 and --bf16 are given")
    elif fp8 is not None and fp8.known:
        base = "bf16" if bf16 else "fp16" if fp16 else "fp32"
        out["precision"] = Value("fp8", fp8.span, fp8.origin, f"fp8 ({fp8.value}) on {base} parameters")
    elif bf16 is not None:
        out["precision"] = Value("bf16", bf16.span, bf16.origin)
    elif fp16 is not None:
        out["precision"] = Value("fp16", fp16.span, fp16.origin)
    else:
        out["precision"] = r.absent(
            "fp32", "neither --bf16 nor --fp16: parameters stay fp32", options=_PRECISION_OPTIONS
        )


def _legacy_checkpointing(r: _Reader) -> bool:
    """Megatron-LM's recompute flags before v3.0, read as those releases read them (later ones exit on
    --checkpoint-activations and reject the others; PL502 says so): --checkpoint-activations is full
    recompute of chunks of --checkpoint-num-layers layers (v2.5) and, from v2.6, the uniform
    --activations-checkpoint-method with --activations-checkpoint-num-layers (megatron/arguments.py at
    the v2.5 and v2.6 tags). Sets the recompute fields and returns True when the launch uses them."""
    checkpoint = r.flag("--checkpoint-activations")
    method = r.use("--activations-checkpoint-method", known_only=False)
    if checkpoint is None and method is None:
        return False
    out = r.out
    given = method if method is not None else r.use("--checkpoint-activations")
    assert given is not None  # the flag was found above
    out["recompute.granularity"] = Value(
        "full",
        given.flag_word.value_span,
        given.flag_word.origin,
        f"{given.option}: full recompute, as Megatron-LM v2.x reads it",
    )
    method_word = method.values[0] if method is not None and method.values else None
    out["recompute.method"] = (
        from_word(method_word, text, method.option)
        if method is not None and method_word is not None
        else Value("uniform", given.flag_word.value_span, "derived", "--checkpoint-activations: uniform chunks")
    )
    for option in ("--activations-checkpoint-num-layers", "--checkpoint-num-layers"):
        use = r.use(option, known_only=False)
        if use is not None and use.values:
            out["recompute.num_layers"] = from_word(use.values[0], integer, use.option)
            break
    else:
        out["recompute.num_layers"] = r.absent(
            1,
            "chunks of one layer: the v2.x default",
            options=("--activations-checkpoint-num-layers", "--checkpoint-num-layers"),
        )
    return True


def _moe_layer_recompute(r: _Reader, fork: bool) -> Value | None:
    """Selective recompute from --moe-layer-recompute alone: from core 0.12 TransformerConfig.__post_init__
    (megatron/core/transformer/transformer_config.py at core_v0.12.0) turns the deprecated switch into
    recompute_granularity "selective" with "moe" among the recompute modules; earlier releases checkpoint the MoE
    layer on their own and leave the granularity unset."""
    if fork or _release_key(r.catalog) < (0, 12):
        return None
    given = r.flag("--moe-layer-recompute")
    if given is None:
        return None
    return Value(
        "selective",
        given.span,
        given.origin,
        "--moe-layer-recompute: selective recompute of the MoE layer (Megatron 0.12 on)",
    )


def _recompute(r: _Reader, fork: bool) -> None:
    out = r.out
    granularity = r.value("--recompute-granularity", text)
    activations = r.flag("--recompute-activations")
    if not fork and granularity is None and activations is None and _legacy_checkpointing(r):
        return
    checkpoint = r.flag("--checkpoint-activations") if fork else None
    if checkpoint is not None:
        # the forks checkpoint every --checkpoint-num-layers layers (megatron/model/transformer.py
        # takes this path before looking at recompute_granularity)
        out["recompute.granularity"] = Value(
            "full", checkpoint.span, checkpoint.origin, "--checkpoint-activations: full activation checkpointing"
        )
    elif activations is not None:
        out["recompute.granularity"] = Value(
            "selective",
            activations.span,
            activations.origin,
            "--recompute-activations selects selective recompute"
            + (" (overriding --recompute-granularity)" if granularity else ""),
        )
    elif granularity is not None:
        out["recompute.granularity"] = granularity
    elif (moe_layer := _moe_layer_recompute(r, fork)) is not None:
        out["recompute.granularity"] = moe_layer
    else:
        out["recompute.granularity"] = r.absent(None, "no recompute flag", options=_RECOMPUTE_OPTIONS)
    method = r.value("--recompute-method", text)
    out["recompute.method"] = (
        method
        if method is not None
        else r.absent(
            None, "--recompute-method not given", options=("--recompute-method", "--activations-checkpoint-method")
        )
    )
    layers = r.value("--recompute-num-layers")
    if checkpoint is not None and layers is None:
        r.setting("recompute.num_layers", "--checkpoint-num-layers", fallback=1)
    elif layers is not None:
        out["recompute.num_layers"] = layers
    elif out["recompute.granularity"].value is None:
        out["recompute.num_layers"] = r.absent(None, "no recompute", options=_RECOMPUTE_OPTIONS)
    else:
        out["recompute.num_layers"] = r.default("--recompute-num-layers")


def _pointers(r: _Reader) -> None:
    """Facts other readers and rules need: the DeepSpeed config, overlap flags, clipping."""
    out = r.out
    config = r.use("--deepspeed_config", "--deepscale_config", known_only=False)
    if config is not None and config.values:
        out["deepspeed.config_path"] = from_word(config.values[0], text, config.option)
        out["deepspeed.config_word"] = Value(config.values[0].display(), config.values[0].value_span)
    r.put("deepspeed.enabled", r.flag("--deepspeed", "--deepscale"))
    r.put("clip_grad", r.value("--clip-grad", number))
    r.setting("moe.token_dispatcher", "--moe-token-dispatcher-type", text)
    # present only when given (True) or when an unknown part could give them (unresolved): rules test for
    # their absence, and a flag that may be in an unknown part is not absent
    for key, option in (
        ("overlap_grad_reduce", "--overlap-grad-reduce"),
        ("overlap_param_gather", "--overlap-param-gather"),
        ("tp_comm_overlap", "--tp-comm-overlap"),
        ("defer_embedding_wgrad_compute", "--defer-embedding-wgrad-compute"),
        ("moe_a2a_overlap", "--overlap-moe-expert-parallel-comm"),
        ("moe_shared_expert_overlap", "--moe-shared-expert-overlap"),
        ("delay_wgrad_compute", "--delay-wgrad-compute"),
    ):
        given = r.flag(option)
        if given is None and r.has(option):
            maybe = r.absent(None, "", options=(option,))
            given = maybe if maybe.origin == "unresolved" else None
        r.put(key, given)
