"""JSON schemas and data catalogs shipped with plint."""

import os
import sys


def read_json(*parts: str):
    """A JSON file shipped here, decoded (a path under this folder, in parts)."""
    return load_json(os.path.join(os.path.dirname(__file__), *parts))


def load_json(path: str):
    """A JSON file, decoded, through a marshal copy kept in __pycache__ beside it (as Python keeps
    a module's bytecode): `plint check` then imports no json and decodes faster. The copy is used
    only when it records the file's current mtime and size; otherwise the file is decoded and the
    copy rewritten, unless bytecode writing is off or the folder is not writable (then no copy)."""
    import marshal  # built in: free

    st = os.stat(path)
    stamp = (marshal.version, st.st_mtime_ns, st.st_size)
    tag = sys.implementation.cache_tag  # marshal's format may change between Python versions
    cache = None
    if tag is not None:
        folder, name = os.path.split(path)
        cache = os.path.join(folder, "__pycache__", f"{name}.{tag}.marshal")
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
        except (OSError, ValueError):  # not writable (a system install), or data marshal cannot hold
            try:
                os.remove(tmp)
            except OSError:
                pass
    return data
