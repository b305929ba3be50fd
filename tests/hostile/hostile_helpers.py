"""Shared tools of the hostile-file suite: a repository beside an `outside` folder holding a secret, an
audit hook that records every file Python opens, and a run of plint in every output format."""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner

from plint.cli.commands import cli

SECRET = "PLINT_SECRET_5e2b"  # planted in every outside file: it must never be printed
FORMATS = ("text", "json", "sarif", "github", "markdown", "gitlab", "junit", "rdjson")
TRAINER = (
    "pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
    "--max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 8"
)

# ---- every open() of the process, while recording -------------------------------------------------

_OPENED: list[str] | None = None


def _audit(event: str, args) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], (str, bytes)):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)  # for the whole test process: it is idle unless `recording_opens` is active


@contextmanager
def recording_opens():
    """`with recording_opens() as opened:` every path opened inside the block (as given to open)."""
    global _OPENED
    opened: list[str] = []
    _OPENED = opened
    try:
        yield opened
    finally:
        _OPENED = None


def opened_under(opened: list[str], folder: Path) -> list[str]:
    """The opened paths that are, once `..` and symlinks are resolved, inside folder."""
    real = os.path.realpath(folder)
    out = []
    for path in opened:
        try:
            target = os.path.realpath(path)
        except (OSError, ValueError):
            continue
        if target == real or target.startswith(real + os.sep):
            out.append(path)
    return out


@contextmanager
def time_limit(seconds: int):
    """Fail instead of hanging (a FIFO opened for reading blocks until a writer comes)."""

    def expire(*_):
        raise TimeoutError(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# ---- a repository with a hostile neighbour ---------------------------------------------------------


def make_tree(tmp_path: Path, files: dict[str, str | bytes], links: dict[str, str] | None = None) -> tuple[Path, Path]:
    """tmp_path/repo (a git work tree: it has .git) and tmp_path/outside; `files` are written relative
    to tmp_path, `{repo}`/`{outside}` in their text replaced by the absolute folders; `links` maps a
    link (relative to tmp_path) to its target (the same placeholders)."""
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / ".git").mkdir(parents=True)
    outside.mkdir()

    def fill(text: str) -> str:
        return text.replace("{repo}", str(repo)).replace("{outside}", str(outside)).replace("{secret}", SECRET)

    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(fill(content))
    for name, target in (links or {}).items():
        link = tmp_path / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(fill(target))
    return repo, outside


def plint(args: list[str], env: dict[str, str] | None = None):
    """The CLI in this process (so the audit hook sees its opens)."""
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=True)


def all_formats(paths: list[str], extra: list[str] | None = None, summary: Path | None = None) -> dict[str, str]:
    """plint check's output in every format (the github format with its job summary appended)."""
    out = {}
    for fmt in FORMATS:
        env = {"GITHUB_STEP_SUMMARY": str(summary)} if fmt == "github" and summary is not None else None
        result = plint(["check", "--format", fmt, *(extra or []), *paths], env=env)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            fmt,
            result.output,
            result.exc_info,
        )
        assert result.exit_code in (0, 1), (fmt, result.exit_code, result.output)
        out[fmt] = result.output
    if summary is not None and summary.exists():
        out["github-summary"] = summary.read_text()
    return out


def outside_snapshot(outside: Path) -> dict[str, tuple[bytes, int]]:
    """(content, mtime_ns) of every file under outside, and the listing itself by its keys."""
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(outside.rglob("*")) if p.is_file()}
