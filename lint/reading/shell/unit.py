"""A parse unit: bytes handed to tree-sitter, and where each byte came from.

A script file maps onto itself. A string parsed a second time (`eval "$CMD"`, `bash -c '...'`) or a
heredoc body is assembled from pieces of earlier expansions, so its bytes map back to the spans
those pieces carry: a flag inside an eval'd string still points at its original line and column.
Unknown pieces are parsed as a placeholder word and turn back into the unknown piece.
"""

from __future__ import annotations

import bisect
import re

from plint.reading.shell.model import MappedText, Piece
from plint.source import SourceFile, Span

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

PLACEHOLDER = "__plint_unknown_{}__"
_BLANK = Piece(" ", None)  # the blank that keeps a placeholder a word of its own (from_pieces)
_PLACEHOLDER_RE = rb"__plint_unknown_(\d+)__"  # compiled on use (re caches it): few units have unknowns


class Unit:
    def __init__(
        self,
        data: bytes,
        segments: list[tuple[int, int, Piece]],
        source: SourceFile,
        unknowns: list[Piece] | None = None,
    ):
        self.data = data
        self.segments = segments  # (start, end, piece) in byte offsets of `data`, sorted
        self._starts = [s for s, _, _ in segments]
        self.source = source  # the file this unit belongs to (for $0, relative paths)
        self.unknowns = unknowns or []
        self.tree: Any = None  # the tree-sitter tree of `data`, once parsed

    @classmethod
    def for_file(cls, source: SourceFile) -> "Unit":
        whole = Piece(source.text, source.span(0, len(source.data)), "literal", True, source=source)
        return cls(source.data, [(0, len(source.data), whole)], source)

    @classmethod
    def for_slice(cls, source: SourceFile, start: int, end: int) -> "Unit":
        """Bytes [start, end) of a file, parsed on their own (a heredoc body, an expansion snippet)."""
        data = source.data[start:end]
        piece = Piece(data.decode("utf-8", "surrogateescape"), source.span(start, end), "literal", True, source=source)
        return cls(data, [(0, len(data), piece)], source)

    @classmethod
    def from_pieces(cls, pieces: list[Piece], source: SourceFile) -> "Unit":
        chunks: list[bytes] = []
        segments: list[tuple[int, int, Piece]] = []
        unknowns: list[Piece] = []
        pos = 0
        from plint.reading.shell.fields import blank_edge

        def add(raw: bytes, piece: Piece) -> None:
            nonlocal pos
            segments.append((pos, pos + len(raw), piece))
            chunks.append(raw)
            pos += len(raw)

        for p in pieces:
            if p.known:
                raw = p.text.encode("utf-8", "surrogateescape")  # type: ignore[union-attr]
                if raw:
                    add(raw, p)
                continue
            # `--checkpoint-activations${OPTS}` where OPTS is " --create-moe-param-group" or "": the text around
            # the placeholder ends a word there whatever OPTS holds, as word splitting of the value would say
            if blank_edge(p, 0):
                add(b" ", _BLANK)
            add(PLACEHOLDER.format(len(unknowns)).encode(), p)
            unknowns.append(p)
            if blank_edge(p, -1):
                add(b" ", _BLANK)
        return cls(b"".join(chunks), segments, source, unknowns)

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "surrogateescape")

    def _segment(self, offset: int) -> tuple[int, int, Piece] | None:
        i = bisect.bisect_right(self._starts, offset) - 1
        if 0 <= i < len(self.segments):
            s, e, p = self.segments[i]
            if s <= offset < e:
                return self.segments[i]
        return None

    def unknown_in(self, start: int, end: int) -> Piece | None:
        m = re.compile(_PLACEHOLDER_RE).search(self.data, start, end) if self.unknowns else None
        return self.unknowns[int(m.group(1))] if m else None

    def piece(self, start: int, end: int, text: str | None = None) -> Piece:
        """The characters data[start:end] (or `text`, when escapes changed them) as a Piece."""
        hidden = self.unknown_in(start, end)
        if hidden is not None:
            return hidden
        raw = self.text(start, end)
        exact = text is None or text == raw
        text = raw if text is None else text
        seg = self._segment(start) or (self.segments[-1] if self.segments else None)
        if seg is None:
            return Piece(text, None, "literal")
        s, e, p = seg
        if exact and p.exact and p.span is not None and p.source is not None and end <= e:
            span = p.source.span(p.span.start + (start - s), p.span.start + (end - s))
            return Piece(text, span, p.origin, True, source=p.source)
        return Piece(text, p.span, p.origin, False, source=p.source)

    def pieces(self, start: int, end: int) -> list[Piece]:
        """The verbatim characters data[start:end] as pieces, one per source segment they cross, so
        that `--nnodes=$NNODES` parsed again from an eval'd string keeps the position of each part."""
        if self.unknowns and self.unknown_in(start, end) is not None:
            out: list[Piece] = []
            pos = start
            for m in re.compile(_PLACEHOLDER_RE).finditer(self.data, start, end):
                if m.start() > pos:
                    out.extend(self.pieces(pos, m.start()))
                out.append(self.unknowns[int(m.group(1))])
                pos = m.end()
            if pos < end:
                out.extend(self.pieces(pos, end))
            return out
        seg = self._segment(start)
        if seg is None or end <= seg[1] or len(self.segments) == 1:
            return [self.piece(start, end)]
        out = []
        pos = start
        while pos < end:
            seg = self._segment(pos)
            stop = min(end, seg[1]) if seg is not None else end
            out.append(self.piece(pos, stop))
            pos = stop
        return out

    def span(self, start: int, end: int) -> Span | None:
        seg = self._segment(start)
        if seg is None:
            return self.segments[-1][2].span if self.segments else None
        s, e, p = seg
        if p.exact and p.span is not None and p.source is not None:
            return p.source.span(p.span.start + (start - s), p.span.start + (min(end, e) - s))
        return p.span


def heredoc_as_file(content: MappedText, unit: Unit, body: tuple[int, int] | None) -> SourceFile:
    """A heredoc body (bytes `body` of the unit's file) as a file for readers of `#SBATCH` lines: the script's
    own text with everything outside the body blanked, so lines and columns stay those of the script."""
    from plint.reading.shell.fields import expanded_directives

    source = unit.source
    if body is None or unit.data is not source.data:
        return SourceFile(source.path, content.render())
    lo, hi = body
    data = source.data

    def blank(b: bytes) -> bytes:
        return bytes(10 if c == 10 else 32 for c in b)

    text = blank(data[:lo]) + expanded_directives(data[lo:hi], content) + blank(data[hi:])
    return SourceFile(source.path, text.decode("utf-8", "surrogateescape"))
