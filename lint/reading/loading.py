"""Reading the text of one file, and saying why not: a file checked (PL001 when it cannot be read at all)
and a file a launch names (plint.reading.file_lookup.FileLookup) or a script sources, runs or copies (the
evaluator's plint.reading.shell.state.default_read), whose reason is said after its name so that a file
that is there is never reported as missing."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from plint.record import record
from plint.root import OUTSIDE_NOTE, WIDEN_HINT, Refused, note_for
from plint.source import SourceFile, overlaid, probe, read_bytes

MAX_FILE_BYTES = 4 * 1024 * 1024
_OVER_LIMIT = f"over plint's limit of {MAX_FILE_BYTES} bytes"


@record(frozen=True)
class Unread:
    """Why a file that is there is not read, said after its name ("ds.json: too large to read (...)").
    `broken`: its content is what is wrong (binary, not UTF-8), the verdict it gets when checked alone, a
    Problem of kind "syntax" as for broken JSON; else plint chose not to read it (outside the root, over its
    size limit, not a regular file, not permitted) and what it gives is unresolved. `hint`: how to let
    plint read it, where a setting can."""

    why: str
    broken: bool = False
    hint: str | None = None

    @property
    def kind(self) -> str:
        """The kind of the Problem that says it."""
        return "syntax" if self.broken else "unresolved"

    @property
    def reason(self) -> str:
        """The why, with the hint after it in parentheses."""
        return f"{self.why} ({self.hint})" if self.hint else self.why

    def say(self, what: str, unknown: str) -> str:
        """`what: why; unknown`, the hint after it in parentheses."""
        text = f"{what}: {self.why}; {unknown}"
        return f"{text} ({self.hint})" if self.hint else text


@record(frozen=True)
class _Refusal:
    checked: str  # said of a file checked (PL001): "binary file (contains NUL bytes)"
    named: Unread  # said of the same file named by a launch


def load_checked(path: str, display: str) -> tuple[SourceFile | None, str | None]:
    """A file checked: its text, or why it cannot be read at all."""
    source, refusal = _read_text(path, display)
    return source, refusal.checked if refusal is not None else None


def load_named(path: str, display: str) -> tuple[SourceFile | None, Unread | None]:
    """A file a launch names, read as a checked file is: its text, or why not, said after its name."""
    source, refusal = _read_text(path, display)
    return source, refusal.named if refusal is not None else None


def load_found(path: str, display: str) -> tuple[SourceFile | None, Unread | None]:
    """A file a script names at path (sources, runs, copies): its text, or why a file that is there is not
    read; (None, None) when nothing is there. The root is asked first: of a file outside it nothing is
    opened, nor its size said."""
    outside = outside_root(path)
    if outside is not None:
        return None, outside
    if not probe(Path(path).exists):  # a dangling symlink too
        return None, None
    return load_named(path, display)


def outside_root(path: str) -> Unread | None:
    """Why an existing file at path is not read when the root in force refuses it, with how to widen the
    root; else None (plint.root.note_for)."""
    note = note_for(path)
    return Unread(note, hint=WIDEN_HINT) if note is not None else None


def _read_text(path: str, display: str) -> tuple[SourceFile | None, _Refusal | None]:
    try:
        memory = overlaid(path)  # standard input read as a file (`plint check -`), a file being fixed
        size = len(memory) if memory is not None else os.stat(path).st_size
        if size > MAX_FILE_BYTES:
            # standard input is read only to one byte past the limit: its size is not known, only that
            said = f"{size} bytes" if memory is None else f"over {MAX_FILE_BYTES} bytes"
            over = f"{size} bytes, {_OVER_LIMIT}" if memory is None else _OVER_LIMIT
            return None, _Refusal(
                f"file is too large to be a launch file ({said})", Unread(f"too large to read ({over})")
            )
        raw = read_bytes(path)
    except OSError as exc:  # plint.root.Refused too: outside the root, a FIFO, a device
        return None, _Refusal(f"cannot read file: {exc.strerror or exc}", _not_opened(path, exc))
    except ValueError as exc:  # a NUL byte in the name
        return None, _Refusal(f"cannot read file: {exc}", Unread(f"cannot be read ({exc})"))
    if b"\x00" in raw[:8192]:
        return None, _Refusal("binary file (contains NUL bytes)", Unread("binary (contains NUL bytes)", broken=True))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        return None, _Refusal(why, Unread(why, broken=True))
    return SourceFile(display, text), None


_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def _not_opened(path: str, exc: OSError) -> Unread:
    """Why the file at path was not opened (plint.root refused it, or the system did)."""
    if exc.strerror == OUTSIDE_NOTE:
        return Unread(OUTSIDE_NOTE, hint=WIDEN_HINT)
    if isinstance(exc, Refused) and exc.errno == errno.EFBIG:  # grown since the stat, or /proc
        return Unread(f"too large to read ({_OVER_LIMIT})")
    if isinstance(exc, Refused) and exc.errno == errno.EINVAL:  # not a regular file: say what it is
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            mode = 0
        what = next((name for test, name in _FILE_TYPES if test(mode)), "a device or special file")
        return Unread(f"not a regular file ({what})")
    return Unread(f"cannot be read ({exc.strerror or exc})")
