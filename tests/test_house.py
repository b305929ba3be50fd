"""The shape of the house (DESIGN.md "The house"): plint's modules import one another one way, down the
flow (reading -> checking -> reports), never in a circle.

The import graph is built statically (ast, nothing imported) from every module under lint/ (package
plint) and rules/ (plint.rules). An edge is any import of another plint module: at module level, under
`if TYPE_CHECKING:`, and inside functions too. A function-level import still ties the two modules
together (each needs the other to work), so deferring an import does not excuse a circle; it is only
a way to defer a start-up cost.
"""

from __future__ import annotations

import ast
from pathlib import Path

from fixture_paths import ROOT

PACKAGES = {"plint": ROOT / "lint", "plint.rules": ROOT / "rules"}  # pyproject.toml's package-dir


def modules() -> dict[str, Path]:
    """Module name -> file, for every module of plint."""
    out: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The plint modules that a module imports, wherever in the file the import stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            # `from plint.x import y` imports the module plint.x.y when there is one, else plint.x
            candidates = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in candidates:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
    return targets


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def test_the_graph_sees_the_imports():
    graph = import_graph()
    assert "plint.rules.base" in graph["plint.rules.registry"]
    assert "plint.rules.topology" in graph["plint.rules.registry"]
    assert "plint.fixing.fix_registry" in graph["plint.fixing.layout_fixers"]


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    found = circles(import_graph())
    assert not found, "plint modules import one another in a circle: " + "; ".join(
        " <-> ".join(component) for component in found
    )


def test_lint_holds_only_the_shared_types_and_the_entry():
    """Every stage has its own folder; lint/ itself keeps the contract types every stage shares."""
    top = sorted(p.name for p in (ROOT / "lint").glob("*.py"))
    assert len(top) <= 12, top


def test_no_module_over_800_lines():
    """A module that grows past 800 lines holds more than one concern: split it along them."""
    long = {
        name: n for name, path in modules().items() if (n := len(path.read_text(encoding="utf-8").splitlines())) > 800
    }
    assert not long, long


# ---- the flow: which stage may import which ------------------------------------------------------

CONTRACT = {"layout", "values", "diagnostics", "source", "root", "bounds", "record", "escape", "keytree"}
LATER_THAN_READING = {
    "checking",
    "cost",
    "planning",
    "fixing",
    "dryrun",
    "pictures",
    "report",
    "cli",
    "github",
    "rules",
}

# What a stage must not import (DESIGN.md "The house"): readers know nothing of rules or what follows
# them, rules nothing of file syntax or outputs, reporters take finished results, only the entry
# reaches the commands.
FORBIDDEN = {
    "contract": {"catalog", "reading"} | LATER_THAN_READING,
    "reading": LATER_THAN_READING,
    "rules": {"reading", "report", "pictures", "fixing", "cli", "github", "dryrun"},
    "report": {"cli", "fixing", "dryrun", "planning", "github"},
    "checking": {"report", "cli", "fixing", "planning", "github", "pictures", "dryrun"},
    "fixing": {"cli", "report", "pictures", "github"},
    "pictures": {"cli", "fixing", "github", "planning"},
    "planning": {"cli", "fixing", "github"},
    "cost": {"cli", "report", "fixing", "pictures", "github", "planning", "dryrun"},
    "dryrun": {"cli", "report", "fixing", "pictures", "github", "planning"},
    "github": {"cli", "fixing", "planning", "dryrun"},
}

# Imports against the flow that stand today, each to be taken out (not added to): the module, what it
# imports, and why it is still there. None is left (issue 28): the shell's words are contract types
# (plint.source), the rule context names a Protocol of what a rule sees of a file, the DeepSpeed engine's
# defaults are a catalog, escaping is a contract module and the fix availability is the rule record's.
AGAINST_THE_FLOW: dict[tuple[str, str], str] = {}


def stage(module: str) -> str:
    """A module's stage: its folder under plint, "contract" for the shared types in lint/ itself."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in {"entry", "__main__"}:
        return "entry"
    if parts[1] in CONTRACT:
        return "contract"
    return parts[1]


def against_the_flow(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {
        (name, target)
        for name, targets in graph.items()
        for target in targets
        if stage(target) in FORBIDDEN.get(stage(name), set())
    }


def test_stages_are_read_from_the_module_names():
    assert stage("plint.layout") == "contract"
    assert stage("plint.reading.shell.evaluator") == "reading"
    assert stage("plint.rules.topology") == "rules"
    assert stage("plint") == stage("plint.entry") == "entry"
    assert against_the_flow({"plint.report.text": {"plint.cli.commands", "plint.report.common"}}) == {
        ("plint.report.text", "plint.cli.commands")
    }


def test_imports_run_down_the_flow():
    found = against_the_flow(import_graph())
    new = sorted(found - set(AGAINST_THE_FLOW))
    assert not new, "imports against the flow (DESIGN.md, The house): " + "; ".join(f"{a} -> {b}" for a, b in new)
    gone = sorted(set(AGAINST_THE_FLOW) - found)
    assert not gone, "no longer imported, take them off AGAINST_THE_FLOW: " + "; ".join(f"{a} -> {b}" for a, b in gone)


# ---- imports inside functions ---------------------------------------------------------------------

# What a function may import for itself, to keep it off plint's start-up (plint check on one launch is
# timed by benchmarks/bench_check.py): the third-party libraries of a command or an output, standard
# modules a check does not otherwise load, and the stages a check reaches only for some files or commands.
# Everything else is imported at the top of the module, where a reader sees what it depends on.
FUNCTION_IMPORTS_ALLOWED = (
    # third-party: a command's or an output's library, the optional dry-run back ends, the parser's bindings
    "click",
    "rich",
    "jinja2",
    "markupsafe",
    "jsonschema",
    "yaml",
    "torch",
    "megatron",
    "deepspeed",
    "tree_sitter",
    "tree_sitter_bash",
    "tomli",
    "tomllib",
    # standard modules a check does not load unless it needs them
    "difflib",
    "subprocess",
    "tempfile",
    "shutil",
    "tarfile",
    "hashlib",
    "urllib",
    "textwrap",
    "logging",
    "dataclasses",
    "json",
    "fnmatch",
    "ast",
    "warnings",
    "io",
    "importlib",
    "_frozen_importlib",
    "_frozen_importlib_external",
    "contextlib",
    "marshal",
    "copy",
    "itertools",
    "math",
    "statistics",
    # plint's stages and parts reached only by some commands, outputs or kinds of file
    "plint.cli",
    "plint.report",
    "plint.escape",  # the output channels' escaping, imported where a command prints
    "plint.pictures",
    "plint.fixing",
    "plint.planning",
    "plint.dryrun",
    "plint.github",
    "plint.cost",
    "plint.catalog",
    "plint.schemas",
    "plint.templates",
    "plint.rules",
    "plint.checking",
    "plint.reading.sources",
    "plint.reading.normalise",
    "plint.reading.shell",
)

# Modules that still import others inside functions off the list, each to be moved to the top (none left)
FUNCTION_IMPORTS_TO_MOVE: set[str] = set()


def function_imports(path: Path, name: str) -> list[tuple[int, str]]:
    """(line, module) of every import inside a function of the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                found += [(node.lineno, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                found.append((node.lineno, base))
    return found


def allowed_in_a_function(module: str) -> bool:
    return any(module == a or module.startswith(a + ".") for a in FUNCTION_IMPORTS_ALLOWED)


def test_function_imports_are_on_the_allow_list():
    off = {
        name: [
            f"{line}: {module}" for line, module in function_imports(path, name) if not allowed_in_a_function(module)
        ]
        for name, path in modules().items()
    }
    new = {name: found for name, found in off.items() if found and name not in FUNCTION_IMPORTS_TO_MOVE}
    assert not new, f"imports inside functions that belong at the top of the module: {new}"
    moved = sorted(name for name in FUNCTION_IMPORTS_TO_MOVE if not off.get(name))
    assert not moved, f"nothing left to move: take them off FUNCTION_IMPORTS_TO_MOVE: {moved}"


def test_the_allow_list_reads_module_names():
    assert allowed_in_a_function("rich.console") and allowed_in_a_function("plint.cost.estimate")
    assert not allowed_in_a_function("richer") and not allowed_in_a_function("plint.root")


# ---- function size --------------------------------------------------------------------------------

MAX_FUNCTION_LINES = 100  # and complexity 30: ruff's C901 ([tool.ruff.lint.mccabe] in pyproject.toml)

# Functions over the limit today, each to be split along its steps (none left: from_layout was the last)
LONG_FUNCTIONS: set[str] = set()


def long_functions() -> dict[str, int]:
    found = {}
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found[f"{name}.{node.name}"] = lines
    return found


def test_no_function_over_100_lines():
    found = long_functions()
    new = {k: v for k, v in found.items() if k not in LONG_FUNCTIONS}
    assert not new, f"functions over {MAX_FUNCTION_LINES} lines (split them along their steps): {new}"
    gone = sorted(LONG_FUNCTIONS - set(found))
    assert not gone, f"no longer over the limit: take them off LONG_FUNCTIONS: {gone}"


# ---- shared helpers have public names -------------------------------------------------------------


def private_imports(name: str, path: Path, known: dict[str, Path]) -> list[str]:
    """`from plint.x import _y` and `module._y` of an imported plint module: a `_private` name used
    outside the module that defines it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[str] = []
    aliases: dict[str, str] = {}  # a local name -> the plint module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in known})
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            if base != "plint" and not base.startswith("plint."):
                continue
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif _is_private(alias.name) and base != name:
                    found.append(f"{node.lineno}: from {base} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            if isinstance(node.value, ast.Name) and aliases.get(node.value.id, name) != name:
                found.append(f"{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return found


def _is_private(identifier: str) -> bool:
    return identifier.startswith("_") and not identifier.startswith("__")


def test_private_imports_are_found(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(
        "from plint.cost.estimate import _links, group_links\nfrom plint import pictures\npictures._grid()\n",
        encoding="utf-8",
    )
    known = {"plint.cost.estimate": path, "plint.pictures": path}
    assert private_imports("plint.pictures.probe", path, known) == [
        "1: from plint.cost.estimate import _links",
        "3: plint.pictures._grid",
    ]


def test_no_private_name_crosses_modules():
    """A helper another module needs has a public name (issue 28): a `_name` is the module's own."""
    known = modules()
    found = {name: hits for name, path in known.items() if (hits := private_imports(name, path, known))}
    assert not found, f"`_private` names imported across modules (give them public names): {found}"
