"""PL5xx (trainer flags): unknown, deprecated, repeated and invalid flags, checked against the flag
catalog of the trainer release in force (schemas/megatron_flags, from the trainers' real parsers).
Deprecations and removals are those of shared/reference/megatron.md §1.9.
"""

from __future__ import annotations


from plint.rules.base import Finding, LaunchContext, RuleContext, RuleDocs, no_fix, register, safe_fix
from plint.rules.common import closest, gpt, torchrun, trainer
from plint.bounds import MAX_SUGGESTIONS

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from typing import Any

    from plint.catalog.in_force import CatalogInForce

# flag -> (replacement or None, what the trainer does with it). Still accepted by the parser.
DEPRECATED = {
    "--batch-size": ("--micro-batch-size", "validate_args rejects it"),
    "--warmup": ("--lr-warmup-fraction or --lr-warmup-iters", "validate_args rejects it"),
    "--model-parallel-size": ("--tensor-model-parallel-size", "validate_args rejects it"),
    "--checkpoint-activations": (
        "--recompute-activations (or --recompute-granularity full with --recompute-method and --recompute-num-layers)",
        "Megatron-LM prints a message and exits with status 0 before training",
    ),
    "--use-rotary-position-embeddings": ("--position-embedding-type rope", "it is silently mapped"),
    "--use-mcore-models": (None, "it is ignored (mcore models are the default)"),
    "--enable-cuda-graph": ("--cuda-graph-impl local", "it is rewritten with a message"),
    "--use-dist-ckpt": ("--ckpt-format", "it has no effect"),
    "--dist-ckpt-format": ("--ckpt-format", "it has no effect"),
    "--moe-router-padding-for-fp8": ("--moe-router-padding-for-quantization", "it is converted with a warning"),
    "--hybrid-override-pattern": ("--hybrid-layer-pattern", "it is forwarded with a warning"),
}
SINCE = {"--rampup-batch-size": ("0.18", "--step-batch-size-schedule", "it is accepted and ignored")}
# removed flags: (replacement or None, the last release that had it)
REMOVED = {
    "--DDP-impl": (None, "23.06"),
    "--activations-checkpoint-method": ("--recompute-method", "v2.6"),
    "--activations-checkpoint-num-layers": ("--recompute-num-layers", "v2.6"),
    "--distribute-checkpointed-activations": ("--distribute-saved-activations", "v2.6"),
    "--checkpoint-num-layers": ("--recompute-num-layers", "v2.5"),
    "--layernorm-epsilon": ("--norm-epsilon", "23.06"),
    "--fp8-e4m3": ("--fp8-format e4m3", "23.06"),
    "--fp8-hybrid": ("--fp8-format hybrid", "23.06"),
    "--no-query-key-layer-scaling": ("--apply-query-key-layer-scaling (off by default now)", "23.06"),
    "--data-impl": (None, "23.06"),
    "--local_rank": ("the LOCAL_RANK variable torchrun sets", "0.8"),
    "--delay-param-gather": ("--no-align-param-gather (sense flipped)", "0.8"),
    "--standalone-embedding-stage": ("--account-for-embedding-in-pipeline-split", "0.10"),
    "--pipeline-model-parallel-split-rank": (None, "0.13"),
    "--use-custom-fsdp": ("--use-megatron-fsdp", "0.13"),
    "--moe-extended-tp": ("--expert-tensor-parallel-size", "0.16"),
    "--moe-use-legacy-grouped-gemm": (None, "0.16"),
    "--use-legacy-models": (None, "0.17"),
    "--virtual-pipeline-model-parallel-size": ("--num-virtual-stages-per-pipeline-rank", "2021 development"),
}
# Sizes that must be 1 or more: argparse takes any int, and 0 or less ends in a division by zero or an
# empty model deep inside initialisation.
POSITIVE_DESTS = frozenset(
    {
        "tensor_model_parallel_size",
        "pipeline_model_parallel_size",
        "context_parallel_size",
        "expert_model_parallel_size",
        "expert_tensor_parallel_size",
        "micro_batch_size",
        "global_batch_size",
        "num_layers",
        "hidden_size",
        "ffn_hidden_size",
        "num_attention_heads",
        "num_query_groups",
        "seq_length",
        "max_position_embeddings",
        "num_experts",
        "moe_router_topk",
    }
)
# Entry points whose parser is exactly the core one (others add flags through extra_args_provider).
CORE_ENTRYPOINTS = {"pretrain_gpt.py", "pretrain_bert.py", "pretrain_t5.py", "pretrain_mamba.py"}


def _args(ctx: RuleContext):
    if ctx.layout is None or trainer(ctx) not in ("megatron", "megatron-deepspeed"):
        return None
    return ctx.layout.extras.trainer_args


def catalog_in_force_of(ctx: RuleContext):
    """The parser that judged the launch's flags (plint.catalog.in_force.CatalogInForce), or None."""
    return ctx.layout.extras.catalog if ctx.layout is not None else None


def flag_catalog(ctx: RuleContext):
    from plint.catalog.flags import default_release, load_flag_catalog

    in_force = catalog_in_force_of(ctx)
    if in_force is not None:
        return in_force.catalog
    release = ctx.layout.extras.release if ctx.layout is not None else None
    return load_flag_catalog(release[0] if release else default_release(trainer(ctx) or "megatron"))


def release_at_least(ctx: RuleContext, oldest: str) -> bool | None:
    """Whether the Megatron-LM release whose checks the launch meets is `oldest` ("0.17") or newer; None for a
    fork's catalog, whose releases are not in that order."""
    from plint.catalog.flags import releases

    order = [r for r in releases() if r[0].isdigit() or r == "main"]
    release = flag_catalog(ctx).release
    if release not in order or oldest not in order:
        return None
    return order.index(release) >= order.index(oldest)


def interleaving_in_force(ctx: RuleContext, overlap_p2p: bool = True):
    """What the interleaved schedule of the release the launch was checked against accepts (PL108, PL301's
    alternatives): plint.catalog.interleaving; a fork's catalog reads as the newest release."""
    from plint.catalog.interleaving import MICROBATCH_GROUPS_SINCE, PP2_SINCE, interleaving

    return interleaving(release_at_least(ctx, PP2_SINCE), release_at_least(ctx, MICROBATCH_GROUPS_SINCE), overlap_p2p)


def judged_by(ctx: RuleContext) -> str:
    """How a PL50x message names the parser that judged it."""
    from plint.catalog.flags import release_label

    in_force = catalog_in_force_of(ctx)
    return in_force.label if in_force is not None else release_label(flag_catalog(ctx).release)


def unknown_flags(ctx: LaunchContext):
    """(use, suggestion) for every flag the parser of the release in force would reject."""
    args = _args(ctx)
    in_force = catalog_in_force_of(ctx)
    entry_read = in_force is not None and in_force.entry_read
    if args is None or (ctx.layout.value("entrypoint") not in CORE_ENTRYPOINTS and not entry_read):
        return []
    cached = ctx.layout.extras.unknown_flags  # PL501 and its fixer ask once per finding
    if cached is not None and cached[0] is args:
        return cached[1]

    catalog = flag_catalog(ctx)
    options = catalog.options()
    out = []
    for use in args.uses:
        if use.spec is not None or use.option in REMOVED or not use.option.startswith("--"):
            continue
        dashed = "--" + use.option[2:].replace("_", "-")
        if catalog.lookup(dashed) is not None:
            out.append((use, dashed))
            continue
        if len(out) >= MAX_SUGGESTIONS:  # past the budget a flag is still unknown, without a suggestion
            out.append((use, None))
            continue
        near = closest(use.option, options, cutoff=0.8)
        prefix = [o for o in options if o.startswith(use.option)]
        out.append((use, near or (prefix[0] if len(prefix) == 1 else None)))
    ctx.layout.extras.unknown_flags = (args, out)
    return out


@register(
    "PL501",
    "unknown-flag",
    "error",
    "A flag the trainer's argument parser rejects.",
    RuleDocs(
        what="Checks every trainer flag against the parser of the release in force: Megatron-LM accepts no "
        "abbreviations (allow_abbrev=False) and no underscore spellings; a close match is suggested. A warning, "
        "not an error, where that parser is only assumed, or where the repository's parser also hands itself to a "
        "function from outside the tree (an installed package's add_*_args, such as FastMoE's add_fmoe_args), "
        "which may define the flag; the fix then renames nothing.",
        why="argparse stops the job with 'unrecognized arguments' (exit status 2) after it has waited in the queue.",
        bad=torchrun(gpt("--tensor-model-parallel 2 --sequence-parallel")),
        good=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel")),
        fix=safe_fix(
            "`plint fix` replaces the flag where it was written when exactly one close match stands out and takes the same values (safe)."
        ),
    ),
)
def unknown_flag(ctx: LaunchContext):
    in_force = catalog_in_force_of(ctx)
    for use, suggestion in unknown_flags(ctx):
        hint = f"; did you mean {suggestion}?" if suggestion else ""
        why_unsure = _why_unsure(in_force, use.option)
        yield Finding(
            f"{use.option} is not a flag of {judged_by(ctx)}{why_unsure or ''}{hint}",
            use.flag_word.value_span,
            key=use.option,
            severity="warning" if why_unsure is not None else None,
        )


def _fork_in_evidence(ctx: RuleContext) -> str | None:
    """A flag of the launch the assumed release does not define and no close match explains (not a misspelling):
    the launch runs a fork. Asked where the launch has a layout."""
    launch = cast("LaunchContext", ctx)  # invalid_value returns before this where the layout is None
    return next((use.option for use, suggestion in unknown_flags(launch) if suggestion is None), None)


def _why_unsure(in_force: CatalogInForce | None, option: str) -> str | None:
    """Why the parser's verdict on an unknown flag is a guess (a warning then), in the message's words; None when
    the parser judging it is the one the trainer runs."""
    from plint.catalog.forks import forks_defining

    if in_force is not None and in_force.entry_absent:
        # the script the launch runs is not in the tree: its own flags (extra_args_provider) are unknown
        return f", and the entry point {in_force.entry_absent} is not in this tree (it may add flags)"
    if in_force is not None and in_force.outside:
        # the parser also takes what an installed package's function adds to it
        return f", which also takes the flags of {', '.join(in_force.outside)} (not in this tree)"
    if in_force is None or not in_force.assumed:
        return None
    # no parser in the tree and no release configured
    forks = forks_defining(option)
    known = f"; {', '.join(forks)} define{'s' if len(forks) == 1 else ''} it" if forks else ""
    return f' (no argument parser in this tree, no megatron = "<release>" configured){known}'


@register(
    "PL502",
    "deprecated-flag",
    "warning",
    "A renamed, removed or silently ignored flag.",
    RuleDocs(
        what="Flags that Megatron-LM removed (the parser rejects them), still accepts but rejects in "
        "validate_args, or accepts and ignores; each with its replacement and the release it changed in.",
        why="A removed flag stops the job; an ignored one (--rampup-batch-size since 0.18, "
        "--use-mcore-models) silently trains something else than the script says; --checkpoint-activations "
        "makes Megatron-LM exit with status 0 before training, which schedulers report as success.",
        bad=torchrun(gpt("--checkpoint-activations")),
        good=torchrun(gpt("--recompute-activations")),
        fix=safe_fix(
            "`plint fix` renames a flag that has a one-to-one replacement taking the same value, unless the replacement is already given (safe)."
        ),
    ),
)
def deprecated_flag(ctx: LaunchContext):
    args = _args(ctx)
    if args is None:
        return
    release = flag_catalog(ctx).release
    for use in args.uses:
        if trainer(ctx) == "megatron-deepspeed" and use.spec is not None:
            continue  # the forks keep their own (older) flags on purpose
        if use.option in REMOVED and use.spec is None:
            new, last = REMOVED[use.option]
            yield Finding(
                f"{use.option} was removed (last in {last})"
                + (f"; use {new}" if new else "")
                + f": {judged_by(ctx)} rejects it",
                use.flag_word.value_span,
                key=use.option,
            )
        elif use.option in DEPRECATED and trainer(ctx) == "megatron":
            new, what = DEPRECATED[use.option]
            yield Finding(
                f"{use.option} is deprecated: {what}" + (f"; use {new}" if new else ""),
                use.flag_word.value_span,
                key=use.option,
            )
        elif use.option in SINCE and trainer(ctx) == "megatron":
            since, new, what = SINCE[use.option]
            if (
                tuple(map(int, release.split("."))) >= tuple(map(int, since.split(".")))
                if release[0].isdigit()
                else True
            ):
                yield Finding(
                    f"{use.option}: since Megatron {since} {what}; use {new}", use.flag_word.value_span, key=use.option
                )


@register(
    "PL503",
    "duplicate-flag",
    "warning",
    "A flag given twice with different values (the last one wins).",
    RuleDocs(
        what="Checks flags repeated with different values; repeats with the same value are fine.",
        why="argparse keeps the last value silently: the first one, often in a shared argument block, "
        "does nothing and readers of the script believe it does.",
        bad=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel\n--tensor-model-parallel-size 4")),
        good=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel\n--tensor-model-parallel-size 2")),
        fix=no_fix("which value was meant is the author's call."),
    ),
)
def duplicate_flag(ctx: LaunchContext):
    args = _args(ctx)
    if args is None:
        return
    seen: dict[str, tuple[tuple[str, ...], Any]] = {}  # key -> (values, the flag use that gave them)
    for use in args.uses:
        key = use.spec.dest if use.spec is not None and use.spec.dest else use.option
        texts = [w.text for w in use.values]
        values = tuple(t for t in texts if t is not None)
        if len(values) != len(texts):
            continue
        if key in seen and seen[key][0] != values:
            first, first_use = seen[key]
            yield Finding(
                f"{use.option} is given as {' '.join(first) or '(flag)'} and again as "
                f"{' '.join(values) or '(flag)'}; the last one wins",
                first_use.flag_word.value_span,
                key=key,
            )
        seen[key] = (values, use)


def _forks_accepting(ctx: RuleContext, option: str, value: str) -> list[str]:
    """The forks whose parser accepts `value` for `option`, where the release in force was only assumed."""
    from plint.catalog.forks import forks_accepting

    in_force = catalog_in_force_of(ctx)
    return forks_accepting(option, value) if in_force is not None and in_force.assumed else []


@register(
    "PL506",
    "invalid-value",
    "error",
    "A flag value of the wrong type or outside the flag's choices.",
    RuleDocs(
        what="Checks known values against the flag's type (int, float) and choices in the release's parser, "
        "and counts no cluster has (over 1,000,000 GPUs, nodes or slots; plint does not evaluate them). "
        "Where the release was only assumed (no parser in the tree, none configured), a value outside the "
        "choices is a warning when a known fork or an earlier Megatron-LM release accepts it, named (bigcode's "
        "--tokenizer-type TokenizerFromFile; --moe-token-dispatcher-type alltoall_seq, 0.10 to 0.12), or when the "
        "launch also gives flags the release lacks, which say it runs a fork that may widen the choices.",
        why="argparse rejects them ('invalid int value', 'invalid choice') and the job exits with status 2.",
        bad=torchrun(gpt("--position-embedding-type rotary")),
        good=torchrun(gpt("--position-embedding-type rope")),
        fix=no_fix(),
    ),
    needs_layout=False,
)
def invalid_value(ctx: RuleContext):
    for problem in ctx.reading.problems:  # counts past plint's bounds (plint.bounds), found while reading
        if problem.kind == "invalid-value":
            yield Finding(problem.message, problem.span)
    args = _args(ctx)
    if args is None or ctx.layout is None:  # _args is None without a layout
        return
    for use in args.uses:
        spec = use.spec
        if spec is None:
            continue
        if spec.takes_value and not use.values and spec.nargs in (None, 1, "+"):
            yield Finding(
                f"{use.option} expects a value (argparse: 'expected one argument')",
                use.flag_word.value_span,
                key=use.option,
            )
            continue
        for word in use.values:
            text = word.text
            if text is None:
                continue
            if spec.type in ("int", "float"):
                try:
                    number = (int if spec.type == "int" else float)(text)
                except ValueError:
                    yield Finding(
                        f"{use.option} takes {'an' if spec.type == 'int' else 'a'} {spec.type} in "
                        f"{judged_by(ctx)}, got {text!r}",
                        word.value_span,
                        key=use.option,
                    )
                    continue
                if spec.dest in POSITIVE_DESTS and number < 1:
                    yield Finding(
                        f"{use.option} is {text}: a size must be at least 1 (Megatron divides by it or "
                        "builds that many of something)",
                        word.value_span,
                        key=use.option,
                    )
                    continue
            # other entry points may widen a core flag's choices through extra_args_provider (Pai-Megatron-Patch's
            # megatron_patch/arguments.py appends "hybridadam" to --optimizer and "none" to
            # --position-embedding-type), so only the core scripts' parsers, or a parser read together with the
            # entry script's own arguments, are known well enough to judge
            in_force = catalog_in_force_of(ctx)
            if (
                spec.choices is not None
                and text not in spec.choices
                and (ctx.layout.value("entrypoint") in CORE_ENTRYPOINTS or (in_force and in_force.entry_read))
            ):
                near = closest(text, spec.choices)
                message = f"{use.option} {text!r} is not one of {', '.join(spec.choices)} in {judged_by(ctx)}"
                forks = _forks_accepting(ctx, use.option, text)
                if forks:  # the release was only assumed, and a fork's parser accepts it: a guess, so it warns
                    yield Finding(
                        f'{message} (no argument parser in this tree, no megatron = "<release>" '
                        f"configured); {', '.join(forks)} accept{'s' if len(forks) == 1 else ''} it",
                        word.value_span,
                        key=use.option,
                        severity="warning",
                    )
                    continue
                fork = _fork_in_evidence(ctx) if in_force is None or in_force.assumed else None
                # with no parser in the tree and no release configured, flags the assumed release lacks say the
                # launch runs a fork plint does not know, which may widen the choices (swiss-ai's Megatron-LM:
                # --optimizer ademamix beside --ademamix-alpha): a warning, as those flags are (PL501)
                yield Finding(
                    message
                    + (
                        f' (no argument parser in this tree, no megatron = "<release>" configured, and the launch '
                        f"gives flags the release lacks, such as {fork}: a fork that may accept it)"
                        if fork
                        else ""
                    )
                    + (f"; did you mean {near}?" if near else ""),
                    word.value_span,
                    key=use.option,
                    severity="warning" if fork else None,
                )
