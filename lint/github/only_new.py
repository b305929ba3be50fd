"""`--only-new-against REV`: keep only the findings a change introduces (reviewdog's `filter-mode: added`,
by fingerprint rather than by diff line, since a layout finding often sits on a line the change never
touched).

The base revision's version of the repository is written into a temporary tree (`git archive REV`:
the files as data, nothing of them run), the same paths are checked there the same way, and a finding
whose fingerprint (rule, path relative to the tree, layout key: no line numbers) the base already had is
dropped. Where the base cannot be read (no git, an unknown revision, a file the base lacks), every
finding counts as new.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from copy import copy
from types import SimpleNamespace

from plint.report.common import fingerprint

GIT_TIMEOUT_S = 120


def _git(args: list[str], cwd: str) -> bytes | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def toplevel(path: str) -> str | None:
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)) or "."
    out = _git(["rev-parse", "--show-toplevel"], folder)
    return os.path.realpath(out.decode().strip()) if out else None


def _key(d, top: str | None):
    rel = os.path.relpath(os.path.realpath(d.path), top).replace(os.sep, "/")
    return fingerprint(SimpleNamespace(code=d.code, path=rel, key=d.key, message=d.message))


def base_fingerprints(paths: list[str], rev: str, options) -> set[str] | None:
    """Fingerprints of the findings of `paths` as they were at `rev`; None when the base cannot be read."""
    from plint.checking.check import check_paths

    top = toplevel(str(paths[0])) if paths else None
    if top is None:
        return None
    if not hasattr(tarfile, "data_filter"):  # a Python before the extraction filters (3.10.12, 3.11.4)
        return None
    archive = _git(["archive", "--format=tar", rev], top)
    if archive is None:
        return None
    with tempfile.TemporaryDirectory(prefix="plint-base-") as tmp:
        try:
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(tmp, filter="data")  # the data filter: no links out, no devices
        except (tarfile.TarError, OSError):
            return None
        tree = os.path.realpath(tmp)
        base_paths = []
        for p in paths:
            rel = os.path.relpath(os.path.realpath(p), top)
            candidate = os.path.join(tree, rel)
            if not rel.startswith("..") and os.path.exists(candidate):
                base_paths.append(candidate)
        if not base_paths:
            return set()
        base_options = copy(options)
        base_options.root = tree  # the base tree is all the base check may read
        base = check_paths([Path(p) for p in base_paths], base_options)
        return {_key(d, tree) for r in base.results for d in r.diagnostics}


def keep_new(run, paths: list[str], rev: str, options) -> int:
    """Drop from `run` the findings the base already had; the number dropped."""
    known = base_fingerprints([str(p) for p in paths], rev, options)
    if known is None:
        sys.stderr.write(f"plint: cannot read revision {rev!r}: every finding counts as new\n")
        return 0
    top = toplevel(str(paths[0]))
    dropped = 0
    for r in run.results:
        kept = [d for d in r.diagnostics if _key(d, top) not in known]
        dropped += len(r.diagnostics) - len(kept)
        r.diagnostics[:] = kept
    return dropped
