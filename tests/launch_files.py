"""Helpers for tests that write one launch with its configuration and read what one rule finds in it."""

from pathlib import Path

from plint.checking.check import check_paths


def write_launch(tmp_path: Path, text: str, config: str) -> Path:
    """launch.sh and its .plint.toml in tmp_path; the launch's path."""
    (tmp_path / "launch.sh").write_text(text)
    (tmp_path / ".plint.toml").write_text(config)
    return tmp_path / "launch.sh"


def found(path: Path, code: str) -> list:
    """The diagnostics of one rule on one file."""
    (result,) = check_paths([path])
    return [d for d in result.diagnostics if d.code == code]
