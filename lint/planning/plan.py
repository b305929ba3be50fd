"""`plint plan`: every valid Megatron layout of a model on a cluster, scored by the cost model, ranked.

The search: tensor parallelism inside the NVLink domain only (across it PL201 rejects the launch), then
context parallelism (across nodes too: its ring is costed on the network, as PL202 warns), pipeline parallelism (uneven first and last stages when the layers do not divide),
virtual stages (where the layers do not divide over them, a balanced --pipeline-model-parallel-layout),
expert parallelism for MoE with an expert tensor parallel size of 1 or tp, data parallelism from what is left, the micro-batch and
the recompute granularity; the distributed optimizer and gradient/parameter-gather overlap are always
on (they cost no speed and save memory). A layout is dropped when it breaks one of the trainer's
start-up checks (the PL1xx rules: heads and query groups divisible by tp, layers by pp*vpp, the global
batch by micro*dp, the sequence by 2*cp, experts by ep; under a held --overlap-moe-expert-parallel-comm, ep > 1,
virtual stages beside a pipeline and no full recompute: PL111) or does not fit in memory as the rules judge it
(fits_in_memory: the high end of the estimate's measured error band within usable memory, where PL402
stays silent).

Pruning keeps the search exhaustive: within one (tp, cp, pp, vpp, ep) structure memory only falls as
recompute grows and the micro-batch shrinks, so a structure whose smallest-memory member (micro 1, full
recompute) does not fit is skipped whole.

Ranking: by predicted tokens/s per GPU; candidates within 2% of the best remaining one go in the order
of the decision tree (less parallelism first: no context parallelism, then no pipeline, then smaller
tp, then less recompute), since a difference that small is inside what the model can tell apart.
"""

from __future__ import annotations

import math
from pathlib import Path

from plint.cost.error_band import memory_band
from plint.record import field, record
from plint.root import read_named

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from plint.cost import Estimate, ModelInput

NEAR_TIE = 0.02  # candidates this close in tokens/s are ordered by simplicity
MAX_LAYOUT_VPP = 8  # virtual stages a planned --pipeline-model-parallel-layout is tried with (uneven layers)
LARGE_BUBBLE = 0.10  # a bubble over a tenth of the step: of two near-equal layouts, the one without it first
MICRO_BATCHES = (1, 2, 4, 8)
RECOMPUTE = (None, "selective", "full")
RECOMPUTE_CHOICES = (
    (None, None, None),
    ("selective", None, None),
    ("full", "uniform", 1),
)  # (granularity, method, layers)
SHARDING_NAMES = ("none", "optimizer", "gradients", "parameters")  # parallel.sharding by ZeRO level
MODEL_KEYS = (
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "num_query_groups",
    "seq_length",
    "vocab_size",
    "num_experts",
    "moe_topk",
    "kv_channels",
    "moe_ffn_hidden_size",
    "moe_shared_expert_size",
    "swiglu",
    "normalization",
    "untie_embeddings",
    "add_bias_linear",
)
# what a launch of the model needs beyond its shape (rotary base and scaling, epsilon, dropouts, position table):
# the cost model ignores these, `plint generate` writes them (planning/generate.py TRAINING_SHAPE)
LAUNCH_KEYS = (
    "rotary_base",
    "rope_scaling",
    "norm_epsilon",
    "attention_dropout",
    "hidden_dropout",
    "max_position_embeddings",
)


def memory_band_high(est: Estimate) -> float:
    """GiB per GPU at the high end of the estimate's measured error band (estimate.memory_gib.error_band, a
    share of the allocator peak): plint.cost.error_band.memory_band, as the memory rules judge it."""
    return memory_band(est.memory_gib)[1]


def fits_in_memory(est: Estimate | None, headroom: float | None = None) -> bool:
    """Whether a layout fits as the rules judge a launch: the high end of its estimate's measured error band
    within usable memory (else PL402 warns, or PL401 errs), and, where a `headroom` share of usable is asked
    for (thresholds.memory-headroom), the estimate within it."""
    if est is None:
        return False
    mem = est.memory_gib
    return memory_band_high(est) <= mem["usable"] and (headroom is None or mem["total"] <= headroom * mem["usable"])


class PlanError(ValueError):
    """Bad planner input (unknown preset, missing shape key): a usage error."""


@record
class Candidate:
    inp: Any  # ModelInput
    estimate: Any  # Estimate
    first_last_layers: int | None = None  # uneven pipeline: layers of the first stage (and of the last,
    last_layers: int | None = None  # unless this says otherwise)
    why: str = ""
    pipeline_layout: str | None = None  # --pipeline-model-parallel-layout where the layers do not divide otherwise

    @property
    def tokens(self) -> float:
        return self.estimate.tokens_per_s_per_gpu

    def complexity(self) -> tuple:
        """Smaller is simpler, in the decision tree's order: context, pipeline, tensor, experts, recompute
        (after whether its bubble is large). Interleaving counts, not its number of virtual stages: that
        splits the same GPUs the same way, a schedule's tuning value whose sends, bubble and memory the
        estimate prices, so among near-equal layouts that differ only there the faster goes first."""
        i, e = self.inp, self.estimate
        # a large bubble counts first: of two near-equal layouts, take the one that idles less
        bubble_warns = e.step_time_s > 0 and e.time_s.get("bubble", 0.0) / e.step_time_s > LARGE_BUBBLE
        return (
            bubble_warns,
            i.cp,
            i.pp,
            (i.vpp or 1) > 1,
            i.tp,
            i.ep,
            i.etp or i.tp,
            i.sharding_level(),
            i.options.grad_reduce_bytes == 2,
            RECOMPUTE.index(i.recompute),
            -i.micro_batch,
        )

    def to_json(self) -> dict:
        i, dp = self.inp, self.inp.data_parallel()
        global_batch = i.global_batch or i.micro_batch * dp
        parallel = {
            "tp": i.tp,
            "pp": i.pp,
            "vpp": i.vpp,
            "cp": i.cp,
            "ep": i.ep,
            "etp": i.etp or i.tp,
            "dp": dp,
            "sequence_parallel": i.sequence_parallel,
            "distributed_optimizer": i.distributed_optimizer,
            "zero_stage": i.zero_stage,
            "sharding": SHARDING_NAMES[i.sharding_level()],
        }
        out = {
            "parallel": parallel,
            "batch": {
                "micro": i.micro_batch,
                "global": global_batch,
                "grad_accum": global_batch // (i.micro_batch * dp),
                "num_microbatches": global_batch // (i.micro_batch * dp),
            },
            "recompute": {
                "granularity": i.recompute,
                "method": i.recompute_method,
                "num_layers": i.recompute_num_layers,
            },
            "grad_reduce_in_bf16": i.options.grad_reduce_bytes == 2,
            "estimate": self.estimate.to_json(),
            "why": self.why,
        }
        if self.first_last_layers is not None:
            out["pipeline"] = {
                "first_stage_layers": self.first_last_layers,
                "last_stage_layers": self.last_layers or self.first_last_layers,
            }
        elif self.pipeline_layout is not None:
            out["pipeline"] = {"layout": self.pipeline_layout, "stage_layers": list(i.pipeline_stage_layers or ())}
        return out


@record
class Plan:
    model_name: str
    base: Any  # ModelInput the candidates vary
    candidates: list = field(default_factory=list)  # ranked, best first
    considered: int = 0  # layouts estimated
    current: Any = None  # Candidate for the launch planned around, when there is one
    notes: list = field(default_factory=list)
    model: dict = field(default_factory=dict)  # the preset or file it was planned for (tokenizer, caveats)
    tree: Any = None  # plan_tree.TreeWalk: the decision tree walked for this model and cluster
    departures: list = field(default_factory=list)  # where #1 leaves the tree, and why


# ---- inputs ---------------------------------------------------------------------------------------


def presets() -> dict[str, dict]:
    import yaml

    import plint.schemas  # the data folder, installed or in the tree

    return yaml.safe_load((Path(plint.schemas.__file__).parent / "model_presets.yaml").read_text())


def model_from_preset(name: str) -> dict:
    known = presets()
    if name not in known:
        raise PlanError(f"unknown model preset {name!r}; known: {', '.join(known)}")
    return dict(known[name])


def model_from_file(path: Path) -> dict:
    import yaml

    try:
        doc = yaml.safe_load(read_named(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PlanError(f"--model-file {path}: {exc}") from None
    except RecursionError:
        raise PlanError(f"--model-file {path}: nested deeper than plint reads") from None
    except ValueError as exc:  # a number past Python's 4,300-digit limit
        raise PlanError(f"--model-file {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise PlanError(f"--model-file {path}: expected a mapping with the keys of layout.model")
    doc = doc.get("model", doc)
    unknown = sorted(
        set(doc)
        - set(MODEL_KEYS)
        - set(LAUNCH_KEYS)
        - {"source", "moe_first_dense_layers", "position_embedding", "params", "tokenizer", "approximate"}
    )
    if unknown:
        raise PlanError(
            f"--model-file {path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(MODEL_KEYS + LAUNCH_KEYS)}"
        )
    return doc


def base_input(
    model: dict,
    nodes: int,
    gpus_per_node: int,
    gpu: str,
    seq_length: int | None,
    global_batch: int | None,
    nvlink_domain: int | None = None,
) -> ModelInput:
    from plint.cost import ModelInput, Options

    missing = [k for k in ("num_layers", "hidden_size", "num_attention_heads", "vocab_size") if not model.get(k)]
    if missing:
        raise PlanError(f"the model lacks {', '.join(missing)}")
    seq = seq_length or model.get("seq_length")
    if not seq:
        raise PlanError("no sequence length: give --seq-length")
    layers = int(model["num_layers"])
    dense_first = int(model.get("moe_first_dense_layers") or 0)
    freq: Any = tuple([0] * dense_first + [1] * (layers - dense_first)) if dense_first else 1
    world = nodes * gpus_per_node
    return ModelInput(
        num_layers=layers,
        hidden_size=int(model["hidden_size"]),
        num_attention_heads=int(model["num_attention_heads"]),
        seq_length=int(seq),
        vocab_size=int(model["vocab_size"]),
        ffn_hidden_size=model.get("ffn_hidden_size"),
        num_query_groups=model.get("num_query_groups"),
        kv_channels=model.get("kv_channels"),
        swiglu=bool(model.get("swiglu", False)),
        untie_embeddings=bool(model.get("untie_embeddings", False)),
        normalization=model.get("normalization", "LayerNorm"),
        add_bias_linear=bool(model.get("add_bias_linear", True)),
        num_experts=model.get("num_experts"),
        moe_topk=int(model.get("moe_topk") or 2),
        moe_ffn_hidden_size=model.get("moe_ffn_hidden_size"),
        moe_shared_expert_size=int(model.get("moe_shared_expert_size") or 0),
        moe_layer_freq=freq,
        global_batch=global_batch or world,
        gpu=gpu,
        nnodes=nodes,
        gpus_per_node=gpus_per_node,
        nvlink_domain=nvlink_domain,
        sequence_parallel=False,
        distributed_optimizer=True,
        options=Options(
            overlap_grad_reduce=True, overlap_param_gather=True, position_embedding=model.get("position_embedding")
        ),
    )


# ---- the search -----------------------------------------------------------------------------------


def _with_grad_reduce(inp: ModelInput, reduce_bytes: int | None) -> ModelInput:
    if inp.options.grad_reduce_bytes == reduce_bytes:
        return inp
    fields = {n: getattr(inp.options, n) for n in inp.options.__record_fields__}
    return inp.replace(options=inp.options.__class__(**{**fields, "grad_reduce_bytes": reduce_bytes}))


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(math.isqrt(n)) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def powers_of_two_dividing(n: int) -> list[int]:
    out, p = [], 1
    while n % p == 0 and p <= n:
        out.append(p)
        p *= 2
    return out


def uneven_split(layers: int, pp: int) -> tuple[int, int, int] | None:
    """(first, middle, last) stage layers when `layers` does not divide by `pp`: Megatron sets the first
    and last stages independently (--decoder-first/last-pipeline-num-layers; TransformerConfig's uneven
    PP check: each > 0, the rest split evenly over the pp - 2 middle stages). The smallest middle stage
    m for which both ends fit in 1..m layers, the first stage taking the odd layer (the last holds the
    output layer); None for pp < 3 or when no split exists."""
    if pp < 3:
        return None
    for middle in range(-(-layers // pp), layers):
        rest = layers - (pp - 2) * middle
        if rest < 2:
            return None
        if rest <= 2 * middle:
            return -(-rest // 2), middle, rest // 2
    return None


def uneven_stages(layers: int, pp: int) -> int | None:
    """Layers of the first and of the last stage when an uneven split gives both the same; else None."""
    split = uneven_split(layers, pp)
    return split[0] if split is not None and split[0] == split[2] else None


def nvlink_domain(base: ModelInput, gpu) -> int:
    """GPUs sharing NVLink: the configured domain, else one node, or a whole rack on NVL72-class systems."""
    return base.nvlink_domain or gpu.nvlink_domain(base.gpus_per_node)


@record
class Structure:
    """One point of the search space: the (tp, cp, pp, vpp, ep, sharding, gradient-reduce) choice, as the
    base with those set, before the micro-batch and recompute are chosen."""

    inp: Any  # ModelInput; an uneven pipeline is costed by its fullest stages (pp of them at the middle size)
    dp: int
    first_last_layers: int | None = None
    last_layers: int | None = None
    pipeline_layout: str | None = None


def pipeline_partitions(layers: int, pp: int):
    """(vpp, first, last, layout, Partition) for every split of `layers` over `pp` ranks the planner tries:
    even splits (Partition None) with every vpp dividing each rank's layers (PL108: megatron/training/
    arguments.py, validate_args); where the layers do not divide, uneven first and last stages (uneven_split)
    with the vpp dividing each of them, and a --pipeline-model-parallel-layout that spreads the layers, the
    embedding and the loss evenly over pp*vpp virtual stages (plint.cost.pipeline_stages.balanced_layout;
    Megatron core 0.13+), for every vpp up to MAX_LAYOUT_VPP that leaves each virtual stage at least one slot.
    The Partition's `how` is the flags that make it."""
    from plint.cost import pipeline_stages as ps

    if pp == 1:
        yield None, None, None, None, None
        return
    if layers % pp == 0:
        for v in [None] + [v for v in divisors(layers // pp) if v > 1]:
            yield v, None, None, None, None
        return
    split = uneven_split(layers, pp)
    if split is not None:
        first, middle, last = split
        for v in [None] + [v for v in divisors(middle) if v > 1 and first % v == 0 == last % v]:
            part = ps.first_last(layers, pp, v, first, last)
            if isinstance(part, ps.Partition):
                yield v, first, last, None, part
    for v in range(1, MAX_LAYOUT_VPP + 1):
        if split is not None and v == 1:
            continue  # the first/last flags already split it without interleaving
        text = ps.balanced_layout(layers, pp, v)
        if text is None:
            continue
        short = ps.compact(text)
        laid = ps.from_layout(text.split("|"), pp, layers, short)
        if isinstance(laid, ps.Partition):
            yield (v if v > 1 else None), None, None, short, laid


def structures(
    base: ModelInput,
    domain: int,
    more_sharding: bool = True,
    bf16_reduce: bool = True,
    sequence_parallel: bool = True,
):
    """Every structure the planner considers for `base`'s model, batch and cluster (the search space);
    without `more_sharding` data parallelism shards no more than the base does, without `bf16_reduce`
    gradients are reduced in the base's own dtype only, and without `sequence_parallel` tensor parallelism
    goes without it (a trainer that lacks --sequence-parallel; else it is on with every tp > 1)."""
    from plint.cost.layout_estimate import SPLIT_FIELDS, split_fields

    world = base.world_size
    layers, heads = base.num_layers, base.num_attention_heads
    groups = base.num_query_groups or heads
    global_batch = base.global_batch or world
    experts = base.num_experts or 0
    own_sharding = base.sharding_level()
    # gradients reduced in fp32 (Megatron's default for bf16) or, as a choice, in bf16 (--grad-reduce-in-bf16):
    # half the gradient bytes held and moved, at some cost in precision; fp16 reduces in 16 bits anyway
    reduces = [base.options.grad_reduce_bytes] + (
        [2] if bf16_reduce and base.options.grad_reduce_bytes != 2 and base.precision in ("bf16", "fp8") else []
    )

    for tp in powers_of_two_dividing(domain):
        if heads % tp or groups % tp:  # PL104: heads and query groups split evenly over tp
            continue
        for cp in powers_of_two_dividing(world // tp):
            if base.seq_length % (2 * cp) or (cp > 1 and base.seq_length // cp < 1024):
                continue  # PL109: Megatron needs seq divisible by 2*cp (load-balanced causal chunks)
            for pp in divisors(world // (tp * cp)):
                if pp > layers:
                    break
                dp = world // (tp * cp * pp)
                if global_batch % dp:  # PL102: not even one micro-batch of 1 divides
                    continue
                if dp * cp % max(1, base.dp_outer):  # PL101: hybrid sharding's instances divide dp*cp
                    continue
                # PL105: experts divide over ep; ep x etp divides the GPUs of one pipeline stage (megatron/core/
                # parallel_state.py: the expert group etp x ep x edp spans tp x cp x dp); etp 1 (Megatron-Bridge's
                # MoE recipes) or tp (Megatron's default for --expert-tensor-parallel-size), dividing the expert FFN
                moe_ffn = base.moe_ffn_hidden_size or base.ffn_hidden_size or 4 * base.hidden_size
                expert_layouts: list[tuple[int, int | None]] = [(1, None)] + (
                    [
                        (e, t)
                        for e in divisors(experts)
                        if e > 1
                        for t in sorted({1, tp})
                        if (tp * cp * dp) % (e * t) == 0 and moe_ffn % t == 0
                    ]
                    if experts > 1
                    else []
                )
                # PL101: under hybrid sharding the expert-data-parallel size world/(etp*ep*pp) is a multiple of
                # the instances too (megatron/core/parallel_state.py asserts it)
                expert_layouts = [
                    (e, t)
                    for e, t in expert_layouts
                    if e == 1 or world // (e * (t or 1) * pp) % max(1, base.dp_outer) == 0
                ]
                # sharding (the decision tree's second answer): the base's own (the distributed optimizer
                # for a fresh plan); with dp > 1 and no pipeline also the gradients (Megatron-FSDP
                # optim_grads, ZeRO-2) and the parameters (optim_grads_params, ZeRO-3), which DeepSpeed
                # rejects beside its pipeline engine (deepspeed.md sec. 2.2)
                shardings = [None] + [
                    s
                    for s in ("gradients", "parameters")
                    if more_sharding and pp == 1 and dp > 1 and SHARDING_NAMES.index(s) > own_sharding
                ]
                for vpp, first_last, last, layout, part in pipeline_partitions(layers, pp):
                    for (ep, etp), sharding, reduce in (
                        (x, sh, r) for x in expert_layouts for sh in shardings for r in reduces
                    ):
                        structure = _with_grad_reduce(base, reduce).replace(
                            tp=tp,
                            cp=cp,
                            pp=pp,
                            vpp=vpp,
                            ep=ep,
                            etp=etp if experts > 1 else None,
                            dp=dp,
                            sequence_parallel=sequence_parallel and tp > 1,
                            sharding=sharding or base.sharding,
                            megatron_fsdp=base.megatron_fsdp if sharding is None else True,
                            # every split field from this partition (None: even), none left from the base's
                            **(split_fields(part) if part is not None else dict.fromkeys(SPLIT_FIELDS)),
                        )
                        yield Structure(structure, dp, first_last, last, layout)


def a2a_overlap_starts(inp: ModelInput) -> bool:
    """Whether Megatron starts a MoE layout under its --overlap-moe-expert-parallel-comm (always, without it):
    TransformerConfig.__post_init__ asserts expert parallelism (ep > 1), virtual pipeline stages with pp > 1
    and no full recompute (megatron/core/transformer/transformer_config.py, core_v0.14.0 to main; validate_args
    turns a vpp of 1 into None). The planner and the rules' alternatives keep a launch's overlap, so they offer
    only such layouts (PL111 reports a launch that is not one)."""
    if not inp.options.moe_a2a_overlap or (inp.num_experts or 0) <= 1:
        return True
    return inp.ep > 1 and (inp.pp == 1 or (inp.vpp or 1) > 1) and inp.recompute != "full"


def plan(
    base: ModelInput,
    model_name: str = "model",
    top: int | None = None,
    headroom: float | None = None,
    micro_batches: tuple[int, ...] = MICRO_BATCHES,
    recomputes: tuple | None = None,
    more_sharding: bool = True,
    keep=None,
    bf16_reduce: bool = True,
    sequence_parallel: bool = True,
    keep_member=None,
) -> Plan:
    """Rank every valid layout of `base`'s model, batch and cluster; `top` keeps the best few. The micro-batch
    and recompute are searched from `micro_batches` and `recomputes` ((granularity, method, num_layers) each;
    None: none, selective, full uniform 1): a caller comparing with a launch can hold the launch's own, and
    its sharding (`more_sharding` False: no more than the base's), its gradient-reduce dtype (`bf16_reduce`
    False: the base's only) and a trainer without sequence parallelism (`sequence_parallel` False);
    `keep(structure)` False drops a structure and `keep_member(input)` a member of one, with its micro-batch (what
    a trainer of another release cannot run); `headroom` is a
    share of usable memory the estimate must stay under besides its error band (thresholds.memory-headroom)."""
    from plint.cost import estimate
    from plint.catalog.hardware import lookup_gpu, unknown_gpu

    gpu = lookup_gpu(base.gpu)
    if gpu is None:
        raise PlanError(unknown_gpu(str(base.gpu)) or f"unknown GPU {base.gpu!r}")
    global_batch = base.global_batch or base.world_size
    domain = nvlink_domain(base, gpu)
    recomputes = recomputes or RECOMPUTE_CHOICES
    result = Plan(model_name, base)
    fitting: list[Candidate] = []
    for s in structures(base, domain, more_sharding, bf16_reduce, sequence_parallel):
        if keep is not None and not keep(s):
            continue
        for inp, est in _search_structure(
            s.inp, global_batch, s.dp, headroom, estimate, result, micro_batches, recomputes
        ):
            if keep_member is not None and not keep_member(inp):
                continue
            fitting.append(Candidate(inp, est, s.first_last_layers, s.last_layers, pipeline_layout=s.pipeline_layout))
    result.candidates = rank(fitting)[:top] if top else rank(fitting)
    explain(result.candidates)
    from plint.planning.plan_tree import departures, walk

    result.tree = walk(base, domain)
    if result.tree is not None and result.candidates:
        result.departures = departures(result.tree, result.candidates[0])
    return result


def _search_structure(
    structure: ModelInput,
    global_batch: int,
    dp: int,
    headroom: float | None,
    estimate,
    result: Plan,
    micro_batches: tuple[int, ...] = MICRO_BATCHES,
    recomputes: tuple = (),
) -> list[tuple]:
    """The fitting (micro, recompute) members of one structure, smallest-memory member first."""
    smallest = estimate(
        structure.replace(micro_batch=1, recompute="full", recompute_method="uniform", recompute_num_layers=1)
    )
    result.considered += 1
    if not fits_in_memory(smallest, headroom):
        return []
    out = []
    for micro in micro_batches:
        if global_batch % (micro * dp):  # PL102
            continue
        if structure.vpp and global_batch // (micro * dp) < structure.pp:  # PL108: m >= pp when interleaved
            continue
        for recompute, method, count in recomputes or RECOMPUTE_CHOICES:
            inp = structure.replace(
                micro_batch=micro, recompute=recompute, recompute_method=method, recompute_num_layers=count
            )
            if not a2a_overlap_starts(inp):
                continue
            est = smallest if (micro, recompute, method, count) == (1, "full", "uniform", 1) else estimate(inp)
            if est is not smallest:
                result.considered += 1
            if fits_in_memory(est, headroom):
                out.append((inp, est))
                break  # more recompute only costs time once this one fits
    return out


def rank(candidates: list[Candidate]) -> list[Candidate]:
    """Best first: the fastest remaining, except that the simplest within NEAR_TIE of it goes first."""
    remaining = sorted(candidates, key=lambda c: -c.tokens)
    out: list[Candidate] = []
    while remaining:
        best = remaining[0].tokens
        close = [c for c in remaining if c.tokens >= (1 - NEAR_TIE) * best]
        pick = min(close, key=lambda c: (c.complexity(), -c.tokens))
        out.append(pick)
        remaining.remove(pick)
    return out


def explain(candidates: list[Candidate]) -> None:
    """Say why each candidate stands where it does, against the first."""
    if not candidates:
        return
    first = candidates[0]
    fastest = max(candidates, key=lambda c: c.tokens)
    if first is fastest:
        first.why = "fastest predicted"
    else:
        first.why = f"within {NEAR_TIE:.0%} of the fastest (#{candidates.index(fastest) + 1}) with less parallelism"
    for c in candidates[1:]:
        c.why = why_behind(c, first)


def why_behind(c: Candidate, first: Candidate) -> str:
    gap = 1 - c.tokens / first.tokens if first.tokens else 0.0
    if gap <= NEAR_TIE:
        later = c.complexity() > first.complexity()
        return f"within {NEAR_TIE:.0%} of #1" + (", after it in the decision tree's order" if later else "")
    from plint.cost.estimate import TIME_PART_NAMES

    # every candidate runs the same global batch, so step-time parts compare directly
    a, b = c.estimate.time_s, first.estimate.time_s
    parts = {k: a.get(k, 0.0) - b.get(k, 0.0) for k in set(a) | set(b)}
    worst = max(parts, key=lambda part: parts[part])
    return f"{gap:.0%} slower than #1: more {TIME_PART_NAMES.get(worst, worst)}"


def changes(current: Candidate, best: Candidate) -> list[str]:
    """What differs between the launch and a candidate, as flag-level changes."""
    a, b = current.inp, best.inp
    out = []
    for attr, label in (
        ("tp", "tp"),
        ("pp", "pp"),
        ("vpp", "vpp"),
        ("cp", "cp"),
        ("ep", "ep"),
        ("micro_batch", "micro batch"),
        ("recompute", "recompute"),
        ("sharding", "sharding"),
        ("distributed_optimizer", "distributed optimizer"),
        ("sequence_parallel", "sequence parallel"),
    ):
        old, new = getattr(a, attr), getattr(b, attr)
        if old != new:
            out.append(f"{label} {old if old is not None else '-'} -> {new if new is not None else '-'}")
    if a.data_parallel() != b.data_parallel():
        out.append(f"dp {a.data_parallel()} -> {b.data_parallel()}")
    reduce_a, reduce_b = (reduce_dtype(x) for x in (a, b))
    if reduce_a != reduce_b:  # --grad-reduce-in-bf16: half the gradient bytes held and moved
        out.append(f"gradient reduce {reduce_a} -> {reduce_b}")
    return out


def reduce_dtype(inp: ModelInput) -> str:
    """The dtype gradients are held and reduced in, as the cost model counts them (memory.state_bytes): fp16
    for an fp16 run unless it accumulates in fp32, fp32 for bf16 and fp8 unless --grad-reduce-in-bf16."""
    if (inp.options.grad_reduce_bytes or (2 if inp.precision == "fp16" else 4)) == 4:
        return "fp32"
    return "fp16" if inp.precision == "fp16" else "bf16"
