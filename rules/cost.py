"""PL301, PL302, PL308, PL310, PL401, PL402, PL403: the rules that stand on the cost model.

Each reads the estimate the engine attached to the layout (plint.cost.layout_estimate) and, where advice
needs it, re-estimates a variant of the same launch. Every number in a message comes from the cost
model. All stay silent when the launch uses something the model leaves out (multi-latent attention, a
custom pipeline layout, offloading): a wrong "out of memory" costs more than a missed hint.
"""

from __future__ import annotations

from plint.rules.base import Example, Finding, RuleContext, RuleDocs, register
from plint.rules.common import gpt, is_megatron, span, torchrun, trainer, value

from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from plint.cost import Estimate, ModelInput

MEMORY_PARTS = ("weights", "grads", "optimizer", "activations", "other")


def _threshold(ctx: RuleContext, name: str) -> float:
    from plint.checking.config import THRESHOLDS

    thresholds = getattr(ctx.settings, "thresholds", None) or {}
    return float(thresholds.get(name, THRESHOLDS[name]))


def _estimated(ctx: RuleContext) -> tuple[ModelInput, Estimate] | None:
    """(input, estimate) when the launch is fully modelled, else None (the rules stay silent)."""
    if ctx.layout is None:
        return None
    from plint.cost.layout_estimate import cost_input, layout_estimate

    est = layout_estimate(ctx.layout, ctx.settings)
    if est is None or ctx.layout.extras.get("estimate_unmodelled"):
        return None
    return cost_input(ctx.layout, ctx.settings), est


def _variant(inp: ModelInput, **changes) -> Estimate | None:
    from plint.cost import estimate

    return estimate(inp.replace(**changes) if changes else inp)


def _fits(est: Estimate, ctx: RuleContext) -> bool:
    """Within the headroom threshold: advice must not lead into a PL402 warning. Where memory is not
    modelled (fp8), the layout must fit with room for Transformer Engine's fp8 weight copies too (an fp8
    copy and its transpose: as many bytes per parameter as the bf16 weights the estimate counts)."""
    mem = est.memory_gib
    extra = mem["weights"] if ctx.layout is not None and ctx.layout.extras.get("memory_unmodelled") else 0.0
    return mem["total"] + extra <= _threshold(ctx, "memory-headroom") * mem["usable"]


def _gib(x: float) -> str:
    return f"{x:.1f}"


def _memory_parts(est: Estimate) -> str:
    mem = est.memory_gib
    return ", ".join(f"{part} {_gib(mem[part])}" for part in MEMORY_PARTS if round(mem.get(part, 0.0), 1))


def _memory_line(est: Estimate) -> str:
    mem = est.memory_gib
    return (f"predicted {_gib(mem['total'])} GiB per GPU of {_gib(mem['usable'])} GiB usable "
            f"({est.gpu}): {_memory_parts(est)}")


def _seconds(x: float) -> str:
    return f"{x:.3g} s" if x < 10 else f"{x:.1f} s"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _release_has(ctx: RuleContext, flag: str) -> bool:
    """Whether the trainer release the launch was checked against accepts `flag`."""
    from plint.rules.keys_and_flags import _catalog

    return _catalog(ctx).lookup(flag) is not None


# ---- memory -------------------------------------------------------------------------------------

def _memory_remedy(ctx: RuleContext, inp: ModelInput, est: Estimate) -> str:
    """The first simple change that the cost model says fits, as a message tail; '' when none does."""
    from plint.cost.model_input import SHARDING_LEVELS

    dp = inp.data_parallel()
    candidates = []
    if dp > 1 and inp.megatron_fsdp and is_megatron(ctx):
        # Megatron-FSDP shards by its strategy; v1 turns the distributed optimizer on by itself, v2 rejects it
        candidates.extend((f"--data-parallel-sharding-strategy {strategy}", {"sharding": sharding})
                          for strategy, sharding in (("optim", "optimizer"), ("optim_grads_params", "parameters"))
                          if SHARDING_LEVELS.index(sharding) > inp.sharding_level())
    elif dp > 1 and inp.sharding_level() == 0 and is_megatron(ctx):
        candidates.append(("--use-distributed-optimizer", {"distributed_optimizer": True}))
    if inp.tp > 1 and not inp.sequence_parallel and trainer(ctx) == "megatron":
        candidates.append(("--sequence-parallel", {"sequence_parallel": True}))
    if inp.recompute is None:
        candidates.append(("--recompute-activations (selective)", {"recompute": "selective"}))
    candidates += _recompute_or_smaller_micro(
        inp, "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1", "--micro-batch-size")
    if not is_megatron(ctx) and "batch.micro" in ctx.layout.extras.get("facts", {}):
        candidates = _trainer_remedies(ctx, inp)  # an HF Trainer launch: its own arguments, not Megatron's
    for what, changes in candidates:
        if is_megatron(ctx) and what.startswith("--") and not _release_has(ctx, what.split()[0]):
            continue
        variant = _variant(inp, **changes)
        if variant is not None and _fits(variant, ctx):
            return f"; with {what} it would need {_gib(variant.memory_gib['total'])} GiB"
    return ""


def _trainer_remedies(ctx: RuleContext, inp: ModelInput) -> list[tuple[str, dict]]:
    """The changes an HF Trainer launch makes with its own arguments and its DeepSpeed config."""
    candidates = []
    if trainer(ctx) == "deepspeed" and inp.data_parallel() > 1 and inp.sharding_level() < 3:
        candidates.append(("ZeRO stage 3 (zero_optimization.stage)", {"zero_stage": 3, "sharding": "parameters"}))
    return candidates + _recompute_or_smaller_micro(inp, "--gradient_checkpointing True",
                                                    "--per_device_train_batch_size")


def _recompute_or_smaller_micro(inp: ModelInput, recompute: str, micro_flag: str) -> list[tuple[str, dict]]:
    """Full recompute of every layer, then half the micro-batch, as the launch's trainer spells them."""
    out = []
    if inp.recompute != "full":
        out.append((recompute, {"recompute": "full", "recompute_method": "uniform", "recompute_num_layers": 1}))
    if inp.micro_batch > 1:
        out.append((f"{micro_flag} {inp.micro_batch // 2}", {"micro_batch": inp.micro_batch // 2}))
    return out


def _memory_modelled(ctx: RuleContext) -> tuple[ModelInput, Estimate] | None:
    """_estimated, and None too where the model times the launch but cannot count its memory (fp8)."""
    estimated = _estimated(ctx)
    return None if estimated is None or ctx.layout.extras.get("memory_unmodelled") else estimated


def _memory_span(ctx: RuleContext):
    return span(ctx, "batch.micro", "parallel.tp", "parallel.pp", "model.seq_length")


@register(
    "PL401", "predicted-oom", "error",
    "The estimated peak memory per GPU exceeds the usable memory.",
    RuleDocs(
        what="Estimates the peak memory of the busiest GPU (the first pipeline stage): weights, gradients and "
             "optimizer states by precision and sharding, activations for the micro-batches the schedule keeps "
             "in flight, and a runtime reserve (CUDA context, workspaces, NCCL buffers), against the HBM left "
             "after allocator fragmentation. Names the first simple change that would fit. Silent on fp8 "
             "launches, whose memory Transformer Engine moves both ways (fp8 weight copies kept across "
             "micro-batches, fp8-saved activations) by amounts the model does not count; the estimate says so. "
             "A warning, not an error, when the launch names no GPU and plint assumed one.",
        why="An out-of-memory error comes minutes into a job that may have waited hours in the queue, and is "
            "found again on every retry until the layout changes.",
        bad=torchrun(gpt("--tensor-model-parallel-size 1", layers=32, hidden=4096, heads=32, seq=4096, micro=4)),
        good=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer\n"
                          "--recompute-activations", layers=32, hidden=4096, heads=32, seq=4096, micro=1)),
        fix="Not fixed automatically: `plint plan` proposes layouts that fit.",
    ),
)
def predicted_oom(ctx: RuleContext):
    estimated = _memory_modelled(ctx)
    if estimated is None:
        return
    inp, est = estimated
    if est.memory_gib["total"] > est.memory_gib["usable"]:
        gpu = value(ctx, "cluster.gpu")
        if gpu is not None and gpu.origin == "assumed":
            # the verdict rests on a GPU plint assumed (the launch names none): a warning until the GPU is
            # named, since a larger part (H200, GH200, MI300X) may hold it
            yield Finding(_memory_line(est) + _memory_remedy(ctx, inp, est) + f"; the GPU is assumed ({gpu.value}): "
                          "name it with --gpu or [tool.plint] gpu for a verdict", _memory_span(ctx),
                          key="estimate.memory", severity="warning")
            return
        yield Finding(_memory_line(est) + _memory_remedy(ctx, inp, est), _memory_span(ctx), key="estimate.memory")


@register(
    "PL402", "memory-headroom", "warning",
    "The estimated peak memory per GPU is close to the usable memory.",
    RuleDocs(
        what="Warns when the memory estimate of PL401 is above the headroom threshold (default 90%) of the "
             "usable memory but not above it.",
        why="Memory estimates carry a few percent of error, and a run's peak moves with the data (the longest "
            "packed sequence, the MoE routing of one batch): a launch at 95% of usable memory fails some days.",
        bad=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel", layers=34, hidden=4096, heads=32,
                         seq=4096)),
        good=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer",
                          layers=34, hidden=4096, heads=32, seq=4096)),
        fix="Not fixed automatically: `plint plan` proposes layouts with headroom.",
    ),
)
def memory_headroom(ctx: RuleContext):
    estimated = _memory_modelled(ctx)
    if estimated is None:
        return
    inp, est = estimated
    mem, limit = est.memory_gib, _threshold(ctx, "memory-headroom")
    if limit * mem["usable"] < mem["total"] <= mem["usable"]:
        yield Finding(f"{_memory_line(est)}; above {limit:.0%} of usable{_memory_remedy(ctx, inp, est)}",
                      _memory_span(ctx), key="estimate.memory")


# ---- time ---------------------------------------------------------------------------------------

@register(
    "PL301", "pipeline-bubble", "warning",
    "The estimated pipeline bubble is above the threshold.",
    RuleDocs(
        what="Estimates the idle share of each step that the pipeline schedule leaves at its start and end: "
             "(pp-1)/vpp stage-times of fill and drain against the micro-batches of one step (1F1B and "
             "interleaved schedules), and warns above the bubble threshold (default 10% of the step).",
        why="With pp 8 and 16 micro-batches per step, 1F1B idles every GPU for 7 of 23 stage-times: 30% of the "
            "step. More micro-batches per step (a smaller micro-batch or a larger global batch) or virtual "
            "pipeline stages shrink it.",
        bad=torchrun(gpt("--tensor-model-parallel-size 1 --pipeline-model-parallel-size 8", layers=32,
                         glob=16), nproc=8),
        good=torchrun(gpt("--tensor-model-parallel-size 1 --pipeline-model-parallel-size 8", layers=32,
                          glob=256), nproc=8),
        fix="Not fixed automatically: raise the global batch, lower the micro-batch, or add "
            "--num-layers-per-virtual-pipeline-stage.",
    ),
)
def pipeline_bubble(ctx: RuleContext):
    estimated = _estimated(ctx)
    if estimated is None:
        return
    inp, est = estimated
    limit = _threshold(ctx, "bubble")
    share = _bubble_share(est)
    if inp.pp <= 1 or share <= limit:
        return
    vpp = inp.vpp or 1
    hint = ""
    # advice PL108 would reject is no advice: the interleaved schedule needs pp >= 2 (3 without p2p
    # overlap) and at least pp micro-batches per step
    minimum_pp = 3 if inp.options.overlap_p2p_comm is False else 2
    if inp.vpp is None and inp.num_layers % (inp.pp * 2) == 0 and inp.pp >= minimum_pp \
            and est.num_microbatches >= inp.pp:
        variant = _variant(inp, vpp=2)
        if variant is not None and _fits(variant, ctx):
            hint = (f"; with 2 virtual stages per rank (--num-layers-per-virtual-pipeline-stage "
                    f"{inp.num_layers // (inp.pp * 2)}) it would be {_pct(_bubble_share(variant))}")
    yield Finding(f"pipeline bubble {_pct(share)} of the step (above {limit:.0%}): pp {inp.pp}"
                  f"{f', vpp {vpp}' if vpp > 1 else ''}, {est.num_microbatches} micro-batches per step{hint}",
                  span(ctx, "parallel.pp"), key="estimate.bubble_fraction")


# PL302 wants the simpler layout predicted at least this much faster. Comparing two layouts of one model on
# one cluster cancels most of the model's absolute error (calibration MAPE ~10%), but not all: a
# predicted gain of 1-3% is inside what it cannot tell apart, and advice to re-layout a run on that is noise.
NEEDLESS_MIN_GAIN = 0.05
# MoE steps are predicted about twice as loosely (calibration MAPE 23.5% vs 11.4% dense): ask twice the margin.
NEEDLESS_MIN_GAIN_MOE = 0.10

def _bubble_share(est: Estimate) -> float:
    """The idle pipeline time as a share of the whole step (the estimate's bubble_fraction is relative
    to the ideal compute time, as Narayanan et al. define it: (pp-1)/(vpp*m))."""
    return est.time_s.get("bubble", 0.0) / est.step_time_s if est.step_time_s > 0 else 0.0


_AXES = {"tp": ("parallel.tp", "tensor"), "pp": ("parallel.pp", "pipeline"), "cp": ("parallel.cp", "context"),
         "ep": ("parallel.ep", "expert")}


def _without_axis(inp: ModelInput, axis: str) -> ModelInput | None:
    """The same launch with one axis set to 1 and its GPUs given to data parallelism; None when the
    result would be invalid (the global batch no longer divides)."""
    size = getattr(inp, axis)
    dp = inp.data_parallel()
    changes: dict = {axis: 1}
    if axis != "ep":  # experts are carved out of data parallelism: dropping EP frees no GPUs
        dp *= size
        changes["dp"] = dp
    if axis == "tp":
        changes["sequence_parallel"] = False
        changes["etp"] = None if inp.etp in (None, inp.tp) else inp.etp
    if axis == "pp":
        changes["vpp"] = None
    if axis == "ep" and (inp.num_experts or 0) <= 1:
        return None
    global_batch = inp.global_batch or inp.micro_batch * inp.data_parallel()
    if global_batch % (inp.micro_batch * dp):
        return None
    return inp.replace(**changes)


@register(
    "PL302", "needless-parallelism", "warning",
    "A model-parallel axis can be dropped: the simpler layout fits and is predicted faster.",
    RuleDocs(
        what="For each of tensor, pipeline, context and expert parallelism in use, re-estimates the launch with "
             "that axis set to 1 and its GPUs given to data parallelism (for experts: replicated), and warns "
             "when that layout fits within the memory headroom and its step is predicted at least 5% shorter "
             "(10% for MoE models; smaller differences are inside what the model can tell apart).",
        why="Every axis costs communication and complexity: use the least parallelism that fits. A 1.3B model "
            "with tp 2 on 8 GPUs splits GEMMs that already run below peak and all-gathers activations on "
            "every layer, to save memory it does not need.",
        bad=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer",
                         glob=256)),
        good=torchrun(gpt("--use-distributed-optimizer", glob=256)),
        fix="Not fixed automatically yet; planned: `plint fix --unsafe-fixes` rewrites the sizes (checkpoints "
            "change layout).",
    ),
)
def needless_parallelism(ctx: RuleContext):
    estimated = _estimated(ctx) if is_megatron(ctx) else None
    if estimated is None:
        return
    inp, est = estimated
    for axis, (key, name) in _AXES.items():
        size = getattr(inp, axis)
        if size <= 1:
            continue
        simpler = _without_axis(inp, axis)
        variant = _variant(simpler) if simpler is not None else None
        margin = NEEDLESS_MIN_GAIN_MOE if inp.num_experts else NEEDLESS_MIN_GAIN
        if variant is None or not _fits(variant, ctx) or variant.step_time_s > (1 - margin) * est.step_time_s:
            continue
        gain = 1 - variant.step_time_s / est.step_time_s
        given = f" and dp {simpler.data_parallel()}" if axis != "ep" else " (experts replicated)"
        yield Finding(f"{name} parallelism {axis} {size} is not needed: with {axis} 1{given} the launch fits "
                      f"({_gib(variant.memory_gib['total'])} of {_gib(variant.memory_gib['usable'])} GiB) and "
                      f"the step is predicted {_pct(gain)} shorter ({_seconds(variant.step_time_s)} vs "
                      f"{_seconds(est.step_time_s)})", span(ctx, key), key=key)
        return  # one axis at a time: the next advice depends on the layout after this one


@register(
    "PL308", "full-recompute-unneeded", "info",
    "Full activation recompute where selective recompute fits in memory.",
    RuleDocs(
        what="With --recompute-granularity full, re-estimates the launch with selective recompute (the "
             "attention core only) and reports when that fits within the memory headroom.",
        why="Full recompute runs every layer's forward twice: about a third more compute per step. Selective "
            "recompute keeps most of the memory saving (Korthikanti et al. 2022: the attention scores are "
            "the large part) for a few percent.",
        bad=torchrun(gpt("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1\n"
                         "--use-distributed-optimizer")),
        good=torchrun(gpt("--recompute-activations --use-distributed-optimizer")),
        fix="Not fixed automatically yet; planned: `plint fix` replaces the recompute flags with "
            "--recompute-activations (safe: same numerics).",
    ),
)
def full_recompute_unneeded(ctx: RuleContext):
    estimated = _estimated(ctx) if is_megatron(ctx) else None
    if estimated is None:
        return
    inp, est = estimated
    if inp.recompute != "full" or not _release_has(ctx, "--recompute-activations"):
        return  # the bigscience fork, for one, knows only full recompute (--checkpoint-activations)
    variant = _variant(inp, recompute="selective", recompute_method=None, recompute_num_layers=None)
    if variant is None or not _fits(variant, ctx):
        return
    gain = 1 - variant.step_time_s / est.step_time_s
    yield Finding(f"full recompute where selective fits: with --recompute-activations the launch needs "
                  f"{_gib(variant.memory_gib['total'])} of {_gib(variant.memory_gib['usable'])} GiB and the step "
                  f"is predicted {_pct(gain)} shorter ({_seconds(variant.step_time_s)} vs {_seconds(est.step_time_s)})",
                  span(ctx, "recompute.granularity"), key="recompute.granularity")


@register(
    "PL310", "low-mfu", "info",
    "The predicted model FLOPs utilisation is below the threshold.",
    RuleDocs(
        what="Reports when the predicted MFU (model FLOPs as Megatron counts them, over the step time and the "
             "GPUs' dense bf16 peak) is below the threshold (default 35%), with the largest part of the step "
             "that is not model compute. When model compute alone takes over 90% of the step, the low MFU "
             "comes from the model's own shape (GEMMs too small to run near peak, attention, element-wise "
             "work): the rule then reports only if a larger micro-batch (one that divides the batch and fits "
             "within the memory headroom) is predicted at least 5% faster (10% for MoE), and names it.",
        why="Well-tuned large runs reach 35-55% MFU; below that, the step's time usually goes to a pipeline "
            "bubble, communication on a slow link, or GEMMs too small to run near peak.",
        bad=torchrun(gpt("--tensor-model-parallel-size 8 --sequence-parallel --use-distributed-optimizer",
                         layers=12, hidden=768, heads=12, seq=1024, micro=1, glob=64)),
        good=torchrun(gpt("--use-distributed-optimizer", layers=32, hidden=4096, heads=32, seq=4096, micro=1,
                          glob=256)),
        fix="Not fixable: the message names where the time goes.",
    ),
)
def low_mfu(ctx: RuleContext):
    estimated = _estimated(ctx) if is_megatron(ctx) else None
    if estimated is None:
        return
    inp, est = estimated
    from plint.cost.estimate import TIME_PART_NAMES

    limit = _threshold(ctx, "mfu")
    if est.mfu >= limit or est.step_time_s <= 0:
        return
    step = est.step_time_s
    parts = {k: v for k, v in est.time_s.items() if k != "compute" and v > 0}
    head = f"predicted MFU {_pct(est.mfu)} (below {limit:.0%}), {est.tokens_per_s_per_gpu:,.0f} tokens/s per GPU"
    if sum(parts.values()) >= LAYOUT_SHARE * step:
        worst = max(parts, key=parts.get)
        yield Finding(f"{head}; the largest part besides compute is {TIME_PART_NAMES.get(worst, worst)}, "
                      f"{_pct(parts[worst] / step)} of the {_seconds(step)} step",
                      span(ctx, "parallel.tp", "parallel.pp", "batch.micro"), key="estimate.mfu")
        return
    # Model compute is nearly the whole step: the model's shape sets the MFU, and of the launch only the
    # micro-batch (the rows of every GEMM) moves it. Silent when no larger one is predicted clearly faster.
    larger = _faster_micro_batch(ctx, inp, est)
    if larger is None:
        return
    micro, variant = larger
    # a DeepSpeed config that states the micro-batch must say the same (PL106 checks they agree)
    cfg = ctx.layout.extras.get("ds_config")
    stated = cfg.train_micro_batch_size_per_gpu.value if cfg is not None else None
    also = (f" and \"train_micro_batch_size_per_gpu\": {micro} in {cfg.path}"
            if stated is not None and stated != "auto" else "")
    yield Finding(f"{head}; model compute takes {_pct(est.time_s['compute'] / step)} of the step, and with "
                  f"--micro-batch-size {micro}{also} (larger GEMMs) the launch fits ({_gib(variant.memory_gib['total'])} "
                  f"of {_gib(variant.memory_gib['usable'])} GiB) and the step is predicted "
                  f"{_pct(1 - variant.step_time_s / step)} shorter ({_seconds(variant.step_time_s)} vs "
                  f"{_seconds(step)})", span(ctx, "batch.micro"), key="estimate.mfu")


# PL310 names where the time goes only when the parts of the step outside model compute (communication,
# bubble, recompute, optimizer) add up to this share: below it, no change of layout buys back much.
LAYOUT_SHARE = 0.10


def _faster_micro_batch(ctx: RuleContext, inp: ModelInput, est: Estimate) -> tuple[int, Estimate] | None:
    """The larger micro-batch (dividing the per-rank batch) predicted fastest, when it fits within the
    headroom and beats the launch by PL302's margin; None otherwise."""
    dp = inp.data_parallel()
    global_batch = inp.global_batch or inp.micro_batch * dp
    if global_batch % (inp.micro_batch * dp):
        return None
    per_rank = global_batch // dp
    best = None
    for micro in sorted({d for i in range(1, int(per_rank ** 0.5) + 1) if per_rank % i == 0
                         for d in (i, per_rank // i) if d > inp.micro_batch}):
        variant = _variant(inp, micro_batch=micro)
        if variant is None or not _fits(variant, ctx):
            break  # activations grow with the micro-batch: no larger one fits either
        if best is None or variant.step_time_s < best[1].step_time_s:
            best = (micro, variant)
    margin = NEEDLESS_MIN_GAIN_MOE if inp.num_experts else NEEDLESS_MIN_GAIN
    if best is None or best[1].step_time_s > (1 - margin) * est.step_time_s:
        return None
    return best


def _offload_job(mem: str) -> Example:
    """LLaMA-33B under ZeRO-3 with optimizer and parameters offloaded to the CPU, on one node of `mem`."""
    return Example({"job.slurm": f"#!/bin/bash\n#SBATCH --nodes=1 --gpus-per-node=8 --mem={mem}\n"
                                 "deepspeed --num_gpus 8 train.py --model_name_or_path huggyllama/llama-30b "
                                 "--deepspeed ds.json --per_device_train_batch_size 1 --bf16 --model_max_length 2048\n",
                    "ds.json": '{"train_micro_batch_size_per_gpu": "auto", "bf16": {"enabled": "auto"}, '
                               '"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, '
                               '"offload_param": {"device": "cpu"}}}\n'}, main="job.slurm")


@register(
    "PL403", "predicted-host-oom", "error",
    "ZeRO's CPU offload needs more host memory per node than the node has.",
    RuleDocs(
        what="With zero_optimization.offload_optimizer (and offload_param) on the CPU, estimates the host memory "
             "per node as DeepSpeed's own estimators do (estimate_zero2_model_states_mem_needs, "
             "estimate_zero3_model_states_mem_needs, with their 1.5 buffer factor; ZeRO-3 built under zero.Init, "
             "the smaller figure) and compares it with the node's RAM when the launch or the config says it "
             "(sbatch --mem, [tool.plint] host-memory). An error when the need exceeds the RAM even without "
             "DeepSpeed's 1.5 buffer, a warning when only the buffered figure does.",
        why="The fp32 master weights, Adam's moments and gradients of every parameter move to the CPU: a 33B "
            "model needs about 18 bytes a parameter there. The job is killed by the kernel's OOM killer, or "
            "swaps, after the model has loaded.",
        bad=_offload_job("600G"),
        good=_offload_job("1500G"),
        fix="Not fixed automatically.",
        references=("deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs",
                    "deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs"),
    ),
)
def predicted_host_oom(ctx: RuleContext):
    if ctx.layout is None:
        return
    from plint.cost.host_memory import BUFFER_FACTOR
    from plint.cost.layout_estimate import layout_estimate

    layout_estimate(ctx.layout, ctx.settings)
    host = ctx.layout.extras.get("host_memory")
    if host is None or host["ram"] is None or host["gib"] <= host["ram"].value:
        return
    unbuffered = host["gib"] / BUFFER_FACTOR
    severity = "error" if unbuffered > host["ram"].value else "warning"
    yield Finding(f"{host['what']} needs about {host['gib']:,.0f} GiB of host memory per node (DeepSpeed's "
                  f"estimator; {unbuffered:,.0f} GiB without its 1.5 buffer) but the node has "
                  f"{host['ram'].value:,.0f} GiB ({host['ram'].note})", host["ram"].span or span(ctx, "parallel.zero_stage"),
                  key="estimate.host_memory_gib", severity=severity)
