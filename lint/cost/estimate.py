"""`estimate(inp) -> Estimate`: memory per GPU, step time, tokens/s per GPU, MFU, pipeline bubble.

Time of one micro-batch on one pipeline stage (per GPU, seconds):
  GEMMs        2*M*N*K FLOPs each at peak x efficiency(M, N, K): efficiency = gemm_efficiency (catalog,
               the large-GEMM plateau) / (1 + R/M + R/N + R/K), R = Options.gemm_ramp. The backward
               is two GEMMs of the same size (input and weight gradients). M = tokens b*s/cp. A job over
               several nodes runs its GEMMs and attention at GPU.scale_out_rate_factor of the single-GPU
               rates (scale_out_rate: each step waits for its slowest GPU).
  attention    flash: causal FLOPs at peak x attention_efficiency (catalog); without flash the
               unfused batched GEMMs do the full s^2 and the softmax/dropout pass moves ~33 bytes per
               score (fwd write+softmax+dropout, twice that backward) through HBM.
  element-wise norms, residual adds, activations, rotary, routing, cross-entropy: bytes moved / HBM
               bandwidth x hbm_efficiency (forward once, backward twice).
  TP           4 all-gather/reduce-scatter of 2*b*s*h/cp bytes forward per layer (the same bytes as
               2 all-reduces without SP); --tp-comm-overlap hides them behind the GEMMs except one
               ring step (1/tp of it). Backward: Megatron runs the column-parallel layers' collectives
               under their own input- and weight-gradient GEMMs (2 all-reduces without SP; with SP an
               all-gather of the input and a reduce-scatter each) and all-gathers the row-parallel
               layers' output gradients in the open (SP only); the bigscience fork and Megatron-LM
               before Sept 2021 ran 4 collectives in the open.
  overlap      hidden communication (TP, CP, PP, DP/ZeRO, DualPipe's EP) still costs
               Options.overlap_slowdown of its own duration: NCCL's channels take SMs and HBM
               bandwidth from the GEMMs they run under.
  fp8          operands cast to fp8 (4 B moved per element, 6 with current scaling's amax pass); the output
               layer stays in bf16 (bf16_head_factor).
  CP           ring exchange of K and V ((cp-1) steps forward, twice that backward), hidden behind
               the attention core.
  EP           dispatch + combine of the MoE token dispatcher forward and backward (_token_dispatch: the
               allgather, alltoall or flex dispatcher's bytes), exposed unless overlapped (below).
  MoE bias     with bias (no --disable-bias-linear) the experts' output bias is added expert by expert in
               PyTorch over the routed copies (expert_output_bias).
  PP           one send of the stage's output forward and one backward per micro-batch and chunk;
               exposed unless p2p overlap is on (Megatron turns it on with VPP). DeepSpeed's
               PipelineEngine (ZeRO-1/2 with PP > 1) sends and receives each as its own blocking
               instruction: four transfers per micro-batch, never overlapped.
  recompute    full adds each layer's forward again (GEMMs, attention, element-wise, TP comm);
               selective adds what --recompute-modules names (selective_replay; core_attn by default).
  MLA, MTP     multi-latent attention's own projections and core (mla_attention); each MTP depth adds a layer,
               eh_proj and the output layer again to the last stage.
  T5           per layer an encoder layer (s_e tokens) and a decoder layer (s_d) with its cross-attention
               (_encoder_decoder_pair); the LM head over the decoder's tokens.
  hybrid       the pattern's mean layer: Mamba (in_proj/out_proj GEMMs, the conv and chunked scan as bytes
               over HBM), attention-only and MLP-only layers (_hybrid_layer_mean).
Step = m x (1 + bubble) x slowest stage's micro-batch time, the bubble of the pipeline schedule
(schedule.py: (pp-1)/m for 1F1B, (pp-1)/(vpp*m) interleaved, less for zero-bubble and DualPipe;
DualPipe runs one micro-batch's EP all-to-all under another's compute, so only the excess is exposed;
--overlap-moe-expert-parallel-comm phase by phase: a2a_overlapped_layer) + exposed data-parallel traffic (after
the last backward;
overlap hides it behind one micro-batch's backward; DeepSpeed overlaps by default only at ZeRO-3, and
ZeRO-3/FSDP gathers the parameters forward and backward and reduce-scatters the gradients every
micro-batch, hidden behind that micro-batch's compute but for the first layer's share; DeepSpeed's
per-sub-module hooks gather a third time for a full recompute, FSDP's per-block unshard does not) + the
optimizer step (memory-bound, ~36 bytes per local parameter) + the fixed costs of an iteration: a
micro-batch on a stage lasts at least the host's dispatch of its layers (host_microbatch_s; large layers
hide it) and each iteration adds Options.host_step_s (fitted on Megatron-LM's functional tests,
benchmarks/fit_step_overhead.py). Collectives inside an NVLink domain take their efficiency and latency
by message size from measured sweeps where the GPU has one (cost.collectives, schemas/collectives.json).
MFU = Megatron >= 0.12 model FLOPs (causal attention halved) / (step x GPUs x dense bf16 peak;
fp16 where the GPU has no bf16), whatever the training precision.
"""

from __future__ import annotations

from plint.catalog.hardware import GPU, link_latencies_s, lookup_gpu
from plint.cost.comm import (
    Links,
    all_gather,
    all_reduce,
    all_to_all,
    point_to_point,
    reduce_scatter,
)
from plint.cost.layer_terms import bf16_head_factor, mla_attention, selective_replay
from plint.cost.collectives import nvlink_curve
from plint.cost.error_band import error_band, step_error
from plint.cost.flops import flops_per_step
from plint.cost.host_dispatch import host_microbatch_s
from plint.cost.adapters import adapter_memory
from plint.cost.memory import (
    GIB,
    decoder_tokens_share,
    host_memory_bytes,
    rank_memories,
    rank_steady_bytes,
    stage_params,
    state_bytes,
    workspace_bytes,
)
from plint.cost.model_input import ModelInput
from plint.cost.moe_time import (
    a2a_overlapped_layer,
    expert_activation,
    expert_output_bias,
    expert_slots,
    paired_share,
    remote_nodes,
    shared_experts,
)
from plint.cost.rank_load import stage_name, stage_table
from plint.cost.params import ParamCounts, count_params, hybrid_modelled, mamba_dims
from plint.cost.pipeline_stages import slowest_rank
from plint.cost.schedule import bubble_fraction, schedule_name
from plint.record import record

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import ClassVar


# What each part of Estimate.time_s is, in words (messages and tables name them this way).
TIME_PART_NAMES = {
    "compute": "compute",
    "recompute": "recompute",
    "tp": "tensor-parallel communication",
    "cp": "context-parallel communication",
    "ep": "expert all-to-all",
    "pp": "pipeline sends",
    "bubble": "pipeline bubble",
    "dp": "data-parallel communication",
    "optimizer": "optimizer step",
    "overhead": "fixed per-iteration costs",
}


@record(frozen=True)
class Estimate:
    # weights, grads, optimizer, activations, workspace, other, total, usable, allocator_peak (+ its stage and rank),
    # allocator_steady, stages (per pipeline stage where they differ), error_band
    memory_gib: dict
    bubble_fraction: float
    step_time_s: float
    mfu: float
    tokens_per_s_per_gpu: float
    params: float  # an average over the pattern of a hybrid stack is not a whole number
    num_microbatches: int
    time_s: dict  # per-step breakdown: compute, recompute, tp, cp, ep, pp, bubble, dp, optimizer
    gpu: str
    notes: tuple = ()
    host_memory_gib: float | None = None  # per node, for the states DeepSpeed offloads to the CPU
    step_error: float = 0.0  # the measured relative error of step_time_s and tokens_per_s_per_gpu (error_band)
    __record_fields__: ClassVar[tuple[str, ...]]  # the field names, set by @record

    def with_assumption(self, note: str) -> Estimate:
        """The same estimate, saying what it assumed about its input."""
        values = {name: getattr(self, name) for name in self.__record_fields__}
        values["notes"] = (*self.notes, note)
        return Estimate(**values)

    def with_params(self, params: float) -> Estimate:
        """The same estimate reporting another parameter count (a layout costed by its fullest stage)."""
        values = {name: getattr(self, name) for name in self.__record_fields__}
        values["params"] = params
        return Estimate(**values)

    @property
    def fits(self) -> bool:
        return self.memory_gib["total"] <= self.memory_gib["usable"]

    def to_json(self) -> dict:
        """The `layout.estimate` object of DESIGN.md (plus the time breakdown and parameter count)."""
        return {
            "memory_gib": _rounded(self.memory_gib),
            "bubble_fraction": round(self.bubble_fraction, 4),
            "step_time_s": round(self.step_time_s, 4),
            "mfu": round(self.mfu, 4),
            "tokens_per_s_per_gpu": round(self.tokens_per_s_per_gpu, 1),
            "step_error": round(self.step_error, 3),
            "params": self.params,
            "time_s": {k: round(v, 4) for k, v in self.time_s.items()},
            "notes": list(self.notes),
            **({"host_memory_gib": round(self.host_memory_gib, 2)} if self.host_memory_gib is not None else {}),
        }


def estimate(inp: ModelInput, gpu: GPU | None = None) -> Estimate | None:
    """The cost of one training step of `inp`; None when its GPU is not in the hardware catalog."""
    gpu = gpu or lookup_gpu(inp.gpu)
    if gpu is None:
        return None
    c = count_params(inp)
    dp = inp.data_parallel()
    global_batch = inp.global_batch or inp.micro_batch * dp
    m = max(1, global_batch // max(1, inp.micro_batch * dp))
    opts = inp.options
    memory = _memory_gib(inp, c, m, gpu)

    times = _step_times(inp, c, gpu, m)
    step = sum(times.values())
    world = inp.world_size
    tokens = global_batch * inp.seq_length
    peak = (gpu.bf16_tflops or gpu.fp16_tflops or 0.0) * 1e12
    mfu = flops_per_step(inp, "megatron", c) / (step * world * peak) if step > 0 and peak > 0 else 0.0
    host = host_memory_bytes(inp, c)
    return Estimate(
        memory,
        bubble_fraction(inp.pp, m, inp.vpp, opts.pipeline_schedule),
        step,
        mfu,
        tokens / step / world if step > 0 else 0.0,
        c.total,
        m,
        times,
        gpu.name,
        host_memory_gib=host / GIB if host is not None else None,
        step_error=step_error(inp),
    )


def _memory_gib(inp: ModelInput, c: ParamCounts, m: int, gpu: GPU) -> dict:
    """The `estimate.memory_gib` figures: the most loaded pipeline rank's parts, the allocator peak (what
    torch.cuda.max_memory_allocated() reports on that rank's GPUs: its states, activations and the
    run-long buffers allocated through PyTorch, memory.workspace_bytes), the rank and its stage ("first", "middle",
    "last", "only"), per stage where stages differ (the first, the busiest middle rank where one can hold the peak,
    the last), and the total the device must hold (the allocator peak + the runtime reserve outside the allocator:
    CUDA context, NCCL buffers)."""
    # LoRA: only the adapters' gradients and optimizer states (cost.adapters), rank by rank
    ranks = {rank: adapter_memory(inp, c, parts) for rank, parts in rank_memories(inp, c, m).items()}
    # cuBLAS's workspace grows from Hopper on; every catalog GPU with fp8 tensor cores from NVIDIA is Hopper or later
    workspace = workspace_bytes(inp, bool(gpu.fp8_tflops))
    peaks = {rank: (sum(parts.values()) + workspace) / GIB for rank, parts in ranks.items()}
    busiest = max(peaks, key=lambda rank: (peaks[rank], -rank))  # the earliest on a tie: rank 0 holds the embedding
    # GiB figures, then the peak's stage by name and the per-stage table (the untyped dict of Estimate.memory_gib)
    memory: dict = {k: v / GIB for k, v in ranks[busiest].items()}
    memory["workspace"] = workspace / GIB
    memory["other"] = inp.options.runtime_reserve_gib
    memory["total"] = sum(memory.values())
    memory["usable"] = gpu.hbm_gib * (1 - inp.options.fragmentation)
    memory["allocator_peak"] = peaks[busiest]
    memory["allocator_peak_stage"] = stage_name(inp, busiest)
    memory["allocator_peak_rank"] = busiest
    memory["error_band"] = error_band(inp)
    # what stays allocated between steps: the states and the run-long buffers
    steady = {rank: (rank_steady_bytes(inp, c, rank) + workspace) / GIB for rank in ranks}
    if inp.lora_rank:  # LoRA: the adapters' states only (cost.adapters); the fp32 gradient copies are theirs too
        steady = {
            rank: (sum(parts[k] for k in ("weights", "grads", "optimizer")) + workspace) / GIB
            for rank, parts in ranks.items()
        }
    memory["allocator_steady"] = steady[busiest]
    if len(ranks) > 1:
        memory["stages"] = stage_table(inp, peaks, steady)
    return memory


def _rounded(value):
    """GiB figures to 2 decimals, through the per-stage table; words as they are."""
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def group_links(inp: ModelInput, gpu: GPU) -> Links:
    domain = inp.nvlink_domain or gpu.nvlink_domain(inp.gpus_per_node)
    a_nv, a_net = link_latencies_s()
    o = inp.options
    nvlink, nic = gpu.nvlink_gbps / 2 * 1e9, (inp.nic_gbps or gpu.nic_gbps) / 8 * 1e9
    curve = nvlink_curve(gpu.name) if o.measured_collectives else None
    measured = (nvlink, curve) if curve is not None else None
    return Links(
        domain, nvlink * o.nvlink_efficiency, nic * o.network_efficiency, a_nv, a_net, inp.world_size, measured
    )


@record(frozen=True)
class _Kernels:
    """One GPU's kernel rates and a layout's per-GPU shapes: what every time term below reads."""

    inp: ModelInput
    links: Links
    tokens: float  # rows of every GEMM on this GPU: b*s/cp
    sp: int  # TP when sequence parallel, else 1 (the divisor of the element-wise work)
    gemm_peak: float
    attn_peak: float
    attn_eff: float  # GPU.attention_efficiency
    cap: float
    ramp: float
    hbm: float  # bytes/s element-wise kernels reach
    gate: int  # 2 with a gated (SwiGLU) MLP
    kappa: float  # Options.overlap_slowdown
    __record_fields__: ClassVar[tuple[str, ...]]  # the field names, set by @record

    def gemm(self, rows: float, cols: float, inner: float, count: float = 1.0) -> float:
        """Forward time of `count` GEMMs (rows x inner) @ (inner x cols)."""
        if rows <= 0 or cols <= 0 or inner <= 0:
            return 0.0
        eff = self.cap / (1 + self.ramp / rows + self.ramp / cols + self.ramp / inner)
        return count * 2 * rows * cols * inner / (self.gemm_peak * eff)

    def hidden(self, comm: float, window: float) -> float:
        """Time `comm` costs when it runs under `window` of compute: the excess in the open, the rest
        at Options.overlap_slowdown of itself."""
        exposed = max(0.0, comm - window)
        return exposed + self.kappa * (comm - exposed)


def scale_out_rate(inp: ModelInput, gpu: GPU) -> float:
    """The share of the GPU's single-GPU tensor-core rates the job delivers: GPU.scale_out_rate_factor for a
    synchronous job over several nodes (each step waits for its slowest GPU), 1 inside one node."""
    return gpu.scale_out_rate_factor if inp.world_size > inp.gpus_per_node else 1.0


def _kernels(inp: ModelInput, gpu: GPU) -> _Kernels:
    o = inp.options
    cp, tp = max(1, inp.cp), max(1, inp.tp)
    gemm_peak = gpu.peak_tflops(inp.precision) * 1e12 * (0.5 if inp.precision == "fp32" else 1.0)
    rate = scale_out_rate(inp, gpu)
    return _Kernels(
        inp,
        group_links(inp, gpu),
        inp.micro_batch * inp.seq_length / cp,
        tp if inp.sequence_parallel else 1,
        gemm_peak,
        (gpu.bf16_tflops or gpu.fp16_tflops or 0.0) * 1e12,
        gpu.attention_efficiency * rate,
        gpu.gemm_efficiency * rate * (o.fp8_gemm_factor if inp.precision == "fp8" else 1.0),
        o.gemm_ramp,
        gpu.hbm_tbps * 1e12 * o.hbm_efficiency,
        2 if inp.swiglu else 1,
        o.overlap_slowdown,
    )


@record(frozen=True)
class _DenseLayer:
    """One dense layer's forward on one GPU, seconds."""

    qkv: float  # the QKV projection (column-parallel)
    fc1: float  # the MLP's first projection (column-parallel)
    projections: float  # QKV + attention output projection
    mlp: float
    core: float  # attention core (QK^T, softmax, AV)
    elementwise: float  # norms, residuals, rotary, fp8 casts
    activation: float  # the MLP's activation function


def _dense_layer(k: _Kernels) -> _DenseLayer:
    inp, o = k.inp, k.inp.options
    h, n, s = inp.hidden_size, inp.num_attention_heads, inp.seq_length
    d = inp.kv_channels or h // n
    g = inp.num_query_groups or n
    f = inp.ffn_width()
    tp, cp, b, gate, tokens = max(1, inp.tp), max(1, inp.cp), inp.micro_batch, k.gate, k.tokens
    qkv = k.gemm(tokens, (n + 2 * g) * d / tp, h)
    out_proj = k.gemm(tokens, h, n * d / tp)
    fc1 = k.gemm(tokens, f * gate / tp, h)
    causal = 0.5 if o.flash_attention else 1.0  # unfused attention computes the masked half too
    core = 4 * b * s * (s / cp) * d * (n / tp) * causal / (k.attn_peak * k.attn_eff)
    if inp.multi_latent_attention:
        qkv, out_proj, core = mla_attention(k, causal)
    if not o.flash_attention:
        core += 11 * b * (n / tp) * s * (s / cp) / k.hbm
    elementwise = 2 * tokens * (11 * h / k.sp + 2 * (n + g) * d / tp) / k.hbm  # norms, residuals, rotary
    if inp.precision == "fp8":
        # every GEMM operand is cast (read 2 B, write 1 B) and transposed (1 B) for the backward:
        # the inputs forward and the output gradients backward, ~4 B per element; per forward third
        operands = 4 * h + 2 * n * d / tp + (n + 2 * g) * d / tp + (1 + gate) * f / tp
        # current (per-tensor dynamic) scaling first reduces |x| over the bf16 tensor: one more 2 B read
        # per element before the cast (TE Float8CurrentScaling, torchao dynamic float8); delayed scaling
        # takes last step's amax from the history instead
        per_elem = 6 if o.fp8_recipe in ("tensorwise", "current") else 4
        elementwise += per_elem * tokens * operands / k.hbm / 3
    activation = 2 * tokens * (2 + gate) * f / tp / k.hbm
    return _DenseLayer(qkv, fc1, qkv + out_proj, fc1 + k.gemm(tokens, h, f / tp), core, elementwise, activation)


@record(frozen=True)
class _LayerTime:
    """One layer's forward on one GPU as the stage sums it, seconds: a dense layer, a T5 encoder-decoder layer
    pair, or the mean layer of a hybrid stack's pattern."""

    compute: float  # GEMMs, attention cores, element-wise passes
    tp_fwd: float
    tp_bwd: float
    core: float  # the attention cores (what selective recompute replays)
    cp: float  # the context-parallel ring, hidden behind the cores


def _cross_attention(k: _Kernels, dec: _Kernels) -> float:
    """Forward of one T5 decoder layer's cross-attention, seconds (megatron/core/transformer/attention.py
    CrossAttention.get_query_key_value_tensors: linear_q over the decoder's tokens, n*d wide; linear_kv over the
    encoder's output, 2*g*d wide; then the core and linear_proj like self-attention; transformer_layer.py forward:
    pre_cross_attn_layernorm and a residual add around it). The core is not causal: every decoder token attends to
    all s_e encoder tokens (t5_model.py passes the encoder-decoder padding mask, AttnMaskType.padding)."""
    inp, o = k.inp, k.inp.options
    h, n = inp.hidden_size, inp.num_attention_heads
    d = inp.kv_channels or h // n
    g = inp.num_query_groups or n
    tp, cp = max(1, inp.tp), max(1, inp.cp)
    s_e, s_d = inp.seq_length, dec.inp.seq_length
    gemms = (
        dec.gemm(dec.tokens, n * d / tp, h) + k.gemm(k.tokens, 2 * g * d / tp, h) + dec.gemm(dec.tokens, h, n * d / tp)
    )
    core = 4 * inp.micro_batch * s_d * (s_e / cp) * d * (n / tp) / (k.attn_peak * k.attn_eff)
    if not o.flash_attention:
        core += 11 * inp.micro_batch * (n / tp) * s_d * (s_e / cp) / k.hbm
    # the norm (read, write), the residual add (two reads, a write) over h; Q and the output over n*d
    elementwise = 2 * dec.tokens * (5 * h / k.sp + 2 * n * d / tp) / k.hbm
    return gemms + core + elementwise


def _encoder_decoder_pair(k: _Kernels, encoder: _LayerTime) -> _LayerTime:
    """T5 (megatron/core/models/T5/t5_model.py T5Model.forward): per layer of num_layers, an encoder layer over the
    encoder's s_e tokens (`encoder`, a GPT layer) and a decoder layer over the decoder's s_d tokens (t5_spec.py
    decoder_model_with_transformer_engine_default_spec: self-attention, cross-attention, MLP). The cross-attention's
    linear_q and linear_kv are column-parallel and linear_proj row-parallel: with TP half a self-attention layer's
    collectives again, over the decoder's tokens."""
    inp = k.inp
    share = decoder_tokens_share(inp)
    dec_inp = inp.replace(seq_length=round(inp.seq_length * share))
    dec = _Kernels(
        **{**{name: getattr(k, name) for name in k.__record_fields__}, "inp": dec_inp, "tokens": k.tokens * share}
    )
    layer = _dense_layer(dec)
    tp_fwd, tp_bwd = _tp_times(dec, layer)
    cross = _cross_attention(k, dec)
    decoder = layer.projections + layer.core + layer.elementwise + layer.mlp + layer.activation + cross
    return _LayerTime(
        encoder.compute + decoder,
        encoder.tp_fwd + 1.5 * tp_fwd,
        encoder.tp_bwd + 1.5 * tp_bwd,
        encoder.core + layer.core + cross,
        encoder.cp + _cp_time(dec, layer.core),
    )


MAMBA_CHUNK = 128  # MambaMixer.__init__'s chunk_size (megatron/core/ssm/mamba_mixer.py, core_v0.19)


def _mamba_layer(k: _Kernels) -> float:
    """Forward of one Mamba layer, seconds (megatron/core/ssm/mamba_mixer.py MambaMixer.forward, _ssm_training):
    in_proj (h -> 2 d_inner + 2 groups x state + heads, column-parallel, its input norm fused) and out_proj
    (d_inner -> h, row-parallel) as GEMMs; the rest memory-bound passes over HBM, 2 B per value. mamba_ssm's
    mamba_split_conv1d_scan_combined (ssd_combined.py MambaSplitConv1dScanCombinedFn.forward): the conv1d reads
    the x, B, C channels of zxBCdt and writes them convolved; the chunked scan (_mamba_chunk_scan_combined_fwd)
    reads them and dt and writes y (d_inner), its fp32 chunk states (heads x head dim x state per MAMBA_CHUNK
    tokens) written by chunk_state, read and rewritten by state_passing and read by chunk_scan; the gated RMSNorm
    reads y and z and writes its output. The fused input norm (read, write) and the residual add (two reads, a
    write) run over h."""
    inp = k.inp
    h, tp = inp.hidden_size, max(1, inp.tp)
    d_inner, heads, groups, state = mamba_dims(inp)
    conv = d_inner + 2 * groups * state  # the x, B, C channels
    gemms = k.gemm(k.tokens, (2 * d_inner + 2 * groups * state + heads) / tp, h) + k.gemm(k.tokens, h, d_inner / tp)
    scan = 2 * (3 * conv + heads + 4 * d_inner) + 4 * 4 * d_inner * state / MAMBA_CHUNK
    return gemms + k.tokens * (scan / tp + 2 * 5 * h / k.sp) / k.hbm


def _hybrid_layer_mean(k: _Kernels, layer: _DenseLayer, dense: _LayerTime) -> _LayerTime:
    """The mean layer of a hybrid stack's pattern (megatron/core/models/hybrid/hybrid_layer_specs.py): a Mamba layer
    (_mamba_layer), an attention layer (a transformer layer with its self-attention alone) or an MLP layer (its MLP
    alone), each with one column- and one row-parallel projection: half a dense layer's TP collectives, and the
    CP ring only around attention."""
    attn_elementwise = layer.elementwise / 2  # each half has its norm and residual add
    per_symbol = {
        "M": (_mamba_layer(k), 0.0, 0.0),
        "*": (layer.projections + layer.core + attn_elementwise, layer.core, dense.cp),
        "-": (layer.mlp + layer.activation + layer.elementwise - attn_elementwise, 0.0, 0.0),
    }
    pattern = k.inp.hybrid_pattern or ""
    n = max(1, len(pattern))
    compute, core, cp = (sum(per_symbol[x][i] for x in pattern) / n for i in range(3))
    return _LayerTime(compute, dense.tp_fwd / 2, dense.tp_bwd / 2, core, cp)


def _tp_times(k: _Kernels, layer: _DenseLayer) -> tuple[float, float]:
    """(forward, backward) tensor-parallel communication of one layer, seconds."""
    inp, o = k.inp, k.inp.options
    tp = max(1, inp.tp)
    if tp == 1:
        return 0.0, 0.0
    unit = all_gather(k.links, 2 * k.tokens * inp.hidden_size, tp, 1)  # one AG or RS of b*s*h
    fwd = 4 * unit
    if o.tp_comm_overlap:
        exposed = max(fwd - (layer.projections + layer.mlp), fwd / tp)
        fwd = exposed + k.kappa * (fwd - exposed)
        return fwd, fwd
    if not o.tp_async_backward:
        return fwd, fwd  # Megatron before Sept 2021 and forks without it: four collectives, in the open
    # Megatron's column-parallel backward (megatron-core tensor_parallel/layers.py, on since Sept
    # 2021; TransformerEngine's Linear and LayerNormLinear alike) launches its collectives
    # asynchronously: with SP the input all-gather for the weight gradient runs
    # under the input-gradient GEMM and the gradient's reduce-scatter under the weight-gradient
    # GEMM; without SP the gradient's all-reduce (two units) runs under the weight-gradient GEMM.
    # The row-parallel backward all-gathers its output gradient in the open with SP and has no
    # collective without it. Per layer the QKV and first MLP projections are column-parallel (an
    # MoE layer is costed as the dense one); a GEMM's dgrad and wgrad each last as long as its forward.
    sp = k.sp > 1
    bwd = 2 * unit if sp else 0.0
    under_dgrad_wgrad = (unit, unit) if sp else (0.0, 2 * unit)
    for gemm_t in (layer.qkv, layer.fc1):
        for comm in under_dgrad_wgrad:
            hidden = min(comm, gemm_t)
            bwd += comm - hidden + k.kappa * hidden
    return fwd, bwd


def _moe_layer(k: _Kernels) -> tuple[float, float, float]:
    """(expert MLPs + shared expert + router, activation and permutes, EP all-to-all) of one MoE
    layer's forward, seconds."""
    inp = k.inp
    tp, gate, tokens = max(1, inp.tp), k.gate, k.tokens
    h = inp.hidden_size
    experts = inp.num_experts or 1
    fm = inp.moe_ffn_hidden_size or inp.ffn_width()
    topk = min(inp.moe_topk, experts)
    etp = inp.etp or tp
    ep = max(1, inp.ep)
    local = max(1.0, experts / ep)
    imbalance = inp.options.moe_load_imbalance if ep > 1 else 1.0
    slots = expert_slots(k)
    mlp = k.gemm(slots / local, fm * gate / etp, h, local) + k.gemm(slots / local, h, fm / etp, local)
    mlp += shared_experts(k) + k.gemm(tokens / k.sp, experts, h)
    act = expert_activation(k) + 2 * 4 * tokens * topk * h / tp / k.hbm  # activation + permutes
    dispatch = _token_dispatch(k, tokens / tp, topk, ep, etp)
    if etp > 1:
        # the all-to-all dispatcher all-gathers the tokens it received over the expert-TP group, and the
        # combine reduce-scatters them back (megatron/core/transformer/moe/token_dispatcher.py, core_v0.19:
        # MoEAlltoAllTokenDispatcher.dispatch_postprocess / combine_preprocess, group expt_tp)
        dispatch += all_gather(k.links, etp * tokens * topk * h * 2 / tp, etp, 1)
    return mlp, act, 2 * imbalance * dispatch


def _token_dispatch(k: _Kernels, tokens: float, topk: int, ep: int, etp: int) -> float:
    """One direction (dispatch, or combine) of the MoE token dispatcher over the EP group, seconds, for
    Options.moe_dispatcher (Megatron's --moe-token-dispatcher-type; megatron/core/transformer/moe/
    token_dispatcher.py): `tokens` of h bf16 values on this rank, each routed to `topk` experts.
      allgather  MoEAllGatherTokenDispatcher gathers every EP rank's tokens (and reduce-scatters the
                 combine): (ep - 1) x tokens x h x 2 bytes in, whatever the routing
      alltoall   MoEAlltoAllTokenDispatcher sends each routed copy to its expert's rank: tokens x topk
                 x h x 2 bytes, (ep - 1)/ep of it to other ranks
      flex       DeepEP / HybridEP (MoEFlexTokenDispatcher): as alltoall inside the NVLink domain, but a
                 token crosses the network once per remote node that holds any of its experts and is
                 forwarded over NVLink there (DeepEP README, 'normal kernels with NVLink and RDMA
                 forwarding'): the remote nodes a token reaches (moe_time.remote_nodes: fewer under
                 group-limited routing)."""
    nbytes = tokens * k.inp.hidden_size * 2
    dispatcher = k.inp.options.moe_dispatcher
    if dispatcher == "allgather":
        return all_gather(k.links, ep * nbytes, ep, etp)
    if dispatcher == "flex":
        _, nodes = k.links.span(ep, etp)
        return all_to_all(k.links, nbytes * topk, ep, etp, network_bytes=nbytes * remote_nodes(k.inp, nodes))
    return all_to_all(k.links, nbytes * topk, ep, etp)


def _cp_time(k: _Kernels, core_fwd: float) -> float:
    """CP ring of one layer's forward: K and V of the local chunk, (cp-1) steps, hidden behind the
    attention core."""
    inp = k.inp
    cp, tp = max(1, inp.cp), max(1, inp.tp)
    if cp == 1:
        return 0.0
    d = inp.kv_channels or inp.hidden_size // inp.num_attention_heads
    g = inp.num_query_groups or inp.num_attention_heads
    kv = 2 * inp.micro_batch * (inp.seq_length / cp) * g * d / tp * 2
    ring = (cp - 1) * point_to_point(k.links, kv, not k.links.on_nvlink(cp, tp))
    return k.hidden(ring, core_fwd)


def _recompute_share(inp: ModelInput, stage_layers: float) -> float:
    """Share of a stage's layers replayed in full by the recompute."""
    if inp.recompute != "full":
        return 0.0
    if inp.recompute_method == "block" and inp.recompute_num_layers:
        return min(1.0, inp.recompute_num_layers * (inp.vpp or 1) / stage_layers)
    return 1.0


def _stage_microbatch(k: _Kernels, c: ParamCounts, m: int = 1) -> dict[str, float]:
    """One micro-batch on the last (slowest) pipeline stage: its layers, dense and MoE in proportion,
    plus the output layer, by cost term (seconds); `m` micro-batches a step."""
    inp = k.inp
    layer = _dense_layer(k)
    tp_fwd, tp_bwd = _tp_times(k, layer)
    moe_mlp, moe_act, ep_fwd = _moe_layer(k) if c.num_moe else (0.0, 0.0, 0.0)
    cp_fwd = _cp_time(k, layer.core)
    shared = layer.projections + layer.core + layer.elementwise
    stage_layers = inp.num_layers / max(1, inp.pp)
    moe_share = c.num_moe / inp.num_layers if inp.num_layers else 0.0
    t = dict.fromkeys(("compute", "recompute", "tp", "ep", "cp"), 0.0)
    dense = _LayerTime(shared + layer.mlp + layer.activation, tp_fwd, tp_bwd, layer.core, cp_fwd)
    if inp.encoder_decoder:
        dense = _encoder_decoder_pair(k, dense)
    elif hybrid_modelled(inp):
        dense = _hybrid_layer_mean(k, layer, dense)
    moe = _LayerTime(shared + moe_mlp + moe_act, tp_fwd, tp_bwd, layer.core, cp_fwd)
    replayed = _recompute_share(inp, stage_layers) if inp.recompute == "full" else 1.0
    moe_parts = (moe_mlp, moe_act, ep_fwd, expert_activation(k), shared_experts(k)) if c.num_moe else None
    moe_bias = expert_output_bias(k) if c.num_moe else 0.0  # forward and backward
    one_layer = {}  # one layer of each kind, by cost term
    for kind, lt, epc, share in (("dense", dense, 0.0, 1 - moe_share), ("moe", moe, ep_fwd, moe_share)):
        one_layer[kind] = {
            "compute": 3 * lt.compute + (moe_bias if kind == "moe" else 0.0),  # forward + 2x backward
            "tp": lt.tp_fwd + lt.tp_bwd,
            "ep": 2 * epc,
            "cp": 3 * lt.cp,
            "recompute": replayed * (lt.compute + lt.tp_fwd + epc)
            if inp.recompute == "full"
            else selective_replay(k, lt.core, layer.mlp + layer.activation, moe_parts if kind == "moe" else None),
        }
        for part, value in one_layer[kind].items():
            t[part] += share * stage_layers * value
    vocab, h = c.vocab_padded, inp.hidden_size
    tp = max(1, inp.tp)
    # T5's LM head (T5LMHead) and loss run over the decoder's tokens alone
    head_tokens = k.tokens * decoder_tokens_share(inp)
    t["head"] = (
        3 * k.gemm(head_tokens, vocab / tp, h) * bf16_head_factor(k) + 24 * head_tokens * vocab / tp / k.hbm
    )  # + fp32 cross-entropy
    t["pp"] = _pp_time(k)
    schedule = schedule_name(inp.options.pipeline_schedule, inp.vpp) if inp.pp > 1 else "1f1b"
    if schedule in ("dualpipe", "dualpipev") and t["ep"] > 0:
        # F&B chunks: the dispatch/combine of one micro-batch overlaps the other's compute (DeepSeek-V3 sec. 3.2.1)
        hidden = k.hidden(t["ep"], t["compute"] + t["recompute"])
        one_layer["moe"]["ep"] *= hidden / t["ep"]
        t["ep"] = hidden
    elif inp.options.moe_a2a_overlap and ep_fwd > 0:
        paired = paired_share(m, inp.vpp or 1, inp.options.microbatch_group or max(1, inp.pp))
        per_layer = paired * a2a_overlapped_layer(k, ep_fwd / 2, shared, moe_mlp + moe_act) + (1 - paired) * 2 * ep_fwd
        one_layer["moe"]["ep"] = per_layer
        t["ep"] = moe_share * stage_layers * per_layer
    # multi-token prediction on the last stage (megatron/core/transformer/multi_token_prediction.py,
    # MultiTokenPredictionLayer.forward): per depth eh_proj (column-parallel, 2h -> h) over the normed embedding and
    # hidden state, a transformer layer of the decoder's last layer's kind (params.mtp_layer_params), and the
    # model's output layer and loss again over its own logits (MTP's compute_language_model_loss)
    mtp = {part: 0.0 for part in ("compute", "recompute", "tp", "ep", "cp")}
    if inp.mtp_num_layers:
        mtp.update({part: inp.mtp_num_layers * v for part, v in one_layer["moe" if c.mtp_experts else "dense"].items()})
        mtp["compute"] += inp.mtp_num_layers * (t["head"] + 3 * k.gemm(k.tokens, h / tp, 2 * h))
    # the rank the step waits for: the last (it runs the head and MTP) of an even split, else the slowest by its
    # own layers (pipeline_stages: uneven first/last stages, embedding and loss counted, a custom layout)
    layer_parts = ("compute", "recompute", "tp", "ep", "cp")
    scale, with_head = slowest_rank(
        inp.pipeline_stage_layers if inp.pp > 1 else None,
        stage_layers,
        sum(t[p] for p in layer_parts),
        t["head"] + sum(mtp.values()),
    )
    for part in layer_parts:
        t[part] = t[part] * scale + (mtp[part] if with_head else 0.0)
    t["head"] = t["head"] if with_head else 0.0
    return t


def _deepspeed_pipeline(inp: ModelInput) -> bool:
    """DeepSpeed's PipelineEngine: every Megatron-DeepSpeed launch with --deepspeed and PP (its GPTModelPipe),
    and ZeRO-1/2 with PP > 1 elsewhere (it rejects ZeRO-2/3 with PP, deepspeed.md sec. 2.2; ZeRO-3 with
    PP is FSDP, e.g. torchtitan, whose schedules batch their p2p like Megatron)."""
    return bool(inp.deepspeed_pipeline_engine or (state_bytes(inp)[3] and (inp.zero_stage or 0) < 3))


def _pp_time(k: _Kernels) -> float:
    """PP sends of one micro-batch: the stage's output (b*s*h/cp, /tp with SP) forward and its gradient
    backward, per chunk."""
    inp = k.inp
    pp, tp, cp, v = max(1, inp.pp), max(1, inp.tp), max(1, inp.cp), inp.vpp or 1
    if pp == 1:
        return 0.0
    ds_pipe = _deepspeed_pipeline(inp)
    overlap = inp.options.overlap_p2p_comm if inp.options.overlap_p2p_comm is not None else (v > 1)
    across = not k.links.on_nvlink(pp, tp * cp * inp.data_parallel())
    # Megatron pairs each send with the opposite receive (send_forward_recv_backward: one batched
    # isend/irecv), so a micro-batch costs one transfer forward and one backward. DeepSpeed ZeRO with
    # PP > 1 means DeepSpeed's PipelineEngine (Megatron has no ZeRO stages), whose schedule runs
    # SendActivation, RecvActivation, SendGrad and RecvGrad as separate blocking p2p.send/p2p.recv
    # instructions (deepspeed/runtime/pipe/engine.py): four transfers, none overlapped.
    transfers = 4 if ds_pipe else 2
    full = 2 * k.tokens * inp.hidden_size
    # DeepSpeed's PipelineEngine partitions what it sends over the model-parallel group and gathers it on the
    # receiver (deepspeed/runtime/pipe/engine.py: is_pipe_partitioned / is_grad_partitioned when the model is
    # tensor-parallel; pipeline.pipe_partitioned and grad_partitioned default True, runtime/config.py)
    split = k.sp == 1 and tp > 1 and (ds_pipe or inp.options.pp_scatter_gather)
    t = transfers * v * point_to_point(k.links, full / (tp if split else k.sp), across)
    if split:  # the receiver's all-gather of the activation forward and of its gradient backward
        t += 2 * v * all_gather(k.links, full, tp, 1)
    return t * k.kappa if overlap and not ds_pipe else t


def _data_parallel(k: _Kernels, c: ParamCounts, m: int, busy: float) -> float:
    """Data-parallel traffic of a step: gradients and parameters once per step (ZeRO-3: every
    micro-batch), the part `busy` (one micro-batch's compute + recompute) cannot hide."""
    inp, o, links = k.inp, k.inp.options, k.links
    tp, cp, pp = max(1, inp.tp), max(1, inp.cp), max(1, inp.pp)
    dp = inp.data_parallel()
    dense_p, expert_p, largest = stage_params(inp, c, last=pp > 1)
    _, grad_b, _, zero = state_bytes(inp)
    level = inp.sharding_level()  # ZeRO's count of what is sharded: parallel.sharding, ZeRO, dist-opt
    # DeepSpeed overlap_comm: on by default only at ZeRO-3 (FSDP always prefetches); at ZeRO-1/2, and
    # always in the PipelineEngine, the gradients are reduced after the last backward
    zero_overlap = o.zero_overlap_comm if o.zero_overlap_comm is not None else level >= 3
    etp = inp.etp or tp
    expert_dp = max(1, inp.world_size // max(1, pp * inp.ep * etp))
    outer = _outer_replicas(inp)
    shard, expert_shard = inp.shard_group(), inp.expert_shard_group()

    def across_replicas(shard_bytes: float, expert_shard_bytes: float) -> float:
        if outer == 1:
            return 0.0
        reduce = reduce_scatter if inp.outer_optimizer_sharded else all_reduce
        t = reduce(links, shard_bytes, outer, tp * shard) + reduce(
            links, expert_shard_bytes, outer, etp * inp.ep * expert_shard
        )
        if inp.outer_optimizer_sharded:
            t += all_gather(links, 2 * (dense_p / shard + expert_p / expert_shard), outer, tp * shard)
        return t

    if level >= 3:
        # the per-layer all-gather of 16-bit weights, and the reduce-scatter of the gradients in their
        # reduce dtype (Megatron-FSDP: fp32 main grads unless --grad-reduce-in-bf16; ZeRO/FSDP: 16-bit)
        inner = max(1, dp // outer)
        gather = all_gather(links, 2 * (dense_p + expert_p), inner, tp * cp)
        rs_bytes = grad_b if inp.megatron_fsdp else 2
        # forward and backward gathers. FSDP's recompute runs inside the block's backward unshard;
        # DeepSpeed's per-sub-module hooks gather again for the recompute forward (fetch, release), then
        # for the backward: a third gather of the recomputed layers
        regather = _recompute_share(inp, inp.num_layers / pp) if o.zero3_engine == "deepspeed" else 0.0
        # ZeRO++ hpZ: the gathers after the forward one read the secondary copy, inside its k ranks
        later = (
            all_gather(links, 2 * (dense_p + expert_p), inp.hpz_partition, tp * cp)
            if 1 < inp.hpz_partition < inner
            else gather
        )
        per_mb = (
            gather + (1 + regather) * later + reduce_scatter(links, rs_bytes * (dense_p + expert_p), inner, tp * cp)
        )
        first_layer = per_mb * largest / max(1.0, dense_p + expert_p)
        exposed = max(0.0, per_mb - (busy if zero_overlap else 0.0))
        return m * (exposed + k.kappa * (per_mb - exposed) + first_layer) + across_replicas(
            rs_bytes * dense_p / shard, rs_bytes * expert_p / expert_shard
        )
    group, stride = dp * cp, tp
    if outer > 1:
        group, expert_dp = shard, expert_shard
    grads = reduce_scatter(links, grad_b * dense_p, group, stride) + reduce_scatter(
        links, grad_b * expert_p, expert_dp, etp * inp.ep
    )
    params = all_gather(links, 2 * dense_p, group, stride) + all_gather(links, 2 * expert_p, expert_dp, etp * inp.ep)
    if level == 0:
        grads, params = 2 * grads, 0.0  # a plain all-reduce of the gradients
    grads += across_replicas(grad_b * dense_p / shard, grad_b * expert_p / expert_shard)
    overlap_grads = o.overlap_grad_reduce or (zero and zero_overlap and pp == 1)
    overlap_params = o.overlap_param_gather or (zero and zero_overlap and pp == 1)
    g_exp = max(0.0, grads - 2 / 3 * busy) if overlap_grads else grads  # under one backward
    p_exp = max(0.0, params - busy / 3) if overlap_params else params  # under one forward
    return g_exp + p_exp + k.kappa * (grads - g_exp + params - p_exp)


def _outer_replicas(inp: ModelInput) -> int:
    """Hybrid sharding's dp_outer: gathers and reduce-scatters stay in the inner group (consecutive
    ranks of the dp x cp group, stride tp); once per step the reduced gradient shard is all-reduced over
    the dp_outer replicas, ranks an inner group apart (param_and_grad_buffer.py; Megatron-FSDP on the
    last micro-batch, megatron_fsdp.py). With the optimizer sharded over the outer group too, that is a
    reduce-scatter and, after the step, an all-gather of the 16-bit shard. 1 without it (and for a
    hybrid sharding that does not divide the group)."""
    outer = max(1, inp.dp_outer) if inp.sharding_level() >= 1 else 1
    return outer if inp.shard_group() * outer == inp.data_parallel() * max(1, inp.cp) else 1


def _optimizer_time(k: _Kernels, c: ParamCounts) -> float:
    """The optimizer step: memory-bound update of the local shard (~36 bytes per parameter moved)."""
    inp = k.inp
    dense_p, expert_p, _ = stage_params(inp, c, last=inp.pp > 1)
    outer = _outer_replicas(inp)
    if inp.sharding_level() < 1:
        local = dense_p + expert_p
    elif outer > 1:
        split = outer if inp.outer_optimizer_sharded else 1  # the optimizer's shard: the inner group's, or smaller
        local = dense_p / (inp.shard_group() * split) + expert_p / (inp.expert_shard_group() * split)
    else:
        etp = inp.etp or max(1, inp.tp)
        expert_dp = max(1, inp.world_size // max(1, max(1, inp.pp) * inp.ep * etp))
        local = dense_p / (inp.data_parallel() * max(1, inp.cp)) + expert_p / expert_dp
    return 36 * local / k.hbm


def _step_times(inp: ModelInput, c: ParamCounts, gpu: GPU, m: int) -> dict[str, float]:
    """The step's time by cost term (TIME_PART_NAMES), seconds."""
    k = _kernels(inp, gpu)
    mb = _stage_microbatch(k, c, m)
    # a micro-batch whose GPU work is shorter than the host's dispatch of it waits for the host
    mb["overhead"] = max(0.0, host_microbatch_s(inp, c, gpu) - sum(mb.values()))
    per_microbatch = sum(mb.values())  # the last stage: the slowest
    busy = mb["compute"] + mb["recompute"]
    # the schedule's idle time: bubble_fraction (of the ideal m micro-batches) x m x one micro-batch
    bubble = bubble_fraction(inp.pp, m, inp.vpp, inp.options.pipeline_schedule) * m * per_microbatch
    return {  # per-micro-batch terms summed over the step's m micro-batches, then the per-step ones
        "compute": m * (mb["compute"] + mb["head"]),
        "recompute": m * mb["recompute"],
        "tp": m * mb["tp"],
        "cp": m * mb["cp"],
        "ep": m * mb["ep"],
        "pp": m * mb["pp"],
        "bubble": bubble,
        "dp": _data_parallel(k, c, m, busy),
        "optimizer": _optimizer_time(k, c),
        "overhead": m * mb["overhead"] + gpu.host_overhead_factor * inp.options.host_step_s,
    }
