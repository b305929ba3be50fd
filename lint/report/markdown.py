"""A pull-request comment body: a marker to update it in place, a summary table, findings by file."""

from __future__ import annotations

from plint.report.common import docs_url, visible
from plint.report.json_report import summary

ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}


def render(results) -> str:
    s = summary(results)
    out = ["<!-- plint -->", "## plint", "",
           "| files | errors | warnings | info |", "|---:|---:|---:|---:|",
           f"| {s['files']} | {s['error']} | {s['warning']} | {s['info']} |", ""]
    pairs = visible(results)
    if not pairs:
        out.append("No findings.")
        return "\n".join(out) + "\n"
    by_file: dict[str, list] = {}
    for _, d in pairs:
        by_file.setdefault(d.path, []).append(d)
    from plint.rules.base import all_rules

    rules = all_rules()
    for path, diags in sorted(by_file.items()):
        out += [f"### `{path}`", ""]
        for d in diags:
            where = f"{d.path}:{d.line}:{d.col}" if d.line else d.path
            out.append(f"- {ICON[d.severity]} **{d.code}** `{d.name}` at `{where}`: {d.message}")
            rule = rules.get(d.code)
            if rule is not None:
                out += ["  <details><summary>Why it matters</summary>", "",
                        f"  {rule.docs.why} ([{d.code}]({docs_url(d.code)}))", "", "  </details>"]
        out.append("")
    return "\n".join(out) + "\n"
