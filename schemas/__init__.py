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
        except (OSError, ValueError):  # not writable, or data marshal cannot hold
            try:
                os.remove(tmp)
            except OSError:
                pass
    return data
