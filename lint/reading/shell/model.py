"""What the static shell evaluator produces: words made of pieces, each piece knowing its origin.

A *Piece* is a run of characters of an expanded word together with where those characters were
written (a Span in some file) and how they got there (origin). A piece whose text cannot be known
statically has ``text is None`` and says why (``reason``) and, when branches disagree, what it
could be (``alternatives``). A *Word* is one argv element after expansion and word splitting.

Origins: "literal" (written in a file, including `${V:-default}` defaults), "env" (seeded with
``--env``), "derived" (computed: arithmetic, Slurm variables implied by #SBATCH), "assumed"
(from configuration), "unresolved" (unknown).
"""

from __future__ import annotations

import bisect

from plint.record import field, record
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Iterable, Sequence

from plint.source import SourceFile, Span

MARKER = "\x00"  # brackets the index of an unknown piece when a MappedText is rendered


@record(frozen=True)
class Piece:
    text: str | None
    span: Span | None = None
    origin: str = "literal"
    # True when `text` is a verbatim copy of the characters at `span` (so sub-ranges map 1:1).
    exact: bool = False
    reason: str | None = None  # why text is unknown, e.g. "$SLURM_NNODES has no default"
    name: str | None = None  # the variable (or construct) that made it unknown
    alternatives: tuple[str, ...] = ()
    source: SourceFile | None = field(default=None, compare=False, repr=False)
    # the variable whose `${NAME:-default}` supplied this text: a value the environment may override
    default_of: str | None = None
    # unknown text that is known not to be empty (a variable Slurm always sets, such as $SLURM_JOB_ID):
    # `[ -z "$X" ]` is false and `${X:+...}` takes its word, though the value itself stays unknown
    nonempty: bool = False

    @property
    def known(self) -> bool:
        return self.text is not None

    def sub(self, i: int, j: int) -> "Piece":
        """Characters [i, j) of this piece, with a narrowed span when the mapping is exact."""
        if self.text is None:
            return self
        return Piece(
            self.text[i:j], self.sub_span(i, j), self.origin, self.exact, source=self.source, default_of=self.default_of
        )

    def sub_span(self, i: int, j: int) -> Span | None:
        """The span of characters [i, j) of a known piece: narrowed when the mapping is exact."""
        span = self.span
        if self.exact and span is not None and self.source is not None and self.text is not None:
            if getattr(self.source, "_ascii", False):  # a character is a byte: no encoding of the prefix
                return self.source.span(span.start + i, span.start + max(i, min(j, len(self.text))))
            prefix = self.text[:i].encode("utf-8", "surrogateescape")
            body = self.text[i:j].encode("utf-8", "surrogateescape")
            start = span.start + len(prefix)
            return self.source.span(start, start + len(body))
        return span


def unknown(reason: str, name: str | None = None, span: Span | None = None, alternatives: Iterable[str] = ()) -> Piece:
    return Piece(None, span, "unresolved", reason=reason, name=name, alternatives=tuple(alternatives))


@record(frozen=True)
class Word:
    """One argument after expansion. `site` is where the word stands in the command text."""

    pieces: tuple[Piece, ...]
    site: Span | None = None

    @classmethod
    def of(cls, text: str, span: Span | None = None, origin: str = "literal") -> "Word":
        return cls((Piece(text, span, origin),), span)

    @property
    def known(self) -> bool:
        return all(p.text is not None for p in self.pieces)  # p.known, without a call per piece

    @property
    def text(self) -> str | None:
        texts = [p.text for p in self.pieces]  # read once: the evaluator asks this often
        return None if None in texts else "".join(texts)  # type: ignore[arg-type]

    def display(self) -> str:
        """The word as far as it is known, unknown parts shown as ${NAME} or <?>."""
        return "".join(p.text if p.text is not None else "${%s}" % p.name if p.name else "<?>" for p in self.pieces)

    def known_prefix(self) -> str:
        """The text up to the first unknown piece (`--x=` of `--x=$V`)."""
        out = []
        for p in self.pieces:
            if p.text is None:
                break
            out.append(p.text)
        return "".join(out)

    @property
    def unknowns(self) -> list[Piece]:
        return [p for p in self.pieces if not p.known]

    @property
    def origin(self) -> str:
        origins = {p.origin for p in self.pieces if p.text != ""} or {"literal"}
        for o in ("unresolved", "assumed", "env", "derived"):
            if o in origins:
                return o
        return "literal"

    @property
    def value_span(self) -> Span | None:
        """Where the value was written: the single contributing piece's span, else the site."""
        contributing = [p for p in self.pieces if p.text != ""]
        if len(contributing) == 1 and contributing[0].span is not None:
            return contributing[0].span
        return self.site or (contributing[0].span if contributing else None)

    def after(self, n: int) -> "Word":
        """The word without its first n characters (`--flag=` of `--flag=$X`), unknown parts kept:
        the prefix must lie in known text."""
        out, pos = [], 0
        for p in self.pieces:
            length = len(p.text) if p.text is not None else 0
            if pos >= n:
                out.append(p)
            elif p.known and pos + length > n:
                out.append(p.sub(n - pos, length))
            pos += length
        return Word(tuple(out), self.site)

    def slice(self, i: int, j: int | None = None) -> "Word":
        """Characters [i, j) of a known word, as a Word keeping per-piece provenance."""
        text = self.text or ""
        j = len(text) if j is None else j
        out: list[Piece] = []
        pos = 0
        for p in self.pieces:
            n = len(p.text or "")
            lo, hi = max(i, pos), min(j, pos + n)
            if lo < hi or (n == 0 and i <= pos < j):
                out.append(p.sub(lo - pos, hi - pos))
            pos += n
        site = self.site
        if len(out) == 1 and out[0].span is not None and out[0].exact:
            site = out[0].span
        return Word(tuple(out), site)


@record
class MappedText:
    """Text assembled from pieces (a heredoc body, a sed output, an eval string).

    `render()` gives the text with each unknown piece replaced by MARKER + index + MARKER, and
    `locate()` maps offsets in that rendering back to source spans.
    """

    pieces: list[Piece]

    def render(self) -> str:
        return "".join(p.text if p.text is not None else f"{MARKER}{i}{MARKER}" for i, p in enumerate(self.pieces))

    def _layout(self) -> tuple[list[int], list[int]]:
        """Where each piece starts and ends in the rendering; kept until a piece is added (a JSON
        reader locates every key and value: 200,000 of them in a 4 MiB config)."""
        cached = self.__dict__.get("_layout_cache")
        if cached is not None and cached[0] == len(self.pieces):
            return cached[1]
        starts, ends, pos = [], [], 0
        for i, p in enumerate(self.pieces):
            n = len(p.text) if p.text is not None else len(f"{MARKER}{i}{MARKER}")
            starts.append(pos)
            pos += n
            ends.append(pos)
        self.__dict__["_layout_cache"] = (len(self.pieces), (starts, ends))
        return starts, ends

    def piece_at(self, offset: int) -> tuple[Piece, int] | None:
        """The piece covering rendered offset, and the offset inside it. Pieces are contiguous: the
        last one starting at or before offset holds it, unless it is empty or offset is past the end."""
        starts, ends = self._layout()
        i = bisect.bisect_right(starts, offset) - 1
        if i < 0 or offset >= ends[i]:
            return None
        return self.pieces[i], offset - starts[i]

    def locate(self, start: int, end: int) -> Span | None:
        """Best source span for rendered characters [start, end)."""
        hit = self.piece_at(start)
        if hit is None:
            return None
        piece, inner = hit
        if piece.known and piece.exact:
            stop = min(len(piece.text), inner + max(end - start, 0))  # type: ignore[arg-type]
            return piece.sub_span(inner, stop)
        return piece.span

    def unknown_piece(self, index: int) -> Piece:
        return self.pieces[index]

    @classmethod
    def from_source(cls, source: SourceFile) -> "MappedText":
        return cls([Piece(source.text, source.span(0, len(source.data)), "literal", True, source=source)])


@record
class Var:
    """A shell variable: a scalar (`value`) or an indexed array (`items`)."""

    name: str
    value: tuple[Piece, ...] = ()
    items: tuple[tuple[Piece, ...], ...] | None = None  # set for arrays
    exported: bool = False
    span: Span | None = None  # the assignment that gave the current value

    @property
    def is_array(self) -> bool:
        return self.items is not None

    def as_word(self) -> Word:
        return Word(self.value, self.span)


@record
class Command:
    """A simple command the script would run, after expansion.

    `parent` is the command whose string argument this one was parsed from (`srun ... bash -c
    '...'`, `eval "$CMD"`), `via` says how ("eval", "bash -c", "sbatch", "bash FILE").
    `conditions` describes enclosing branches whose outcome is unknown statically.
    """

    words: list[Word]
    site: Span
    env: dict[str, Var] = field(default_factory=dict)
    assignments: dict[str, Var] = field(default_factory=dict)  # `NAME=v cmd` prefixes
    parent: "Command | None" = None
    via: str | None = None
    conditions: tuple[str, ...] = ()
    in_loop: bool = False

    @property
    def name(self) -> str | None:
        return self.words[0].text if self.words else None

    def argv(self) -> list[str | None]:
        return [w.text for w in self.words]


@record
class VirtualFile:
    """A file the script writes (heredoc, sed of a template) that later commands may read."""

    path: str  # as resolved against the script's directory
    content: MappedText
    written_by: Span | None = None


@record
class Problem:
    """Something the reader could not read: kind is "syntax" (PL001) or "unresolved" (PL002)."""

    kind: str
    message: str
    span: Span | None = None


@record
class ShellResult:
    source: SourceFile
    commands: list[Command] = field(default_factory=list)
    virtual_files: dict[str, VirtualFile] = field(default_factory=dict)
    variables: dict[str, Var] = field(default_factory=dict)  # the state at the end
    problems: list[Problem] = field(default_factory=list)
    spent: tuple[int, int] = (0, 0)  # (steps, work) the evaluation took: readings of one file share a budget
    files_read: list[str] = field(default_factory=list)  # sourced and run files, resolved paths
    # Undecided branches (if/elif/case) by key, and the unknown pieces their merge made (id -> (piece,
    # key)): a command these pieces hide (`eval "$full_cmd"`) is read once per branch (shell/choices.py).
    choices: dict = field(default_factory=dict)
    merged_from: dict = field(default_factory=dict)
    chosen: list[str] = field(default_factory=list)  # when the forced ways through run (a reading per way)
    argument_loops: bool = False  # a loop over the script's arguments ran no time (none were given)

    def commands_named(self, names: Sequence[str]) -> list[Command]:
        return [c for c in self.commands if c.name and c.name.rsplit("/", 1)[-1] in names]
