"""The DeepSpeed config a training script builds in Python, read statically with `ast` (never imported or run).

DeepSpeed-Chat and many RLHF and fine-tuning scripts pass no JSON: they build a dict and hand it to
`deepspeed.initialize(config=...)` (or to the HF Trainer as `TrainingArguments(deepspeed=...)`), often through a
helper called with the script's own arguments (`get_train_ds_config(offload=args.offload, stage=args.zero_stage)`
in dschat/utils/ds_utils.py). This module follows that as far as it is literal: dict and list literals, names
assigned before the call, `d["key"] = value`, `if` on known values, calls of functions defined in the script or
in modules of the checked tree it imports (arguments bound to parameters and defaults), `args.<name>` as the
launch gives `--<name>` or else as the script's `add_argument(..., default=...)` says, and `json.load(open(path))`
(then the file is the launch's DeepSpeed config). Everything else is unknown. Evaluation is bounded (statements,
call depth, file size). A `PipelineModule` built in the script is reported too (PL309).
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from plint.reading.shell.model import Word
from plint.record import record
from plint.source import SourceFile, Span, parse_python, probe, read_bytes
from plint.values import Value

_MAX_BYTES = 512 * 1024
_MAX_STEPS = 5000  # statements and expressions evaluated for one launch
_MAX_DEPTH = 4  # nested calls of the script's own functions


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = _Unknown()
# the key a dict carries when some of its keys are known only at run time (no Python string can be it)
OPEN_KEYS = "\0keys known at run time"


class _Opened:
    """A file the script opened (`with open(path) as f`): json.load(f) reads path."""

    __slots__ = ("path",)

    def __init__(self, path: "Found"):
        self.path = path


_ARGS = object()  # the parsed command line (argparse's Namespace)


@record
class Found:
    """A value of the evaluated program and where it was written."""

    value: Any  # a plain value, a dict of str -> Found, a list of Found, UNKNOWN or _ARGS
    span: Span | None = None
    origin: str = "literal"


@record
class ScriptConfig:
    facts: dict  # layout fact name -> Value
    where: str  # the call that receives the config, for notes


class _Budget(Exception):
    pass


class _Module:
    """One Python file of the tree: its syntax tree, its text for spans, its top-level functions."""

    def __init__(self, path: str, display: str, data: bytes):
        self.path = path
        self.source = SourceFile(display, data.decode("utf-8", "surrogateescape"))
        self.tree = parse_python(data, display)
        starts, offset = [0], 0
        for line in data.split(b"\n"):
            offset += len(line) + 1
            starts.append(offset)
        self._starts = starts
        self.functions = {n.name: n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def span(self, node: ast.AST) -> Span | None:
        # positions, where the node has them (expressions, statements, keywords, arguments; not a module)
        line, end_line = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if line is None or end_line is None:
            return None
        start = self._starts[line - 1] + getattr(node, "col_offset", 0)
        end = self._starts[end_line - 1] + getattr(node, "end_col_offset", 0)
        return self.source.span(start, end)


def _load(path: str, root: str) -> _Module | None:
    """The module at path, parsed once per file version (the launch's facts read it up to three times)."""
    if not probe(Path(path).is_file):
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _parsed(path, root, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=64)
def _parsed(path: str, root: str, size: int, mtime: int) -> _Module | None:
    try:
        data = read_bytes(path)
        if len(data) > _MAX_BYTES:
            return None
        return _Module(path, os.path.relpath(path, root), data)
    except (OSError, SyntaxError, ValueError):  # outside the root (Refused), not Python
        return None


def _call_name(node: ast.AST) -> str | None:
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


class _Evaluator:
    def __init__(self, script: _Module, root: str, argv: list[Word]):
        self.script, self.root, self.steps = script, root, 0
        self.modules: dict[str, _Module] = {script.path: script}
        self.argv = argv
        self.defaults = self._argparse_defaults(script)
        self.json_path: Found | None = None

    # ---- the command line and argparse's defaults ----
    def _argparse_defaults(self, module: _Module) -> dict[str, tuple[Found, bool, Any]]:
        """--name -> (default, is a store_true/false switch, type) of every add_argument in the module."""
        out: dict[str, tuple[Found, bool, str | None]] = {}
        for node in ast.walk(module.tree):
            if not (isinstance(node, ast.Call) and _call_name(node) == "add_argument"):
                continue
            names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            action = kw.get("action")
            action_name = action.value if isinstance(action, ast.Constant) else None
            switch = action_name in ("store_true", "store_false")
            if "default" in kw:
                default = Found(_literal(kw["default"]), module.span(kw["default"]), "default")
            elif switch:
                default = Found(action_name == "store_false", module.span(node), "default")
            else:
                default = Found(None, module.span(node), "default")  # argparse's default is None
            kind = kw.get("type")
            for name in names:
                if name.startswith("--"):
                    dest = kw.get("dest")
                    # argparse sets the dest as an attribute: a name (a str)
                    key = (
                        dest.value
                        if isinstance(dest, ast.Constant) and isinstance(dest.value, str)
                        else name[2:].replace("-", "_")
                    )
                    out[key] = (default, switch, kind.id if isinstance(kind, ast.Name) else None)
        return out

    def arg(self, name: str) -> Found:
        default, switch, kind = self.defaults.get(name, (Found(UNKNOWN), False, None))
        spellings = {f"--{name}", f"--{name.replace('_', '-')}"}
        for i, word in enumerate(self.argv):
            text = word.text
            if text is None:
                continue
            option, eq, inline = text.partition("=")
            if option not in spellings:
                continue
            if switch:
                return Found(True, word.value_span)
            value_word = word.after(len(option) + 1) if eq else (self.argv[i + 1] if i + 1 < len(self.argv) else None)
            if value_word is None or value_word.text is None:
                return Found(UNKNOWN, word.value_span)
            return Found(_convert(value_word.text, kind), value_word.value_span)
        return default

    # ---- statements ----
    def tick(self) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Budget

    def run(
        self, body: list[ast.stmt], env: dict, module: _Module, target: ast.AST | None = None, depth: int = 0
    ) -> Found | None:
        """Run statements; with target, stop at the statement holding it and return None (env is then the state
        the target sees); without, return what a `return` gives."""
        for stmt in body:
            self.tick()
            if target is not None and any(n is target for n in ast.walk(stmt)):
                for block in _blocks(stmt):
                    if any(n is target for b in block for n in ast.walk(b)):
                        return self.run(block, env, module, target, depth)
                return None
            if isinstance(stmt, ast.Return):
                return self.expr(stmt.value, env, module, depth) if stmt.value is not None else Found(None)
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                value = self.expr(stmt.value, env, module, depth)
                for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    self._assign(t, value, env, module, depth)
            elif isinstance(stmt, ast.If):
                test = self.expr(stmt.test, env, module, depth).value
                if test is UNKNOWN or test is _ARGS:
                    for name in _assigned(stmt):
                        env[name] = Found(UNKNOWN)
                else:
                    result = self.run(stmt.body if test else stmt.orelse, env, module, None, depth)
                    if result is not None:
                        return result
            elif isinstance(stmt, (ast.With, ast.Try)):
                for item in getattr(stmt, "items", []):  # with open(path) as f: f stands for the opened path
                    if isinstance(item.optional_vars, ast.Name):
                        opened = item.context_expr
                        env[item.optional_vars.id] = (
                            Found(_Opened(self.expr(opened.args[0], env, module, depth)))
                            if isinstance(opened, ast.Call) and _call_name(opened) == "open" and opened.args
                            else Found(UNKNOWN)
                        )
                result = self.run(stmt.body, env, module, None, depth)
                if result is not None:
                    return result
            elif isinstance(stmt, (ast.For, ast.While, ast.AugAssign)):
                for name in _assigned(stmt):
                    env[name] = Found(UNKNOWN)
        return None

    def _assign(self, target: ast.AST, value: Found, env: dict, module: _Module, depth: int) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Tuple) and value.value is _ARGS:  # args, unknown = parser.parse_known_args()
            for i, elt in enumerate(target.elts):
                if isinstance(elt, ast.Name):
                    env[elt.id] = value if i == 0 else Found(UNKNOWN)
        elif isinstance(target, ast.Tuple):
            for elt in target.elts:
                if isinstance(elt, ast.Name):
                    env[elt.id] = Found(UNKNOWN)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            holder = env.get(target.value.id)
            key = self.expr(target.slice, env, module, depth).value
            if holder is not None and isinstance(holder.value, dict) and isinstance(key, str):
                holder.value[key] = value

    # ---- expressions ----
    def expr(self, node: ast.AST, env: dict, module: _Module, depth: int) -> Found:
        self.tick()
        span = module.span(node)
        if isinstance(node, ast.Constant):
            return Found(node.value, span)
        if isinstance(node, ast.Dict):
            out: dict[str, Found] = {}
            for k, v in zip(node.keys, node.values):
                if k is None:  # {**other}
                    merged = self.expr(v, env, module, depth).value
                    if isinstance(merged, dict):
                        out.update(merged)
                    else:
                        out[OPEN_KEYS] = Found(True, span)
                    continue
                key = self.expr(k, env, module, depth).value
                if isinstance(key, str):
                    out[key] = self.expr(v, env, module, depth)
                else:  # a key computed at run time (`{dtype: {...}}`): any section may be it
                    out[OPEN_KEYS] = Found(True, span)
            return Found(out, span)
        if isinstance(node, (ast.List, ast.Tuple)):
            return Found([self.expr(e, env, module, depth) for e in node.elts], span)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            return self._module_constant(node.id, module, depth)
        if isinstance(node, ast.Attribute):
            base = self.expr(node.value, env, module, depth)
            return self.arg(node.attr) if base.value is _ARGS else Found(UNKNOWN, span)
        if isinstance(node, ast.Subscript):
            base = self.expr(node.value, env, module, depth).value
            key = self.expr(node.slice, env, module, depth).value
            if isinstance(base, dict) and isinstance(key, str) and key in base:
                return base[key]
            return Found(UNKNOWN, span)
        if isinstance(node, ast.IfExp):
            test = self.expr(node.test, env, module, depth).value
            if test is UNKNOWN or test is _ARGS:
                return Found(UNKNOWN, span)
            return self.expr(node.body if test else node.orelse, env, module, depth)
        if isinstance(node, (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp)):
            return Found(self._operation(node, env, module, depth), span)
        if isinstance(node, ast.Call):
            return self._call(node, env, module, depth)
        return Found(UNKNOWN, span)

    def _operation(self, node: ast.AST, env: dict, module: _Module, depth: int) -> Any:
        def plain(n: ast.AST) -> Any:
            return _plain(self.expr(n, env, module, depth))

        try:
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                x = plain(node.operand)
                return UNKNOWN if x is UNKNOWN else not x
            if isinstance(node, ast.BoolOp):
                values = [plain(v) for v in node.values]
                if any(v is UNKNOWN for v in values):
                    return UNKNOWN
                return all(values) if isinstance(node.op, ast.And) else any(values)
            if isinstance(node, ast.Compare) and len(node.ops) == 1:
                a, b = plain(node.left), plain(node.comparators[0])
                if a is UNKNOWN or b is UNKNOWN:
                    return UNKNOWN
                op = node.ops[0]
                table = {ast.Eq: a == b, ast.NotEq: a != b}
                if type(op) in table:
                    return table[type(op)]
                if isinstance(op, (ast.In, ast.NotIn)) and isinstance(b, (list, tuple, str, dict)):
                    return (a in b) == isinstance(op, ast.In)
                if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                    return {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b}.get(type(op), UNKNOWN)
            if isinstance(node, ast.BinOp):
                a, b = plain(node.left), plain(node.right)
                if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
                    ops = {
                        ast.Add: lambda: a + b,
                        ast.Sub: lambda: a - b,
                        ast.Mult: lambda: a * b,
                        ast.FloorDiv: lambda: a // b if b else UNKNOWN,
                    }
                    return ops[type(node.op)]() if type(node.op) in ops else UNKNOWN
        except TypeError:
            return UNKNOWN
        return UNKNOWN

    def _call(self, node: ast.Call, env: dict, module: _Module, depth: int) -> Found:
        name = _call_name(node)
        span = module.span(node)
        if name in ("parse_args", "parse_known_args", "parse_args_into_dataclasses"):
            return Found(_ARGS, span)
        if (
            name == "load"
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "json"
            and node.args
        ):
            return self._json_load(node.args[0], env, module, depth)
        if name == "dict" and not node.args:
            return Found({k.arg: self.expr(k.value, env, module, depth) for k in node.keywords if k.arg}, span)
        found = self._function(name, module) if name is not None and isinstance(node.func, ast.Name) else None
        if found is None or depth >= _MAX_DEPTH:
            return Found(UNKNOWN, span)
        func, where = found
        local = self._bind(func, node, env, module, depth, where)
        result = self.run(func.body, local, where, None, depth + 1)
        return result if result is not None else Found(UNKNOWN, span)

    def _json_load(self, arg: ast.AST, env: dict, module: _Module, depth: int) -> Found:
        opened = arg.args[0] if isinstance(arg, ast.Call) and _call_name(arg) == "open" and arg.args else arg
        path = self.expr(opened, env, module, depth)
        if isinstance(path.value, _Opened):
            path = path.value.path
        if isinstance(path.value, str):
            self.json_path = path
        return Found(UNKNOWN, module.span(arg))

    def _bind(
        self,
        func: ast.FunctionDef | ast.AsyncFunctionDef,
        call: ast.Call,
        env: dict,
        module: _Module,
        depth: int,
        where: _Module,
    ) -> dict:
        params = func.args.posonlyargs + func.args.args
        defaults = dict(zip([p.arg for p in params[len(params) - len(func.args.defaults) :]], func.args.defaults))
        defaults.update({p.arg: d for p, d in zip(func.args.kwonlyargs, func.args.kw_defaults) if d is not None})
        local: dict[str, Found] = {}
        for param, d in defaults.items():
            local[param] = self.expr(d, {}, where, depth)
        for p, a in zip(params, call.args):
            local[p.arg] = self.expr(a, env, module, depth)
        for k in call.keywords:
            if k.arg is not None:
                local[k.arg] = self.expr(k.value, env, module, depth)
        for p in params + func.args.kwonlyargs:
            local.setdefault(p.arg, Found(UNKNOWN))
        return local

    def _function(self, name: str, module: _Module) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, _Module] | None:
        if name in module.functions:
            return module.functions[name], module
        for node in module.tree.body:  # from pkg.mod import name
            if isinstance(node, ast.ImportFrom) and node.module and any(a.name == name for a in node.names):
                other = self._import(node.module, node.level, module)
                if other is not None and name in other.functions:
                    return other.functions[name], other
        return None

    def _import(self, dotted: str, level: int, module: _Module) -> _Module | None:
        """A module of the checked tree: relative to the importing file's folder, or a folder above it up to the
        root (`dschat.utils.ds_utils` from training/step1_supervised_finetuning/main.py)."""
        relative = dotted.replace(".", os.sep) + ".py"
        here = os.path.dirname(module.path)
        for _ in range(max(level - 1, 0)):
            here = os.path.dirname(here)
        for _ in range(8):
            candidate = os.path.join(here, relative)
            if candidate in self.modules:
                return self.modules[candidate]
            loaded = _load(candidate, self.root)
            if loaded is not None:
                self.modules[candidate] = loaded
                return loaded
            if os.path.realpath(here) == os.path.realpath(self.root) or os.path.dirname(here) == here:
                break
            here = os.path.dirname(here)
        return None

    def _module_constant(self, name: str, module: _Module, depth: int) -> Found:
        for node in reversed(module.tree.body):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return self.expr(node.value, {}, module, depth + 1) if depth < _MAX_DEPTH else Found(UNKNOWN)
        return Found(UNKNOWN)


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return UNKNOWN


def _convert(text: str, kind: str | None) -> Any:
    converters = {"int": int, "float": float, "str": str}
    if kind in converters:
        try:
            return converters[kind](text)
        except ValueError:
            return UNKNOWN
    return text


def _plain(found: Found) -> Any:
    v = found.value
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    blocks = [getattr(stmt, name) for name in ("body", "orelse", "finalbody") if getattr(stmt, name, None)]
    return blocks + [h.body for h in getattr(stmt, "handlers", [])]


def _assigned(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


# the calls that receive a DeepSpeed config: deepspeed.initialize(config= / config_params=), the HF Trainer's
# arguments (TrainingArguments and its subclasses' deepspeed=)
_RECEIVERS = {
    "initialize": ("config", "config_params"),
    "TrainingArguments": ("deepspeed",),
    "Seq2SeqTrainingArguments": ("deepspeed",),
    "SFTConfig": ("deepspeed",),
}


def _receiver(tree: ast.AST) -> tuple[ast.Call, ast.AST] | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (name := _call_name(node)) in _RECEIVERS:
            if name == "initialize" and not (
                isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "deepspeed"
            ):
                continue
            for k in node.keywords:
                if k.arg in _RECEIVERS[name]:
                    return node, k.value
    return None


def _enclosing(tree: ast.Module, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Module:
    for candidate in ast.walk(tree):
        if (
            isinstance(candidate, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(n is node for n in ast.walk(candidate))
            and not any(
                isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef))
                and inner is not candidate
                and any(n is node for n in ast.walk(inner))
                for inner in ast.walk(candidate)
            )
        ):
            return candidate
    return tree


def pipeline_module(script: str, root: str) -> Value | None:
    """Where the script builds a DeepSpeed PipelineModule (a call of it, or of a class deriving from it)."""
    module = _load(script, root)
    if module is None:
        return None
    pipes = {"PipelineModule"} | {
        n.name
        for n in ast.walk(module.tree)
        if isinstance(n, ast.ClassDef)
        and any(
            (isinstance(b, ast.Name) and b.id == "PipelineModule")
            or (isinstance(b, ast.Attribute) and b.attr == "PipelineModule")
            for b in n.bases
        )
    }
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call) and _call_name(node) in pipes:
            return Value(True, module.span(node), "literal", f"{module.source.path} builds a {_call_name(node)}")
    return None


def script_ds_config(script: str, root: str, argv: list[Word]) -> ScriptConfig | None:
    """What the DeepSpeed config the entry script builds says (facts for the layout), or None when the script
    passes no config plint can find."""
    module = _load(script, root)
    if module is None:
        return None
    found = _receiver(module.tree)
    if found is None:
        return None
    call, config_node = found
    evaluator = _Evaluator(module, root, argv)
    holder = _enclosing(module.tree, call)
    env: dict[str, Found] = {}
    if isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for p in holder.args.args:
            env[p.arg] = Found(_ARGS if p.arg in ("args", "opt", "opts") and evaluator.defaults else UNKNOWN)
    where = f"{module.source.path}:{call.lineno} {_call_name(call)}"
    try:
        evaluator.run(holder.body, env, module, call)
        config = evaluator.expr(config_node, env, module, 0)
    except (_Budget, RecursionError):
        return ScriptConfig({}, where)
    facts: dict[str, Value] = {}
    if evaluator.json_path is not None:
        path = evaluator.json_path
        facts["deepspeed.config_path"] = Value(path.value, path.span, path.origin, f"json.load in {where}")
    if isinstance(config.value, dict):
        _config_facts(config.value, facts, where)
    return ScriptConfig(facts, where)


def _get(tree: dict, *keys: str) -> Found | None:
    node: Any = tree
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key] if key == keys[-1] else node[key].value
    return node


def _value(found: Found, note: str) -> Value:
    if found.value is UNKNOWN or isinstance(found.value, (dict, list)) or found.value is _ARGS:
        return Value(None, found.span, "unresolved", f"{note}: not a literal the reader can follow")
    return Value(found.value, found.span, found.origin, note)


def _config_facts(config: dict, facts: dict, where: str) -> None:
    """Layout facts from the evaluated config dict (the keys DeepSpeed reads: deepspeed/runtime/config.py)."""
    open_keys = OPEN_KEYS in config  # a section named at run time may be any of those below: no default then
    unknown = Value(None, None, "unresolved", f"the config {where} receives has keys known only at run time")
    stage = _get(config, "zero_optimization", "stage")
    if stage is not None:
        facts["parallel.zero_stage"] = _value(stage, f"zero_optimization.stage of the config {where} receives")
    else:
        facts["parallel.zero_stage"] = (
            unknown if open_keys else Value(0, None, "default", f"the config {where} receives has no ZeRO stage: 0")
        )
    # "bfloat16" is DeepSpeed's older name of the bf16 section, still read (BFLOAT16_OLD,
    # deepspeed/runtime/precision_config.py get_bfloat16_config); DeepSpeed-Chat's ds_utils writes it
    for name, section in (("bf16", "bf16"), ("bf16", "bfloat16"), ("fp16", "fp16")):
        enabled = _get(config, section, "enabled")
        if enabled is not None and enabled.value is True:
            facts["precision"] = Value(
                name, enabled.span, enabled.origin, f"{section}.enabled of the config {where} receives"
            )
            break
        if enabled is not None and enabled.value is UNKNOWN:
            facts["precision"] = _value(enabled, f"{name}.enabled of the config {where} receives")
    else:
        if "precision" not in facts and open_keys:
            facts["precision"] = unknown
        elif "precision" not in facts and not any(k in config for k in ("bf16", "fp16", "bfloat16", "amp")):
            facts["precision"] = Value("fp32", None, "default", f"the config {where} receives enables no bf16/fp16")
    for part in ("offload_optimizer", "offload_param"):
        device = _get(config, "zero_optimization", part, "device") or _get(config, "zero_optimization", part)
        if device is not None and isinstance(device.value, str) and device.value != "none":
            facts[f"offload.{part}"] = Value(device.value, device.span, device.origin, f"zero_optimization.{part}")
        elif device is not None and device.value is UNKNOWN:
            facts[f"offload.{part}"] = _value(device, f"zero_optimization.{part}.device")
    for key, fact in (
        ("train_micro_batch_size_per_gpu", "batch.micro"),
        ("gradient_accumulation_steps", "batch.grad_accum"),
    ):
        found = _get(config, key)
        if found is not None and isinstance(found.value, int) and not isinstance(found.value, bool):
            facts[fact] = Value(found.value, found.span, found.origin, f"{key} of the config {where} receives")


def script_defaults(script: str, root: str) -> dict[str, Value]:
    """The defaults the entry script declares for its own options, by field name: argparse's
    `add_argument("--max_seq_len", default=512)` and the dataclass fields HfArgumentParser turns into options
    (`model_max_length: int = field(default=512)`). Literal defaults only."""
    module = _load(script, root)
    if module is None:
        return {}
    out: dict[str, Value] = {}
    evaluator = _Evaluator(module, root, [])
    for name, (found, _, _) in evaluator.defaults.items():
        if found.value not in (None, UNKNOWN):
            out[name] = Value(
                found.value, found.span, "default", f"{module.source.path}: --{name} defaults to {found.value!r}"
            )
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None):
                continue
            value: ast.expr | None = stmt.value
            if isinstance(value, ast.Call) and _call_name(value) == "field":
                value = next((k.value for k in value.keywords if k.arg == "default"), None)
            if value is None:
                continue  # field() without a default
            literal = _literal(value)
            if literal is not UNKNOWN and literal is not None:
                out.setdefault(
                    stmt.target.id,
                    Value(
                        literal,
                        module.span(value),
                        "default",
                        f"{module.source.path}: {node.name}.{stmt.target.id} defaults to {literal!r}",
                    ),
                )
    return out
