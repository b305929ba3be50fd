"""Source files and spans: where a character of a launch came from.

Tree-sitter reports byte offsets; users (and SARIF) want 1-based lines and character columns.
A SourceFile converts between the two once, so every layer above speaks in Spans.
"""

from __future__ import annotations

import bisect
import os
import stat  # imported by os already

from plint.record import field, record
from typing import TYPE_CHECKING
if TYPE_CHECKING:
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
        self._ascii = self.data.isascii()  # then a column is a byte count: no decoding per position

    @classmethod
    def read(cls, path: str | Path, display_path: str | None = None) -> "SourceFile":
        raw = read_bytes(path)
        return cls(display_path or str(path), raw.decode("utf-8", "surrogateescape"))

    @property
    def directory(self) -> Path:
        from pathlib import Path

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
    regular files); OSError (plint.root.Refused among them) when it cannot or may not be read."""
    data = overlaid(path)
    if data is not None:
        return data
    from plint.root import read

    return read(path)


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


# Paths as strings: `plint check` does not import pathlib (with urllib.parse and ipaddress behind it,
# about half of Python's own start-up). These give what the pathlib expressions in their docstrings
# give, on POSIX; elsewhere they are those expressions.

def normal_path(path: str | os.PathLike) -> str:
    """str(Path(path)): repeated slashes, `.` parts and a trailing slash dropped."""
    path = os.fspath(path)
    if os.name != "posix":
        from pathlib import Path

        return str(Path(path))
    root = "//" if path[:2] == "//" and path[:3] != "///" else ("/" if path[:1] == "/" else "")
    return root + "/".join(p for p in path.split("/") if p and p != ".") or "."


def _stat(path: str | os.PathLike):
    """os.stat(path) as Path(path).exists() / is_file() / is_dir() use it: None where they say False."""
    try:
        return os.stat(normal_path(path))
    except OSError as exc:
        import errno  # built in: free

        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP, errno.ENAMETOOLONG,
                         errno.EACCES):
            return None
        raise
    except ValueError:
        return None


def path_exists(path: str | os.PathLike) -> bool:
    """Path(path).exists()."""
    if os.name != "posix":
        from pathlib import Path

        return Path(path).exists()
    return _stat(path) is not None


def path_is_file(path: str | os.PathLike) -> bool:
    """Path(path).is_file()."""
    if os.name != "posix":
        from pathlib import Path

        return Path(path).is_file()
    st = _stat(path)
    return st is not None and stat.S_ISREG(st.st_mode)


def path_is_dir(path: str | os.PathLike) -> bool:
    """Path(path).is_dir()."""
    if os.name != "posix":
        from pathlib import Path

        return Path(path).is_dir()
    st = _stat(path)
    return st is not None and stat.S_ISDIR(st.st_mode)


def path_suffix(path: str | os.PathLike) -> str:
    """Path(path).suffix."""
    name = os.path.basename(normal_path(path))
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""


def resolved_path(path: str | os.PathLike) -> str:
    """str(Path(path).resolve())."""
    real = os.path.realpath(normal_path(path))
    if os.name == "posix":
        try:
            os.stat(real)
            return real
        except OSError as exc:
            import errno  # built in: free

            if exc.errno != errno.ELOOP:
                return real
    from pathlib import Path  # pathlib raises its own error for a symlink loop

    return str(Path(path).resolve())


def display_path(path: str | os.PathLike) -> str:
    """str(Path(path).resolve().relative_to(Path.cwd().resolve())) when the file lies under the working
    directory, else str(Path(path)): how reports name a checked file."""
    if os.name != "posix":
        from pathlib import Path

        try:
            return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(Path(path))
    real, cwd = resolved_path(path), resolved_path(os.getcwd())
    if real == cwd:
        return "."
    prefix = cwd if cwd.endswith("/") else cwd + "/"
    return real[len(prefix):] if real.startswith(prefix) else normal_path(path)
