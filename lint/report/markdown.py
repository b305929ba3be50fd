"""A pull-request comment body (also the GitHub step summary): a `<!-- plint -->` marker so a bot can
update one comment in place, a summary table, findings grouped by file, and for each rule that fired a
collapsed `<details>` block with why it matters and how to fix it."""

from __future__ import annotations

import os
import re

from plint.report.common import counts, docs_url, printable, visible, where

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
    head = [MARKER, f"## plint{f' ({sha[:7]})' if sha else ''}", "",
            "| files | errors | warnings | info |", "|---:|---:|---:|---:|",
            f"| {c['files']} | {c['error']} | {c['warning']} | {c['info']} |", ""]
    if c["suppressed"]:
        head += [f"{c['suppressed']} suppressed finding(s) not shown.", ""]
    drawn = _within(picture_blocks(results), "launch(es) not drawn", "plint show")
    pairs = visible(results, errors_first=False)
    if not pairs:
        return "\n".join(head + drawn + ["No findings."]) + "\n"
    details = _within(rule_blocks(sorted({d.code for _, d in pairs})), "rule(s) not explained", "plint explain CODE")
    budget = LIMIT - RESERVE - size_of(head) - size_of(drawn) - size_of(details)
    return "\n".join(head + drawn + _findings(pairs, budget) + details).rstrip("\n") + "\n"


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
            block.append(f"- {ICON.get(d.severity, '')} **{d.code}** `{d.name}` ({d.severity}) at "
                         f"{code_span(where(d))}: {_inline(d.message)}")
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
            return out + [f"({len(blocks) - i} {what} here, to stay within GitHub's {LIMIT:,} characters: "
                          f"see `{command}`)", ""]
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
    return [[f"<details><summary>{code} {rules[code].name}: {in_html(rules[code].summary)}</summary>", "",
             _docs(rules[code].docs.why), "", f"**Fix:** {_docs(rules[code].docs.fix)}", "",
             f"[Documentation]({docs_url(code)})", "", "</details>", ""] for code in codes if code in rules]


def _docs(text: str) -> str:
    """plint's own rule docs (markdown as written) as one line that cannot open HTML tags; code spans
    are left as written: they show `<` literally."""
    parts = " ".join(text.split()).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans
        parts = ["\\`".join(parts)]
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(parts))


def _inline(text: str) -> str:
    """File-derived text as one line of markdown that renders as written: its backtick-delimited parts
    as code spans (literal), everything else escaped (see `escape`)."""
    return _spans(text, code_span)


def in_html(text: str) -> str:
    """Text for a place where markdown is not parsed, inside a raw HTML block such as `<summary>`
    (CommonMark's HTML blocks, GFM too): backslash escapes and code spans would show as typed there,
    so its backtick-delimited parts become `<code>` elements and the rest `escape`'s entities, which
    markdown and HTML both decode."""
    return _spans(text, lambda p: f"<code>{escape(' '.join(printable(p).split()))}</code>")


def _spans(text: str, code) -> str:
    parts = " ".join(printable(text).split()).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans
        parts = ["`".join(parts)]
    return "".join((code(p) if p.strip() else "") if i % 2 else escape(p) for i, p in enumerate(parts))


# Markdown and HTML syntax, written as numeric character references: CommonMark decodes them to text that
# never acts as syntax, and so does HTML, so one escaping serves markdown text and raw HTML blocks alike
# (a backslash escape shows as typed inside `<summary>`, where markdown is not parsed).
_SYNTAX = re.compile(r"[\\`*_\[\]~|<>&]")
# What GitHub links or notifies on its own, even in text decoded from references: mentions (@name,
# @org/team), URLs (http://, www.), emails (a@b.c), issue references (#12). A zero-width space breaks
# each; it renders as nothing.
_NAMED_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_AUTOLINK = re.compile(r"@(?=[A-Za-z0-9_-])|:(?=//)|(?i:www)(?=\.)|#(?=\d)")
ZWSP = "\u200b"


def escape(text: str) -> str:
    """Plain text that markdown (inline or inside an HTML block) shows as written: no emphasis, link,
    image, HTML tag, table cell, mention, autolink or issue reference can come out of it."""
    text = _AUTOLINK.sub(lambda m: m.group() + ZWSP, printable(text))
    return _SYNTAX.sub(lambda m: _NAMED_ENTITY.get(m.group(), f"&#{ord(m.group())};"), text)


def code_span(text: str) -> str:
    """text as one code span (literal: no markdown, HTML, mention or link inside) that it cannot end
    early: the fence is one backtick longer than its longest run of backticks."""
    text = " ".join(printable(text).split())
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
