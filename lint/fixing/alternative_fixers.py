"""The unsafe fixes of the advice that names a better layout of the same launch (plint.planning.alternatives,
found again by the rule's own search): PL301's pipeline size, virtual stages per rank and micro-batch, PL202's
and PL307's context-parallel size, PL203's expert-parallel size, each edited where it was written or added after the
tensor-parallel size. Unsafe: checkpoints change layout (and, with the micro-batch, the step's numerics)."""

from __future__ import annotations

from plint.fixing.fix_registry import FixContext, points_at, trainer_args_of, fixer
from plint.fixing.layout_fixers import insert_after_tp, layout_context, remove_flag, replace_value, size_edits
from plint.rules.base import Edit, Fix
from plint.reading.sources.megatron import integer
from plint.values import from_word

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.cost import ModelInput
    from plint.diagnostics import Diagnostic

SIZES = (
    ("parallel.pp", "--pipeline-model-parallel-size", "pp"),
    ("batch.micro", "--micro-batch-size", "micro_batch"),
    ("parallel.cp", "--context-parallel-size", "cp"),
    ("parallel.ep", "--expert-model-parallel-size", "ep"),
)
CHUNK = "--num-layers-per-virtual-pipeline-stage"  # every Megatron-LM release has it
STAGES = "--num-virtual-stages-per-pipeline-rank"
# the flags that split the layers unevenly (plint.cost.pipeline_stages): an alternative with another split
# replaces them (Megatron takes one way at a time: TransformerConfig.__post_init__ rejects first/last stages
# beside the embedding/loss accounting, and a layout beside either)
UNEVEN_SPLITS = (
    "--pipeline-model-parallel-layout",
    "--decoder-first-pipeline-num-layers",
    "--decoder-last-pipeline-num-layers",
    "--account-for-embedding-in-pipeline-split",
    "--account-for-loss-in-pipeline-split",
)
# spellings the fix does not rewrite: a pipeline layout or an uneven split sets the stages its own way
OTHER_SPLITS = (*UNEVEN_SPLITS, "--hybrid-layer-pattern")


def _context_of(diag: Diagnostic, ctx: FixContext, key: str = "parallel.pp"):
    """The rule context of the launch whose `key` the finding points at (its own key is an estimate's)."""
    contexts = [c for c in ctx.contexts() if c.layout is not None]
    for c in contexts:
        v = c.layout.get(key)
        if v is not None and points_at(v.span, diag):
            return c
    return contexts[0] if len(contexts) == 1 else None


@fixer("PL301")
def write_pipeline_alternative(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    from plint.cost.layout_estimate import costed_input, layout_estimate
    from plint.rules.cost import bubble_alternative

    rctx = _context_of(diag, ctx)
    if rctx is None or rctx.layout.value("trainer") != "megatron":
        return None
    # the input the rule searched from: the launch's own uneven split included
    inp, est = costed_input(rctx.layout, rctx.settings), layout_estimate(rctx.layout, rctx.settings)
    better = bubble_alternative(rctx, inp, est) if inp is not None and est is not None else None
    return _write(ctx, rctx, inp, better[0], "PL301") if better is not None and inp is not None else None


@fixer("PL202")
@fixer("PL203")
@fixer("PL307")
def write_size_alternative(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    from plint.cost.layout_estimate import cost_input
    from plint.rules.cost import context_alternative, spanning_alternative
    from plint.rules.topology import domain_of

    rctx = layout_context(diag, ctx)
    if rctx is None or rctx.layout.value("trainer") != "megatron":
        return None
    if diag.code == "PL307":
        better = context_alternative(rctx)
    else:
        domain = domain_of(rctx)
        better = spanning_alternative(rctx, "cp" if diag.code == "PL202" else "ep", domain) if domain else None
    inp = cost_input(rctx.layout, rctx.settings) if better is not None else None
    if better is None or inp is None:
        return None
    return _write(ctx, rctx, inp, better[0], diag.code)


def _write(ctx: FixContext, rctx, inp: ModelInput, new: ModelInput, code: str) -> Fix | None:
    """Edits for every size of `new` that differs from the launch's; None when one cannot be written."""
    from plint.planning.alternatives import describe_pipeline

    written = size_edits(ctx, rctx, SIZES, new)
    if written is None:
        return None
    edits, changed = written
    changes = [f"{key.split('.')[1]} {target}" for key, _, target in changed]
    split = _split_edits(ctx, rctx, inp, new) if code == "PL301" else []
    if split is None:
        return None
    edits.extend(split)
    if (new.vpp or 1) != (inp.vpp or 1) and not new.pipeline_split:  # an uneven split writes its own
        edit = _virtual_stages(ctx, rctx, new, replaced=bool(split))
        if edit is None:
            return None
        edits.append(edit)
    what = describe_pipeline(new, inp) if code == "PL301" else ", ".join(changes)
    return Fix(f"{what}, as {code} names it (checkpoints change layout)", tuple(edits), "unsafe") if edits else None


def _split_edits(ctx: FixContext, rctx, inp: ModelInput, new: ModelInput) -> list[Edit] | None:
    """Edits that give the launch `new`'s split of the layers (plint.planning.alternatives.split_flags) where it is
    not the launch's: the launch's uneven flags removed (with its virtual-stage flags where the new split sets
    the stages itself: a layout implies them, uneven first/last stages need --num-virtual-stages-per-pipeline-rank,
    megatron/training/arguments.py validate_args) and the new ones added; [] when the split stays; None when they
    cannot be written."""
    from plint.planning.alternatives import split_flags

    wanted = split_flags(new)
    if wanted == split_flags(inp):
        return []
    args = trainer_args_of(rctx)
    if args is None or args.get("--hybrid-layer-pattern") is not None:
        return None
    replaced = UNEVEN_SPLITS + ((CHUNK, STAGES) if new.pipeline_split else ())
    present = [flag for flag in replaced if args.get(flag) is not None]
    removed = remove_flag(ctx, args, *present) if present else []
    added = insert_after_tp(ctx, rctx, wanted) if wanted else None
    if removed is None or (wanted and added is None):
        return None
    return [*removed, *([added] if added is not None else [])]


def _virtual_stages(ctx: FixContext, rctx, new: ModelInput, replaced: bool = False) -> Edit | None:
    """The virtual stages per rank of `new` (> 1), written with the spelling the launch uses, or added as
    layers per virtual stage; None where the launch sets its stages another way (unless this fix `replaced`
    that way) or goes back to one."""
    args = trainer_args_of(rctx)
    other = not replaced and any(args.get(o) is not None for o in OTHER_SPLITS) if args is not None else True
    if args is None or not new.vpp or new.vpp <= 1 or other:
        return None
    chunk = new.num_layers // (new.pp * new.vpp)
    for option, target in ((STAGES, new.vpp), (CHUNK, chunk)):
        use = args.get(option)
        if use is not None:
            return replace_value(ctx, from_word(use.values[0], integer, option), target) if use.values else None
    return insert_after_tp(ctx, rctx, f"{CHUNK} {chunk}")


# PL302 drops one axis; what only that axis allows goes with it (PL304: no sequence parallelism at tp 1;
# PL111: --tp-comm-overlap needs sequence parallelism)
WITH_TP = ("--sequence-parallel", "--tp-comm-overlap")
# what goes with the pipeline: Megatron refuses to defer the output layer's weight gradient without one
# (megatron/core/model_parallel_config.py ModelParallelConfig.__post_init__)
WITH_PP = ("--defer-embedding-wgrad-compute", "--wgrad-deferral-limit")
# what goes with expert parallelism: TransformerConfig.__post_init__ asserts ep > 1 under the expert all-to-all
# overlap, and the overlap under --delay-wgrad-compute (megatron/core/transformer/transformer_config.py, core 0.14+)
WITH_EP = ("--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute")
AXIS_FLAGS = {
    "tp": ("parallel.tp", "--tensor-model-parallel-size"),
    "pp": ("parallel.pp", "--pipeline-model-parallel-size"),
    "cp": ("parallel.cp", "--context-parallel-size"),
    "ep": ("parallel.ep", "--expert-model-parallel-size"),
}


@fixer("PL302")
def drop_needless_axis(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    """The axis PL302 names set to 1 (plint.rules.cost.needless_axis, the same search)."""
    from plint.rules.cost import needless_axis

    rctx = layout_context(diag, ctx)
    found = needless_axis(rctx) if rctx is not None and rctx.layout.value("trainer") == "megatron" else None
    if found is None:
        return None
    axis, size, simpler, _, _ = found
    args = trainer_args_of(rctx)
    if args is None or (axis == "pp" and (simpler.vpp or any(args.get(o) is not None for o in (CHUNK, STAGES)))):
        return None  # virtual stages go with the pipeline: their flag and value are not ours to drop
    key, flag = AXIS_FLAGS[axis]
    written = size_edits(ctx, rctx, ((key, flag, axis),), simpler)
    if written is None:
        return None
    edits = list(written[0])
    # at pp 1 the uneven split's flags would still size the one rank (get_num_layers_to_build): they go too
    going = {"tp": WITH_TP, "pp": WITH_PP + UNEVEN_SPLITS, "ep": WITH_EP}.get(axis, ())
    companions = [flag for flag in going if args.get(flag) is not None]
    if companions:
        removal = remove_flag(ctx, args, *companions)
        if removal is None:
            return None
        edits.extend(removal)
    given = f", dp {simpler.data_parallel()}" if axis != "ep" else ", experts replicated"
    if axis in ("pp", "ep") and companions:
        given += ", without " + " and ".join(companions)
    return Fix(f"{axis} {size} -> 1{given}, as PL302 names it (checkpoints change layout)", tuple(edits), "unsafe")


RECOMPUTE_FULL = ("--recompute-granularity", "--recompute-method", "--recompute-num-layers")


@fixer("PL308")
def selective_recompute(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    """Full recompute replaced by --recompute-activations (selective), as PL308 finds it fits. Unsafe: the
    memory it needs is the cost model's estimate."""
    rctx = layout_context(diag, ctx)
    args = trainer_args_of(rctx) if rctx is not None and rctx.layout.value("trainer") == "megatron" else None
    if args is None or args.get("--recompute-activations") is not None:
        return None
    edits = remove_flag(ctx, args, *RECOMPUTE_FULL)
    added = insert_after_tp(ctx, rctx, "--recompute-activations")
    if added is None or edits is None:
        return None
    return Fix(
        "full recompute -> --recompute-activations (selective), which the estimate says fits", (*edits, added), "unsafe"
    )


@fixer("PL310")
def larger_micro_batch(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    """The micro-batch PL310 names (plint.rules.cost.faster_micro_batch), where the launch alone states it:
    a DeepSpeed config's own micro-batch would have to change with it."""
    from plint.cost.layout_estimate import cost_input
    from plint.rules.cost import faster_micro_batch

    rctx = _context_of(diag, ctx, "batch.micro")
    if rctx is None or rctx.layout.value("trainer") != "megatron" or rctx.layout.extras.ds_config is not None:
        return None
    micro = faster_micro_batch(rctx)
    inp = cost_input(rctx.layout, rctx.settings) if micro is not None else None
    written = size_edits(ctx, rctx, (SIZES[1],), inp.replace(micro_batch=micro)) if inp is not None else None
    if not written or not written[0]:
        return None
    return Fix(
        f"micro-batch {rctx.layout.value('batch.micro')} -> {micro}, as PL310 names it", tuple(written[0]), "unsafe"
    )
