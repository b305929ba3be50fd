"""The trainer's own argument parser, read from source: a flag catalog built statically (Python's `ast`,
never imported or run) from a Megatron-style `arguments.py` found in the launch's work tree or in a
checkout named by `--trainer-source`.

Forks (Megatron-DeepSpeed in its Microsoft, BigScience and Argonne branches, bigcode, epfLLM,
Pai-Megatron-Patch) each add their own flags; the parser beside a launch is the one that judges it.
What is read from each `add_argument` call: the option strings, dest, action (kind), type, default,
choices and nargs, each only when it is a literal the source states; `deepspeed.add_config_arguments`
adds DeepSpeed's own options, mutually exclusive groups are kept. The catalog document has the layout
of the shipped release catalogs (schemas/megatron_flags/), so every reader of a catalog works on it.
"""

from __future__ import annotations

import ast
import json
import os
import re
from plint.record import field, record
from functools import lru_cache
from pathlib import Path

from plint.root import read
from plint.source import parse_python

# Where Megatron-LM keeps its parser: megatron/training/ since core_v0.6, megatron/ before and in forks.
PARSER_FILES = ("megatron/training/arguments.py", "megatron/arguments.py")
VERSION_FILE = "megatron/core/package_info.py"
_FORMAT = 5  # bump when the catalog built from a source changes shape (invalidates cached copies)
_MAX_SOURCE_BYTES = 2 * 1024 * 1024  # an arguments.py is about 150 KB; more is not a parser
_ACTIONS = {
    "store",
    "store_true",
    "store_false",
    "store_const",
    "append",
    "append_const",
    "count",
    "help",
    "version",
    "extend",
}
# DeepSpeed's add_config_arguments (deepspeed/__init__.py, _add_core_arguments): taken from the
# Megatron-DeepSpeed catalog dumped from the real parser, which calls it.
_DEEPSPEED_OPTION_PREFIXES = ("--deepspeed", "--deepscale")


@record(frozen=True)
class ParserSource:
    """A parser found on disk: the tree holding `megatron/`, the parser file, and the entry script (with
    the local modules it imports) whose extra_args_provider adds flags."""

    tree: Path
    path: Path
    extra: tuple[Path, ...] = ()
    # functions the parser file hands its parser to that come from outside the tree (AIPerf-MoE's
    # `from fmoe.megatron import add_fmoe_args`): they add flags no source here lists ("fmoe.megatron.add_fmoe_args")
    outside: tuple[str, ...] = ()

    def describe(self) -> str:
        """How messages name it: "the parser in megatron/arguments.py of this repository"."""
        return f"the parser in {self.path.relative_to(self.tree).as_posix()} of this repository"


@record
class _Collected:
    actions: list[list] = field(default_factory=list)
    exclusive: list[list[str]] = field(default_factory=list)
    allow_abbrev: bool = True  # argparse's default; Megatron-LM passes allow_abbrev=False
    deepspeed: bool = False  # deepspeed.add_config_arguments(parser) is called
    generated: bool = False  # some groups are generated from config dataclasses (ArgumentGroupFactory)
    environment: set[str] = field(default_factory=set)  # variables validate_args reads (os.environ[...])
    problems: list[str] = field(default_factory=list)


def find_parser(start: Path, stop: Path | None = None) -> ParserSource | None:
    """The nearest Megatron-style parser at or above `start`, not above `stop` (the checked tree's root)."""
    start = start.resolve()
    stop = stop.resolve() if stop is not None else None
    for folder in (start, *start.parents):
        if stop is not None and folder != stop and stop not in folder.parents:
            break
        for name in PARSER_FILES:
            candidate = folder / name
            if candidate.is_file():
                inside, outside = _parser_extensions(candidate, folder)
                return ParserSource(folder, candidate, tuple(inside), tuple(outside))
        if stop is None and (folder / ".git").exists():
            break
    return None


def with_entry_script(parser: ParserSource, script: Path | None) -> ParserSource:
    """The parser plus the entry script (when it is inside the parser's tree) and the tree-local modules
    it imports: their add_argument calls are the extra_args_provider's flags."""
    if script is None or not script.is_file():
        return parser
    tree = parser.tree
    try:
        script.resolve().relative_to(tree.resolve())
    except ValueError:
        return parser
    extra = [*parser.extra, script]
    for module in _local_imports(script, tree):
        if module not in extra and module != parser.path:
            extra.append(module)
    return ParserSource(parser.tree, parser.path, tuple(extra), parser.outside)


def _parser_extensions(parser_file: Path, tree: Path) -> tuple[list[Path], list[str]]:
    """The tree's modules whose functions the parser file hands its parser to, as forks add their flags
    (the zero-bubble fork's `parser = add_zero_bubble_args(parser)`, imported from megatron/core/zbpp_utils.py):
    a function imported by name and called with `parser`; and, as "module.function", those whose module is not
    in the tree (an installed package's)."""
    module = _parse(parser_file)
    if module is None:
        return [], []
    sources: dict[str, str] = {}  # imported name -> its module
    imported: dict[str, str] = {}  # imported name -> the module's own name for it
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                sources[alias.asname or alias.name] = node.module
                imported[alias.asname or alias.name] = alias.name
    called = {
        node.func.id
        for node in ast.walk(module)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and any(isinstance(arg, ast.Name) and arg.id == "parser" for arg in node.args)
    }
    found: list[Path] = []
    outside: list[str] = []
    for name in sorted(called & sources.keys()):
        relative = Path(*sources[name].split("."))
        candidates = [c for c in (tree / relative.with_suffix(".py"), tree / relative / "__init__.py") if c.is_file()]
        if not candidates:
            outside.append(f"{sources[name]}.{imported[name]}")
        for candidate in candidates:
            if candidate != parser_file and candidate not in found:
                found.append(candidate)
    return found, outside


def _local_imports(script: Path, tree: Path) -> list[Path]:
    """Modules an entry script imports that live beside it or in the tree (`from config import x`,
    `from megatron.training.foo import bar`), as files."""
    tree_parse = _parse(script)
    if tree_parse is None:
        return []
    found: list[Path] = []
    for node in ast.walk(tree_parse):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        for name in names:
            relative = Path(*name.split("."))
            for base in (script.parent, tree):
                for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
                    if candidate.is_file() and candidate not in found:
                        found.append(candidate)
    return found


def _parse(path: Path) -> ast.Module | None:
    """A Python file read through the root in force (plint.root: nothing outside the checked tree)."""
    try:
        return parse_python(read(path, _MAX_SOURCE_BYTES), filename=str(path))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


_ARITHMETIC = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}


def _literal(node: ast.AST | None):
    """(value, ok): the node's value when it is a literal the source states (small number arithmetic
    such as `2**32` included: argparse defaults are written so)."""
    if node is None:
        return None, False
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        (a, ok_a), (b, ok_b) = _literal(node.left), _literal(node.right)
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
        if ok_a and ok_b and numbers and not (isinstance(node.op, ast.Pow) and abs(b) > 64):
            try:
                return _ARITHMETIC[type(node.op)](a, b), True
            except (ArithmeticError, ValueError):
                return None, False
        return None, False
    try:
        return ast.literal_eval(node), True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None, False


def _callee(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _kind(action: ast.AST | None) -> str:
    if action is None:
        return "store"
    value, ok = _literal(action)
    if ok:
        return value if value in _ACTIONS else "other"
    if _callee(action) == "BooleanOptionalAction":
        return "boolean_optional"
    return "other"  # the trainer's own action class


def _type_name(node: ast.AST | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Lambda):
        return "<lambda>"
    if isinstance(node, ast.Call):
        return _callee(node.func)
    return _callee(node)


def _row(call: ast.Call) -> list | None:
    options = []
    for arg in call.args:
        value, ok = _literal(arg)
        if not ok or not isinstance(value, str):
            return None  # a computed option string: nothing to say about it
        options.append(value)
    if not options or not all(o.startswith("-") for o in options):
        return None  # a positional argument
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    kind = _kind(keywords.get("action"))
    if kind == "boolean_optional":
        options += ["--no-" + o[2:] for o in options if o.startswith("--")]
    dest, ok = _literal(keywords.get("dest"))
    if not ok or not isinstance(dest, str):
        longs = [o for o in options if o.startswith("--")]
        dest = (longs[0] if longs else options[0]).lstrip("-").replace("-", "_")
    if "default" in keywords:
        default, ok = _literal(keywords["default"])
        default_repr = repr(default) if ok else ast.unparse(keywords["default"])
        if not ok:
            default = None
    else:
        default = {"store_true": False, "store_false": True, "help": "==SUPPRESS=="}.get(kind)
        default_repr = repr(default)
    choices, ok = _literal(keywords.get("choices"))
    if ok and isinstance(choices, (list, tuple, set, frozenset)):
        choices = sorted(map(str, choices)) if isinstance(choices, (set, frozenset)) else [str(c) for c in choices]
    else:
        choices = None
    nargs, ok = _literal(keywords.get("nargs"))
    if not ok:
        nargs = 0 if kind in ("store_true", "store_false", "store_const", "count", "help") else None
    return [
        options,
        dest,
        kind,
        _type_name(keywords.get("type")),
        default_repr,
        default if _plain(default) else None,
        choices,
        nargs,
    ]


def _plain(value) -> bool:
    """A default the catalog can hold as JSON: a scalar, or a list of scalars."""
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, (str, int, float, bool, type(None))) for v in value)
    return isinstance(value, (str, int, float, bool, type(None)))


def _collect(module: ast.Module, into: _Collected) -> None:
    """Every add_argument call in the module, wherever it stands (the `_add_*_args(parser)` helpers,
    groups, extra_args_provider functions), with mutually exclusive groups and allow_abbrev."""
    exclusive_groups: dict[str, list[str]] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if _callee(node.value.func) == "add_mutually_exclusive_group":
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        exclusive_groups[target.id] = []
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.fullmatch(r"[A-Z][A-Z0-9_]{3,}", node.value)
        ):
            into.environment.add(node.value)  # an environment variable the parser's checks read
        if not isinstance(node, ast.Call):
            continue
        name = _callee(node.func)
        if name == "ArgumentGroupFactory":
            into.generated = True
        elif name == "ArgumentParser":
            abbrev = next((k.value for k in node.keywords if k.arg == "allow_abbrev"), None)
            value, ok = _literal(abbrev)
            if ok and isinstance(value, bool):
                into.allow_abbrev = value
        elif (
            name == "add_config_arguments"
            and isinstance(node.func, ast.Attribute)
            and _callee(node.func.value) == "deepspeed"
        ):
            into.deepspeed = True
        elif name == "add_argument":
            row = _row(node)
            if row is None:
                continue
            into.actions.append(row)
            owner = node.func.value if isinstance(node.func, ast.Attribute) else None
            if isinstance(owner, ast.Name) and owner.id in exclusive_groups:
                exclusive_groups[owner.id].extend(row[0])
    into.exclusive.extend(group for group in exclusive_groups.values() if len(group) > 1)


def _version(tree: Path) -> str | None:
    """Megatron-core's version string (MAJOR.MINOR.PATCH in package_info.py), when the tree has one."""
    module = _parse(tree / VERSION_FILE)
    if module is None:
        return None
    parts: dict[str, object] = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value, ok = _literal(node.value)
            if ok:
                parts[node.targets[0].id] = value
    if all(isinstance(parts.get(k), int) for k in ("MAJOR", "MINOR")):
        return f"{parts['MAJOR']}.{parts['MINOR']}.{parts.get('PATCH', 0)}"
    return None


def _digest(files: list[Path]) -> str:
    import hashlib  # only a tree holding a parser pays for it (3-4 ms of start-up)

    h = hashlib.sha256(f"plint-parser-source/{_FORMAT}".encode())
    for path in files:
        h.update(str(path).encode() + b"\0")
        try:
            h.update(read(path, _MAX_SOURCE_BYTES))
        except OSError:
            h.update(b"<unreadable>")
    return h.hexdigest()[:32]


def _cache_path(digest: str) -> Path | None:
    from plint.schemas import cache_file

    where = cache_file(f"parser-source-{digest}.json")
    return Path(where).with_suffix(".json") if where else None


def build_document(parser: ParserSource) -> dict:
    """The catalog document (the shipped catalogs' layout) of a parser on disk."""
    collected = _Collected()
    main = _parse(parser.path)
    if main is None:
        raise ValueError(f"{parser.path.name} could not be parsed as Python")
    _collect(main, collected)
    for extra in parser.extra:
        module = _parse(extra)
        if module is not None:
            _collect(module, collected)
    seen: set[str] = set()
    actions = []
    for row in collected.actions:  # argparse refuses a second action with the same option string
        fresh = [o for o in row[0] if o not in seen]
        if fresh:
            seen.update(fresh)
            actions.append([fresh, *row[1:]])
    version = _version(parser.tree)
    borrowed = None
    if collected.deepspeed:
        _borrow(
            actions,
            seen,
            "megatron-deepspeed",
            lambda row: any(o.startswith(_DEEPSPEED_OPTION_PREFIXES) for o in row[0]),
        )
    if collected.generated:
        # Megatron-LM 0.14+ builds many groups from its config dataclasses at run time: what the source
        # cannot say statically comes from the shipped dump of the release the tree's version names.
        borrowed = _release_for(version)
        _borrow(actions, seen, borrowed, lambda row: True)
    if not any("-h" in row[0] for row in actions):
        actions.insert(0, [["-h", "--help"], "help", "help", None, "'==SUPPRESS=='", "==SUPPRESS==", None, 0])
    if len(actions) < 20:
        raise ValueError(f"{parser.path.name} defines only {len(actions)} options: not a trainer's parser")
    flavour = "megatron-deepspeed" if collected.deepspeed else "megatron"
    modules = [main, *(m for m in map(_parse, parser.extra) if m is not None)]
    return {
        "swiglu_sizes_ffn": "--swiglu" not in seen or not _validates(modules) or any(map(_sizes_gated_mlp, modules)),
        "global_batch_rewritten": _rewrites_global_batch(main),
        "clamps_parallel_sizes": any(map(_clamps_parallel_sizes, modules)),
        "release": borrowed or _nearest_release(flavour, version, seen),
        "flavour": flavour,
        "repo": None,
        "ref": None,
        "commit": None,
        "date": None,
        "flags_only": False,
        "allow_abbrev": collected.allow_abbrev,
        "extra_flags": [],
        "fields": ["flags", "dest", "kind", "type", "default_repr", "default", "choices", "nargs"],
        "actions": actions,
        "exclusive_groups": collected.exclusive,
        "environment": sorted(collected.environment),
        "version": version,
        "borrowed": borrowed,
        "source": parser.path.relative_to(parser.tree).as_posix(),
    }


def _validates(modules: list[ast.Module]) -> bool:
    """Whether the parser's files define validate_args, where Megatron and its forks derive what flags leave out."""
    return any(isinstance(n, ast.FunctionDef) and n.name == "validate_args" for m in modules for n in m.body)


def _top_level_assignments(module: ast.Module, functions: tuple[str, ...], attribute: str):
    """The statements of the named functions' own bodies (not under an `if` or a loop) assigning `args.<attribute>`."""
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and node.name in functions:
            for statement in node.body:
                targets = statement.targets if isinstance(statement, ast.Assign) else []
                if any(isinstance(t, ast.Attribute) and t.attr == attribute for t in targets):
                    yield statement


def _rewrites_global_batch(module: ast.Module) -> bool:
    """Whether parse_args itself sets args.global_batch_size, whatever was given (not under an `if`, as Megatron's
    default `if args.global_batch_size is None:` is). A fork of Megatron-DeepSpeed rounds it up to a multiple of
    micro-batch x dp there, before Megatron's divisibility check (Supercomputing-System-AI-Lab/Megatron-DeepSpeed
    c3527d3, megatron/arguments.py: aligned_train_batch)."""
    return any(_top_level_assignments(module, ("parse_args",), "global_batch_size"))


def _clamps_parallel_sizes(module: ast.Module) -> bool:
    """Whether validate_args clamps the tensor-parallel size with min() (`args.tensor_model_parallel_size =
    min(args.tensor_model_parallel_size, args.world_size)`, Megatron-LM until 8af3dae72a) rather than asserting."""
    return any(
        isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name) and s.value.func.id == "min"
        for s in _top_level_assignments(module, ("validate_args", "parse_args"), "tensor_model_parallel_size")
    )


def _sizes_gated_mlp(module: ast.Module) -> bool:
    """Whether the source narrows the MLP under --swiglu, as Megatron-LM's validate_args does since the flag came
    (2cc3dac, April 2023: `if args.swiglu:` setting `args.ffn_hidden_size`): an `if` on args.swiglu whose body
    assigns args.ffn_hidden_size."""
    for node in ast.walk(module):
        if not isinstance(node, ast.If):
            continue
        if not any(isinstance(n, ast.Attribute) and n.attr == "swiglu" for n in ast.walk(node.test)):
            continue
        for statement in node.body:
            for n in ast.walk(statement):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
                if any(isinstance(t, ast.Attribute) and t.attr == "ffn_hidden_size" for t in targets):
                    return True
    return False


def _borrow(actions: list[list], seen: set[str], release: str, wanted) -> None:
    from plint.catalog.flags import load_flag_catalog

    for row in load_flag_catalog(release)._rows:
        if wanted(row) and not seen.intersection(row[0]):
            actions.append(list(row))
            seen.update(row[0])


def _release_for(version: str | None) -> str:
    """The shipped Megatron-LM release nearest at or below a megatron-core version ("0.19.1" -> "0.19")."""
    from plint.catalog.flags import latest_release, releases

    shipped = [r for r in releases() if r[0].isdigit()]
    if version is None:
        return latest_release("megatron")
    wanted = tuple(int(x) for x in version.split(".")[:2])
    older = [r for r in shipped if tuple(int(x) for x in r.split(".")) <= wanted]
    return max(older, key=lambda r: tuple(int(x) for x in r.split("."))) if older else shipped[0]


def _nearest_release(flavour: str, version: str | None, options: set[str]) -> str:
    """The shipped release the other checks (defaults, renamed flags, validate_args) follow for a parser read
    from source: the one megatron-core's version names, else the one whose options overlap most."""
    from plint.catalog.flags import load_flag_catalog, releases, release_info

    if flavour == "megatron" and version is not None:
        return _release_for(version)
    candidates = [r for r in releases() if (release_info(r) or {}).get("flavour") == flavour]

    def overlap(release: str) -> float:
        theirs = set(load_flag_catalog(release).options())
        return len(theirs & options) / max(1, len(theirs | options))

    return max(candidates, key=overlap)


def load_source_catalog(parser: ParserSource):
    """The FlagCatalog of a parser on disk, cached by the content of its files in the user cache.
    ValueError when the parser cannot be read (the caller falls back to a shipped release, with a note)."""
    files = [parser.path, *parser.extra]
    return _load_cached(_digest(files), parser)


@lru_cache(maxsize=8)
def _load_cached(digest: str, parser: ParserSource):
    from plint.catalog.flags import FlagCatalog

    cache = _cache_path(digest)
    doc = None
    if cache is not None and cache.is_file():
        try:
            doc = json.loads(cache.read_text("utf-8"))
        except (OSError, ValueError):
            doc = None
    if doc is None:
        doc = build_document(parser)
        if cache is not None:
            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
                tmp = cache.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(doc), "utf-8")
                os.replace(tmp, cache)
            except OSError:
                pass  # no cache folder: parse again next time
    catalog = FlagCatalog(doc)
    catalog.origin = parser.describe()
    return catalog
