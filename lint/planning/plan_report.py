"""How `plint plan` prints a Plan: a ranked table (text) or `{"candidates": [...]}` (json, DESIGN.md)."""

from __future__ import annotations

import json

from plint.planning.plan import LAUNCH_KEYS, SHARDING_NAMES, Candidate, Plan, changes, reduce_dtype

HEADER = (
    "#",
    "tp",
    "pp",
    "vpp",
    "cp",
    "ep",
    "dp",
    "sharding",
    "reduce",
    "micro",
    "recompute",
    "tokens/s/GPU",
    "MFU",
    "GiB",
    "bubble",
    "why",
)


def render_json(result: Plan) -> str:
    b = result.base
    carried = ("tokenizer", "approximate", *LAUNCH_KEYS)  # what generate writes that the cost model ignores
    shape = {**b.shape(), **{k: result.model[k] for k in carried if k in result.model}}
    doc = {
        "model": result.model_name,
        "model_shape": shape,
        "world_size": b.world_size,
        "gpu": b.gpu,
        "nnodes": b.nnodes,
        "gpus_per_node": b.gpus_per_node,
        "precision": b.precision,
        "seq_length": b.seq_length,
        "global_batch": b.global_batch,
        "considered": result.considered,
        "candidates": [c.to_json() for c in result.candidates],
    }
    if result.current is not None:
        doc["current"] = result.current.to_json()
    if result.notes:
        doc["notes"] = [str(n) for n in result.notes]
    if result.tree is not None:
        doc["decision_tree"] = {"steps": result.tree.steps, "axes": result.tree.axes, "departures": result.departures}
    from plint.escape import json_text

    return json_text(json.dumps(doc, indent=2))


def _row(rank: str, c: Candidate) -> tuple:
    i, e = c.inp, c.estimate
    last = c.last_layers or c.first_last_layers
    ends = f"{c.first_last_layers}" if last == c.first_last_layers else f"{c.first_last_layers}/{last}"
    pp = f"{i.pp}" + (f" (ends {ends})" if c.first_last_layers else " (layout)" if c.pipeline_layout else "")
    return (
        rank,
        str(i.tp),
        pp,
        str(i.vpp or "-"),
        str(i.cp),
        str(i.ep),
        str(i.data_parallel()),
        SHARDING_NAMES[i.sharding_level()],
        reduce_dtype(i),
        str(i.micro_batch),
        i.recompute or "-",
        f"{e.tokens_per_s_per_gpu:,.0f}",
        f"{100 * e.mfu:.1f}%",
        f"{e.memory_gib['total']:.1f}",
        f"{100 * e.bubble_fraction:.1f}%",
        c.why,
    )


def _no_candidate(result: Plan) -> str:
    """Why the plan is empty: nothing fits in memory, or (nothing estimated) no layout of the search space
    passes the start-up checks on this cluster, such as hybrid sharding's instances dividing dp*cp."""
    if result.considered:
        return (
            "no layout fits in usable memory with its estimate's error band (PL402): more GPUs, a shorter "
            "sequence or a smaller model"
        )
    b = result.base
    instances = (
        f"; with --num-distributed-optimizer-instances {b.dp_outer}, dp*cp must be a multiple of {b.dp_outer} (PL101)"
        if (b.dp_outer or 1) > 1
        else ""
    )
    return (
        f"no layout passes the trainer's start-up checks on {b.world_size:,} GPUs with global batch "
        f"{b.global_batch or b.world_size:,}{instances}"
    )


def render_text(result: Plan) -> str:
    b = result.base
    lines = [
        f"plint plan: {result.model_name} on {b.nnodes} x {b.gpus_per_node} {b.gpu} ({b.world_size:,} GPUs), "
        f"sequence {b.seq_length:,}, global batch {b.global_batch:,}; {result.considered:,} layouts estimated, "
        f"{len(result.candidates)} shown"
    ]
    if result.tree is not None:
        lines += [f"decision tree: {step}" for step in result.tree.steps]
        lines += [f"#1 departs: {d}" if d != "#1 is the tree's answer" else d for d in result.departures]
    if not result.candidates:
        lines.append(_no_candidate(result))
        return "\n".join(lines)
    rows = [HEADER] + [_row(str(n), c) for n, c in enumerate(result.candidates, 1)]
    if result.current is not None:
        rows.append(_row("now", result.current))
    widths = [max(len(r[k]) for r in rows) for k in range(len(HEADER) - 1)]
    for r in rows:
        lines.append(
            "  ".join(
                cell.rjust(w) if k not in (7, 8, 10) else cell.ljust(w)
                for k, (cell, w) in enumerate(zip(r[:-1], widths))
            )
            + "  "
            + r[-1]
        )
    if result.current is not None:
        best, now = result.candidates[0], result.current
        gain = best.tokens / now.tokens - 1 if now.tokens else 0.0
        diff = changes(now, best)
        if diff:
            lines.append(
                f"against the launch: #1 changes {', '.join(diff)}; predicted {gain:+.1%} tokens/s per GPU "
                f"({now.estimate.memory_gib['total']:.1f} -> {best.estimate.memory_gib['total']:.1f} GiB)"
            )
        else:
            lines.append("against the launch: it is already the best layout predicted")
    if any(c.first_last_layers for c in result.candidates):
        lines.append(
            "pp N (ends K or K/J): uneven pipeline, the first stage holds K layers and the last K or J "
            "(--decoder-first-pipeline-num-layers K --decoder-last-pipeline-num-layers J)"
        )
    for c in result.candidates:
        if c.pipeline_layout:  # the first laid-out candidate's string, as an example of the notation
            lines.append(
                f"pp N (layout): the layers, embedding (E) and loss (L) spread over the virtual stages by "
                f"--pipeline-model-parallel-layout, e.g. {c.pipeline_layout} for pp {c.inp.pp}, vpp "
                f"{c.inp.vpp or 1}; `plint plan --format json` gives each candidate's"
            )
            break
    lines.append(
        "sharding over dp: optimizer = the distributed optimizer; gradients, parameters = Megatron-FSDP "
        "optim_grads, optim_grads_params (ZeRO-2, ZeRO-3 with DeepSpeed); reduce: the gradients' "
        "reduce dtype (bf16: --grad-reduce-in-bf16)"
    )
    lines.append(
        "memory per GPU in GiB (usable: "
        f"{result.candidates[0].estimate.memory_gib['usable']:.1f}); bubble as (pp-1)/(vpp*m) of the ideal step"
    )
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)
