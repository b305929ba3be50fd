"""PL1xx: layouts the trainer rejects at start-up (Megatron's validate_args, TransformerConfig): the
parallel grid, the model shape, precision, overlap and recompute. Conditions follow
shared/reference/megatron.md §2 and deepspeed.md §2; each rule cites the check it mirrors. The batch
rules of PL1xx (the micro-batch calculator, DeepSpeed's batch assertion) are in plint.rules.batch_arithmetic.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from plint.catalog.interleaving import MICROBATCH_GROUPS_SINCE, PP2_SINCE
from plint.rules.base import Finding, LaunchContext, RuleDocs, no_fix, register, unsafe_fix
from plint.rules.common import MEGATRON_ASSERT, gpt, is_megatron, known, on_assumed_node, span, torchrun, trainer, value

if TYPE_CHECKING:
    from plint.layout import LayoutKey


@register(
    "PL101",
    "world-size-indivisible",
    "error",
    "The world size does not divide into the model-parallel group sizes.",
    RuleDocs(
        what="Checks that the world size is divisible by tp*pp*cp (Megatron-DeepSpeed: tp*pp*ds_sp) and, "
        "with experts, by etp*ep*pp, where etp defaults to tp (Megatron-DeepSpeed: DeepSpeed's expert groups "
        "need dp, or world/pp without --enable-expert-tensor-parallelism, divisible by ep); and that dp*cp and "
        "the expert-data-parallel size world/(etp*ep*pp) are multiples of the "
        "--num-distributed-optimizer-instances of hybrid sharding (parallel.dp_outer). Releases whose "
        "validate_args clamps tp to the world size and pp to what tp leaves (Megatron-LM up to core 0.8, the "
        "Megatron-DeepSpeed forks, a parser in the tree that does so) are checked with the sizes they run, and "
        "a warning says that the run has less model parallelism than written.",
        why="Megatron computes dp = world / (tp*pp*cp) and asserts the division is exact (validate_args: "
        "'world size (N) is not divisible by total_model_size'); the expert grid raises a RuntimeError "
        "when world % (etp*ep*pp) != 0; initialize_model_parallel asserts dp*cp is a multiple of the "
        "distributed optimizer instances. Either way the job dies at start-up.",
        bad=torchrun(gpt("--tensor-model-parallel-size 3", heads=24, hidden=2304)),
        good=torchrun(gpt("--tensor-model-parallel-size 4 --sequence-parallel", heads=24, hidden=2304)),
        fix=unsafe_fix(
            "Choose a tp/pp that divides the world size. `plint fix --unsafe-fixes` rewrites tp, pp and the "
            "micro-batch (and uneven first/last pipeline stages where the planner picks them) to the planner's "
            "best Megatron layout that keeps the launch's global batch, cp, virtual stages, recompute, experts "
            "and sharding (unsafe: checkpoints change layout); `plint plan` lists the alternatives."
        ),
        references=("megatron/training/arguments.py validate_args", "megatron/core/parallel_state.py"),
    ),
)
def world_size_indivisible(ctx: LaunchContext):
    yield from on_assumed_node(ctx, _world_size_indivisible(ctx))


def _world_size_indivisible(ctx: LaunchContext):
    if not is_megatron(ctx):
        return
    sizes = known(ctx, "cluster.world_size", "parallel.tp", "parallel.pp")
    if sizes is None:
        return
    world, tp, pp = sizes
    written = value(ctx, "clamped_model_parallel")
    if written is not None:  # no start-up stop, but not the layout written: a warning
        yield Finding(
            f"tp {written.value[0]}, pp {written.value[1]} on a world of {world} runs as tp {tp}, pp {pp}: "
            "this release's validate_args clamps them instead of stopping",
            written.span,
            key="parallel.tp",
            severity="warning",
        )
    if trainer(ctx) == "megatron-deepspeed":
        sp = value(ctx, "ds_sequence_parallel_size")
        third, label = (sp.value if sp is not None and sp.value else 1), "ds_sp"
    else:
        cp = value(ctx, "parallel.cp")
        third, label = (cp.value if cp is not None and cp.value else 1), "cp"
    model = tp * pp * third
    if model and world % model:
        yield Finding(
            f"world size {world} is not divisible by tp*pp*{label} = {tp}*{pp}*{third} = {model}; {MEGATRON_ASSERT}",
            span(ctx, "parallel.tp", "parallel.pp", "cluster.world_size"),
            key="parallel.tp",
        )
        return
    outer = value(ctx, "parallel.dp_outer")
    instances = outer.value if outer is not None and isinstance(outer.value, int) and outer.value > 1 else 1
    if model and instances > 1 and (world // model * third) % instances:
        # megatron/core/parallel_state.py: "Data parallel size should be divisible by partial DistOpt shard factor"
        group = world // model * third
        yield Finding(
            f"dp*{label} = {group} is not divisible by --num-distributed-optimizer-instances "
            f"{instances}: each instance shards over an equal part of it; {MEGATRON_ASSERT}",
            span(ctx, "parallel.dp_outer"),
            key="parallel.dp_outer",
        )
        instances = 1  # said once: the expert group's own check below would repeat it
    experts = known(ctx, "parallel.ep", "parallel.etp")
    if experts is None or experts[0] <= 1 and experts[1] == tp:
        return
    ep, etp = experts
    grid = etp * ep * pp
    if grid and world % grid:
        yield Finding(
            _expert_grid_message(trainer(ctx), world, tp, pp, ep, etp),
            span(ctx, "parallel.ep", "parallel.etp"),
            key="parallel.ep",
        )
    elif grid and instances > 1 and (world // grid) % instances:
        # megatron/core/parallel_state.py asserts the expert-data-parallel size divides by the instances too
        # ("Expert data parallel size should be divisible by partial DistOpt shard factor")
        yield Finding(
            f"the expert-data-parallel size world/(etp*ep*pp) = {world}/{grid} = {world // grid} is not "
            f"divisible by --num-distributed-optimizer-instances {instances}: the experts' states are "
            f"sharded over an equal part of it per instance; {MEGATRON_ASSERT}",
            span(ctx, "parallel.dp_outer"),
            key="parallel.dp_outer",
        )


def _expert_grid_message(trainer_name: str | None, world: int, tp: int, pp: int, ep: int, etp: int) -> str:
    """Why the world does not divide into expert groups, in the words of the code that refuses it."""
    if trainer_name != "megatron-deepspeed":
        return (
            f"world size {world} is not divisible by etp*ep*pp = {etp}*{ep}*{pp} = {etp * ep * pp} (the expert "
            "grid; etp defaults to tp when --expert-tensor-parallel-size is not given)"
        )
    # DeepSpeed's MoE layer builds the expert groups (deepspeed/moe/layer.py _create_process_groups): with
    # --enable-expert-tensor-parallelism, _create_expert_data_and_model_parallel asserts the data-parallel size
    # divides by ep; without it, _create_expert_and_data_parallel asserts the ranks of one pipeline stage do
    # (deepspeed/utils/groups.py _ensure_divisibility)
    if etp > 1:
        dp = world // (tp * pp)
        return (
            f"the data-parallel size world/(tp*pp) = {world}/{tp * pp} = {dp} is not divisible by ep {ep}: with "
            "--enable-expert-tensor-parallelism DeepSpeed splits the data-parallel ranks into expert groups of ep "
            "(deepspeed/utils/groups.py _create_expert_data_and_model_parallel)"
        )
    return (
        f"the {world // pp} ranks of a pipeline stage (world/pp = {world}/{pp}) are not divisible by ep {ep}: "
        "DeepSpeed splits them into expert groups of ep (deepspeed/utils/groups.py _create_expert_and_data_parallel)"
    )


def _layers_total(ctx: LaunchContext) -> tuple[int, str] | None:
    layers = value(ctx, "model.num_layers")
    if layers is None or layers.value is None:
        return None
    total, parts = layers.value, [str(layers.value)]
    accounted: tuple[tuple[LayoutKey, str], ...] = (
        ("pipeline.account_for_embedding", "embedding"),
        ("pipeline.account_for_loss", "loss"),
    )
    for key, label in accounted:
        if value(ctx, key) is not None:
            total += 1
            parts.append(f"1 ({label})")
    return total, " + ".join(parts)


# Flag names that speak of how the pipeline is split (a fork's `--pipeline-layers-split 7,8,8,7`,
# bigscience's `--pp-partition-method`): one the release in force does not define may change the split
# (the zero-bubble fork's `--allow-padding-num-layers` pads the layers to a multiple of the stages)
_SPLIT_WORDS = re.compile(
    r"pipeline|partition|layers[-_]per|stage[-_]layers|num[-_]layers[-_]in|padding[-_]num[-_]layers"
)


def _unmodelled_split_flags(ctx: LaunchContext) -> tuple[list[str], list[str]]:
    """The launch's flags that may split the pipeline in a way plint does not model: (those the parser in force
    does not define, those it defines that no Megatron-LM release does: a fork's own, read from its parser)."""
    args = ctx.layout.extras.trainer_args
    if args is None:
        return [], []
    split = {use.option: use.spec for use in args.uses if _SPLIT_WORDS.search(use.option)}
    undefined = sorted(option for option, spec in split.items() if spec is None)
    own = sorted(option for option, spec in split.items() if spec is not None and not _upstream_flag(option))
    return undefined, own


def _upstream_flag(option: str) -> bool:
    """Whether some Megatron-LM release plint ships defines `option` (not only a fork's parser)."""
    from plint.catalog.flags import load_flag_catalog, releases

    return any(
        load_flag_catalog(r).lookup(option) is not None for r in releases() if r[0].isdigit() or r.startswith("main")
    )


@register(
    "PL103",
    "layers-indivisible",
    "error",
    "The layers do not split evenly over the pipeline stages.",
    RuleDocs(
        what="Checks num_layers (+1 each with --account-for-embedding/loss-in-pipeline-split) % pp == 0, and "
        "% (pp * layers-per-virtual-stage) with --num-layers-per-virtual-pipeline-stage, unless uneven "
        "first/last stages or a pipeline layout are given. Megatron-DeepSpeed's PipelineModule partitions "
        "by parameters and is not checked. A pipeline-split flag the release does not define (a fork's "
        "own) makes it a warning.",
        why="Megatron asserts 'Number of layers should be divisible by the pipeline-model-parallel size' "
        "(unconditionally since core 0.10); releases up to 0.9 silently built floor(L/pp) layers per stage "
        "(https://github.com/NVIDIA/Megatron-LM/issues/1304 and https://github.com/NVIDIA/Megatron-LM/issues/468), "
        "training a smaller model than asked for.",
        bad=torchrun(gpt("--pipeline-model-parallel-size 4", layers=30)),
        good=torchrun(
            gpt(
                "--pipeline-model-parallel-size 4\n--decoder-first-pipeline-num-layers 7\n"
                "--decoder-last-pipeline-num-layers 7",
                layers=30,
            )
        ),
        fix=unsafe_fix(
            "Choose pp, or uneven first/last stage sizes. `plint fix --unsafe-fixes` rewrites tp, pp and the "
            "micro-batch (and uneven first/last pipeline stages where the planner picks them) to the planner's "
            "best Megatron layout that keeps the launch's global batch, cp, virtual stages, recompute, experts "
            "and sharding (unsafe: checkpoints change layout); `plint plan` lists the alternatives."
        ),
        references=("megatron/training/arguments.py validate_args",),
    ),
)
def layers_indivisible(ctx: LaunchContext):
    if trainer(ctx) != "megatron":
        return
    if any(
        value(ctx, k) is not None for k in ("parallel.uneven_first", "parallel.uneven_last", "parallel.pipeline_layout")
    ):
        return
    total = _layers_total(ctx)
    pp = known(ctx, "parallel.pp")
    if total is None or pp is None or pp[0] <= 1:
        return
    (n, how), (p,) = total, pp
    if n % p:
        counted = f"{how} = {n} layers" if how != str(n) else f"{n} layers"
        undefined, own = _unmodelled_split_flags(ctx)
        if undefined or own:
            from plint.rules.keys_and_flags import judged_by

            # a fork's own pipeline split may lay the stages out unevenly: the check is a guess there
            what = []
            if undefined:
                what.append(
                    f"{', '.join(undefined)} (a flag {judged_by(ctx)} does not define, a fork's own pipeline split)"
                )
            if own:
                what.append(f"{', '.join(own)} (this fork's own flag, which no Megatron-LM release defines)")
            yield Finding(
                f"{counted} do not divide by pp {p}, unless {' or '.join(what)} lays the stages out unevenly",
                span(ctx, "model.num_layers", "parallel.pp"),
                key="model.num_layers",
                severity="warning",
            )
            return
        yield Finding(
            f"{counted} do not divide by pp {p}; give uneven stages "
            "(--decoder-first/last-pipeline-num-layers) or another pp",
            span(ctx, "model.num_layers", "parallel.pp"),
            key="model.num_layers",
        )
        return
    chunk = value(ctx, "parallel.vpp")
    use = ctx.layout.extras.trainer_args
    k_use = use.get("--num-layers-per-virtual-pipeline-stage") if use is not None else None
    if (
        k_use is not None
        and k_use.value is not None
        and k_use.value.known
        and chunk is not None
        and chunk.value is None
        and chunk.origin == "derived"
        and "do not split" in (chunk.note or "")
    ):
        yield Finding(
            f"{n} layers over pp {p} ({n // p} per stage) do not split into virtual chunks of "
            f"{k_use.value.text} layers",
            k_use.value.value_span,
            key="parallel.vpp",
        )


@register(
    "PL104",
    "heads-indivisible",
    "error",
    "Attention heads or query groups do not divide over tensor parallelism.",
    RuleDocs(
        what="Checks heads % tp == 0 and, with --group-query-attention, that the query groups are a "
        "multiple of tp or (Megatron 0.16 and later) a divisor of it.",
        why="TransformerConfig raises 'num_attention_heads (N) must be a multiple of "
        "tensor_model_parallel_size (T)'; every rank holds heads/tp whole heads.",
        bad=torchrun(gpt("--tensor-model-parallel-size 8 --sequence-parallel", heads=28, hidden=3584)),
        good=torchrun(gpt("--tensor-model-parallel-size 4 --sequence-parallel", heads=28, hidden=3584)),
        fix=unsafe_fix(
            "Pick a tp that divides the head count. `plint fix --unsafe-fixes` rewrites tp, pp and the micro-"
            "batch (and uneven first/last pipeline stages where the planner picks them) to the planner's best "
            "Megatron layout that keeps the launch's global batch, cp, virtual stages, recompute, experts and "
            "sharding (unsafe: checkpoints change layout); `plint plan` lists the alternatives."
        ),
        references=("megatron/core/transformer/transformer_config.py __post_init__",),
    ),
)
def heads_indivisible(ctx: LaunchContext):
    if not is_megatron(ctx):
        return
    sizes = known(ctx, "model.num_attention_heads", "parallel.tp")
    if sizes is None:
        return
    heads, tp = sizes
    if tp and heads % tp:
        yield Finding(
            f"{heads} attention heads are not divisible by tp {tp}",
            span(ctx, "model.num_attention_heads", "parallel.tp"),
            key="model.num_attention_heads",
        )
        return
    if value(ctx, "model.group_query_attention") is None:
        return
    groups = known(ctx, "model.num_query_groups")
    if groups is None:
        return
    (g,) = groups
    if g % tp and tp % g:
        yield Finding(
            f"{g} query groups are neither a multiple nor a divisor of tp {tp} (before Megatron "
            "0.16 they must be a multiple)",
            span(ctx, "model.num_query_groups"),
            key="model.num_query_groups",
        )


@register(
    "PL105",
    "experts-indivisible",
    "error",
    "Expert parallelism without experts, or experts that do not divide over it.",
    RuleDocs(
        what="Checks that ep > 1 comes with --num-experts and that num_experts % ep == 0.",
        why="validate_args asserts 'Number of experts should be a multiple of expert model parallel_size'; "
        "each expert-parallel rank holds num_experts/ep whole experts.",
        bad=torchrun(gpt("--expert-model-parallel-size 8 --num-experts 12 --moe-router-topk 2")),
        good=torchrun(gpt("--expert-model-parallel-size 8 --num-experts 16 --moe-router-topk 2")),
        fix=no_fix(),
        references=("megatron/training/arguments.py validate_args",),
    ),
)
def experts_indivisible(ctx: LaunchContext):
    if not is_megatron(ctx):
        return
    ep = value(ctx, "parallel.ep")
    if ep is None or not ep.value or ep.value <= 1:
        return
    experts = value(ctx, "model.num_experts")
    if experts is None or (experts.value is None and experts.origin != "unresolved"):
        yield Finding(f"expert parallelism {ep.value} without --num-experts", ep.span, key="parallel.ep")
    elif experts.value and experts.value % ep.value:
        yield Finding(
            f"{experts.value} experts are not divisible by ep {ep.value}",
            experts.span or ep.span,
            key="model.num_experts",
        )


@register(
    "PL107",
    "precision-conflict",
    "error",
    "Both fp16 and bf16, or the trainer's precision and the DeepSpeed JSON disagree.",
    RuleDocs(
        what="Checks that --fp16 and --bf16 are not both given, that a DeepSpeed JSON does not enable both "
        "fp16 and bf16, and (Megatron-DeepSpeed) that the JSON's enabled section matches the flag.",
        why="TransformerConfig: 'Only one of self.fp16 … and self.bf16 … should be True'. In "
        "Megatron-DeepSpeed the model is cast by the flag while DeepSpeed's optimizer follows the JSON: "
        "a mismatch trains with the wrong master weights or fails in the loss scaler.",
        bad=torchrun(gpt("--fp16")),
        good=torchrun(gpt("")),
        fix=unsafe_fix(
            "Choose one precision. When the trainer's flags pass both --fp16 and --bf16, `plint fix "
            "--unsafe-fixes` removes --fp16 where the GPU has bf16 units and --bf16 where it has none "
            "(unsafe: numerics change)."
        ),
        references=("megatron/core/transformer/transformer_config.py",),
    ),
)
def precision_conflict(ctx: LaunchContext):
    precision = value(ctx, "precision")
    if is_megatron(ctx) and precision is not None and precision.value is None and "both" in (precision.note or ""):
        yield Finding("both --fp16 and --bf16 are given", precision.span, key="precision")
        return
    cfg = ctx.layout.extras.ds_config if ctx.layout is not None else None
    if cfg is None:
        return
    fp16, bf16 = cfg.fp16_enabled, cfg.bf16_enabled
    if fp16.value is True and bf16.value is True:
        yield Finding(f"{cfg.path} enables both fp16 and bf16", bf16.span, key="precision")
        return
    if trainer(ctx) == "megatron-deepspeed" and precision is not None and precision.value in ("fp16", "bf16"):
        other = "bf16" if precision.value == "fp16" else "fp16"
        enabled = bf16 if other == "bf16" else fp16
        if enabled.value is True:
            yield Finding(
                f"the trainer runs {precision.value} (--{precision.value}) but {cfg.path} enables {other}",
                enabled.span,
                key="precision",
            )


@register(
    "PL108",
    "interleave-invalid",
    "error",
    "A virtual pipeline the trainer rejects.",
    RuleDocs(
        what="Checks interleaved pipelines: more than one way of setting virtual stages, virtual stages with "
        "pp < 2 (pp < 3 with --no-overlap-p2p-communication or under a release before core 0.8), fewer "
        "micro-batches than pp, and, under a release before core 0.10, micro-batches that are no multiple "
        "of pp.",
        why="validate_args allows only one of --num-layers-per-virtual-pipeline-stage, "
        "--num-virtual-stages-per-pipeline-rank and --pipeline-model-parallel-layout; parallel_state "
        "raises 'pipeline-model-parallel size should be greater than 1 with interleaved schedule' (greater "
        "than 2 before core 0.8); the schedule asserts the micro-batch group (default pp) fits into the "
        "micro-batches of a step, and until core 0.9 raised 'number of microbatches (M) is not divisible by "
        "pipeline-model-parallel-size (P) when using interleaved schedule'.",
        bad=torchrun(gpt("--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2", glob=4)),
        good=torchrun(gpt("--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2", glob=16)),
        fix=no_fix(),
        references=("megatron/core/pipeline_parallel/schedules.py",),
    ),
)
def interleave_invalid(ctx: LaunchContext):
    yield from on_assumed_node(ctx, _interleave_invalid(ctx))


def _interleave_invalid(ctx: LaunchContext):
    from plint.rules.keys_and_flags import interleaving_in_force, judged_by, release_at_least

    if trainer(ctx) != "megatron":
        return
    spellings = ctx.fact("parallel.vpp_spellings")
    if spellings is not None and spellings.value and spellings.value > 1:
        yield Finding(
            "virtual pipeline stages are set more than one way (--num-layers-per-virtual-pipeline-stage, "
            "--num-virtual-stages-per-pipeline-rank, --pipeline-model-parallel-layout): Megatron accepts one",
            span(ctx, "parallel.vpp"),
            key="parallel.vpp",
        )
        return
    vpp = value(ctx, "parallel.vpp")
    pp = known(ctx, "parallel.pp")
    if vpp is None or not vpp.value or pp is None:
        return
    (p,) = pp
    overlap_off = (
        ctx.layout.extras.trainer_args is not None
        and ctx.layout.extras.trainer_args.get("--no-overlap-p2p-communication") is not None
    )
    has_pp2 = release_at_least(ctx, PP2_SINCE)
    demands = interleaving_in_force(ctx, not overlap_off)
    if p < demands.min_pp:
        why = (
            " without p2p overlap"
            if overlap_off
            else f" under {judged_by(ctx)} (pp 2 interleaves from core {PP2_SINCE})"
            if has_pp2 is False
            else ""
        )
        yield Finding(
            f"virtual pipeline stages need pp >= {demands.min_pp}{why}; pp is {p}",
            vpp.span or span(ctx, "parallel.pp"),
            key="parallel.vpp",
        )
        return
    m = known(ctx, "batch.num_microbatches")
    glob = value(ctx, "batch.global")
    if m is None or glob is None:  # num_microbatches is derived from the global batch
        return
    if m[0] < p:
        yield Finding(
            f"{m[0]} micro-batches per step is fewer than pp {p}: the interleaved schedule needs at "
            f"least pp micro-batches (global {glob.value} / (micro * dp))",
            span(ctx, "batch.global", "parallel.vpp"),
            key="batch.num_microbatches",
        )
    elif not demands.accepts(p, m[0]):
        yield Finding(
            f"{m[0]} micro-batches per step is not a multiple of pp {p}: {judged_by(ctx)} raises 'number of "
            f"microbatches ({m[0]}) is not divisible by pipeline-model-parallel-size ({p}) when using "
            f"interleaved schedule' at the first step (global {glob.value} / (micro * dp); core "
            f"{MICROBATCH_GROUPS_SINCE} lifted it)",
            span(ctx, "batch.global", "parallel.vpp"),
            key="batch.num_microbatches",
        )


@register(
    "PL109",
    "sequence-indivisible",
    "error",
    "With context parallelism, the sequence does not split into 2*cp chunks.",
    RuleDocs(
        what="Checks seq_length % (2 * cp) == 0 when cp > 1.",
        why="Context parallelism splits each sequence into 2*cp chunks for load balancing under the causal "
        "mask; validate_args asserts the sequence length divides.",
        bad=torchrun(gpt("--context-parallel-size 4", seq=4100)),
        good=torchrun(gpt("--context-parallel-size 4", seq=4096)),
        fix=no_fix(),
        references=("megatron/training/arguments.py validate_args",),
    ),
)
def sequence_indivisible(ctx: LaunchContext):
    if not is_megatron(ctx):
        return
    sizes = known(ctx, "parallel.cp", "model.seq_length")
    if sizes is None or sizes[0] <= 1:
        return
    cp, seq = sizes
    if seq % (2 * cp):
        yield Finding(
            f"sequence length {seq} is not divisible by 2*cp = {2 * cp}",
            span(ctx, "model.seq_length"),
            key="model.seq_length",
        )


@register(
    "PL110",
    "position-embeddings-short",
    "error",
    "max_position_embeddings is shorter than the sequence.",
    RuleDocs(
        what="Checks --max-position-embeddings >= --seq-length (required even with RoPE).",
        why="validate_args asserts it: the position table must cover every position of a sequence.",
        bad=torchrun(
            "--num-layers 24 --hidden-size 2048 --num-attention-heads 16\n--seq-length 4096 "
            "--max-position-embeddings 2048\n--micro-batch-size 1 --global-batch-size 64 --bf16"
        ),
        good=torchrun(gpt(seq=4096)),
        fix=no_fix(),
        references=("megatron/training/arguments.py validate_args",),
    ),
)
def position_embeddings_short(ctx: LaunchContext):
    if not is_megatron(ctx):
        return
    sizes = known(ctx, "model.max_position_embeddings", "model.seq_length")
    if sizes is not None and sizes[0] < sizes[1]:
        yield Finding(
            f"--max-position-embeddings {sizes[0]} is shorter than --seq-length {sizes[1]}",
            span(ctx, "model.max_position_embeddings"),
            key="model.max_position_embeddings",
        )


@register(
    "PL111",
    "overlap-requirements",
    "error",
    "Communication overlap flags without what they require.",
    RuleDocs(
        what="--overlap-param-gather needs the distributed optimizer (or, from 0.14, Megatron-FSDP; from 0.17, "
        "`--optimizer dist_muon`) and --overlap-grad-reduce; --tp-comm-overlap needs sequence parallelism "
        "(so tp > 1, from 0.10: before, validate_args checked it before turning sequence parallelism off at tp 1, "
        "and an assumed release makes that case a warning); --defer-embedding-wgrad-compute (the output layer's weight gradient deferred to the "
        "pipeline flush) needs pipeline parallelism (pp > 1); --overlap-moe-expert-parallel-comm (the expert "
        "all-to-all hidden behind another micro-batch's compute) needs expert parallelism (ep > 1), virtual "
        "pipeline stages when pp > 1, the alltoall or flex token dispatcher (the default is allgather), bf16 or "
        "fp16, and no full recompute, --recompute-method, --recompute-num-layers, --moe-shared-expert-overlap "
        "or more than one MTP layer; --delay-wgrad-compute needs --overlap-moe-expert-parallel-comm.",
        why="validate_args asserts the first two (https://github.com/NVIDIA/Megatron-LM/pull/646) and "
        "ModelParallelConfig.__post_init__ raises on the third ('Cannot defer embedding wgrad compute when "
        "pipeline model parallel is not used'); TransformerConfig.__post_init__ asserts each requirement of the "
        "last two (core 0.14 to main; validate_args turns one virtual stage into none); the job stops before the "
        "first step.",
        bad=torchrun(gpt("--overlap-param-gather")),
        good=torchrun(gpt("--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather")),
        fix=no_fix(),
        references=(
            "megatron/training/arguments.py validate_args",
            "megatron/core/model_parallel_config.py ModelParallelConfig.__post_init__",
            "megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__",
        ),
    ),
)
def overlap_requirements(ctx: LaunchContext):
    if trainer(ctx) != "megatron":
        return
    gather = ctx.fact("overlap_param_gather")  # unresolved: an unknown part of the line may give it
    if gather is not None and gather.value:
        missing = []
        dist = value(ctx, "parallel.distributed_optimizer")
        # None: an unknown part of the line may give it
        if dist is not None and dist.value is False and not _gathers_without_distributed_optimizer(ctx):
            missing.append("--use-distributed-optimizer")
        if ctx.fact("overlap_grad_reduce") is None:
            missing.append("--overlap-grad-reduce")
        if missing:
            yield Finding(
                f"--overlap-param-gather requires {' and '.join(missing)}", gather.span, key="overlap_param_gather"
            )
    yield from _tp_comm_overlap_unmet(ctx)
    defer = ctx.fact("defer_embedding_wgrad_compute")
    pp = value(ctx, "parallel.pp")
    if defer is not None and defer.value and pp is not None and pp.value == 1:  # an unresolved pp may be > 1
        yield Finding(
            "--defer-embedding-wgrad-compute requires pipeline parallelism (pp > 1): Megatron-LM refuses to "
            "defer the output layer's weight gradient without a pipeline flush",
            defer.span,
            key="defer_embedding_wgrad_compute",
        )
    a2a = ctx.fact("moe_a2a_overlap")
    if a2a is not None and a2a.value:
        missing = list(_a2a_overlap_unmet(ctx))
        if missing:
            yield Finding(
                f"--overlap-moe-expert-parallel-comm requires {'; '.join(missing)}", a2a.span, key="moe_a2a_overlap"
            )
    delay = ctx.fact("delay_wgrad_compute")  # the weight gradients delayed into the overlap's schedule
    if delay is not None and delay.value and a2a is None:  # a2a unresolved: an unknown part may give it
        yield Finding(
            "--delay-wgrad-compute requires --overlap-moe-expert-parallel-comm", delay.span, key="delay_wgrad_compute"
        )


def _tp_comm_overlap_unmet(ctx: LaunchContext):
    """--tp-comm-overlap without sequence parallelism, which validate_args asserts. At tp 1 with --sequence-parallel
    written, the release decides: from 0.10 validate_args turns sequence parallelism off before the assertion (it
    fails), before 0.10 after it (it passes) (megatron/training/arguments.py, core_r0.9.0 and core_r0.10.0); where the
    release is assumed, a warning."""
    from plint.rules.keys_and_flags import release_at_least

    comm = ctx.fact("tp_comm_overlap")
    sp, tp, written = (
        value(ctx, "parallel.sequence_parallel"),
        value(ctx, "parallel.tp"),
        ctx.fact("sequence_parallel_flag"),
    )
    if comm is None or not comm.value:
        return
    # an unresolved sp or tp (value None) may satisfy the requirement: silent, as on every unknown
    message = "--tp-comm-overlap requires --sequence-parallel (and tensor parallelism > 1)"
    if sp is not None and sp.value is False and not (written is not None and written.value):
        yield Finding(message, comm.span, key="tp_comm_overlap")
    elif tp is not None and tp.value == 1 and release_at_least(ctx, "0.10") is not False:
        release = ctx.layout.extras.release if ctx.layout is not None else None
        assumed = release is not None and release[1]
        yield Finding(
            message + (": from Megatron-LM 0.10 on, tp 1 turns --sequence-parallel off first" if assumed else ""),
            comm.span,
            key="tp_comm_overlap",
            severity="warning" if assumed else None,
        )


def _a2a_overlap_unmet(ctx: LaunchContext):
    """What TransformerConfig.__post_init__ asserts beside --overlap-moe-expert-parallel-comm that the launch lacks
    (megatron/core/transformer/transformer_config.py, core_v0.14.0 to main); an unknown value meets it."""
    ep, pp, vpp = (value(ctx, k) for k in ("parallel.ep", "parallel.pp", "parallel.vpp"))
    if ep is not None and ep.value == 1:
        yield "expert parallelism (ep > 1)"
    if pp is not None and (pp.value or 0) > 1 and vpp is not None and vpp.origin != "unresolved" and not vpp.value:
        yield f"virtual pipeline stages with pp {pp.value}"  # validate_args leaves vpp 1 as None
    dispatcher = value(ctx, "moe.token_dispatcher")
    if dispatcher is not None and dispatcher.value == "allgather":
        yield "--moe-token-dispatcher-type alltoall or flex (not allgather" + (
            ", the default)" if dispatcher.origin == "default" else ")"
        )
    precision = value(ctx, "precision")
    if precision is not None and precision.value == "fp32":
        yield "--bf16 or --fp16"
    granularity = value(ctx, "recompute.granularity")
    written = {
        "--recompute-method": value(ctx, "recompute.method"),
        "--recompute-num-layers": value(ctx, "recompute.num_layers"),
    }
    given = [flag for flag, v in written.items() if v is not None and v.value is not None and v.origin != "default"]
    if granularity is not None and granularity.value == "full":
        yield "no full recompute"
    elif given:
        yield f"no {' or '.join(given)}"
    shared = ctx.fact("moe_shared_expert_overlap")
    if shared is not None and shared.value:
        yield "no --moe-shared-expert-overlap"
    mtp = value(ctx, "model.mtp_num_layers")
    if mtp is not None and (mtp.value or 0) > 1:
        yield "at most one MTP layer"


def _gathers_without_distributed_optimizer(ctx: LaunchContext) -> bool:
    """Whether the release's validate_args takes --overlap-param-gather without the distributed optimizer:
    with Megatron-FSDP from 0.14 (the release that named --use-megatron-fsdp; 0.12 and 0.13's
    --use-custom-fsdp required the distributed optimizer) and with `--optimizer dist_muon` from 0.17
    (megatron/training/arguments.py validate_args: '--overlap-param-gather only supported with distributed
    optimizer, megatron fsdp, or dist_muon')."""
    from plint.rules.keys_and_flags import release_at_least

    args = ctx.layout.extras.trainer_args
    if args is None:
        return False
    fsdp = args.get("use_megatron_fsdp")  # by dest: a spelling the release in force knows
    if fsdp is not None and fsdp.spec is not None:
        return True
    return args.text("--optimizer") == "dist_muon" and release_at_least(ctx, "0.17") is not False


@register(
    "PL112",
    "recompute-conflict",
    "error",
    "Recompute flags the trainer rejects or silently overrides.",
    RuleDocs(
        what="Full recompute needs --recompute-method and --recompute-num-layers (where the parser in force "
        "leaves the layer count without a default: older Megatron-LM parsers default it to 1); selective "
        "recompute (or --recompute-activations) excludes --recompute-method; --recompute-activations silently "
        "overrides --recompute-granularity full. A launch whose parser plint had to assume (no parser in the tree, "
        "no release configured) and that gives flags the assumed parser lacks (a fork's, an older release's) gets a "
        "warning for the missing flags, as PL501 does.",
        why="validate_args: 'recompute method is not yet supported for selective recomputing granularity'; "
        "TransformerConfig raises for full recompute without a method or layer count. The silent "
        "override trades the memory full recompute would save for nothing "
        "(https://github.com/NVIDIA/Megatron-LM/issues/1487).",
        bad=torchrun(gpt("--recompute-activations --recompute-method uniform")),
        good=torchrun(gpt("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1")),
        fix=no_fix(),
        references=("megatron/training/arguments.py validate_args",),
    ),
)
def recompute_conflict(ctx: LaunchContext):
    if trainer(ctx) != "megatron":
        return
    args = ctx.layout.extras.trainer_args
    if args is None:
        return
    activations = args.get("--recompute-activations")
    granularity = args.get("--recompute-granularity")
    method = args.get("--recompute-method")
    layers = args.get("--recompute-num-layers")
    effective = value(ctx, "recompute.granularity")
    if (
        activations is not None
        and granularity is not None
        and granularity.value is not None
        and granularity.value.text == "full"
    ):
        yield Finding(
            "--recompute-activations overrides --recompute-granularity full with selective recompute",
            activations.flag_word.value_span,
            key="recompute.granularity",
        )
    if effective is not None and effective.value == "selective" and method is not None:
        yield Finding(
            "--recompute-method is rejected with selective recompute",
            method.flag_word.value_span,
            key="recompute.method",
        )
    # full recompute asked with --recompute-granularity (v2.x's --checkpoint-activations spelling is
    # PL502's: those releases exit on it)
    from plint.rules.keys_and_flags import catalog_in_force_of, flag_catalog, judged_by, unknown_flags

    spec = flag_catalog(ctx).lookup("--recompute-num-layers")
    layers_given = layers is not None or (spec is not None and spec.default is not None)  # older parsers: 1
    if (
        effective is not None
        and effective.value == "full"
        and granularity is not None
        and not (method and layers_given)
    ):
        need = " and ".join(
            f for f, given in (("--recompute-method", method), ("--recompute-num-layers", layers_given)) if not given
        )
        in_force = catalog_in_force_of(ctx)
        # no parser in the tree, and flags the assumed one lacks: another parser runs (a fork, an older release)
        assumed = in_force is not None and in_force.assumed and any(True for _ in unknown_flags(ctx))
        yield Finding(
            f"full recompute needs {need}" + (f" (in {judged_by(ctx)})" if assumed else ""),
            effective.span,
            key="recompute.granularity",
            severity="warning" if assumed else None,
        )
