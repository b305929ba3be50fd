"""What the cost model needs to know about a run, as plain numbers.

`ModelInput` is a frozen record of the model shape, the parallel sizes, the batch, precision,
recompute and the cluster. `Options` holds the switches a launch sets (overlaps, flash attention) and
the few physical settings of the model, each with the reason for its default. `from_layout` reads a
normalised Layout and returns None when something essential is unknown.
"""

from __future__ import annotations

from plint.record import field, record

# the fields read from the layout; why_no_input, HYBRID_ENTRY_POINTS and cublas_workspace_config are imported
# from here by the estimate, the planner and the tests
from plint.cost.layout_fields import (
    architecture_fields,
    async_tp_backward,
    attention_and_loss,
    cluster_size,
    cublas_workspace_config,
    finetune_lora_rank,
    frozen_bits,
    grad_buffer_bytes,
    hpz_partition_size,
    HYBRID_ENTRY_POINTS as HYBRID_ENTRY_POINTS,
    is_unresolved,
    launch_env,
    model_shape,
    moe_dispatcher_type,
    NEEDED_FIELDS,
    offloaded_to_cpu,
    parallel_sizes,
    pipeline_scatter_gather,
    positive_int,
    precision_aware_optimizer_bytes,
    recomputed_modules,
    trainer_release,
    ParsedTrainerFlags,
    why_no_input as why_no_input,
)

from typing import TYPE_CHECKING

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
    # the unfused core's fused scale-mask-softmax kernel where its shape allows (--no-masked-softmax-fusion turns it
    # off; memory.unfused_core_backward_bytes)
    masked_softmax_fusion: bool = True
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
    # Megatron-LM before its p2p moved into megatron/core (NVIDIA/Megatron-LM 3c92fa93b5, 2023-03-23) split each
    # pipeline send over the TP ranks and all-gathered it on the receiver, unless sequence parallel
    # (megatron/p2p_communication.py _communicate, --no-scatter-gather-tensors-in-pipeline; default on);
    # Megatron-Core sends the whole tensor from every TP rank. DeepSpeed's PipelineEngine always splits (_pp_time).
    pp_scatter_gather: bool = False
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
    fp8_recipe: str = (
        "delayed"  # --fp8-recipe: delayed (Megatron default) | tensorwise (current scaling) | mxfp8 | blockwise
    )
    # DeepSpeed overlap_comm / FSDP prefetch. None: the frameworks' defaults, on at ZeRO-3 (DeepSpeed turns
    # overlap_comm on only at stage 3, deepspeed.md sec. 2.6; FSDP always prefetches) and off at 1-2
    zero_overlap_comm: bool | None = None
    # Who unshards ZeRO-3 parameters: "deepspeed" hooks every sub-module (fetch before its forward, release
    # after it, fetch again before its backward: runtime/zero/parameter_offload.py), so a checkpointed
    # recompute gathers once more; "fsdp" unshards a wrapped block once for its recompute and backward
    zero3_engine: str = "deepspeed"
    # None: fp32 for bf16/fp8 (Megatron forces it), 2 for fp16; 4 for fp16 with --accumulate-allreduce-grads-in-fp32
    grad_reduce_bytes: int | None = None
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
    host_layer_s: float = 5.08e-3  # one transformer layer's forward + backward
    host_moe_layer_s: float = 4.68e-3  # more per MoE layer with EP: router, permutation, token-count sync
    # more per local expert of a MoE layer with EP whose experts are TE's GroupedLinear (--moe-grouped-gemm):
    # transformer_engine/pytorch/module/grouped_linear.py (v2.9) _GroupedLinear runs one cuBLAS GEMM per expert
    # (general_grouped_gemm's per-GEMM loop) for fc1 and fc2, forward, dgrad and wgrad: 6 per expert, each with its
    # own cuBLASLt set-up on the host, plus per-expert quantizer calls under FP8
    host_expert_s: float = 0.27e-3
    host_cp_layer_s: float = 1.12e-3  # more per layer with CP: the ring attention's per-step kernels and p2p
    host_microbatch_s: float = 0.58e-3  # embedding, loss, batch fetch and the schedule's p2p set-up
    # once per iteration, never hidden: optimizer and gradient-norm launches (multi-tensor kernels
    # over every parameter tensor), the loss and norm reductions read back to the host, timers
    host_step_s: float = 61.46e-3
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
    # --activation-func-clamp-value with --quick-geglu (gpt-oss: 7.0): the fused quick-GeGLU clamps both halves of
    # the gated input first, outside its kernel (moe_time.expert_activation); None: no clamp
    activation_clamp: float | None = None
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
    moe_grouped_gemm: bool = False  # --moe-grouped-gemm: TE GroupedLinear experts (Megatron's default: SequentialMLP)
    # group-limited routing (--moe-router-num-groups, --moe-router-group-topk; None: off): the experts in equal
    # contiguous groups, each token routed inside its group_topk best groups (moe_time.remote_nodes)
    moe_router_groups: int | None = None
    moe_router_group_topk: int | None = None
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
    # the same partition by virtual stage (layers[rank][chunk]) where plint.cost.pipeline_stages made it
    pipeline_chunk_layers: tuple[tuple[int, ...], ...] | None = None
    # the trainer flags that make that partition (pipeline_stages.Partition.how), for advice that names them
    pipeline_split: str | None = None
    # DeepSpeed's BF16_Optimizer (when: plint.catalog.deepspeed_engine) shards the fp32 master and Adam over dp
    # like ZeRO-1 and accumulates gradients in a buffer of this many bytes per parameter beside the bf16 ones
    ds_bf16_optimizer_accum_bytes: float | None = None
    # DeepSpeed ZeRO's states in host memory: zero_optimization.offload_optimizer / offload_param device "cpu"
    offload_optimizer: bool = False
    offload_param: bool = False
    deepspeed_pipeline_engine: bool = (
        False  # DeepSpeed's PipelineEngine runs the schedule (plint.catalog.deepspeed_engine)
    )
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
        out = {
            k: getattr(self, k)
            for k in (
                "num_layers",
                "hidden_size",
                "ffn_hidden_size",
                "num_attention_heads",
                "num_query_groups",
                "kv_channels",
                "seq_length",
                "vocab_size",
                "num_experts",
                "moe_topk",
                "moe_ffn_hidden_size",
                "moe_shared_expert_size",
                "swiglu",
                "normalization",
                "untie_embeddings",
                "add_bias_linear",
                "qk_layernorm",
            )
        }
        out["position_embedding"] = self.options.position_embedding
        out["moe_first_dense_layers"] = dense_first
        return out

    def replace(self, **changes: Any) -> ModelInput:
        values = {name: getattr(self, name) for name in self.__record_fields__}
        values.update(changes)
        return ModelInput(**values)

    @classmethod
    def from_layout(
        cls,
        layout: Layout,
        gpu: str | None = None,
        options: Options | None = None,
        vocab_size: int | None = None,
        any_layout: bool = False,
    ) -> ModelInput | None:
        """The cost model's input from a normalised layout; None when the model shape, the parallel
        sizes or the cluster are not known (the estimate would be a guess). `vocab_size` stands in
        when the layout has none (the tokenizer decides it at run time)."""
        v = layout.value
        shape = model_shape(layout, vocab_size)
        cluster = cluster_size(layout)
        if shape is None or cluster is None:
            return None
        if not any_layout and any(is_unresolved(layout, k) for k in NEEDED_FIELDS):
            return None  # a field the launch sets but plint cannot know: an estimate would rest on a guess
        world, per_node, nnodes = cluster
        parallel = parallel_sizes(layout, world, any_layout)
        if parallel is None:
            return None
        tp, pp, cp = parallel
        dp = (None if any_layout else positive_int(v("parallel.dp"))) or world // (tp * pp * cp)
        micro = positive_int(v("batch.micro")) or 1
        global_batch = positive_int(v("batch.global")) or micro * dp
        from plint.catalog.deepspeed_engine import bf16_optimizer_accum_bytes, runs_pipeline_engine

        args = ParsedTrainerFlags(layout)
        granularity = v("recompute.granularity")
        precision = v("precision") if v("precision") in ("bf16", "fp16", "fp8", "fp32") else "bf16"
        zero = v("parallel.zero_stage")
        return cls(
            **shape,
            **architecture_fields(layout, args, shape["num_layers"]),
            tp=tp,
            pp=pp,
            cp=cp,
            dp=dp,
            vpp=positive_int(v("parallel.vpp")),
            ep=positive_int(v("parallel.ep")) or 1,
            etp=positive_int(v("parallel.etp")),
            sequence_parallel=bool(v("parallel.sequence_parallel")),
            distributed_optimizer=bool(v("parallel.distributed_optimizer")),
            zero_stage=zero if isinstance(zero, int) and 0 <= zero <= 3 else None,
            sharding=v("parallel.sharding") if v("parallel.sharding") in SHARDING_LEVELS else None,
            megatron_fsdp=args.present("--use-megatron-fsdp") or args.present("--use-custom-fsdp"),
            dp_outer=positive_int(v("parallel.dp_outer")) or 1,
            hpz_partition=hpz_partition_size(layout, tp * pp * cp, world),
            # effective only under Megatron-FSDP's hybrid sharding (megatron/training/arguments.py help)
            outer_optimizer_sharded=(args.present("--use-megatron-fsdp") or args.present("--use-custom-fsdp"))
            and (args.text("--outer-dp-sharding-strategy") or "no_shard") == "optim",
            ds_bf16_optimizer_accum_bytes=bf16_optimizer_accum_bytes(layout, precision),
            deepspeed_pipeline_engine=runs_pipeline_engine(layout),
            offload_optimizer=offloaded_to_cpu(layout, "offload_optimizer"),
            offload_param=offloaded_to_cpu(layout, "offload_param"),
            lora_rank=finetune_lora_rank(layout),
            frozen_weight_bits=frozen_bits(layout),
            optimizer_bytes=precision_aware_optimizer_bytes(precision, args),
            micro_batch=micro,
            global_batch=global_batch,
            precision=precision,
            recompute=granularity if granularity in ("full", "selective") else None,
            recompute_method=v("recompute.method") if v("recompute.method") in ("uniform", "block") else None,
            recompute_num_layers=positive_int(v("recompute.num_layers")),
            recompute_modules=recomputed_modules(args),
            gpu=gpu or v("cluster.gpu") or "h100-sxm",
            nnodes=nnodes,
            gpus_per_node=per_node,
            nvlink_domain=positive_int(v("cluster.nvlink_domain")),
            options=_launch_options(layout, args) if options is None else options,
        )


def _launch_options(layout: Layout, args: ParsedTrainerFlags) -> Options:
    """The cost model's switches the launch's flags set."""
    position = (
        args.text("--position-embedding-type")
        or ("rope" if args.present("--use-rotary-position-embeddings") else None)
        or layout.value("model.position_embedding")
    )
    return Options(
        overlap_grad_reduce=args.present("--overlap-grad-reduce"),
        overlap_param_gather=args.present("--overlap-param-gather"),
        tp_comm_overlap=args.present("--tp-comm-overlap"),
        tp_async_backward=async_tp_backward(trainer_release(layout), args),
        overlap_p2p_comm=False if args.present("--no-overlap-p2p-communication") else None,
        pp_scatter_gather=pipeline_scatter_gather(trainer_release(layout), args),
        grad_reduce_bytes=grad_buffer_bytes(args, layout.value("precision")),
        moe_a2a_overlap=args.present("--overlap-moe-expert-parallel-comm"),
        moe_dispatcher=moe_dispatcher_type(args),
        position_embedding=position,
        torch_cublas_workspace=cublas_workspace_config(launch_env(layout, "CUBLAS_WORKSPACE_CONFIG")),
        **attention_and_loss(layout, args),
    )
