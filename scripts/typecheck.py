"""Type-check plint with mypy: `python scripts/typecheck.py [mypy options]` (CI runs it in .ci/run).

mypy finds a module by its path, but plint's package name maps onto folders of other names (pyproject's
[tool.setuptools] package-dir: plint -> lint/, plint.rules -> rules/, ...). The script builds that package
as a tree of symbolic links in .mypy_cache/ (a fixed place, as mypy's cache records each module's path), runs
mypy on it with pyproject's [tool.mypy], and
prints mypy's report with the repository's own paths (lint/..., rules/...).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: the backport plint depends on there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def package_dirs() -> dict[str, Path]:
    """Package name -> its folder in the repository, from pyproject's package-dir."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in mapping.items()}


def link_tree(top: Path, packages: dict[str, Path]) -> dict[str, str]:
    """Link each package's files under `top` where its dotted name puts them; link path -> repository path."""
    shown: dict[str, str] = {}
    for name, folder in sorted(packages.items()):
        target = top.joinpath(*name.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for entry in folder.iterdir():
            if entry.name == "__pycache__" or (target / entry.name).exists():
                continue
            (target / entry.name).symlink_to(entry)
        # mypy prints the paths under its working folder (the repository) relative to it
        for shown_as in (target, os.path.relpath(target, ROOT)):
            shown[f"{shown_as}{os.sep}"] = f"{folder.relative_to(ROOT)}{os.sep}"
    return shown


def main(argv: list[str]) -> int:
    cache = ROOT / ".mypy_cache"
    tree = cache / "plint-tree"
    shutil.rmtree(tree, ignore_errors=True)
    shown = link_tree(tree, package_dirs())
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(cache),
            *argv,
            str(tree / "plint"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    # the longest link folder first, so that plint/rules/ is shown as rules/, not lint/rules/
    order = sorted(shown, key=len, reverse=True)
    for line in (run.stdout + run.stderr).splitlines():
        for link in order:
            line = line.replace(link, shown[link])
        print(line)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
