"""The release a checked tree pins of a package plint judges against a release (DeepSpeed): an exact `NAME==VERSION`
in a requirements*.txt at the tree's top or among pyproject.toml's [project] dependencies, what `pip install -r` or
`pip install .` would install. As ruff takes its target version from `requires-python`, plint takes the trainer's
release from the project rather than from whatever is installed beside plint. Two files pinning different releases
pin none; a range (`>=`) pins none."""

from __future__ import annotations

import os
import re
import sys

from plint.root import read_text

PINNED_PACKAGES = ("deepspeed",)
MAX_REQUIREMENT_FILES = 8  # requirements*.txt files read at a tree's top
# `deepspeed==0.12.2`, `DeepSpeed[autotuning] == 0.14.4 ; sys_platform == "linux"` (PEP 508 with an exact version)
_EXACT = re.compile(
    r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*v?([0-9]+(?:\.[0-9]+)*)[0-9A-Za-z.+!-]*\s*(?:;.*)?$"
)


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503: DeepSpeed, deep_speed and deep-speed are one name


def _pins_in(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        found = _EXACT.match(line.split(" #", 1)[0])
        if found and _normalised(found.group(1)) in PINNED_PACKAGES:
            out[_normalised(found.group(1))] = found.group(2)
    return out


def _pyproject_dependencies(text: str) -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    try:
        project = tomllib.loads(text).get("project")
    except (tomllib.TOMLDecodeError, RecursionError):
        return []
    deps = project.get("dependencies") if isinstance(project, dict) else None
    return [d for d in deps if isinstance(d, str)] if isinstance(deps, list) else []


def pinned_releases(tree: str) -> dict[str, tuple[str, str]]:
    """{package: (version, the file that pins it, relative to the tree)} for the packages the tree pins exactly."""
    try:
        names = sorted(n for n in os.listdir(tree) if re.fullmatch(r"requirements[\w.-]*\.txt", n))
    except OSError:
        return {}
    found: dict[str, set[tuple[str, str]]] = {}
    files = [(n, (read_text(os.path.join(tree, n)) or "").splitlines()) for n in names[:MAX_REQUIREMENT_FILES]]
    if os.path.isfile(os.path.join(tree, "pyproject.toml")):
        files.append(("pyproject.toml", _pyproject_dependencies(read_text(os.path.join(tree, "pyproject.toml")) or "")))
    for name, lines in files:
        for package, version in _pins_in(lines).items():
            found.setdefault(package, set()).add((version, name))
    return {
        package: sorted(pins)[0]
        for package, pins in found.items()
        if len({version for version, _ in pins}) == 1  # files that disagree pin no release
    }
