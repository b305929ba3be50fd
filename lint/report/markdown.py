"""A pull-request comment body (also the GitHub step summary): a `<!-- plint -->` marker so a bot can
update one comment in place, a summary table, findings grouped by file, and for each rule that fired a
collapsed `<details>` block with why it matters and how to fix it."""

from __future__ import annotations

import os

from plint.report.common import counts, docs_url, visible, where

# the escaping every markdown writer uses (re-exported: pr_comment and the review import it from here)
from plint.report.markdown_escape import ZWSP, inline_markdown, code_span, escape, in_html, inert  # noqa: F401

MARKER = "<!-- plint -->"
ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}
LIMIT = 65_536  # GitHub's limit on a comment body (and the job summary's page), in characters
RESERVE = 200  # kept for the "more findings" note
MAX_SHARE = LIMIT // 4  # the pictures and the rule details each take at most this much; findings come first


def render(results) -> str:
    """The report, never over LIMIT characters with everything counted: the head, the pictures, as many
    files' findings as fit, the rule details."""
    c = counts(results)
    sha = os.environ.get("GITHUB_SHA", "")
    head = [
        MARKER,
        f"## plint{f' ({sha[:7]})' if sha else ''}",
        "",
        "| files | errors | warnings | info |",
        "|---:|---:|---:|---:|",
        f"| {c['files']} | {c['error']} | {c['warning']} | {c['info']} |",
        "",
    ]
    if c["suppressed"]:
        head += [f"{c['suppressed']} suppressed finding(s) not shown.", ""]
    drawn = _within(picture_blocks(results), "launch(es) not drawn", "plint show")
    pairs = visible(results, errors_first=False)
    if not pairs:
        return inert("\n".join(head + drawn + ["No findings."]) + "\n")
    details = _within(rule_blocks(sorted({d.code for _, d in pairs})), "rule(s) not explained", "plint explain CODE")
    budget = LIMIT - RESERVE - size_of(head) - size_of(drawn) - size_of(details)
    text = inert("\n".join(head + drawn + _findings(pairs, budget) + details).rstrip("\n") + "\n")
    # the zero-width spaces `inert` adds are counted too (a file full of `##[` could need thousands)
    return text if len(text) <= LIMIT else text[: LIMIT - 200] + "\n\n… cut at GitHub's comment limit.\n"


def _findings(pairs, budget: int) -> list[str]:
    """Findings grouped by file, whole files only, as many as `budget` characters hold."""
    by_file: dict[str, list] = {}
    for _, d in pairs:
        by_file.setdefault(d.path, []).append(d)
    out: list[str] = []
    shown = 0
    for path, diagnostics in by_file.items():
        block = [f"### {code_span(path)}", ""]
        for d in diagnostics:
            block.append(
                f"- {ICON.get(d.severity, '')} **{d.code}** `{d.name}` ({d.severity}) at "
                f"{code_span(where(d))}: {inline_markdown(d.message)}"
            )
        block.append("")
        if size_of(out) + size_of(block) > budget:
            return out + [f"… and {len(pairs) - shown} more finding(s): see `plint check --format json`.", ""]
        out += block
        shown += len(diagnostics)
    return out


def _within(blocks: list[list[str]], what: str, command: str) -> list[str]:
    """As many whole blocks as MAX_SHARE characters hold, and a line counting those left out."""
    out: list[str] = []
    for i, block in enumerate(blocks):
        if size_of(out) + size_of(block) > MAX_SHARE - RESERVE:
            return out + [
                f"({len(blocks) - i} {what} here, to stay within GitHub's {LIMIT:,} characters: see `{command}`)",
                "",
            ]
        out += block
    return out


def size_of(lines: list[str]) -> int:
    """Characters of `lines` joined by newlines, with the last newline."""
    return sum(len(line) + 1 for line in lines)


def picture_blocks(results) -> list[list[str]]:
    """The device grid (and schedule) of each launch, from plint.pictures (issue 18)."""
    from plint.pictures.markdown import layouts_markdown

    return layouts_markdown(results)


def rule_details(codes: list[str]) -> list[str]:
    return [line for block in rule_blocks(codes) for line in block]


def rule_blocks(codes: list[str]) -> list[list[str]]:
    """Per rule, a folded block with why it matters and how to fix it."""
    from plint.rules.registry import all_rules

    rules = all_rules()
    return [
        [
            f"<details><summary>{code} {rules[code].name}: {in_html(rules[code].summary)}</summary>",
            "",
            _docs(rules[code].docs.why),
            "",
            f"**Fix:** {_docs(rules[code].fix.text)}",
            "",
            f"[Documentation]({docs_url(code)})",
            "",
            "</details>",
            "",
        ]
        for code in codes
        if code in rules
    ]


def _docs(text: str) -> str:
    """plint's own rule docs (markdown as written) as one line that cannot open HTML tags; code spans
    are left as written: they show `<` literally."""
    parts = " ".join(text.split()).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans
        parts = ["\\`".join(parts)]
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(parts))
