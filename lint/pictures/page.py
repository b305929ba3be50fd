"""The pictures as one SVG, or one self-contained HTML page around it (nothing fetched, no script):
geometry is computed here, the markup lives in templates/pictures.svg.j2 and pictures.html.j2. Every
GPU is a <g data-rank>, every schedule row a <g data-stage>, and each has an SVG <title> tooltip."""

from __future__ import annotations

from pathlib import Path

from plint.pictures.terminal import bubble_line, human_bytes, schedule_title
from plint.pictures.text_grid import crossing_lines, fold_line, grid_header

STAGE_FILLS = ("#8ecae6", "#b7e4c7", "#ffe8a3", "#e0c3fc", "#a9c5f5", "#c7f0ec", "#f5d0a9", "#d8e2dc")
ERROR = "#d62828"
PART_FILLS = {"weights": "#4361ee", "grads": "#4cc9f0", "optimizer": "#b5179e", "activations": "#f4a261",
              "other": "#adb5bd"}
BLOCK_FILLS = {"F": "#2a9d8f", "f": "#76c7bd", "B": "#e76f51", "W": "#8d99ae"}
CELL_W, ROW_H, LEFT = 74, 40, 80
SCHED_W, MEM_W = 900, 600


def _env():
    import jinja2

    import plint.templates
    from plint.report.escape import html

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(plint.templates.__file__).parent)),
                              autoescape=True, undefined=jinja2.StrictUndefined, finalize=html)


def render_page(p, fmt: str = "html") -> str:
    env = _env()
    svg = env.get_template("pictures.svg.j2").render(**_view(p))
    if fmt == "svg":
        return svg
    from markupsafe import Markup

    return env.get_template("pictures.html.j2").render(title=p.title, svg=Markup(svg))


def _view(p) -> dict:
    g = p.grid
    y = 56
    nodes = []
    for node in g.shown_nodes():
        if node is None:
            nodes.append({"fold": fold_line(g), "y": y})
            y += 22
            continue
        cells, outlines, start = [], [], None
        for cell in g.node_cells(node):
            x = LEFT + cell.local * CELL_W
            cells.append({"rank": cell.rank, "local": cell.local, "coords": cell.coords, "crossing": cell.crossing,
                          "x": x, "fill": STAGE_FILLS[cell.coords["pp"] % len(STAGE_FILLS)],
                          "stroke": ERROR if cell.crossing else "#555"})
            if cell.tp_group_start:
                if start is not None:
                    outlines.append(start)
                start = {"x": x - 2, "w": 0, "stroke": ERROR if "tp" in cell.crossing else "#222"}
            start["w"] = x + CELL_W - 2 - start["x"]
        outlines.append(start)
        nodes.append({"node": node, "y": y, "cells": cells, "outlines": outlines})
        y += ROW_H
    lines = crossing_lines(g)
    crossing_y = y + 12
    y = crossing_y + 14 * len(lines) + 24
    width = max(LEFT + g.gpus_per_node * CELL_W + 20, LEFT + SCHED_W + 40, 1000)
    schedule = None
    s = p.schedule
    if s is not None:
        y += 10
        rows, scale = [], SCHED_W / s.span if s.span else 0
        for stage, blocks in enumerate(s.rows()):
            rows.append({"stage": stage, "y": y, "blocks": [
                {"x": LEFT + b.start * scale, "w": max(0.5, (b.end - b.start) * scale),
                 "fill": BLOCK_FILLS["f" if b.kind == "F" and b.chunk else b.kind],
                 "label": f"{ {'F': 'forward', 'B': 'backward', 'W': 'weight gradient'}[b.kind] } of micro-batch "
                          f"{b.microbatch}" + (f", chunk {b.chunk}" if s.vpp > 1 else "")} for b in blocks]})
            y += 22
        note = s.not_drawn
        schedule = {"title": schedule_title(s), "bubble_line": bubble_line(s), "rows": rows, "x0": LEFT,
                    "w": SCHED_W, "y": rows[0]["y"], "note": note, "note_y": y + 4}
        y += 24 if note else 10
    y += 24
    memory_y = y
    top = max([p.usable_gib] + [b.total for b in p.memory])
    scale = MEM_W / top if top else 0
    label_w = 130
    bars = []
    for bar in p.memory:
        x, parts = LEFT + label_w - 80, []
        for name, gib in bar.gib.items():
            parts.append({"name": name, "gib": f"{gib:.1f}", "x": x, "w": gib * scale, "fill": PART_FILLS[name]})
            x += gib * scale
        bars.append({"label": bar.label, "y": y, "parts": parts, "end": x, "total": f"{bar.total:.1f}",
                     "over": bar.total > p.usable_gib})
        y += 24
    memory_end = y
    legend = [{"name": k, "fill": v, "x": LEFT + i * 110} for i, (k, v) in enumerate(PART_FILLS.items())]
    y += 64
    comm = [["axis", "collective", "how often", "bytes/step/GPU", "link", "time", "share"]]
    comm += [[r.label, r.collective, r.how_often, human_bytes(r.bytes_per_step), r.link,
              f"{r.time_s * 1e3:,.1f} ms", f"{r.share:.1%}"] for r in p.comm]
    comm_x = [10, 96, 310, 660, 780, 860, 950]
    height = y + 16 * len(comm) + 20
    return {"width": max(width, 1000), "height": height, "title": f"{p.title} ({p.gpu})", "grid_header": grid_header(g),
            "nodes": nodes, "cell_w": CELL_W, "crossing_lines": lines, "crossing_y": crossing_y, "error": ERROR,
            "schedule": schedule, "memory": bars, "memory_y": memory_y, "memory_end": memory_end,
            "usable": f"{p.usable_gib:.1f}", "usable_x": LEFT + label_w - 80 + p.usable_gib * scale, "legend": legend,
            "comm": comm, "comm_x": comm_x, "comm_y": y, "step": f"{p.step_time_s:.3f}"}
