"""A pull-request comment body (also the GitHub step summary): a `<!-- plint -->` marker so a bot can
update one comment in place, a summary table, findings grouped by file, and for each rule that fired a
collapsed `<details>` block with why it matters and how to fix it."""

from __future__ import annotations

import os
import re

from plint.report.common import counts, docs_url, printable, visible, where

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
    out += pictures(results)
    pairs = visible(results, errors_first=False)
    if not pairs:
        return "\n".join(out + ["No findings."]) + "\n"
    by_file: dict[str, list] = {}
    for _, d in pairs:
        by_file.setdefault(d.path, []).append(d)
    size = sum(len(line) + 1 for line in out)
    shown = 0
    for path, diagnostics in by_file.items():
        block = [f"### {code_span(path)}", ""]
        for d in diagnostics:
            block.append(f"- {ICON.get(d.severity, '')} **{d.code}** `{d.name}` ({d.severity}) at "
                         f"{code_span(where(d))}: {_inline(d.message)}")
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


def pictures(results) -> list[str]:
    """The device grid (and schedule) of the launches, from plint.pictures (issue 18)."""
    from plint.pictures.markdown import layouts_markdown

    return layouts_markdown(results)


def rule_details(codes: list[str]) -> list[str]:
    from plint.rules.registry import all_rules

    rules = all_rules()
    out = []
    for code in codes:
        rule = rules.get(code)
        if rule is None:
            continue
        out += [f"<details><summary>{code} {rule.name}: {_docs(rule.summary)}</summary>", "",
                _docs(rule.docs.why), "", f"**Fix:** {_docs(rule.docs.fix)}", "",
                f"[Documentation]({docs_url(code)})", "", "</details>", ""]
    return out


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
    parts = " ".join(printable(text).split()).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans
        parts = ["`".join(parts)]
    return "".join((code_span(p) if p.strip() else "") if i % 2 else escape(p) for i, p in enumerate(parts))


# Markdown and HTML syntax, escaped with a backslash (CommonMark: any ASCII punctuation) or as an entity.
_SYNTAX = re.compile(r"[\\`*_\[\]~|<>&]")
_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
# What GitHub links or notifies on its own: mentions (@name, @org/team), URLs (http://, www.), emails
# (a@b.c), issue references (#12). A zero-width space breaks each; it renders as nothing.
_AUTOLINK = re.compile(r"@(?=[A-Za-z0-9_-])|:(?=//)|(?i:www)(?=\.)|#(?=\d)")
ZWSP = "\u200b"


def escape(text: str) -> str:
    """Plain text that markdown shows as written: no emphasis, link, image, HTML tag, table cell,
    mention, autolink or issue reference can come out of it."""
    text = _SYNTAX.sub(lambda m: _ENTITY.get(m.group(), "\\" + m.group()), text)
    return _AUTOLINK.sub(lambda m: m.group() + ZWSP, text)


def code_span(text: str) -> str:
    """text as one code span (literal: no markdown, HTML, mention or link inside) that it cannot end
    early: the fence is one backtick longer than its longest run of backticks."""
    text = " ".join(printable(text).split())
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
