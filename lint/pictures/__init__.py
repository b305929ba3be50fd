"""`plint show`: the pictures of a layout (device grid, pipeline schedule, memory per stage,
communication table), built from the facts plint already holds and drawn by a renderer
(render_text: rich, render_page: SVG/HTML from templates/, text_grid: the compact grid for markdown)."""

from __future__ import annotations

from dataclasses import dataclass

from plint.pictures.communication import CommRow, comm_rows
from plint.pictures.grid import DeviceGrid
from plint.pictures.memory import StageMemory, stage_bars
from plint.pictures.schedule import Schedule, build as build_schedule
from plint.bounds import MAX_GPUS
from plint.dryrun.ranks import DEFAULT_ORDER


@dataclass
class Pictures:
    title: str
    grid: DeviceGrid
    schedule: Schedule | None  # None when pp == 1
    memory: list  # StageMemory
    usable_gib: float
    comm: list  # CommRow
    step_time_s: float
    gpu: str
    notes: tuple = ()  # what the cost model assumed (Estimate.notes)
    mfu: float = 0.0  # the cost model's model FLOPs utilisation (of the bf16 peak)
    tokens_per_s_per_gpu: float = 0.0
    findings: tuple = ()  # Finding: what `plint check` says of the file, on the page a reviewer reads


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str
    line: int | None
    message: str

    @classmethod
    def of(cls, d) -> "Finding":
        return cls(d.code, d.severity, d.line, d.message)


MAX_GPUS_PER_NODE = 256  # drawn cell by cell; the largest NVLink nodes hold 72


def from_input(inp, est, title: str, order: str | None = None, schedule: str | None = None, findings=()) -> Pictures:
    """The pictures of a cost-model input and its estimate; `schedule` is a what-if schedule name;
    `findings` the file's diagnostics (the unsuppressed ones are drawn)."""
    from plint.cost.estimate import group_links
    from plint.catalog.hardware import lookup_gpu

    if inp.gpus_per_node > MAX_GPUS_PER_NODE or inp.nnodes * inp.gpus_per_node > MAX_GPUS:
        # a node is drawn cell by cell and no machine has this many GPUs: PL506 names the count
        raise ValueError(
            f"{inp.nnodes:,} nodes of {inp.gpus_per_node:,} GPUs is past what plint draws "
            f"(at most {MAX_GPUS_PER_NODE} GPUs per node, {MAX_GPUS:,} in all)"
        )
    gpu = lookup_gpu(inp.gpu)
    if gpu is None:
        raise ValueError(f"no GPU named {inp.gpu!r} in the hardware catalog")
    domain = group_links(inp, gpu).domain
    grid = DeviceGrid(
        inp.nnodes, inp.gpus_per_node, domain, inp.tp, inp.pp, inp.cp, inp.ep, inp.etp, order or DEFAULT_ORDER
    )
    sched = None
    if inp.pp > 1:
        trainer = inp.options.pipeline_schedule
        sched = build_schedule(inp.pp, est.num_microbatches, inp.vpp, schedule or trainer, what_if=schedule is not None)
    bars, usable = stage_bars(inp, est)
    return Pictures(
        title,
        grid,
        sched,
        bars,
        usable,
        comm_rows(inp, est, grid.dense.strides),
        est.step_time_s,
        est.gpu,
        tuple(est.notes),
        est.mfu,
        est.tokens_per_s_per_gpu,
        tuple(Finding.of(d) for d in findings if d.suppressed is None),
    )


def from_layout(layout, title: str, schedule: str | None = None, findings=()) -> Pictures | None:
    """The pictures of a checked layout; None when the cost model cannot cost it (shape or cluster unknown)."""
    from plint.dryrun.groups import read_sizes
    from plint.cost.layout_estimate import uneven_stages, cost_input, layout_estimate, uneven_input

    inp, est = cost_input(layout), layout_estimate(layout)
    if inp is None or est is None:
        return None
    uneven = uneven_stages(layout, inp)
    if uneven:  # draw memory and traffic from the input the estimate costed
        inp = uneven_input(inp, uneven)
    return from_input(inp, est, title, read_sizes(layout).get("order"), schedule, findings)


__all__ = ["CommRow", "Finding", "Pictures", "StageMemory", "from_input", "from_layout"]
