"""The pictures in markdown (the pull-request comment and `--format markdown`): the device grid as
compact text in a code block inside a collapsed <details>, and the schedule as a mermaid gantt when it
is small enough for GitHub to draw."""

from __future__ import annotations

from plint.pictures.terminal import bubble_line, schedule_title
from plint.pictures.text_grid import grid_lines

MAX_LAYOUTS = 3  # a comment shows the pictures of the first few launches
MAX_GANTT_BLOCKS = 160


def pictures_markdown(p) -> list[str]:
    from plint.report.markdown_escape import escape

    out = [
        f"<details><summary>Device grid: {p.grid.world:,} GPUs ({escape(p.title)})</summary>",
        "",
        "```text",
        *grid_lines(p.grid),
        "```",
    ]
    s = p.schedule
    if s is not None:
        out += ["", f"{schedule_title(s)}: {bubble_line(s)}"]
        if s.blocks and len(s.blocks) <= MAX_GANTT_BLOCKS:
            out += ["", "```mermaid", *gantt_lines(s), "```"]
    return out + ["", "</details>", ""]


def gantt_lines(s) -> list[str]:
    """The schedule as a mermaid gantt, one row per stage (compact display mode), times in integer
    milliseconds since the epoch: mermaid 11.x/12.x read a timestamp start as `new Date(Number(str))`
    (milliseconds) whatever the format while `dateFormat X` reads the end in seconds, so under `X` every
    block starts near 0 (ganttDb.getStartDate in mermaid 12.3.0's packages/mermaid/src/diagrams/gantt).
    Under `x` start and end are both milliseconds; the axis prints them back with d3's `%Q`."""
    out = ["---", "displayMode: compact", "---", "gantt", "  dateFormat x", "  axisFormat %Q"]
    scale = 6 * max(1, s.vpp)  # integer ticks: B = 2F, chunks of 1/v
    for stage, row in enumerate(s.rows()):
        out.append(f"  section stage {stage}")
        for b in row:
            tag = "crit, " if b.kind == "B" else ("done, " if b.kind == "W" else "")
            chunk = f" c{b.chunk}" if s.vpp > 1 else ""
            out.append(f"  {b.kind}{b.microbatch}{chunk} :{tag}{round(b.start * scale)}, {round(b.end * scale)}")
    return out


def layouts_markdown(results) -> list[list[str]]:
    """The pictures of each file's layouts that the cost model can cost (first MAX_LAYOUTS), one list
    of lines per launch."""
    from plint.pictures import from_layout

    out: list[list[str]] = []
    for result in results:
        for layout in getattr(result, "layouts", []):
            if len(out) >= MAX_LAYOUTS:
                return out
            try:
                p = from_layout(layout, str(result.path))
            except ValueError:  # sizes Megatron would refuse: the rules already say so
                p = None
            if p is not None:
                out.append(pictures_markdown(p))
    return out
