"""Source files and spans: where a character of a launch came from.

Tree-sitter reports byte offsets; users (and SARIF) want 1-based lines and character columns.
A SourceFile converts between the two once, so every layer above speaks in Spans.
"""

from __future__ import annotations

import bisect
from plint.record import field, record
from pathlib import Path


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

    def as_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "col": self.col,
                "end_line": self.end_line, "end_col": self.end_col}


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


def read_bytes(path: str | Path) -> bytes:
    if _OVERLAY:
        import os

        data = _OVERLAY.get(os.path.realpath(os.path.abspath(path)))
        if data is not None:
            return data
    return Path(path).read_bytes()


class reading_from:
    """`with reading_from({real_path: bytes}):` files read as the given bytes."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files

    def __enter__(self):
        _OVERLAY.update(self.files)
        return self

    def __exit__(self, *exc) -> None:
        for key in self.files:
            _OVERLAY.pop(key, None)
