"""The pictures in markdown (the pull-request comment and `--format markdown`): the device grid as
compact text in a code block inside a collapsed <details>, and the schedule as a mermaid gantt when it
is small enough for GitHub to draw."""

from __future__ import annotations

from plint.pictures.terminal import bubble_line, schedule_title
from plint.pictures.text_grid import grid_lines

MAX_LAYOUTS = 3  # a comment shows the pictures of the first few launches
MAX_GANTT_BLOCKS = 160


def pictures_markdown(p) -> list[str]:
    out = [f"<details><summary>Device grid: {p.grid.world:,} GPUs ({p.title})</summary>", "", "```text",
           *grid_lines(p.grid), "```"]
    s = p.schedule
    if s is not None:
        out += ["", f"{schedule_title(s)}: {bubble_line(s)}"]
        if s.blocks and len(s.blocks) <= MAX_GANTT_BLOCKS:
            out += ["", "```mermaid", "gantt", "  dateFormat X", "  axisFormat %s"]
            scale = 6 * max(1, s.vpp)  # integer ticks: B = 2F, chunks of 1/v
            for stage, row in enumerate(s.rows()):
                out.append(f"  section stage {stage}")
                for b in row:
                    tag = "crit, " if b.kind == "B" else ("done, " if b.kind == "W" else "")
                    out.append(f"  {b.kind}{b.microbatch} :{tag}{round(b.start * scale)}, {round(b.end * scale)}")
            out.append("```")
    return out + ["", "</details>", ""]


def layouts_markdown(results) -> list[str]:
    """The pictures of each file's layouts that the cost model can cost (first MAX_LAYOUTS)."""
    from plint.pictures import from_layout

    out, shown = [], 0
    for result in results:
        for layout in getattr(result, "layouts", []):
            if shown >= MAX_LAYOUTS:
                return out
            try:
                p = from_layout(layout, str(result.path))
            except ValueError:  # sizes Megatron would refuse: the rules already say so
                p = None
            if p is not None:
                out += pictures_markdown(p)
                shown += 1
    return out
