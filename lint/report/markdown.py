"""A pull-request comment body (also the GitHub step summary): a `<!-- plint -->` marker so a bot can
update one comment in place, a summary table, findings grouped by file, and for each rule that fired a
collapsed `<details>` block with why it matters and how to fix it."""

from __future__ import annotations

import os

from plint.report.common import counts, docs_url, visible, where

MARKER = "<!-- plint -->"
ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}
MAX_CHARS = 60_000  # a GitHub comment holds 65,536 characters; the rest is left to the JSON report


def render(results) -> str:
    c = counts(results)
    sha = os.environ.get("GITHUB_SHA", "")
    out = [MARKER, f"## plint{f' ({sha[:7]})' if sha else ''}", "",
           "| files | errors | warnings | info |", "|---:|---:|---:|---:|",
           f"| {c['files']} | {c['error']} | {c['warning']} | {c['info']} |", ""]
    if c["suppressed"]:
        out += [f"{c['suppressed']} suppressed finding(s) not shown.", ""]
    pairs = visible(results, errors_first=False)
    if not pairs:
        return "\n".join(out + ["No findings."]) + "\n"
    by_file: dict[str, list] = {}
    for _, d in pairs:
        by_file.setdefault(d.path, []).append(d)
    size = sum(len(line) + 1 for line in out)
    shown = 0
    for path, diagnostics in by_file.items():
        block = [f"### `{path}`", ""]
        for d in diagnostics:
            block.append(f"- {ICON.get(d.severity, '')} **{d.code}** `{d.name}` ({d.severity}) at "
                         f"`{where(d)}`: {_inline(d.message)}")
        block.append("")
        cost = sum(len(line) + 1 for line in block)
        if size + cost > MAX_CHARS:
            out += [f"… and {len(pairs) - shown} more finding(s): see `plint check --format json`.", ""]
            break
        out += block
        size += cost
        shown += len(diagnostics)
    out += rule_details(sorted({d.code for _, d in pairs}))
    return "\n".join(out).rstrip("\n") + "\n"


def rule_details(codes: list[str]) -> list[str]:
    from plint.rules.base import all_rules

    rules = all_rules()
    out = []
    for code in codes:
        rule = rules.get(code)
        if rule is None:
            continue
        out += [f"<details><summary>{code} {rule.name}: {_inline(rule.summary)}</summary>", "",
                _inline(rule.docs.why), "", f"**Fix:** {_inline(rule.docs.fix)}", "",
                f"[Documentation]({docs_url(code)})", "", "</details>", ""]
    return out


def _inline(text: str) -> str:
    """One line of markdown that cannot open HTML tags (code spans are left as written: they show
    `<` literally)."""
    parts = " ".join(text.split()).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans
        parts = ["\\`".join(parts)]
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(parts))
