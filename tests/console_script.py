"""The installed `plint` console script, run as a user runs it: a separate process through the entry
point pip wrote beside this Python (pyproject.toml [project.scripts]), not click's test runner, so the
click-free fast path of plint.entry, the exit status and the split of stdout and stderr are the real ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PLINT = Path(sys.executable).with_name("plint")


def run_plint(
    *args: str, cwd: str | Path | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """`plint ARGS...` in cwd with the environment plus env; stdout and stderr as text."""
    assert PLINT.is_file(), f"no console script at {PLINT}: install plint into this environment (pip install -e .)"
    return subprocess.run(
        [str(PLINT), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
