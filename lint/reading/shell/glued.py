"""One bash word that tree-sitter-bash parsed as several adjacent arguments.

tree-sitter-bash (0.25) ends a word at a `$` it cannot attach: `--export=ALL,TP=$TP,PP=$PP,G=$G` comes back as
`--export=ALL,TP=$TP,PP=$` and `PP,G=$G`, two arguments with nothing between them. bash reads one word, with
`$PP` a parameter expansion. Arguments that touch are joined here into one node for the expander, and a `$`
that ends one part right before a name that starts the next is made the expansion bash sees.
"""

from __future__ import annotations

import re

from plint.reading.shell.state import SpanNode

# what bash reads after a bare `$`: a name, or one digit (`$12` is `${1}2`; `$1/$2` comes back as `$1/$` and `2`)
_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|[0-9]")


class _Part:
    """A stand-in for a tree-sitter node over bytes [start, end) of the unit: what the expander reads of one."""

    is_named = True

    def __init__(self, type_: str, start: int, end: int, text: bytes, children: list | None = None):
        self.type = type_
        self.start_byte = start
        self.end_byte = end
        self.text = text
        self.children = children or []
        self.named_children = [c for c in self.children if c.type != "$"]

    def child_by_field_name(self, name: str):
        return None


def glued_groups(nodes) -> list[list]:
    """The arguments, those that touch (one ends where the next starts) grouped as one word."""
    groups: list[list] = []
    for n in nodes:
        last = groups[-1][-1] if groups else None
        if last is not None and last.end_byte == n.start_byte and not (_redirect(last) or _redirect(n)):
            groups[-1].append(n)
        else:
            groups.append([n])
    return groups


def _redirect(node) -> bool:
    return node.type.endswith("_redirect")


def joined(group: list, data: bytes) -> SpanNode:
    """One node over a group of touching arguments; a trailing bare `$` and the name after it become `$NAME`."""
    parts = [c for n in group for c in (n.children if n.type == "concatenation" else [n])]
    out: list = []
    i = 0
    while i < len(parts):
        part = parts[i]
        nxt = parts[i + 1] if i + 1 < len(parts) else None
        name = _NAME.match(data, nxt.start_byte) if nxt is not None and nxt.type in ("word", "number") else None
        if part.type == "$" and nxt is not None and name is not None and part.end_byte == name.start():
            if name.end() > nxt.end_byte:  # the name runs on into the next part: not one tree-sitter cut
                out.append(part)
                i += 1
                continue
            dollar = _Part("$", part.start_byte, part.end_byte, b"$")
            variable = _Part("variable_name", name.start(), name.end(), name.group())
            out.append(_Part("simple_expansion", part.start_byte, name.end(), b"$" + name.group(), [dollar, variable]))
            if name.end() < nxt.end_byte:
                out.append(_Part("word", name.end(), nxt.end_byte, data[name.end() : nxt.end_byte]))
            i += 2
            continue
        out.append(part)
        i += 1
    return SpanNode(out, group[0].start_byte, group[-1].end_byte)
