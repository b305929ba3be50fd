"""The pictures in the terminal (rich): grid cells coloured by pipeline stage, crossing groups in the
error colour, the schedule's F/B/W letters, memory bars and the communication table."""

from __future__ import annotations

import io

from plint.report.common import printable
from plint.pictures.text_grid import (
    CONTINUED,
    EXPOSED_NOTE,
    crossing_lines,
    fold_line,
    grid_header,
    node_line,
    schedule_lines,
    speed_line,
)

STAGE_COLOURS = ("cyan", "green", "yellow", "magenta", "blue", "bright_cyan", "bright_green", "bright_yellow")
ERROR = "bold red"
PART_COLOURS = {"weights": "blue", "grads": "cyan", "optimizer": "magenta", "activations": "yellow", "other": "white"}
# one glyph per part as well as a colour: piped (no colour) the bars and the legend still tell them apart
PART_GLYPHS = {"weights": "█", "grads": "▓", "optimizer": "▒", "activations": "░", "other": "·"}
BAR = 60


def schedule_title(schedule) -> str:
    what = f"{schedule.name}" + (f", vpp={schedule.vpp}" if schedule.vpp > 1 else "")
    label = f"Pipeline schedule: {what}, {schedule.num_microbatches} micro-batches"
    if schedule.what_if:
        label += " (what-if: needs a trainer that runs this schedule)"
    return label


def bubble_line(schedule) -> str:
    shown = (
        ""
        if schedule.drawn_microbatches == schedule.num_microbatches
        else f"; drawn with {schedule.drawn_microbatches} micro-batches"
    )
    return f"bubble {schedule.bubble:.1%} of the ideal step (cost model){shown}"


def render_text(p, color: bool = True) -> str:
    from rich.console import Console
    from plint.escape import terminal as escape
    from rich.table import Table

    buf = io.StringIO()
    console = Console(
        file=buf, force_terminal=color, no_color=not color, width=240, highlight=False, emoji=False
    )  # `:smile:` in a file name stays text
    g = p.grid
    console.print(f"[bold]{escape(p.title)}[/bold]  ({escape(p.gpu)})")
    console.print(speed_line(p))
    for f in p.findings:
        style = ERROR if f.severity == "error" else "yellow" if f.severity == "warning" else "cyan"
        where = f" line {f.line}" if f.line else ""
        console.print(f"[{style}]{f.code} {f.severity}{where}[/{style}]: {escape(printable(f.message))}")
    console.print(f"\n[bold]Device grid[/bold]: {grid_header(g)}")
    console.print(
        f"cell = rank:tp.cp.ep.dp.pp, colour = pipeline stage, [ ] = one TP group ({CONTINUED} = continued "
        f"on the next node), [{ERROR}]red ![/{ERROR}] = group leaves NVLink"
    )
    width = len(str(g.nodes - 1))
    for node in g.shown_nodes():
        if node is None:
            console.print(fold_line(g))
            continue
        parts = []
        for text, cell in node_line(g, node, width):
            style = (
                ERROR
                if cell is not None and cell.crossing
                else STAGE_COLOURS[cell.coords["pp"] % len(STAGE_COLOURS)]
                if cell is not None
                else ""
            )
            parts.append(f"[{style}]{escape(text)}[/{style}]" if style else escape(text))
        console.print("".join(parts))
    for line in crossing_lines(g):
        console.print(f"[{ERROR}]{line}[/{ERROR}]" if "leave" in line else line)
    s = p.schedule
    if s is not None:
        console.print(f"\n[bold]{escape(schedule_title(s))}[/bold]: {bubble_line(s)}")
        if s.blocks:
            console.print("F forward (f: later chunks), B backward, W weight gradient, . idle")
            for line in schedule_lines(s):
                console.print(escape(line))
        else:
            console.print(escape(s.not_drawn))
    console.print(f"\n[bold]Memory per GPU[/bold] against {p.usable_gib:.1f} GiB usable")
    for bar in p.memory:
        scale = BAR / max(p.usable_gib, bar.total)
        cells = "".join(
            f"[{PART_COLOURS[k]}]{PART_GLYPHS[k] * round(v * scale)}[/{PART_COLOURS[k]}]" for k, v in bar.gib.items()
        )
        over = f" [{ERROR}]over[/{ERROR}]" if bar.total > p.usable_gib else ""
        console.print(f"{bar.label:<18} {cells} {bar.total:.1f} GiB{over}")
    console.print("  " + "  ".join(f"[{c}]{PART_GLYPHS[k]}[/{c}] {k}" for k, c in PART_COLOURS.items()))
    table = Table(title="Communication per step", title_justify="left")
    for col in ("axis", "collective", "how often", "bytes/step/GPU", "link", "exposed time", "share of step"):
        table.add_column(col)
    for r in p.comm:
        table.add_row(
            r.label,
            r.collective,
            r.how_often,
            human_bytes(r.bytes_per_step),
            r.link,
            f"{r.time_s * 1e3:,.1f} ms",
            f"{r.share:.1%}",
        )
    console.print()
    console.print(table if p.comm else "no communication: one GPU")
    if p.comm:
        console.print(EXPOSED_NOTE)
    console.print(f"step {p.step_time_s:.3f} s (cost model)")
    for note in p.notes:
        console.print(f"note: {escape(note)}")
    return buf.getvalue()


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"
