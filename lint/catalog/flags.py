"""The trainer flag catalog: which options each Megatron-LM release and Megatron-DeepSpeed fork
accepts, with dest, kind, type, default, choices and nargs (schemas/megatron_flags/, built by
scripts/build_flag_catalog.py from the trainers' real argument parsers).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
TYPE_CHECKING = False  # typing is imported by type checkers only: it costs start-up time
if TYPE_CHECKING:
    from typing import Any



def _catalog_dir() -> Path:
    # plint.schemas is an empty package: its location is cheaper to ask than importlib.resources
    import plint.schemas

    return Path(plint.schemas.__file__).parent / "megatron_flags"


class FlagSpec:
    """One argparse action. A plain slotted class: a catalog builds hundreds of these per check."""

    __slots__ = ("flags", "dest", "kind", "type", "default_repr", "default", "choices", "nargs")

    def __init__(self, flags, dest, kind, type_, default_repr, default, choices, nargs):
        self.flags: tuple[str, ...] = flags
        self.dest: str | None = dest
        self.kind: str = kind  # store | store_true | store_false | help | ...
        self.type: str | None = type_
        self.default_repr: str | None = default_repr
        self.default: Any = default
        self.choices: tuple[str, ...] | None = choices
        self.nargs: Any = nargs

    def __repr__(self) -> str:
        return f"FlagSpec({self.flags!r}, dest={self.dest!r}, kind={self.kind!r})"

    @property
    def takes_value(self) -> bool:
        if self.kind in ("store_true", "store_false", "help", "store_const", "count"):
            return False
        return self.nargs != 0


class FlagCatalog:
    def __init__(self, doc: dict):
        self.release: str = doc["release"]
        self.flavour: str = doc["flavour"]
        self.flags_only: bool = doc.get("flags_only", False)
        self.allow_abbrev: bool = doc.get("allow_abbrev", False)
        self.date: str | None = doc.get("date")
        self._by_option: dict[str, FlagSpec] = {}
        self._by_dest: dict[str, FlagSpec] = {}
        for flags, dest, kind, typ, default_repr, default, choices, nargs in doc["actions"]:
            spec = FlagSpec(tuple(flags), dest, kind, typ, default_repr, default,
                            tuple(map(str, choices)) if choices is not None else None, nargs)
            for f in flags:
                self._by_option[f] = spec
            if dest and dest not in self._by_dest:
                self._by_dest[dest] = spec
        for extra in doc.get("extra_flags", []):
            self._by_option.setdefault(extra, FlagSpec((extra,), None, "store", None, None, None, None, None))

    def lookup(self, option: str) -> FlagSpec | None:
        return self._by_option.get(option)

    def by_dest(self, dest: str) -> FlagSpec | None:
        return self._by_dest.get(dest)

    def options(self) -> list[str]:
        return list(self._by_option)

    def default(self, dest: str) -> Any:
        spec = self._by_dest.get(dest)
        return spec.default if spec is not None else None


@lru_cache(maxsize=None)
def _index() -> dict:
    return json.loads((_catalog_dir() / "index.json").read_text())


def releases() -> list[str]:
    return list(_index()["releases"])


def latest_release(flavour: str = "megatron") -> str:
    return _index()["latest"][flavour]


def default_release(flavour: str) -> str:
    """The release checked against when the configuration names none (reported by PL003)."""
    return latest_release("megatron-deepspeed" if flavour == "megatron-deepspeed" else "megatron")


@lru_cache(maxsize=None)
def load_flag_catalog(release: str) -> FlagCatalog:
    info = _index()["releases"].get(release)
    if info is None:
        raise KeyError(f"unknown trainer release {release!r}; known: {', '.join(releases())}")
    return FlagCatalog(json.loads((_catalog_dir() / info["file"]).read_text()))
