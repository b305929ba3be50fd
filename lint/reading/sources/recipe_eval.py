"""Megatron-Bridge recipes read without running them: a recipe is a Python function that builds a ConfigContainer
(`cfg = _sft_common()`, `cfg.model.context_parallel_size = 8`, `return cfg`), and this module follows such a function
through the recipe modules of the checked tree. It knows literals, names bound to them, `cfg.a.b = value`, keyword
constructors (`TrainingConfig(micro_batch_size=1)`), calls of functions it finds in the tree (their parameters bound),
tuple unpacking and `if` tests on known values. Anything else leaves what it touches unknown: a key set under an `if`
it cannot decide, in a loop, or to a value it cannot compute, and every key under an object handed to a function it
cannot read. A key no statement sets is not given by the recipe (its dataclass default, which plint does not read).
Bounded: calls at most MAX_DEPTH deep, MAX_STEPS statements, MAX_MODULES files."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable

_NOT_GIVEN = object()
MAX_DEPTH = 8
MAX_STEPS = 20_000
MAX_MODULES = 64


class Unknown:
    """A value the recipe computes in a way plint does not follow; `why` says how."""

    def __init__(self, why: str):
        self.why = why

    def __repr__(self) -> str:
        return f"Unknown({self.why!r})"


class Config:
    """The keys a recipe gives a config object, by dotted path ("train.micro_batch_size"); `opaque` when it came from a
    constructor plint cannot read, whose every key may be set."""

    def __init__(self, keys: dict[str, object] | None = None, opaque: str | None = None):
        self.keys: dict[str, object] = keys or {}
        self.opaque = opaque


class View:
    """A config object at a path inside another (`cfg.model`): reads and writes go to the root's keys."""

    def __init__(self, root: Config, prefix: str):
        self.root, self.prefix = root, prefix

    def path(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def get(self, name: str) -> object:
        """The value at `name`, or a view of the object there (one set to an unknown value still takes keys: its
        unset ones stay unknown, as `lookup` finds). A view read as a plain value is unknown."""
        key = self.path(name)
        value = self.root.keys.get(key)
        return View(self.root, key) if value is None or isinstance(value, Unknown) else value

    def set(self, name: str, value: object) -> None:
        key = self.path(name)
        for old in [k for k in self.root.keys if k == key or k.startswith(key + ".")]:
            del self.root.keys[old]
        if isinstance(value, View):
            items = value.items()
            value = Config(items, value.root.opaque) if items or value.root.opaque else Unknown("a value plint lacks")
        if isinstance(value, Config):
            if value.opaque is not None and not value.keys:
                self.root.keys[key] = Unknown(value.opaque)  # every key under it unknown
            for sub, v in value.keys.items():
                self.root.keys[f"{key}.{sub}"] = v
        else:
            self.root.keys[key] = value

    def items(self) -> dict[str, object]:
        start = self.prefix + "." if self.prefix else ""
        return {k[len(start) :]: v for k, v in self.root.keys.items() if k.startswith(start)}

    def taint(self, why: str) -> None:
        """Every key under this object unknown (it was handed to code plint does not read)."""
        start = self.prefix + "." if self.prefix else ""
        for key in [k for k in self.root.keys if k.startswith(start)]:
            self.root.keys[key] = Unknown(why)
        if self.prefix:
            self.root.keys.setdefault(self.prefix, Unknown(why))
        else:
            self.root.opaque = why


NOT_SET = object()  # lookup's answer for a key no statement of the recipe sets


def lookup(config: Config, key: str) -> object:
    """The value a recipe gives `key` (Unknown when it cannot be followed); NOT_SET when no statement sets it."""
    if key in config.keys:
        return config.keys[key]
    parts = key.split(".")
    for n in range(len(parts) - 1, 0, -1):  # `cfg.model = <unknown>` hides every key under model
        value = config.keys.get(".".join(parts[:n]))
        if isinstance(value, Unknown):
            return value
    return Unknown(config.opaque) if config.opaque is not None else NOT_SET


class Module:
    """One recipe module: its functions, its module-level names and where its imports come from."""

    def __init__(self, path: str, tree: ast.Module):
        self.path = path
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.names: dict[str, ast.expr] = {}
        self.imports: dict[str, tuple[str, int, str]] = {}  # local name -> (module, level, name)
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.names[node.targets[0].id] = node.value
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (node.module or "", node.level, alias.name)


class Recipes:
    """The recipe modules of a tree, parsed on demand (`read` gives a file's text, None when it is not read)."""

    def __init__(self, read: Callable[[str], str | None], source_roots: list[str], tree: str):
        self.read, self.source_roots, self.tree = read, source_roots, os.path.realpath(tree)
        self.modules: dict[str, Module | None] = {}
        self.steps = 0

    def module(self, path: str) -> Module | None:
        if path not in self.modules:
            if sum(m is not None for m in self.modules.values()) >= MAX_MODULES:
                return None
            inside = os.path.realpath(path).startswith(self.tree + os.sep)  # `from ...... import x` may climb out
            text = self.read(path) if inside and os.path.isfile(path) else None
            try:
                self.modules[path] = Module(path, ast.parse(text)) if text is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self.modules[path] = None
        return self.modules[path]

    def module_file(self, importer: str, module: str, level: int) -> str | None:
        """The file of `from MODULE import ...` written in `importer` (level: the leading dots)."""
        parts = module.split(".") if module else []
        if level:
            base = os.path.dirname(importer)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            bases = self.source_roots
        for base in bases:
            stem = os.path.join(base, *parts)
            for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
                if self.module(candidate) is not None:
                    return candidate
        return None

    def function(self, module: Module, name: str, depth: int = 0) -> tuple[Module, ast.FunctionDef] | None:
        """The definition `name` stands for in `module`: its own, or one it imports (through re-exports)."""
        if name in module.functions:
            return module, module.functions[name]
        if name not in module.imports or depth > MAX_DEPTH:
            return None
        source, level, original = module.imports[name]
        path = self.module_file(module.path, source, level)
        target = self.module(path) if path is not None else None
        if target is None:
            # `from .h100 import qwen3` then `qwen3.f`: not followed; `from pkg.mod import f` of a package module
            return None
        return self.function(target, original, depth + 1)

    def call(self, module: Module, name: str) -> object:
        """The value the recipe function `name` of `module` returns, called without arguments."""
        found = self.function(module, name)
        if found is None:
            return Unknown(f"{name} is not a function plint finds among the recipes")
        try:
            return Frame(self, *found, 0).run([], {})
        except RecursionError:  # an expression nested deeper than Python's stack follows
            return Unknown(f"{name} nests deeper than plint follows")


class Frame:
    """One call of a recipe function: its local names and the statements it runs."""

    def __init__(self, recipes: Recipes, module: Module, function: ast.FunctionDef, depth: int):
        self.recipes, self.module, self.function, self.depth = recipes, module, function, depth
        self.locals: dict[str, object] = {}
        self.returned: object = Unknown(f"{function.name} returns nothing plint follows")
        self.done = False

    def run(self, args: list[object], kwargs: dict[str, object]) -> object:
        spec = self.function.args
        params = [a.arg for a in spec.posonlyargs + spec.args]
        defaults = dict(zip(params[len(params) - len(spec.defaults) :], spec.defaults))
        defaults.update({a.arg: d for a, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None})
        for name in params + [a.arg for a in spec.kwonlyargs]:
            given = args.pop(0) if args and name in params else kwargs.pop(name, _NOT_GIVEN)
            if given is not _NOT_GIVEN:
                self.locals[name] = given
            elif name in defaults:
                self.locals[name] = Frame(self.recipes, self.module, self.function, self.depth).value(defaults[name])
            else:
                self.locals[name] = Unknown(f"{self.function.name}'s {name} is not given")
        self.block(self.function.body)
        return self.returned

    # ---- statements ---------------------------------------------------------------------------------------

    def block(self, body: list[ast.stmt]) -> None:
        for statement in body:
            if self.done:
                return
            self.recipes.steps += 1
            if self.recipes.steps > MAX_STEPS:
                self.returned, self.done = Unknown("the recipe runs past plint's bound on statements"), True
                return
            self.statement(statement)

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Return):
            self.returned = self.value(node.value) if node.value is not None else None
            self.done = True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = self.value(node.value)
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                self.assign(target, value)
        elif isinstance(node, ast.AugAssign):
            self.assign(node.target, Unknown("changed in place (+=)"))
        elif isinstance(node, ast.If):
            self.branch(node)
        elif isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            self.unknown_block(node.body + node.orelse, "set in a loop")
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            self.block(node.body)
        elif isinstance(node, ast.Try):
            self.unknown_block(node.body + node.orelse + node.finalbody, "set in a try block")
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self.value(node.value)  # a call for its effect: a recipe function it follows, else taints its arguments

    def assign(self, target: ast.expr, value: object) -> None:
        if isinstance(target, ast.Name):
            self.locals[target.id] = value
        elif isinstance(target, ast.Attribute):
            owner = self.value(target.value)
            if isinstance(owner, View):
                owner.set(target.attr, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = value if isinstance(value, tuple) and len(value) == len(target.elts) else None
            for n, element in enumerate(target.elts):
                self.assign(element, items[n] if items is not None else Unknown("unpacked from a value plint lacks"))

    def branch(self, node: ast.If) -> None:
        test = self.value(node.test)
        if not isinstance(test, (Unknown, View, Config)):
            self.block(node.body if test else node.orelse)
            return
        self.unknown_block(node.body + node.orelse, "set under a condition plint cannot decide")

    def unknown_block(self, body: list[ast.stmt], why: str) -> None:
        """Every name and key the statements assign becomes unknown (they may run or not, once or more)."""
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            for target in _targets(node):
                self.assign(target, Unknown(why))
            if isinstance(node, ast.Call):
                self.taint_arguments(node, why)
            if isinstance(node, ast.Return):
                self.returned = Unknown(why)

    # ---- expressions --------------------------------------------------------------------------------------

    def value(self, node: ast.expr) -> object:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.Attribute):
            owner = self.value(node.value)
            return owner.get(node.attr) if isinstance(owner, View) else Unknown(f"attribute {node.attr}")
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Tuple):
            return tuple(self.value(e) for e in node.elts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            operand = self.value(node.operand)
            return operand if isinstance(operand, Unknown) else not operand
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return _compare(node.ops[0], self.value(node.left), self.value(node.comparators[0]))
        if isinstance(node, ast.BinOp):
            return _arithmetic(node.op, self.value(node.left), self.value(node.right))
        if isinstance(node, ast.BoolOp):
            return _boolean(node.op, [self.value(v) for v in node.values])
        if isinstance(node, ast.IfExp):
            test = self.value(node.test)
            return (
                Unknown("a choice on a value plint lacks")
                if not _known(test)
                else self.value(node.body if test else node.orelse)
            )
        return Unknown(f"a {type(node).__name__} expression")

    def name(self, name: str) -> object:
        if name in self.locals:
            return self.locals[name]
        if name in self.module.names:
            return Frame(self.recipes, self.module, self.function, self.depth).value(self.module.names[name])
        return Unknown(f"the name {name}")

    def call(self, node: ast.Call) -> object:
        args = [self.value(a) for a in node.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.value(k.value) for k in node.keywords if k.arg is not None}
        name = node.func.id if isinstance(node.func, ast.Name) else None
        found = self.recipes.function(self.module, name) if name is not None else None
        if found is not None and self.depth < MAX_DEPTH and not any(isinstance(a, ast.Starred) for a in node.args):
            return Frame(self.recipes, *found, self.depth + 1).run(args, kwargs)
        callee = ast.unparse(node.func)
        constructor = name is not None and name[:1].isupper() and not args  # a dataclass by its keywords
        if not constructor:  # a function may change what it is handed; a constructor keeps it
            self.taint_arguments(node, f"handed to {callee}, which plint does not read")
            return View(Config(opaque=f"built by {callee}, which plint does not read"), "")
        keys: dict[str, object] = {}  # TrainingConfig(micro_batch_size=1): its keys, a nested config's under its name
        for key, value in kwargs.items():
            if isinstance(value, (Config, View)):
                inner = value.keys if isinstance(value, Config) else value.items()
                keys.update({f"{key}.{k}": v for k, v in inner.items()})
                if (value.opaque if isinstance(value, Config) else value.root.opaque) and not inner:
                    keys[key] = Unknown(f"{key} from {callee}")
            else:
                keys[key] = value
        return View(Config(keys), "")

    def taint_arguments(self, node: ast.Call, why: str) -> None:
        for argument in [*node.args, *(k.value for k in node.keywords)]:
            value = self.value(argument) if isinstance(argument, (ast.Name, ast.Attribute)) else None
            if isinstance(value, View):
                value.taint(why)
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, (ast.Name, ast.Attribute)):
            owner = self.value(node.func.value)  # cfg.model.finalize(): a method may change its object
            if isinstance(owner, View):
                owner.taint(why)


def _targets(node: ast.AST) -> list[ast.expr]:
    """What an assignment statement assigns to (none for any other node)."""
    if isinstance(node, ast.Assign):
        return node.targets
    return [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []


def _known(*values: object) -> bool:
    return not any(isinstance(v, (Unknown, View, Config)) for v in values)


def _compare(op: ast.cmpop, left: object, right: object) -> object:
    if isinstance(op, (ast.Is, ast.IsNot)) and right is None and not isinstance(left, Unknown):
        return (left is None) == isinstance(op, ast.Is)
    if not _known(left, right):
        return Unknown("a comparison of values plint lacks")
    try:
        compare = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Gt: lambda a, b: a > b}
        compare.update({ast.Lt: lambda a, b: a < b, ast.GtE: lambda a, b: a >= b, ast.LtE: lambda a, b: a <= b})
        return compare[type(op)](left, right) if type(op) in compare else Unknown("a comparison plint does not make")
    except TypeError:
        return Unknown("a comparison Python refuses")


def _arithmetic(op: ast.operator, left: object, right: object) -> object:
    if not (_known(left, right) and all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right))):
        return Unknown("arithmetic on values plint lacks")
    a, b = int(left), int(right)  # type: ignore[call-overload]
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult) and abs(a) < 2**31 and abs(b) < 2**31:
        return a * b
    if isinstance(op, ast.FloorDiv) and b:
        return a // b
    return Unknown("arithmetic plint does not do")


def _boolean(op: ast.boolop, values: list[object]) -> object:
    if not _known(*values):
        return Unknown("a condition on values plint lacks")
    return all(values) if isinstance(op, ast.And) else any(values)
