"""Where `plint fix` may write, and how: only files inside the root of the check (plint.root), or a
file the user named on the command line; never through a symlink; atomically, through a temporary
file beside the target (`.NAME.XXXXXXXX.plint-fix`) that is removed on any error, and that the next
run removes when a killed run left it behind."""

from __future__ import annotations

import os
import re
import stat

TEMP_SUFFIX = ".plint-fix"
_TEMP = re.compile(r"\.(?P<name>.+)\.[A-Za-z0-9_]{8}" + re.escape(TEMP_SUFFIX) + r"\Z")  # tempfile.mkstemp's


def unwritable(run, paths, changed: list[str]) -> dict[str, str]:
    """Why each changed file (a real path) must not be written, for those that must not."""
    from plint.checking.check import expand_paths

    named_links: set[str] = set()
    named: set[str] = set()
    for p in expand_paths(list(paths)):
        real = os.path.realpath(os.path.abspath(p))
        # a symlinked folder on the way counts as a link, as plint.root.root_for judges a named file
        (named if real == os.path.normpath(os.path.abspath(p)) else named_links).add(real)
    roots = [r.reading.root for r in run.results if getattr(r.reading, "root", None) is not None]
    out = {}
    for real in changed:
        if real in named_links:
            out[real] = (
                "it is reached through a symlink (plint fix never writes through one: fix the file it points to)"
            )
            continue
        try:
            st = os.lstat(real)
        except OSError as exc:
            out[real] = f"cannot stat it ({exc.strerror or exc})"
            continue
        if not stat.S_ISREG(st.st_mode):
            out[real] = "it is not a regular file"
        elif real not in named and not any(real in r.named or _inside(real, r.places) for r in roots):
            out[real] = "it lies outside the checked tree (plint fix writes only inside it)"
    return out


def _inside(real: str, places) -> bool:
    return any(real == p or real.startswith(p.rstrip(os.sep) + os.sep) for p in places)


def write_atomic(path: str, data: bytes) -> None:
    """Write data to path through a temporary file in the same folder and os.replace (the file is
    never half-written), keeping the mode bits of the file it replaces. os.replace replaces a symlink
    that appeared at path since it was judged; it never writes through it."""
    import tempfile

    folder, name = os.path.split(os.path.abspath(path))
    try:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        mode = None
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove_stale_temps(paths) -> list[str]:
    """Remove the temporary files a killed `plint fix` left beside the files about to be fixed
    (regular files named `.NAME.XXXXXXXX.plint-fix` for a NAME in the folder); the removed paths."""
    from plint.checking.check import expand_paths

    folders = {os.path.dirname(os.path.abspath(p)) for p in expand_paths(list(paths))}
    removed = []
    for folder in sorted(folders):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        present = set(names)
        for entry in names:
            m = _TEMP.match(entry)
            if m is None or m.group("name") not in present:
                continue
            path = os.path.join(folder, entry)
            try:
                if stat.S_ISREG(os.lstat(path).st_mode):
                    os.unlink(path)
                    removed.append(path)
            except OSError:
                continue
    return removed
