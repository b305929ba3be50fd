"""Plain text: one line per diagnostic (`path:line:col: CODE [severity] message`) and a layout line.

The rich renderer with source snippets comes with the rule engine; this one imports nothing heavy.
"""

from __future__ import annotations

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


def render(results, concise: bool = False) -> str:
    lines = []
    for r in results:
        for layout in r.layouts:
            lines.append(f"{r.path}: {_layout_line(layout)}")
        for d in (x for x in r.diagnostics if x.suppressed is None):
            where = f"{d.path}:{d.line}:{d.col}" if d.line else d.path
            lines.append(f"{where}: {d.code} [{d.severity}] {d.message}")
    s = summary(results)
    lines.append(f"{s['files']} file(s) checked: {s['error']} error(s), {s['warning']} warning(s), "
                 f"{s['info']} info")
    return "\n".join(lines)
