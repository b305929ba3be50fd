"""The root of a check: the only places plint opens files in.

plint runs on files written by strangers (pull requests). Every check has a root: the git work tree
of the checked file (the nearest folder upwards holding `.git`, a folder or, in a worktree or
submodule, a file; found without running git), or outside git the working directory when it holds
the file, else the file's own folder. `--root DIR` replaces it, `[tool.plint] root` too; the config's
`read-outside` adds folders a user trusts. A file named on the command line is read wherever it is
(the user named it, as ruff checks what it is given), unless a symlink leads there; what it names is
read only inside the root.

Every file read of a check goes through `read` (plint.source.read_bytes calls it): the path is
resolved (`..` and symlinks, os.path.realpath) before it is judged, and only a regular file is opened
(a FIFO would block, a device never ends, /proc lies about its size). A refused file raises `Refused`
(an OSError), so readers treat it as unreadable; `note_for` tells them when to say why.
"""

from __future__ import annotations

import errno
import os
import stat

from plint.record import field, record

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

OUTSIDE_NOTE = "outside the checked tree: not read"
WIDEN_HINT = "widen the root with --root or [tool.plint] read-outside if you trust it"
MAX_FILE_BYTES = 4 * 1024 * 1024  # plint.reading.read.MAX_FILE_BYTES: no launch file is larger


class Refused(OSError):
    """A file plint will not open (outside the root, not a regular file, too large)."""


@record(frozen=True)
class Root:
    places: tuple[str, ...]  # real paths of the folders files may be read from
    named: frozenset[str] = field(default_factory=frozenset)  # real paths of files named on the command line

    def contains(self, path: str | os.PathLike[str]) -> bool:
        """Whether path, resolved, lies in one of the places (or is a named file)."""
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):  # a NUL byte, a name too long to resolve
            return False
        return real in self.named or any(is_under(real, place) for place in self.places)

    def read(self, path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
        self.refuse_outside(path)
        return read_regular(os.path.realpath(path), limit)

    def refuse_outside(self, path: str | os.PathLike[str]) -> None:
        """Refused when path, resolved, lies outside the root."""
        if not self.contains(path):
            raise Refused(errno.EACCES, OUTSIDE_NOTE, os.fspath(path))


def is_under(real: str, place: str) -> bool:
    """Whether the normalised path `real` is `place` or lies below it (as written: neither need exist)."""
    return real == place or real.startswith(place if place.endswith(os.sep) else place + os.sep)


def read_regular(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; Refused for anything else (judged by
    stat before the file is opened: opening a FIFO blocks, opening a device can do things)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(errno.EINVAL, "not a regular file", os.fspath(path))
    if st.st_size > limit:
        raise Refused(errno.EFBIG, f"file is too large ({st.st_size} bytes)", os.fspath(path))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the stat
            raise Refused(errno.EINVAL, "not a regular file", os.fspath(path))
        chunks, size = [], 0
        while size <= limit:  # /proc files say 0 bytes: the size is what a read gives
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise Refused(errno.EFBIG, f"file is too large (over {limit} bytes)", os.fspath(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


# ---- finding the root ---------------------------------------------------------------------------


def work_tree(folder: str) -> str | None:
    """The nearest folder from `folder` upwards holding `.git` (a folder, or a file in a worktree or
    submodule), as a real path; None outside git. The walk follows the path as written, not where its
    symlinks lead: `sub/x.sh` with `sub -> /elsewhere` belongs to the tree that holds `sub`."""
    candidate = os.path.normpath(os.path.abspath(folder))
    while True:
        if os.path.lexists(os.path.join(candidate, ".git")):
            return os.path.realpath(candidate)
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return None
        candidate = parent


def folders_above(folder: str) -> Iterator[str]:
    """The folders above `folder`, nearest first, while inside the root in force (without one, the git work
    tree holding `folder`): where a script run from its project's root or a project folder finds the
    relative names it uses (`bash scripts/x.sh`, as READMEs say)."""
    root = current()
    top = work_tree(folder) if root is None else None
    here = os.path.abspath(folder)
    while True:
        parent = os.path.dirname(here)
        if parent == here:
            return
        here = parent
        inside = root.contains(here) if root is not None else (top is not None and is_under(here, top))
        if not inside:
            return
        yield here


def default_place(path: str | os.PathLike[str]) -> str:
    """The root of a checked file when nothing names one (see the module docstring), found from the path
    as written: a symlinked folder on the way never moves the root to where it leads."""
    path = os.path.normpath(os.path.abspath(path))
    folder = path if os.path.isdir(path) and not os.path.islink(path) else os.path.dirname(path)
    tree = work_tree(folder)
    if tree is not None:
        return tree
    cwd = os.path.abspath(os.getcwd())
    return os.path.realpath(cwd if is_under(folder, cwd) else folder)


def root_for(
    path: str | os.PathLike[str],
    option: str | os.PathLike[str] | None = None,
    settings: Any = None,
    named_places: tuple[str, ...] = (),
) -> Root:
    """The root of one checked file: `--root` alone when given (the configuration cannot widen it
    then: a pull request may carry its own config), else the config's `root` or the default, plus
    the config's `read-outside` and `trainer-source`. `named_places`: folders the command line names
    (`--trainer-source`), trusted as the user said."""
    if option is not None:
        places = [option]
    else:
        places = [settings.root_dir if settings is not None and settings.root_dir else default_place(path)]
        places += list(getattr(settings, "read_outside", None) or ())
        if getattr(settings, "trainer_source", None):
            places.append(settings.trainer_source)
    places += list(named_places)
    unique = tuple(dict.fromkeys(os.path.realpath(p) for p in places))
    real = os.path.realpath(path)
    # the file itself is read wherever the user named it, but not when a symlink leads there from
    # inside the root: a pull request may add `ds.json -> /etc/...` to the files a CI job names
    named = frozenset({real}) if real == os.path.normpath(os.path.abspath(path)) else frozenset()
    return Root(unique, named)


def read_named(path: str | os.PathLike[str]) -> bytes:
    """A file the command line names outside a check (`generate --layout`, `--plan`, `--model-file`),
    judged as a checked file is: read wherever it is unless a symlink leads there, else only inside its
    root; only a regular file of at most MAX_FILE_BYTES (a FIFO would block)."""
    return root_for(path).read(path)


# ---- the root in force ----------------------------------------------------------------------------
# The check of one file runs inside `confined(root)`; plint.source.read_bytes reads through it. Library
# callers without a root (a test evaluating a script) read any regular file, as before.

_ACTIVE: list[Root] = []


def current() -> Root | None:
    return _ACTIVE[-1] if _ACTIVE else None


class confined:
    """`with confined(root):` every read of plint goes through root."""

    def __init__(self, root: Root | None) -> None:
        self.root = root

    def __enter__(self) -> Root | None:
        if self.root is not None:
            _ACTIVE.append(self.root)
        return self.root

    def __exit__(self, *exc: object) -> None:
        if self.root is not None:
            _ACTIVE.pop()


def read(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """A file's bytes through the root in force (any regular file when none is)."""
    root = current()
    return root.read(path, limit) if root is not None else read_regular(path, limit)


def read_text(path: str | os.PathLike[str]) -> str | None:
    """A file's text through the root in force (undecodable bytes replaced); None when the root refuses it or it
    cannot be read."""
    try:
        return read(path).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def note_for(path: str | os.PathLike[str]) -> str | None:
    """OUTSIDE_NOTE when the root in force refuses an existing file at path, else None: readers say
    why a value is unknown without hinting at files that are not there."""
    root = current()
    if root is None or root.contains(path):
        return None
    try:
        os.stat(path)
    except (OSError, ValueError):
        return None
    return OUTSIDE_NOTE


def tree_root(launch_file: str) -> str:
    """The checked tree of a launch file: the place of the root in force that holds it (plint.root), else
    its git work tree, else its folder. The same tree with or without git (an sdist, a `git archive` copy)
    when the root is named."""
    real = os.path.realpath(launch_file)
    root = current()
    if root is not None:
        places = [p for p in root.places if is_under(real, p)]
        if places:
            return max(places, key=len)  # the innermost place that holds it
    folder = os.path.dirname(real) or "."
    return work_tree(folder) or folder
