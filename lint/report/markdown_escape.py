"""Markdown from file-derived text: the one escaping every markdown writer uses (the markdown report,
the sticky comment, the review, the pictures' titles). Text shows as written and cannot act: no
emphasis, link, image, HTML tag, table cell, mention, autolink or issue reference comes out of it, in
markdown text and inside raw HTML blocks alike."""

from __future__ import annotations

import re

from plint.report.common import printable


def inline_markdown(text: str) -> str:
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


def inert(document: str) -> str:
    """A markdown document that the Actions runner reads as no workflow command when a step prints it (it
    reads `##[` anywhere in a line, `::` at a line's start: plint.escape): a zero-width space breaks
    each, so it renders the same in text and in code spans."""
    return re.sub(r"(?m)^(\s*):", lambda m: m.group(1) + ":" + ZWSP, document.replace("##[", "##" + ZWSP + "["))
