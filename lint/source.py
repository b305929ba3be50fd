"""Source files and spans: where a character of a launch came from.

Tree-sitter reports byte offsets; users (and SARIF) want 1-based lines and character columns.
A SourceFile converts between the two once, so every layer above speaks in Spans.

The shell reader's words are contract types too, shared by the layout's values and the key tree: a
*Piece* is a run of characters of an expanded word together with where they were written (a Span) and
how they got there (origin); a piece whose text cannot be known statically has ``text is None`` and
says why (``reason``) and, when branches disagree, what it could be (``alternatives``). A *Word* is one
argv element after expansion and word splitting. A *Problem* is something a reader could not read.
"""

from __future__ import annotations

import bisect
import errno
import os
from pathlib import Path

from plint.record import field, record
from plint.root import current, read_regular
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ast
    from typing import Any, Callable, Iterable

    from plint.root import Root


@record(frozen=True)
class Span:
    """A range of characters in one file: byte offsets plus 1-based line/column (characters)."""

    path: str
    start: int  # byte offset, inclusive
    end: int  # byte offset, exclusive
    line: int
    col: int
    end_line: int
    end_col: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
        }


_MAX_KEPT_SPANS = 100_000  # spans one file keeps (~250 bytes each): past it the store starts again


@record
class SourceFile:
    """The text of one file (real or virtual) with a byte -> (line, column) index."""

    path: str
    text: str
    data: bytes = field(init=False, repr=False)
    _line_starts: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.data = self.text.encode("utf-8", "surrogateescape")
        starts = [0]
        pos = self.data.find(b"\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = self.data.find(b"\n", pos + 1)
        self._line_starts = starts
        self._ascii = self.data.isascii()  # then a column is a byte count: no decoding per position
        self._spans: dict[tuple[int, int], Span] = {}

    @classmethod
    def read(cls, path: str | Path, display_path: str | None = None) -> "SourceFile":
        raw = read_bytes(path)
        return cls(display_path or str(path), raw.decode("utf-8", "surrogateescape"))

    @property
    def directory(self) -> Path:
        return Path(self.path).parent

    def position(self, byte_offset: int) -> tuple[int, int]:
        """1-based (line, character column) of a byte offset."""
        byte_offset = max(0, min(byte_offset, len(self.data)))
        row = bisect.bisect_right(self._line_starts, byte_offset) - 1
        line_start = self._line_starts[row]
        if self._ascii:
            return row + 1, byte_offset - line_start + 1
        col = len(self.data[line_start:byte_offset].decode("utf-8", "surrogateescape")) + 1
        return row + 1, col

    def span(self, start: int, end: int) -> Span:
        """The span of bytes [start, end), kept: a word's site and its literal text ask for the same one."""
        found = self._spans.get((start, end))
        if found is None:
            if len(self._spans) >= _MAX_KEPT_SPANS:
                self._spans.clear()
            line, col = self.position(start)
            end_line, end_col = self.position(end)
            found = self._spans[start, end] = Span(self.path, start, end, line, col, end_line, end_col)
        return found

    def slice(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "surrogateescape")

    def line_text(self, line: int) -> str:
        if not 1 <= line <= len(self._line_starts):
            return ""
        start = self._line_starts[line - 1]
        end = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.data)
        return self.data[start:end].decode("utf-8", "surrogateescape")


# In-memory contents by real path, consulted before the disk: `plint fix` re-checks edited files this
# way before anything is written. Every reader of plint reads through read_bytes().
_OVERLAY: dict[str, bytes] = {}


def overlaid(path: str | Path) -> bytes | None:
    """The in-memory bytes standing for the file at path (reading_from), or None."""
    return _OVERLAY.get(os.path.realpath(os.path.abspath(path))) if _OVERLAY else None


def read_bytes(path: str | Path) -> bytes:
    """A file's bytes, through the root of the check in force (plint.root: nothing outside it, only
    regular files); OSError (plint.root.Refused among them) when it cannot or may not be read. The
    in-memory bytes of a file (`plint fix`, standard input) are judged by the same root: `fix` loads
    every file it was named, a symlink leading outside among them."""

    return read_through(current(), path)


def read_through(root: Root | None, path: str | Path) -> bytes:
    """A file's bytes as the check of `root` (a plint.root.Root) sees them: the in-memory bytes standing
    for it, else the disk, either only where the root holds it; any regular file without a root."""

    if root is not None:
        root.refuse_outside(path)
    data = overlaid(path)
    if data is not None:
        return data
    return read_regular(os.path.realpath(path)) if root is not None else read_regular(path)


class reading_from:
    """`with reading_from({real_path: bytes}):` files read as the given bytes."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def __enter__(self) -> reading_from:
        _OVERLAY.update(self.files)
        return self

    def __exit__(self, *exc: object) -> None:
        for key in self.files:
            _OVERLAY.pop(key, None)


# pathlib's exists(), is_file() and is_dir() answer False where a path cannot be there (ENOENT, ENOTDIR,
# EBADF, ELOOP, a NUL byte) and raise on any other error (Python 3.11 pathlib._ignore_error). A launch
# may also name a path longer than the file system allows or one behind a folder plint may not search:
# for plint such a file is not there, a finding and never a traceback (tests/hostile/test_special_files.py).
_NOT_THERE = (errno.ENAMETOOLONG, errno.EACCES)


def probe(test: Callable[[], bool]) -> bool:
    """test(), one of Path(p).exists, .is_file or .is_dir; also False where the path is too long or not
    searchable: `probe(Path(p).is_file)`."""
    try:
        return test()
    except OSError as exc:
        if exc.errno in _NOT_THERE:
            return False
        raise


def display_path(path: str | os.PathLike[str]) -> str:
    """How reports name a checked file: relative to the working directory when it lies under it (both
    resolved), else as given. A dangling symlink or a symlink loop is named by its own name."""
    given = Path(path)
    try:
        try:
            real = given.resolve(strict=True)
        except (OSError, RuntimeError):  # not there, or a loop (pathlib raises RuntimeError before 3.13)
            real = given.parent.resolve() / given.name
        return str(real.relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):
        return str(given)


def parse_python(data: bytes | str, filename: str = "<unknown>") -> ast.Module:
    """A Python file's syntax tree (ast.Module), without its compile warnings: an invalid escape such as `"\\d"`
    warns with the file's own line, which would reach stderr unescaped (and, in a CI log, could carry a
    workflow command). SyntaxError and the like still raise."""
    import ast
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(data, filename=filename)


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
    # unknown text known to be one word, no blank nor newline: a host name (the output of `hostname`)
    one_word: bool = False
    # an unset variable expanded inside double quotes (`"$X"`): whatever it holds, one argument
    quoted: bool = field(default=False, compare=False)

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
    # an unquoted expansion of unknown text alone (`$NUM_GPUS` unset, `$(cmd)`): bash makes it as many
    # arguments as the value holds words, none when it is empty, so the count around it is unknown
    spread: bool = field(default=False, compare=False)

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

    def known_suffix(self) -> str:
        """The text after the last unknown piece (`/repo/run.sh` of `$DIR/repo/run.sh`); all of it when known."""
        out: list[str] = []
        for p in reversed(self.pieces):
            if p.text is None:
                break
            out.append(p.text)
        return "".join(reversed(out))

    def under_unknown_folder(self) -> str | None:
        """The known end of a path after its last unknown part when it names a folder and a file (`/repo/run.sh` of
        `$DIR/repo/run.sh`): where a checkout of the tree under a folder known only at run time is matched; else
        None."""
        suffix = self.known_suffix()
        unknown = any(p.text is None for p in self.pieces)
        return suffix if unknown and suffix.startswith("/") and suffix.strip("/").count("/") >= 1 else None

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
class Problem:
    """Something the reader could not read: kind is "syntax" (PL001) or "unresolved" (PL002)."""

    kind: str
    message: str
    span: Span | None = None
