"""PL3xx (the rules that need no cost model): settings that run, but slower or with more memory than
the same launch with one flag changed; and ZeRO with a DeepSpeed pipeline, which DeepSpeed rejects."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plint.rules.base import (
    Example,
    Finding,
    LaunchContext,
    RuleContext,
    RuleDocs,
    planned_fix,
    register,
    safe_fix,
    unsafe_fix,
)
from plint.rules.common import (
    CP_USEFUL_FROM,
    FIGURES,
    gpt,
    is_gpt_neox,
    is_megatron,
    known,
    span,
    spelled,
    torchrun,
    trainer,
    value,
)

if TYPE_CHECKING:
    from plint.layout import FactKey


@register(
    "PL303",
    "sequence-parallel-off",
    "warning",
    "Tensor parallelism without sequence parallelism.",
    RuleDocs(
        what="Checks tp > 1 without --sequence-parallel (Megatron-LM). A framework that takes Megatron's settings as keys of its own (verl, SkyRL, NeMo RL, ROLL, Megatron-SWIFT) is told its key.",
        why="Without sequence parallelism every tensor-parallel rank keeps the full activations of the "
        "layer norms and dropouts (Korthikanti et al. 2022: 34 vs 10 + 24/tp bytes per token and hidden "
        "unit), and the all-reduce moves the same bytes as the reduce-scatter + all-gather that SP uses. "
        "With expert parallelism Megatron before 0.15 refuses the launch.",
        bad=torchrun(gpt("--tensor-model-parallel-size 2")),
        good=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel")),
        fix=safe_fix(
            "`plint fix` adds --sequence-parallel after the tensor-parallel size (safe: same model, same numerics; Megatron-LM only)."
        ),
    ),
)
def sequence_parallel_off(ctx: RuleContext):
    if trainer(ctx) != "megatron":
        return
    sizes = known(ctx, "parallel.tp", "parallel.sequence_parallel")
    if sizes and sizes[0] > 1 and not sizes[1]:
        ep = known(ctx, "parallel.ep")
        extra = " (with expert parallelism Megatron before 0.15 rejects this)" if ep and ep[0] > 1 else ""
        yield Finding(
            f"tp {sizes[0]} without {spelled(ctx, '--sequence-parallel')} keeps full activations on every "
            f"tensor-parallel rank{extra}",
            span(ctx, "parallel.tp"),
            key="parallel.sequence_parallel",
        )


@register(
    "PL304",
    "sequence-parallel-ignored",
    "warning",
    "Sequence parallelism requested with tp == 1, which Megatron silently drops.",
    RuleDocs(
        what="Checks --sequence-parallel with tensor parallelism 1.",
        why="validate_args turns sequence parallelism off when tp is 1 ('Disabling sequence parallelism "
        "because tensor model parallelism is disabled'): the memory saving expected from it never comes.",
        bad=torchrun(gpt("--sequence-parallel")),
        good=torchrun(gpt("")),
        fix=planned_fix("`plint fix` removes the flag (safe: it has no effect)."),
    ),
)
def sequence_parallel_ignored(ctx: RuleContext):
    if not is_megatron(ctx):
        return
    sp, tp = ctx.fact("sequence_parallel_flag"), known(ctx, "parallel.tp")
    if sp is not None and sp.value is True and tp and tp[0] == 1:
        yield Finding(
            "--sequence-parallel with tp 1 is silently turned off by Megatron",
            sp.span,
            key="parallel.sequence_parallel",
        )


@register(
    "PL305",
    "distributed-optimizer-off",
    "warning",
    "Data parallelism without the distributed optimizer or ZeRO.",
    RuleDocs(
        what="Checks dp > 1 with neither --use-distributed-optimizer nor a ZeRO stage. Exempt: a "
        "Megatron-DeepSpeed launch that DeepSpeed gives its BF16_Optimizer (bf16 at ZeRO 0 with the "
        "pipeline engine, or ZeRO 1 with fp32 gradient accumulation), which shards the fp32 state itself. "
        "Under --deepspeed the remedy it names is ZeRO stage 1 in the DeepSpeed config, which then runs "
        "the optimizer; where that config could not be read the stage is unknown, and the rule stays quiet. "
        "Without --deepspeed a Megatron-DeepSpeed fork runs Megatron's own optimizer (no ZeRO stage), and the "
        "remedy is --use-distributed-optimizer where the release's parser has it; where it has none (the "
        "bigscience fork), no remedy can be named and the rule stays quiet. A framework that takes Megatron's "
        "settings as keys of its own (verl, NeMo RL, ROLL, Megatron-SWIFT) is told its key.",
        why="Without sharding every data-parallel rank holds the fp32 master weights and Adam moments: 18 "
        "bytes per parameter instead of 6 + 12/dp (Megatron's theoretical memory formula); for dp 8 that "
        "is 18 vs 7.5 bytes, for the same step time.",
        bad=torchrun(gpt("")),
        good=torchrun(gpt("--use-distributed-optimizer")),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` adds --use-distributed-optimizer with --overlap-grad-reduce and "
            "--overlap-param-gather after the tensor-parallel size (unsafe: checkpoints change format). Under "
            "--deepspeed, set ZeRO stage 1 in the DeepSpeed config."
        ),
    ),
)
def distributed_optimizer_off(ctx: LaunchContext):
    if not is_megatron(ctx):
        return
    dp, dist = known(ctx, "parallel.dp"), value(ctx, "parallel.distributed_optimizer")
    if not dp or dp[0] <= 1 or (dist is not None and dist.value):
        return
    zero = value(ctx, "parallel.zero_stage")
    if zero is not None and zero.value:
        return
    if ctx.fact("torch_fsdp2") is not None:
        return  # torch FSDP2 shards the optimizer state itself (and Megatron forbids the distributed optimizer)
    fsdp = ctx.fact("megatron_fsdp")
    if fsdp is not None and fsdp.value:
        yield from _megatron_fsdp_unsharded(ctx, dp[0], fsdp.span)
        return
    from plint.catalog.deepspeed_engine import bf16_optimizer_accum_bytes

    if bf16_optimizer_accum_bytes(ctx.layout) is not None:
        return  # DeepSpeed's BF16_Optimizer shards the fp32 state like ZeRO-1
    precision = value(ctx, "precision")
    args = ctx.layout.extras.trainer_args
    neox = is_gpt_neox(ctx)  # GPT-NeoX always runs DeepSpeed's optimizer; its config holds the ZeRO section
    if neox or (trainer(ctx) == "megatron-deepspeed" and args is not None and args.get("--deepspeed") is not None):
        if zero is not None and zero.value is None and zero.origin == "unresolved":
            return  # the DeepSpeed config that sets the stage is unknown: it may well shard (PL002 says so)
        # DeepSpeed runs the optimizer: ZeRO-1 is the remedy. Mixed precision (the ZeRO paper's K = 12):
        # 2 + 2 + 12 bytes per parameter, 4 + 12/dp at stage 1; fp32 (no master copy): 4 + 4 + 8, 8 + 8/dp
        fp32 = precision is not None and precision.value == "fp32"
        full, kept, sharded = (16, 8, 8) if fp32 else (16, 4, 12)
        what = "Adam moments" if fp32 else "fp32 master weights and Adam moments"
        yield Finding(
            f"dp {dp[0]} at ZeRO stage 0: every rank keeps the full {what} ({full} bytes per parameter "
            f"instead of {kept} + {sharded}/{dp[0]} = {kept + sharded / dp[0]:.1f} with "
            f'"zero_optimization": {{"stage": 1}} in the {"GPT-NeoX" if neox else "DeepSpeed"} config)',
            span(ctx, "parallel.zero_stage", "parallel.distributed_optimizer"),
            key="parallel.zero_stage",
        )
        return
    from plint.rules.keys_and_flags import flag_catalog

    if flag_catalog(ctx).lookup("--use-distributed-optimizer") is None:
        return  # the trainer in force has no distributed optimizer (an older fork): no remedy to name
    full, kept, sharded = _optimizer_bytes(precision)
    yield Finding(
        f"dp {dp[0]} without {spelled(ctx, '--use-distributed-optimizer')}: every rank keeps the full optimizer state "
        f"({full} bytes per parameter instead of {kept} + {sharded}/{dp[0]} = {kept + sharded / dp[0]:.1f})",
        span(ctx, "parallel.distributed_optimizer"),
        key="parallel.distributed_optimizer",
    )


def _optimizer_bytes(precision) -> tuple[int, int, int]:
    """(bytes per parameter unsharded, kept per rank, sharded over dp) of Megatron's states. Megatron's
    distributed-optimizer table: bf16 keeps 2 + 4 + 12 bytes per parameter (6 + 12/d sharded), fp16 2 + 2 + 16
    (4 + 16/d), fp32 4 + 4 + 8 (8 + 8/d)."""
    if precision is None:
        return 18, 6, 12
    return {"fp16": (20, 4, 16), "fp32": (16, 8, 8)}.get(precision.value, (18, 6, 12))


def _megatron_fsdp_unsharded(ctx: RuleContext, dp: int, flag_span):
    """Megatron-FSDP shards Megatron's states as its --data-parallel-sharding-strategy says (default
    optim_grads_params); only `no_shard` (plain data parallelism) leaves the optimizer state whole. Adding
    --use-distributed-optimizer is no remedy there: Megatron-FSDP v1 turns it on itself and v2 rejects it
    (megatron/training/arguments.py validate_args, 0.18 on). The strategy's default is the release's own:
    no_shard up to 0.17, optim_grads_params from 0.18 (the flag catalogs)."""
    strategy = ctx.fact("megatron_fsdp.strategy")
    if strategy is None or strategy.value != "no_shard":
        return
    full, kept, sharded = _optimizer_bytes(value(ctx, "precision"))
    yield Finding(
        f"Megatron-FSDP with --data-parallel-sharding-strategy no_shard at dp {dp}: every rank keeps the "
        f"full optimizer state ({full} bytes per parameter instead of {kept} + {sharded}/{dp} = "
        f"{kept + sharded / dp:.1f} with --data-parallel-sharding-strategy optim)",
        strategy.span or flag_span,
        key="megatron_fsdp.strategy",
    )


# the flags PL306 asks for beside the distributed optimizer, and the trainer fact each sets
_OVERLAP_FLAGS: tuple[tuple[str, FactKey], ...] = (
    ("--overlap-grad-reduce", "overlap_grad_reduce"),
    ("--overlap-param-gather", "overlap_param_gather"),
)


@register(
    "PL306",
    "overlap-off",
    "info",
    "Distributed optimizer without gradient-reduce / parameter-gather overlap.",
    RuleDocs(
        what="Checks --use-distributed-optimizer without --overlap-grad-reduce or --overlap-param-gather. "
        "A framework that takes Megatron's settings as keys of its own (verl, SkyRL, NeMo RL, ROLL, Megatron-SWIFT) is told its key.",
        why="Without overlap the reduce-scatter of gradients and the all-gather of parameters run after "
        "backward and before forward, exposed on the critical path of every step.",
        bad=torchrun(gpt("--use-distributed-optimizer")),
        good=torchrun(gpt("--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather")),
        fix=planned_fix("`plint fix` adds the two flags."),
    ),
)
def overlap_off(ctx: RuleContext):
    if trainer(ctx) != "megatron":
        return
    dist = value(ctx, "parallel.distributed_optimizer")
    dp = known(ctx, "parallel.dp")
    if dist is None or not dist.value or not dp or dp[0] <= 1:
        return
    missing = [spelled(ctx, f) for f, k in _OVERLAP_FLAGS if ctx.fact(k) is None]
    if missing:
        yield Finding(
            f"the distributed optimizer runs without {' and '.join(missing)}: its communication is exposed every step",
            dist.span,
            key="overlap_grad_reduce",
        )


@register(
    "PL307",
    "context-parallel-short-sequence",
    "warning",
    "Context parallelism for a sequence too short to need it: a smaller cp does better.",
    RuleDocs(
        what=f"Checks cp > 1 with sequences shorter than {CP_USEFUL_FROM} tokens, and speaks only when it can "
        "name a concrete alternative of the same launch: a smaller context-parallel size (1 included), the "
        "GPUs freed given to data parallelism, that passes the start-up checks (PL102, PL109), fits in "
        "memory (the high end of its measured error band included) and whose step the cost model predicts "
        "shorter by more than it can tell apart (5%; 10% for MoE models), at least half of it in the "
        "context-parallel exchange. The message names it (" + FIGURES + "); without one the rule is quiet.",
        why="Each context-parallel rank works on seq/(2*cp)-token chunks; short chunks make the attention "
        "kernels and the ring exchange latency-bound, so cp costs more than the data parallelism it "
        "replaces (Megatron's MoE guide recommends CP from 8K tokens).",
        bad=torchrun(gpt("--context-parallel-size 2", seq=2048)),
        good=torchrun(gpt("--context-parallel-size 2", seq=16384)),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` writes the context-parallel size the message names (unsafe: the data-"
            "parallel size and checkpoints change)."
        ),
    ),
)
def context_parallel_short(ctx: RuleContext):
    if not is_megatron(ctx):
        return
    sizes = known(ctx, "parallel.cp", "model.seq_length")
    if not (sizes and sizes[0] > 1 and sizes[1] < CP_USEFUL_FROM):
        return
    from plint.rules.cost import context_alternative, gain_text

    better = context_alternative(ctx)
    if better is None:
        return
    new, variant, est = better
    yield Finding(
        f"cp {sizes[0]} on {sizes[1]}-token sequences ({sizes[1] // (2 * sizes[0])}-token chunks): "
        f"cp {new.cp} and dp {new.data_parallel()} instead: {gain_text(variant, est, new)}",
        span(ctx, "parallel.cp"),
        key="parallel.cp",
    )


@register(
    "PL309",
    "zero-with-pipeline",
    "error",
    "ZeRO stage 2 or 3 with a DeepSpeed pipeline module.",
    RuleDocs(
        what="Megatron-DeepSpeed builds a DeepSpeed PipelineModule whenever --deepspeed is set without "
        "--no-pipeline-parallel, even at pp 1, and other scripts build one themselves (read with ast); "
        "checks that the ZeRO stage is then below 2.",
        why="DeepSpeed refuses it: 'ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism' "
        "(Megatron-DeepSpeed#474, DeepSpeed#3589).",
        bad=Example(
            {
                "launch.sh": "deepspeed --num_gpus 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 "
                "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
                "--micro-batch-size 1 --global-batch-size 64 --bf16 "
                "--deepspeed --deepspeed_config ds.json --zero-stage 2\n",
                "ds.json": '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1, '
                '"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}\n',
            }
        ),
        good=Example(
            {
                "launch.sh": "deepspeed --num_gpus 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 "
                "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
                "--micro-batch-size 1 --global-batch-size 64 --bf16 "
                "--deepspeed --deepspeed_config ds.json --zero-stage 2 --no-pipeline-parallel\n",
                "ds.json": '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1, '
                '"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}\n',
            }
        ),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` sets the DeepSpeed JSON's stage to 1 when the entry script builds the "
            "PipelineModule itself; for Megatron-DeepSpeed not yet (planned: --no-pipeline-parallel when pp is 1)."
        ),
    ),
)
def zero_with_pipeline(ctx: RuleContext):
    pipe = ctx.fact("deepspeed.pipeline_module")  # a PipelineModule the entry script builds (script_ds_config)
    if trainer(ctx) != "megatron-deepspeed":
        zero = value(ctx, "parallel.zero_stage")
        if pipe is not None and zero is not None and isinstance(zero.value, int) and zero.value >= 2:
            yield Finding(
                f"ZeRO stage {zero.value} with a DeepSpeed pipeline module ({pipe.note}, line "
                f"{pipe.span.line if pipe.span else '?'}): DeepSpeed rejects ZeRO-2/3 with pipeline "
                "parallelism",
                zero.span,
                key="parallel.zero_stage",
            )
        return
    zero = value(ctx, "parallel.zero_stage")
    npp = ctx.fact("megatron_deepspeed.no_pipeline_parallel")
    if zero is None or not isinstance(zero.value, int) or zero.value < 2 or (npp is not None and npp.value):
        return
    pp = known(ctx, "parallel.pp")
    # GPT-NeoX builds the pipeline module from pipe_parallel_size 1 on, and not at 0 (is_pipe_parallel,
    # megatron/neox_arguments/arguments.py calculate_derived at ea7aefd8)
    off = "pipe_parallel_size 0" if is_gpt_neox(ctx) else "--no-pipeline-parallel"
    where = "pp > 1" if pp and pp[0] > 1 else f"without {off} (even at pp 1)"
    yield Finding(
        f"ZeRO stage {zero.value} with a DeepSpeed pipeline module ({where}): DeepSpeed rejects "
        "ZeRO-2/3 with pipeline parallelism",
        zero.span,
        key="parallel.zero_stage",
    )
