"""PL301, PL302, PL308, PL310, PL401, PL402: the rules that stand on the cost model's step estimate
(PL403, the host memory of CPU offload, is in plint.rules.host_memory).

Each reads the estimate the engine attached to the layout (plint.cost.layout_estimate) and, where advice
needs it, re-estimates a variant of the same launch. Every number in a message comes from the cost
model. All stay silent when the launch uses something the model leaves out (multi-latent attention, a
custom pipeline layout, offloading): a wrong "out of memory" costs more than a missed hint.
"""

from __future__ import annotations


from plint.cost.error_band import MEASURED_STEP_ERROR, memory_band
from plint.rules.base import Finding, LaunchContext, RuleContext, RuleDocs, no_fix, register, unsafe_fix
from plint.rules.common import (
    CP_USEFUL_FROM,
    FIGURES,
    gpt,
    is_gpt_neox,
    is_megatron,
    on_assumed_node,
    span,
    torchrun,
    trainer,
    value,
)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.cost import Estimate, ModelInput
    from plint.layout import FieldPath

MEMORY_PARTS = ("weights", "grads", "optimizer", "activations", "other")


def _threshold(ctx: RuleContext, name: str) -> float | None:
    """The configured threshold, else its default; None for one that is off (bubble, memory-headroom)."""
    from plint.checking.config import THRESHOLDS

    thresholds = getattr(ctx.settings, "thresholds", None) or {}
    limit = thresholds.get(name, THRESHOLDS[name])
    return None if limit is None else float(limit)


def _mfu_threshold(ctx: RuleContext) -> float:
    limit = _threshold(ctx, "mfu")
    assert limit is not None  # it has a default, and a configuration can set it only to a number
    return limit


def _estimated(ctx: RuleContext, memory_only: bool = False) -> tuple[ModelInput, Estimate] | None:
    """(input, estimate) when the launch is fully modelled, else None (the rules stay silent). A rule that
    judges memory alone still gets it where only the time is not modelled (CPU offload)."""
    if ctx.layout is None:
        return None
    from plint.cost.layout_estimate import cost_input, layout_estimate

    est = layout_estimate(ctx.layout, ctx.settings)
    if est is None or ctx.layout.extras.estimate_unmodelled:
        return None
    if not memory_only and ctx.layout.extras.time_unmodelled:
        return None
    inp = cost_input(ctx.layout, ctx.settings)
    assert inp is not None  # the estimate was made of this very input
    return inp, est


def _variant(inp: ModelInput, **changes) -> Estimate | None:
    from plint.cost import estimate

    return estimate(inp.replace(**changes) if changes else inp)


def _fits(est: Estimate, ctx: RuleContext) -> bool:
    """The high end of the estimate's measured error band within usable memory (and, where one is configured,
    the estimate within the headroom threshold): advice must not lead into a PL402 warning."""
    return not _memory_tight(est, ctx)


def _memory_tight(est: Estimate, ctx: RuleContext) -> str | None:
    """Why PL402 would warn about `est` (the high end of its measured error band over usable memory, or the
    estimate over a configured headroom threshold), or None."""
    mem, limit = est.memory_gib, _threshold(ctx, "memory-headroom")
    if memory_band(est.memory_gib)[1] > mem["usable"]:
        return "the high end of its band is over usable memory"
    if limit is not None and mem["total"] > limit * mem["usable"]:
        return f"above {limit:.0%} of usable (thresholds.memory-headroom)"
    return None


def _band_text(est: Estimate) -> str:
    low, high = memory_band(est.memory_gib)
    return (
        f"; {_gib(low)} to {_gib(high)} GiB within the +-{100 * est.memory_gib.get('error_band', 0.0):.0f}% "
        "these estimates measure against Megatron-LM"
    )


def _gib(x: float) -> str:
    return f"{x:.1f}"


def _memory_parts(est: Estimate) -> str:
    mem = est.memory_gib
    return ", ".join(f"{part} {_gib(mem[part])}" for part in MEMORY_PARTS if round(mem.get(part, 0.0), 1))


def _memory_line(est: Estimate) -> str:
    mem = est.memory_gib
    return (
        f"predicted {_gib(mem['total'])} GiB per GPU{_busiest_rank(est)} of {_gib(mem['usable'])} GiB usable "
        f"({est.gpu}): {_memory_parts(est)}"
    )


def _busiest_rank(est: Estimate) -> str:
    """' on pipeline rank r' where the peak is on a middle rank (its own layers and micro-batches in flight make
    it the busiest), else '': the first and last ranks are what a reader expects."""
    mem = est.memory_gib
    if mem.get("allocator_peak_stage") != "middle":
        return ""
    return f" on pipeline rank {mem['allocator_peak_rank']} (the busiest: its own layers and micro-batches in flight)"


def _seconds(x: float) -> str:
    return f"{x:.3g} s" if x < 10 else f"{x:.1f} s"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _release_has(ctx: RuleContext, flag: str) -> bool:
    """Whether the trainer release the launch was checked against accepts `flag`."""
    from plint.rules.keys_and_flags import flag_catalog

    return flag_catalog(ctx).lookup(flag) is not None


# ---- memory -------------------------------------------------------------------------------------


def _memory_remedy(ctx: LaunchContext, inp: ModelInput, est: Estimate) -> str:
    """The first simple change that the cost model says fits, as a message tail; '' when none does."""
    from plint.cost.model_input import SHARDING_LEVELS

    dp = inp.data_parallel()
    candidates: list[tuple[str, dict]] = []
    if dp > 1 and inp.megatron_fsdp and is_megatron(ctx):
        # Megatron-FSDP shards by its strategy; v1 turns the distributed optimizer on by itself, v2 rejects it
        candidates.extend(
            (f"--data-parallel-sharding-strategy {strategy}", {"sharding": sharding})
            for strategy, sharding in (("optim", "optimizer"), ("optim_grads_params", "parameters"))
            if SHARDING_LEVELS.index(sharding) > inp.sharding_level()
        )
    elif dp > 1 and inp.sharding_level() == 0 and is_megatron(ctx):
        candidates.append(("--use-distributed-optimizer", {"distributed_optimizer": True}))
    if inp.tp > 1 and not inp.sequence_parallel and trainer(ctx) == "megatron":
        candidates.append(("--sequence-parallel", {"sequence_parallel": True}))
    if inp.recompute is None:
        candidates.append(("--recompute-activations (selective)", {"recompute": "selective"}))
    candidates += _recompute_or_smaller_micro(
        inp, "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1", "--micro-batch-size"
    )
    if not is_megatron(ctx) and "batch.micro" in ctx.layout.extras.facts:
        candidates = _trainer_remedies(ctx, inp)  # an HF Trainer launch: its own arguments, not Megatron's
    for what, changes in candidates:
        if is_megatron(ctx) and what.startswith("--") and not _release_has(ctx, what.split()[0]):
            continue
        if is_gpt_neox(ctx) and what.startswith("--"):
            continue  # a Megatron flag GPT-NeoX does not take: its settings are config keys
        variant = _variant(inp, **changes)
        if variant is not None and _fits(variant, ctx):
            low, high = memory_band(variant.memory_gib)
            return f"; with {what} it would need {_gib(variant.memory_gib['total'])} GiB ({_gib(low)} to {_gib(high)})"
    return ""


def _trainer_remedies(ctx: RuleContext, inp: ModelInput) -> list[tuple[str, dict]]:
    """The changes an HF Trainer launch makes with its own arguments and its DeepSpeed config."""
    candidates = []
    if trainer(ctx) == "deepspeed" and inp.data_parallel() > 1 and inp.sharding_level() < 3:
        candidates.append(("ZeRO stage 3 (zero_optimization.stage)", {"zero_stage": 3, "sharding": "parameters"}))
    return candidates + _recompute_or_smaller_micro(
        inp, "--gradient_checkpointing True", "--per_device_train_batch_size"
    )


def _recompute_or_smaller_micro(inp: ModelInput, recompute: str, micro_flag: str) -> list[tuple[str, dict]]:
    """Full recompute of every layer, then half the micro-batch, as the launch's trainer spells them."""
    out = []
    if inp.recompute != "full":
        out.append((recompute, {"recompute": "full", "recompute_method": "uniform", "recompute_num_layers": 1}))
    smaller = _smaller_micro_batch(inp)
    if smaller is not None:
        out.append((f"{micro_flag} {smaller}", {"micro_batch": smaller}))
    return out


def _smaller_micro_batch(inp: ModelInput) -> int | None:
    """The largest micro-batch up to half the launch's with which the global batch still divides over micro-batch
    x dp (PL102: Megatron's start-up check), or None."""
    from plint.planning.plan import divisors  # the efficiency rules' planner import: no extra start-up

    dp = inp.data_parallel()
    global_batch = inp.global_batch or inp.micro_batch * dp
    if global_batch % dp:
        return None
    # m x dp divides the global batch: m divides the per-replica batch (searched to its root, not m by m)
    return max((m for m in divisors(global_batch // dp) if m <= inp.micro_batch // 2), default=None)


def _memory_modelled(ctx: LaunchContext) -> tuple[ModelInput, Estimate] | None:
    """_estimated, and None too where the model times the launch but cannot count its memory (fp8)."""
    estimated = _estimated(ctx, memory_only=True)
    return None if estimated is None or ctx.layout.extras.memory_unmodelled else _as_costed(ctx, estimated)


def _as_costed(ctx: RuleContext, estimated: tuple[ModelInput, Estimate]) -> tuple[ModelInput, Estimate]:
    """(the input with the launch's own uneven pipeline partition, the estimate): for variants that keep pp, vpp
    and the layers (recompute, micro-batch, sharding), which must be costed on the busiest rank as the launch is."""
    from plint.cost.layout_estimate import costed_input

    inp = costed_input(ctx.layout, ctx.settings) if ctx.layout is not None else None
    return (inp, estimated[1]) if inp is not None else estimated


def _memory_span(ctx: RuleContext):
    return span(ctx, "batch.micro", "parallel.tp", "parallel.pp", "model.seq_length")


@register(
    "PL401",
    "predicted-oom",
    "error",
    "The estimated peak memory per GPU exceeds the usable memory.",
    RuleDocs(
        what="Estimates the peak memory of the busiest GPU (every pipeline rank holds its own layers and its "
        "own micro-batches in flight: the first the most of them, the last the logits at the loss, and a middle "
        "rank of an uneven split more layers; the message names a middle rank when it is the busiest): weights, gradients and "
        "optimizer states by precision and sharding (fp8: Transformer Engine's cached fp8 weights too), "
        "activations for the micro-batches the schedule keeps in flight, the workspaces allocated through "
        "PyTorch, and a runtime reserve (CUDA context, NCCL buffers), against the HBM left after allocator "
        "fragmentation. Names the first simple change that would fit. An error only when even the low end of the estimate's measured error band (estimate.memory_gib."
        "error_band: how far such estimates fall from what Megatron-LM's functional tests measure, per "
        "feature) is over; PL402 below that. A warning, not an error, when the launch names no GPU and plint "
        "assumed one, or when it runs on every GPU of its node without saying how many and plint assumed the "
        "node's size.",
        why="An out-of-memory error comes minutes into a job that may have waited hours in the queue, and is "
        "found again on every retry until the layout changes.",
        bad=torchrun(gpt("--tensor-model-parallel-size 1", layers=32, hidden=4096, heads=32, seq=4096, micro=4)),
        good=torchrun(
            gpt(
                "--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer\n"
                "--recompute-activations",
                layers=32,
                hidden=4096,
                heads=32,
                seq=4096,
                micro=1,
            )
        ),
        fix=no_fix("`plint plan` proposes layouts that fit."),
    ),
)
def predicted_oom(ctx: LaunchContext):
    yield from on_assumed_node(ctx, _predicted_oom(ctx))


def _predicted_oom(ctx: LaunchContext):
    estimated = _memory_modelled(ctx)
    if estimated is None:
        return
    inp, est = estimated
    # an error only when even the low end of the measured error band is over (PL402 warns below that)
    if memory_band(est.memory_gib)[0] > est.memory_gib["usable"]:
        gpu, memory = value(ctx, "cluster.gpu"), value(ctx, "cluster.gpu_memory_gib")
        if gpu is not None and memory is not None and memory.origin == "assumed":
            # the verdict rests on a GPU plint assumed (neither the launch nor --gpu / [tool.plint] gpu names
            # one; reading/normalise.py marks its memory assumed then): a warning until the GPU is named,
            # since a larger part (H200, GH200, MI300X) may hold it
            yield Finding(
                _memory_line(est)
                + _band_text(est)
                + _memory_remedy(ctx, inp, est)
                + f"; the GPU is assumed ({gpu.value}): "
                "name it with --gpu or [tool.plint] gpu for a verdict",
                _memory_span(ctx),
                key="estimate.memory",
                severity="warning",
            )
            return
        yield Finding(
            _memory_line(est) + _band_text(est) + _memory_remedy(ctx, inp, est),
            _memory_span(ctx),
            key="estimate.memory",
        )


@register(
    "PL402",
    "memory-headroom",
    "warning",
    "The estimated peak memory per GPU is so close to the usable memory that its error band reaches it.",
    RuleDocs(
        what="Warns when the high end of the memory estimate's measured error band (estimate.memory_gib."
        "error_band: how far such estimates fall from what Megatron-LM's functional tests measure) reaches "
        "the usable memory while the low end still fits (else PL401): a launch whose whole band fits is "
        "not warned about, however close to the limit. Teams that want spare memory beyond the band set "
        "`thresholds.memory-headroom` (a share of usable memory; off by default): above it the rule warns "
        "too. Names the first simple change (sharding, recompute, a smaller micro-batch) whose own band "
        "fits.",
        why="Memory estimates carry a few percent of error, and a run's peak moves with the data (the longest "
        "packed sequence, the MoE routing of one batch): a launch at 95% of usable memory fails some days.",
        bad=torchrun(
            gpt("--tensor-model-parallel-size 2 --sequence-parallel", layers=36, hidden=4096, heads=32, seq=4096)
        ),
        good=torchrun(
            gpt(
                "--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer",
                layers=36,
                hidden=4096,
                heads=32,
                seq=4096,
            )
        ),
        fix=no_fix("`plint plan` proposes layouts with headroom."),
    ),
)
def memory_headroom(ctx: LaunchContext):
    estimated = _memory_modelled(ctx)
    if estimated is None:
        return
    inp, est = estimated
    if memory_band(est.memory_gib)[0] > est.memory_gib["usable"]:
        return  # PL401's
    where = _memory_tight(est, ctx)
    if where is not None:
        yield Finding(
            f"{_memory_line(est)}{_band_text(est)}: {where}{_memory_remedy(ctx, inp, est)}",
            _memory_span(ctx),
            key="estimate.memory",
        )


# ---- time ---------------------------------------------------------------------------------------


@register(
    "PL301",
    "pipeline-bubble",
    "warning",
    "The pipeline bubble is larger than a layout of the same launch needs.",
    RuleDocs(
        what="Estimates the idle share of each step that the pipeline schedule leaves at its start and end "
        "((pp-1)/vpp stage-times of fill and drain against the micro-batches of one step), then looks for "
        "a concrete alternative of the same launch: the same GPUs, global batch, model, tensor, context "
        "and expert parallelism, sharding and recompute, with another pipeline size, number of virtual "
        "stages per rank or micro-batch that passes the start-up checks (PL102, PL103, PL105, PL108; with "
        "the uneven split Megatron accepts where the layers do not divide, named and costed rank by rank), "
        "fits in memory (the high end of its measured error band included), has a smaller bubble, owes "
        "at least half of the time it saves to the bubble (plint.planning.alternatives.faster_pipeline: "
        "every pp, vpp and micro-batch no larger than the launch's is estimated, the fastest kept) and "
        "whose step the cost model predicts shorter by more than it can tell apart (5%; 10% for MoE "
        "models: comparing two layouts of one model on one cluster cancels most of the model's error, "
        f"calibrated at {MEASURED_STEP_ERROR['dense']:.1%} mean absolute error on dense runs and "
        f"{MEASURED_STEP_ERROR['moe']:.1%} on MoE runs of benchmarks/calibrate.py). It warns only when it "
        "finds one, and names it with the predicted bubble, step and memory ("
        + FIGURES
        + "). A bubble with no better layout (a 175B model "
        "that needs its 16 stages) is what the run costs, and plint stays quiet. Teams that want an "
        "absolute limit set `thresholds.bubble` (off by default): above it the rule also warns when no "
        "alternative is found. Where dropping the pipeline altogether is faster still, PL302 names that "
        "and this rule is quiet: one alternative per pipeline.",
        why="With pp 8 and 16 micro-batches per step, 1F1B idles every GPU for 7 of 23 stage-times: 30% of the "
        "step. More micro-batches per step (a smaller micro-batch), fewer stages or virtual pipeline stages "
        "shrink it, when memory allows.",
        bad=torchrun(
            gpt("--tensor-model-parallel-size 1 --pipeline-model-parallel-size 8", layers=32, glob=16), nproc=8
        ),
        good=torchrun(
            gpt("--tensor-model-parallel-size 1 --pipeline-model-parallel-size 8", layers=32, glob=256), nproc=8
        ),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` writes the alternative the message names: the pipeline size, the "
            "virtual stages and the micro-batch (unsafe: checkpoints change layout)."
        ),
    ),
)
def pipeline_bubble(ctx: RuleContext):
    estimated = _estimated(ctx)
    if estimated is None:
        return
    from plint.planning.alternatives import describe_pipeline

    inp, est = _as_costed(ctx, estimated)  # an alternative at the launch's pp keeps its uneven split
    share = _bubble_share(est)
    if inp.pp <= 1 or share <= _margin(inp):
        return  # no alternative can win more than the bubble it removes
    head = (
        f"pipeline bubble {_pct(share)} of the step: pp {inp.pp}"
        f"{f', vpp {inp.vpp}' if (inp.vpp or 1) > 1 else ''}, {est.num_microbatches} micro-batches per step"
    )
    better = bubble_alternative(ctx, inp, est)
    dropped = needless_axis(ctx) if better is not None else None
    if dropped is not None and dropped[0] == "pp":
        return  # no pipeline at all does better still: PL302 names it (one alternative per launch's pipeline)
    if better is not None:
        alternative, variant = better
        yield Finding(
            f"{head}; {describe_pipeline(alternative, inp)} instead: bubble {_pct(share)} -> "
            f"{_pct(_bubble_share(variant))}, {gain_text(variant, est, inp)}",
            span(ctx, "parallel.pp"),
            key="estimate.bubble_fraction",
        )
        return
    limit = (getattr(ctx.settings, "thresholds", None) or {}).get("bubble")
    if limit is not None and share > float(limit):
        yield Finding(
            f"{head} (above the configured {float(limit):.0%}; no layout of the same launch with another "
            "pipeline size, virtual stages or micro-batch fits and is predicted faster)",
            span(ctx, "parallel.pp"),
            key="estimate.bubble_fraction",
        )


def _margin(inp: ModelInput) -> float:
    return NEEDLESS_MIN_GAIN_MOE if inp.num_experts else NEEDLESS_MIN_GAIN


def bubble_alternative(ctx: RuleContext, inp: ModelInput, est: Estimate) -> tuple[ModelInput, Estimate] | None:
    """The pipeline layout of the same launch that PL301 names (and its fix writes), or None."""
    from plint.cost import estimate
    from plint.planning.alternatives import faster_pipeline
    from plint.rules.keys_and_flags import interleaving_in_force

    # virtual pipeline stages and uneven splits by flag: Megatron-LM's; the Megatron-DeepSpeed forks have neither
    megatron = trainer(ctx) == "megatron"
    fits, known = (lambda e: _fits(e, ctx)), (lambda flag: megatron and _release_has(ctx, flag))
    demands = interleaving_in_force(ctx, inp.options.overlap_p2p_comm is not False)
    return faster_pipeline(inp, est, fits, _margin(inp), estimate, megatron, known, demands)


def spanning_alternative(ctx: RuleContext, axis: str, domain: int) -> tuple[ModelInput, Estimate, Estimate] | None:
    """(alternative, its estimate, the launch's) for PL202 (axis "cp") and PL203 ("ep"): a smaller size of
    that axis whose group fits in the NVLink domain, named only when the cost model predicts it faster by
    more than its margin, mostly through that axis' communication; None without an estimate or such a layout."""
    from plint.planning.alternatives import context_layouts, expert_layouts

    estimated = _estimated(ctx)
    if estimated is None:
        return None
    inp, est = estimated
    candidates = context_layouts(inp, domain) if axis == "cp" else expert_layouts(inp, domain)
    return _named(ctx, inp, est, candidates, axis)


def context_alternative(ctx: RuleContext) -> tuple[ModelInput, Estimate, Estimate] | None:
    """PL307's: a smaller context-parallel size (1 included) that does better, through the ring or through
    the longer chunks' more efficient attention and GEMMs (the reason short chunks cost)."""
    from plint.planning.alternatives import context_layouts

    estimated = _estimated(ctx)
    if estimated is None:
        return None
    inp, est = estimated
    return _named(ctx, inp, est, context_layouts(inp, smallest=1), None)


def _named(ctx: RuleContext, inp: ModelInput, est: Estimate, candidates, part: str | None):
    """(alternative, its estimate, the launch's) for the best of `candidates` (plint.planning.alternatives)."""
    from plint.cost import estimate
    from plint.planning.alternatives import faster

    better = faster(inp, est, candidates, part, lambda e: _fits(e, ctx), _margin(inp), estimate)
    return (*better, est) if better is not None else None


def gain_text(variant: Estimate, est: Estimate, inp: ModelInput) -> str:
    """What an alternative buys, each figure with its uncertainty: `step predicted 8.2% shorter +- 5% (3.10 s
    vs 3.38 s), 43.5 of 74.4 GiB (40.9 to 46.1 within its +-6% band)`. The +- of the gain is the margin the
    rules demand (_margin: what the cost model cannot tell apart between two layouts of one launch), so a
    named alternative is faster by more than its own error; the memory band is the estimate's measured one."""
    gain = 1 - variant.step_time_s / est.step_time_s
    low, high = memory_band(variant.memory_gib)
    mem = variant.memory_gib
    return (
        f"step predicted {_pct(gain)} shorter +- {_margin(inp):.0%} ({_seconds(variant.step_time_s)} vs "
        f"{_seconds(est.step_time_s)}), {_gib(mem['total'])} of {_gib(mem['usable'])} GiB ({_gib(low)} to "
        f"{_gib(high)} within its +-{100 * mem.get('error_band', 0.0):.0f}% band)"
    )


# PL302 wants the simpler layout predicted at least this much faster. Comparing two layouts of one model on
# one cluster cancels most of the model's absolute error (MEASURED_STEP_ERROR), but not all: a predicted gain
# of 1-3% is inside what it cannot tell apart, and advice to re-layout a run on that is noise. Of SC21's 75
# pairs of measured splits of one model (benchmarks/sc21_configurations.py) the model orders one against the
# measurement, a pair the paper measured within 2%, and every pair it predicts within 15% as measured.
NEEDLESS_MIN_GAIN = 0.05
# MoE steps are predicted about twice as loosely (MEASURED_STEP_ERROR: moe about twice dense): twice the margin.
NEEDLESS_MIN_GAIN_MOE = 0.10


def _bubble_share(est: Estimate) -> float:
    """The idle pipeline time as a share of the whole step (the estimate's bubble_fraction is relative
    to the ideal compute time, as Narayanan et al. define it: (pp-1)/(vpp*m))."""
    return est.time_s.get("bubble", 0.0) / est.step_time_s if est.step_time_s > 0 else 0.0


_AXES: dict[str, tuple[FieldPath, str]] = {
    "tp": ("parallel.tp", "tensor"),
    "pp": ("parallel.pp", "pipeline"),
    "cp": ("parallel.cp", "context"),
    "ep": ("parallel.ep", "expert"),
}


@register(
    "PL302",
    "needless-parallelism",
    "warning",
    "A model-parallel axis can be dropped: the simpler layout fits and is predicted faster.",
    RuleDocs(
        what="For each of tensor, pipeline, context and expert parallelism in use, re-estimates the launch with "
        "that axis set to 1 and its GPUs given to data parallelism (for experts: replicated), and warns "
        "when that layout fits in memory (the high end of its measured error band included) and its step "
        "is predicted more than 5% shorter (10% for MoE models; smaller differences are inside what the "
        "model can tell apart), naming it with the predicted step and memory (" + FIGURES + "); a launch "
        "with an uneven pipeline is compared on its own split, and dropping its pipeline drops the uneven "
        "split's flags with it. The pipeline is left to PL301 where a layout it names (another pp, vpp or micro-batch) is faster "
        "than none.",
        why="Every axis costs communication and complexity: use the least parallelism that fits. A 1.3B model "
        "with tp 2 on 8 GPUs splits GEMMs that already run below peak and all-gathers activations on "
        "every layer, to save memory it does not need.",
        bad=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer", glob=256)),
        good=torchrun(gpt("--use-distributed-optimizer", glob=256)),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` sets the axis to 1 (and, for tensor parallelism, drops "
            "--sequence-parallel and --tp-comm-overlap with it, for pipeline parallelism "
            "--defer-embedding-wgrad-compute, which needs a pipeline, for expert parallelism "
            "--overlap-moe-expert-parallel-comm and --delay-wgrad-compute, which need expert parallelism; "
            "checkpoints change layout)."
        ),
    ),
)
def needless_parallelism(ctx: RuleContext):
    found = needless_axis(ctx)
    if found is None:
        return
    axis, size, simpler, variant, est = found
    key, name = _AXES[axis]
    given = f" and dp {simpler.data_parallel()}" if axis != "ep" else " (experts replicated)"
    if axis == "pp" and _deferred_wgrad(ctx):
        given += ", without --defer-embedding-wgrad-compute (Megatron-LM defers only with a pipeline)"
    if axis == "ep" and is_megatron(ctx) and ctx.fact("moe_a2a_overlap") is not None:
        given += ", without --overlap-moe-expert-parallel-comm (Megatron-LM asserts ep > 1 with it)"
    if axis == "pp" and ctx.layout is not None:  # the launch's uneven flags would still size the one rank
        from plint.cost.layout_estimate import costed_input
        from plint.planning.alternatives import split_flags

        launch = costed_input(ctx.layout, ctx.settings)
        given += f", without {split_flags(launch)}" if launch is not None and launch.pipeline_split else ""
    yield Finding(
        f"{name} parallelism {axis} {size} is not needed: {axis} 1{given} instead: {gain_text(variant, est, simpler)}",
        span(ctx, key),
        key=key,
    )


def needless_axis(ctx: RuleContext) -> tuple[str, int, ModelInput, Estimate, Estimate] | None:
    """PL302's advice (and its fix's): the first model-parallel axis, in the order tp, pp, cp, ep, whose
    removal (its GPUs given to data parallelism; experts replicated) fits and is predicted faster by more
    than the margin, as (axis, its size, the simpler launch, its estimate, the launch's); one axis at a
    time, as the next advice depends on the layout after this one."""
    from plint.planning.alternatives import without_axis

    estimated = _estimated(ctx) if is_megatron(ctx) else None
    if estimated is None:
        return None
    inp, est = _as_costed(ctx, estimated)  # an uneven launch's simpler layouts keep its split, but without pp
    for axis in _AXES:
        size = getattr(inp, axis)
        if size <= 1 or (axis == "cp" and inp.seq_length < CP_USEFUL_FROM):
            continue  # context parallelism on short sequences: PL307 names its alternative
        simpler = without_axis(inp, axis)
        variant = _variant(simpler) if simpler is not None else None
        if (
            simpler is None
            or variant is None
            or not _fits(variant, ctx)
            or variant.step_time_s > (1 - _margin(inp)) * est.step_time_s
        ):
            continue
        if axis == "pp" and _pipelined_faster(ctx, inp, est, variant):
            continue  # a better pipeline beats none: PL301 names it, so the two never advise opposite edits
        return axis, size, simpler, variant, est
    return None


def _deferred_wgrad(ctx: RuleContext) -> bool:
    """Whether the launch defers the output layer's weight gradient (--defer-embedding-wgrad-compute), which the
    simpler launch without a pipeline drops (plint.planning.alternatives.without_axis)."""
    from plint.cost.layout_estimate import cost_input

    inp = cost_input(ctx.layout, ctx.settings) if ctx.layout is not None else None
    return inp is not None and inp.options.wgrad_deferral_limit is not None


def _pipelined_faster(ctx: RuleContext, inp: ModelInput, est: Estimate, unpipelined: Estimate) -> bool:
    """Whether PL301's layout of the launch (another pp, vpp or micro-batch) is predicted faster than dropping
    the pipeline: then that is the advice, and PL302 leaves the pipeline axis to it."""
    better = bubble_alternative(ctx, inp, est)
    return better is not None and better[1].step_time_s < unpipelined.step_time_s


@register(
    "PL308",
    "full-recompute-unneeded",
    "info",
    "Full activation recompute where selective recompute fits in memory.",
    RuleDocs(
        what="With --recompute-granularity full, re-estimates the launch with selective recompute (the "
        "attention core only) and reports when that fits in memory (the high end of its measured error "
        "band included) and the step is predicted shorter by more than the cost model can tell apart (5%; "
        "10% for MoE models), with the predicted step and memory (" + FIGURES + ").",
        why="Full recompute runs every layer's forward twice: about a third more compute per step. Selective "
        "recompute keeps most of the memory saving (Korthikanti et al. 2022: the attention scores are "
        "the large part) for a few percent.",
        bad=torchrun(
            gpt(
                "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1\n"
                "--use-distributed-optimizer",
                hidden=4096,
                heads=32,
            )
        ),
        good=torchrun(gpt("--recompute-activations --use-distributed-optimizer", hidden=4096, heads=32)),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` replaces the recompute flags with --recompute-activations (same numerics; "
            "unsafe because the memory it needs is the estimate's)."
        ),
    ),
)
def full_recompute_unneeded(ctx: RuleContext):
    estimated = _estimated(ctx) if is_megatron(ctx) else None
    if estimated is None:
        return
    inp, est = _as_costed(ctx, estimated)
    if inp.recompute != "full" or not _release_has(ctx, "--recompute-activations"):
        return  # the bigscience fork, for one, knows only full recompute (--checkpoint-activations)
    if is_gpt_neox(ctx):
        return  # nor has GPT-NeoX a selective recompute (megatron/neox_arguments/neox_args.py at ea7aefd8)
    variant = _variant(inp, recompute="selective", recompute_method=None, recompute_num_layers=None)
    if variant is None or not _fits(variant, ctx):
        return
    gain = 1 - variant.step_time_s / est.step_time_s
    if gain <= _margin(inp):
        return  # a gain the cost model cannot tell from noise is no reason to trade memory headroom
    yield Finding(
        f"full recompute where selective fits: --recompute-activations instead: {gain_text(variant, est, inp)}",
        span(ctx, "recompute.granularity"),
        key="recompute.granularity",
    )


@register(
    "PL310",
    "low-mfu",
    "info",
    "The predicted MFU is low, and a larger micro-batch does better.",
    RuleDocs(
        what="Below the MFU threshold (default 35%; model FLOPs as Megatron counts them, over the step time and "
        "the GPUs' dense bf16 peak), looks for a larger micro-batch (one that divides the per-rank batch) "
        "that fits in memory (the high end of its measured error band included) and whose step the cost "
        "model predicts shorter by more than it can tell apart (5%; 10% for MoE models), and names it ("
        + FIGURES
        + ") with where the saving comes from: larger GEMMs, or the part of the step that "
        "shrinks most (data-parallel communication that a longer last backward hides, or that ZeRO-3 "
        "repeats for every micro-batch). Without one it is quiet: what else "
        "keeps the MFU low (a bubble, communication on a slow link) is for the rules that can name a "
        "better layout for it (PL301, PL302, PL202, PL203, PL307).",
        why="Well-tuned large runs reach 35-55% MFU. The micro-batch is the rows of every GEMM: GEMMs too small "
        "to run near peak keep a small model's MFU low whatever the layout.",
        bad=torchrun(gpt("--use-distributed-optimizer", layers=12, hidden=768, heads=12, seq=1024, micro=1, glob=512)),
        good=torchrun(
            gpt("--use-distributed-optimizer", layers=32, hidden=4096, heads=32, seq=4096, micro=1, glob=256)
        ),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` writes the micro-batch the message names, where the launch alone states "
            "it (unsafe: the step's numerics and memory change)."
        ),
    ),
)
def low_mfu(ctx: LaunchContext):
    estimated = _estimated(ctx) if is_megatron(ctx) else None
    if estimated is None:
        return
    inp, est = _as_costed(ctx, estimated)
    limit = _mfu_threshold(ctx)
    if est.mfu >= limit or est.step_time_s <= 0:
        return
    step = est.step_time_s
    larger = _faster_micro_batch(ctx, inp, est)
    if larger is None:
        return
    micro, variant = larger
    # a DeepSpeed config that states the micro-batch must say the same (PL106 checks they agree)
    cfg = ctx.layout.extras.ds_config
    stated = cfg.train_micro_batch_size_per_gpu.value if cfg is not None else None
    also = (
        f' and "train_micro_batch_size_per_gpu": {micro} in {cfg.path}'
        if cfg is not None and stated is not None and stated != "auto"
        else ""
    )
    setting = (
        f'"train_micro_batch_size_per_gpu": {micro} in the GPT-NeoX config'
        if is_gpt_neox(ctx)
        else f"--micro-batch-size {micro}{also}"
    )
    yield Finding(
        f"predicted MFU {_pct(est.mfu)} (below {limit:.0%}), {est.tokens_per_s_per_gpu:,.0f} tokens/s per "
        f"GPU; model compute takes {_pct(est.time_s['compute'] / step)} of the step; {setting} "
        f"({_saving_source(est, variant)}) instead: {gain_text(variant, est, inp)}",
        span(ctx, "batch.micro"),
        key="estimate.mfu",
    )


def _saving_source(est: Estimate, variant: Estimate) -> str:
    """Where a larger micro-batch's predicted saving comes from, in the cost model's own parts: `larger GEMMs`
    when most of it is compute (and recompute), else the part that shrinks most with its times, e.g. with the
    data-parallel exchange overlapped only under the last micro-batch's backward, or ZeRO-3 gathering the
    parameters once per micro-batch: `mostly data-parallel communication, 0.193 s -> 0.05 s`."""
    from plint.cost.estimate import TIME_PART_NAMES

    saved = {part: est.time_s[part] - variant.time_s.get(part, 0.0) for part in est.time_s}
    gemms = saved.get("compute", 0.0) + saved.get("recompute", 0.0)
    part = max(saved, key=lambda name: saved[name])
    if part in ("compute", "recompute") or gemms >= saved[part]:
        return "larger GEMMs"
    if part == "overhead":  # layers too small to outlast the host's dispatch of them (estimate.host_microbatch_s)
        return "fewer micro-batches for the host to dispatch"
    return (
        f"mostly {TIME_PART_NAMES.get(part, part)}, {_seconds(est.time_s[part])} -> "
        f"{_seconds(variant.time_s.get(part, 0.0))}"
    )


def faster_micro_batch(ctx: RuleContext) -> int | None:
    """PL310's micro-batch (for its fix), or None."""
    estimated = _estimated(ctx) if is_megatron(ctx) else None
    if estimated is None or estimated[1].mfu >= _mfu_threshold(ctx):
        return None
    larger = _faster_micro_batch(ctx, *_as_costed(ctx, estimated))
    return larger[0] if larger is not None else None


def _faster_micro_batch(ctx: RuleContext, inp: ModelInput, est: Estimate) -> tuple[int, Estimate] | None:
    """The larger micro-batch (dividing the per-rank batch) predicted fastest, when it fits within the
    headroom and beats the launch by PL302's margin; None otherwise."""
    dp = inp.data_parallel()
    global_batch = inp.global_batch or inp.micro_batch * dp
    if global_batch % (inp.micro_batch * dp):
        return None
    from plint.planning.plan import divisors

    best = None
    for micro in [d for d in divisors(global_batch // dp) if d > inp.micro_batch]:
        variant = _variant(inp, micro_batch=micro)
        if variant is None or not _fits(variant, ctx):
            break  # activations grow with the micro-batch: no larger one fits either
        if best is None or variant.step_time_s < best[1].step_time_s:
            best = (micro, variant)
    margin = _margin(inp)
    if best is None or best[1].step_time_s > (1 - margin) * est.step_time_s:
        return None
    return best
