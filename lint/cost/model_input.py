"""What the cost model needs to know about a run, as plain numbers.

`ModelInput` is a frozen record of the model shape, the parallel sizes, the batch, precision,
recompute and the cluster. `Options` holds the switches a launch sets (overlaps, flash attention) and
the few physical settings of the model, each with the reason for its default. `from_layout` reads a
normalised Layout and returns None when something essential is unknown.
"""

from __future__ import annotations

from plint.record import field, record

from typing import TYPE_CHECKING, TypedDict
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from plint.layout import Layout


@record(frozen=True)
class Options:
    # ---- switches a launch sets (Megatron defaults: shared/reference/megatron.md sec. 1.1) ----
    flash_attention: bool = True  # Megatron-Core/TE default; False for 2019-2022 era runs (s^2 softmax kept)
    # and for --transformer-impl local or --attention-backend unfused|local (no flash or fused kernel)
    # Megatron's own DotProductAttention keeps a Q.K^T buffer for the run (--transformer-impl local, --attention-backend local)
    attention_score_buffer: bool = False
    # Transformer Engine runs the layers (--transformer-impl transformer_engine, megatron-core's default)
    transformer_engine: bool = True
    # the loss: "native" (vocab_parallel_cross_entropy), "fused" (--cross-entropy-loss-fusion), "te"
    # (--cross-entropy-fusion-impl te with the fusion); see memory.loss_logit_bytes
    cross_entropy: str = "native"
    # --defer-embedding-wgrad-compute: micro-batches whose output-layer input and logit gradient are kept for the
    # deferred weight gradient (--wgrad-deferral-limit, 0: all of them); None: not deferred
    wgrad_deferral_limit: int | None = None
    # --microbatch-group-size-per-virtual-pipeline-stage: micro-batches per group of the interleaved schedule
    # (None: Megatron's default, pp)
    microbatch_group: int | None = None
    # the fused SwiGLU kernels (--no-bias-swiglu-fusion turns them off; memory.routed_probs_product_bytes)
    bias_swiglu_fusion: bool = True
    # --fp8-param-gather: the weights themselves kept in fp8 (memory not modelled: layout_estimate.unmodelled_memory)
    fp8_param_gather: bool = False
    overlap_grad_reduce: bool = False  # --overlap-grad-reduce (default False)
    overlap_param_gather: bool = False  # --overlap-param-gather (default False)
    tp_comm_overlap: bool = False  # --tp-comm-overlap (default False; needs sequence parallel)
    # Megatron-LM overlaps the backward's tensor-parallel collectives with the dgrad/wgrad GEMMs unless
    # --no-async-tensor-model-parallel-allreduce (the default since Sept 2021; megatron-core 0.7 on ignore the flag)
    tp_async_backward: bool = True
    overlap_p2p_comm: bool | None = None  # None: Megatron's rule, on exactly when VPP is set
    # None: Megatron's rule (interleaved 1F1B when VPP is set, else 1F1B); or one of
    # cost.schedule.SCHEDULES ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev")
    pipeline_schedule: str | None = None
    moe_a2a_overlap: bool = False  # --overlap-moe-expert-parallel-comm (Bridge moe_a2a_overlap; default False)
    # PyTorch's cuBLAS workspace per handle in bytes, from the launch's CUBLAS_WORKSPACE_CONFIG (":SIZE:COUNT" pairs,
    # SIZE in KiB); None: PyTorch's default for the GPU (memory.torch_cublas_workspace_bytes)
    torch_cublas_workspace: int | None = None
    # --moe-token-dispatcher-type: allgather (Megatron's default; from_layout gives it to launches that name
    # none) | alltoall | flex (DeepEP / HybridEP); the cost model's own default is alltoall
    moe_dispatcher: str = "alltoall"
    # Routed tokens on the busiest expert-parallel rank over the mean (EP > 1): its expert GEMMs and the
    # all-to-all it receives set the MoE layer's time. Fitted on the calibration set's four MoE runs
    # (benchmarks/calibrate.py --fit-moe-imbalance; auxiliary-loss or bias balancing keeps it near 1)
    moe_load_imbalance: float = 1.12
    fp8_recipe: str = "delayed"  # --fp8-recipe: delayed (Megatron default) | tensorwise (current scaling) | mxfp8 | blockwise
    # DeepSpeed overlap_comm / FSDP prefetch. None: the frameworks' defaults, on at ZeRO-3 (DeepSpeed turns
    # overlap_comm on only at stage 3, deepspeed.md sec. 2.6; FSDP always prefetches) and off at 1-2
    zero_overlap_comm: bool | None = None
    # Who unshards ZeRO-3 parameters: "deepspeed" hooks every sub-module (fetch before its forward, release
    # after it, fetch again before its backward: runtime/zero/parameter_offload.py), so a checkpointed
    # recompute gathers once more; "fsdp" unshards a wrapped block once for its recompute and backward
    zero3_engine: str = "deepspeed"
    grad_reduce_bytes: int | None = None  # None: fp32 for bf16/fp8 (Megatron forces it), 2 for fp16
    optimizer: str = "adam"
    position_embedding: str | None = None  # None: Megatron default learned_absolute unless rope is named
    # ---- physical settings (see estimate.py for how each enters the time) ----
    # A GEMM dimension of this many elements costs as much again as the ideal: efficiency =
    # cap / (1 + R/M + R/N + R/K). With H100's sustained cap (0.76, hardware.json) R = 256 gives 0.55 at
    # 2048^3, 0.64 at 4096^3 and 0.69 at 8192^3 against 0.55, 0.68 and 0.79 measured in short runs
    # (planners.md sec. 9): the small end is the ramp, the large end the power cap a long run holds.
    gemm_ramp: float = 256.0
    # FP8 GEMMs sustain a smaller share of their (doubled) peak than bf16 ones: cuBLASLt fp8 on H100
    # reaches ~1,300-1,450 of 1,979 TFLOPS against ~790 of 989 for bf16 (scaling and amax epilogues).
    fp8_gemm_factor: float = 0.87
    # Element-wise kernels (norms, residual adds, activations, rotary, cross-entropy) are memory-bound;
    # a streaming copy reaches 89% of H100 HBM bandwidth (planners.md sec. 9), fused kernels a bit less.
    hbm_efficiency: float = 0.8
    # nccl-tests bus bandwidth over the vendor's one-way NVLink rate: 8xA100 230-250 of 300 GB/s;
    # H100 460-480 of 450 uses NVLS, which Megatron's many small TP collectives rarely get.
    nvlink_efficiency: float = 0.8
    # Communication hidden behind compute is not free: each NCCL channel runs as one CTA on its own SM
    # and streams through HBM while the overlapped GEMMs run. NCCL opens 16-32 channels on H100/A100
    # (132/108 SMs), i.e. 12-30% of the SMs for as long as the transfer lasts; the hidden time therefore
    # still costs ~0.2 of itself in compute (the slowdown Echo, planners.md sec. 6, models).
    overlap_slowdown: float = 0.2
    # InfiniBand/RoCE NICs deliver ~85-90% of line rate to NCCL (Calculon ships 0.9).
    network_efficiency: float = 0.85
    # Ring collectives by measured busbw and message size (schemas/collectives.json, plint.cost.collectives)
    # where the GPU has a measured curve, in place of the two efficiencies above and the per-step latency
    measured_collectives: bool = True
    # ---- fixed costs of an iteration (issue 24): what a step costs however small its model ----
    # Fitted on Megatron-LM's functional tests' iteration times only (benchmarks/fit_step_overhead.py;
    # README "Accuracy"), in seconds on a DGX A100's host (GPU.host_overhead_factor scales them to
    # other hosts). A micro-batch's work on a stage cannot take less than its layers' host dispatch
    # (Python, autograd and the kernel launches of a layer's forward and backward, each kernel's
    # minimum duration): one micro-batch costs max(GPU time, host_microbatch_s + layers x per-layer
    # costs). Large models hide it: the host runs ahead of the GPU.
    host_layer_s: float = 5.3e-3  # one transformer layer's forward + backward
    host_moe_layer_s: float = 5.7e-3  # more per MoE layer with EP: router, permutation, token-count sync
    host_cp_layer_s: float = 1.1e-3  # more per layer with CP: the ring attention's per-step kernels and p2p
    host_microbatch_s: float = 1.4e-3  # embedding, loss, batch fetch and the schedule's p2p set-up
    # once per iteration, never hidden: optimizer and gradient-norm launches (multi-tensor kernels
    # over every parameter tensor), the loss and norm reductions read back to the host, timers
    host_step_s: float = 49.5e-3
    # Memory: CUDA context + cuBLAS/TE workspaces (~1 GiB) and NCCL buffers for the groups (~1 GiB).
    runtime_reserve_gib: float = 2.0
    # The caching allocator cannot hand out all of HBM: fragmentation (Megatron-LM #188) takes ~5-10%.
    fragmentation: float = 0.07
    __record_fields__: ClassVar[tuple[str, ...]]  # the field names, set by @record


DEFAULT_OPTIONS = Options()


def default_ffn_hidden_size(hidden_size: int, swiglu: bool) -> int:
    """Megatron's --ffn-hidden-size when none is given (validate_args in megatron/training/arguments.py):
    4h, or for SwiGLU's two input projections int(4h * 2/3 / 64) * 64, about as many parameters."""
    return int((4 * hidden_size * 2 / 3) / 64) * 64 if swiglu else 4 * hidden_size

# parallel.sharding's values in ZeRO's order: 1 optimizer states, 2 and gradients, 3 and parameters
SHARDING_LEVELS = ("none", "optimizer", "gradients", "parameters")


@record(frozen=True)
class ModelInput:
    # model shape (Megatron names)
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    seq_length: int
    vocab_size: int
    ffn_hidden_size: int | None = None  # None: Megatron's default (ffn_width)
    num_query_groups: int | None = None  # None: = heads (no GQA)
    kv_channels: int | None = None  # None: h / heads
    swiglu: bool = False
    untie_embeddings: bool = False
    normalization: str = "LayerNorm"  # or "RMSNorm"
    add_bias_linear: bool = True  # Megatron default; --disable-bias-linear turns it off
    add_qkv_bias: bool = False
    qk_layernorm: bool = False  # --qk-layernorm: a norm over one head's width on q and k
    # --hidden-dropout / --attention-dropout (Megatron's defaults); at 0 no dropout mask is kept
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    max_position_embeddings: int | None = None
    make_vocab_size_divisible_by: int = 128
    # mixture of experts
    num_experts: int | None = None
    moe_topk: int = 2
    moe_ffn_hidden_size: int | None = None  # None: ffn_hidden_size
    moe_shared_expert_size: int = 0  # --moe-shared-expert-intermediate-size (all shared experts together)
    moe_layer_freq: int | tuple[int, ...] = 1  # an int k: layer i is MoE when i % k == 0; or a 0/1 pattern
    # encoder-decoder (T5: examples/t5/pretrain_t5.py builds megatron/core/models/T5/t5_model.py's T5Model): an
    # encoder of num_layers layers over seq_length (--encoder-seq-length) tokens and a decoder of as many layers
    # (its config is the trainer's num_layers) over decoder_seq_length tokens, each with a cross-attention
    encoder_decoder: bool = False
    decoder_seq_length: int | None = None  # --decoder-seq-length; None: seq_length
    # multi-latent attention (--multi-latent-attention; megatron/core/transformer/multi_latent_attention.py
    # MLASelfAttention): low-rank query and key-value projections; the ranks and head widths as the parser's
    # defaults (megatron/training/arguments.py: --q-lora-rank None, --kv-lora-rank 32, --qk-head-dim 128,
    # --qk-pos-emb-head-dim 64, --v-head-dim 128)
    multi_latent_attention: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int = 32
    qk_head_dim: int = 128
    qk_pos_emb_head_dim: int = 64
    v_head_dim: int = 128
    # --mtp-num-layers: multi-token prediction layers on the last pipeline stage (megatron/core/transformer/
    # multi_token_prediction.py MultiTokenPredictionBlock); 0: none
    mtp_num_layers: int = 0
    # a hybrid stack (pretrain_hybrid.py / pretrain_mamba.py; megatron/core/models/hybrid/hybrid_layer_allocation.py):
    # one symbol per layer, from --hybrid-layer-pattern (or --hybrid-override-pattern), pipeline bars and what
    # follows the first '/' (the MTP part) left out: M Mamba, * attention, - MLP, E MoE; None: a transformer
    hybrid_pattern: str | None = None
    # the Mamba mixer's shape (megatron/training/arguments.py defaults: --mamba-state-dim 128, --mamba-head-dim 64,
    # --mamba-num-groups 8, --mamba-num-heads None: d_inner / head dim, megatron/core/ssm/mamba_mixer.py)
    mamba_state_dim: int = 128
    mamba_head_dim: int = 64
    mamba_num_groups: int = 8
    mamba_num_heads: int | None = None
    # parallel layout
    tp: int = 1
    pp: int = 1
    vpp: int | None = None
    cp: int = 1
    ep: int = 1
    etp: int | None = None  # None: = tp (Megatron's default for --expert-tensor-parallel-size)
    dp: int | None = None  # None: world / (tp*pp*cp)
    sequence_parallel: bool = False
    distributed_optimizer: bool = False
    zero_stage: int | None = None  # DeepSpeed ZeRO / FSDP (3 = fully sharded); None or 0: not sharded
    # what data parallelism shards (layout parallel.sharding): "none" | "optimizer" | "gradients" |
    # "parameters"; None: from zero_stage / distributed_optimizer (see sharding_level)
    sharding: str | None = None
    megatron_fsdp: bool = False  # --use-megatron-fsdp: Megatron's own states, sharded per `sharding`
    # hybrid sharding (layout parallel.dp_outer): the sharded states are split over an inner group of
    # dp*cp/dp_outer ranks and replicated over dp_outer such groups (Megatron --num-distributed-optimizer-
    # instances, HF --fsdp hybrid_shard); 1: over the whole data-parallel group
    dp_outer: int = 1
    # Megatron-FSDP --outer-dp-sharding-strategy optim: the optimizer states sharded over the outer group too
    outer_optimizer_sharded: bool = False
    # DeepSpeed ZeRO++ hpZ (zero_optimization.zero_hpz_partition_size, stage 3): not hybrid sharding, the states
    # stay split over all of dp; each rank also keeps a secondary 16-bit copy of the weights split over k
    # consecutive ranks, from which the gathers after the first forward one are served. 1: off
    hpz_partition: int = 1
    # --decoder-first/last-pipeline-num-layers: the end stages' own layer counts (None: an even share)
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None
    # transformer layers of each pipeline rank when they are not num_layers / pp (plint.cost.pipeline_stages:
    # uneven first/last stages, the embedding and loss counted as layers, a custom layout); None: even
    pipeline_stage_layers: tuple[int, ...] | None = None
    # DeepSpeed's BF16_Optimizer (when: plint.reading.deepspeed_engine) shards the fp32 master and Adam over dp
    # like ZeRO-1 and accumulates gradients in a buffer of this many bytes per parameter beside the bf16 ones
    ds_bf16_optimizer_accum_bytes: float | None = None
    # DeepSpeed ZeRO's states in host memory: zero_optimization.offload_optimizer / offload_param device "cpu"
    offload_optimizer: bool = False
    offload_param: bool = False
    deepspeed_pipeline_engine: bool = False  # DeepSpeed's PipelineEngine runs the schedule (plint.reading.deepspeed_engine)
    # LoRA (plint.cost.adapters): adapters of this rank train, the base weights are frozen; None: full fine-tuning
    lora_rank: int | None = None
    frozen_weight_bits: int | None = None  # QLoRA: the frozen linear weights quantized to 4 or 8 bits; None: 16-bit
    # Megatron's optimizer state per parameter (master params + Adam's two moments); None: 12 (fp32).
    # --use-precision-aware-optimizer sets it from --main-params-dtype / --exp-avg(-sq)-dtype
    optimizer_bytes: float | None = None
    # batch (sequences)
    micro_batch: int = 1
    global_batch: int | None = None  # None: micro * dp
    # precision and recompute
    precision: str = "bf16"  # bf16 | fp16 | fp8 | fp32
    recompute: str | None = None  # None | "selective" | "full"
    recompute_method: str | None = None  # "uniform" | "block"
    recompute_num_layers: int | None = None
    # --recompute-modules under selective granularity (TransformerConfig.recompute_modules; default core_attn alone)
    recompute_modules: tuple[str, ...] = ("core_attn",)
    # cluster
    gpu: str = "h100-sxm"
    nnodes: int = 1
    gpus_per_node: int = 8
    nvlink_domain: int | None = None  # GPUs sharing NVLink; None: min(catalog domain, gpus_per_node) or NVL72
    nic_gbps: float | None = None  # network Gb/s per GPU when the cluster differs from the catalog's typical build
    options: Options = field(default=DEFAULT_OPTIONS)
    __record_fields__: ClassVar[tuple[str, ...]]  # the field names, set by @record

    @property
    def world_size(self) -> int:
        return self.nnodes * self.gpus_per_node

    def sharding_level(self) -> int:
        """0-3 as ZeRO counts: what data parallelism shards (parallel.sharding, else the ZeRO stage, else
        the distributed optimizer's optimizer states)."""
        # DeepSpeed's BF16_Optimizer shards the optimizer like ZeRO-1 even at stage 0
        floor = 1 if self.ds_bf16_optimizer_accum_bytes is not None or self.distributed_optimizer else 0
        if self.sharding in SHARDING_LEVELS:
            return max(floor, SHARDING_LEVELS.index(self.sharding))
        return max(floor, self.zero_stage or 0)

    def ffn_width(self) -> int:
        """--ffn-hidden-size, or Megatron's default when it is not given: 4h, or with --swiglu 2/3 of that
        rounded down to a multiple of 64 (validate_args, megatron/training/arguments.py)."""
        return self.ffn_hidden_size or default_ffn_hidden_size(self.hidden_size, self.swiglu)

    def shard_group(self) -> int:
        """Ranks one copy of the sharded states is split over: the dp x cp group (the distributed optimizer
        and Megatron-FSDP build their buffers on it; DeepSpeed's sequence-data-parallel group under Ulysses),
        or under hybrid sharding its inner part of dp*cp/dp_outer consecutive ranks (megatron/core/
        parallel_state.py: the intra-partial data-parallel group)."""
        full = self.data_parallel() * max(1, self.cp)
        outer = max(1, self.dp_outer)
        return full // outer if outer > 1 and full % outer == 0 else full

    def expert_shard_group(self) -> int:
        """The expert-data-parallel group world / (pp*ep*etp), or its inner part under hybrid sharding
        (parallel_state.py: intra_partial_expert_data_parallel_size = expert dp / instances)."""
        full = max(1, self.world_size // max(1, self.pp * self.ep * (self.etp or self.tp)))
        outer = max(1, self.dp_outer)
        return full // outer if outer > 1 and full % outer == 0 else full

    def data_parallel(self) -> int:
        if self.dp:
            return self.dp
        return max(1, self.world_size // max(1, self.tp * self.pp * self.cp))

    def shape(self) -> dict:
        """The model as `layout.model` names it plus the architecture switches a launch needs
        (what `plint generate` writes back out)."""
        freq = self.moe_layer_freq
        dense_first = 0
        if isinstance(freq, tuple):
            while dense_first < len(freq) and not freq[dense_first]:
                dense_first += 1
        out = {k: getattr(self, k) for k in (
            "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups", "kv_channels",
            "seq_length", "vocab_size", "num_experts", "moe_topk", "moe_ffn_hidden_size", "moe_shared_expert_size",
            "swiglu", "normalization", "untie_embeddings", "add_bias_linear", "qk_layernorm")}
        out["position_embedding"] = self.options.position_embedding
        out["moe_first_dense_layers"] = dense_first
        return out

    def replace(self, **changes: Any) -> ModelInput:
        values = {name: getattr(self, name) for name in self.__record_fields__}
        values.update(changes)
        return ModelInput(**values)

    @classmethod
    def from_layout(cls, layout: Layout, gpu: str | None = None, options: Options | None = None,
                    vocab_size: int | None = None, any_layout: bool = False) -> ModelInput | None:
        """The cost model's input from a normalised layout; None when the model shape, the parallel
        sizes or the cluster are not known (the estimate would be a guess). `vocab_size` stands in
        when the layout has none (the tokenizer decides it at run time)."""
        v = layout.value
        shape = _model_shape(layout, vocab_size)
        cluster = _cluster_size(layout)
        if shape is None or cluster is None:
            return None
        if not any_layout and any(_unknown(layout, k) for k in _NEEDED):
            return None  # a field the launch sets but plint cannot know: an estimate would rest on a guess
        world, per_node, nnodes = cluster
        parallel = _parallel_sizes(layout, world, any_layout)
        if parallel is None:
            return None
        tp, pp, cp = parallel
        dp = (None if any_layout else _positive_int(v("parallel.dp"))) or world // (tp * pp * cp)
        micro = _positive_int(v("batch.micro")) or 1
        global_batch = _positive_int(v("batch.global")) or micro * dp
        from plint.reading.deepspeed_engine import bf16_optimizer_accum_bytes, runs_pipeline_engine

        args = _TrainerFlags(layout)
        granularity = v("recompute.granularity")
        precision = v("precision") if v("precision") in ("bf16", "fp16", "fp8", "fp32") else "bf16"
        zero = v("parallel.zero_stage")
        return cls(
            **shape,
            **_architecture(layout, args, shape["num_layers"]),
            tp=tp, pp=pp, cp=cp, dp=dp,
            vpp=_positive_int(v("parallel.vpp")),
            ep=_positive_int(v("parallel.ep")) or 1,
            etp=_positive_int(v("parallel.etp")),
            sequence_parallel=bool(v("parallel.sequence_parallel")),
            distributed_optimizer=bool(v("parallel.distributed_optimizer")),
            zero_stage=zero if isinstance(zero, int) and 0 <= zero <= 3 else None,
            sharding=v("parallel.sharding") if v("parallel.sharding") in SHARDING_LEVELS else None,
            megatron_fsdp=args.present("--use-megatron-fsdp") or args.present("--use-custom-fsdp"),
            dp_outer=_positive_int(v("parallel.dp_outer")) or 1,
            hpz_partition=_hpz_partition(layout, tp * pp * cp, world),
            # effective only under Megatron-FSDP's hybrid sharding (megatron/training/arguments.py help)
            outer_optimizer_sharded=(args.present("--use-megatron-fsdp") or args.present("--use-custom-fsdp"))
            and (args.text("--outer-dp-sharding-strategy") or "no_shard") == "optim",
            ds_bf16_optimizer_accum_bytes=bf16_optimizer_accum_bytes(layout, precision),
            deepspeed_pipeline_engine=runs_pipeline_engine(layout),
            offload_optimizer=_offloaded_to_cpu(layout, "offload_optimizer"),
            offload_param=_offloaded_to_cpu(layout, "offload_param"),
            lora_rank=_lora_rank(layout),
            frozen_weight_bits=_frozen_bits(layout),
            optimizer_bytes=_precision_aware_optimizer_bytes(precision, args),
            micro_batch=micro, global_batch=global_batch,
            precision=precision,
            recompute=granularity if granularity in ("full", "selective") else None,
            recompute_method=v("recompute.method") if v("recompute.method") in ("uniform", "block") else None,
            recompute_num_layers=_positive_int(v("recompute.num_layers")),
            recompute_modules=_recompute_modules(args),
            gpu=gpu or v("cluster.gpu") or "h100-sxm",
            nnodes=nnodes, gpus_per_node=per_node,
            nvlink_domain=_positive_int(v("cluster.nvlink_domain")),
            options=_launch_options(layout, args) if options is None else options,
        )


class _Shape(TypedDict):
    """The model shape from_layout cannot do without."""

    num_layers: int
    hidden_size: int
    num_attention_heads: int
    seq_length: int
    vocab_size: int


def _model_shape(layout: Layout, vocab_size: int | None) -> _Shape | None:
    """The layout's model shape; `vocab_size` stands in for a vocabulary it does not give; None when a size is missing."""
    v = layout.value
    layers, hidden, heads, seq = (_positive_int(v(f"model.{k}"))
                                  for k in ("num_layers", "hidden_size", "num_attention_heads", "seq_length"))
    vocab = _positive_int(v("model.vocab_size"))
    if vocab is None:
        vocab = vocab_size
    if layers is None or hidden is None or heads is None or seq is None or vocab is None:
        return None
    return _Shape(num_layers=layers, hidden_size=hidden, num_attention_heads=heads, seq_length=seq, vocab_size=vocab)


def _cluster_size(layout: Layout) -> tuple[int, int, int] | None:
    """(world size, GPUs per node, nodes); None when the number of GPUs is not known. A node size that does not
    divide the world is taken as 8 GPUs (or the world when smaller)."""
    v = layout.value
    world = _positive_int(v("cluster.world_size"))
    per_node = _positive_int(v("cluster.gpus_per_node")) or _positive_int(v("cluster.workers_per_node"))
    nnodes = _positive_int(v("cluster.nnodes"))
    if world is None and per_node and nnodes:
        world = per_node * nnodes
    if world is None:
        return None
    if not per_node or world % per_node:
        per_node = min(world, 8)
    return world, per_node, max(1, world // per_node)


def _parallel_sizes(layout: Layout, world: int, any_layout: bool) -> tuple[int, int, int] | None:
    """(tp, pp, cp); None when they do not divide the world, unless `any_layout` (then all 1)."""
    v = layout.value
    tp, pp, cp = (_positive_int(v(f"parallel.{k}")) or 1 for k in ("tp", "pp", "cp"))
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


def _launch_options(layout: Layout, args: _TrainerFlags) -> Options:
    """The cost model's switches the launch's flags set."""
    position = args.text("--position-embedding-type") or ("rope" if args.present(
        "--use-rotary-position-embeddings") else None) or layout.value("model.position_embedding")
    return Options(overlap_grad_reduce=args.present("--overlap-grad-reduce"),
                   overlap_param_gather=args.present("--overlap-param-gather"),
                   tp_comm_overlap=args.present("--tp-comm-overlap"),
                   tp_async_backward=_async_tp_backward(_release(layout), args),
                   overlap_p2p_comm=False if args.present("--no-overlap-p2p-communication") else None,
                   grad_reduce_bytes=2 if _sixteen_bit_grads(args) else None,
                   moe_a2a_overlap=args.present("--overlap-moe-expert-parallel-comm"),
                   moe_dispatcher=_moe_dispatcher(args),
                   position_embedding=position,
                   torch_cublas_workspace=cublas_workspace_config(_launch_env(layout, "CUBLAS_WORKSPACE_CONFIG")),
                   **_attention_and_loss(layout, args))


def _architecture(layout: Layout, args: _TrainerFlags, num_layers: int) -> dict[str, Any]:
    """ModelInput's fields of the model's architecture beyond its shape: widths, biases, norms, experts, multi-latent
    attention and the hybrid stack."""
    v = layout.value
    experts = _positive_int(v("model.num_experts"))
    return dict(
        ffn_hidden_size=_positive_int(v("model.ffn_hidden_size")),
        num_query_groups=_positive_int(v("model.num_query_groups")),
        kv_channels=_positive_int(v("model.kv_channels")),
        swiglu=bool(v("model.swiglu")),
        untie_embeddings=bool(v("model.untie_embeddings")) or args.present("--untie-embeddings-and-output-weights"),
        # the deepspeedai fork spells the choices in lower case (layernorm, rmsnorm)
        normalization="RMSNorm" if (args.text("--normalization") or v("model.normalization") or "").lower()
        == "rmsnorm" else "LayerNorm",
        # a Hugging Face model's own switches (plint.catalog.models) where no Megatron flag says
        add_bias_linear=not args.present("--disable-bias-linear") and v("model.add_bias_linear") is not False,
        add_qkv_bias=args.present("--add-qkv-bias") or v("model.add_qkv_bias") is True,
        qk_layernorm=args.present("--qk-layernorm"),
        hidden_dropout=_probability(args.text("--hidden-dropout"), _number(v("model.hidden_dropout"), 0.1)),
        attention_dropout=_probability(args.text("--attention-dropout"), _number(v("model.attention_dropout"), 0.1)),
        max_position_embeddings=_positive_int(v("model.max_position_embeddings")),
        make_vocab_size_divisible_by=_positive_int(v("model.make_vocab_size_divisible_by")) or 128,
        num_experts=experts if experts and experts > 1 else None,
        moe_topk=_positive_int(v("model.moe_topk")) or 2,
        moe_ffn_hidden_size=_positive_int(v("model.moe_ffn_hidden_size")),
        moe_shared_expert_size=_positive_int(args.text("--moe-shared-expert-intermediate-size"))
        or _positive_int(v("model.moe_shared_expert_size")) or 0,
        moe_layer_freq=_moe_layers(layout, args, num_layers) if experts and experts > 1 else 1,
        encoder_decoder=_encoder_decoder(layout),
        decoder_seq_length=_positive_int(args.text("--decoder-seq-length")),
        mtp_num_layers=_positive_int(v("model.mtp_num_layers")) or 0,
        multi_latent_attention=args.present("--multi-latent-attention"),
        q_lora_rank=_positive_int(args.text("--q-lora-rank")),
        kv_lora_rank=_positive_int(args.text("--kv-lora-rank")) or 32,
        qk_head_dim=_positive_int(args.text("--qk-head-dim")) or 128,
        qk_pos_emb_head_dim=_positive_int(args.text("--qk-pos-emb-head-dim")) or 64,
        v_head_dim=_positive_int(args.text("--v-head-dim")) or 128,
        hybrid_pattern=_hybrid_pattern(layout, args),
        mamba_state_dim=_positive_int(args.text("--mamba-state-dim")) or 128,
        mamba_head_dim=_positive_int(args.text("--mamba-head-dim")) or 64,
        mamba_num_groups=_positive_int(args.text("--mamba-num-groups")) or 8,
        mamba_num_heads=_positive_int(args.text("--mamba-num-heads")),
    )


def _attention_and_loss(layout: Layout, args: _TrainerFlags) -> dict[str, Any]:
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
    switches = {"flash_attention": not (local or backend in ("unfused", "local")),
                "attention_score_buffer": local or backend == "local",
                "transformer_engine": not local, "cross_entropy": loss,
                "fp8_param_gather": args.present("--fp8-param-gather"),
                "bias_swiglu_fusion": not args.present("--no-bias-swiglu-fusion")}
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


def _hybrid_pattern(layout: Layout, args: _TrainerFlags) -> str | None:
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
    import re

    pairs = re.findall(r":([0-9]+):([0-9]+)", text or "")
    return sum(int(size) * 1024 * int(count) for size, count in pairs) if pairs else None


def _launch_env(layout: Layout, name: str) -> str | None:
    """The text of an environment variable the launch command sees (exported before it, or set on it), when known."""
    chain = getattr(layout, "extras", {}).get("chain")
    command = getattr(chain, "command", None)
    found = None
    while command is not None:  # innermost first: the first setting found wins
        var = command.assignments.get(name) or (command.env.get(name) if command.env.get(name) is not None
                                                and command.env[name].exported else None)
        if var is not None:
            found = var
            break
        command = command.parent
    if found is None or not all(part.known for part in found.value):
        return None
    return "".join(part.text for part in found.value)


def _recompute_modules(args: _TrainerFlags) -> tuple[str, ...]:
    """The words of --recompute-modules (nargs '*'), or Megatron's default, core_attn alone."""
    use = args.args.get("--recompute-modules") if args.args is not None else None
    words = tuple(w.text for w in (getattr(use, "values", None) or ()) if getattr(w, "text", None))
    return words or ("core_attn",)


def _async_tp_backward(release: str | None, args: _TrainerFlags) -> bool:
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


def _release(layout: Layout) -> str | None:
    """The trainer release the flags were checked against (read.py keeps (release, assumed?))."""
    release = getattr(layout, "extras", {}).get("release")
    return release[0] if release else None


def _hpz_partition(layout: Layout, model_parallel: int, world: int) -> int:
    """ZeRO++ hpZ's group: zero_hpz_partition_size (deepspeed/runtime/zero/config.py, default 1), read at
    stage 3 only (partition_parameters.py), as min(k, world) consecutive global ranks
    (deepspeed/utils/groups.py _create_zero_param_parallel_group). Costed for pure data parallelism only:
    with tp, pp or cp those consecutive ranks are not one data-parallel group's members."""
    ds = getattr(layout, "extras", {}).get("ds_config")
    if ds is None or layout.value("parallel.zero_stage") != 3 or model_parallel != 1:
        return 1
    k = _positive_int(ds.value("zero_optimization", "zero_hpz_partition_size").value)
    return min(k, world) if k and world % min(k, world) == 0 else 1


def _offloaded_to_cpu(layout: Layout, part: str) -> bool:
    """Whether the launch's DeepSpeed config puts zero_optimization.<part> on the CPU (deprecated booleans
    included: plint.reading.sources.deepspeed_config)."""
    ds = getattr(layout, "extras", {}).get("ds_config")
    return getattr(getattr(ds, part, None), "value", None) == "cpu"


# PEFT's LoraConfig.r default, for a launch that turns LoRA on without a rank
DEFAULT_LORA_RANK = 8


def _lora_rank(layout: Layout) -> int | None:
    """The LoRA rank when the launch trains adapters only (finetune.lora, read by plint.reading.sources.hf)."""
    facts = getattr(layout, "extras", {}).get("facts", {})
    lora = facts.get("finetune.lora")
    if lora is None or lora.value is not True:
        return None
    return _fact_int(layout, "finetune.lora_rank") or DEFAULT_LORA_RANK


def _frozen_bits(layout: Layout) -> int | None:
    """4 or 8 when bitsandbytes quantizes the frozen weights (--bits 4, --load_in_4bit); 16 and more is none."""
    bits = _fact_int(layout, "finetune.bits")
    return bits if bits in (4, 8) else None


def _fact_int(layout: Layout, key: str) -> int | None:
    fact = getattr(layout, "extras", {}).get("facts", {}).get(key)
    return _positive_int(getattr(fact, "value", None))


def why_no_input(layout: Layout) -> list[tuple[str, str]]:
    """Why ModelInput.from_layout gives no input for `layout`: each field it lacks as (key, why) (the
    same conditions, in the same order), so a report can say which field to give instead of dropping
    the memory and step estimate without a word."""
    v = layout.value
    out: list[tuple[str, str]] = []
    for key in ("model.num_layers", "model.hidden_size", "model.num_attention_heads", "model.seq_length"):
        out += _gap(layout, key, "not read from the launch (the entry point or a config file sets it)")
    world = _positive_int(v("cluster.world_size"))
    if world is None and not (_positive_int(v("cluster.gpus_per_node")) and _positive_int(v("cluster.nnodes"))):
        out += _gap(layout, "cluster.world_size", "the number of GPUs is not known")
    for key in _NEEDED:
        value = layout.get(key)
        if value is not None and _unknown(layout, key):
            out.append((key, value.note or "cannot be known statically"))
    if not out and world is not None:
        tp, pp, cp = (_positive_int(v(f"parallel.{k}")) or 1 for k in ("tp", "pp", "cp"))
        if world % (tp * pp * cp):
            out.append(("parallel", f"tp*pp*cp = {tp * pp * cp} does not divide the {world} GPUs (PL101)"))
    return out


def _gap(layout: Layout, key: str, absent: str) -> list[tuple[str, str]]:
    """[(key, why)] when the field holds no positive whole number; [] when it does."""
    value = layout.get(key)
    if value is None:
        return [(key, absent)]
    if _positive_int(value.value) is not None:
        return []
    if value.value is None:
        return [(key, value.note or "cannot be known statically")]
    return [(key, f"{value.value!r} is not a positive whole number")]


# Fields the estimate needs when the launch has them (a plain DeepSpeed launch has no tp: it is 1)
_NEEDED = ("parallel.tp", "parallel.pp", "parallel.cp", "parallel.ep", "batch.micro", "batch.global",
           "precision", "recompute.granularity", "parallel.zero_stage")


def _unknown(layout: Layout, key: str) -> bool:
    value = layout.get(key)
    return value is not None and value.value is None and value.origin == "unresolved"


def _positive_int(x: Any) -> int | None:
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


def _moe_layers(layout: Layout, args: _TrainerFlags, num_layers: int) -> int | tuple[int, ...]:
    """Which layers are MoE. Megatron-Core: --moe-layer-freq. The deepspeedai Megatron-DeepSpeed fork:
    --expert-interval k (its default is 2), MoE where the 1-based layer number is a multiple of k
    (get_num_experts_per_layer in megatron/model/transformer.py), so half the layers by default."""
    if layout.value("trainer") == "megatron-deepspeed" and not args.present("--moe-layer-freq"):
        interval = _positive_int(args.text("--expert-interval")) or 2
        return tuple(1 if (i + 1) % interval == 0 else 0 for i in range(num_layers))
    return _layer_freq(args.text("--moe-layer-freq"))


def _layer_freq(text: str | None) -> int | tuple[int, ...]:
    """--moe-layer-freq: an int, or a Python list expression such as "([0]*3+[1]*58)"."""
    if not text:
        return 1
    if text.strip().isdigit():
        return max(1, int(text))
    import re

    flat: list[int] = []
    for group, count in re.findall(r"\[([01,\s]*)\]\s*(?:\*\s*(\d+))?", text):
        items = [int(t) for t in group.replace(",", " ").split()]
        flat.extend(items * int(count or 1))
    return tuple(flat) if flat else 1


_STATE_DTYPE_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0}


def _precision_aware_optimizer_bytes(precision: str, args: _TrainerFlags) -> float | None:
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


def _sixteen_bit_grads(args: _TrainerFlags) -> bool:
    """Whether the bf16 gradient buffer stays 16-bit: --grad-reduce-in-bf16, or --main-grads-dtype bf16
    (precision-aware optimizer), which keeps validate_args from turning on fp32 accumulation
    (megatron/training/arguments.py: `elif not args.accumulate_allreduce_grads_in_fp32 and
    args.main_grads_dtype == torch.float32`), so DDP's buffer takes the bf16 parameters' dtype
    (grad_reduce_in_fp32 False, megatron/core/distributed/distributed_data_parallel.py)."""
    return args.present("--grad-reduce-in-bf16") or (
        (args.text("--main-grads-dtype") or "fp32").lower() in ("bf16", "fp16")
        and not args.present("--accumulate-allreduce-grads-in-fp32"))


def _number(x: Any, default: float) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else default


def _probability(text: str | None, default: float) -> float:
    """A dropout probability as written (`0`, `0.0`, `.1`); the default when absent or not a number."""
    try:
        value = float(text) if text is not None else default
    except ValueError:
        return default
    return value if 0.0 <= value <= 1.0 else default


def _moe_dispatcher(args: _TrainerFlags) -> str:
    """--moe-token-dispatcher-type, Megatron's default (allgather, megatron/training/arguments.py) when the
    launch names none; --moe-enable-deepep (deprecated) means flex."""
    if args.present("--moe-enable-deepep"):
        return "flex"
    named = (args.text("--moe-token-dispatcher-type") or "allgather").strip().lower()
    return named if named in ("allgather", "alltoall", "flex") else "alltoall"


class _TrainerFlags:
    """Megatron flags the contract's layout does not carry (bias, norm, tying), read from the parsed
    trainer arguments when the reader kept them; absent when it did not."""

    def __init__(self, layout: Layout):
        self.args = getattr(layout, "extras", {}).get("trainer_args")  # sources.megatron.TrainerArgs or None

    def present(self, option: str) -> bool:
        return self.args is not None and self.args.get(option) is not None

    def text(self, option: str) -> str | None:
        return self.args.text(option) if self.args is not None else None
