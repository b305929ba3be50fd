"""Source files and spans: where a character of a launch came from.

Tree-sitter reports byte offsets; users (and SARIF) want 1-based lines and character columns.
A SourceFile converts between the two once, so every layer above speaks in Spans.
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
    from typing import Any, Callable

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
        line, col = self.position(start)
        end_line, end_col = self.position(end)
        return Span(self.path, start, end, line, col, end_line, end_col)

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
