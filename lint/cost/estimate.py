"""`estimate(inp) -> Estimate`: memory per GPU, step time, tokens/s per GPU, MFU, pipeline bubble.

Time of one micro-batch on one pipeline stage (per GPU, seconds):
  GEMMs        2*M*N*K FLOPs each at peak x efficiency(M, N, K): efficiency = gemm_efficiency (catalog,
               the large-GEMM plateau) / (1 + R/M + R/N + R/K), R = Options.gemm_ramp. The backward
               is two GEMMs of the same size (input and weight gradients). M = tokens b*s/cp.
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
  fp8          operands cast to fp8 (4 B moved per element, 6 with current scaling's amax pass).
  CP           ring exchange of K and V ((cp-1) steps forward, twice that backward), hidden behind
               the attention core.
  EP           dispatch + combine all-to-all of k*h*2 bytes per token forward and backward, exposed.
  PP           one send of the stage's output forward and one backward per micro-batch and chunk;
               exposed unless p2p overlap is on (Megatron turns it on with VPP). DeepSpeed's
               PipelineEngine (ZeRO-1/2 with PP > 1) sends and receives each as its own blocking
               instruction: four transfers per micro-batch, never overlapped.
  recompute    full adds each layer's forward again (GEMMs, attention, element-wise, TP comm);
               selective adds the attention core forward.
Step = m x (1 + bubble) x slowest stage's micro-batch time, the bubble of the pipeline schedule
(schedule.py: (pp-1)/m for 1F1B, (pp-1)/(vpp*m) interleaved, less for zero-bubble and DualPipe;
DualPipe and --overlap-moe-expert-parallel-comm run one micro-batch's EP all-to-all under another's
compute, so only the excess is exposed) + exposed data-parallel traffic (after the last backward;
overlap hides it behind one micro-batch's backward; DeepSpeed overlaps by default only at ZeRO-3, and
ZeRO-3/FSDP gathers the parameters forward and backward and reduce-scatters the gradients every
micro-batch, hidden behind that micro-batch's compute but for the first layer's share; DeepSpeed's
per-sub-module hooks gather a third time for a full recompute, FSDP's per-block unshard does not) + the
optimizer step (memory-bound, ~36 bytes per local parameter).
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
from plint.cost.error_band import error_band
from plint.cost.flops import flops_per_step
from plint.cost.adapters import adapter_memory
from plint.cost.memory import (
    GIB,
    host_memory_bytes,
    stage_memories,
    stage_params,
    stage_steady_bytes,
    state_bytes,
    workspace_bytes,
)
from plint.cost.model_input import ModelInput
from plint.cost.pipeline_stages import slowest_rank
from plint.cost.params import ParamCounts, count_params
from plint.cost.schedule import bubble_fraction, schedule_name
from plint.record import record


# What each part of Estimate.time_s is, in words (messages and tables name them this way).
TIME_PART_NAMES = {"compute": "compute", "recompute": "recompute", "tp": "tensor-parallel communication",
                   "cp": "context-parallel communication", "ep": "expert all-to-all", "pp": "pipeline sends",
                   "bubble": "pipeline bubble", "dp": "data-parallel communication", "optimizer": "optimizer step"}


@record(frozen=True)
class Estimate:
    # weights, grads, optimizer, activations, workspace, other, total, usable, allocator_peak (+ its stage),
    # allocator_steady, stages (per pipeline stage where they differ), error_band
    memory_gib: dict
    bubble_fraction: float
    step_time_s: float
    mfu: float
    tokens_per_s_per_gpu: float
    params: int
    num_microbatches: int
    time_s: dict  # per-step breakdown: compute, recompute, tp, cp, ep, pp, bubble, dp, optimizer
    gpu: str
    notes: tuple = ()
    host_memory_gib: float | None = None  # per node, for the states DeepSpeed offloads to the CPU

    def with_assumption(self, note: str) -> Estimate:
        """The same estimate, saying what it assumed about its input."""
        values = {name: getattr(self, name) for name in self.__record_fields__}
        values["notes"] = (*self.notes, note)
        return Estimate(**values)

    def with_params(self, params: int) -> Estimate:
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
    return Estimate(memory, bubble_fraction(inp.pp, m, inp.vpp, opts.pipeline_schedule), step, mfu,
                    tokens / step / world if step > 0 else 0.0, c.total, m, times, gpu.name,
                    host_memory_gib=host / GIB if host is not None else None)


def _memory_gib(inp: ModelInput, c: ParamCounts, m: int, gpu: GPU) -> dict:
    """The `estimate.memory_gib` figures: the most loaded stage's parts, the allocator peak (what
    torch.cuda.max_memory_allocated() reports on that stage's GPUs: its states, activations and the
    run-long buffers allocated through PyTorch, memory.workspace_bytes), per stage where stages differ, and the total the device must hold
    (the allocator peak + the runtime reserve outside the allocator: CUDA context, NCCL buffers)."""
    # LoRA: only the adapters' gradients and optimizer states (cost.adapters), stage by stage
    stages = {name: adapter_memory(inp, c, parts) for name, parts in stage_memories(inp, c, m).items()}
    # cuBLAS's workspace grows from Hopper on; every catalog GPU with fp8 tensor cores from NVIDIA is Hopper or later
    workspace = workspace_bytes(inp, bool(gpu.fp8_tflops))
    peaks = {name: (sum(parts.values()) + workspace) / GIB for name, parts in stages.items()}
    stage = max(peaks, key=lambda name: peaks[name])  # first on a tie: the first stage holds the embedding
    memory = {k: v / GIB for k, v in stages[stage].items()}
    memory["workspace"] = workspace / GIB
    memory["other"] = inp.options.runtime_reserve_gib
    memory["total"] = sum(memory.values())
    memory["usable"] = gpu.hbm_gib * (1 - inp.options.fragmentation)
    memory["allocator_peak"] = peaks[stage]
    memory["allocator_peak_stage"] = stage
    memory["error_band"] = error_band(inp)
    # what stays allocated between steps: the states and the run-long buffers
    steady = {name: (stage_steady_bytes(inp, c, name == "last") + workspace) / GIB for name in stages}
    if inp.lora_rank:  # LoRA: the adapters' states only (cost.adapters); the fp32 gradient copies are theirs too
        steady = {name: (sum(parts[k] for k in ("weights", "grads", "optimizer")) + workspace) / GIB
                  for name, parts in stages.items()}
    memory["allocator_steady"] = steady[stage]
    if len(stages) > 1:
        memory["stages"] = {name: {"allocator_peak": peaks[name], "allocator_steady": steady[name]}
                            for name in stages}
    return memory


def _rounded(value):
    """GiB figures to 2 decimals, through the per-stage table; words as they are."""
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def _links(inp: ModelInput, gpu: GPU) -> Links:
    domain = inp.nvlink_domain or gpu.nvlink_domain(inp.gpus_per_node)
    a_nv, a_net = link_latencies_s()
    o = inp.options
    return Links(domain, gpu.nvlink_gbps / 2 * 1e9 * o.nvlink_efficiency, (inp.nic_gbps or gpu.nic_gbps) / 8 * 1e9 * o.network_efficiency,
                 a_nv, a_net, inp.world_size)


def _step_times(inp: ModelInput, c: ParamCounts, gpu: GPU, m: int) -> dict[str, float]:
    o = inp.options
    links = _links(inp, gpu)
    h, n, s = inp.hidden_size, inp.num_attention_heads, inp.seq_length
    d = inp.kv_channels or h // n
    g = inp.num_query_groups or n
    f = inp.ffn_width()
    tp, cp, pp, v = max(1, inp.tp), max(1, inp.cp), max(1, inp.pp), inp.vpp or 1
    b = inp.micro_batch
    sp = tp if inp.sequence_parallel else 1
    tokens = b * s / cp  # rows of every GEMM on this GPU
    gemm_peak = gpu.peak_tflops(inp.precision) * 1e12 * (0.5 if inp.precision == "fp32" else 1.0)
    attn_peak = (gpu.bf16_tflops or gpu.fp16_tflops or 0.0) * 1e12
    cap, ramp = gpu.gemm_efficiency * (o.fp8_gemm_factor if inp.precision == "fp8" else 1.0), o.gemm_ramp
    hbm = gpu.hbm_tbps * 1e12 * o.hbm_efficiency
    gate = 2 if inp.swiglu else 1

    def gemm(rows: float, cols: float, inner: float, count: float = 1.0) -> float:
        """Forward time of `count` GEMMs (rows x inner) @ (inner x cols)."""
        if rows <= 0 or cols <= 0 or inner <= 0:
            return 0.0
        eff = cap / (1 + ramp / rows + ramp / cols + ramp / inner)
        return count * 2 * rows * cols * inner / (gemm_peak * eff)

    # ---- one dense layer, forward ----
    attn_proj = gemm(tokens, (n + 2 * g) * d / tp, h) + gemm(tokens, h, n * d / tp)
    dense_mlp = gemm(tokens, f * gate / tp, h) + gemm(tokens, h, f / tp)
    causal = 0.5 if o.flash_attention else 1.0  # unfused attention computes the masked half too
    core_fwd = 4 * b * s * (s / cp) * d * (n / tp) * causal / (attn_peak * gpu.attention_efficiency)
    if not o.flash_attention:
        core_fwd += 11 * b * (n / tp) * s * (s / cp) / hbm
    act_elems = (2 + gate) * f / tp
    elementwise = 2 * tokens * (11 * h / sp + 2 * (n + g) * d / tp) / hbm  # norms, residuals, rotary
    if inp.precision == "fp8":
        # every GEMM operand is cast (read 2 B, write 1 B) and transposed (1 B) for the backward:
        # the inputs forward and the output gradients backward, ~4 B per element; per forward third
        operands = 4 * h + 2 * n * d / tp + (n + 2 * g) * d / tp + (1 + gate) * f / tp
        # current (per-tensor dynamic) scaling first reduces |x| over the bf16 tensor: one more 2 B read
        # per element before the cast (TE Float8CurrentScaling, torchao dynamic float8); delayed scaling
        # takes last step's amax from the history instead
        per_elem = 6 if o.fp8_recipe in ("tensorwise", "current") else 4
        elementwise += per_elem * tokens * operands / hbm / 3
    tp_unit = all_gather(links, 2 * tokens * h, tp, 1) if tp > 1 else 0.0  # one AG or RS of b*s*h
    tp_fwd = 4 * tp_unit
    kappa = o.overlap_slowdown
    if tp_fwd and o.tp_comm_overlap:
        exposed = max(tp_fwd - (attn_proj + dense_mlp), tp_fwd / tp)
        tp_fwd = exposed + kappa * (tp_fwd - exposed)
        tp_bwd = tp_fwd
    elif tp_unit and o.tp_async_backward:
        # Megatron's column-parallel backward (megatron-core tensor_parallel/layers.py, on since Sept
        # 2021; TransformerEngine's Linear and LayerNormLinear alike) launches its collectives
        # asynchronously: with SP the input all-gather for the weight gradient runs
        # under the input-gradient GEMM and the gradient's reduce-scatter under the weight-gradient
        # GEMM; without SP the gradient's all-reduce (two units) runs under the weight-gradient GEMM.
        # The row-parallel backward all-gathers its output gradient in the open with SP and has no
        # collective without it. Per layer the QKV and first MLP projections are column-parallel (an
        # MoE layer is costed as the dense one); a GEMM's dgrad and wgrad each last as long as its forward.
        tp_bwd = 2 * tp_unit if sp > 1 else 0.0
        under_dgrad_wgrad = (tp_unit, tp_unit) if sp > 1 else (0.0, 2 * tp_unit)
        for gemm_t in (gemm(tokens, (n + 2 * g) * d / tp, h), gemm(tokens, f * gate / tp, h)):
            for comm in under_dgrad_wgrad:
                hidden = min(comm, gemm_t)
                tp_bwd += comm - hidden + kappa * hidden
    else:
        tp_bwd = tp_fwd  # Megatron before Sept 2021 and forks without it: four collectives, in the open

    # ---- one MoE layer, forward: projections + shared expert + routed experts + router ----
    moe_mlp = ep_fwd = moe_act = 0.0
    if c.num_moe:
        experts = inp.num_experts or 1
        fm = inp.moe_ffn_hidden_size or f
        k = min(inp.moe_topk, experts)
        etp = inp.etp or tp
        ep = max(1, inp.ep)
        local = max(1.0, experts / ep)
        slots = tokens * k * etp / tp  # routed token copies this GPU's experts process
        moe_mlp = gemm(slots / local, fm * gate / etp, h, local) + gemm(slots / local, h, fm / etp, local)
        fs = inp.moe_shared_expert_size
        if fs:
            moe_mlp += gemm(tokens, fs * gate / tp, h) + gemm(tokens, h, fs / tp)
        moe_mlp += gemm(tokens / sp, experts, h)
        moe_act = 2 * (slots * (2 + gate) * fm / etp + 4 * tokens * k * h / tp) / hbm  # activation + permutes
        ep_fwd = 2 * all_to_all(links, tokens * k * h * 2 / tp, ep, etp)
        if etp > 1:
            # the all-to-all dispatcher all-gathers the tokens it received over the expert-TP group, and the
            # combine reduce-scatters them back (megatron/core/transformer/moe/token_dispatcher.py, core_v0.19:
            # MoEAlltoAllTokenDispatcher.dispatch_postprocess / combine_preprocess, group expt_tp)
            ep_fwd += 2 * all_gather(links, etp * tokens * k * h * 2 / tp, etp, 1)

    def layer_fwd(moe: bool) -> tuple[float, float, float]:
        """(compute, TP comm, EP comm) of one layer's forward."""
        if moe:
            return attn_proj + moe_mlp + core_fwd + elementwise + moe_act, tp_fwd, ep_fwd
        return attn_proj + dense_mlp + core_fwd + elementwise + 2 * tokens * act_elems / hbm, tp_fwd, 0.0

    # CP ring: K and V of the local chunk, (cp-1) steps, hidden behind the attention core
    cp_fwd = 0.0
    if cp > 1:
        kv = 2 * b * (s / cp) * g * d / tp * 2
        ring = (cp - 1) * point_to_point(links, kv, not links.on_nvlink(cp, tp))
        cp_fwd = max(0.0, ring - core_fwd)
        cp_fwd += kappa * (ring - cp_fwd)

    # ---- a stage: its layers (dense and MoE in proportion) plus the output layer on the last ----
    stage_layers = inp.num_layers / pp
    moe_share = c.num_moe / inp.num_layers if inp.num_layers else 0.0
    compute = tp_t = ep_t = cp_t = recompute = 0.0
    for moe, share in ((False, 1 - moe_share), (True, moe_share)):
        comp, tpc, epc = layer_fwd(moe)
        n_layers = share * stage_layers
        compute += n_layers * 3 * comp  # forward + 2x backward
        tp_t += n_layers * (tpc + tp_bwd)
        ep_t += n_layers * 2 * epc
        cp_t += n_layers * 3 * cp_fwd
        if inp.recompute == "full":
            recompute += n_layers * (comp + tpc + epc)
        elif inp.recompute == "selective":
            recompute += n_layers * core_fwd
    recomputed = 1.0 if inp.recompute == "full" else 0.0  # share of the stage's layers replayed in full
    if inp.recompute == "full" and inp.recompute_method == "block" and inp.recompute_num_layers:
        recomputed = min(1.0, inp.recompute_num_layers * v / stage_layers)
        recompute *= recomputed
    vocab = c.vocab_padded
    head = 3 * gemm(tokens, vocab / tp, h) + 24 * tokens * vocab / tp / hbm  # + fp32 cross-entropy passes
    # PP: the stage's output (b*s*h/cp, /tp with SP) forward and its gradient backward, per chunk
    pp_t = 0.0
    # DeepSpeed's PipelineEngine: every Megatron-DeepSpeed launch with --deepspeed and PP (its GPTModelPipe),
    # and ZeRO-1/2 with PP > 1 elsewhere (it rejects ZeRO-2/3 with PP, deepspeed.md sec. 2.2; ZeRO-3 with
    # PP is FSDP, e.g. torchtitan, whose schedules batch their p2p like Megatron)
    ds_pipe = inp.deepspeed_pipeline_engine or (state_bytes(inp)[3] and (inp.zero_stage or 0) < 3)
    if pp > 1:
        overlap = inp.options.overlap_p2p_comm if inp.options.overlap_p2p_comm is not None else (v > 1)
        across = not links.on_nvlink(pp, tp * cp * inp.data_parallel())
        # Megatron pairs each send with the opposite receive (send_forward_recv_backward: one batched
        # isend/irecv), so a micro-batch costs one transfer forward and one backward. DeepSpeed ZeRO with
        # PP > 1 means DeepSpeed's PipelineEngine (Megatron has no ZeRO stages), whose schedule runs
        # SendActivation, RecvActivation, SendGrad and RecvGrad as separate blocking p2p.send/p2p.recv
        # instructions (deepspeed/runtime/pipe/engine.py): four transfers, none overlapped.
        transfers = 4 if ds_pipe else 2
        pp_t = transfers * v * point_to_point(links, 2 * tokens * h / sp, across)
        if overlap and not ds_pipe:
            pp_t *= kappa
    schedule = schedule_name(o.pipeline_schedule, inp.vpp) if pp > 1 else "1f1b"
    if schedule in ("dualpipe", "dualpipev") or o.moe_a2a_overlap:
        # F&B chunks: the dispatch/combine of one micro-batch overlaps the other's compute (DeepSeek-V3
        # sec. 3.2.1; Megatron's --overlap-moe-expert-parallel-comm pairs micro-batches the same way)
        exposed = max(0.0, ep_t - (compute + recompute))
        ep_t = exposed + kappa * (ep_t - exposed)
    # the rank the step waits for: the last (it runs the head) of an even split, else the slowest by its own
    # layers (pipeline_stages: uneven first/last stages, embedding and loss counted, a custom layout)
    scale, with_head = slowest_rank(inp.pipeline_stage_layers if pp > 1 else None, stage_layers,
                                    compute + recompute + tp_t + ep_t + cp_t, head)
    compute, recompute, tp_t, ep_t, cp_t = (x * scale for x in (compute, recompute, tp_t, ep_t, cp_t))
    head = head if with_head else 0.0
    per_microbatch = compute + recompute + tp_t + ep_t + cp_t + pp_t + head  # the slowest rank
    # the schedule's idle time: bubble_fraction (of the ideal m micro-batches) x m x one micro-batch
    bubble = bubble_fraction(pp, m, inp.vpp, o.pipeline_schedule) * m * per_microbatch

    # ---- data parallel: gradients and parameters once per step (ZeRO-3: every micro-batch) ----
    dp = inp.data_parallel()
    dense_p, expert_p, largest = stage_params(inp, c, last=pp > 1)
    _, grad_b, _, zero = state_bytes(inp)
    level = inp.sharding_level()  # ZeRO's count of what is sharded: parallel.sharding, ZeRO, dist-opt
    stage3 = level >= 3
    # DeepSpeed overlap_comm: on by default only at ZeRO-3 (FSDP always prefetches); at ZeRO-1/2, and
    # always in the PipelineEngine, the gradients are reduced after the last backward
    zero_overlap = o.zero_overlap_comm if o.zero_overlap_comm is not None else stage3
    etp = inp.etp or tp
    expert_dp = max(1, inp.world_size // max(1, pp * inp.ep * etp))
    backward_window = 2 / 3 * (compute + recompute)
    # hybrid sharding: gathers and reduce-scatters stay in the inner group (consecutive ranks of the dp x cp
    # group, stride tp); once per step the reduced gradient shard is all-reduced over the dp_outer replicas,
    # ranks an inner group apart (param_and_grad_buffer.py; Megatron-FSDP on the last micro-batch, megatron_fsdp.py).
    # With the optimizer sharded over the outer group too, that is a reduce-scatter and, after the step,
    # an all-gather of the 16-bit shard.
    outer = max(1, inp.dp_outer) if level >= 1 else 1
    shard, expert_shard = inp.shard_group(), inp.expert_shard_group()
    outer = outer if shard * outer == dp * cp else 1  # (hybrid sharding that does not divide is costed as none)

    def across_replicas(shard_bytes: float, expert_shard_bytes: float) -> float:
        if outer == 1:
            return 0.0
        reduce = reduce_scatter if inp.outer_optimizer_sharded else all_reduce
        t = reduce(links, shard_bytes, outer, tp * shard) + reduce(links, expert_shard_bytes, outer,
                                                                    etp * inp.ep * expert_shard)
        if inp.outer_optimizer_sharded:
            t += all_gather(links, 2 * (dense_p / shard + expert_p / expert_shard), outer, tp * shard)
        return t

    dp_t = 0.0
    if stage3:
        # the per-layer all-gather of 16-bit weights, and the reduce-scatter of the gradients in their
        # reduce dtype (Megatron-FSDP: fp32 main grads unless --grad-reduce-in-bf16; ZeRO/FSDP: 16-bit)
        inner = max(1, dp // outer)
        gather = all_gather(links, 2 * (dense_p + expert_p), inner, tp * cp)
        rs_bytes = grad_b if inp.megatron_fsdp else 2
        # forward and backward gathers. FSDP's recompute runs inside the block's backward unshard;
        # DeepSpeed's per-sub-module hooks gather again for the recompute forward (fetch, release), then
        # for the backward: a third gather of the recomputed layers
        regather = recomputed if o.zero3_engine == "deepspeed" else 0.0
        # ZeRO++ hpZ: the gathers after the forward one read the secondary copy, inside its k ranks
        later = all_gather(links, 2 * (dense_p + expert_p), inp.hpz_partition, tp * cp) \
            if 1 < inp.hpz_partition < inner else gather
        per_mb = gather + (1 + regather) * later + \
            reduce_scatter(links, rs_bytes * (dense_p + expert_p), inner, tp * cp)
        first_layer = per_mb * largest / max(1.0, dense_p + expert_p)
        hidden = (compute + recompute) if zero_overlap else 0.0
        exposed = max(0.0, per_mb - hidden)
        dp_t = m * (exposed + kappa * (per_mb - exposed) + first_layer) + \
            across_replicas(rs_bytes * dense_p / shard, rs_bytes * expert_p / expert_shard)
    else:
        group, stride = dp * cp, tp
        if outer > 1:
            group, expert_dp = shard, expert_shard
        grads = reduce_scatter(links, grad_b * dense_p, group, stride) + \
            reduce_scatter(links, grad_b * expert_p, expert_dp, etp * inp.ep)
        params = all_gather(links, 2 * dense_p, group, stride) + \
            all_gather(links, 2 * expert_p, expert_dp, etp * inp.ep)
        if level == 0:
            grads, params = 2 * grads, 0.0  # a plain all-reduce of the gradients
        grads += across_replicas(grad_b * dense_p / shard, grad_b * expert_p / expert_shard)
        overlap_grads = o.overlap_grad_reduce or (zero and zero_overlap and pp == 1)
        overlap_params = o.overlap_param_gather or (zero and zero_overlap and pp == 1)
        g_exp = max(0.0, grads - backward_window) if overlap_grads else grads
        p_exp = max(0.0, params - (compute + recompute) / 3) if overlap_params else params
        dp_t = g_exp + p_exp + kappa * (grads - g_exp + params - p_exp)
    # optimizer: memory-bound update of the local shard (~36 bytes per parameter moved)
    if level >= 1:
        split = outer if inp.outer_optimizer_sharded else 1  # the optimizer's shard: the inner group's, or smaller
        local = dense_p / (shard * split) + expert_p / (expert_shard * split) if outer > 1 else \
            dense_p / (dp * cp) + expert_p / expert_dp
    else:
        local = dense_p + expert_p
    optimizer = 36 * local / hbm
    return {  # per-micro-batch terms summed over the step's m micro-batches, then the per-step ones
        "compute": m * (compute + head),
        "recompute": m * recompute,
        "tp": m * tp_t,
        "cp": m * cp_t,
        "ep": m * ep_t,
        "pp": m * pp_t,
        "bubble": bubble,
        "dp": dp_t,
        "optimizer": optimizer,
    }
