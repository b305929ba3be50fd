"""The cost model's reading of a normalised Layout: the model shape, the cluster, the parallel sizes and
the architecture's details, and the trainer flags the layout does not carry. plint.cost.model_input
builds ModelInput and its Options from them; why_no_input says which field keeps it from doing so.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TypedDict
from plint.bounds import NumberTooLong, parse_int

if TYPE_CHECKING:
    from plint.layout import FactKey, FieldPath, Layout


_SHAPE_FIELDS: tuple[FieldPath, ...] = (
    "model.num_layers",
    "model.hidden_size",
    "model.num_attention_heads",
    "model.seq_length",
)
_MODEL_PARALLEL: tuple[FieldPath, ...] = ("parallel.tp", "parallel.pp", "parallel.cp")


class _Shape(TypedDict):
    """The model shape from_layout cannot do without."""

    num_layers: int
    hidden_size: int
    num_attention_heads: int
    seq_length: int
    vocab_size: int


def model_shape(layout: Layout, vocab_size: int | None) -> _Shape | None:
    """The layout's model shape; `vocab_size` stands in for a vocabulary it does not give; None when a size is missing."""
    v = layout.value
    layers, hidden, heads, seq = (positive_int(v(k)) for k in _SHAPE_FIELDS)
    vocab = positive_int(v("model.vocab_size"))
    if vocab is None:
        vocab = vocab_size
    if layers is None or hidden is None or heads is None or seq is None or vocab is None:
        return None
    return _Shape(num_layers=layers, hidden_size=hidden, num_attention_heads=heads, seq_length=seq, vocab_size=vocab)


def cluster_size(layout: Layout) -> tuple[int, int, int] | None:
    """(world size, GPUs per node, nodes); None when the number of GPUs is not known. A node size that does not
    divide the world is taken as 8 GPUs (or the world when smaller)."""
    v = layout.value
    world = positive_int(v("cluster.world_size"))
    per_node = positive_int(v("cluster.gpus_per_node")) or positive_int(v("cluster.workers_per_node"))
    nnodes = positive_int(v("cluster.nnodes"))
    if world is None and per_node and nnodes:
        world = per_node * nnodes
    if world is None:
        return None
    if not per_node or world % per_node:
        per_node = min(world, 8)
    return world, per_node, max(1, world // per_node)


def parallel_sizes(layout: Layout, world: int, any_layout: bool) -> tuple[int, int, int] | None:
    """(tp, pp, cp); None when they do not divide the world, unless `any_layout` (then all 1)."""
    v = layout.value
    tp, pp, cp = (positive_int(v(k)) or 1 for k in _MODEL_PARALLEL)
    ulysses = _fact_int(layout, "ds_sequence_parallel_size")
    if cp == 1 and ulysses and ulysses > 1:
        # DeepSpeed-Ulysses splits the sequence like context parallelism (s/sp tokens per GPU, ZeRO
        # sharded over dp*sp); its all-to-all is costed as CP's exchange, close in volume.
        cp = ulysses
    if world % (tp * pp * cp):
        if not any_layout:
            return None
        tp = pp = cp = 1  # the model, cluster and batch still serve a planner looking for a valid layout
    return tp, pp, cp


def architecture_fields(layout: Layout, args: ParsedTrainerFlags, num_layers: int) -> dict[str, Any]:
    """ModelInput's fields of the model's architecture beyond its shape: widths, biases, norms, experts, multi-latent
    attention and the hybrid stack."""
    v = layout.value
    experts = positive_int(v("model.num_experts"))
    return dict(
        ffn_hidden_size=positive_int(v("model.ffn_hidden_size")),
        num_query_groups=positive_int(v("model.num_query_groups")),
        kv_channels=positive_int(v("model.kv_channels")),
        # --quick-geglu is gated too (megatron/training/arguments.py core_args_from_args: gated_linear_unit True)
        swiglu=bool(v("model.swiglu")) or args.present("--quick-geglu"),
        activation_clamp=_activation_clamp(args),
        untie_embeddings=bool(v("model.untie_embeddings")) or args.present("--untie-embeddings-and-output-weights"),
        # the deepspeedai fork spells the choices in lower case (layernorm, rmsnorm)
        normalization="RMSNorm"
        if (args.text("--normalization") or v("model.normalization") or "").lower() == "rmsnorm"
        else "LayerNorm",
        # a Hugging Face model's own switches (plint.catalog.models) where no Megatron flag says
        add_bias_linear=not args.present("--disable-bias-linear") and v("model.add_bias_linear") is not False,
        add_qkv_bias=args.present("--add-qkv-bias") or v("model.add_qkv_bias") is True,
        qk_layernorm=args.present("--qk-layernorm"),
        hidden_dropout=_probability(args.text("--hidden-dropout"), _number(v("model.hidden_dropout"), 0.1)),
        attention_dropout=_probability(args.text("--attention-dropout"), _number(v("model.attention_dropout"), 0.1)),
        max_position_embeddings=positive_int(v("model.max_position_embeddings")),
        make_vocab_size_divisible_by=positive_int(v("model.make_vocab_size_divisible_by")) or 128,
        num_experts=experts if experts and experts > 1 else None,
        moe_topk=positive_int(v("model.moe_topk")) or 2,
        moe_ffn_hidden_size=positive_int(v("model.moe_ffn_hidden_size")),
        moe_shared_expert_size=positive_int(args.text("--moe-shared-expert-intermediate-size"))
        or positive_int(v("model.moe_shared_expert_size"))
        or 0,
        moe_grouped_gemm=args.present("--moe-grouped-gemm"),
        moe_router_groups=positive_int(args.text("--moe-router-num-groups")),
        moe_router_group_topk=positive_int(args.text("--moe-router-group-topk")),
        moe_layer_freq=_moe_layers(layout, args, num_layers) if experts and experts > 1 else 1,
        encoder_decoder=_encoder_decoder(layout),
        decoder_seq_length=positive_int(args.text("--decoder-seq-length")),
        mtp_num_layers=positive_int(v("model.mtp_num_layers")) or 0,
        multi_latent_attention=args.present("--multi-latent-attention"),
        q_lora_rank=positive_int(args.text("--q-lora-rank")),
        kv_lora_rank=positive_int(args.text("--kv-lora-rank")) or 32,
        qk_head_dim=positive_int(args.text("--qk-head-dim")) or 128,
        qk_pos_emb_head_dim=positive_int(args.text("--qk-pos-emb-head-dim")) or 64,
        v_head_dim=positive_int(args.text("--v-head-dim")) or 128,
        hybrid_pattern=_hybrid_pattern(layout, args),
        mamba_state_dim=positive_int(args.text("--mamba-state-dim")) or 128,
        mamba_head_dim=positive_int(args.text("--mamba-head-dim")) or 64,
        mamba_num_groups=positive_int(args.text("--mamba-num-groups")) or 8,
        mamba_num_heads=positive_int(args.text("--mamba-num-heads")),
    )


def attention_and_loss(layout: Layout, args: ParsedTrainerFlags) -> dict[str, Any]:
    """Options the attention implementation and the loss set, for Megatron launches (megatron/core/
    transformer/transformer_config.py: transformer_impl 'transformer_engine' and attention_backend auto by
    default; megatron/core/model_parallel_config.py: cross_entropy_loss_fusion False, cross_entropy_fusion_impl
    'native'). --transformer-impl local builds megatron-core's DotProductAttention, which has no flash path;
    --attention-backend unfused or local picks the unfused core under Transformer Engine too."""
    if layout.value("trainer") not in ("megatron", None) or args.args is None:
        return {}
    impl = (args.text("--transformer-impl") or "transformer_engine").lower()
    backend = (args.text("--attention-backend") or "auto").lower()
    local = impl == "local"
    fusion = args.present("--cross-entropy-loss-fusion")
    loss = ("te" if (args.text("--cross-entropy-fusion-impl") or "native") == "te" else "fused") if fusion else "native"
    switches = {
        "flash_attention": not (local or backend in ("unfused", "local")),
        "attention_score_buffer": local or backend == "local",
        "transformer_engine": not local,
        "cross_entropy": loss,
        "fp8_param_gather": args.present("--fp8-param-gather"),
        "bias_swiglu_fusion": not args.present("--no-bias-swiglu-fusion"),
        "masked_softmax_fusion": not args.present("--no-masked-softmax-fusion"),
    }
    if args.present("--defer-embedding-wgrad-compute"):
        limit = args.text("--wgrad-deferral-limit") or "0"
        switches["wgrad_deferral_limit"] = int(limit) if limit.isdigit() else 0
    group = args.text("--microbatch-group-size-per-virtual-pipeline-stage")
    if group is not None and group.isdigit() and int(group) > 0:
        switches["microbatch_group"] = int(group)
    recipe = (args.text("--fp8-recipe") or "").lower()
    if recipe in ("delayed", "tensorwise", "mxfp8", "blockwise"):
        switches["fp8_recipe"] = recipe
    return switches


# Entry points that build Megatron's T5Model (the root one until megatron-core 0.13, examples/t5/ after)
ENCODER_DECODER_ENTRY_POINTS = ("pretrain_t5.py",)


def _encoder_decoder(layout: Layout) -> bool:
    """Whether the launch trains Megatron's encoder-decoder (T5) model: its entry point builds T5Model. (A Hugging Face
    T5 read from config.json counts its encoder's and decoder's layers together in model.num_layers, and is costed as
    that many layers.)"""
    entry = str(layout.value("entrypoint") or "").rsplit("/", 1)[-1]
    return entry in ENCODER_DECODER_ENTRY_POINTS


# Entry points that build the hybrid stack from the pattern (pretrain_hybrid.py: hybrid_builders.py HybridModel;
# pretrain_mamba.py its earlier name); pretrain_gpt.py builds a GPTModel and has no use for one
HYBRID_ENTRY_POINTS = ("pretrain_hybrid.py", "pretrain_mamba.py")


def _hybrid_pattern(layout: Layout, args: ParsedTrainerFlags) -> str | None:
    """The hybrid stack's layer symbols (ModelInput.hybrid_pattern), or None without a pattern or a hybrid entry point."""
    if str(layout.value("entrypoint") or "").rsplit("/", 1)[-1] not in HYBRID_ENTRY_POINTS:
        return None
    text = args.text("--hybrid-layer-pattern") or args.text("--hybrid-override-pattern")
    if not text:
        return None
    return text.strip().strip("'\"").split("/")[0].replace("|", "") or None


def cublas_workspace_config(text: str | None) -> int | None:
    """Bytes per cuBLAS handle that CUBLAS_WORKSPACE_CONFIG asks PyTorch for: the sum of SIZE KiB x COUNT over its
    ":SIZE:COUNT" pairs (aten/src/ATen/cuda/CublasHandlePool.cpp parseChosenWorkspaceSize); None when unset or
    unparseable (PyTorch then takes its default)."""

    pairs = re.findall(r":([0-9]+):([0-9]+)", text or "")
    return sum(int(size) * 1024 * int(count) for size, count in pairs) if pairs else None


def launch_env(layout: Layout, name: str) -> str | None:
    """The text of an environment variable the launch command sees (exported before it, or set on it), when known."""
    chain = layout.extras.chain
    command = getattr(chain, "command", None)
    found = None
    while command is not None:  # innermost first: the first setting found wins
        var = command.assignments.get(name) or (
            command.env.get(name) if command.env.get(name) is not None and command.env[name].exported else None
        )
        if var is not None:
            found = var
            break
        command = command.parent
    if found is None or not all(part.known for part in found.value):
        return None
    return "".join(part.text for part in found.value)


def recomputed_modules(args: ParsedTrainerFlags) -> tuple[str, ...]:
    """The words of --recompute-modules (nargs '*'), or Megatron's default, core_attn alone; with "moe" added by
    --moe-layer-recompute (TransformerConfig.__post_init__ from core 0.12; earlier releases checkpoint the MoE
    layer themselves, the same work)."""
    use = args.args.get("--recompute-modules") if args.args is not None else None
    words = tuple(w.text for w in (getattr(use, "values", None) or ()) if getattr(w, "text", None)) or ("core_attn",)
    if args.present("--moe-layer-recompute") and "moe" not in words:
        words += ("moe",)
    return words


def async_tp_backward(release: str | None, args: ParsedTrainerFlags) -> bool:
    """Whether the trainer runs the backward's tensor-parallel collectives under its GEMMs. The bigscience
    fork keeps Megatron-LM's synchronous all-reduce of 2021 (megatron/mpu/layers.py); elsewhere it is
    asynchronous, and --no-async-tensor-model-parallel-allreduce turns that off only where the code still
    reads it: megatron-core up to 0.6 and the deepspeedai fork (0.7 on keep the flag and ignore it)."""
    if release == "bigscience":
        return False
    if not args.present("--no-async-tensor-model-parallel-allreduce"):
        return True
    if release == "megatron-deepspeed":
        return False
    major, _, minor = (release or "").partition(".")
    return not (major == "0" and minor.isdigit() and int(minor) <= 6)


def pipeline_scatter_gather(release: str | None, args: ParsedTrainerFlags) -> bool:
    """Whether the trainer splits each pipeline send over the TP ranks (Options.pp_scatter_gather): the
    Megatron-DeepSpeed forks keep Megatron-LM's p2p of 2021, which does unless
    --no-scatter-gather-tensors-in-pipeline (megatron/p2p_communication.py _communicate; microsoft f4157be,
    bigscience 8387ae1). Megatron-Core's p2p (megatron/core/pipeline_parallel/p2p_communication.py, since
    NVIDIA/Megatron-LM 3c92fa93b5) sends the whole tensor from every TP rank and ignores the flag."""
    return release in ("bigscience", "megatron-deepspeed") and not args.present(
        "--no-scatter-gather-tensors-in-pipeline"
    )


def trainer_release(layout: Layout) -> str | None:
    """The trainer release the flags were checked against (read.py keeps (release, assumed?))."""
    release = layout.extras.release
    return release[0] if release else None


def hpz_partition_size(layout: Layout, model_parallel: int, world: int) -> int:
    """ZeRO++ hpZ's group: zero_hpz_partition_size (deepspeed/runtime/zero/config.py, default 1), read at
    stage 3 only (partition_parameters.py), as min(k, world) consecutive global ranks
    (deepspeed/utils/groups.py _create_zero_param_parallel_group). Costed for pure data parallelism only:
    with tp, pp or cp those consecutive ranks are not one data-parallel group's members."""
    ds = layout.extras.ds_config
    if ds is None or layout.value("parallel.zero_stage") != 3 or model_parallel != 1:
        return 1
    k = positive_int(ds.value("zero_optimization", "zero_hpz_partition_size").value)
    return min(k, world) if k and world % min(k, world) == 0 else 1


def offloaded_to_cpu(layout: Layout, part: str) -> bool:
    """Whether the launch's DeepSpeed config puts zero_optimization.<part> on the CPU (deprecated booleans
    included: plint.reading.sources.deepspeed_config)."""
    ds = layout.extras.ds_config
    return getattr(getattr(ds, part, None), "value", None) == "cpu"


# PEFT's LoraConfig.r default, for a launch that turns LoRA on without a rank
DEFAULT_LORA_RANK = 8


def finetune_lora_rank(layout: Layout) -> int | None:
    """The LoRA rank when the launch trains adapters only (finetune.lora, read by plint.reading.sources.hf)."""
    facts = layout.extras.facts
    lora = facts.get("finetune.lora")
    if lora is None or lora.value is not True:
        return None
    return _fact_int(layout, "finetune.lora_rank") or DEFAULT_LORA_RANK


def frozen_bits(layout: Layout) -> int | None:
    """4 or 8 when bitsandbytes quantizes the frozen weights (--bits 4, --load_in_4bit); 16 and more is none."""
    bits = _fact_int(layout, "finetune.bits")
    return bits if bits in (4, 8) else None


def _fact_int(layout: Layout, key: FactKey) -> int | None:
    fact = layout.extras.facts.get(key)
    return positive_int(getattr(fact, "value", None))


def why_no_input(layout: Layout) -> list[tuple[str, str]]:
    """Why ModelInput.from_layout gives no input for `layout`: each field it lacks as (key, why) (the
    same conditions, in the same order), so a report can say which field to give instead of dropping
    the memory and step estimate without a word."""
    v = layout.value
    out: list[tuple[str, str]] = []
    for key in _SHAPE_FIELDS:
        out += _gap(layout, key, "not read from the launch (the entry point or a config file sets it)")
    world = positive_int(v("cluster.world_size"))
    if world is None and not (positive_int(v("cluster.gpus_per_node")) and positive_int(v("cluster.nnodes"))):
        out += _gap(layout, "cluster.world_size", "the number of GPUs is not known")
    for key in NEEDED_FIELDS:
        value = layout.get(key)
        if value is not None and is_unresolved(layout, key):
            out.append((key, value.note or "cannot be known statically"))
    if not out and world is not None:
        tp, pp, cp = (positive_int(v(k)) or 1 for k in _MODEL_PARALLEL)
        if world % (tp * pp * cp):
            out.append(("parallel", f"tp*pp*cp = {tp * pp * cp} does not divide the {world} GPUs (PL101)"))
    return out


def _gap(layout: Layout, key: FieldPath, absent: str) -> list[tuple[str, str]]:
    """[(key, why)] when the field holds no positive whole number; [] when it does."""
    value = layout.get(key)
    if value is None:
        return [(key, absent)]
    if positive_int(value.value) is not None:
        return []
    if value.value is None:
        return [(key, value.note or "cannot be known statically")]
    return [(key, f"{value.value!r} is not a positive whole number")]


# Fields the estimate needs when the launch has them (a plain DeepSpeed launch has no tp: it is 1)
NEEDED_FIELDS: tuple[FieldPath, ...] = (
    "parallel.tp",
    "parallel.pp",
    "parallel.cp",
    "parallel.ep",
    "batch.micro",
    "batch.global",
    "precision",
    "recompute.granularity",
    "parallel.zero_stage",
)


def is_unresolved(layout: Layout, key: FieldPath) -> bool:
    value = layout.get(key)
    return value is not None and value.value is None and value.origin == "unresolved"


def positive_int(x: Any) -> int | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, str):
        try:
            x = int(x)
        except ValueError:
            return None
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    return x if isinstance(x, int) and x > 0 else None


def _moe_layers(layout: Layout, args: ParsedTrainerFlags, num_layers: int) -> int | tuple[int, ...]:
    """Which layers are MoE. Megatron-Core: --moe-layer-freq. The deepspeedai Megatron-DeepSpeed fork:
    --expert-interval k (its default is 2), MoE where the 1-based layer number is a multiple of k
    (get_num_experts_per_layer in megatron/model/transformer.py), so half the layers by default."""
    if layout.value("trainer") == "megatron-deepspeed" and not args.present("--moe-layer-freq"):
        interval = positive_int(args.text("--expert-interval")) or 2
        return tuple(1 if (i + 1) % interval == 0 else 0 for i in range(num_layers))
    return _layer_freq(args.text("--moe-layer-freq"), num_layers)


def _layer_freq(text: str | None, num_layers: int) -> int | tuple[int, ...]:
    """--moe-layer-freq: an int, or a Python list expression such as "([0]*3+[1]*58)", read up to the model's
    layers (the cost model reads no more of it, and a stranger's `[1]*999999999` would fill the memory)."""
    if not text:
        return 1
    if text.strip().isdigit():
        try:
            return max(1, parse_int(text))
        except NumberTooLong:  # a frequency past every layer: only layer 0 is MoE
            return num_layers + 1
    flat: list[int] = []
    for group, count in re.findall(r"\[([01,\s]*)\]\s*(?:\*\s*(\d+))?", text):
        items = [0 if t.strip("0") == "" else 1 for t in group.replace(",", " ").split()]
        try:
            repeat = parse_int(count or "1")
        except NumberTooLong:
            repeat = num_layers
        flat.extend(items * min(repeat, num_layers - len(flat)))
        if len(flat) >= num_layers:
            break
    return tuple(flat[:num_layers]) if flat else 1


_STATE_DTYPE_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0}


def precision_aware_optimizer_bytes(precision: str, args: ParsedTrainerFlags) -> float | None:
    """Optimizer bytes per parameter under --use-precision-aware-optimizer (TE's FusedAdam): Adam's
    moments in --exp-avg-dtype / --exp-avg-sq-dtype, and the master params in --main-params-dtype,
    except that with bf16 parameters and fp32 master params only their 16-bit remainders are kept
    (OptimizerConfig.store_param_remainders, on by default: an int16 shard in distrib_optimizer.py).
    None without the flag (Megatron asserts it needs Adam and the distributed optimizer)."""
    if not args.present("--use-precision-aware-optimizer"):
        return None

    def dtype(option: str) -> float:
        return _STATE_DTYPE_BYTES.get((args.text(option) or "fp32").lower(), 4.0)

    main = args.text("--main-params-dtype") or "fp32"
    master = 2.0 if main == "fp16" or (main == "fp32" and precision in ("bf16", "fp8")) else 4.0
    return master + dtype("--exp-avg-dtype") + dtype("--exp-avg-sq-dtype")


def sixteen_bit_grads(args: ParsedTrainerFlags) -> bool:
    """Whether the bf16 gradient buffer stays 16-bit: --grad-reduce-in-bf16, or --main-grads-dtype bf16
    (precision-aware optimizer), which keeps validate_args from turning on fp32 accumulation
    (megatron/training/arguments.py: `elif not args.accumulate_allreduce_grads_in_fp32 and
    args.main_grads_dtype == torch.float32`), so DDP's buffer takes the bf16 parameters' dtype
    (grad_reduce_in_fp32 False, megatron/core/distributed/distributed_data_parallel.py)."""
    return args.present("--grad-reduce-in-bf16") or (
        (args.text("--main-grads-dtype") or "fp32").lower() in ("bf16", "fp16")
        and not args.present("--accumulate-allreduce-grads-in-fp32")
    )


def grad_buffer_bytes(args: ParsedTrainerFlags, precision: str | None) -> int | None:
    """Bytes per parameter of Megatron's DDP gradient buffer where the launch's flags decide them; None: the
    precision's own (fp32 for bf16 and fp8, which validate_args forces; the fp16 parameters' dtype for fp16).
    An fp16 launch accumulates and reduces in fp32 only with --accumulate-allreduce-grads-in-fp32: validate_args
    changes that flag for bf16 alone, and training.py passes it to DDP as grad_reduce_in_fp32, whose buffer then
    takes torch.float (megatron/training/arguments.py, megatron/core/distributed/param_and_grad_buffer.py
    group_params_for_buffers, Megatron-LM d98e8a6). Megatron-DeepSpeed's --deepspeed hands the gradients to
    DeepSpeed's engine instead, which does not read the flag."""
    if sixteen_bit_grads(args):
        return 2
    if precision == "fp16" and args.present("--accumulate-allreduce-grads-in-fp32") and not args.present("--deepspeed"):
        return 4
    return None


def _number(x: Any, default: float) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else default


def _activation_clamp(args: ParsedTrainerFlags) -> float | None:
    """--activation-func-clamp-value where it costs time: with --quick-geglu, whose fused kernel the experts call with
    the clamp (megatron/core/transformer/moe/experts.py bias_act_func, core_v0.17.0); the fused SwiGLU ignores it."""
    text = args.text("--activation-func-clamp-value") if args.present("--quick-geglu") else None
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value > 0 else None


def _probability(text: str | None, default: float) -> float:
    """A dropout probability as written (`0`, `0.0`, `.1`); the default when absent or not a number."""
    try:
        value = float(text) if text is not None else default
    except ValueError:
        return default
    return value if 0.0 <= value <= 1.0 else default


def moe_dispatcher_type(args: ParsedTrainerFlags) -> str:
    """--moe-token-dispatcher-type, Megatron's default (allgather, megatron/training/arguments.py) when the
    launch names none; --moe-enable-deepep (deprecated) means flex."""
    if args.present("--moe-enable-deepep"):
        return "flex"
    named = (args.text("--moe-token-dispatcher-type") or "allgather").strip().lower()
    return named if named in ("allgather", "alltoall", "flex") else "alltoall"


class ParsedTrainerFlags:
    """Megatron flags the contract's layout does not carry (bias, norm, tying), read from the parsed
    trainer arguments when the reader kept them; absent when it did not."""

    def __init__(self, layout: Layout):
        self.args = layout.extras.trainer_args  # sources.megatron.TrainerArgs or None

    def present(self, option: str) -> bool:
        return self.args is not None and self.args.get(option) is not None

    def text(self, option: str) -> str | None:
        return self.args.text(option) if self.args is not None else None
