"""The device grid and the schedule as plain text (markdown code blocks, and the rows the terminal
renderer colours): one line per node, each GPU `rank:tp.cp.ep.dp.pp`, TP groups in brackets, a `!`
after a GPU whose NVLink-bound group leaves its NVLink domain; and the lines every renderer prints
alike (the speed line, the exposed-time note)."""

from __future__ import annotations

from plint.pictures.grid import FOLD_HEAD, Cell, DeviceGrid

CONTINUED = "~"  # a TP group that goes on to the next node's line (or comes from the previous one)
GRID_KEY = (
    f"cell = rank:tp.cp.ep.dp.pp, [ ] = one TP group ({CONTINUED} = continued on the next node), "
    "! = group leaves NVLink"
)
EXPOSED_NOTE = (
    "exposed time: what the step waits for on each axis after overlap (cost model), not how long its transfers take"
)


def speed_line(p) -> str:
    """The cost model's verdict a reviewer looks for first: step time, MFU and tokens per second."""
    return (
        f"step {p.step_time_s:.3f} s, MFU {100 * p.mfu:.1f}% of the bf16 peak, "
        f"{p.tokens_per_s_per_gpu:,.0f} tokens/s per GPU ({p.grid.world * p.tokens_per_s_per_gpu:,.0f} in all) "
        "(cost model)"
    )


def cell_text(cell) -> str:
    c = cell.coords
    return f"{cell.rank}:{c['tp']}.{c['cp']}.{c['ep']}.{c['dp']}.{c['pp']}{'!' if cell.crossing else ''}"


def node_line(grid: DeviceGrid, node: int, width: int) -> list[tuple[str, Cell | None]]:
    """(text, cell or None) pieces of one node's line; brackets open and close each TP group."""
    pieces: list[tuple[str, Cell | None]] = [(f"node {node:>{width}} ", None)]
    cells = grid.node_cells(node)
    for i, cell in enumerate(cells):
        low, high = grid.tp_bounds(cell.rank)
        pieces.append((("[" if cell.rank == low else CONTINUED) if cell.tp_group_start else " ", None))
        pieces.append((cell_text(cell), cell))
        if i + 1 == len(cells) or cells[i + 1].tp_group_start:
            pieces.append(("]" if cell.rank == high or i + 1 < len(cells) else CONTINUED, None))
    return pieces


def fold_line(grid: DeviceGrid) -> str:
    n = grid.folded_nodes()
    return (
        f"... {n:,} more nodes ({n * grid.gpus_per_node:,} GPUs, ranks "
        f"{FOLD_HEAD * grid.gpus_per_node:,}-{(grid.nodes - 1) * grid.gpus_per_node - 1:,}) folded"
    )


def grid_header(grid: DeviceGrid) -> str:
    return (
        f"{grid.world:,} GPUs = {grid.nodes:,} nodes x {grid.gpus_per_node}; tp={grid.tp} cp={grid.cp} "
        f"ep={grid.ep} dp={grid.dp} pp={grid.pp} ({grid.order}); NVLink domain {grid.domain} GPUs"
    )


def crossing_lines(grid: DeviceGrid) -> list[str]:
    out = [
        f"{c.kind} groups of {c.size}: {c.crossing:,} of {c.of:,} leave the NVLink domain of {grid.domain}"
        for c in grid.crossings()
    ]
    return out or ["every tp/cp/ep group stays inside one NVLink domain"]


def grid_lines(grid: DeviceGrid) -> list[str]:
    width = len(str(grid.nodes - 1))
    lines = [grid_header(grid), GRID_KEY]
    for node in grid.shown_nodes():
        lines.append(fold_line(grid) if node is None else "".join(t for t, _ in node_line(grid, node, width)))
    return lines + crossing_lines(grid)


def schedule_lines(schedule, width: int = 96) -> list[str]:
    """One line per stage: F/B/W letters scaled to `width` columns, `.` idle."""
    span = schedule.span
    if not span:
        return []
    scale = width / span
    lines = []
    for s, row in enumerate(schedule.rows()):
        chars = ["."] * width
        for b in row:
            for x in range(int(b.start * scale), max(int(b.start * scale) + 1, int(b.end * scale))):
                chars[min(x, width - 1)] = b.kind if b.kind != "F" or b.chunk == 0 else "f"
        lines.append(f"stage {s:>{len(str(schedule.pp - 1))}} |{''.join(chars)}|")
    return lines
