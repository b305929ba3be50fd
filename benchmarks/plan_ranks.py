"""Where published training layouts rank among `plint plan`'s candidates.

For every run of benchmarks/data/published_runs_calibration.yaml (or the file given) that states a layout,
this plans the run's model on the run's cluster (GPU kind and count, GPUs per node, network per GPU),
global batch, sequence length and precision with plint's planner (plint.planning.plan.plan, what
`plint plan` runs) and reports the rank of the published layout among the ranked candidates, then the
top-1 / top-3 / top-10 counts for dense and MoE runs apart.

The run is read by calibrate.py's conversion (to_input: the same facts the cost-model calibration
reads). The planner starts from that input with every layout choice reset to what a fresh `plint plan`
starts from (tp = pp = cp = ep = 1, the distributed optimizer, overlapped gradient reduce and parameter
gather, micro-batch 1, no recompute), so that it chooses the layout itself; the run's facts that are not
choices (precision, flash attention by era, the framework's overlaps, the NIC bandwidth) stay.

"The same layout": a candidate is the published layout when it agrees on every axis the run states:
  - tp and pp (every run with a layout states both);
  - cp and dp (a run stating one of them fixes the other: tp * pp * cp * dp is the GPU count);
  - vpp (virtual pipeline stages; none and 1 are the same) when the entry states it, or when calibrate's
    conversion reads it from the notes ("PP with interleaving"); an entry that leaves it null with
    pp > 1 may have interleaved or not, so it is not compared;
  - ep and, for MoE runs, the expert tensor parallel size (etp) when stated, or when the conversion
    reads it from the framework (Megatron-Bridge's MoE recipes set etp 1);
  - sharding, by what data parallelism shards: ZeRO-0/1 and the distributed optimizer are one class
    ("optimizer at most"), ZeRO-2 / gradients another, ZeRO-3 / FSDP full or hybrid sharding / parameters
    a third. No sharding and the distributed optimizer are one class because the planner always turns
    the distributed optimizer on (it costs no speed and saves memory), and the 2019-21 runs predate it:
    telling them apart would count a software era as a layout difference. Compared when the entry states
    zero_stage, distributed_optimizer or fsdp, or its framework decides it (Bridge: distributed optimizer).
Not part of the layout: sequence parallelism (the planner turns it on with every tp > 1), gradient
reduce precision, and the micro-batch size and recompute:
for each structure the planner keeps, per micro-batch, only the least recompute that fits, so a run's
recompute (often chosen for another memory budget, or before selective recompute existed) is not a
candidate by construction. The rank that also asks for the stated micro-batch and recompute is
reported beside ("with micro/recompute").

A rank is the 1-based position, among the distinct layouts of the ranked candidates (each layout counted
once, at its best-ranked micro-batch, recompute and gradient-reduce dtype, which are not layout axes), of
the first that is the same layout; "with micro/recompute" counts every candidate. When none is,
the reason is given: the axis whose published value the planner's search space (plan.structures)
does not hold, with the values it searches; or, inside the search space, that the cost model predicts
it does not fit as the planner judges memory (plan.fits_in_memory: the high end of the estimate's error
band within usable) even at micro-batch 1 with full recompute. Runs that state no layout, or whose
layout or model cannot be expressed (no GPU count, no global batch, a batch that is no whole number of
sequences, a layout that does not multiply to the GPU count), are listed with the reason.

What the planner holds fixed (issue 24): by default it chooses the layout with the run's own non-layout
choices, so that a claim to beat the published layout is a claim about the layout: the precision and the
gradient-reduce dtype (no --grad-reduce-in-bf16 for a run that reduced in fp32: it buys memory), the
attention kernel and the overlaps the run's framework and era had (calibrate.to_input; a framework that
overlaps TP communication does so for every tp > 1 candidate; Megatron's overlaps that a 2024 trainer had and
the entry never mentions are unstated and on, as a fresh plan has them: unstated_overlaps), what its trainer lacked (ERA: no pipeline,
context parallelism, uneven splits or expert tp before the release that added them, no virtual stages on
DeepSpeed's pipeline engine; SEQUENCE_PARALLEL_SINCE), and where the entry states them its sharding (no
distributed optimizer for a run that had none, and no gradient or parameter sharding it did not use), its
micro-batch and its recompute (each searched as a fresh plan does where the entry does not state it).
With --free the planner starts as a fresh `plint plan` does instead (the distributed optimizer and every
overlap on, micro-batch and recompute searched, more sharding allowed). --own-sharding (with --free) keeps
only the sharding.

The claim: how much faster plint predicts its own first choice than the published layout, both under the
same held choices; the published layout is costed at its best unstated choices (its best candidate when it
is among them, else as the entry states it). A claim over CLAIM_MARGIN names the step-time parts the
published layout pays and the first choice does not (the costs the experts paid that plint's choice avoids);
whether each is right or a defect of the cost model is said in the README's plan_ranks section.

    python benchmarks/plan_ranks.py [path/to/published_runs_calibration.yaml] [--free [--own-sharding]] [--overlapped] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate import (  # noqa: E402  the one conversion
    DEFAULT_DATA,
    _read_by_plint,
    _recompute,
    published_tokens_per_s,
    to_input,
)
from published_supplements import (  # noqa: E402  what the runs' publications state beyond the data
    PUBLISHED_UNMODELLED,
    VALIDATION_UNMODELLED,
    with_publication,
)

from plint.catalog.hardware import lookup_gpu  # noqa: E402
from plint.catalog.interleaving import MICROBATCH_GROUPS_SINCE, PP2_SINCE, interleaving  # noqa: E402
from plint.cost import ModelInput, estimate  # noqa: E402
from plint.cost.estimate import TIME_PART_NAMES  # noqa: E402
from plint.cost.layout_estimate import SPLIT_FIELDS  # noqa: E402
from plint.planning.plan import (  # noqa: E402
    fits_in_memory,
    memory_band_high,
    nvlink_domain,
    plan,
    reduce_dtype,
    structures,
    why_behind,
)

TOPS = (1, 3, 10)
CLAIM_MARGIN = 0.10  # a first choice predicted faster than the published layout by more than this is explained
AXES = ("tp", "cp", "pp", "dp", "vpp", "ep", "etp", "sharding")  # in the planner's loop order
SHARDING_CLASSES = ("optimizer at most", "optimizer at most", "gradients", "parameters")  # by ZeRO level
# what each axis's search is limited to (plint.planning.plan.structures), for the reason a layout is outside
SEARCH_RULE = {
    "tp": "powers of two inside the NVLink domain dividing the heads and query groups",
    "cp": "powers of two with seq divisible by 2*cp and at least 1024 tokens per rank",
    "pp": "divisors of GPUs/(tp*cp) up to the layers, even or uneven first/last stages, dp dividing the batch",
    "dp": "GPUs/(tp*cp*pp)",
    "vpp": "divisors of each stage's layers, or up to 8 with a balanced pipeline layout where the layers do not divide",
    "ep": "divisors of the experts dividing tp*cp*dp",
    "etp": "1 or tp, with ep*etp dividing tp*cp*dp",
    "sharding": "gradient or parameter sharding only without a pipeline (pp 1) and with dp > 1, and only beyond "
    "the run's own when not held",
}


@dataclass
class Stated:
    """The published layout: each axis's value, None where the entry does not state it."""

    tp: int
    pp: int
    cp: int | None = None
    dp: int | None = None
    vpp: int | None = None  # 1 for a stated "no interleaving"
    ep: int | None = None
    etp: int | None = None
    sharding: str | None = None  # one of SHARDING_CLASSES
    micro: int | None = None
    recompute: str | None = None  # "none" | "selective" | "full"


@dataclass
class Row:
    id: str
    moe: bool
    published: str
    read_by_plint: bool = True  # its trainer is one plint reads (calibrate.PLINT_TRAINERS): issue 24's scope
    candidates: int = 0
    rank: int | None = None  # same layout (the axes above)
    rank_with_micro_recompute: int | None = None
    why: str = ""  # why not among the candidates, or why the matched one is behind #1
    first: str = ""
    published_tokens: float | None = None  # the cost model's tokens/s per GPU for the published run
    first_tokens: float | None = None
    matched: str = ""
    over_headroom: str = ""  # the cost model puts the published run over usable memory (plan.fits_in_memory)
    claim: float | None = None  # first choice's predicted tokens/s over the published layout's, minus 1
    measured_tokens: float | None = None  # the run's published tokens/s per GPU (calibrate.published_tokens_per_s)
    avoids: str = ""  # for a claim over CLAIM_MARGIN: the step-time parts the published layout pays more of
    held: str = ""  # what the planner held at the run's own
    unmodelled: str = ""  # what the run's recipe sets that the cost model has no input for (*_UNMODELLED)


def axis_values(inp: ModelInput) -> dict:
    """A planner input's value on each axis, in the terms of Stated."""
    return {
        "tp": inp.tp,
        "cp": inp.cp,
        "pp": inp.pp,
        "dp": inp.data_parallel(),
        "vpp": inp.vpp or 1,
        "ep": inp.ep,
        "etp": inp.etp or inp.tp,
        "sharding": SHARDING_CLASSES[inp.sharding_level()],
        "micro": inp.micro_batch,
        "recompute": inp.recompute or "none",
    }


def stated_layout(run: dict, inp: ModelInput) -> Stated:
    """What the entry states of its layout; `inp` is calibrate's conversion of the same entry."""
    layout, world = run["layout"], run["cluster"]["total_gpus"]
    tp, pp = layout["tp"], layout["pp"]
    cp, dp = layout.get("cp"), layout.get("dp")
    if cp is None and dp is not None:
        cp = world // (tp * pp * dp)
    if dp is None and cp is not None:
        dp = world // (tp * pp * cp)
    vpp = layout.get("vpp") or inp.vpp  # the conversion reads "PP with interleaving" from the notes
    if layout.get("vpp") is not None or pp == 1:
        vpp = vpp or 1
    moe = bool(inp.num_experts)
    etp = (layout.get("expert_tp") or inp.etp) if moe else None
    states_sharding = (
        any(layout.get(k) is not None for k in ("zero_stage", "distributed_optimizer", "fsdp"))
        or inp.distributed_optimizer
    )
    recompute = layout.get("recompute")
    return Stated(
        tp=tp,
        pp=pp,
        cp=cp,
        dp=dp,
        vpp=vpp,
        ep=layout.get("ep"),
        etp=etp,
        sharding=SHARDING_CLASSES[inp.sharding_level()] if states_sharding else None,
        micro=layout.get("micro_batch_size"),
        recompute=None if recompute is None else (_recompute(recompute) or "none"),
    )


def mismatches(stated: Stated, inp: ModelInput, axes=AXES) -> list[str]:
    """The stated axes on which a planner input differs from the published layout."""
    values = axis_values(inp)
    return [a for a in axes if getattr(stated, a) is not None and getattr(stated, a) != values[a]]


def describe(values: dict) -> str:
    vpp = f" vpp {values['vpp']}" if values.get("vpp") not in (None, 1) else ""
    etp = f" etp {values['etp']}" if values.get("etp") is not None else ""  # unstated: Megatron's default, tp
    ep = f" ep {values['ep']}{etp}" if values.get("ep") not in (None, 1) else ""
    cp = f" cp {values['cp']}" if values.get("cp") not in (None, 1) else ""
    dp = "?" if values.get("dp") is None else values["dp"]
    shard = f" [{values['sharding']}]" if values.get("sharding") else ""
    return f"tp {values['tp']} pp {values['pp']}{vpp}{cp}{ep} dp {dp}{shard}"


def unplannable(run: dict) -> str | None:
    """Why the run cannot be planned as published, before converting it; None when it can."""
    layout, cluster = run["layout"], run["cluster"]
    if layout.get("tp") is None or layout.get("pp") is None:
        return "states no layout (tp/pp)"
    if not cluster.get("total_gpus"):
        return "states no GPU count"
    tokens, seq = layout.get("global_batch_tokens"), (run["model"] or {}).get("seq_length")
    if not layout.get("global_batch_seqs") and tokens and seq and tokens % seq:
        return f"global batch {tokens:,} tokens is not a whole number of {seq}-token sequences"
    return None


def _fields(options) -> dict:
    return {n: getattr(options, n) for n in options.__record_fields__}


def planning_base(
    inp: ModelInput, own_sharding: bool = False, hold: bool = False, sharding_stated: bool = True
) -> ModelInput:
    """The run's model, cluster, batch and facts with the layout choices reset to a fresh plan's; with
    `own_sharding` the run's sharding stays the base's (the planner adds more only without a pipeline); with
    `hold` also the run's own overlaps (what its framework turned on) and, where the entry states it
    (`sharding_stated`), its sharding: an unstated one is a fresh plan's, as an unstated micro-batch is searched."""
    options = (
        inp.options
        if hold
        else inp.options.__class__(
            **{
                **_fields(inp.options),
                "overlap_grad_reduce": True,
                "overlap_param_gather": True,
            }
        )
    )
    sharding = (
        {}
        if own_sharding or (hold and sharding_stated)
        else {"distributed_optimizer": True, "zero_stage": None, "sharding": None, "megatron_fsdp": False}
    )
    return inp.replace(
        tp=1,
        pp=1,
        vpp=None,
        cp=1,
        ep=1,
        etp=None,
        dp=None,
        sequence_parallel=False,
        micro_batch=1,
        recompute=None,
        recompute_method=None,
        recompute_num_layers=None,
        **dict.fromkeys(SPLIT_FIELDS),
        options=options,
        **sharding,
    )


# What the run's trainer could lay out, by the release that added it: the Megatron-Core release its framework
# names (core_release), else the entry's year standing for the trainer's release (a feature released late in a
# year counts from the next). Megatron-LM: pipeline parallelism from v2.0 (Jan 2021; v1.0's megatron/arguments.py
# has only --model-parallel-size); virtual stages over pp 2 from core 0.8 (Aug 2024), and an interleaved schedule
# over micro-batches pp does not divide from core 0.10 (plint.catalog.interleaving); uneven pipeline splits
# (--decoder-first/last-pipeline-num-layers) and an expert tensor parallel size apart from tp
# (--expert-tensor-parallel-size) from core 0.10 (Nov 2024; layouts: core 0.13). DeepSpeed's PipelineModule
# (deepspeed/runtime/pipe/module.py, partition_method) and torchtitan split any layer count, so they keep uneven
# splits. Every trainer: context parallelism from 2024 (Megatron-Core 0.4, Dec 2023, --context-parallel-size;
# DeepSpeed-Ulysses and torchtitan's CP later).
MEGATRON_ONLY = ("megatron", "nemo")

# The Megatron-Core release in a NeMo Framework container, as NeMo's release notes give it ("Software Component
# Versions", docs.nvidia.com/nemo-framework/user-guide/24.09/softwarecomponentversions.html)
NEMO_CONTAINER_CORE = {"24.05": (0, 7), "24.07": (0, 8), "24.09": (0, 9)}


def core_release(framework: str) -> tuple[int, int] | None:
    """The Megatron-Core release a run's framework names ("Megatron-Core r0.8.0", "nvcr.io/nvidia/nemo:24.09"),
    None where it names none."""
    named = re.search(r"megatron-core r?(\d+)\.(\d+)", framework, re.IGNORECASE)
    if named:
        return int(named.group(1)), int(named.group(2))
    container = re.search(r"nemo:(\d\d\.\d\d)", framework)
    return NEMO_CONTAINER_CORE.get(container.group(1)) if container else None


def _core(release: str) -> tuple[int, int]:
    major, minor = release.split(".")
    return int(major), int(minor)


def _megatron_pipeline(framework: str) -> bool:
    """Megatron's own pipeline (not DeepSpeed's PipelineModule beside Megatron-DeepSpeed)."""
    return any(w in framework for w in MEGATRON_ONLY) and "deepspeed" not in framework


def _deepspeed_pipeline(framework: str) -> bool:
    """DeepSpeed's PipelineModule (Megatron-DeepSpeed, DeepSpeed 3D parallelism): deepspeed/runtime/pipe/
    schedule.py has TrainSchedule (1F1B), InferenceSchedule and DataParallelSchedule, no interleaved one."""
    return "deepspeed" in framework


# the interleaved schedule of releases before core 0.10: micro-batches a multiple of pp (PL108)
_WHOLE_GROUPS = interleaving(has_groups=False)

# (feature, the year the trainer gained it or None for a trainer that never did, the Megatron-Core release that
# added it or None, which trainers, the test): a structure's test sees the Structure, a member's (MEMBER_ERA) the
# planner input with its micro-batch
ERA = (
    ("pp > 1", 2020, None, _megatron_pipeline, lambda s: s.inp.pp == 1),
    (
        "virtual pipeline stages (none in DeepSpeed's pipeline)",
        None,
        None,
        _deepspeed_pipeline,
        lambda s: (s.inp.vpp or 1) == 1,
    ),
    (
        "virtual pipeline stages over pp 2",
        2025,
        _core(PP2_SINCE),
        _megatron_pipeline,
        lambda s: (s.inp.vpp or 1) == 1 or s.inp.pp > 2,
    ),
    ("cp > 1", 2024, (0, 4), lambda framework: True, lambda s: s.inp.cp == 1),
    ("uneven pipeline splits", 2025, (0, 10), _megatron_pipeline, lambda s: not s.inp.pipeline_stage_layers),
    ("expert tp apart from tp", 2025, (0, 10), _megatron_pipeline, lambda s: s.inp.etp in (None, s.inp.tp)),
)
MEMBER_ERA = (
    (
        "interleaving over micro-batches pp does not divide",
        2025,
        _core(MICROBATCH_GROUPS_SINCE),
        _megatron_pipeline,
        lambda i: not i.vpp or _WHOLE_GROUPS.accepts(i.pp, i.global_batch // (i.micro_batch * i.dp)),
    ),
)


def _lacks(first_year: int | None, first_core: tuple[int, int] | None, year: int | None, core) -> bool:
    """Whether a trainer of `year` and Megatron-Core release `core` (None: not named) predates a feature."""
    if first_year is None:
        return True
    if core is not None and first_core is not None:
        return core < first_core
    return year is not None and year < first_year


def era_filter(year: int | None, framework: str = "megatron-lm"):
    """(a keep(structure) predicate for plan(), a keep_member(input) one, the features they withhold) for a run
    of `year` and `framework`."""
    core = core_release(framework)
    framework = framework.lower()

    def withheld(table):
        return [
            (what, test)
            for what, first_year, first_core, applies, test in table
            if applies(framework) and _lacks(first_year, first_core, year, core)
        ]

    structures, members = withheld(ERA), withheld(MEMBER_ERA)
    return (
        (lambda s: all(test(s) for _, test in structures)),
        (lambda i: all(test(i) for _, test in members)),
        [what for what, _ in structures + members],
    )


# Sequence parallelism (--sequence-parallel) by the year a trainer gained it: Megatron-LM merged it on 2022-05-20
# (9aad9203, megatron/arguments.py); Megatron-DeepSpeed took it with its rebase onto Megatron-LM in July 2023
# (merge 9e72d571); the DeepSpeed 3D-parallel codes of 2022 (GLM-130B's) had none either.
SEQUENCE_PARALLEL_SINCE = ((_deepspeed_pipeline, 2023), (lambda framework: True, 2022))


def has_sequence_parallel(year: int | None, framework: str = "megatron-lm") -> bool:
    """Whether a trainer of `framework` and `year` could run tensor parallelism with sequence parallelism."""
    first = next(since for applies, since in SEQUENCE_PARALLEL_SINCE if applies(framework.lower()))
    return year is None or year >= first


def framework_tp_overlap(run: dict) -> bool:
    """Whether the run's framework overlaps tensor-parallel communication wherever there is tensor parallelism:
    calibrate's conversion of the same entry at tp 2 (Megatron-Bridge's recipes turn --tp-comm-overlap on
    with tp > 1), so that a run published at tp 1 is not planned as if its recipe left the overlap off."""
    inp, _ = to_input({**run, "layout": {**run["layout"], "tp": 2}})
    return inp is not None and inp.options.tp_comm_overlap


# Megatron's own overlaps by the release that added them: --overlap-grad-reduce (merge e801b2bb2f, 2023-09-07),
# --tp-comm-overlap (a2d3852dd2, 2023-10-30) and --overlap-param-gather (3b417268a2, 2023-11-17), all in
# megatron/arguments.py and in Megatron-Core 0.4's flags (../shared/data/megatron-flags/megatron-lm@core_v0.4.0.json);
# released late in 2023, so they count from 2024. Each is off by default; NeMo's and Bridge's recipes turn them on.
MEGATRON_OVERLAPS_SINCE = (2024, (0, 4))


def unstated_overlaps(run: dict) -> bool:
    """Whether the run's trainer offered Megatron's gradient-reduce, parameter-gather and TP-communication
    overlaps and its entry says nothing of them (no "overlap" in its source, notes or framework): what the run
    used is then as unknown as an unstated micro-batch, and the planner holds them as a fresh plan does, on, for
    the published layout and its candidates alike. DeepSpeed's engines are left at calibrate's reading (ZeRO's
    overlap_comm is DeepSpeed's own choice, and its pipeline engine reduces after the last backward)."""
    framework = (run.get("framework") or "").lower()
    if not _megatron_pipeline(framework):
        return False
    text = " ".join(str(x) for x in (run.get("source"), run["layout"].get("notes"), run.get("framework")))
    if "overlap" in text.lower():
        return False
    first_year, first_core = MEGATRON_OVERLAPS_SINCE
    return not _lacks(first_year, first_core, run.get("year"), core_release(framework))


def held_choices(
    stated: Stated, inp: ModelInput, year: int | None = None, framework: str = "megatron-lm"
) -> tuple[dict, str]:
    """plan()'s keyword arguments that hold the run's own non-layout choices, and what they hold, in words."""
    keep, keep_member, withheld = era_filter(year, framework)
    if not (inp.sequence_parallel or has_sequence_parallel(year, framework)):
        withheld = [*withheld, "sequence parallelism"]
    # the gradient-reduce dtype is a precision choice like the others: the planner may not buy memory with a
    # bf16 reduce (--grad-reduce-in-bf16) the run did not make
    kwargs: dict = {
        "more_sharding": stated.sharding is None,
        "keep": keep,
        "keep_member": keep_member,
        "bf16_reduce": False,
        "sequence_parallel": "sequence parallelism" not in withheld,
    }
    words = [
        f"precision {inp.precision}",
        f"gradients reduced in {reduce_dtype(inp)}",
        "flash attention" if inp.options.flash_attention else "no flash attention",
        "its overlaps",
    ]
    if stated.sharding is not None:
        words.append(f"sharding {stated.sharding}")
    if withheld:
        words.append(f"no {', no '.join(withheld)} (not in a {year} trainer)")
    if stated.micro is not None:
        kwargs["micro_batches"] = (stated.micro,)
        words.append(f"micro {stated.micro}")
    if stated.recompute is not None:
        kwargs["recomputes"] = (
            (
                inp.recompute,
                inp.recompute_method or ("uniform" if inp.recompute == "full" else None),
                inp.recompute_num_layers or (1 if inp.recompute == "full" else None),
            ),
        )
        words.append(f"recompute {stated.recompute}")
    return kwargs, ", ".join(words)


def avoided_costs(published, first) -> str:
    """The step-time parts the published layout pays more of than the first choice, largest first, each as
    seconds per step and share of the published step (every candidate runs the same global batch)."""
    a, b = published.time_s, first.time_s
    more = sorted(((a.get(k, 0.0) - b.get(k, 0.0), k) for k in set(a) | set(b)), reverse=True)
    step = published.step_time_s or 1.0
    parts = [f"{TIME_PART_NAMES.get(k, k)} +{d:.2f} s ({d / step:.0%})" for d, k in more if d > 0.02 * step][:3]
    return "the published layout pays more " + "; ".join(parts) if parts else ""


def outside_search(stated: Stated, base: ModelInput, more_sharding: bool = True, held: dict | None = None) -> str:
    """Why no candidate is the published layout: the first axis (in the planner's loop order) whose
    published value no structure agreeing on the earlier axes has, or the predicted memory."""
    gpu = lookup_gpu(base.gpu)
    held = held or {}
    remaining = [
        s.inp for s in structures(base, nvlink_domain(base, gpu), more_sharding, held.get("bf16_reduce", True))
    ]
    for axis in AXES:
        want = getattr(stated, axis)
        if want is None:
            continue
        agree = [i for i in remaining if not mismatches(stated, i, (axis,))]
        if not agree:
            searched = sorted({axis_values(i)[axis] for i in remaining}, key=str)
            shown = ", ".join(map(str, searched[:12])) + (", ..." if len(searched) > 12 else "")
            why = (
                f"search space excludes {axis} {want} ({SEARCH_RULE[axis]}); "
                f"with the axes before it as published, it searches {axis} {shown or 'nothing'}"
            )
            if axis == "vpp" and base.num_layers % (stated.pp * want):
                # Megatron places such a split with --account-for-embedding/loss-in-pipeline-split or
                # --pipeline-model-parallel-layout (megatron/training/arguments.py; schemas/megatron_flags/ has the
                # first two from 0.12, the layout from 0.13), which plan does not search
                why += (
                    f"; {base.num_layers} layers do not divide over pp*vpp = {stated.pp * want}: the run needs "
                    "a pipeline split that counts the embedding and loss as layers, or a custom layout"
                )
            return why
        remaining = agree
    micro = held.get("micro_batches", (1,))[0]  # the run's own where held, else the least memory
    recompute, method, count = held.get("recomputes", (("full", "uniform", 1),))[0]
    smallest = None
    for inp in remaining:
        est = estimate(
            inp.replace(micro_batch=micro, recompute=recompute, recompute_method=method, recompute_num_layers=count)
        )
        if est is not None and (smallest is None or est.memory_gib["total"] < smallest.memory_gib["total"]):
            smallest = est
    if smallest is not None and not fits_in_memory(smallest):
        return (
            f"predicted not to fit: {smallest.memory_gib['total']:.1f} GiB per GPU at micro-batch {micro} with "
            f"{recompute or 'no'} recompute, {_over_usable(smallest)}"
        )
    return "inside the search space and predicted to fit, yet no candidate (interleaving needs >= pp micro-batches)"


def _over_usable(est) -> str:
    """How an estimate misses the planner's memory test (plan.fits_in_memory), in words."""
    mem = est.memory_gib
    return (
        f"up to {memory_band_high(est):.1f} within its +-{100 * mem.get('error_band', 0.0):.0f}% error band, "
        f"over {mem['usable']:.1f} GiB usable"
    )


def layout_key(c) -> tuple:
    """What makes a candidate's layout: the parallel sizes, the sharding and the pipeline split."""
    i = c.inp
    return (
        i.tp,
        i.pp,
        i.vpp or 1,
        i.cp,
        i.ep,
        i.etp or i.tp,
        i.data_parallel(),
        i.sharding_level(),
        c.first_last_layers,
        c.last_layers,
        c.pipeline_layout,
    )


def layout_rank(cands: list, same) -> int | None:
    """The 1-based rank, among the distinct layouts in the candidates' order, of the first candidate `same`
    accepts; None when none does."""
    seen: set = set()
    for c in cands:
        seen.add(layout_key(c))
        if same(c):
            return len(seen)
    return None


def with_overlaps(inp: ModelInput) -> ModelInput:
    """The input with gradient reduce, parameter gather and TP communication overlapped (--overlapped)."""
    on = {"overlap_grad_reduce": True, "overlap_param_gather": True, "tp_comm_overlap": True}
    return inp.replace(options=inp.options.__class__(**{**_fields(inp.options), **on}))


def rank_run(
    run: dict, own_sharding: bool = False, free: bool = False, overlapped: bool = False
) -> tuple[Row | None, str | None]:
    """The run's row, or None and why it cannot be planned."""
    why = unplannable(run)
    if why:
        return None, why
    inp, why = to_input(run)
    if inp is None:
        return None, why
    inp = with_publication(run["id"], inp)  # as published: its scripts' values, its recipe's flags
    if overlapped:
        inp = with_overlaps(inp)
    stated = stated_layout(run, inp)
    world = run["cluster"]["total_gpus"]
    if inp.world_size != world:
        return None, f"{world} GPUs are no whole number of {inp.gpus_per_node}-GPU nodes"
    if stated.cp is not None and stated.tp * stated.pp * stated.cp * stated.dp != world:
        return None, f"tp*pp*cp*dp = {stated.tp * stated.pp * stated.cp * stated.dp}, not the {world} GPUs"
    row = Row(run["id"], bool(inp.num_experts), describe({k: v for k, v in asdict(stated).items() if v is not None}))
    row.read_by_plint = _read_by_plint(run)
    row.unmodelled = VALIDATION_UNMODELLED.get(run["id"]) or PUBLISHED_UNMODELLED.get(run["id"], "")
    est = estimate(inp)
    row.published_tokens = est.tokens_per_s_per_gpu if est is not None else None
    row.measured_tokens = published_tokens_per_s(run, inp)[0] if run.get("result") else None
    base = planning_base(inp, own_sharding, hold=not free, sharding_stated=stated.sharding is not None)
    if not free and framework_tp_overlap(run) and not base.options.tp_comm_overlap:
        base = base.replace(options=base.options.__class__(**{**_fields(base.options), "tp_comm_overlap": True}))
    overlaps_unstated = not free and unstated_overlaps(run)
    if overlaps_unstated:
        base = with_overlaps(base)
    kwargs, row.held = (
        ({}, "nothing (a fresh plan)")
        if free
        else held_choices(stated, inp, run.get("year"), run.get("framework") or "")
    )
    if overlaps_unstated:
        row.held = row.held.replace("its overlaps", "Megatron's overlaps on (unstated: as a fresh plan)")
    result = plan(base, run["id"], **kwargs)
    cands = result.candidates
    row.candidates = len(cands)
    if cands:
        row.first = describe(axis_values(cands[0].inp))
        row.first_tokens = cands[0].tokens
    full_axes = AXES + ("micro", "recompute")
    row.rank = layout_rank(cands, lambda c: not mismatches(stated, c.inp))
    match = next((c for c in cands if not mismatches(stated, c.inp)), None)
    row.rank_with_micro_recompute = next(
        (n for n, c in enumerate(cands, 1) if not mismatches(stated, c.inp, full_axes)), None
    )
    if est is not None and not fits_in_memory(est):
        row.over_headroom = (
            f"the published run is predicted at {est.memory_gib['total']:.1f} GiB per GPU, {_over_usable(est)}"
        )
    published = est
    if match is not None and (est is None or match.tokens > est.tokens_per_s_per_gpu):
        published = match.estimate  # the published layout at its best unstated choices
    if cands and published is not None and published.tokens_per_s_per_gpu:
        row.claim = cands[0].tokens / published.tokens_per_s_per_gpu - 1
        if row.claim > CLAIM_MARGIN:
            row.avoids = avoided_costs(published, cands[0].estimate)
            if row.measured_tokens and row.published_tokens:
                # the measurement says whether the cost the published layout pays is priced right
                row.avoids += (
                    f"; the cost model predicts the published run at "
                    f"{row.published_tokens / row.measured_tokens:.0%} of its measured speed"
                )
    if row.rank is None:
        row.why = outside_search(stated, base, kwargs.get("more_sharding", True), kwargs)
    else:
        values = axis_values(match.inp)
        row.matched = f"micro {values['micro']}, recompute {values['recompute']}"
        if row.rank > 1:
            row.why = why_behind(match, cands[0])
    return row, None


def summary(rows: list[Row]) -> dict:
    out = {}
    groups = (
        ("dense", [r for r in rows if not r.moe]),
        ("moe", [r for r in rows if r.moe]),
        ("all", rows),
        ("plint's trainers", [r for r in rows if r.read_by_plint]),
    )
    for label, sel in groups:
        out[label] = {
            "runs": len(sel),
            "not_among_candidates": sum(r.rank is None for r in sel),
            "claim_within_margin": sum(r.claim is not None and r.claim <= CLAIM_MARGIN for r in sel),
        }
        for key, attr in (("top", "rank"), ("top_with_micro_recompute", "rank_with_micro_recompute")):
            out[label][key] = {
                str(k): sum(1 for r in sel if getattr(r, attr) is not None and getattr(r, attr) <= k) for k in TOPS
            }
    return out


def reasons(rows: list[Row]) -> Counter:
    """Why published layouts are not #1: the step-time part named by why_behind, or the exclusion."""
    tally: Counter = Counter()
    for r in rows:
        if r.over_headroom:
            tally["the published run is predicted not to fit (its error band over usable memory)"] += 1
        if r.rank == 1:
            continue
        if r.rank is None:
            tally[r.why.split(" (")[0].split(":")[0]] += 1
        elif "more " in r.why:
            tally["slower than #1: more " + r.why.split("more ", 1)[1]] += 1
        else:
            tally["within 2% of #1, after it in the decision tree's order"] += 1
    return tally


def run_all(path: Path, own_sharding: bool = False, free: bool = False, overlapped: bool = False) -> dict:
    runs = yaml.safe_load(path.read_text())
    rows, skipped = [], []
    for run in runs:
        row, why = rank_run(run, own_sharding, free, overlapped)
        if row is None:
            skipped.append({"id": run["id"], "why": why})
        else:
            rows.append(row)
    return {
        "rows": [asdict(r) for r in rows],
        "skipped": skipped,
        "summary": summary(rows),
        "reasons": dict(reasons(rows).most_common()),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA, help="published runs (YAML)")
    parser.add_argument("--json", action="store_true", help="rows, skipped runs and the summary as JSON")
    parser.add_argument(
        "--free",
        action="store_true",
        help="plan as a fresh `plint plan` does, not holding the run's own non-layout choices",
    )
    parser.add_argument(
        "--own-sharding",
        action="store_true",
        help="with --free: plan from each run's own sharding (no distributed optimizer for a run without one)",
    )
    parser.add_argument(
        "--overlapped",
        action="store_true",
        help="what if every run overlapped its gradient reduce, parameter gather and TP communication "
        "(for runs whose sources state none: is a claim about the layout, or about the unstated overlaps?)",
    )
    args = parser.parse_args(argv)
    result = run_all(args.data, args.own_sharding, args.free, args.overlapped)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for r in sorted(result["rows"], key=lambda r: (r["moe"], r["id"])):
        rank = f"#{r['rank']}" if r["rank"] else "not among"
        exact = f"#{r['rank_with_micro_recompute']}" if r["rank_with_micro_recompute"] else "-"
        matched = f"; the match has {r['matched']}" if r["matched"] else ""
        print(
            f"{r['id']:38} {'MoE' if r['moe'] else 'dense':5} {rank:>9} of {r['candidates']:<5} "
            f"(with micro/recompute {exact}{matched})"
        )
        print(
            f"{'':44}published: {r['published']}"
            + (f", predicted {r['published_tokens']:,.0f} tokens/s/GPU" if r["published_tokens"] else "")
        )
        print(
            f"{'':44}#1:        {r['first']}"
            + (f", predicted {r['first_tokens']:,.0f} tokens/s/GPU" if r["first_tokens"] else "")
        )
        if r["claim"] is not None:
            print(
                f"{'':44}plint's #1 predicted {100 * r['claim']:+.0f}% against the published layout"
                + (f": {r['avoids']}" if r["avoids"] else "")
            )
        print(f"{'':44}held at the run's own: {r['held']}")
        if r["unmodelled"]:
            print(f"{'':44}its recipe also sets, not modelled: {r['unmodelled']}")
        for note in (r["over_headroom"], r["why"]):
            if note:
                print(f"{'':44}{note}")
    for s in result["skipped"]:
        print(f"not planned: {s['id']}: {s['why']}")
    print()
    print(
        f"{'':16} {'runs':>5} {'top-1':>6} {'top-3':>6} {'top-10':>7} {'not among':>10} "
        f"{'#1 <=10% faster':>16}   with micro/recompute: top-1/3/10"
    )
    for label in result["summary"]:
        s = result["summary"][label]
        t, e = s["top"], s["top_with_micro_recompute"]
        print(
            f"{label:16} {s['runs']:>5} {t['1']:>6} {t['3']:>6} {t['10']:>7} {s['not_among_candidates']:>10} "
            f"{s['claim_within_margin']:>16}   {e['1']}/{e['3']}/{e['10']}"
        )
    print(
        "plint's trainers: the runs of Megatron-LM, Megatron-Core/NeMo, Megatron-Bridge, Megatron-DeepSpeed and GPT-NeoX"
    )
    print("\nwhy the published layout is not #1:")
    for why, n in result["reasons"].items():
        print(f"  {n:3}  {why}")
    return 0


if __name__ == "__main__":
    # a table piped into `head` ends quietly, as a Unix tool does, not with a BrokenPipeError
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
