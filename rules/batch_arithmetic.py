"""PL1xx on the batch: global batch, batch-size ramps and schedules (Megatron's micro-batch calculator)
and DeepSpeed's batch triple, the sizes the trainer rejects at start-up or when training reaches them.
Conditions follow shared/reference/megatron.md §2 and deepspeed.md §2; each rule cites the check it mirrors.
The rest of PL1xx (the parallel grid, the model shape, precision, recompute) is in plint.rules.arithmetic.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

from plint.rules.base import Example, Finding, LaunchContext, RuleDocs, register, unsafe_fix
from plint.rules.common import MEGATRON_ASSERT, gpt, is_megatron, known, on_assumed_node, torchrun, trainer, value

if TYPE_CHECKING:
    from typing import Any

    from plint.layout import FieldPath


@register(
    "PL102",
    "global-batch-indivisible",
    "error",
    "The global batch is not a multiple of micro-batch times data parallelism.",
    RuleDocs(
        what="Checks global batch % (micro * dp) == 0, with dp = world / (tp*pp*cp); with --rampup-batch-size "
        "START INCREMENT SAMPLES (Megatron-LM up to core 0.17 and the Megatron-DeepSpeed forks; ignored "
        "since 0.18) the ramp's own start-up checks and every batch size of the ramp, and with "
        "--step-batch-size-schedule every batch size of the schedule. Quiet where the repository's own parser "
        "sets the global batch itself in parse_args (a fork rounding it up to a multiple of micro x dp).",
        why="Megatron's micro-batch calculator asserts it ('global batch size (G) is not divisible by micro "
        "batch size (m) times data parallel size (d)'). It breaks most often after a node-count or "
        "tp/pp change, since dp moves with them. A batch-size ramp is checked at each step: a ramp "
        "size that does not divide stops the run when the ramp reaches it, mid-run.",
        bad=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel", glob=66)),
        good=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel", glob=64)),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` moves the global batch to the nearest valid value, and a ramp's start and "
            "increment onto multiples of micro-batch x dp, where they are written as literals."
        ),
        references=("megatron/core/num_microbatches_calculator.py",),
    ),
)
def global_batch_indivisible(ctx: LaunchContext):
    yield from on_assumed_node(ctx, _global_batch_indivisible(ctx))


def _global_batch_indivisible(ctx: LaunchContext):
    from plint.rules.keys_and_flags import flag_catalog

    if not is_megatron(ctx) or flag_catalog(ctx).global_batch_rewritten:
        return  # a parser that sets the global batch itself (a fork rounding it up) is checked with its own value
    glob = value(ctx, "batch.global")
    sizes = known(ctx, "batch.global", "batch.micro", "parallel.dp")
    if sizes is None or glob is None:
        return
    g, m, dp = sizes
    if m * dp and g % (m * dp) and glob.origin != "default":
        lower = g - g % (m * dp)
        # below one micro-batch per data-parallel rank the only nearest valid value is m * dp itself
        nearest = f"values: {lower} or {lower + m * dp}" if lower else f"value: {m * dp}"
        yield Finding(
            f"global batch {g} is not divisible by micro-batch {m} * dp {dp} = {m * dp}; "
            f"nearest valid {nearest}; {MEGATRON_ASSERT}",
            glob.span,
            key="batch.global",
        )
    yield from _ramp_indivisible(ctx, g, m, dp)  # a default global (micro * dp) is the ramp's target too
    yield from _schedule_indivisible(ctx, m, dp)


def _int_words(use) -> list[int] | None:
    """The values of a flag use as integers, or None when any is unknown or not an integer."""
    try:
        return [int(w.text) for w in use.values] if all(w.known for w in use.values) else None
    except (TypeError, ValueError):
        return None


def _runs_ramp(ctx: LaunchContext) -> bool:
    """Whether the release in force builds the ramp-up calculator: Megatron-LM core 0.18 replaced it by
    --step-batch-size-schedule and ignores --rampup-batch-size (PL502 says so); the forks keep it."""
    from plint.rules.keys_and_flags import SINCE, flag_catalog

    if trainer(ctx) != "megatron":
        return True
    release, since = flag_catalog(ctx).release, SINCE["--rampup-batch-size"][0]
    return release[0].isdigit() and tuple(map(int, release.split("."))) < tuple(map(int, since.split(".")))


def _ramp_indivisible(ctx: LaunchContext, g: int, m: int, dp: int):
    """--rampup-batch-size START INCREMENT SAMPLES, as RampupBatchsizeNumMicroBatchesCalculator checks it
    (megatron/core/num_microbatches_calculator.py up to core 0.17; megatron/microbatches.py in v2.x and
    the Megatron-DeepSpeed forks): at construction START > 0, INCREMENT > 0, SAMPLES >= 0, GLOBAL - START
    >= 0 and a multiple of INCREMENT (and a zero interval divides SAMPLES by zero increments); then each
    update with consistency_check asserts the current batch size % (micro * dp) == 0: START at the first
    step, START + k*INCREMENT when the ramp reaches it. --decrease-batch-size-if-needed rounds down instead."""
    args = ctx.layout.extras.trainer_args
    use = args.get("--rampup-batch-size") if args is not None else None
    if args is None or use is None or len(use.values) != 3 or not _runs_ramp(ctx):
        return
    numbers = _int_words(use)
    if numbers is None:
        return
    start, step, samples = numbers
    where = use.flag_word.value_span if use.values[0].value_span is None else use.values[0].value_span
    ramp = f"--rampup-batch-size {start} {step} {samples}"
    stop = None
    if start <= 0 or step <= 0 or samples < 0:
        stop = "start and increment must be positive and the ramp-up samples non-negative"
    elif g < start:
        stop = f"the start batch {start} is larger than the global batch {g}"
    elif (g - start) % step:
        stop = f"the interval global - start = {g} - {start} = {g - start} is not divisible by the increment {step}"
    elif g == start:
        stop = (
            f"start equals the global batch {g}: zero increments, and the calculator divides the {samples} "
            "ramp-up samples by them (ZeroDivisionError)"
        )
    if stop:
        yield Finding(
            f"{ramp}: {stop}; Megatron stops at start-up, after the job has waited in the queue",
            where,
            key="batch.rampup",
        )
        return
    if args.get("--decrease-batch-size-if-needed") is not None:
        return  # the calculator rounds each size down to a multiple of micro * dp instead of asserting
    unit = m * dp
    if not unit:
        return
    bad, count = _indivisible_sizes(start, step, g, unit)
    if not count:
        return
    shown = ", ".join(map(str, bad)) + (f", ... ({count} sizes)" if count > len(bad) else "")
    when = (
        "at the first step"
        if bad[0] == start
        else f"when the ramp reaches {bad[0]}, after about {samples * ((bad[0] - start) // step) // ((g - start) // step):,} "
        "samples, mid-run"
    )
    yield Finding(
        f"{ramp} ramps {start} -> {g} in steps of {step}, and batch size {shown} "
        f"{'is' if count == 1 else 'are'} not divisible by micro-batch {m} * dp {dp} = {unit}; "
        f"Megatron asserts it {when}; make start and increment multiples of {unit}",
        where,
        key="batch.rampup",
    )


def _indivisible_sizes(start: int, step: int, stop: int, unit: int) -> tuple[list[int], int]:
    """The first six of the ramp's sizes start, start + step, ... below stop that unit does not divide, and how
    many there are: counted from the congruence start + k * step = 0 (mod unit), not size by size (a stranger's
    ramp may hold 10^12 sizes)."""
    sizes = -(-(stop - start) // step)
    common = math.gcd(step, unit)
    divisible = 0
    if start % common == 0:
        period = unit // common  # one size in every `period` is divisible, from the first such k
        first = (-(start // common) * pow(step // common, -1, period)) % period if period > 1 else 0
        divisible = 0 if first >= sizes else (sizes - 1 - first) // period + 1
    if divisible == sizes:
        return [], 0
    # at most one size in two is divisible here (period >= 2), so six are found within twelve
    shown = list(itertools.islice((b for b in range(start, stop, step) if b % unit), 6))
    return shown, sizes - divisible


_SUFFIX = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def _schedule_sizes(text: str) -> list[int] | None:
    """The batch sizes of a --step-batch-size-schedule "THRESHOLD:BS ..." string (commas allowed, K/M/B/T
    suffixes), as StepBatchsizeNumMicroBatchesCalculator._parse_schedule reads them; None if unreadable."""
    sizes = []
    for entry in text.replace(",", " ").split():
        if ":" not in entry:
            return None
        size = entry.split(":", 1)[1].strip().upper()
        scale = _SUFFIX.get(size[-1:], 1)
        try:
            sizes.append(int(float(size[:-1] if scale > 1 else size) * scale))
        except ValueError:
            return None
    return sizes or None


def _schedule_indivisible(ctx: LaunchContext, m: int, dp: int):
    """Each batch size of --step-batch-size-schedule must divide by micro * dp when training reaches it
    (StepBatchsizeNumMicroBatchesCalculator.update with consistency_check, Megatron-LM core 0.18 on)."""
    args = ctx.layout.extras.trainer_args
    use = args.get("--step-batch-size-schedule") if args is not None else None
    if use is None or use.value is None or not use.value.known or use.value.text is None:
        return
    sizes = _schedule_sizes(use.value.text)
    bad = [b for b in sizes or () if m * dp and b % (m * dp)]
    if bad:
        yield Finding(
            f'--step-batch-size-schedule "{use.value.text}": batch size '
            f"{', '.join(map(str, bad))} {'is' if len(bad) == 1 else 'are'} not divisible by micro-batch "
            f"{m} * dp {dp} = {m * dp}; Megatron asserts it when training reaches that size",
            use.value.value_span,
            key="batch.schedule",
        )


@register(
    "PL106",
    "deepspeed-batch-mismatch",
    "error",
    "DeepSpeed's batch triple, or the trainer's flags and the DeepSpeed JSON, disagree.",
    RuleDocs(
        what="Checks train_batch_size == micro * grad_accum * dp as DeepSpeed derives them (saying at which dp "
        "the JSON's numbers agree, e.g. a JSON written for 8 GPUs launched on 16, and what to set for the "
        "launch's dp), and for "
        "Megatron-DeepSpeed that the JSON's train_batch_size / train_micro_batch_size_per_gpu equal "
        "--global-batch-size / --micro-batch-size and gradient_clipping equals --clip-grad. On a launch that "
        "uses every GPU of its node without saying how many, dp rests on the node size plint assumed: the "
        "triple check is then a warning naming the assumption, with no fix (PL101 and PL102 likewise).",
        why="DeepSpeedConfig asserts 'train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step "
        "* world_size'; in Megatron-DeepSpeed the engine's accumulation steps decide how many micro-batches "
        "train_batch() pulls, so a JSON that disagrees with the flags trains a different batch than logged.",
        bad=Example(
            {
                "launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n",
                "ds.json": '{"train_batch_size": 60, "train_micro_batch_size_per_gpu": 2}\n',
            }
        ),
        good=Example(
            {
                "launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n",
                "ds.json": '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2}\n',
            }
        ),
        fix=unsafe_fix(
            "For plain DeepSpeed, `plint fix --unsafe-fixes` sets train_batch_size to micro x grad_accum x the "
            "launch's dp (it changes the batch); the Megatron-DeepSpeed cases are not fixed automatically."
        ),
        references=("deepspeed/runtime/config.py _batch_assertion",),
    ),
)
def deepspeed_batch_mismatch(ctx: LaunchContext):
    cfg = ctx.layout.extras.ds_config if ctx.layout is not None else None
    if cfg is None:
        return
    dp = value(ctx, "parallel.dp")
    t, m = cfg.train_batch_size, cfg.train_micro_batch_size_per_gpu
    if trainer(ctx) == "deepspeed":
        batch = (value(ctx, "batch.global"), value(ctx, "batch.micro"), value(ctx, "batch.grad_accum"))
        ints = [v.value for v in batch if v is not None and isinstance(v.value, int)]
        if dp is not None and dp.value and len(ints) == len(batch):
            tb, mb, ga = ints
            if tb != mb * ga * dp.value:  # against an assumed node size: a warning (on_assumed_node)
                yield from on_assumed_node(
                    ctx,
                    [
                        Finding(
                            f"train_batch_size {tb} != micro {mb} * grad_accum {ga} * dp {dp.value} = {mb * ga * dp.value}: "
                            "DeepSpeed stops with 'Check batch related parameters'; "
                            + _where_triple_agrees(cfg, tb, mb, ga, dp.value),
                            t.span or m.span,
                            key="batch.global",
                        )
                    ],
                )
        return
    if trainer(ctx) != "megatron-deepspeed":
        return
    written: tuple[tuple[Any, FieldPath, str], ...] = (
        (t, "batch.global", "--global-batch-size"),
        (m, "batch.micro", "--micro-batch-size"),
    )
    for json_value, key, flag in written:
        mine = value(ctx, key)
        if (
            json_value.origin == "default"
            or not isinstance(json_value.value, (int, float))
            or mine is None
            or mine.value is None
            or mine.origin == "default"
            and key == "batch.global"
        ):
            continue
        if json_value.value != mine.value:
            yield Finding(
                f"{cfg.path}: {'train_batch_size' if key == 'batch.global' else 'train_micro_batch_size_per_gpu'}"
                f" is {json_value.value} but {flag} is {mine.value}",
                json_value.span,
                key=key,
            )
    clip = ctx.fact("clip_grad")
    if (
        clip is not None
        and clip.value is not None
        and cfg.gradient_clipping.value is not None
        and isinstance(cfg.gradient_clipping.value, (int, float))
        and float(cfg.gradient_clipping.value) != clip.value
    ):
        where = cfg.gradient_clipping.span or clip.span
        yield Finding(
            f"gradient_clipping is {cfg.gradient_clipping.value} in {cfg.path} "
            f"({cfg.gradient_clipping.note or 'as written'}) but --clip-grad is {clip.value}; "
            "DeepSpeed's value governs",
            where,
            key="clip_grad",
        )


def _given(v) -> bool:
    return not (v.origin == "default" and v.value is None)


def _where_triple_agrees(cfg, t: int, m: int, g: int, dp: int) -> str:
    """At which data-parallel size the JSON's batch triple would hold, and what to change for this dp.
    Which members are written decides what DeepSpeed derives (_set_batch_related_parameters): with all
    three written only dp = t / (m*g) agrees; with train_batch_size and one other, the third is derived
    by floor division, so any dp that divides the written quotient agrees."""
    sp = cfg.sequence_parallel_size.value if isinstance(cfg.sequence_parallel_size.value, int) else 1

    def gpus(d: int) -> str:
        return f"{d * sp} GPUs" if sp > 1 else f"{d} GPU{'s' if d > 1 else ''}"

    written = [
        _given(v) for v in (cfg.train_batch_size, cfg.train_micro_batch_size_per_gpu, cfg.gradient_accumulation_steps)
    ]
    if all(written):
        agrees = (
            f"the JSON agrees only at dp {t // (m * g)} ({gpus(t // (m * g))}), so it was written for "
            "another world size"
            if t % (m * g) == 0 and t // (m * g) >= 1
            else f"the JSON agrees at no dp: train_batch_size is not a multiple of micro * grad_accum = {m * g}"
        )
    else:
        per = t // m if written[1] else t // g  # the quotient the missing member is derived from
        what = "train_batch_size / micro" if written[1] else "train_batch_size / grad_accum"
        agrees = (
            f"{what} = {per} agrees with a dp that divides {per}"
            if t % (m if written[1] else g) == 0
            else f"train_batch_size {t} is not a multiple of {'micro' if written[1] else 'grad_accum'}"
        )
    if all(written):
        fixes = [f"train_batch_size {m * g * dp}"]
        if t % (m * dp) == 0:
            fixes.append(f"gradient_accumulation_steps {t // (m * dp)}")
    else:
        unit = (m if written[1] else g) * dp
        lower = t - t % unit
        fixes = [
            f"train_batch_size to a multiple of {'micro' if written[1] else 'grad_accum'} * dp = {unit} "
            f"(nearest: {lower or unit} or {(lower or unit) + unit})"
            if lower
            else f"train_batch_size to a multiple of {'micro' if written[1] else 'grad_accum'} * dp = {unit}"
        ]
    return f"{agrees}; for this launch's dp {dp} ({gpus(dp)}) set " + " or ".join(fixes)


@register(
    "PL113",
    "batch-schedule-conflict",
    "error",
    "A step batch-size schedule together with a flag the trainer refuses beside it.",
    RuleDocs(
        what="Checks that --step-batch-size-schedule (Megatron-LM core 0.18 on) comes without --global-batch-size "
        "and without --decrease-batch-size-if-needed.",
        why="The schedule sets every global batch size itself: validate_args raises 'ValueError: Cannot specify "
        "both --step-batch-size-schedule and --global-batch-size', and the micro-batch calculator raises the "
        "same for --decrease-batch-size-if-needed. The job stops at start-up, after its wait in the queue; "
        "scripts that move from --rampup-batch-size (ignored since 0.18) keep their --global-batch-size "
        "and meet it.",
        bad=torchrun(gpt('--step-batch-size-schedule "0:32 1B:64"')),
        good=torchrun(gpt('--step-batch-size-schedule "0:32 1B:64"').replace(" --global-batch-size 64", "")),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` removes the refused flag where it is written (the schedule's last size is "
            "the final batch)."
        ),
        references=(
            "megatron/training/arguments.py validate_args",
            "megatron/core/num_microbatches_calculator.py _build_num_microbatches_calculator",
        ),
    ),
)
def batch_schedule_conflict(ctx: LaunchContext):
    from plint.rules.keys_and_flags import flag_catalog

    if trainer(ctx) != "megatron":
        return
    args = ctx.layout.extras.trainer_args
    schedule = args.get("--step-batch-size-schedule") if args is not None else None
    if args is None or schedule is None or flag_catalog(ctx).lookup("--step-batch-size-schedule") is None:
        return  # a release without the flag rejects it outright (PL501)
    for flag, where in (
        ("--global-batch-size", "validate_args"),
        ("--decrease-batch-size-if-needed", "the micro-batch calculator"),
    ):
        other = args.get(flag)
        if other is not None:
            shown = f"{flag} {other.value.text}" if other.value is not None and other.value.known else flag
            yield Finding(
                f"--step-batch-size-schedule with {shown}: {where} raises 'ValueError: Cannot specify "
                f"both --step-batch-size-schedule and {flag}' at start-up; drop {flag}",
                other.flag_word.value_span,
                key="batch.schedule",
            )
