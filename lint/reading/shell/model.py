"""What the static shell evaluator produces: words made of pieces, each piece knowing its origin.

The Piece and the Word (one argv element after expansion and word splitting) are defined with the spans
in plint.source, a contract module, because the layout's values and the key tree carry them too; this
module holds what only the shell makes of them (mapped text, variables, commands, the result).

Origins: "literal" (written in a file, including `${V:-default}` defaults), "env" (seeded with
``--env``), "derived" (computed: arithmetic, Slurm variables implied by #SBATCH), "assumed"
(from configuration), "unresolved" (unknown).
"""

from __future__ import annotations

import bisect

from plint.record import field, record
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Sequence

# the words, their pieces and a reader's problem are contract types (plint.source), shared with the layout's
# values and the key tree; the evaluator and the readers take them from here
from plint.source import Piece as Piece, Problem as Problem, SourceFile, Span, Word as Word, unknown as unknown

MARKER = "\x00"  # brackets the index of an unknown piece when a MappedText is rendered


@record
class MappedText:
    """Text assembled from pieces (a heredoc body, a sed output, an eval string).

    `render()` gives the text with each unknown piece replaced by MARKER + index + MARKER, and
    `locate()` maps offsets in that rendering back to source spans.
    """

    pieces: list[Piece]
    # a line tool (shell/lines.py) told two lines apart by an assumption: what counts them is assumed
    assumed: bool = False

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
    """A shell variable: a scalar (`value`) or an array (`items`): indexed from 0 with no gaps, or keyed
    (`keys`, one per item) for an associative array (`declare -A`) or an indexed one with gaps."""

    name: str
    value: tuple[Piece, ...] = ()
    items: tuple[tuple[Piece, ...], ...] | None = None  # set for arrays
    exported: bool = False
    span: Span | None = None  # the assignment that gave the current value
    keys: tuple[str, ...] | None = None  # a keyed array's subscripts, in bash's order for an indexed one
    associative: bool = False  # `declare -A`: subscripts are strings, not arithmetic
    nameref: bool = False  # `declare -n`: `value` names the variable this one stands for
    # branches left the array with different lengths (or keys): from this item on, the items stand for an unknown
    # number of elements, so its count and the positions from here are unknown
    uncounted_from: int | None = None

    @property
    def is_array(self) -> bool:
        return self.items is not None

    def exported_copy(self, name: str | None = None) -> "Var":
        """The same variable (under `name`, if given), exported."""
        v = self
        return Var(name or v.name, v.value, v.items, True, v.span, v.keys, v.associative, v.nameref, v.uncounted_from)

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
    # the files the script had written when this command ran (ShellResult.virtual_files then: never changed in
    # place, so a later write under the same name, `ds_config.$SLURM_JOBID.json` of the next job, is not seen)
    files: dict | None = field(default=None, repr=False, compare=False)

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
class ShellResult:
    source: SourceFile
    commands: list[Command] = field(default_factory=list)
    virtual_files: dict[str, VirtualFile] = field(default_factory=dict)
    variables: dict[str, Var] = field(default_factory=dict)  # the state at the end
    problems: list[Problem] = field(default_factory=list)
    spent: tuple[int, int] = (0, 0)  # (steps, work) the evaluation took: readings of one file share a budget
    files_read: list[str] = field(default_factory=list)  # sourced and run files, resolved paths
    # scripts run (`bash FILE`) that are not there to read, as (the FILE word's span, why): not a problem of
    # the script (a helper of another checkout), but where its launch may be (reading.sources.unlaunched)
    unread_scripts: list[tuple[Span | None, str]] = field(default_factory=list)
    # Undecided branches (if/elif/case) by key, and the unknown pieces their merge made (id -> (piece,
    # key)): a command these pieces hide (`eval "$full_cmd"`) is read once per branch (shell/choices.py).
    choices: dict = field(default_factory=dict)
    merged_from: dict = field(default_factory=dict)
    chosen: list[str] = field(default_factory=list)  # when the forced ways through run (a reading per way)
    argument_loops: bool = False  # a loop over the script's arguments ran no time (none were given)
    exit_site: Span | None = None  # the `exit` that ended the script, where one did on every way through

    def written_named(self, name: str) -> VirtualFile | None:
        """The one file the script wrote whose last path part is `name`'s, else None."""
        base = name.rsplit("/", 1)[-1]
        written = [f for f in self.virtual_files.values() if f.path.rsplit("/", 1)[-1] == base]
        return written[0] if len(written) == 1 else None

    def commands_named(self, names: Sequence[str]) -> list[Command]:
        return [c for c in self.commands if c.name and c.name.rsplit("/", 1)[-1] in names]
