"""The cost model's verdict on a normalised layout, computed once per layout and kept on it.

The bridge between the layout (what was read) and lint/cost (pure numbers): cluster facts from the
configuration override the catalog here, so rules and reporters see one estimate. Nothing is
imported from lint/cost until a layout has a complete model shape, so launches without one pay
nothing for the cost model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plint.bounds import clip
from plint.values import Value

if TYPE_CHECKING:
    from plint.checking.config import Settings
    from plint.cost import Estimate, ModelInput
    from plint.cost.pipeline_stages import Partition
    from plint.layout import FieldPath, Layout

_SHAPE: tuple[FieldPath, ...] = (
    "model.num_layers",
    "model.hidden_size",
    "model.num_attention_heads",
    "model.seq_length",
    "model.vocab_size",
)


def cost_input(layout: Layout, settings: Settings | None = None) -> ModelInput | None:
    """The cost model's input for a layout, or None when the shape or the cluster is not known."""
    cached = layout.extras.estimate
    if cached is not None:
        return cached[0]
    return _compute(layout, settings)[0]


def costed_input(layout: Layout, settings: Settings | None = None) -> ModelInput | None:
    """The input the layout's estimate was made of: cost_input with the launch's own pipeline partition where it is
    uneven (uneven_stages), so that a variant keeping pp, vpp and the layers (another recompute, micro-batch or
    sharding) is costed rank by rank as the launch is."""
    inp = cost_input(layout, settings)
    uneven = uneven_stages(layout, inp) if inp is not None else None
    return uneven_input(inp, uneven) if inp is not None and uneven else inp


def layout_estimate(layout: Layout, settings: Settings | None = None) -> Estimate | None:
    """Memory, time, bubble and MFU of the layout's step; None when it cannot be estimated."""
    cached = layout.extras.estimate
    if cached is not None:
        return cached[1]
    return _compute(layout, settings)[1]


def estimate_gaps(layout: Layout) -> list[str]:
    """Why the layout has no memory and step estimate, `fields: why` per reason; [] when it has one.
    Only reports call this (it imports the cost model): a launch that has an estimate pays nothing."""
    if layout_estimate(layout) is not None:
        return []
    from plint.cost.model_input import why_no_input

    gaps = why_no_input(layout)
    gpu = layout.get("cluster.gpu")
    if not gaps and gpu is not None and gpu.value is not None:
        from plint.catalog.hardware import lookup_gpu

        if lookup_gpu(gpu.value) is None:
            gaps.append(("cluster.gpu", gpu.note or f"{gpu.value!r} is not in the hardware catalog"))
    by_why: dict[str, list[str]] = {}  # fields missing for one reason are named together
    for key, why in gaps:
        by_why.setdefault(why, []).append(key)
    return [clip(f"{', '.join(keys)}: {why}") for why, keys in by_why.items()]


# Vocabulary sizes of the tokenizers Megatron ships vocabulary files for (the files' token counts).
TOKENIZER_VOCAB = {"GPT2BPETokenizer": 50257, "BertWordPieceLowerCase": 30522, "BertWordPieceCase": 28996}
# Any other tokenizer decides the vocabulary at run time: 32,000 (Llama-2, Mistral) is the smallest of the
# common LLM tokenizers, so the embedding and logits parts are a lower bound and never cause a false OOM.
FALLBACK_VOCAB = 32000


def _compute(layout: Layout, settings: Settings | None) -> tuple:
    inp = est = None
    if all(layout.value(k) is not None for k in _SHAPE if k != "model.vocab_size"):
        from plint.cost import ModelInput, estimate

        vocab, why = _assumed_vocab(layout)
        inp = ModelInput.from_layout(layout, vocab_size=vocab)
        if inp is not None and _padded_to(layout) is not None:
            # the padded size is the table's size: pad no further than to a multiple of tp
            inp = inp.replace(vocab_size=vocab, make_vocab_size_divisible_by=1)
        if inp is not None and settings is not None:
            inp = _with_cluster_settings(inp, settings)
        uneven = uneven_stages(layout, inp) if inp is not None else None
        est = estimate(uneven_input(inp, uneven) if uneven else inp) if inp is not None else None
        if est is not None and inp is not None and uneven:
            est = est.with_assumption(uneven[1])
        if est is not None and why:
            est = est.with_assumption(why)
        if est is not None and inp is not None and inp.lora_rank:
            from plint.cost.adapters import adapter_note

            note = adapter_note(inp)
            assert note is not None  # adapter_note describes every input with a LoRA rank
            est = est.with_assumption(note)
        if est is not None and layout.extras.gpu_ambiguity:
            est = est.with_assumption(layout.extras.gpu_ambiguity)  # the memory the estimate judges by
        unmodelled = unmodelled_features(layout)
        if est is not None and unmodelled:
            est = est.with_assumption(
                "not modelled: " + ", ".join(unmodelled) + " (memory and time rules stay silent on this launch)"
            )
        memory_unmodelled = unmodelled_memory(inp) if inp is not None and not unmodelled else []
        if est is not None and memory_unmodelled:
            est = est.with_assumption(
                "memory not modelled: "
                + "; ".join(memory_unmodelled)
                + "; counted as for bf16, so the memory rules stay silent on this launch"
            )
        time_unmodelled = unmodelled_time(inp) if inp is not None and not unmodelled else []
        if est is not None and time_unmodelled:
            est = est.with_assumption(
                "time not modelled: " + "; ".join(time_unmodelled) + "; the time rules stay silent on this launch"
            )
        if inp is not None:
            layout.extras.host_memory = host_memory(layout, inp, settings, est)
        layout.extras.estimate_unmodelled = unmodelled
        layout.extras.memory_unmodelled = memory_unmodelled
        layout.extras.time_unmodelled = time_unmodelled
    layout.extras.estimate = (inp, est)
    return inp, est


# Flags that change memory or time in ways the cost model does not represent. With any of them the
# estimate is still reported, but no rule turns it into a verdict: a wrong "out of memory" on a
# launch that runs costs users more than a missed hint.
UNMODELLED_FLAGS = {
    # uneven pipelines (--decoder-first/last-pipeline-num-layers, --account-for-embedding/loss-in-pipeline-
    # split, --pipeline-model-parallel-layout) are costed rank by rank: plint.cost.pipeline_stages
    "--cpu-offloading": "activation offloading",
    "--optimizer-cpu-offload": "optimizer offloading",
    "--fine-grained-activation-offloading": "activation offloading",
    # an entry point's own model: examples/mimo/train.py builds it with --model-provider (vision and audio
    # encoders around the language model the shape flags describe); examples/multimodal/multimodal_args.py's
    # --freeze-LM / --freeze-ViT leave parts without gradients and optimizer states
    "--model-provider": "a model built by the entry point's own model provider",
    "--freeze-LM": "frozen parameters (no gradients or optimizer states for them)",
    "--freeze-ViT": "frozen parameters (no gradients or optimizer states for them)",
    # Mamba layers (megatron/core/models/mamba, pretrain_mamba.py): their states and activations are not a
    # transformer layer's
    "--hybrid-override-pattern": "Mamba layers (a hybrid model)",
    "--hybrid-layer-pattern": "Mamba layers (a hybrid model)",
    "--is-hybrid-model": "Mamba layers (a hybrid model)",
}
# Entry points that build something other than the transformer the shape flags describe: Mamba stacks
# (pretrain_mamba.py builds MambaModel, all Mamba layers unless a pattern says otherwise) and vision-language
# models (a vision encoder and projector beside the language model)
UNMODELLED_ENTRYPOINTS = {
    "pretrain_mamba.py": "Mamba layers (a hybrid model)",
    "pretrain_hybrid.py": "Mamba layers (a hybrid model)",
    "pretrain_vlm.py": "a vision encoder (a vision-language model)",
}


def unmodelled_features(layout: Layout) -> list[str]:
    """What the launch uses that the cost model leaves out, each named once."""
    args = layout.extras.trainer_args
    get = getattr(args, "get", None)
    found: list[str] = []
    if get is not None:
        for flag, what in UNMODELLED_FLAGS.items():
            if get(flag) is not None and what not in found:
                found.append(what)
        entry = str(layout.value("entrypoint") or "").rsplit("/", 1)[-1]
        if entry in UNMODELLED_ENTRYPOINTS and UNMODELLED_ENTRYPOINTS[entry] not in found:
            found.append(UNMODELLED_ENTRYPOINTS[entry])
        if HYBRID in found and _hybrid_costed(entry, args):
            found.remove(HYBRID)  # a pattern of Mamba, attention and MLP layers: plint.cost.memory costs each
        if _cuda_graphs(args):
            # captured graphs keep static inputs, outputs and a private pool of the captured activations for the run
            # (megatron/core/transformer/cuda_graphs.py; TE's make_graphed_callables), which plint does not count
            found.append("CUDA graphs")
        modules = get("--recompute-modules")
        if modules is not None:
            from plint.cost.memory import COSTED_RECOMPUTE_MODULES

            if _recompute_modules(args) - COSTED_RECOMPUTE_MODULES:
                found.append(
                    "selective recompute of modules plint does not cost ("
                    + ", ".join(sorted(_recompute_modules(args) - COSTED_RECOMPUTE_MODULES))
                    + ")"
                )
    facts = layout.extras.facts
    if "catalog.unmodelled" in facts:  # a vision-language model's encoders beside its language model
        found.append(facts["catalog.unmodelled"].value)
    if "fsdp.offload" in facts:
        found.append("FSDP CPU offload of parameters and gradients")
    for part in ("offload_optimizer_device", "offload_param_device"):  # accelerate's own DeepSpeed config
        if f"accelerate.{part}" in facts:
            found.append(f"ZeRO {part[:-7].replace('_', ' ')} to {facts[f'accelerate.{part}'].value}")
    ds = layout.extras.ds_config
    zero = layout.value("parallel.zero_stage")
    for part in ("offload_optimizer", "offload_param"):
        device = getattr(getattr(ds, part, None), "value", None)
        # CPU offload is costed as DeepSpeed's estimators count it (memory._offloaded, host_memory_bytes) where
        # ZeRO runs; NVMe, an unknown device, and offload without ZeRO are not
        if device not in (None, "none") and not (device == "cpu" and isinstance(zero, int) and zero > 0):
            found.append(f"ZeRO {part.replace('_', ' ')} to {device}")
    return found


HYBRID = "Mamba layers (a hybrid model)"


def _hybrid_costed(entry: str, args) -> bool:
    """Whether the launch's entry point builds a hybrid stack from a pattern with only layers the cost model knows
    (plint.cost.params.hybrid_modelled); --is-hybrid-model without a pattern allocates the layers by ratios, which
    plint does not follow."""
    from plint.cost.model_input import HYBRID_ENTRY_POINTS
    from plint.cost.params import HYBRID_MODELLED_SYMBOLS

    if entry not in HYBRID_ENTRY_POINTS:
        return False

    text = _flag_text(args, "--hybrid-layer-pattern") or _flag_text(args, "--hybrid-override-pattern")
    symbols = set((text or "").strip("'\"").split("/")[0].replace("|", ""))
    return bool(symbols) and symbols <= HYBRID_MODELLED_SYMBOLS


def unmodelled_memory(inp: ModelInput) -> list[str]:
    """What moves the memory of a launch in ways the cost model does not count, while its time is
    modelled: nothing at present. FP8 is counted: Transformer Engine's cached fp8 weights and transposes
    (memory.fp8_weight_cache_bytes, none with --fp8-param-gather) and its fp8-saved GEMM inputs
    (memory.activation_bytes_per_token)."""
    return []


def unmodelled_time(inp: ModelInput) -> list[str]:
    """What moves the step time of a launch in ways the cost model does not count, while its memory is
    modelled: DeepSpeed's CPU offload (the optimizer step on the CPU, the gradients and parameters over PCIe)."""
    found = []  # T5's decoder and cross-attention and a hybrid stack's Mamba layers are costed (estimate.py)
    if inp.offload_optimizer:
        found.append("ZeRO optimizer offload to cpu (the CPU step and the host transfers)")
    if inp.offload_param:
        found.append("ZeRO parameter offload to cpu")
    return found


def _cuda_graphs(args) -> bool:
    """Whether the launch captures CUDA graphs: --cuda-graph-impl local|transformer_engine (choices: none, local,
    transformer_engine), or the older --enable-cuda-graph / --external-cuda-graph switches."""
    impl = _flag_text(args, "--cuda-graph-impl")
    return (impl is not None and impl.lower() != "none") or any(
        args.get(flag) is not None for flag in ("--enable-cuda-graph", "--external-cuda-graph")
    )


def _recompute_modules(args) -> set[str]:
    """The words given to --recompute-modules (nargs='*')."""
    use = args.get("--recompute-modules")
    words = getattr(use, "values", None) or ([use.value] if getattr(use, "value", None) is not None else [])
    return {w.text for w in words if getattr(w, "text", None)} or {"?"}


# Hugging Face tokenizers recognised by name (--tokenizer-model / --tokenizer-name-or-path), with the
# vocab_size of the model's published config.json. Checked in order: the first substring that matches wins.
TOKENIZER_NAMES = (
    ("llama-3", 128256),
    ("llama3", 128256),
    ("llama-2", 32000),
    ("llama2", 32000),
    ("mixtral", 32000),
    ("mistral-7b-v0.1", 32000),
    ("deepseek-v3", 129280),
    ("gpt2", 50257),
)


def _flag_text(args, option: str) -> str | None:
    return args.text(option) if args is not None else None


def _fact_true(layout: Layout, key: str) -> bool:
    fact = layout.extras.facts.get(key)
    return fact is not None and fact.value is True


def uneven_stages(layout: Layout, inp: ModelInput) -> tuple[Partition, str] | None:
    """Megatron's partition of the layers over the pipeline ranks when the launch makes it uneven
    (--decoder-first/last-pipeline-num-layers, --account-for-embedding/loss-in-pipeline-split,
    --pipeline-model-parallel-layout; plint.cost.pipeline_stages), with the note the estimate carries;
    None for an even split or one Megatron rejects at start-up (the PL1xx rules report that)."""
    from plint.cost import pipeline_stages as stages

    if inp.pp < 2:
        return None
    value = layout.value
    first, last = value("parallel.uneven_first"), value("parallel.uneven_last")
    text = value("parallel.pipeline_layout")
    # trainer facts, not layout fields (the layout holds no pipeline.*): the flags as written
    embedding, loss = (_fact_true(layout, f"pipeline.account_for_{part}") for part in ("embedding", "loss"))
    if text is not None:
        from plint.reading.sources.megatron import layout_stages

        unrolled, _ = layout_stages(str(text))
        split = stages.from_layout(unrolled, inp.pp, inp.num_layers, str(text)) if unrolled else None
    elif first is not None or last is not None:
        if not all(isinstance(n, int) for n in (first, last) if n is not None):
            return None
        split = stages.first_last(inp.num_layers, inp.pp, inp.vpp, first, last)
    elif embedding or loss:
        split = stages.account_for(inp.num_layers, inp.pp, inp.vpp, embedding, loss)
    else:
        return None
    if not isinstance(split, stages.Partition) or split.is_even():
        return None
    ranks = split.per_rank()
    shown = ranks if len(ranks) <= 8 else (*ranks[:3], "...", *ranks[-3:])
    return split, (
        f"uneven pipeline ({split.how}): layers per rank {', '.join(map(str, shown))}; the step waits "
        f"for the slowest rank, memory is the busiest rank's own"
    )


# the ModelInput fields that carry a pipeline's split of the layers (None throughout: an even split)
SPLIT_FIELDS = (
    "pipeline_stage_layers",
    "pipeline_chunk_layers",
    "first_stage_layers",
    "last_stage_layers",
    "pipeline_split",
)


def split_fields(part: Partition) -> dict:
    """SPLIT_FIELDS of a partition of the layers: each rank's own layers, by virtual stage, and its flags."""
    ranks = part.per_rank()
    return dict(zip(SPLIT_FIELDS, (ranks, part.layers, ranks[0], ranks[-1], part.how), strict=True))


def uneven_input(inp: ModelInput, uneven: tuple[Partition, str]) -> ModelInput:
    """The input an uneven pipeline is costed with (uneven_stages): each rank's own layers."""
    return inp.replace(**split_fields(uneven[0]))


def _padded_to(layout: Layout) -> int | None:
    """The bigscience fork's --pad-vocab-size-to: the padded vocabulary itself (its
    _vocab_size_with_padding returns it as given, no further padding)."""
    text = _flag_text(layout.extras.trainer_args, "--pad-vocab-size-to")
    return int(text) if text is not None and text.isdigit() and int(text) > 0 else None


def _assumed_vocab(layout: Layout) -> tuple[int | None, str | None]:
    """The vocabulary to estimate with when no --vocab-size is written, and why."""
    padded = _padded_to(layout)
    if padded is not None:
        return padded, f"vocabulary padded to {padded:,} (--pad-vocab-size-to)"
    if layout.value("model.vocab_size") is not None:
        return None, None
    args = layout.extras.trainer_args
    tokenizer = _flag_text(args, "--tokenizer-type")
    if tokenizer in TOKENIZER_VOCAB:
        return TOKENIZER_VOCAB[tokenizer], f"vocabulary {TOKENIZER_VOCAB[tokenizer]:,} ({tokenizer}'s vocabulary file)"
    for option in ("--tokenizer-model", "--tokenizer-name-or-path", "--vocab-file"):
        name = _flag_text(args, option) or ""
        for key, size in TOKENIZER_NAMES:
            if key in name.lower():
                return size, f"vocabulary {size:,} (the tokenizer {option} names: {name.rsplit('/', 1)[-1]})"
    return FALLBACK_VOCAB, (
        f"vocabulary unknown (set by the tokenizer at run time): {FALLBACK_VOCAB:,} assumed, "
        "the smallest common one, so embeddings and logits are a lower bound"
    )


def _with_cluster_settings(inp: ModelInput, settings: Settings) -> ModelInput:
    """[tool.plint] cluster facts win over the catalog's typical build."""
    cluster = settings.cluster or {}
    changes = {}
    if cluster.get("inter-node-bandwidth-gbps"):
        changes["nic_gbps"] = float(cluster["inter-node-bandwidth-gbps"])
    if cluster.get("nvlink-domain"):
        changes["nvlink_domain"] = int(cluster["nvlink-domain"])
    return inp.replace(**changes) if changes else inp


def _offloaded(layout: Layout) -> tuple[str | None, str | None]:
    """(optimizer, parameter) offload devices: the DeepSpeed JSON's, the config the script builds, accelerate's."""
    facts = layout.extras.facts
    ds = layout.extras.ds_config
    found = []
    for part in ("offload_optimizer", "offload_param"):
        value = getattr(getattr(ds, part, None), "value", None) if ds is not None else None
        for key in (f"offload.{part}", f"accelerate.{part}_device"):
            if value in (None, "none") and key in facts:
                value = facts[key].value
        found.append(str(value) if value not in (None, "none") else None)
    return found[0], found[1]


def host_memory(layout: Layout, inp: ModelInput, settings: Settings | None, est: Estimate | None) -> dict | None:
    """CPU memory per node for ZeRO CPU offload (the estimate's host_memory_gib, by DeepSpeed's estimators:
    plint.cost.host_memory) and the node's RAM when known."""
    from plint.cost.host_memory import slurm_mem_gib

    optimizer, params = _offloaded(layout)
    if optimizer != "cpu" or inp.lora_rank or est is None or est.host_memory_gib is None:
        return None
    ram = None
    configured = getattr(settings, "host_memory_gib", None)
    job = layout.extras.slurm
    mem = getattr(job, "options", {}).get("mem") if job is not None else None
    if configured:
        ram = Value(float(configured), None, "literal", "[tool.plint] host-memory")
    elif mem is not None and mem.value is not None and slurm_mem_gib(str(mem.value)) is not None:
        ram = Value(slurm_mem_gib(str(mem.value)), mem.span, mem.origin, f"sbatch --mem={mem.value}")
    what = f"ZeRO-{inp.zero_stage} offload of the optimizer{' and parameters' if params == 'cpu' else ''} to the CPU"
    return {"gib": est.host_memory_gib, "ram": ram, "what": what}
