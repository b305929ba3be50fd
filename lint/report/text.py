"""Terminal output: for each finding the code, the source line with a caret under the exact span, the
message (it carries the numbers) and the docs link; `--concise` gives one line per finding. Colour
(rich) only when writing to a terminal, so pre-commit and CI logs stay plain and rich stays unimported."""

from __future__ import annotations

import os
import sys

from plint.report.common import docs_url, visible
from plint.report.json_report import summary


def _layout_line(layout) -> str:
    v = layout.value
    parts = [f"launcher={v('launcher') or '-'}", f"trainer={v('trainer')}",
             f"nodes={_q(v('cluster.nnodes'))}", f"gpus/node={_q(v('cluster.gpus_per_node'))}",
             f"world={_q(v('cluster.world_size'))}"]
    for axis in ("tp", "pp", "vpp", "cp", "ep", "dp"):
        value = v(f"parallel.{axis}")
        if value is not None:
            parts.append(f"{axis}={value}")
    for key, label in (("batch.micro", "micro"), ("batch.global", "global")):
        if v(key) is not None:
            parts.append(f"{label}={v(key)}")
    return " ".join(parts)


def _q(value) -> str:
    return "?" if value is None else str(value)


class _Lines:
    def __init__(self) -> None:
        self.cache: dict[str, list[str]] = {}

    def get(self, path: str, line: int) -> str | None:
        if path not in self.cache:
            try:
                with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                    self.cache[path] = fh.read().splitlines()
            except OSError:
                self.cache[path] = []
        lines = self.cache[path]
        return lines[line - 1] if 0 < line <= len(lines) else None


def _full(d, lines: _Lines) -> list[tuple[str, str]]:
    """(style, text) lines of one finding."""
    out = [("bold " + {"error": "red", "warning": "yellow", "info": "cyan"}[d.severity],
            f"{d.code} [{d.severity}] {d.name}")]
    out.append(("blue", f"  --> {d.path}:{d.line}:{d.col}" if d.line else f"  --> {d.path}"))
    if d.line:
        text = lines.get(d.path, d.line)
        if text is not None:
            gutter = str(d.line)
            width = (d.end_col - d.col) if d.end_line == d.line and d.end_col and d.end_col > d.col else 1
            out.append(("blue", f"{' ' * len(gutter)} |"))
            out.append(("", f"{gutter} | {text.expandtabs(1)}"))
            out.append(("bold red", f"{' ' * len(gutter)} | {' ' * (d.col - 1)}{'^' * width}"))
    out.append(("", f"  = {d.message}"))
    if d.fix:
        out.append(("green", f"  help: {d.fix.get('description', '')}"))
    out.append(("dim", f"  docs: {docs_url(d.code)}"))
    return out


def _concise(d) -> str:
    where = f"{d.path}:{d.line}:{d.col}" if d.line else d.path
    return f"{where}: {d.code} [{d.severity}] {d.message}"


def render(results, concise: bool = False) -> str:
    s = summary(results)
    closing = (f"{s['files']} file(s) checked: {s['error']} error(s), {s['warning']} warning(s), {s['info']} info"
               + (f", {s['suppressed']} suppressed" if s.get("suppressed") else ""))
    pairs = visible(results)
    if concise:
        return "\n".join([_concise(d) for _, d in pairs] + [closing])
    lines = _Lines()
    blocks: list[list[tuple[str, str]]] = []
    for r in results:
        for layout in r.layouts:
            blocks.append([("dim", f"{r.path}: {_layout_line(layout)}")])
    for _, d in pairs:
        blocks.append(_full(d, lines))
    if pairs and sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        return _coloured(blocks, closing)
    return "\n\n".join("\n".join(text for _, text in block) for block in blocks + [[("", closing)]])


def _coloured(blocks, closing: str) -> str:
    from rich.console import Console
    from rich.text import Text

    console = Console(force_terminal=True, highlight=False, soft_wrap=True)
    with console.capture() as capture:
        for block in blocks:
            for style, text in block:
                console.print(Text(text, style=style or None))
            console.print()
        console.print(Text(closing, style="bold"))
    return capture.get().rstrip("\n")
