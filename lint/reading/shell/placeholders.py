"""Template slots: `<PATH TO DATASET>`, `<Specify path>`, `your_own_num_nodes`.

Launch scripts kept as templates mark what the reader must fill in with a description in angle brackets.
bash would read `<PATH TO DATASET>` as a redirection from `PATH`, a word `TO` and a redirection into the
word after `DATASET>` (swallowing a flag), or reject the line; the author meant one value that is not
written yet. plint reads each slot as one unknown value that says so (PL002), before bash syntax.
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Iterable

from plint.reading.shell.model import Piece, Problem, Word, unknown
from plint.source import SourceFile

# `<` not part of `<<`, `<(`, `$(<`, a word (`a<b>`) or a comparison (`< $b`), then a description made
# of words (letters first, no shell metacharacters, no `$`), closed on the same line by `>`.
_SLOT = re.compile(rb"(?<![<\w$])<([A-Za-z](?:[A-Za-z0-9 _./:,+=@%-]*[A-Za-z0-9_])?)>(?![>&])")
# a value spelled as an instruction to the reader (`your_own_num_nodes`, `YOUR_NODES`, `CHANGE_ME`)
_WORDY = re.compile(r"(?i)^(?:<.*>|.*\byour[_\-\s].*|.*_your_.*|your|change_?me|fill_?me|todo|xxx+|\.\.\.)$")


_SLOT_NOTE = ", a placeholder the author left to fill in (an unfilled template slot)"


def slot_reason(text: str) -> str:
    return text + _SLOT_NOTE


def is_slot(piece: Piece) -> bool:
    return not piece.known and is_slot_message(piece.reason or "")


def is_slot_message(text: str) -> bool:
    """A note or finding about a template slot (`... <Specify path>, a placeholder ...`)."""
    return text.endswith(_SLOT_NOTE)


def slot_problems(words: Iterable[Word]) -> list[Problem]:
    """One PL002 problem per slot a launch's words hold: the author must fill it in before it runs."""
    slots = {p.span: p for w in words for p in w.pieces if is_slot(p)}
    return [Problem("unresolved", p.reason or "", span) for span, p in slots.items()]


def slot_syntax_problems(source: SourceFile, spans: list[tuple[int, int]]) -> list[Problem]:
    """One PL002 problem per slot of a file bash refuses only because of its slots: each is a value the
    author left to fill in, which a launch that uses it names again more precisely ($X is set from ...)."""
    return [
        Problem(
            "unresolved",
            slot_reason(source.data[start:end].decode("utf-8", "surrogateescape")),
            source.span(start, end),
        )
        for start, end in spans
    ]


def is_placeholder(text: str | None) -> bool:
    """A value that is a slot to fill in rather than a value: `<N>`, `your_own_num_nodes`, `CHANGE_ME`."""
    return text is not None and bool(_WORDY.match(text.strip()))


# a line that edits text (`sed -i "s/<TP>/$TP/" tmpl.json`): there `<TP>` is the marker a template holds
_EDITOR = re.compile(rb"(?:^|[\s;|&(`])(?:sed|perl|awk|grep|envsubst)\s")


def slot_spans(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of the `<...>` slots in a script, leaving out markers a text editor looks for."""
    if b"<" not in data:
        return []
    out = []
    for m in _SLOT.finditer(data):
        line = data[data.rfind(b"\n", 0, m.start()) + 1 : m.start()]
        if _described(m.group(1)) and not _EDITOR.search(line):
            out.append(m.span())
    return out


def _described(body: bytes) -> bool:
    """A description of what goes there (`<PATH TO DATASET>`, `<some dir>`, `<path_to_ckpt>`, `<N>`), not
    a one-word lower-case token a tokenizer uses (`--special-tokens "<image>" "<img>"`)."""
    return any(c in body for c in b" _-./") or any(65 <= c <= 90 for c in body)


def slot_pieces(source: SourceFile, spans: list[tuple[int, int]]) -> list[Piece]:
    """The file as pieces: its own text, with each slot an unknown piece that points at the slot."""
    out: list[Piece] = []
    pos = 0
    data = source.data
    for start, end in spans:
        if start > pos:
            out.append(_verbatim(source, pos, start))
        text = data[start:end].decode("utf-8", "surrogateescape")
        out.append(unknown(slot_reason(text), None, source.span(start, end)))
        pos = end
    if pos < len(data):
        out.append(_verbatim(source, pos, len(data)))
    return out


def _verbatim(source: SourceFile, start: int, end: int) -> Piece:
    return Piece(
        source.data[start:end].decode("utf-8", "surrogateescape"),
        source.span(start, end),
        "literal",
        True,
        source=source,
    )
