"""JSON schemas and data catalogs shipped with plint."""

import os
import sys


def read_json(*parts: str):
    """A JSON file shipped here, decoded (a path under this folder, in parts)."""
    return load_json(os.path.join(os.path.dirname(__file__), *parts))


def cache_file(path: str) -> str | None:
    """Where load_json keeps the marshal copy of a JSON file: the user's cache folder ($XDG_CACHE_HOME
    or ~/.cache, then plint/), one file per source path; None when this Python keeps no bytecode."""
    tag = sys.implementation.cache_tag  # marshal's format may change between Python versions
    if tag is None:
        return None
    root = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(root):  # unset, or relative (which the XDG spec says to ignore)
        root = os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(root):  # no home folder: no copy, rather than one in the working directory
        return None
    name = path.replace("%", "%25").replace("/", "%2F").replace("\\", "%5C").replace(":", "%3A")
    return os.path.join(root, "plint", f"{name}.{tag}.marshal")


def _source_of(name: str) -> str | None:
    """The JSON file a copy's name stands for (cache_file in reverse); None for other names."""
    encoded, dot, rest = name.rpartition(".marshal")[0].rpartition(".")
    if not name.endswith(".marshal") or not dot or not rest:
        return None
    return encoded.replace("%3A", ":").replace("%5C", "\\").replace("%2F", "/").replace("%25", "%")


def _prune(folder: str) -> None:
    """Remove the copies whose JSON file is gone (an uninstalled or rebuilt environment: pre-commit and
    tox make new ones), so the folder does not grow with every environment that ever ran plint. Runs
    only when a copy is written, which is once per installed file."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        source = _source_of(name)
        if source is not None and os.path.isabs(source) and not os.path.exists(source):
            try:
                os.remove(os.path.join(folder, name))
            except OSError:
                pass


def load_json(path: str):
    """A JSON file, decoded, through a marshal copy in the user's cache folder: `plint check` then
    imports no json and decodes faster. The copy is used only when it records the file's path and
    current mtime and size (as a module's bytecode is); otherwise the file is decoded and the copy
    rewritten, unless bytecode writing is off or the folder is not writable (then no copy)."""
    import marshal  # built in: free

    st = os.stat(path)
    stamp = (marshal.version, path, st.st_mtime_ns, st.st_size)
    cache = cache_file(path)
    if cache is not None:
        try:
            with open(cache, "rb") as f:
                cached_stamp, data = marshal.loads(f.read())  # marshal.load(f) reads in small pieces: slow
            if cached_stamp == stamp:
                return data
        except Exception:  # noqa: BLE001  (missing, unreadable or damaged: decode the file instead)
            pass
    import json

    with open(path) as f:  # as Path.read_text() reads it
        data = json.loads(f.read())
    if cache is not None and not sys.dont_write_bytecode:
        tmp = f"{cache}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(cache), exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(marshal.dumps((stamp, data)))
            os.replace(tmp, cache)  # atomic: a concurrent run reads the old copy or the new one
            _prune(os.path.dirname(cache))
        except (OSError, ValueError):  # not writable, or data marshal cannot hold
            try:
                os.remove(tmp)
            except OSError:
                pass
    return data
