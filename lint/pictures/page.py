"""The pictures as one SVG, or one self-contained HTML page around it (nothing fetched, no script):
geometry is computed here, the markup lives in templates/pictures.svg.j2 and pictures.html.j2. Every
GPU is a <g data-rank>, every schedule row a <g data-stage>, and each has an SVG <title> tooltip."""

from __future__ import annotations

from pathlib import Path

from plint.pictures.terminal import bubble_line, human_bytes, schedule_title
from plint.report.common import printable
from plint.pictures.text_grid import EXPOSED_NOTE, crossing_lines, fold_line, grid_header, speed_line

STAGE_FILLS = ("#8ecae6", "#b7e4c7", "#ffe8a3", "#e0c3fc", "#a9c5f5", "#c7f0ec", "#f5d0a9", "#d8e2dc")
ERROR = "#d62828"
PART_FILLS = {
    "weights": "#4361ee",
    "grads": "#4cc9f0",
    "optimizer": "#b5179e",
    "activations": "#f4a261",
    "other": "#adb5bd",
}
BLOCK_FILLS = {"F": "#2a9d8f", "B": "#e76f51", "W": "#8d99ae"}
BLOCK_NAMES = {"F": "forward", "B": "backward", "W": "weight gradient"}
IDLE = "#d9d9d9"
SEVERITY_FILLS = {"error": ERROR, "warning": "#b5651d", "info": "#1d4e89"}
MAX_FINDINGS = 12  # the page lists this many of the file's findings; `plint check` has them all
FINDING_CHARS = 140  # a finding's line on the page (its tooltip has the whole message)
CELL_W, ROW_H, LEFT = 74, 40, 80
SCHED_W, MEM_W = 900, 600


def _env():
    import jinja2

    import plint.templates
    from plint.escape import html

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(plint.templates.__file__).parent)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=html,
    )


def render_page(p, fmt: str = "html") -> str:
    env = _env()
    svg = env.get_template("pictures.svg.j2").render(**_view(p))
    if fmt == "svg":
        return svg
    from markupsafe import Markup

    return env.get_template("pictures.html.j2").render(title=p.title, svg=Markup(svg))


def _view(p) -> dict:
    g = p.grid
    y: float = 40
    findings = _findings_view(p, y)
    more = len(p.findings) - len(findings)
    if p.findings:
        y += 14 * (len(findings) + 1 + (more > 0)) + 16
    grid_y = y + 6
    nodes, node_y, y = _nodes_view(g, grid_y + 16)
    outlines = tp_outlines(g, node_y)
    lines = crossing_lines(g)
    crossing_y = y + 12
    y = crossing_y + 14 * len(lines) + 24
    width = max(LEFT + g.gpus_per_node * CELL_W + 20, LEFT + SCHED_W + 40, 1000)
    schedule, y = _schedule_view(p.schedule, y)
    y += 24
    memory_y = y
    top = max([p.usable_gib] + [b.total for b in p.memory])
    scale = MEM_W / top if top else 0
    label_w = 130
    bars, y = _memory_bars(p, y, LEFT + label_w - 80, scale)
    memory_end = y
    legend = [{"name": k, "fill": v, "x": LEFT + i * 110} for i, (k, v) in enumerate(PART_FILLS.items())]
    y += 64
    comm = [["axis", "collective", "how often", "bytes/step/GPU", "link", "exposed time", "share"]]
    comm += [
        [
            r.label,
            r.collective,
            r.how_often,
            human_bytes(r.bytes_per_step),
            r.link,
            f"{r.time_s * 1e3:,.1f} ms",
            f"{r.share:.1%}",
        ]
        for r in p.comm
    ]
    comm_x = [10, 96, 310, 660, 780, 860, 960]
    height = y + 16 * len(comm) + 40
    return {
        "width": max(width, 1000),
        "height": height,
        "title": f"{p.title} ({p.gpu})",
        "summary": speed_line(p),
        "findings": findings,
        "more_findings": more,
        "more_y": 40 + 14 * (len(findings) + 1),
        "grid_y": grid_y,
        "grid_header": grid_header(g),
        "nodes": nodes,
        "outlines": outlines,
        "cell_w": CELL_W,
        "crossing_lines": lines,
        "crossing_y": crossing_y,
        "error": ERROR,
        "schedule": schedule,
        "memory": bars,
        "memory_y": memory_y,
        "memory_end": memory_end,
        "usable": f"{p.usable_gib:.1f}",
        "usable_x": LEFT + label_w - 80 + p.usable_gib * scale,
        "legend": legend,
        "comm": comm,
        "comm_x": comm_x,
        "comm_y": y,
        "comm_note": EXPOSED_NOTE,
        "step": f"{p.step_time_s:.3f}",
    }


def _findings_view(p, y: float) -> list[dict]:
    """The findings listed above the grid (at most MAX_FINDINGS, each cut to FINDING_CHARS)."""
    findings = []
    for i, f in enumerate(p.findings[:MAX_FINDINGS]):
        text = f"{f.code} {f.severity}" + (f" line {f.line}" if f.line else "") + f": {printable(f.message)}"
        findings.append(
            {
                "full": text,
                "text": text if len(text) <= FINDING_CHARS else text[: FINDING_CHARS - 1] + "…",
                "fill": SEVERITY_FILLS.get(f.severity, "#333"),
                "y": y + 14 * (i + 1),
            }
        )
    return findings


def _nodes_view(g, y: float) -> tuple[list[dict], dict, float]:
    """The grid's rows from `y` down: each node shown with its GPUs, or a fold line for nodes left out;
    the rows, each node's y, and the y below them."""
    nodes: list[dict] = []
    node_y: dict = {}
    for node in g.shown_nodes():
        if node is None:
            nodes.append({"fold": fold_line(g), "y": y})
            y += 22
            continue
        node_y[node] = y
        cells = []
        for cell in g.node_cells(node):
            x = LEFT + cell.local * CELL_W
            cells.append(
                {
                    "rank": cell.rank,
                    "local": cell.local,
                    "coords": cell.coords,
                    "crossing": cell.crossing,
                    "x": x,
                    "fill": STAGE_FILLS[cell.coords["pp"] % len(STAGE_FILLS)],
                    "stroke": ERROR if cell.crossing else "#555",
                }
            )
        nodes.append({"node": node, "y": y, "cells": cells})
        y += ROW_H
    return nodes, node_y, y


def _memory_bars(p, y: float, left: float, scale: float) -> tuple[list[dict], float]:
    """One bar per memory estimate from `y` down, its parts side by side from `left`; the bars and the y below."""
    bars = []
    for bar in p.memory:
        x, parts = left, []
        for name, gib in bar.gib.items():
            parts.append({"name": name, "gib": f"{gib:.1f}", "x": x, "w": gib * scale, "fill": PART_FILLS[name]})
            x += gib * scale
        bars.append(
            {
                "label": bar.label,
                "y": y,
                "parts": parts,
                "end": x,
                "total": f"{bar.total:.1f}",
                "over": bar.total > p.usable_gib,
            }
        )
        y += 24
    return bars, y


def tp_outlines(g, node_y: dict) -> list[dict]:
    """One outline per drawn TP group, as one polygon even where the group wraps from one node's row to the
    next (a group of 16 on 8-GPU nodes is one group across two rows, not two); red when it leaves NVLink.
    A group is a run of consecutive ranks when tp is the innermost axis (Megatron's orders put it first);
    otherwise its ranks interleave with others' and no outline is drawn (the cells' tp coordinate says it)."""
    if g.dense.strides["tp"] != 1:
        return []
    n = g.gpus_per_node
    out = []
    for first, last in _drawn_runs(g, node_y):
        low = first - first % g.tp
        while low <= last:
            r0, r1 = max(low, first), min(low + g.tp - 1, last)
            out.append(
                {
                    "points": _run_polygon(r0, r1, n, node_y),
                    "stroke": ERROR if g.crosses("tp", low) else "#222",
                    "low": low,
                }
            )
            low += g.tp
    return out


def _drawn_runs(g, node_y: dict) -> list[tuple[int, int]]:
    """(first rank, last rank) of each run of consecutive drawn nodes."""
    runs: list[tuple[int, int]] = []
    for node in sorted(node_y):
        first, last = node * g.gpus_per_node, (node + 1) * g.gpus_per_node - 1
        if runs and runs[-1][1] + 1 == first:
            runs[-1] = (runs[-1][0], last)
        else:
            runs.append((first, last))
    return runs


def _run_polygon(r0: int, r1: int, n: int, node_y: dict) -> str:
    """SVG points around ranks r0..r1 laid out n to a row (row-major): a rectangle on one row, a
    staircase around the rows it wraps over."""

    def x(col: int) -> float:
        return LEFT + col * CELL_W - 2

    row0, col0, row1, col1 = r0 // n, r0 % n, r1 // n, r1 % n
    top0, bottom1 = node_y[row0] - 2, node_y[row1] + 32
    if row0 == row1:
        pts = [(x(col0), top0), (x(col1 + 1), top0), (x(col1 + 1), bottom1), (x(col0), bottom1)]
    else:
        above_last, below_first = node_y[row1] - 2, node_y[row0] + 32
        pts = [
            (x(col0), top0),
            (x(n), top0),
            (x(n), above_last),
            (x(col1 + 1), above_last),
            (x(col1 + 1), bottom1),
            (x(0), bottom1),
            (x(0), below_first),
            (x(col0), below_first),
        ]
    return " ".join(f"{px:g},{py:g}" for px, py in pts)


def _schedule_view(s, y: float) -> tuple[dict | None, float]:
    """The schedule's rows (one per stage, or per stage and model chunk when interleaved, so chunks do
    not blur into stripes), each block labelled with its micro-batch where it is wide enough, a legend."""
    if s is None:
        return None, y
    y += 10
    v = max(1, s.vpp)
    row_h = 18 if v == 1 else 13
    scale = SCHED_W / s.span if s.span else 0
    stages = []
    for stage, blocks in enumerate(s.rows()):
        rows = []
        for chunk in range(v):
            rows.append(
                {
                    "chunk": chunk,
                    "y": y,
                    "h": row_h - 1,
                    "blocks": [
                        {
                            "x": LEFT + b.start * scale,
                            "w": max(0.5, (b.end - b.start) * scale),
                            "fill": BLOCK_FILLS[b.kind],
                            "mb": b.microbatch,
                            "text": (b.end - b.start) * scale >= 6 + 6 * len(str(b.microbatch)),
                            "label": f"{BLOCK_NAMES[b.kind]} of micro-batch {b.microbatch}"
                            + (f", chunk {b.chunk}" if v > 1 else ""),
                        }
                        for b in blocks
                        if b.chunk == chunk
                    ],
                }
            )
            y += row_h
        stages.append({"stage": stage, "y": rows[0]["y"], "rows": rows})
        y += 4 if v > 1 else 0
    kinds = [k for k in BLOCK_NAMES if any(b.kind == k for b in s.blocks)]
    legend: list[dict[str, object]] = [{"fill": BLOCK_FILLS[k], "name": f"{k} {BLOCK_NAMES[k]}"} for k in kinds]
    legend.append({"fill": IDLE, "name": "idle (bubble)"})
    for i, item in enumerate(legend):
        item["x"] = LEFT + i * 150
    legend_y = y + 4
    key = "number in a block = its micro-batch" + (
        f"; c0-c{v - 1} = model chunk (virtual stage), one row each" if v > 1 else ""
    )
    y = legend_y + 28
    note = s.not_drawn
    view = {
        "title": schedule_title(s),
        "bubble_line": bubble_line(s),
        "stages": stages,
        "x0": LEFT,
        "w": SCHED_W,
        "y": stages[0]["y"],
        "note": note,
        "note_y": y + 4,
        "legend": legend,
        "legend_y": legend_y,
        "key": key,
        "chunked": v > 1,
    }
    return view, y + (24 if note else 10)
