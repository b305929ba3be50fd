"""The trainer flag catalog: which options each Megatron-LM release and Megatron-DeepSpeed fork
accepts, with dest, kind, type, default, choices and nargs (schemas/megatron_flags/, built by
scripts/build_flag_catalog.py from the trainers' real argument parsers, shared/data/megatron-flags).

Release names: "0.4" ... "0.19" and "main" (NVIDIA/Megatron-LM), "megatron-deepspeed"
(deepspeedai/Megatron-DeepSpeed, the continuation of microsoft/Megatron-DeepSpeed) and "bigscience"
(bigscience-workshop/Megatron-DeepSpeed). Loading is plint.schemas.read_json (which keeps a marshal copy
of the JSON in the user cache folder) plus a dict per release, cached.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

# kinds whose action never consumes a word (argparse nargs=0)
_NO_VALUE_KINDS = ("store_true", "store_false", "help", "boolean_optional", "store_const", "count")


# shipped releases whose validate_args clamps --tensor-model-parallel-size and --pipeline-model-parallel-size
CLAMPING_RELEASES = frozenset(("0.4", "0.6", "0.8", "megatron-deepspeed", "bigscience"))


class FlagSpec:
    """One argparse action. A plain slotted class: a catalog holds hundreds of these."""

    __slots__ = (
        "flags",
        "dest",
        "kind",
        "type",
        "default_repr",
        "default",
        "choices",
        "nargs",
        "shape_from",
        "inferred",
    )

    def __init__(
        self, flags, dest, kind, type_, default_repr, default, choices, nargs, shape_from=None, inferred=False
    ):
        self.flags: tuple[str, ...] = flags
        self.dest: str | None = dest
        # store | store_true | store_false | help | boolean_optional (--x / --no-x) | other (a
        # trainer's own action class) | unknown (names-only release, or a flag defined outside the dump)
        self.kind: str = kind
        self.type: str | None = type_  # the converter's name: "int", "float", "str", "<lambda>", ...
        self.default_repr: str | None = default_repr  # repr() of the default, as the parser held it
        self.default: Any = default  # the default's value when default_repr is a plain literal, else None
        self.choices: tuple[str, ...] | None = choices
        self.nargs: Any = nargs  # None (one value), 0, an int, "?", "*" or "+"
        # names-only releases: the full table the shape was borrowed from; inferred: the name itself
        # is missing from the release's (incomplete) list but both neighbouring releases have it
        self.shape_from: str | None = shape_from
        self.inferred: bool = inferred

    def __repr__(self) -> str:
        return f"FlagSpec({self.flags!r}, dest={self.dest!r}, kind={self.kind!r}, nargs={self.nargs!r})"

    @property
    def takes_value(self) -> bool | None:
        """Whether the option consumes words after it; None when the catalog cannot tell."""
        if self.kind in _NO_VALUE_KINDS:
            return False
        if self.kind == "unknown":
            return None
        return self.nargs != 0

    @property
    def has_literal_default(self) -> bool:
        """True when `default` is the real default (a plain literal, None included)."""
        return self.default is not None or self.default_repr == "None"


class FlagCatalog:
    """Every option string one trainer release accepts."""

    def __init__(self, doc: dict):
        self.release: str = doc["release"]
        self.flavour: str = doc["flavour"]
        self.flags_only: bool = doc.get("flags_only", False)
        self.allow_abbrev: bool = doc.get("allow_abbrev", False)
        self.date: str | None = doc.get("date")
        self.commit: str | None = doc.get("commit")
        self.ref: str | None = doc.get("ref")
        self._rows: list[list] = doc["actions"]
        # A catalog read from a parser on disk (plint.catalog.parser_source): its file, megatron-core's
        # version beside it, its mutually exclusive groups, and how messages name it.
        self.source: str | None = doc.get("source")
        self.version: str | None = doc.get("version")
        self.exclusive_groups: list[list[str]] = doc.get("exclusive_groups", [])
        # upper-case names (environment variables) the parser's own checks read; None for a shipped release
        self.environment: frozenset[str] | None = frozenset(doc["environment"]) if "environment" in doc else None
        # whether validate_args narrows the MLP under --swiglu (reading.sources.megatron_mlp): every shipped release
        # that has --swiglu does; a parser read from source says for itself
        self.swiglu_sizes_ffn: bool = doc.get("swiglu_sizes_ffn", True)
        # whether the parser's parse_args sets --global-batch-size's value itself before Megatron checks it (a
        # parser read from source says; no shipped release does)
        self.global_batch_rewritten: bool = doc.get("global_batch_rewritten", False)
        # whether validate_args clamps tp to the world size and pp to what tp leaves (`min(...)`) instead of asserting
        # divisibility: Megatron-LM from 52a5f2f272 (2020) until 8af3dae72a (2024-08-05, core 0.9), and the
        # Megatron-DeepSpeed forks (microsoft f4157be megatron/arguments.py); a parser read from source says for itself
        self.clamps_parallel_sizes: bool = doc.get("clamps_parallel_sizes", self.release in CLAMPING_RELEASES)
        self.origin: str | None = None
        self._specs: dict[int, FlagSpec] = {}
        self._by_option: dict[str, int] = {}
        self._by_dest: dict[str, int] = {}
        for i, row in enumerate(self._rows):
            for flag in row[0]:
                self._by_option.setdefault(flag, i)
            dest = row[1]
            if dest and dest not in self._by_dest:
                self._by_dest[dest] = i
        # Flags Megatron-LM adds only when an optional extension imports (meta's
        # defined_in_source_but_absent_here): accepted, shape unknown.
        for extra in doc.get("extra_flags", []):
            if extra not in self._by_option:
                self._rows.append([[extra], None, "unknown", None, None, None, None, None])
                self._by_option[extra] = len(self._rows) - 1

    def _spec(self, i: int) -> FlagSpec:
        spec = self._specs.get(i)
        if spec is None:
            row = self._rows[i]
            flags, dest, kind, typ, default_repr, default, choices, nargs = row[:8]
            extra = row[8:10] if len(row) >= 10 else (None, False)
            spec = FlagSpec(
                tuple(flags),
                dest,
                kind,
                typ,
                default_repr,
                default,
                tuple(map(str, choices)) if choices is not None else None,
                nargs,
                *extra,
            )
            self._specs[i] = spec
        return spec

    def spelling(self, option: str) -> str | None:
        """How this parser spells a Megatron-LM option: as Megatron-LM does, or with underscores where a fork
        defines that form instead (epfLLM/Megatron-LLM's --tensor_model_parallel_size, the same dest); None when it
        defines neither. For options the reader or a fix names, not options as written (those are looked up as
        written: argparse takes nothing else)."""
        if self.lookup(option) is not None:
            return option
        underscored = "--" + option[2:].replace("-", "_") if option.startswith("--") else option
        return underscored if underscored != option and self.lookup(underscored) is not None else None

    def lookup(self, option: str) -> FlagSpec | None:
        """The action an option string selects; no prefixes unless the parser allows abbreviations
        (Megatron-LM and both forks build theirs with allow_abbrev=False)."""
        i = self._by_option.get(option)
        if i is not None:
            return self._spec(i)
        if self.allow_abbrev and option.startswith("--") and len(option) > 2:
            hits = {self._by_option[o] for o in self._by_option if o.startswith(option)}
            if len(hits) == 1:  # argparse: an ambiguous prefix is an error, not a match
                return self._spec(hits.pop())
        return None

    def by_dest(self, dest: str) -> FlagSpec | None:
        i = self._by_dest.get(dest)
        return self._spec(i) if i is not None else None

    def options(self) -> list[str]:
        return list(self._by_option)

    def default(self, dest: str) -> Any:
        spec = self.by_dest(dest)
        return spec.default if spec is not None else None

    def __repr__(self) -> str:
        return f"FlagCatalog({self.release!r}, {len(self._by_option)} options)"


@lru_cache(maxsize=None)
def _index() -> dict:
    from plint.schemas import read_json  # a package with no imports: cheaper than importlib.resources

    return read_json("megatron_flags", "index.json")


def releases() -> list[str]:
    """Every release name, Megatron-LM oldest first, then the Megatron-DeepSpeed forks."""
    order = _index()["order"]
    return order["megatron"] + order["megatron-deepspeed"]


def latest_release(flavour: str = "megatron") -> str:
    """The newest tagged release of a flavour ("megatron" or "megatron-deepspeed")."""
    return _index()["latest"][flavour]


def default_release(flavour: str) -> str:
    """The release checked against when the configuration names none (reported by PL003)."""
    return latest_release("megatron-deepspeed" if flavour == "megatron-deepspeed" else "megatron")


def release_label(release: str) -> str:
    """How messages name a release: "Megatron-LM 0.19", "Megatron-DeepSpeed (bigscience fork)"."""
    if release == "megatron-deepspeed":
        return "Megatron-DeepSpeed (deepspeedai)"
    if release == "bigscience":
        return "Megatron-DeepSpeed (bigscience fork)"
    return f"Megatron-LM {release}"


def release_info(release: str) -> dict | None:
    """Index entry of a release: file, flavour, repo, ref, commit, date, flags_only."""
    return _index()["releases"].get(release)


_SPELLED = r"^(?:core_)?v?(\d+)\.(\d+)(?:\.\d+)?(?:rc\d+)?$"  # compiled on use: most names are exact
_FORK_ALIASES = {
    "deepspeedai": "megatron-deepspeed",
    "microsoft": "megatron-deepspeed",
    "megatron_deepspeed": "megatron-deepspeed",
    "bigscience-workshop": "bigscience",
}


def resolve_release(name: str) -> str | None:
    """A catalog release name for what users write ("0.16", "0.16.2", "core_v0.16.0", "main",
    "megatron-deepspeed", "microsoft"), or None when the catalog has no such release."""
    known = _index()["releases"]
    name = name.strip()
    if name in known:
        return name
    lowered = name.lower()
    if _FORK_ALIASES.get(lowered) in known:
        return _FORK_ALIASES[lowered]
    m = re.match(_SPELLED, lowered)
    if m and f"{int(m.group(1))}.{int(m.group(2))}" in known:
        return f"{int(m.group(1))}.{int(m.group(2))}"
    return None


@lru_cache(maxsize=None)
def load_flag_catalog(release: str) -> FlagCatalog:
    """The catalog of one release (KeyError naming the known releases when there is none)."""
    name = resolve_release(release)
    if name is None:
        raise KeyError(f"unknown trainer release {release!r}; known: {', '.join(releases())}")
    info = _index()["releases"][name]
    from plint.schemas import read_json

    return FlagCatalog(read_json("megatron_flags", info["file"]))
