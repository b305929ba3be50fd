"""The parallelism decision tree walked for one model and cluster, with plint's own numbers.

The tree (the seeds' "least parallelism that fits", DESIGN.md's planner order): does one replica's model
state fit one GPU? then data parallelism; else shard it over data parallelism (ZeRO-3 / FSDP). Tensor
parallelism inside the NVLink domain when even the sharded model, or one GPU's activations, do not fit;
pipeline parallelism when one node's GPUs, fully sharded, cannot hold the model; context parallelism
when a sequence's activations alone exceed a GPU. Each step is answered with the cost model's bytes
(memory.py), not rules of thumb, and `departures` says where the planner's #1 leaves the tree and why.
"""

from __future__ import annotations

from plint.record import record

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plint.cost import ModelInput

GIB = float(1 << 30)


@record
class TreeWalk:
    steps: list  # one sentence per branch taken or skipped, with its numbers
    axes: dict  # what the tree asks for: sharding ("none" | "parameters"), tp, pp, cp (1 = not asked)


def walk(base: ModelInput, domain: int) -> TreeWalk | None:
    """The tree for `base`'s model, batch and cluster; None when its GPU is unknown."""
    from plint.catalog.hardware import lookup_gpu
    from plint.cost import count_params
    from plint.cost.memory import memory_bytes

    gpu = lookup_gpu(base.gpu)
    if gpu is None:
        return None
    # what the estimate calls usable (HBM less fragmentation), less the runtime's own reserve, which the
    # estimate counts as "other": the tree compares model state and activations alone with what is left
    whole = gpu.hbm_gib * (1 - base.options.fragmentation)
    usable = whole - base.options.runtime_reserve_gib
    room = f"{usable:.1f} GiB usable ({whole:.1f} less the runtime's {base.options.runtime_reserve_gib:.1f})"
    world, node = base.world_size, base.gpus_per_node
    one = base.replace(
        tp=1,
        pp=1,
        cp=1,
        vpp=None,
        ep=1,
        dp=1,
        micro_batch=1,
        recompute=None,
        distributed_optimizer=False,
        sharding="none",
        megatron_fsdp=False,
        zero_stage=None,
    )
    c = count_params(one)
    replica = memory_bytes(one, c, 1)
    states = (replica["weights"] + replica["grads"] + replica["optimizer"]) / GIB
    acts = replica["activations"] / GIB
    steps: list[str] = []
    axes: dict[str, Any] = {"sharding": "none", "tp": 1, "pp": 1, "cp": 1}
    per_param = states * GIB / c.total
    if states + acts <= usable:
        steps.append(
            f"one replica needs {states:.1f} GiB of model state ({c.total / 1e9:.1f} B parameters x "
            f"{per_param:.0f} B) and {acts:.1f} GiB of activations, within {room}: "
            "data parallelism"
        )
        return TreeWalk(steps, axes)
    axes["sharding"] = "parameters"
    sharded = states / world
    steps.append(
        f"one replica needs {states:.1f} GiB of model state ({c.total / 1e9:.1f} B parameters x "
        f"{per_param:.0f} B) > {room}: shard it (ZeRO-3 / FSDP over {world} GPUs: "
        f"{sharded:.1f} GiB each)"
    )
    largest = (
        max(
            c.embedding,
            c.output,
            c.dense_layer_tp + c.dense_layer_rep,
            c.moe_layer_tp + c.moe_layer_rep + c.experts_per_layer,
        )
        * 2
        / GIB
    )
    if sharded + acts > usable or 2 * largest > 0.5 * usable:
        tp = min(domain, node)
        axes["tp"] = tp
        why = (
            f"activations {acts:.1f} GiB per GPU at micro-batch 1"
            if sharded + acts > usable
            else f"largest layer {largest:.1f} GiB of 16-bit weights"
        )
        steps.append(f"{why}: tensor parallel {tp} inside the NVLink domain")
    else:
        steps.append(
            f"largest layer {largest:.1f} GiB of 16-bit weights and {acts:.1f} GiB of activations "
            "fit beside the shard: no tensor parallelism"
        )
    if base.nnodes > 1 and states / node > usable:
        pp = base.nnodes
        while pp > 1 and base.num_layers % pp:
            pp -= 1
        axes["pp"] = pp
        steps.append(
            f"{base.num_layers} layers over {base.nnodes} nodes, and one node holds "
            f"{states / node:.1f} GiB each even fully sharded: pipeline {pp} across nodes"
        )
    elif base.nnodes > 1:
        steps.append(f"one node fully sharded holds {states / node:.1f} GiB per GPU: no pipeline")
    if acts / axes["tp"] > usable:
        cp = 2
        while acts / (axes["tp"] * cp) > usable and cp < world // axes["tp"]:
            cp *= 2
        axes["cp"] = cp
        steps.append(
            f"sequence {base.seq_length:,}: activations {acts:.1f} GiB per micro-batch "
            f"(/{axes['tp']} by tp): context parallel {cp}"
        )
    return TreeWalk(steps, axes)


def departures(tree: TreeWalk, best) -> list[str]:
    """Where the planner's #1 (a plan.Candidate) leaves the tree, each with the figure that decides it."""
    i, e = best.inp, best.estimate
    out = []
    sharding = ("none", "optimizer", "gradients", "parameters")[i.sharding_level()]
    want = tree.axes
    if sharding != want["sharding"] and not (want["sharding"] == "none" and sharding == "optimizer"):
        out.append(f"#1 shards {sharding}, the tree {want['sharding']}")
    for axis, label in (("tp", "tensor parallel"), ("pp", "pipeline"), ("cp", "context parallel")):
        got = getattr(i, axis)
        if got != want[axis]:
            out.append(f"{label} {got} where the tree asks {want[axis]}")
    if not out:
        return ["#1 is the tree's answer"]
    parts = {k: v for k, v in e.time_s.items() if k not in ("compute", "bubble", "optimizer")}
    comm = max(parts, key=lambda part: parts[part]) if parts else None
    reason = (
        f"it is the fastest layout that fits ({e.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, "
        f"{e.memory_gib['total']:.1f} GiB)"
    )
    if comm and parts[comm] > 0:
        reason += f"; its largest cost besides compute is {comm} at {parts[comm]:.3g} s of {e.step_time_s:.3g} s"
    return [f"{'; '.join(out)}: {reason}"]
