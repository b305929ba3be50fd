"""Launch -> Layout: combine what the launcher, Slurm, the trainer's flags and the DeepSpeed config say.

Derived values follow the trainers (DESIGN.md): dp = world / (tp*pp*cp) for Megatron-LM,
world / (tp*pp*ds_sp) for Megatron-DeepSpeed, the DeepSpeed batch triple as DeepSpeed derives it,
global batch defaulting to micro*dp, num_microbatches = global / (micro*dp).
"""

from __future__ import annotations

import math

import posixpath
import re
from plint.record import field, record
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from typing import Any

    from plint.catalog.in_force import CatalogInForce
    from plint.layout import FieldPath
    from plint.reading.sources.deepspeed_config import DeepSpeedConfig
    from plint.reading.sources.launch_calls import LaunchChain
    from plint.reading.sources.megatron_args import TrainerArgs
    from plint.reading.sources.slurm import SlurmJob

from plint.reading.derive import product, quotient
from plint.layout import Layout
from plint.values import Value, default, derived, unresolved
from plint.reading.submitted import submitted_with


@record
class Launch:
    """One training launch found in a file, with everything read about it."""

    chain: Any  # sources.launch_calls.LaunchChain; None for a DeepSpeed or GPT-NeoX config checked alone
    trainer: Value
    facts: dict[str, Value] = field(default_factory=dict)  # trainer flags mapped to layout fields
    trainer_args: TrainerArgs | None = None
    ds_config: DeepSpeedConfig | None = None
    slurm: SlurmJob | None = None
    pbs: bool = False  # the script asks PBS for its job (#PBS directives)
    lsf: bool = False  # the script asks LSF for its job (#BSUB directives)
    grid_engine: bool = False  # the script asks Grid Engine for its job (#$ directives)
    # directives of a resource manager whose hosts plint does not know (#PJM, #COBALT...; #$ but for whole-node requests)
    other_scheduler: bool = False
    gpu_override: str | None = None
    release: tuple[str, bool] | None = None  # the trainer release flags were checked against, and whether assumed
    catalog: CatalogInForce | None = None  # the parser that judged the flags


def _word_value(word, what: str) -> Value:
    if word is None:
        return Value(None, None, "derived", f"no {what}")
    text = word.display()
    if word.known:
        return Value(posixpath.basename(text) if "/" in text else text, word.value_span, "literal")
    name = text.rsplit("/", 1)[-1]
    if "/" in text and "${" not in name:
        # `${MEGATRON}/pretrain_gpt.py`: the directory is unknown, the script's name is not
        return derived(name, f"the file name of {text}", word.value_span)
    return Value(None, word.value_span, "unresolved", f"the entrypoint {text} cannot be known")


def _cluster(launch: Launch, layout: Layout) -> None:
    chain, job = launch.chain, launch.slurm
    layout.set("cluster.nnodes", chain.nnodes)
    layout.set("cluster.world_size", chain.world_size)
    layout.set("cluster.workers_per_node", chain.workers_per_node)
    _mpi_on_one_host(launch, layout)
    gpus = None
    if job is not None and job.gpus_per_node is not None and job.gpus_per_node.known:
        gpus = job.gpus_per_node
    layout.set("cluster.gpus_per_node", gpus if gpus is not None else layout.get("cluster.workers_per_node"))
    _gpu(launch, layout)


def _mpi_on_one_host(launch: Launch, layout: Layout) -> None:
    """An mpirun that names no hosts, run outside a scheduler's job or in a one-node Slurm job: one node, every
    rank on it (launch_mpi.one_host_reason)."""
    from plint.reading.sources.launch_mpi import one_host_reason

    chain, job = launch.chain, launch.slurm
    world = chain.world_size
    if not chain.calls or chain.nnodes.known or not world.known:
        return
    scheduler = (
        job is not None
        or launch.pbs
        or launch.lsf
        or launch.other_scheduler
        or any(c.launcher == "srun" for c in chain.calls)
    )
    why = one_host_reason(chain.calls[0], job.nodes if job is not None else None, scheduler)
    if why is None:
        return
    site = chain.calls[0].command.words[0].value_span
    layout.set("cluster.nnodes", derived(1, why, site))
    layout.set("cluster.workers_per_node", derived(world.value, f"{why} ({world.value} ranks)", world.span))


def _gpu_feature(constraint: Value) -> Value | None:
    """The GPU a --constraint expression names among its node features (`a100-80gb`, `gpu&h100`), when
    exactly one feature is a hardware-catalog GPU; None otherwise. A site's features are its own words
    (NERSC's `gpu`, `hbm80g`): only a catalog name is read as a GPU."""

    from plint.catalog.hardware import lookup_gpu

    names = {f for f in re.split(r"[&|,\[\]()*\s]+", str(constraint.value)) if f and lookup_gpu(f) is not None}
    if len(names) != 1:
        return None
    (name,) = names
    return Value(
        name.lower(),
        constraint.span,
        constraint.origin,
        None if name == constraint.value else f"the node feature {name!r} of --constraint {constraint.value!r}",
    )


def _gpu(launch: Launch, layout: Layout) -> None:
    """cluster.gpu as a hardware-catalog name, its memory, and the NVLink domain the groups can use."""
    from plint.catalog.hardware import ambiguous_parts, default_gpu, lookup_gpu

    job = launch.slurm
    written: Value | None = None
    if launch.gpu_override:
        written = Value(launch.gpu_override, None, "assumed", "--gpu / [tool.plint] gpu")
    elif job is not None and job.gpu_type is not None and job.gpu_type.known:
        written = job.gpu_type
    features = None  # --constraint naming node features of which none is a GPU plint knows (`-C gpu`)
    if written is not None and job is not None and job.gpu_type_is_feature and written is job.gpu_type:
        features = written.value
        written = _gpu_feature(written)
    spec = lookup_gpu(written.value) if written is not None else None
    if written is None:
        spec = default_gpu()
        named = (
            f"--constraint {features!r} names node features, none a GPU in plint's hardware catalog"
            if features is not None
            else "the launch names no GPU type"
        )
        gpu = Value(spec.name, None, "assumed", f"{named}: plint assumes {spec.name} (--gpu NAME or [tool.plint] gpu)")
    elif spec is None:
        gpu = Value(
            written.value, written.span, written.origin, f"{written.value!r} is not in plint's hardware catalog"
        )
    else:
        note = None if spec.name == written.value else f"{written.value!r} is {spec.name} in the hardware catalog"
        parts = ambiguous_parts(written.value)
        if parts:
            # judged as the larger part: a launch that fits it is not called out of memory
            note = (
                f"{written.value!r} is sold as {' and '.join(parts)}: plint takes {spec.name}, the larger "
                f'(--gpu {parts[0]} or [tool.plint] gpu = "{parts[0]}" for the other)'
            )
            layout.extras.gpu_ambiguity = note
        gpu = Value(spec.name, written.span, written.origin, note)
    layout.set("cluster.gpu", gpu)
    if spec is None:
        return
    layout.set(
        "cluster.gpu_memory_gib",
        Value(
            spec.hbm_gib,
            gpu.span,
            "derived" if written is not None else "assumed",
            f"{spec.name}: {spec.hbm_gib} GiB ({spec.source})",
        ),
    )
    _assume_node_size(layout, spec, gpu_assumed=written is None)
    per_node = layout.get("cluster.gpus_per_node")
    gpu_named = written is not None  # named by the launch, --gpu or the config, not plint's default
    if gpu_named and spec.rack_scale and spec.scale_up_domain > (per_node.value or 0 if per_node is not None else 0):
        domain = Value(
            spec.scale_up_domain,
            gpu.span,
            "derived",
            f"{spec.name}: NVLink spans {spec.scale_up_domain} GPUs ({spec.source})",
        )
    elif per_node is not None and per_node.value:
        domain = Value(
            spec.nvlink_domain(per_node.value) if gpu_named else per_node.value,
            per_node.span,
            "assumed" if per_node.origin == "assumed" else "derived",
            "the GPUs of one node",
        )
    else:
        domain = Value(None, None, "derived", "GPUs per node unknown")
    layout.set("cluster.nvlink_domain", domain)


def _counts_every_node_gpu(count: Value | None) -> bool:
    """Whether an unknown GPU count is "every GPU of the launching node", known only at run time: DeepSpeed's
    runner with no hostfile nor --num_gpus/--include (runner.py main: device_count()), torchrun's
    `--nproc-per-node gpu|auto`, or a variable set from `torch.cuda.device_count()`."""
    from plint.reading.sources.hostfile import EVERY_LOCAL_GPU
    from plint.reading.sources.launch_torchrun import COUNTS_NODE_DEVICES

    if count is None or count.known or not count.note:
        return False
    return any(mark in count.note for mark in (EVERY_LOCAL_GPU, COUNTS_NODE_DEVICES, "cuda.device_count("))


def _assume_node_size(layout: Layout, spec, gpu_assumed: bool) -> None:
    """A launch that uses every GPU of its node, with nothing stating how many: the GPUs of the usual node of
    its (named or assumed) GPU, from the hardware catalog, with origin "assumed" and a note naming how to state
    the count, as for an unnamed GPU type. Parts sold in nodes of many sizes (no node_gpus) stay unknown, and
    [tool.plint] gpus-per-node, where set, is the count instead (for torchrun's `gpu` as for DeepSpeed's runner)."""
    from plint.reading.sources.hostfile import GPUS_PER_NODE_SETTING, configured_count

    per_node = layout.get("cluster.gpus_per_node")
    if per_node is None or not _counts_every_node_gpu(per_node):
        return
    stated = configured_count()  # the deepspeed runner's reading applies it already; torchrun's `gpu` here
    if stated is not None:
        assumed = Value(stated, per_node.span, "derived", f"{per_node.note}: {GPUS_PER_NODE_SETTING} = {stated}")
    elif spec.node_gpus is None:
        return
    else:
        n = spec.node_gpus
        gpu = f"{spec.name} node (the GPU is assumed too)" if gpu_assumed else f"{spec.name} node"
        assumed = Value(
            n,
            per_node.span,
            "assumed",
            f"{per_node.note}; plint assumes {n}, the GPUs of an {gpu} ({spec.source_of('node_gpus')}): "
            f"state the count with {GPUS_PER_NODE_SETTING} = N, --assume/--env for a variable the "
            "script reads, or the launcher's own count (--num_gpus, --nproc-per-node)",
        )
    layout.set("cluster.gpus_per_node", assumed)
    if _counts_every_node_gpu(layout.get("cluster.workers_per_node")):
        layout.set("cluster.workers_per_node", assumed)
    world = layout.get("cluster.world_size")
    if world is None or not world.known:
        total = product(
            "world size = {nodes} node(s) * {gpus} GPUs per node",
            nodes=layout.get("cluster.nnodes") or unresolved("no node count"),
            gpus=assumed,
        )
        layout.set("cluster.world_size", Value(total.value, per_node.span, total.origin, total.note))


def _facts(launch: Launch, layout: Layout, prefixes: tuple[str, ...]) -> None:
    for key, value in launch.facts.items():
        if key.startswith(prefixes) or key == "precision":
            # a fact under a layout prefix is a field path (tests/test_layout_paths.py reads every fixture's)
            layout.set(cast("FieldPath", key), value)


def _megatron_parallel(launch: Launch, layout: Layout) -> None:
    world = layout.get("cluster.world_size") or unresolved("no world size")
    one = default(1)
    tp = layout.get("parallel.tp") or one
    pp = layout.get("parallel.pp") or one
    cp = layout.get("parallel.cp") or one
    if launch.catalog is not None and launch.catalog.catalog.clamps_parallel_sizes:
        asked = (tp.value, pp.value)
        tp, pp = _clamped(layout, world, tp, pp)
        if (tp.value, pp.value) != asked:  # the sizes written, for PL101: less model parallelism than written
            launch.facts["clamped_model_parallel"] = derived(
                asked,
                "the tp and pp written, before validate_args clamps them",
                tp.span if tp.value != asked[0] else pp.span,
            )
    sequence_parallel = layout.get("parallel.sequence_parallel")
    if sequence_parallel is not None and sequence_parallel.value is True and tp.value == 1:
        # validate_args turns it off at tp 1 ("Disabling sequence parallelism because tensor model parallelism
        # is disabled"; megatron/training/arguments.py, and megatron/arguments.py of the forks): the layout
        # says what runs; PL304 reads the flag itself (the trainer fact "sequence_parallel_flag")
        layout.set(
            "parallel.sequence_parallel",
            derived(False, "--sequence-parallel is turned off by the trainer at tp 1", sequence_parallel.span),
        )
    if launch.trainer.value == "megatron-deepspeed":
        sp = launch.facts.get("ds_sequence_parallel_size") or one
        layout.set(
            "parallel.dp",
            quotient("dp = {n} / ({tp}*{pp}*{sp}) (world / tp*pp*ds_sequence_parallel)", world, tp=tp, pp=pp, sp=sp),
        )
    else:
        layout.set(
            "parallel.dp", quotient("dp = {n} / ({tp}*{pp}*{cp}) (world / tp*pp*cp)", world, tp=tp, pp=pp, cp=cp)
        )


def _clamped(layout: Layout, world: Value, tp: Value, pp: Value) -> tuple[Value, Value]:
    """tp and pp as a validate_args that clamps them runs them (FlagCatalog.clamps_parallel_sizes): tp = min(tp,
    world), then pp = min(pp, world // tp); each one that moved is set in the layout, derived, saying so."""
    sizes = (world.value, tp.value, pp.value)
    if not all(isinstance(v, int) and v > 0 for v in sizes):
        return tp, pp
    w, t, p = sizes
    origin = "assumed" if world.origin == "assumed" else "derived"  # a clamp to an assumed world is assumed too
    if t > w:
        tp = Value(
            w, tp.span, origin, f"--tensor-model-parallel-size {t} is clamped to the world size {w} by validate_args"
        )
        layout.set("parallel.tp", tp)
        etp = layout.get("parallel.etp")
        if etp is not None and etp.origin != "literal" and etp.value == t:  # the expert tp that follows tp
            layout.set("parallel.etp", Value(w, etp.span, origin, f"the tensor-parallel size, {tp.note}"))
    if p > w // tp.value:
        note = f"--pipeline-model-parallel-size {p} is clamped to world {w} // tp {tp.value} by validate_args"
        pp = Value(w // tp.value, pp.span, origin, note)
        layout.set("parallel.pp", pp)
    return tp, pp


# ZeRO stage -> what it shards (DeepSpeed's zero_optimization.stage; Megatron-DeepSpeed's --zero-stage)
_ZERO_SHARDING = {0: "none", 1: "optimizer", 2: "gradients", 3: "parameters"}


def _sharding(launch: Launch, layout: Layout) -> None:
    """parallel.sharding: what data parallelism shards. Read as written (Megatron-FSDP's strategy, HF's
    --fsdp), else derived from the ZeRO stage or the distributed optimizer (which shards the optimizer
    states: megatron-core's DistributedOptimizer). Then parallel.dp_outer (_dp_outer)."""
    _what_is_sharded(launch, layout)
    _dp_outer(launch, layout)


def _dp_outer(launch: Launch, layout: Layout) -> None:
    """parallel.dp_outer: over how many replicas hybrid sharding keeps the sharded states (each sharded over
    dp*cp/dp_outer ranks). As written (Megatron's --num-distributed-optimizer-instances), one replica per
    node for HF's --fsdp hybrid_shard (torch FSDP's HYBRID_SHARD without a device mesh shards inside a
    node: _init_intra_node_process_group in torch/distributed/fsdp/_init_utils.py), else 1 once something
    is sharded; null when nothing is or what is sharded is not known."""
    written = launch.facts.get("parallel.dp_outer")
    if written is not None:
        layout.set("parallel.dp_outer", written)
        return
    sharding = layout.get("parallel.sharding")
    if sharding is None or not sharding.known or sharding.value == "none":
        return
    hybrid = launch.facts.get("fsdp.hybrid_shard")
    if hybrid is not None:
        nodes = layout.get("cluster.nnodes")
        layout.set(
            "parallel.dp_outer",
            Value(nodes.value, hybrid.span, "derived", f"{hybrid.note}: one replica per node, sharded over its GPUs")
            if nodes is not None and nodes.known
            else unresolved(f"{hybrid.note}: one replica per node, and the node count is not known", hybrid.span),
        )
        return
    layout.set(
        "parallel.dp_outer", default(1, "no hybrid sharding: the states are sharded over the whole data-parallel group")
    )


def _what_is_sharded(launch: Launch, layout: Layout) -> None:
    written = launch.facts.get("parallel.sharding")
    if written is not None:
        layout.set("parallel.sharding", written)
        return
    zero = layout.get("parallel.zero_stage")
    dist_opt = layout.get("parallel.distributed_optimizer")
    if zero is not None and launch.trainer.value != "megatron":
        # the stage the cost model uses (the JSON's, else Megatron-DeepSpeed's --zero-stage); an unknown
        # stage leaves the sharding null: PL002 names the stage itself, once
        if zero.known and isinstance(zero.value, int) and zero.value in _ZERO_SHARDING:
            layout.set("parallel.sharding", derived(_ZERO_SHARDING[zero.value], f"ZeRO stage {zero.value}", zero.span))
        return
    if dist_opt is not None and dist_opt.known:
        layout.set(
            "parallel.sharding",
            derived(
                "optimizer" if dist_opt.value else "none",
                "--use-distributed-optimizer" if dist_opt.value else "no distributed optimizer, no ZeRO",
                dist_opt.span,
            ),
        )


def _dp(layout: Layout) -> Value:
    """The data-parallel size, which the batch is derived from: set with the parallel sizes before it."""
    dp = layout.get("parallel.dp")
    assert dp is not None
    return dp


def _megatron_batch(layout: Layout) -> None:
    dp = _dp(layout)
    micro = layout.get("batch.micro") or default(1)
    layout.set("batch.micro", micro)
    glob, gas = layout.get("batch.global"), layout.get("batch.grad_accum")
    if glob is None and gas is not None:  # a trainer that states its accumulation (ROLL's training_args)
        glob = product("global = {micro}*{gas}*{dp} (micro * grad_accum * dp)", micro=micro, gas=gas, dp=dp)
        layout.set("batch.global", glob)
    if glob is None or (glob.value is None and glob.origin == "default"):
        glob = product("global = {micro}*{dp} (Megatron's default: one micro-batch per step)", micro=micro, dp=dp)
        if glob.known:
            glob = Value(glob.value, None, "default", glob.note)
        layout.set("batch.global", glob)
    m = quotient("num_microbatches = {n} / ({micro}*{dp})", glob, micro=micro, dp=dp)
    layout.set("batch.num_microbatches", m)
    layout.set("batch.grad_accum", m)


def _neox_batch(layout: Layout) -> None:
    """GPT-NeoX's batch triple (megatron/neox_arguments/arguments.py calculate_batch_parameters, with
    gradient_accumulation_steps defaulting to 1): the global batch when not written is micro * accumulation *
    dp, the micro batch when not written is global // dp // accumulation; check_batch_parameters then stops a
    triple that does not multiply out. DeepSpeed runs grad_accum micro-batches a step."""
    dp = _dp(layout)
    micro, gas, glob = layout.get("batch.micro"), layout.get("batch.grad_accum"), layout.get("batch.global")
    gas = gas or default(1)
    if glob is None and micro is not None:
        glob = product("global = {micro}*{gas}*{dp} (micro * grad_accum * dp)", micro=micro, gas=gas, dp=dp)
        layout.set("batch.global", glob)
    elif micro is None and glob is not None:
        per = quotient("micro = {n} / ({dp}*{gas}) (train_batch_size / dp / grad_accum)", glob, dp=dp, gas=gas)
        layout.set("batch.micro", per)
    elif micro is None:
        missing = unresolved(
            "neither train_batch_size nor train_micro_batch_size_per_gpu is set: GPT-NeoX stops "
            "(calculate_batch_parameters)"
        )
        layout.set("batch.micro", missing)
        layout.set("batch.global", missing)
    layout.set("batch.num_microbatches", gas)


def _deepspeed_batch(launch: Launch, layout: Layout) -> None:
    """Batch for DeepSpeed engines: the JSON's triple, with HF-Trainer flags filling "auto"."""
    from plint.reading.sources.deepspeed_config import derive_batch

    world = layout.get("cluster.world_size") or unresolved("no world size")
    cfg = launch.ds_config
    dp = _client_parallelism(launch, layout, world)
    layout.set(
        "parallel.dp",
        dp
        if dp is not world
        else Value(
            world.value,
            world.span,
            world.origin if world.origin == "assumed" or not world.known else "derived",
            "dp = world size (no model parallelism)" + (f"; {world.note}" if world.origin == "assumed" else "")
            if world.known
            else world.note,
        ),
    )
    micro, gas = launch.facts.get("batch.micro"), launch.facts.get("batch.grad_accum")
    samples = launch.facts.get("trainer.step_samples")
    if gas is None and micro is not None and samples is not None:
        gas = _accumulation_for(samples, micro, world)
    step_batch = launch.facts.get("trainer.global_batch")  # a global batch the trainer divides (OpenRLHF)
    if step_batch is not None:
        layout.set("batch.global", step_batch)
        if gas is None and micro is not None:
            dp = layout.get("parallel.dp") or unresolved("no dp")
            gas = quotient(
                "grad_accum = {n} / ({micro} * {dp}) (global / (micro * dp))", step_batch, micro=micro, dp=dp
            )
    if gas is None and micro is not None and launch.facts.get("arguments.incomplete") is None:
        # the HF Trainer's arguments without --gradient_accumulation_steps: TrainingArguments' default, 1
        gas = default(1, "--gradient_accumulation_steps not given: the HF Trainer's default is 1")
    if cfg is not None:
        batch = _batch_on_assumed_node(cfg, layout) or derive_batch(cfg, layout.get("parallel.dp"))
        layout.set("batch.micro", batch.micro)
        layout.set("batch.global", batch.global_)
        layout.set("batch.grad_accum", batch.grad_accum)
        layout.extras.problems.extend(getattr(batch, "problems", []))
    # The HF Trainer / Accelerate fill "auto" from their own arguments.
    filled: tuple[tuple[FieldPath, Value | None], ...] = (("batch.micro", micro), ("batch.grad_accum", gas))
    for key, flag in filled:
        current = layout.get(key)
        if flag is not None and (current is None or not current.known):
            layout.set(key, flag)
    if launch.trainer.value != "megatron-deepspeed":
        g = layout.get("batch.global")
        if g is None or not g.known:
            # without a DeepSpeed config nor the script's batch flags the batch is the script's own default:
            # unknown (never 1 presented as derived); an absent accumulation is 1, as DeepSpeed's default, only
            # where a config says the rest
            gas = layout.get("batch.grad_accum") or (
                default(1, "gradient_accumulation_steps defaults to 1") if cfg is not None else None
            )
            layout.set(
                "batch.global",
                product(
                    "global = {micro}*{gas}*{dp} (micro * grad_accum * dp)",
                    micro=layout.get("batch.micro") or _no_batch(launch),
                    gas=gas or _no_batch(launch),
                    dp=_dp(layout),
                ),
            )
    layout.set("batch.num_microbatches", layout.get("batch.grad_accum"))


def _accumulation_for(samples: Value, micro: Value, world: Value) -> Value:
    """The accumulation a trainer picks to reach `samples` a step over the whole world (ms-swift's default:
    max(1, ceil(samples / micro / world)))."""
    if not (micro.known and world.known) or not micro.value or not world.value:
        return unresolved(f"{samples.note}, and micro or the world size is not known")
    steps = max(1, math.ceil(samples.value / micro.value / world.value))
    return Value(
        steps, None, "default", f"{samples.note}: max(1, ceil({samples.value} / {micro.value} / {world.value}))"
    )


def _client_parallelism(launch: Launch, layout: Layout, world: Value) -> Value:
    """The model-parallel sizes of a trainer that is not Megatron (an HF Trainer or DeepSpeed client script) and
    its dp. Such a trainer runs none unless its flags ask for it (read, they leave the sizes unknown) or its
    DeepSpeed config does: AutoTP's tensor_parallel.autotp_size (deepspeed/runtime/engine.py, 0.19.8: the engine
    shards the model over it) and Ulysses' sequence_parallel_size, which divide the world for dp."""
    own = _own_model_parallelism(launch)
    split = launch.facts.get("trainer.sequence_split")  # a sequence split whose meaning plint knows (ms-swift's)
    if own is not None and own[1] and split is not None:
        own = None
    if own is not None and not own[1]:  # `cli/train.py --model_parallel_size 4`: its own model parallelism, unread
        return unresolved(f"{own[0]}: the trainer's own model parallelism, which plint does not read: dp = world / it")
    if launch.chain is None or (own is None and launch.facts.get("arguments.incomplete") is not None):
        return world  # a config checked alone, or arguments of which a part is unknown: no sizes said
    cfg = launch.ds_config
    none = "no model parallelism: a trainer other than Megatron, with no model-parallel flag or config section"
    tp = launch.facts.get("trainer.tensor_split") or derived(1, none)  # AutoTP from the trainer's flag (OpenRLHF)
    if cfg is not None and cfg.autotp_size.origin != "default":
        autotp = cfg.autotp_size
        tp = autotp if not autotp.known or autotp.value not in (0, 1) else derived(1, f"{cfg.path}: AutoTP off")
    layout.set("parallel.tp", tp)
    layout.set("parallel.pp", derived(1, none))
    layout.set("parallel.ep", derived(1, none))
    sp = split or getattr(cfg, "sequence_parallel_size", None)
    if own is not None:  # `--seq_parallel_size 14`: the script splits sequences its own way (cp unknown)
        return unresolved(
            f"{own[0]}: the trainer's own sequence parallelism, which plint does not read: dp = world / it"
        )
    if sp is None or sp.origin == "default" or sp.value == 1:
        # a trainer may split sequences under a flag or config key of its own no list holds: an assumption
        layout.set("parallel.cp", Value(1, None, "assumed", _NO_SEQUENCE_SPLIT))
        sp = derived(1, none)
    elif sp is split:
        layout.set("parallel.cp", split)
    return (
        world
        if tp.value == 1 and sp.value == 1
        else quotient("dp = {n} / ({tp} * {sp}) (world / AutoTP size / sequence_parallel_size)", world, tp=tp, sp=sp)
    )


def _batch_on_assumed_node(cfg, layout: Layout):
    """The JSON's batch triple when dp rests on GPUs per node plint assumed and DeepSpeed would stop at that dp:
    derived without dp instead, so that what needs dp stays unknown (naming the guess) and no start-up stop is
    reported from a guessed count; None when the node size is read or the triple holds at the assumed dp.
    PL106 still warns where the JSON writes all three and they disagree with the assumed dp."""
    from plint.reading.sources.deepspeed_config import derive_batch

    per_node, dp = layout.get("cluster.gpus_per_node"), layout.get("parallel.dp")
    if per_node is None or per_node.origin != "assumed" or dp is None or not dp.known:
        return None
    if not derive_batch(cfg, dp).problems:
        return None
    return derive_batch(
        cfg,
        unresolved(
            f"dp {dp.value} rests on the assumed GPUs per node, and the config's batch "
            f"does not hold at it: the node's real count decides ({per_node.note})"
        ),
    )


# a trainer's own model- or pipeline-parallel size, with which dp is not the world: Megatron-style names (fmengine's
# --model_parallel_size, --pipe_parallel_size) and the HF Trainer's --tp_size (transformers 4.51-4.53 TrainingArguments)
_OWN_MODEL_PARALLEL = re.compile(
    r"--(tensor|model|pipe|pipeline)[-_](model[-_])?parallel[-_](size|degree)|--tp[-_]size"
)
# its own sequence splitting (Ulysses or ring attention): LongVILA's --seq_parallel_size, LLaMA-Factory forks' and
# ms-swift's --sequence_parallel_size, OpenRLHF's --ring_attn_size, yunchang's --ulysses_degree / --ring_degree,
# EasyContext's --parallel_mode (any mode but data_parallel)
_OWN_SEQUENCE_SPLIT = re.compile(
    r"--(seq|sequence|context)[-_]parallel[-_](size|degree)|--(sp|cp)[-_]size|--ulysses[-_](degree|size)"
    r"|--ring[-_](attn[-_]size|degree|size)|--parallel[-_]mode"
)
_NO_SPLIT = ("1", "data_parallel")
_NO_SEQUENCE_SPLIT = (
    "cp 1: no sequence splitting plint knows of (DeepSpeed's sequence_parallel_size, --sequence_parallel_size, "
    "--ring_attn_size, --ulysses_degree and their kin); a trainer's own config may still split sequences"
)


def _own_model_parallelism(launch: Launch) -> tuple[str, bool] | None:
    """`FLAG VALUE` of a model-parallel size the program receives that is not known to be 1, and whether it only
    splits sequences (`--seq_parallel_size`); a size that splits the model comes first. None: no such flag."""
    words = launch.chain.trainer_args if launch.chain is not None else []  # a DeepSpeed JSON checked alone: none
    found: list[tuple[str, bool]] = []
    for i, w in enumerate(words):
        name, eq, inline = (w.text or "").partition("=")
        sequence = _OWN_SEQUENCE_SPLIT.fullmatch(name) is not None
        if not sequence and _OWN_MODEL_PARALLEL.fullmatch(name) is None:
            continue
        value = inline if eq else (words[i + 1].text if i + 1 < len(words) else None)
        if value not in _NO_SPLIT:
            found.append((f"{name} {value if value is not None else '(unknown)'}", sequence))
    return min(found, key=lambda f: f[1], default=None)


def _hf_batch(launch: Launch) -> bool:
    """Whether a launch without DeepSpeed is plain data parallelism: the HF Trainer's batch flags
    (--per_device_train_batch_size), an entry script that builds the HF Trainer, or accelerate without
    Megatron-LM. Then dp is the world (DDP or FSDP, no model parallelism) and the batch is
    micro * accumulation * dp, as TrainingArguments computes it (train_batch_size * world)."""
    return "batch.micro" in launch.facts or "data_parallel" in launch.facts


def _no_batch(launch: Launch) -> Value:
    gap = launch.facts.get("arguments.incomplete")
    return (
        gap
        if gap is not None
        else unresolved(
            "the batch is not given: no DeepSpeed config, and no --per_device_train_batch_size / "
            "--gradient_accumulation_steps the reader knows (the script's own defaults decide it)"
        )
    )


def _precision(launch: Launch, layout: Layout) -> None:
    cfg = launch.ds_config
    read = layout.get("precision")
    # without --fp16/--bf16 a Megatron-DeepSpeed model is built in fp32, but under --deepspeed the engine casts its
    # parameters to the config's fp16 or bf16 (deepspeed/runtime/engine.py _configure_distributed_model,
    # deepspeedai/DeepSpeed edaa72212): Megatron's default gives way to the config
    engine = launch.facts.get("deepspeed.enabled")
    flags_default = (
        read is not None
        and read.origin == "default"
        and launch.trainer.value == "megatron-deepspeed"
        and engine is not None
        and engine.value is True
    )
    if read is not None and read.value is not None and not (flags_default and cfg is not None):
        return
    if cfg is not None:
        for name, attr in (("bf16", "bf16_enabled"), ("fp16", "fp16_enabled")):
            v = getattr(cfg, attr, None)
            if v is not None and v.value is True:
                layout.set("precision", Value(name, v.span, v.origin, f"{cfg.path}: {name}.enabled"))
                return
    if layout.get("precision") is None and cfg is None and launch.trainer.value == "deepspeed":
        # a DeepSpeed client script with no config the reader found builds its own (a dict passed to
        # deepspeed.initialize): its bf16/fp16 sections, not an absent flag, decide the precision
        layout.set(
            "precision",
            unresolved(
                "the precision is in the DeepSpeed config the training script builds "
                "in Python (no --deepspeed_config file the reader found)"
            ),
        )
    if layout.get("precision") is None and launch.trainer.value == "unknown":
        # a script plint does not know has its own defaults: an absent flag says nothing about them
        layout.set(
            "precision",
            unresolved(
                "no --bf16/--fp16 among the flags of a script plint does not know: its "
                "own default decides the precision"
            ),
        )
    if layout.get("precision") is None:
        layout.set("precision", default("fp32", "no --bf16/--fp16: parameters stay fp32"))


def build_layout(launch: Launch) -> Layout:
    chain: LaunchChain = launch.chain  # typed: mypy checks it is the LaunchCalls the layout hands on
    layout = Layout()
    layout.site = chain.calls[-1].command.site if chain.calls else None
    command = chain.calls[-1].command if chain.calls else None
    layout.conditions = tuple(command.conditions) if command is not None else ()
    launcher_word = chain.calls[-1].command.words[0] if chain.calls else None
    launcher_span = launcher_word.value_span if launcher_word is not None else None
    if launcher_word is not None and launcher_word.origin == "assumed":  # `"$(command -v deepspeed)" ...`
        note = (
            f"the script runs the {launcher_word.display()} it looks up on PATH (which, command -v): assumed installed"
        )
        layout.set("launcher", Value(chain.launcher, launcher_span, "assumed", note))
    else:
        layout.set("launcher", Value(chain.launcher, launcher_span, "literal" if chain.launcher else "derived"))
    in_slurm = launch.slurm is not None or any(c.launcher == "srun" for c in chain.calls)
    submitted = submitted_with(command) if command is not None else None
    scheduler, said = (
        ("slurm", "#SBATCH directives or srun")
        if in_slurm
        else submitted
        if submitted is not None
        else ("pbs", "#PBS directives")
        if launch.pbs
        else ("lsf", "#BSUB directives")
        if launch.lsf
        else ("sge", "#$ directives (Grid Engine)")
        if launch.grid_engine
        else (None, "no scheduler")
    )
    layout.set("scheduler", derived(scheduler, said))
    layout.set("trainer", launch.trainer)
    layout.set("entrypoint", _word_value(chain.entrypoint, "entrypoint"))
    _cluster(launch, layout)
    trainer = launch.trainer.value
    if trainer in ("megatron", "megatron-deepspeed"):
        _facts(launch, layout, ("parallel.", "batch.", "model.", "recompute."))
        _megatron_parallel(launch, layout)
        if trainer == "megatron-deepspeed" and launch.ds_config is not None:
            z = launch.ds_config.zero_stage
            if z is not None:
                layout.set("parallel.zero_stage", z)
        elif trainer == "megatron-deepspeed" and launch.facts.get("deepspeed.config") is not None:
            # DeepSpeed runs the stage its config names; --zero-stage is only Megatron's own copy, so a
            # config plint cannot read leaves the stage unknown
            why = launch.facts["deepspeed.config"]
            layout.set(
                "parallel.zero_stage",
                unresolved(f"the ZeRO stage DeepSpeed runs is its config's: {why.note}", why.span),
            )
        if launch.chain.neox_facts is not None:
            _neox_batch(layout)
        else:
            _megatron_batch(layout)
    elif trainer == "deepspeed" or launch.ds_config is not None:
        _facts(launch, layout, ("model.", "recompute."))
        if launch.ds_config is not None:
            layout.set("parallel.zero_stage", launch.ds_config.zero_stage)
        elif "parallel.zero_stage" in launch.facts:  # the config the script builds in Python
            layout.set("parallel.zero_stage", launch.facts["parallel.zero_stage"])
        elif launch.facts.get("deepspeed.config") is not None:  # named, but not read: its reason
            why = launch.facts["deepspeed.config"]
            layout.set(
                "parallel.zero_stage", unresolved(f"the ZeRO stage is the DeepSpeed config's: {why.note}", why.span)
            )
        _deepspeed_batch(launch, layout)
    else:
        _facts(launch, layout, ("model.", "recompute.", "parallel.zero_stage"))
        if _hf_batch(launch) or "batch.grad_accum" in launch.facts:
            _deepspeed_batch(launch, layout)
    _sharding(launch, layout)
    _precision(launch, layout)
    layout.extras.facts = launch.facts
    layout.extras.chain = chain
    layout.extras.ds_config = launch.ds_config
    layout.extras.trainer_args = launch.trainer_args
    layout.extras.slurm = launch.slurm
    return layout


def build_config_layout(cfg) -> Layout:
    """A DeepSpeed config checked on its own: the layout of what it states (ZeRO stage, offload, the batch
    triple as far as it goes without a world size, precision), with no launcher and no cluster. Its values
    are the config's; what an integration fills ("auto") or the world size decides stays unknown."""
    launch = Launch(chain=None, trainer=derived("deepspeed", f"{cfg.path} is a DeepSpeed config"), ds_config=cfg)
    layout = Layout()
    layout.set("launcher", Value(None, None, "derived", f"{cfg.path} is a DeepSpeed config read on its own: no launch"))
    layout.set("trainer", launch.trainer)
    layout.set("cluster.world_size", unresolved(f"{cfg.path} alone does not say how many GPUs run it"))
    layout.set("parallel.zero_stage", cfg.zero_stage)
    _deepspeed_batch(launch, layout)
    _sharding(launch, layout)
    auto = [v for v in (cfg.bf16_enabled, cfg.fp16_enabled) if v is not None and v.value == "auto"]
    if auto and not any(v is not None and v.value is True for v in (cfg.bf16_enabled, cfg.fp16_enabled)):
        layout.set("precision", unresolved(f"{cfg.path}: {AUTO_PRECISION}", auto[0].span))
    _precision(launch, layout)
    layout.extras.facts = launch.facts
    layout.extras.ds_config = cfg
    layout.extras.config_alone = True  # rules: no launch says whether an integration fills "auto"
    return layout


def build_neox_config_layout(path: str, facts: dict) -> Layout:
    """A GPT-NeoX config checked on its own: the layout of what it states (deepy.py merges it as one file,
    NeoX's defaults for the keys it does not set) with no launch: the GPU count is the hostfile's, so dp and
    whatever needs it stay unknown."""
    layout = Layout()
    layout.set("launcher", Value(None, None, "derived", f"{path} is a GPT-NeoX config read on its own: no launch"))
    launch = Launch(chain=None, trainer=derived("megatron-deepspeed", f"{path} is a GPT-NeoX config"), facts=facts)
    layout.set("trainer", launch.trainer)
    layout.set("cluster.world_size", unresolved(f"{path} alone does not say how many GPUs run it (the hostfile does)"))
    _facts(launch, layout, ("parallel.", "batch.", "model.", "recompute."))
    _megatron_parallel(launch, layout)
    _neox_batch(layout)
    _sharding(launch, layout)
    _precision(launch, layout)
    layout.extras.facts = facts
    layout.extras.config_alone = True
    return layout


AUTO_PRECISION = (
    '"enabled": "auto": the integration that runs it (HF Trainer, Accelerate) fills it from its own arguments'
)
