"""The static bash evaluator: walks tree-sitter-bash nodes the way bash would run them, without
running anything, and records every simple command with fully expanded, provenance-carrying words.

What cannot be known statically (a command substitution, a variable nobody sets, a branch on such a
value) becomes an unknown Piece that says why; it is never guessed and never executed.
"""

from __future__ import annotations

import os
import re
from plint.record import field, record
TYPE_CHECKING = False  # typing is imported by type checkers only: it costs start-up time
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Callable

from plint.reading.shell import arith
from plint.reading.shell.arguments import (COUNT_NOT_GIVEN, NOT_GIVEN, getopts_step, is_argument_name,
                                    only_about_arguments, parameter_not_given)
from plint.reading.shell.files import lookup_file, path_key, resolve_path  # noqa: F401  (re-exported)
from plint.reading.shell.choices import Choice
from plint.reading.shell.placeholders import slot_pieces, slot_spans, slot_syntax_problems
from plint.reading.shell.model import (Command, MappedText, Piece, Problem, ShellResult, Var, VirtualFile,
                               Word, unknown)
from plint.reading.shell.unit import Unit
from plint.source import SourceFile, display_path, normal_path, path_is_file, read_bytes

IFS = " \t\n"
MAX_LOOP = 64
# the evaluator's share of plint.bounds: a value longer than this is unresolved, and the characters
# built per file are counted so a loop that copies large values stops too
MAX_PIECES = 4096  # pieces of one value (each is an object: `X="$X$X"` doubles them)
# pieces built into words and values per file, a character counting 1/64 of a piece: ~10-30 us each,
# so a 4 MiB line of 2 million words stops here rather than after a minute
MAX_WORK = 100_000
MAX_COMMAND_WORDS = 50_000  # a command longer than this is not expanded (its nodes alone cost ~100 MB)
MAX_DEPTH = 24
SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
DECLARE = {"export", "declare", "typeset", "local", "readonly"}
EXPANSIONS = {"expansion", "simple_expansion", "command_substitution", "arithmetic_expansion",
              "process_substitution"}


@record
class EvalOptions:
    env: dict[str, Var] = field(default_factory=dict)
    positional: list[Word] | None = None
    read_file: Callable[[Path], SourceFile | None] | None = None
    child_env: Callable[[Command, SourceFile], dict[str, Var]] | None = None
    max_steps: int = 20000
    # Values for variables the script assigns from something unknowable ($(nvidia-smi ...)):
    # [tool.plint.assume] / --assume. Unlike env, they replace an unknown assignment.
    assume: dict[str, str] = field(default_factory=dict)
    # Undecided branches to take one way (choice key -> index of the alternative): how plint reads each
    # launch a branch chooses (shell/choices.py); every other undecided branch still merges.
    choices: dict = field(default_factory=dict)
    # A loop over the script's arguments runs no time when none are given (as bash does); False merges
    # it as undecided instead, for a script that exits without arguments (read.py reads it both ways).
    no_arguments: bool = True


class _Exit(Exception):
    pass


class _Return(Exception):
    pass


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Budget(Exception):
    """Evaluation stopped: args[0] names the budget (steps, work)."""


def _display(path: str) -> str:
    """A path as diagnostics show it: relative to the working directory when under it."""
    try:
        return display_path(path)
    except OSError:
        return normal_path(path)


def _default_read(path: str) -> SourceFile | None:
    try:
        if not path_is_file(path) or os.stat(path).st_size > 4 * 1024 * 1024:
            return None
        return SourceFile(_display(path), read_bytes(path).decode("utf-8", "surrogateescape"))
    except OSError:
        return None


def _path_reader(read_file: Callable[[Path], SourceFile | None]) -> Callable[[str], SourceFile | None]:
    """EvalOptions.read_file as the evaluator calls it (with a string): it is given a Path."""
    from pathlib import Path  # only with a custom reader: pathlib costs start-up time

    return lambda path: read_file(Path(path))


# ---- fields: the words of an expansion before splitting ------------------------------------------
# A field is a list of (piece, splittable); an expansion yields a list of fields ("$@" yields many).

Fields = list[list[tuple[Piece, bool]]]
_ALL_ELEMENTS = re.compile(r"\$(@|\{@\}|\{[A-Za-z_][A-Za-z0-9_]*\[@\]\})")


def _join(a: Fields, b: Fields) -> Fields:
    if not b:
        return a
    a[-1].extend(b[0])
    a.extend(b[1:])
    return a


def _blank_edge(piece: Piece, end: int) -> bool:
    """An unknown piece each of whose alternatives is empty or starts (end 0) / ends (end -1) with IFS."""
    alts = piece.alternatives
    return bool(alts) and all(a in ("", "<unset>") or a[end] in IFS for a in alts)


def _split(fields: Fields) -> list[list[Piece]]:
    """Word splitting on IFS whitespace, keeping per-character provenance."""
    words: list[list[Piece]] = []
    for f in fields:
        current: list[Piece] = []
        keep = False
        for piece, splittable in f:
            if not splittable or not piece.known:
                if splittable and _blank_edge(piece, 0) and current:
                    words.append(current)  # `$OPTS` whose unknown tail is " --fp16" or "": a word of its own
                    current = []
                current.append(piece)
                keep = True
                if splittable and _blank_edge(piece, -1):
                    words.append(current)
                    current, keep = [], False
                continue
            text = piece.text or ""
            i = 0
            while i < len(text):
                if text[i] in IFS:
                    if current and (keep or any(p.text for p in current)):
                        words.append(current)
                    current, keep = [], False
                    while i < len(text) and text[i] in IFS:
                        i += 1
                    continue
                j = i
                while j < len(text) and text[j] not in IFS:
                    j += 1
                current.append(piece if i == 0 and j == len(text) else piece.sub(i, j))
                keep = True
                i = j
        if current or keep:
            words.append(current)
    return words


def _flatten(fields: Fields, sep: str = " ") -> tuple[Piece, ...]:
    out: list[Piece] = []
    for i, f in enumerate(fields):
        if i:
            out.append(Piece(sep, None, "literal"))
        out.extend(p for p, _ in f)
    return tuple(p for p in out if p.text != "" or not p.known)


def _text(pieces: tuple[Piece, ...] | list[Piece]) -> str | None:
    if any(not p.known for p in pieces):
        return None
    return "".join(p.text for p in pieces)  # type: ignore[misc]


def _is_empty(pieces) -> bool | None:
    """Whether expanded text is empty: known from known text, or from an unknown piece that is known
    not to be empty (Piece.nonempty); None when it cannot be told."""
    if any(p.text or p.nonempty for p in pieces):
        return False
    return True if all(p.known for p in pieces) else None


def _var_text(var: Var | None) -> str | None:
    if var is None:
        return ""
    if var.is_array:
        return _text([p for item in var.items[:1] for p in item])  # type: ignore[index]
    return _text(var.value)


def _same(a: Var | None, b: Var | None) -> bool:
    """Whether two branches left a variable alike (same pieces, unknown ones included)."""
    if a is b:
        return True
    if a is None or b is None:
        return False
    if a.is_array != b.is_array:
        return False
    if a.value == b.value and a.items == b.items:
        return True
    if a.is_array:
        ta, tb = [_text(i) for i in a.items], [_text(i) for i in b.items]  # type: ignore[union-attr]
        return ta == tb and None not in ta
    ta = _text(a.value)
    return ta is not None and ta == _text(b.value)


_MAX_ALTERNATIVES = 16


def _common_head(values: list[Var | None]) -> tuple[Piece, ...]:
    """The pieces every branch's (scalar, set) value starts with."""
    if any(v is None or v.is_array for v in values):
        return ()
    head: list[Piece] = []
    for pieces in zip(*(v.value for v in values)):  # type: ignore[union-attr]
        if not pieces[0].known or any(p != pieces[0] for p in pieces[1:]):
            break
        head.append(pieces[0])
    return tuple(head)


def _common_items(values: list[Var | None]) -> tuple[tuple[Piece, ...], ...] | None:
    """The known items every branch's array starts with; None unless every branch left an array."""
    if any(v is None or not v.is_array for v in values):
        return None
    head: list[tuple[Piece, ...]] = []
    for items in zip(*(v.items for v in values)):  # type: ignore[union-attr]
        if any(it != items[0] for it in items[1:]) or not all(p.known for p in items[0]):
            break
        head.append(items[0])
    return tuple(head)


def _joined(items) -> tuple[Piece, ...]:
    """Array items as one text, a blank between items."""
    out: list[Piece] = []
    for i, item in enumerate(items):
        if i:
            out.append(Piece(" "))
        out.extend(item)
    return tuple(out)


def _alternative_texts(pieces: tuple[Piece, ...]) -> list[str]:
    """Every text a value can have: known pieces as written, an unknown piece as each of its alternatives
    (or as ${NAME} when it has none: a value whose text is unknown, but that stands where it stands)."""
    texts = [""]
    for p in pieces:
        choices = (p.text,) if p.known else p.alternatives or ("${%s}" % p.name if p.name else "<unknown>",)
        texts = [t + c for t in texts for c in choices]  # type: ignore[operator]
        if len(texts) > _MAX_ALTERNATIVES:
            return ["<unknown>"]
    return texts


def _expanded_directives(raw: bytes, content: MappedText) -> bytes:
    """A heredoc body as sbatch reads it: `#SBATCH --nodes=$NODES` in an unquoted heredoc reaches Slurm
    expanded, so directive lines take their expanded text (an unknown part shown as ${NAME}), when the
    expansion keeps the lines as they were (lines, and so line numbers, stay those of the script)."""
    shown = "".join(p.text if p.known else "${%s}" % (p.name or "?") for p in content.pieces)
    raw_lines = raw.split(b"\n")
    new_lines = shown.encode("utf-8", "surrogateescape").split(b"\n")
    if len(raw_lines) != len(new_lines):
        return raw
    return b"\n".join(new if old.startswith((b"#SBATCH", b"#SLURM")) else old
                       for old, new in zip(raw_lines, new_lines))


def _unknown_arguments(word: Word) -> bool:
    """A word that is only the script's arguments, which plint was not given (`"$@"`)."""
    return bool(word.pieces) and all(not p.known and is_argument_name(p.name) and p.name != "#"
                                     and not p.name.isdigit() for p in word.pieces)


@record
class _State:
    vars: dict[str, Var]
    positional: list[Word] | None
    functions: dict


class Shell:
    def __init__(self, source: SourceFile, options: EvalOptions, result: ShellResult | None = None):
        self.options = options
        self.read = _default_read if options.read_file is None else _path_reader(options.read_file)
        self.result = result or ShellResult(source)
        self.vars: dict[str, Var] = {k: Var(v.name, v.value, v.items, True, v.span)
                                     for k, v in options.env.items()}
        self.positional: list[Word] | None = options.positional
        self.functions: dict[str, tuple] = {}
        self.readonly: set[str] = set()  # bash refuses to assign or unset these
        self.steps = 0
        self.work = 0  # characters built into values (capped)
        self.depth = 0
        self.conditions: list[str] = []
        self.loops = 0
        self.parents: list[tuple[Command, str]] = []
        self.active_files: set[str] = set()
        self.locals: list[dict[str, Var | None]] = []
        self.script_path = os.path.abspath(source.path)  # $0, as an absolute path
        self.arg0: Word | None = None  # $0 given to `bash -c STR NAME ...`
        self.current_file = self.script_path  # ${BASH_SOURCE[0]}: the file being run or sourced
        self.unknown_reasons: list[str] = []  # why the condition being evaluated is unknown
        self.last_output: MappedText | None = None  # what the last pipeline wrote to stdout
        self.body_ranges: dict[int, tuple[int, int]] = {}  # id(heredoc text) -> its bytes in the unit
        self.getopts_at, self.getopts_offset = 0, 0  # where in a word of grouped flags getopts stands

    # ---- entry points ----------------------------------------------------------------------------
    def run_file(self, source: SourceFile) -> None:
        from plint.reading.shell.parse import parse, recover, syntax_problems

        slots = slot_spans(source.data)
        # a template slot (`<PATH TO DATASET>`) is one unknown value, never a redirection
        unit = Unit.from_pieces(slot_pieces(source, slots), source) if slots else Unit.for_file(source)
        unit.tree = parse(unit.data)
        problems = syntax_problems(source, unit.tree, unit.data)
        if problems:
            # Read what bash would accept: the lines it rejects are blanked (offsets kept) and the
            # rest parsed again, so a line bash rejects does not swallow the launch after it.
            unit.data, problems = recover(source, problems, unit.data)
            unit.tree = parse(unit.data)
        elif slots and syntax_problems(source, parse(source.data)):
            # bash refuses the file as written only because of its slots (`X=<Specify path>`): each is a
            # value left to fill in (PL002, issue 12 point 8), not a syntax error of the script
            problems = slot_syntax_problems(source, slots)
        self.result.problems.extend(problems)
        key = os.path.abspath(source.path)
        self.active_files.add(key)
        outer, self.current_file = self.current_file, key
        try:
            self.block(unit.tree.root_node.children, unit)
        finally:
            self.active_files.discard(key)
            self.current_file = outer

    def run_unit(self, unit: Unit) -> None:
        from plint.reading.shell.parse import parse

        unit.tree = parse(unit.data)
        self.block(unit.tree.root_node.children, unit)

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.options.max_steps:
            raise _Budget(f"after {self.options.max_steps} steps (a loop or recursion it cannot bound)")

    def over_budget(self, size: int, chars: int) -> bool:
        """Count a value of `size` pieces and `chars` characters against the file's work budget;
        True when the value itself is over the value budget (plint.bounds)."""
        from plint.bounds import MAX_VALUE_CHARS

        self.work += size + chars // 64
        if self.work > MAX_WORK:
            raise _Budget(f"after building {MAX_WORK:,} words and values (plint's work budget per file)")
        return size > MAX_PIECES or chars > MAX_VALUE_CHARS

    @staticmethod
    def _too_big(what: str, span) -> Piece:
        from plint.bounds import MAX_VALUE_CHARS

        return unknown(f"{what} is over plint's value budget ({MAX_VALUE_CHARS // 1024} KiB, {MAX_PIECES} parts): "
                       "not evaluated", name=what.strip("${}[@]") or None, span=span)

    def capped(self, pieces: tuple[Piece, ...] | list[Piece], what: str, span=None) -> tuple[Piece, ...]:
        """A value as built, or one unknown piece saying so when it is over the value budget."""
        size = len(pieces)
        chars = size if size > MAX_PIECES else sum(len(p.text) for p in pieces if p.text is not None)
        return (self._too_big(what, span),) if self.over_budget(size, chars) else tuple(pieces)

    def capped_items(self, items: tuple[tuple[Piece, ...], ...], name: str, span) -> tuple[tuple[Piece, ...], ...]:
        """An array as built, or one unknown element when it is over the value budget."""
        from plint.bounds import MAX_ARRAY_ITEMS

        size = sum(len(item) for item in items[:MAX_ARRAY_ITEMS + 1])
        chars = sum(len(p.text) for item in items[:MAX_ARRAY_ITEMS + 1] for p in item if p.text is not None) \
            if size <= MAX_PIECES else size
        if len(items) > MAX_ARRAY_ITEMS or self.over_budget(size, chars):
            return ((self._too_big(f"${{{name}[@]}}", span),),)
        return items

    # ---- statements -------------------------------------------------------------------------------
    def block(self, nodes, unit: Unit) -> int | None:
        status: int | None = 0
        for node in nodes:
            if node.is_named and node.type not in ("comment", "heredoc_body"):
                status = self.statement(node, unit)
        return status

    def statement(self, node, unit: Unit) -> int | None:
        """Run one statement; returns its exit status (0 true, 1 false, None unknown)."""
        self.tick()
        t = node.type
        try:
            if t == "command":
                return self.command(node, unit)
            if t == "variable_assignment":
                self.assign(node, unit)
                return 0
            if t == "variable_assignments":
                for c in node.named_children:
                    self.assign(c, unit)
                return 0
            if t == "declaration_command":
                return self.declaration(node, unit)
            if t == "unset_command":
                self.unset([unit.text(c.start_byte, c.end_byte) for c in node.named_children])
                return 0
            if t == "redirected_statement":
                return self.redirected(node, unit)
            if t == "pipeline":
                return self.pipeline(node, unit)
            if t == "list":
                return self.and_or(node, unit)
            if t == "compound_statement" and node.children and node.children[0].type == "((":
                return self.arith_command(node, unit)
            if t in ("compound_statement", "do_group"):
                return self.block(node.children, unit)
            if t == "subshell":
                saved = self.snapshot()
                try:
                    return self.block(node.children, unit)
                finally:
                    self.restore(saved)
            if t == "if_statement":
                return self.if_statement(node, unit)
            if t == "case_statement":
                return self.case_statement(node, unit)
            if t == "for_statement":
                return self.for_statement(node, unit)
            if t == "c_style_for_statement":
                return self.c_for(node, unit)
            if t == "while_statement":
                return self.while_statement(node, unit)
            if t == "function_definition":
                name = node.child_by_field_name("name")
                body = node.child_by_field_name("body")
                if name is not None and body is not None:
                    self.functions[unit.text(name.start_byte, name.end_byte)] = (body, unit)
                return 0
            if t == "negated_command":
                inner = [c for c in node.named_children]
                s = self.statement(inner[0], unit) if inner else 0
                return None if s is None else int(s == 0)
            if t == "test_command":
                return self.test(node, unit)
            if t == "arithmetic_expansion" or t == "compound_statement":
                return None
            if t == "ERROR":
                # An unparsable region: run the statements tree-sitter recovered inside it.
                return self.block(node.children, unit)
        except RecursionError:
            raise _Budget("where the script nests deeper than plint follows") from None
        return None

    def unset(self, names: list[str]) -> None:
        """`unset [-v|-f] NAME...`: variables by default, functions with -f."""
        functions = "-f" in names
        for name in names:
            if name.startswith("-") or "[" in name or name in self.readonly:  # one element: rare
                continue
            if functions:
                self.functions.pop(name, None)
            else:
                self.vars.pop(name, None)

    def snapshot(self) -> _State:
        return _State(dict(self.vars), list(self.positional) if self.positional is not None else None,
                      dict(self.functions))

    def restore(self, state: _State) -> None:
        self.vars = dict(state.vars)
        self.positional = list(state.positional) if state.positional is not None else None
        self.functions = dict(state.functions)

    # ---- assignments ------------------------------------------------------------------------------
    def assign(self, node, unit: Unit, local: bool = False, export: bool = False,
               env: dict[str, Var] | None = None) -> None:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None:
            return
        op = next((c.type for c in node.children if c.type in ("=", "+=")), "=")
        index = None
        if name_node.type == "subscript":
            base = name_node.child_by_field_name("name")
            idx = name_node.child_by_field_name("index")
            name = unit.text(base.start_byte, base.end_byte) if base is not None else ""
            if idx is not None:
                idx_text, _ = self.expand_inline(idx.start_byte, idx.end_byte, unit)
                out = arith.evaluate(idx_text or "", self.arith_lookup) if idx_text is not None else None
                index = out.value if out is not None else None
                if index is None:
                    index = -1
        else:
            name = unit.text(name_node.start_byte, name_node.end_byte)
        if env is None and name in self.readonly:
            return
        span = unit.span(node.start_byte, node.end_byte)
        target = env if env is not None else self.vars
        old = target.get(name) if env is None else None
        if local and self.locals:
            self.locals[-1].setdefault(name, self.vars.get(name))
        exported = export or (old.exported if old is not None else False)
        if value_node is not None and value_node.type == "array":
            items = self.array_items(value_node, unit)
            if op == "+=" and old is not None:
                base_items = old.items if old.is_array else ((old.value,) if old.value else ())
                items = tuple(base_items) + items  # type: ignore[arg-type]
            target[name] = Var(name, (), self.capped_items(items, name, span), exported, span)
            return
        value = _flatten(self.expand(value_node, unit, quoted=True)) if value_node is not None else ()
        value = self.capped(value, f"${name}", span)
        if index is not None:
            current = list(old.items) if old is not None and old.is_array else \
                ([old.value] if old is not None and old.value else [])
            if index < 0 or index >= len(current):
                current.append(value)
            else:
                current[index] = value
            target[name] = Var(name, (), self.capped_items(tuple(current), name, span), exported, span)
            return
        if op == "+=" and old is not None:
            if old.is_array:
                target[name] = Var(name, (), self.capped_items(tuple(old.items) + (value,), name, span),  # type: ignore
                                   exported, span)
                return
            value = self.capped(tuple(old.value) + value, f"${name}", span)
        target[name] = Var(name, self.settle(name, value, span), None, exported, span)

    def integer(self, name: str) -> None:
        """`declare -i N=2*4`: the value of an integer variable is evaluated as arithmetic."""
        var = self.vars.get(name)
        if var is None or var.is_array:
            return
        text = _text(var.value)
        if text is None:
            return
        out = arith.evaluate(text, self.arith_lookup)
        if out.value is not None:
            piece = Piece(str(out.value), var.span, "derived")
            if len(var.value) == 1 and var.value[0].text == piece.text:
                piece = var.value[0]  # a plain number keeps its exact position
            self.vars[name] = Var(name, (piece,), None, var.exported, var.span)

    def settle(self, name: str, value: tuple[Piece, ...], span) -> tuple[Piece, ...]:
        """An assigned value with unknown parts: the user's assumption if there is one; otherwise the
        unknown pieces say which variable they feed, so a hint can name it."""
        if all(p.known for p in value):
            return value
        if name in self.options.assume:
            return (Piece(self.options.assume[name], None, "assumed"),)
        return tuple(p if p.known or p.name else
                     Piece(None, p.span, p.origin, reason=f"${name} is set from {p.reason}", name=name,
                           alternatives=p.alternatives)
                     for p in value)

    def array_items(self, node, unit: Unit) -> tuple[tuple[Piece, ...], ...]:
        items: list[tuple[Piece, ...]] = []
        for c in node.named_children:
            if c.type == "comment":
                continue
            for w in _split(self.expand(c, unit)):
                items.append(tuple(w))
        return tuple(items)

    def declaration(self, node, unit: Unit) -> int:
        keyword = node.children[0].type if node.children else "declare"
        flags = ""
        for c in node.named_children:
            if c.type == "word" and unit.text(c.start_byte, c.end_byte).startswith(("-", "+")):
                flags += unit.text(c.start_byte, c.end_byte)
                continue
            export = keyword == "export" or "x" in flags
            if c.type == "variable_assignment":
                self.assign(c, unit, local=keyword == "local" or (keyword in ("declare", "typeset")
                                                                  and bool(self.locals)),
                            export=export)
                name_node = c.child_by_field_name("name")
                if "i" in flags and name_node is not None:
                    self.integer(unit.text(name_node.start_byte, name_node.end_byte))
                if (keyword == "readonly" or "r" in flags) and name_node is not None:
                    self.readonly.add(unit.text(name_node.start_byte, name_node.end_byte))
            elif c.type == "variable_name":
                name = unit.text(c.start_byte, c.end_byte)
                if keyword == "local" and self.locals:
                    self.locals[-1].setdefault(name, self.vars.get(name))
                    self.vars[name] = Var(name, (), None, False, unit.span(c.start_byte, c.end_byte))
                elif name in self.vars:
                    if export:
                        self.vars[name].exported = True
                elif "a" in flags:
                    self.vars[name] = Var(name, (), (), export, unit.span(c.start_byte, c.end_byte))
        return 0

    def declare_words(self, keyword: str, words: list[Word]) -> None:
        """`export A=1 B` when tree-sitter parsed it as a plain command."""
        flags = ""
        for w in words:
            text = w.display()
            if text.startswith(("-", "+")) and "=" not in text:
                flags += text
                continue
            export = keyword == "export" or "x" in flags
            name, sep, _ = text.partition("=")
            if not name.isidentifier():
                continue
            if sep:
                value = w.after(len(name) + 1)
                if keyword == "local" and self.locals:
                    self.locals[-1].setdefault(name, self.vars.get(name))
                self.vars[name] = Var(name, self.capped(value.pieces, f"${name}", w.site), None,
                                      export or (name in self.vars and self.vars[name].exported), w.site)
            elif name in self.vars:
                if export:
                    self.vars[name].exported = True
            elif keyword == "local" and self.locals:
                self.locals[-1].setdefault(name, None)
                self.vars[name] = Var(name, (), None, False, w.site)

    # ---- expansion --------------------------------------------------------------------------------
    def words(self, nodes, unit: Unit) -> list[Word]:
        out: list[Word] = []
        for n in nodes:
            site = unit.span(n.start_byte, n.end_byte)
            for w in _split(self.expand(n, unit)):
                # empty pieces (the "" that keeps a quoted empty word alive) only matter alone
                pieces = tuple(p for p in w if p.text != "") or tuple(w[:1])
                out.append(Word(self.capped(pieces, "a word", site), site))
        return out

    def expand(self, node, unit: Unit, quoted: bool = False) -> Fields:
        t = node.type
        if t in ("word", "number", "extglob_pattern", "regex", "test_operator", "variable_name",
                 "special_variable_name", "file_descriptor", "heredoc_start"):
            return [[(p, False) for p in self.literal(node.start_byte, node.end_byte, unit, quoted)]]
        if t == "raw_string":
            s, e = node.start_byte + 1, node.end_byte - 1
            return [[(p, False) for p in unit.pieces(s, e)]] if e > s else [[(Piece("", None), False)]]
        if t == "ansi_c_string":
            raw = unit.text(node.start_byte + 2, node.end_byte - 1)
            try:
                text = raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
            except (UnicodeDecodeError, UnicodeEncodeError):
                text = raw
            return [[(unit.piece(node.start_byte + 2, node.end_byte - 1, text), False)]]
        if t in ("string", "translated_string"):
            fields: Fields = [[(Piece("", None), False)]]
            start = node.start_byte + (2 if t == "translated_string" else 1)
            end = node.end_byte - 1
            self._container(node, unit, start, end, fields, quoted=True)
            if len(fields) == 1 and len(fields[0]) == 1 and self._only_all_elements(node, unit):
                return []  # "${A[@]}" / "$@" with no elements: no word at all, not an empty one (bash)
            return fields
        if t == "concatenation":
            fields = [[]]
            self._container(node, unit, node.start_byte, node.end_byte, fields, quoted)
            return fields
        if t == "simple_expansion" or t == "expansion":
            return self.parameter(node, unit, quoted)
        if t == "command_substitution":
            piped = self.piped_text(node, unit)
            if piped is not None:
                return [[(p, not quoted) for p in piped]]
            return [[(self.substitution(node, unit), not quoted)]]
        if t == "arithmetic_expansion":
            return [[(self.arithmetic(node, unit), not quoted)]]
        if t == "process_substitution":
            return [[(unknown(f"{unit.text(node.start_byte, node.end_byte)} is a process substitution",
                              span=unit.span(node.start_byte, node.end_byte)), False)]]
        if t == "brace_expression":
            return [[(p, False) for p in self.literal(node.start_byte, node.end_byte, unit, quoted)]]
        # anything else: its text, verbatim
        return [[(p, False) for p in unit.pieces(node.start_byte, node.end_byte)]]

    @staticmethod
    def _only_all_elements(node, unit: Unit) -> bool:
        """A double-quoted string holding nothing but `${NAME[@]}` or `$@` expansions."""
        inner = [c for c in node.children if c.type not in ('"', '$"')]
        return bool(inner) and all(
            c.type in ("simple_expansion", "expansion")
            and _ALL_ELEMENTS.fullmatch(unit.text(c.start_byte, c.end_byte).strip()) is not None for c in inner)

    @staticmethod
    def _real_start(node) -> int:
        """tree-sitter-bash sometimes starts an expansion node (and its `$` token) at the whitespace
        before it; the expansion really starts at the `$`."""
        if node.type in EXPANSIONS and node.children:
            first = node.children[0]
            token = first.text or b""
            return first.end_byte - len(token.lstrip())
        return node.start_byte

    def _container(self, node, unit: Unit, start: int, end: int, fields: Fields, quoted: bool) -> None:
        pos = start
        for c in node.children:
            if c.type in ('"', "$\"") and (c.start_byte == node.start_byte or c.end_byte == node.end_byte):
                continue
            cs = max(self._real_start(c), pos)
            if cs > pos:
                for p in self.literal(pos, min(cs, end), unit, quoted):
                    fields[-1].append((p, False))
            if c.type == "string_content":
                for p in self.literal(max(c.start_byte, pos), c.end_byte, unit, True):
                    fields[-1].append((p, False))
            else:
                _join(fields, self.expand(c, unit, quoted))
            pos = max(pos, c.end_byte)
        if pos < end:
            for p in self.literal(pos, end, unit, quoted):
                fields[-1].append((p, False))

    def literal(self, start: int, end: int, unit: Unit, quoted: bool) -> list[Piece]:
        """Literal text with quote removal: backslash escapes (all of them unquoted; only \\$ \\` \\" \\\\
        and newline inside double quotes), keeping exact spans for unescaped runs."""
        if end <= start:
            return []
        raw = unit.data[start:end]
        if b"\\" not in raw:
            return unit.pieces(start, end)
        out: list[Piece] = []
        run = start
        i = start
        while i < end:
            if unit.data[i:i + 1] == b"\\" and i + 1 < end:
                nxt = unit.data[i + 1:i + 2]
                if not quoted or nxt in (b"$", b"`", b'"', b"\\", b"\n"):
                    if i > run:
                        out.extend(unit.pieces(run, i))
                    if nxt != b"\n":
                        # a multi-byte character after the backslash stays whole
                        j = i + 2
                        while j < end and (unit.data[j] & 0xC0) == 0x80:
                            j += 1
                        out.append(unit.piece(i + 1, j))
                        i = j
                    else:
                        i += 2
                    run = i
                    continue
                i += 2
                continue
            i += 1
        if run < end:
            out.extend(unit.pieces(run, end))
        return out

    # ---- parameters -------------------------------------------------------------------------------
    def lookup(self, name: str) -> Var | None:
        return self.vars.get(name)

    def arith_lookup(self, name: str) -> str | None:
        """A variable's text for arithmetic (`NAME` or `NAME[INDEX]`, the index already evaluated);
        None when unknown, including a variable neither the script nor the environment sets."""
        base, bracket, rest = name.partition("[")
        var = self.vars.get(base)
        if var is None:
            return None
        if not bracket:
            return _var_text(var)
        index = rest[:-1]
        if not index.lstrip("-").isdigit():
            return None
        elements = var.items if var.is_array else ((var.value,) if var.value else ())
        i = int(index)
        return _text(elements[i]) if -len(elements) <= i < len(elements) else ""  # type: ignore[index]

    def positional_word(self, index: int, span) -> list[Piece] | None:
        if self.positional is None:
            return None
        if index - 1 < len(self.positional):
            return list(self.positional[index - 1].pieces)
        return []

    def parameter(self, node, unit: Unit, quoted: bool) -> Fields:
        """$X, ${X}, ${X:-d} and the other parameter expansions."""
        span = unit.span(node.start_byte, node.end_byte)
        children = [c for c in node.children if c.type not in ("$", "${", "}")]
        prefix = None
        if children and children[0].type in ("#", "!") and len(children) > 1:
            prefix = children[0].type
            children = children[1:]
        if not children:
            return [[(unknown(f"{unit.text(node.start_byte, node.end_byte)} cannot be read", span=span),
                      False)]]
        target = children[0]
        rest = children[1:]
        name, index = unit.text(target.start_byte, target.end_byte), None
        if target.type == "subscript":
            base = target.child_by_field_name("name")
            idx = target.child_by_field_name("index")
            name = unit.text(base.start_byte, base.end_byte) if base is not None else name
            index = unit.text(idx.start_byte, idx.end_byte) if idx is not None else "0"
            if idx is not None and index not in ("@", "*"):
                index, hidden = self.expand_inline(idx.start_byte, idx.end_byte, unit)
                if index is None:
                    why = "; ".join(dict.fromkeys(p.reason for p in hidden if p.reason))
                    return [[(unknown(f"the index of ${{{name}[...]}} is unknown" + (f": {why}" if why else ""),
                                      name, span), False)]]
        value, is_set, multi = self.resolve(name, index, span, quoted)
        if prefix == "#":
            if multi is not None:
                return [[(Piece(str(len(multi)), None, "derived"), False)]]
            if value is None and not is_set and not name.isdigit():
                return [[(self.unset_piece(name, span), False)]]
            t = _text(value) if value is not None else ""
            p = Piece(str(len(t)), span, "derived") if t is not None else \
                unknown(f"the length of ${name} is unknown", name, span)
            return [[(p, not quoted)]]
        if prefix == "!":
            ref = _text(value) if value is not None else None
            if ref and ref.isidentifier():
                value, is_set, multi = self.resolve(ref, None, span, quoted)
            else:
                return [[(unknown(f"${{!{name}}} is an indirect reference plint cannot follow", name, span),
                          not quoted)]]
        if rest:
            op_node = rest[0]
            op = op_node.type if not op_node.is_named else None
            operand = rest[1:]
            if op is not None:
                return self.operator(op, operand, name, value, is_set, multi, node, unit, quoted, span)
        if multi is not None:
            if quoted and index in ("@",) or (quoted and name == "@"):
                return [[(p, False) for p in w] for w in multi] or [[]]
            joined: Fields = [[]]
            for i, w in enumerate(multi):
                if i:
                    joined[-1].append((Piece(" ", None), not quoted))
                joined[-1].extend((p, not quoted) for p in w)
            return joined
        if value is None:
            return [[(self.unset_piece(name, span), False)]]
        return [[(p, not quoted) for p in value]]

    def unset_piece(self, name: str, span) -> Piece:
        if name.isdigit():
            return unknown(parameter_not_given(name), name, span)
        return unknown(f"${name} is not set in the script and has no default", name, span)

    def resolve(self, name: str, index: str | None, span, quoted: bool):
        """(pieces or None when unset/unknown-unset, is_set, list of words for @/* or None)."""
        if name in ("@", "*"):
            if self.positional is None:
                return [unknown(NOT_GIVEN, name, span)], True, None
            return None, True, [list(w.pieces) for w in self.positional]
        if name == "#":
            if self.positional is None:
                return [unknown(COUNT_NOT_GIVEN, name, span)], True, None
            return [Piece(str(len(self.positional)), None, "derived")], True, None
        if name.isdigit():
            if name == "0":
                if self.arg0 is not None:
                    return list(self.arg0.pieces), True, None
                return [Piece(self.script_path, None, "derived")], True, None
            pieces = self.positional_word(int(name), span)
            if pieces is None:
                return None, False, None
            return pieces, int(name) <= len(self.positional or []), None
        if name in ("?", "$", "!", "-", "RANDOM", "SECONDS", "LINENO", "BASHPID", "PPID"):
            return [unknown(f"${name} is only known at run time", name, span)], True, None
        if name == "BASH_SOURCE" and name not in self.vars:
            return [Piece(self.current_file, None, "derived")], True, None
        var = self.vars.get(name)
        if var is None:
            return None, False, None
        if var.is_array:
            items = var.items or ()
            if index in ("@", "*"):
                return None, True, [list(i) for i in items]
            if index is None:
                return (list(items[0]) if items else []), True, None
            out = arith.evaluate(index, self.arith_lookup)
            if out.value is None:
                return [unknown(f"${{{name}[{index}]}}: the index is unknown", name, span)], True, None
            i = out.value
            return (list(items[i]) if -len(items) <= i < len(items) else []), True, None
        if index in ("@", "*"):
            return None, True, [list(var.value)] if var.value else []
        return list(var.value), True, None

    def operator(self, op, operand, name, value, is_set, multi, node, unit, quoted, span) -> Fields:
        if multi is not None and op == ":":
            return self.slice_words(operand, name, multi, unit, quoted, span)
        if multi is not None:
            value = [p for w in multi for p in w]
        operand_fields = None

        def opnd() -> Fields:
            nonlocal operand_fields
            if operand_fields is None:
                operand_fields = [[]]
                if operand:
                    s = operand[0].start_byte
                    e = operand[-1].end_byte
                    fake = _Span(operand, s, e)
                    self._container(fake, unit, s, e, operand_fields, quoted)
            return operand_fields

        text = _text(value) if value is not None else None
        empty = value is None or text == ""
        unknown_value = value is not None and text is None
        if op in (":-", "-", ":=", "=", ":?", "?"):
            use_default = (not is_set) if op in ("-", "=", "?") else (not is_set or text == "")
            if unknown_value and op.startswith(":"):
                return [[(p, not quoted) for p in value]]
            if not use_default:
                return [[(p, not quoted) for p in value]]  # type: ignore[union-attr]
            if op in ("?", ":?"):
                return [[(unknown(f"${name} is not set (the script stops with an error here)", name, span),
                          False)]]
            result = [[(Piece(p.text, p.span, p.origin, p.exact, p.reason, p.name, p.alternatives, p.source,
                              name) if p.known else p, s) for p, s in f] for f in opnd()]
            if op in (":=", "="):
                self.vars[name] = Var(name, _flatten(result), None,
                                      self.vars[name].exported if name in self.vars else False, span)
            return [[(p, s and not quoted) for p, s in f] for f in result]
        if op in (":+", "+"):
            use = is_set and (op == "+" or not empty)
            if unknown_value and _is_empty(value) is False:
                return opnd()  # set and known not to be empty (a merged value may be unset): the word is used
            if unknown_value:  # nothing, or the operand: both are its alternatives
                alts = ["<unset>"] + _alternative_texts(_flatten(opnd()))
                return [[(unknown(f"${{{name}{op}...}} depends on ${name}, which is unknown", name, span,
                                  dict.fromkeys(alts)), False)]]
            return opnd() if use else [[]]
        if unknown_value or text is None:
            if value is None and not is_set and name.isdigit() and self.positional is not None:
                text = ""
            elif value is None and not is_set:
                return [[(self.unset_piece(name, span), False)]]
            else:
                return [[(unknown(f"${name} is unknown", name, span), not quoted)]]
        pattern = _text(_flatten(opnd())) if operand else ""
        result = self.string_op(op, text, pattern, operand, unit, quoted)
        if result is None:
            return [[(unknown(f"{unit.text(node.start_byte, node.end_byte)} cannot be evaluated statically",
                              name, span), not quoted)]]
        return [[(Piece(result, span, "derived"), not quoted)]]

    def slice_words(self, operand, name, multi, unit, quoted, span) -> Fields:
        """`${@:2}`, `${A[@]:1:3}`: a slice of the words, each kept whole when quoted."""
        nums = [c for c in operand if c.type != ":"]
        bounds = [self.expand_inline(n.start_byte, n.end_byte, unit)[0] for n in nums[:2]]
        values = [arith.evaluate(b, self.arith_lookup).value if b is not None else None for b in bounds]
        if not values or None in values:
            return [[(unknown(f"a slice of ${name} with unknown bounds", name, span), False)]]
        start = values[0]
        if name in ("@", "*"):  # positional slices count from $0
            if start == 0:
                multi = [[Piece(self.script_path, None, "derived")]] + list(multi)
            else:
                start -= 1
        if start < 0:
            start += len(multi)
        chosen = multi[max(start, 0):]
        if len(values) > 1:
            length = values[1]
            chosen = chosen[:length]  # a negative length stops that many words before the end
        if quoted and name != "*":
            return [[(p, False) for p in w] for w in chosen] or [[]]
        joined: Fields = [[]]
        for i, w in enumerate(chosen):
            if i:
                joined[-1].append((Piece(" ", None), not quoted))
            joined[-1].extend((p, not quoted) for p in w)
        return joined

    def string_op(self, op, text, pattern, operand, unit, quoted) -> str | None:
        import fnmatch

        if pattern is None:
            return None

        def match(s: str) -> bool:
            return fnmatch.fnmatchcase(s, pattern)

        if op in ("#", "##"):
            rng = range(len(text) + 1) if op == "#" else range(len(text), -1, -1)
            for i in rng:
                if match(text[:i]):
                    return text[i:]
            return text
        if op in ("%", "%%"):
            rng = range(len(text), -1, -1) if op == "%" else range(len(text) + 1)
            for i in rng:
                if match(text[i:]):
                    return text[:i]
            return text
        if op in (",,", "^^", ",", "^"):
            if op == ",,":
                return text.lower()
            if op == "^^":
                return text.upper()
            return (text[:1].lower() if op == "," else text[:1].upper()) + text[1:]
        if op in ("/", "//", "/#", "/%"):
            parts = [c for c in operand if c.type not in ("/",)]
            pat = _text(_flatten(self.expand(parts[0], unit, True))) if parts else ""
            rep = _text(_flatten(self.expand(parts[1], unit, True))) if len(parts) > 1 else ""
            if pat is None or rep is None or any(ch in pat for ch in "*?["):
                if pat and not any(ch in pat for ch in "*?[") and rep is not None:
                    pass
                else:
                    return None
            if not pat:
                return text
            if op == "//":
                return text.replace(pat, rep)
            if op == "/#":
                return rep + text[len(pat):] if text.startswith(pat) else text
            if op == "/%":
                return text[:-len(pat)] + rep if text.endswith(pat) else text
            return text.replace(pat, rep, 1)
        if op == ":":
            nums = [c for c in operand if c.type not in (":",)]
            try:
                off = arith.evaluate(unit.text(nums[0].start_byte, nums[0].end_byte), self.arith_lookup).value
                length = arith.evaluate(unit.text(nums[1].start_byte, nums[1].end_byte),
                                        self.arith_lookup).value if len(nums) > 1 else None
            except IndexError:
                return None
            if off is None or (len(nums) > 1 and length is None):
                return None
            s = text[off:] if off >= 0 else text[len(text) + off:]
            return s if length is None else s[:length]  # negative: that many before the end
        return None

    # ---- substitutions ----------------------------------------------------------------------------
    def arithmetic(self, node, unit: Unit) -> Piece:
        span = unit.span(node.start_byte, node.end_byte)
        inner_start = node.children[0].end_byte if node.children else node.start_byte
        inner_end = node.children[-1].start_byte if len(node.children) > 1 else node.end_byte
        return self.arith_text(inner_start, inner_end, unit, span)

    def arith_text(self, start: int, end: int, unit: Unit, span, reasons: list[str] | None = None) -> Piece:
        """$((...)): expand $-parameters inside first (as bash does), then evaluate. `reasons`, when
        given, collects why the $-parameters inside are unknown."""
        expr, hidden = self.expand_inline(start, end, unit)
        if expr is None:
            if reasons is not None:
                reasons.extend(p.reason for p in hidden if p.reason)
            why = "; ".join(dict.fromkeys(p.reason for p in hidden if p.reason)) or "a value is unknown"
            first = next((p.name for p in hidden if p.name), None)
            return unknown(f"$(({unit.text(start, end).strip()})) needs {why}", first, span)
        out = arith.evaluate(expr, self.arith_lookup)
        for name, value in out.assignments.items():
            self.vars[name] = Var(name, (Piece(str(value), span, "derived"),) if value is not None else
                                  (unknown(f"${name} is assigned in arithmetic from unknown values", name, span),),
                                  None, self.vars[name].exported if name in self.vars else False, span)
        if out.error:
            self.result.problems.append(Problem(
                "shell-error", f"bash refuses $(({expr.strip()})): {out.error}; bash abandons the command it "
                               "stands in (nothing on it is assigned or run; with set -e the script stops)",
                span))
            # the value is not there for later lines; findings about an empty value would only echo PL001
            return unknown(f"$(({expr.strip()})) fails in bash ({out.error})", None, span)
        if out.value is None:
            names = ", ".join(f"${n}" for n in out.unknown) or "a value"
            reasons = []
            for n in out.unknown:
                v = self.vars.get(n)
                if v is not None:
                    reasons += [p.reason for p in v.value if not p.known and p.reason]
                else:
                    reasons.append(f"${n} is not set in the script and has no default")
            why = "; ".join(dict.fromkeys(reasons))
            return unknown(f"$(({expr.strip()})) needs {names}" + (f" ({why})" if why else ""),
                           out.unknown[0] if out.unknown else None, span,
                           self._alternatives(expr, out.unknown))
        return Piece(str(out.value), span, "derived")

    def arith_command(self, node, unit: Unit) -> int | None:
        """`(( expr ))`: true when the value is not zero; assignments inside take effect."""
        start = node.children[0].end_byte
        end = node.children[-1].start_byte if node.children[-1].type == "))" else node.end_byte
        inside: list[str] = []
        piece = self.arith_text(start, end, unit, unit.span(node.start_byte, node.end_byte), inside)
        if not piece.known:
            if inside or piece.reason:
                self.unknown_reasons.extend(inside or [piece.reason])
            return None
        return 1 if piece.text in ("", "0") else 0

    def _alternatives(self, expr: str, names: list[str]) -> list[str]:
        """The results for each alternative value of the one unknown variable, when a branch gave it
        a few (`NODES` is 1 or 2, so `$((8*NODES))` is 8 or 16)."""
        if len(names) != 1 or names[0] not in self.vars:
            return []
        pieces = self.vars[names[0]].value
        if len(pieces) != 1:  # a kept head with an unknown tail: the tails alone are no values
            return []
        options = [a for p in pieces if not p.known for a in p.alternatives]
        out = []
        for option in options:
            value = arith.evaluate(expr, lambda n, v=option: v if n == names[0] else self.arith_lookup(n)).value
            if value is not None:
                out.append(str(value))
        return out

    def expand_inline(self, start: int, end: int, unit: Unit) -> tuple[str | None, list[Piece]]:
        """The text of bytes [start, end) of an arithmetic expression or array index with $X, ${X...},
        $(( )) and $( ) replaced by their values (bash expands those before evaluating); None when
        one of them is unknown, with the unknown pieces saying why."""
        raw = unit.data[start:end]
        if b"$" not in raw and b"`" not in raw and not unit.unknowns:
            return unit.text(start, end), []
        pieces = self.expand_heredoc_line(start, end, unit, escapes=False)
        return _text(pieces), [p for p in pieces if not p.known]

    def substitution(self, node, unit: Unit) -> Piece:
        span = unit.span(node.start_byte, node.end_byte)
        shown = " ".join(unit.text(node.start_byte, node.end_byte).split())
        if len(shown) > 60:
            shown = shown[:57] + "...)"
        body = [c for c in node.named_children]
        value = self.pure(body, unit)
        if value is not None:
            return Piece(value.rstrip("\n"), span, "derived")
        return unknown(f"the output of {shown}, known only at run time", None, span)

    def piped_text(self, node, unit: Unit) -> list[Piece] | None:
        """The output of `$(echo "$CMD" | sed 's/  */ /g')`: a pipeline of text producers (echo, printf,
        cat, sed, envsubst; `producer`) whose input plint knows piece by piece, unknown pieces kept as
        they stand; bash drops the trailing newlines. None for anything else (then `substitution`)."""
        body = [c for c in node.named_children if c.type != "comment"]
        if len(body) != 1 or body[0].type not in ("pipeline", "command"):
            return None
        stages = [c for c in body[0].named_children if c.type != "comment"] if body[0].type == "pipeline" \
            else body
        if len(stages) < 2 or any(st.type != "command" for st in stages):
            return None  # one pure command alone is `pure`'s; a pipeline of several is read here
        text: MappedText | None = None
        for stage in stages:
            prefix, rest = self._command_parts(stage)
            if prefix:
                return None
            words = self.words(rest, unit)
            text = self.producer(words, unit, text, unit.span(stage.start_byte, stage.end_byte))
            if text is None:
                return None
        pieces = list(text.pieces)
        while pieces and pieces[-1].known and (pieces[-1].text or "").endswith("\n"):
            last = pieces.pop()
            kept = (last.text or "").rstrip("\n")
            if kept:
                pieces.append(last.sub(0, len(kept)))
                break
        if not pieces or (len(pieces) == 1 and not pieces[0].known and "plint does not evaluate" in
                          (pieces[0].reason or "")):
            return None
        return pieces

    def pure(self, nodes, unit: Unit) -> str | None:
        """The output of a command substitution made only of pure commands (dirname, basename, pwd,
        cd, echo, printf, realpath); None for anything else."""
        cwd = os.path.dirname(os.path.abspath(self.script_path))
        out = None
        for n in nodes:
            if n.type == "list":
                parts = [c for c in n.named_children]
                result = self.pure(parts, unit)
                if result is None:
                    return None
                out = result
                continue
            if n.type != "command":
                return None
            words = self.words(self._command_parts(n)[1], unit)
            texts = [w.text for w in words]
            if not texts or any(t is None for t in texts):
                return None
            cmd, args = os.path.basename(texts[0]), [t for t in texts[1:] if not t.startswith("-")]
            if cmd == "cd":
                target = args[0] if args else cwd
                cwd = os.path.normpath(os.path.join(cwd, target))
                out = ""
            elif cmd == "pwd":
                out = cwd
            elif cmd == "dirname" and args:
                out = os.path.dirname(args[0].rstrip("/")) or "."
            elif cmd == "basename" and args:
                base = os.path.basename(args[0].rstrip("/"))
                if len(args) > 1 and base.endswith(args[1]) and base != args[1]:
                    base = base[: -len(args[1])]
                out = base
            elif cmd in ("realpath", "readlink") and args:
                out = os.path.normpath(os.path.join(cwd, args[0]))
            elif cmd == "echo":
                out = " ".join(texts[1:]).replace("-n ", "", 1) if texts[1:2] == ["-n"] else " ".join(texts[1:])
            elif cmd == "printf" and len(texts) > 1 and texts[1] in ("%s", "%s\\n", "%d"):
                out = "".join(texts[2:])
            else:
                return None
        return out

    # ---- commands ---------------------------------------------------------------------------------
    @staticmethod
    def _command_parts(node):
        prefix, rest, seen_name = [], [], False
        for c in node.named_children:
            if not seen_name and c.type in ("variable_assignment", "file_redirect") and \
                    node.child_by_field_name("name") is not None:
                prefix.append(c)
                continue
            if c.type == "command_name":
                seen_name = True
                rest.append(c.named_children[0] if c.named_children else c)
                continue
            if c.type in ("file_redirect", "herestring_redirect", "comment"):
                continue
            if seen_name:
                rest.append(c)
            else:
                prefix.append(c)
        return prefix, rest

    def command(self, node, unit: Unit, stdin: MappedText | None = None, output: bool = False) -> int | None:
        """Run a simple command. With `output`, what it writes to stdout (when plint can tell) is
        left in self.last_output for the next stage of a pipeline or a redirection."""
        if output:
            self.last_output = None
        if node.named_child_count > MAX_COMMAND_WORDS:  # counted without building a node per word
            raise _Budget(f"at a command of {node.named_child_count:,} words (plint's bound is "
                          f"{MAX_COMMAND_WORDS:,})")
        prefix, rest = self._command_parts(node)
        name_node = node.child_by_field_name("name")
        if name_node is None:
            for c in prefix:
                if c.type == "variable_assignment":
                    self.assign(c, unit)
            return 0
        # tree-sitter-bash sometimes glues a line of assignments onto the next line's command
        if prefix and b"\n" in unit.data[prefix[-1].end_byte:name_node.start_byte].replace(b"\\\n", b""):
            for c in prefix:
                if c.type == "variable_assignment":
                    self.assign(c, unit)
            prefix = []
        words = self.words(rest, unit)
        if not words:  # `$EMPTY` alone: the assignments before it stay in the shell
            for c in prefix:
                if c.type == "variable_assignment":
                    self.assign(c, unit)
            return 0
        assignments: dict[str, Var] = {}
        for c in prefix:
            if c.type == "variable_assignment":
                self.assign(c, unit, env=assignments)
        site = unit.span(node.start_byte, node.end_byte)
        herestring = next((c for c in node.children if c.type == "herestring_redirect"), None)
        if herestring is not None:
            stdin = self.herestring(herestring, unit)
        if output:
            self.last_output = self.producer(words, unit, stdin, site, assignments)
        return self.run(words, site, unit, assignments, stdin)

    def record(self, words: list[Word], site, assignments: dict[str, Var]) -> Command:
        parent, via = self.parents[-1] if self.parents else (None, None)
        cmd = Command(words, site, dict(self.vars), assignments, parent, via, tuple(self.conditions),
                      self.loops > 0)
        self.result.commands.append(cmd)
        return cmd

    def run(self, words: list[Word], site, unit: Unit, assignments: dict[str, Var],
            stdin: MappedText | None) -> int | None:
        name = words[0].text
        args = words[1:]
        if name is None:
            self.record(words, site, assignments)
            return None
        base = name.rsplit("/", 1)[-1]
        if base in DECLARE:
            self.declare_words(base, args)
            return 0
        if name in self.functions and self.depth < MAX_DEPTH:
            self.record(words, site, assignments)
            return self.call(name, args)
        cmd = self.record(words, site, assignments)
        texts = [w.text for w in args]
        if base in ("source", "."):
            if args:
                self.source(args[0], args[1:], unit)
            return 0
        if base == "eval":
            pieces: list[Piece] = []
            for i, w in enumerate(args):
                if i:
                    pieces.append(Piece(" ", None))
                pieces.extend(w.pieces)
            self.second_parse(pieces, unit, cmd, "eval", fresh=False)
            return None
        if base == "set":
            if "--" in texts:
                self.positional = args[texts.index("--") + 1:]
            return 0
        if base == "shift":
            n = int(texts[0]) if texts and texts[0] and texts[0].isdigit() else 1
            if self.positional is not None:
                self.positional = self.positional[n:]
            return 0
        if base == "getopts":
            return self.getopts(args)
        if base in ("true", ":"):
            return 0
        if base == "false":
            return 1
        if base == "exit":
            raise _Exit()
        if base == "return":
            raise _Return()
        if base == "break":
            raise _Break()
        if base == "continue":
            raise _Continue()
        if base in ("[", "test"):
            return self.test_words(args[:-1] if base == "[" else args)
        if base == "let":
            for t in texts:
                if t is not None:
                    self.arith_text_plain(t, site)
            return None
        if base == "unset":
            self.unset([t for t in texts if t is not None])
            return 0
        if base in ("sed", "cp", "mv"):
            self.file_command(base, args, unit, site)
        self.nested(words, cmd, unit, stdin)
        return None

    def file_command(self, name: str, args: list[Word], unit: Unit, site) -> None:
        """Commands that change files a later command reads: `sed -i` and `cp`/`mv` of a written file."""
        if name == "envsubst":
            from plint.reading.shell.template import run_envsubst

            def lookup(name: str) -> Var | None:
                given = (prefix_env or {}).get(name)
                return Var(name, given.value, given.items, True, given.span) if given is not None else self.lookup(name)

            return run_envsubst(args, stdin, lookup)
        if name == "sed":
            if any((w.text or "").startswith(("-i", "--in-place")) for w in args):
                from plint.reading.shell.sed import run_sed

                run_sed(args, None, lambda w: self.file_text(w, unit),
                        lambda w, content: self.write(w, content, False, unit, site))
            return
        paths = [w for w in args if not (w.text or "").startswith("-")]
        if len(paths) != 2:
            return
        content = self.file_text(paths[0], unit)
        if content is None:
            return
        target = paths[1]
        if target.known and (target.text.endswith("/") or os.path.isdir(self.resolve_path(target.text, unit))):
            target = Word(target.pieces + (Piece(os.path.basename(paths[0].display()), None),), target.site)
        self.write(target, content, False, unit, site)
        if name == "mv" and paths[0].known:
            self.result.virtual_files.pop(str(self.resolve_path(paths[0].text, unit)), None)

    def arith_text_plain(self, text: str, site) -> None:
        out = arith.evaluate(text, self.arith_lookup)
        for name, value in out.assignments.items():
            self.vars[name] = Var(name, (Piece(str(value), site, "derived"),) if value is not None else
                                  (unknown(f"${name} is computed from unknown values", name, site),), None,
                                  self.vars[name].exported if name in self.vars else False, site)

    def no_arguments(self) -> bool:
        """Whether to read the script as run with no arguments at a loop over them (none given)."""
        if self.positional is not None or not self.options.no_arguments:
            return False
        self.result.argument_loops = True
        return True

    def getopts(self, args: list[Word]) -> int | None:
        """`getopts OPTSTRING NAME [ARGS]` over the script's (or the function's) arguments; with none
        given it ends at once, so `while getopts ...` runs no time, as with no arguments."""
        texts = [w.text for w in args]
        if len(texts) < 2 or texts[0] is None or not texts[1] or not texts[1].isidentifier():
            return None
        if len(texts) > 2:
            words = args[2:]
        elif self.no_arguments():
            return 1
        elif self.positional is None:
            return None
        else:
            words = list(self.positional)
        optind = arith.evaluate(_var_text(self.vars.get("OPTIND")) or "1", lambda n: None).value or 1
        offset = self.getopts_offset if optind == self.getopts_at else 0
        step = getopts_step(texts[0], [w.text for w in words], optind, offset)
        if step.status is None:
            return None
        self.getopts_at, self.getopts_offset = step.optind, step.offset
        self.vars[texts[1]] = Var(texts[1], (Piece(step.name or "?", None, "derived"),))
        self.vars["OPTIND"] = Var("OPTIND", (Piece(str(step.optind), None, "derived"),))
        if step.optarg is not None:  # a whole word (`-t 2`) keeps where it was written
            whole = words[step.optind - 2] if 0 <= step.optind - 2 < len(words) else None
            self.vars["OPTARG"] = Var("OPTARG", whole.pieces if whole is not None and whole.text == step.optarg
                                      else (Piece(step.optarg, None, "derived"),))
        return step.status

    def call(self, name: str, args: list[Word]) -> int | None:
        body, unit = self.functions[name]
        saved_positional = self.positional
        if not (self.positional is None and len(args) == 1 and _unknown_arguments(args[0])):
            self.positional = args  # `main "$@"` with no arguments given keeps them not given
        self.locals.append({})
        self.depth += 1
        try:
            return self.statement(body, unit)
        except _Return:
            return None
        finally:
            self.depth -= 1
            for k, v in self.locals.pop().items():
                if v is None:
                    self.vars.pop(k, None)
                else:
                    self.vars[k] = v
            self.positional = saved_positional

    def nested(self, words: list[Word], cmd: Command, unit: Unit, stdin: MappedText | None = None) -> None:
        """A shell started with a command string (`bash -c STR`, `srun ... sh -c STR`,
        `sbatch --wrap STR`), a script file (`bash FILE`, `sbatch FILE`, `srun ... bash FILE`,
        `./run.sh`) or a script on stdin (`sbatch <<EOF`, `bash -s <<EOF`)."""
        texts = [w.text for w in words]
        for i, t in enumerate(texts):
            base = t.rsplit("/", 1)[-1] if t else None
            if base in SHELLS:
                j = i + 1
                while j < len(texts) and texts[j] and texts[j].startswith("-") and texts[j] not in ("-c", "--"):
                    j += 1
                reads_stdin = "-s" in texts[i + 1:j] or j >= len(words)
                if j < len(texts) and texts[j] == "--":
                    j += 1
                if j < len(texts) and texts[j] == "-c" and j + 1 < len(words):
                    self.second_parse(list(words[j + 1].pieces), unit, cmd, "bash -c", fresh=True,
                                      positional=words[j + 3:], arg0=words[j + 2] if j + 2 < len(words) else None)
                elif reads_stdin and stdin is not None:
                    self.stdin_script(stdin, words[j:], cmd, "bash FILE", unit)
                elif j < len(words):
                    self.child_script(words[j], words[j + 1:], cmd, "bash FILE", unit)
                return
            if base == "sbatch":
                j = i + 1
                while j < len(texts):
                    t2 = texts[j] if texts[j] is not None else words[j].display()  # `--job-name=$X`
                    if not t2.startswith("-"):
                        break
                    if t2 == "--wrap" and j + 1 < len(words) or t2.startswith("--wrap="):
                        wrapped = words[j + 1] if t2 == "--wrap" else words[j].after(len("--wrap="))
                        extra = self.options.child_env(cmd, SourceFile(unit.source.path, "")) \
                            if self.options.child_env else {}
                        self.second_parse(list(wrapped.pieces), unit, cmd, "sbatch", fresh=True,
                                          positional=[], extra=extra)
                        return
                    j += 1 if "=" in t2 or t2 in SBATCH_FLAGS or not t2.startswith("-") else 2
                if j < len(words):
                    self.child_script(words[j], words[j + 1:], cmd, "sbatch", unit)
                elif stdin is not None:
                    self.stdin_script(stdin, [], cmd, "sbatch", unit)
                return
        if texts and texts[0] and texts[0].endswith(".sh") and texts[0].startswith(("./", "/", "../")):
            self.child_script(words[0], words[1:], cmd, "bash FILE", unit)

    def resolve_path(self, text: str, unit: Unit) -> str:
        """A path named by the file being run, against that file's directory (see files.path_key)."""
        return path_key(os.path.dirname(os.path.abspath(unit.source.path)), text)

    def load(self, word: Word, unit: Unit) -> SourceFile | None:
        text = word.text
        if text is None:
            return None
        path = self.resolve_path(text, unit)
        virtual = self.result.virtual_files.get(str(path))
        if virtual is not None:
            return SourceFile(str(path), virtual.content.render())
        return self.read(path)

    def unread(self, word: Word, unit: Unit) -> str | None:
        """Why an existing file the script names is not read (outside the root: plint.root), else None."""
        from plint.root import note_for

        return note_for(self.resolve_path(word.text, unit)) if word.known else None

    def source(self, word: Word, args: list[Word], unit: Unit) -> None:
        src = self.load(word, unit)
        why = self.unread(word, unit) if src is None else None
        if why is not None:
            from plint.root import WIDEN_HINT

            self.result.problems.append(Problem(
                "unresolved", f"sourced file {word.display()}: {why}; values it sets are unknown ({WIDEN_HINT})",
                word.site))
            return
        if src is None:
            # A relative path names a file of the project, which may set launch values; an absolute
            # one outside it (a venv's activate, /etc/profile) is environment setup, not reported.
            if not word.known or not os.path.isabs(word.text or ""):
                self.result.problems.append(Problem(
                    "unresolved", f"cannot read sourced file {word.display()}: values it sets are unknown",
                    word.site))
            return
        key = os.path.abspath(src.path)
        if key in self.active_files or self.depth >= MAX_DEPTH:
            return
        self.result.files_read.append(key)
        saved = self.positional
        if args:
            self.positional = args
        self.depth += 1
        try:
            self.run_file(src)
        except _Return:
            pass
        finally:
            self.depth -= 1
            if args:
                self.positional = saved

    def child_shell(self, extra: dict[str, Var] | None = None) -> "Shell":
        env = {k: v for k, v in self.vars.items() if v.exported}
        env.update(extra or {})
        child = Shell(self.result.source, EvalOptions(env=env, read_file=self.options.read_file,
                                                      child_env=self.options.child_env,
                                                      max_steps=self.options.max_steps,
                                                      assume=self.options.assume), self.result)
        child.steps = self.steps
        child.depth = self.depth + 1
        child.conditions = list(self.conditions)
        child.loops = self.loops
        child.parents = list(self.parents)
        child.active_files = set(self.active_files)
        child.script_path = self.script_path
        return child

    def second_parse(self, pieces: list[Piece], unit: Unit, cmd: Command, via: str, fresh: bool,
                     positional: list[Word] | None = None, extra: dict[str, Var] | None = None,
                     arg0: Word | None = None) -> None:
        if self.depth >= MAX_DEPTH:
            return
        sub = Unit.from_pieces(pieces, unit.source)
        shell = self.child_shell(extra) if fresh else self
        if fresh:
            shell.positional = positional
            shell.arg0 = arg0
        shell.parents.append((cmd, via))
        shell.depth += 1
        try:
            shell.run_unit(sub)
        except (_Exit, _Return, _Break, _Continue):
            pass
        finally:
            shell.depth -= 1
            shell.parents.pop()
            if fresh:
                self.steps = shell.steps

    def stdin_script(self, content: MappedText, args: list[Word], cmd: Command, via: str, unit: Unit) -> None:
        """A script read from stdin (a heredoc): its commands run in a fresh shell, their spans
        pointing into the heredoc body where it is verbatim."""
        if self.depth >= MAX_DEPTH:
            return
        extra = self.options.child_env(cmd, self._body_source(content, unit, self.body_ranges.get(id(content)))) \
            if via == "sbatch" and self.options.child_env else {}
        self.second_parse(content.pieces, unit, cmd, via, fresh=True, positional=args, extra=extra)

    @staticmethod
    def _body_source(content: MappedText, unit: Unit, body: tuple[int, int] | None) -> SourceFile:
        """The heredoc body as a file for readers of `#SBATCH` lines: the script's own text with
        everything outside the body blanked, so lines and columns stay those of the script."""
        source = unit.source
        if body is None or unit.data is not source.data:
            return SourceFile(source.path, content.render())
        lo, hi = body
        data = source.data
        def blank(b: bytes) -> bytes:
            return bytes(10 if c == 10 else 32 for c in b)

        text = (blank(data[:lo]) + _expanded_directives(data[lo:hi], content) + blank(data[hi:])
                ).decode("utf-8", "surrogateescape")
        return SourceFile(source.path, text)

    def child_script(self, word: Word, args: list[Word], cmd: Command, via: str, unit: Unit) -> None:
        src = self.load(word, unit)
        why = self.unread(word, unit) if src is None else None
        if why is not None:
            from plint.root import WIDEN_HINT

            self.result.problems.append(Problem(
                "unresolved", f"script {word.display()} ({via}): {why}; the commands it runs are unknown "
                              f"({WIDEN_HINT})", word.site))
            return
        if src is None or self.depth >= MAX_DEPTH:
            return
        key = os.path.abspath(src.path)
        if key in self.active_files:
            return
        extra = self.options.child_env(cmd, src) if via == "sbatch" and self.options.child_env else {}
        shell = self.child_shell(extra)
        shell.positional = args
        shell.script_path = os.path.abspath(src.path)
        shell.parents.append((cmd, via))
        self.result.files_read.append(key)
        try:
            shell.run_file(src)
        except (_Exit, _Return, _Break, _Continue):
            pass
        finally:
            self.steps = shell.steps

    # ---- redirections, heredocs, pipelines --------------------------------------------------------
    def redirected(self, node, unit: Unit, stdin: MappedText | None = None) -> int | None:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.children if c.type in ("file_redirect", "heredoc_redirect",
                                                            "herestring_redirect")]
        heredoc = None
        out_target, append = None, False
        for r in redirects:
            if r.type == "heredoc_redirect":
                heredoc = self.heredoc(r, unit)
                for c in r.children:
                    if c.type == "file_redirect":
                        out_target, append = self._file_target(c, unit)
            elif r.type == "file_redirect":
                source = self._file_source(r, unit)
                if source is not None:  # `envsubst < template.json`: the file is the command's stdin
                    heredoc = self.file_text(source, unit)
                    continue
                target, app = self._file_target(r, unit)
                if target is not None:
                    out_target, append = target, app
            elif r.type == "herestring_redirect":
                heredoc = self.herestring(r, unit)
        self.last_output = None
        if body is None:
            return 0
        if body.type == "pipeline":
            status = self.pipeline(body, unit)
            if out_target is not None and self.last_output is not None:
                self.write(out_target, self.last_output, append, unit, node)
                self.last_output = None
            return status
        if body.type != "command":
            status = self.statement(body, unit)
            self.last_output = None
            return status
        status = self.command(body, unit, stdin=heredoc if heredoc is not None else stdin, output=True)
        if out_target is not None:
            if self.last_output is not None:
                self.write(out_target, self.last_output, append, unit, node)
            self.last_output = None  # it went to the file
        return status

    def _file_source(self, node, unit: Unit) -> Word | None:
        """The file of a `< FILE` input redirection, when its name is known."""
        op = next((c.type for c in node.children if not c.is_named), ">")
        dest = node.child_by_field_name("destination")
        if op != "<" or dest is None or node.child_by_field_name("descriptor") is not None:
            return None
        words = self.words([dest], unit)
        return words[0] if words and words[0].known else None

    def _file_target(self, node, unit: Unit) -> tuple[Word | None, bool]:
        op = next((c.type for c in node.children if not c.is_named), ">")
        dest = node.child_by_field_name("destination")
        descriptor = node.child_by_field_name("descriptor")
        if descriptor is not None and unit.text(descriptor.start_byte, descriptor.end_byte) != "1":
            return None, False
        if op not in (">", ">>", ">|", "&>", "&>>") or dest is None:
            return None, False
        words = self.words([dest], unit)
        if not words or words[0].text in ("/dev/null", "/dev/stderr", "/dev/stdout"):
            return None, False
        return words[0], op in (">>", "&>>")

    def write(self, target: Word, content: MappedText, append: bool, unit: Unit, where) -> None:
        """Record a file the script writes; `where` is the writing node or its span."""
        key = str(self.resolve_path(target.text, unit)) if target.known else target.display()
        span = unit.span(where.start_byte, where.end_byte) if hasattr(where, "start_byte") else where
        if append and key in self.result.virtual_files:
            content = MappedText(list(self.capped(self.result.virtual_files[key].content.pieces + content.pieces,
                                                  f"the file {key}", span)))
        self.result.virtual_files[key] = VirtualFile(key, content, span)

    def herestring(self, node, unit: Unit) -> MappedText:
        """`<<< WORD`: the expanded word (not split) and a newline."""
        pieces = [p for c in node.named_children for p in _flatten(self.expand(c, unit, quoted=True))]
        return MappedText(list(self.capped(pieces, "a here-string", unit.span(node.start_byte, node.end_byte)))
                          + [Piece("\n", None)])

    def heredoc(self, node, unit: Unit) -> MappedText:
        start_node = next((c for c in node.children if c.type == "heredoc_start"), None)
        strip_tabs = any(c.type == "<<-" for c in node.children)
        delim = unit.text(start_node.start_byte, start_node.end_byte) if start_node is not None else "EOF"
        quoted = any(q in delim for q in ("'", '"', "\\"))
        delim = delim.replace("'", "").replace('"', "").replace("\\", "")
        # The body starts on the line after the redirect; find it in the raw bytes (tree-sitter's
        # heredoc_body is unreliable with $((...)) inside, upstream issue #325).
        data = unit.data
        body_start = data.find(b"\n", node.start_byte)
        if body_start < 0:
            return MappedText([])
        body_start += 1
        pos = body_start
        lines: list[tuple[int, int]] = []
        while pos < len(data):
            nl = data.find(b"\n", pos)
            line_end = len(data) if nl < 0 else nl
            line = data[pos:line_end]
            check = line.lstrip(b"\t") if strip_tabs else line
            if check.rstrip(b"\r") == delim.encode("utf-8", "surrogateescape"):
                break
            lines.append((pos, min(line_end + 1, len(data))))
            pos = line_end + 1
        pieces: list[Piece] = []
        for s, e in lines:
            if strip_tabs:
                while s < e and data[s:s + 1] == b"\t":
                    s += 1
            if quoted:
                pieces.extend(unit.pieces(s, e))
            else:
                line_pieces = self.expand_heredoc_line(s, e, unit)
                if self.over_budget(len(line_pieces), 0) or len(pieces) > MAX_PIECES:
                    return MappedText([self._too_big("a here-document", unit.span(node.start_byte, e))])
                pieces.extend(line_pieces)
        kept = [p for p in pieces if p.text != "" or not p.known]
        if not quoted:  # a quoted body is the file's own text: no bigger than the file
            kept = list(self.capped(kept, "a here-document", unit.span(node.start_byte, node.end_byte)))
        body = MappedText(kept)
        if lines:
            self.body_ranges[id(body)] = (lines[0][0], lines[-1][1])
        return body

    def expand_heredoc_line(self, start: int, end: int, unit: Unit, escapes: bool = True) -> list[Piece]:
        """One line of an unquoted heredoc: parameter, command and arithmetic expansion; \\$ \\` \\\\."""
        data = unit.data
        out: list[Piece] = []
        run = start
        i = start
        while i < end:
            ch = data[i:i + 1]
            if escapes and ch == b"\\" and i + 1 < end and data[i + 1:i + 2] in (b"$", b"`", b"\\", b"\n"):
                if i > run:
                    out.extend(unit.pieces(run, i))
                if data[i + 1:i + 2] != b"\n":
                    out.append(unit.piece(i + 1, i + 2))
                i += 2
                run = i
                continue
            if ch == b"$" and i + 1 < end:
                j = self._expansion_end(data, i, end)
                if j > i + 1:
                    if i > run:
                        out.extend(unit.pieces(run, i))
                    out.extend(self.expand_snippet(i, j, unit))
                    i = j
                    run = i
                    continue
            if ch == b"`":
                j = data.find(b"`", i + 1, end)
                if j > 0:
                    if i > run:
                        out.extend(unit.pieces(run, i))
                    out.append(unknown(f"{unit.text(i, j + 1)} is computed at run time", None,
                                       unit.span(i, j + 1)))
                    i = j + 1
                    run = i
                    continue
            i += 1
        if run < end:
            out.extend(unit.pieces(run, end))
        return out

    @staticmethod
    def _expansion_end(data: bytes, i: int, end: int) -> int:
        nxt = data[i + 1:i + 2]
        if nxt in (b"{", b"("):
            close = b"}" if nxt == b"{" else b")"
            depth, j = 0, i + 1
            while j < end:
                c = data[j:j + 1]
                if c == nxt:
                    depth += 1
                elif c == close:
                    depth -= 1
                    if depth == 0:
                        return j + 1
                j += 1
            return i
        j = i + 1
        if j < end and (data[j:j + 1].isalpha() or data[j:j + 1] == b"_"):
            while j < end and (data[j:j + 1].isalnum() or data[j:j + 1] == b"_"):
                j += 1
            return j
        if j < end and data[j:j + 1] in b"0123456789@*#?$!":
            return j + 1
        return i

    def expand_snippet(self, start: int, end: int, unit: Unit) -> list[Piece]:
        """An expansion found in heredoc text, parsed on its own with its real position kept."""
        text = unit.data[start:end]
        span = unit.span(start, end)
        if text.startswith(b"$((") and text.endswith(b"))"):
            return [self.arith_text(start + 3, end - 2, unit, span)]
        from plint.reading.shell.parse import parse

        prefix = b"X="
        data = prefix + text
        seg_piece = unit.piece(start, end)
        sub = Unit(data, [(0, len(prefix), Piece("X=", None)), (len(prefix), len(data), seg_piece)],
                   unit.source, unit.unknowns)
        tree = parse(data)
        stack = [tree.root_node]
        while stack:
            n = stack.pop()
            if n.type == "variable_assignment":
                value = n.child_by_field_name("value")
                if value is None:
                    break
                return list(_flatten(self.expand(value, sub, quoted=True)))
            stack.extend(reversed(n.children))
        return [seg_piece]

    def producer(self, words: list[Word], unit: Unit, stdin: MappedText | None, node,
                 prefix_env: dict[str, Var] | None = None) -> MappedText | None:
        """What a pure text-producing command writes to stdout (cat, tee, echo, printf, sed, envsubst);
        `node` is the command or its span, for the files it writes; `prefix_env` the `NAME=value`
        words before the command, which bash exports to it alone."""
        if not words or words[0].text is None:
            return None
        name = words[0].text.rsplit("/", 1)[-1]
        args = words[1:]
        if name in ("cat", "tee"):
            files = [w for w in args if not (w.text or "").startswith("-")]
            if name == "cat" and files:
                contents = [self.file_text(w, unit) for w in files]
                if any(c is None for c in contents):
                    return None
                return MappedText([p for c in contents for p in c.pieces])  # type: ignore[union-attr]
            if name == "tee" and stdin is not None:
                for w in files:
                    if w.known:
                        self.write(w, stdin, False, unit, node)
            return stdin
        if name == "echo":
            flags = []
            while args and args[0].text in ("-n", "-e", "-E", "-ne", "-en"):
                flags.append(args[0].text)
                args = args[1:]
            pieces: list[Piece] = []
            for i, w in enumerate(args):
                if i:
                    pieces.append(Piece(" ", None))
                pieces.extend(w.pieces)
            if not any("n" in f for f in flags):
                pieces.append(Piece("\n", None))
            return MappedText(pieces)
        if name == "printf" and args:
            fmt = args[0].text
            if fmt in ("%s", "%s\n", "%s\\n") and len(args) > 1:
                pieces = [p for w in args[1:] for p in w.pieces]
                if fmt != "%s":
                    pieces.append(Piece("\n", None))
                return MappedText(pieces)
            if fmt is not None and "%" not in fmt and len(args) == 1:
                return MappedText(list(args[0].pieces))
            return None
        if name == "envsubst":
            from plint.reading.shell.template import run_envsubst

            def lookup(name: str) -> Var | None:
                given = (prefix_env or {}).get(name)
                return Var(name, given.value, given.items, True, given.span) if given is not None else self.lookup(name)

            return run_envsubst(args, stdin, lookup)
        if name == "sed":
            if any((w.text or "").startswith(("-i", "--in-place")) for w in args):
                return None  # edits its file in place (file_command), writes nothing to stdout
            from plint.reading.shell.sed import run_sed

            return run_sed(args, stdin, lambda w: self.file_text(w, unit),
                           lambda w, content: self.write(w, content, False, unit, node))
        return None

    def file_text(self, word: Word, unit: Unit) -> MappedText | None:
        if not word.known:
            vf = self.result.virtual_files.get(word.display())
            return vf.content if vf is not None else None
        path = self.resolve_path(word.text, unit)  # type: ignore[arg-type]
        vf = self.result.virtual_files.get(str(path))
        if vf is not None:
            return vf.content
        src = self.read(path)
        if src is None and self.unread(word, unit) is not None:  # its content is unknown, not absent
            from plint.root import OUTSIDE_NOTE

            return MappedText([unknown(f"written from {word.display()}, {OUTSIDE_NOTE}", span=word.site)])
        return MappedText.from_source(src) if src is not None else None

    def pipeline(self, node, unit: Unit) -> int | None:
        stages = [c for c in node.named_children if c.type != "comment"]
        stdin: MappedText | None = None
        status: int | None = 0
        for stage in stages:
            if stage.type == "command":
                status = self.command(stage, unit, stdin=stdin, output=True)
                stdin = self.last_output
            elif stage.type == "redirected_statement":
                status = self.redirected(stage, unit, stdin)
                stdin = self.last_output
            else:
                status = self.statement(stage, unit)
                stdin = None
        self.last_output = stdin
        return status

    # ---- control flow -----------------------------------------------------------------------------
    def describe(self, node, unit: Unit, what: str = "") -> str:
        text = " ".join(unit.text(node.start_byte, node.end_byte).split())
        if len(text) > 60:
            text = text[:57] + "..."
        span = unit.span(node.start_byte, node.end_byte)
        where = f" (line {span.line})" if span is not None else ""
        return f"{text}{where}{what}"

    def branches(self, alternatives: list[tuple[str | tuple[str, ...], Callable[[], object]]],
                 cond_text: str, choice: Choice | None = None) -> None:
        """Run each alternative from the same state and merge: variables that differ become unknown.
        A label (or several) says when the alternative runs; it goes into Command.conditions. An
        if/case `choice` the options force runs one alternative only, as bash would."""
        if choice is not None:
            forced = self.options.choices.get(choice.key)
            if forced is not None and forced < len(alternatives):
                label, run = alternatives[forced]
                labels = (label,) if isinstance(label, str) else label
                self.conditions.extend(labels)
                self.result.chosen.extend(labels)
                try:
                    run()
                finally:
                    del self.conditions[len(self.conditions) - len(labels):]
                return
            self.result.choices.setdefault(choice.key, choice)
        start = self.snapshot()
        ends: list[_State] = []
        stopped: list[type] = []  # how alternatives that left early left (exit, return)
        for label, run in alternatives:
            self.restore(start)
            labels = (label,) if isinstance(label, str) else label
            self.conditions.extend(labels)
            try:
                run()
                ends.append(self.snapshot())
            except (_Exit, _Return) as leave:
                stopped.append(type(leave))
                if isinstance(leave, _Return):
                    ends.append(self.snapshot())
            except (_Break, _Continue):
                ends.append(self.snapshot())
            finally:
                del self.conditions[len(self.conditions) - len(labels):]
        if not ends:
            self.restore(start)
            raise _Exit()
        self.merge(ends, cond_text, choice.key if choice is not None else None)
        if len(stopped) == len(alternatives):  # every way through leaves: so does the statement
            raise _Return() if _Return in stopped else _Exit()

    def merge(self, ends: list[_State], cond_text: str, key=None) -> None:
        merged = dict(ends[0].vars)
        names = set().union(*(e.vars.keys() for e in ends))
        for name in names:
            values = [e.vars.get(name) for e in ends]
            if all(_same(values[0], v) for v in values[1:]):
                if values[0] is not None:
                    merged[name] = values[0]
                continue
            exported = any(v is not None and v.exported for v in values)
            span = next((v.span for v in values if v is not None), None)
            reason = f"${name} depends on {cond_text}"
            items = _common_items(values)
            if items is not None:  # arrays: the items all branches share, then one unknown item for the tails
                tails = [_alternative_texts(_joined(v.items[len(items):])) for v in values]  # type: ignore[union-attr]
                alts = dict.fromkeys(t for ts in tails for t in ts)
                piece = unknown(reason, name, span, alts)
                if key is not None:  # a launch chosen by this branch is read again once per arm (shell.choices)
                    self.result.merged_from[id(piece)] = (piece, key)
                merged[name] = Var(name, (), items + ((piece,),), exported, span)
                continue
            # A string every branch starts alike (`OPTS="$OPTS --fp16"` in an `if`) keeps that start: only
            # the tail the branches disagree on is unknown, and its alternatives are the tails.
            head = _common_head(values)
            # an earlier merge of the same tail stays named: each condition it depends on is a way to supply it
            lead = f"${name} depends on "
            earlier = [p.reason[len(lead):] for v in values if v is not None and not v.is_array
                       for p in v.value[len(head):] if not p.known and p.reason and p.reason.startswith(lead)]
            reason += "".join(f"; and on {r}" for r in dict.fromkeys(earlier) if r != cond_text)
            alts: list[str] = []
            for v in values:
                if v is None:
                    alts.append("<unset>")
                elif v.is_array:
                    t = _var_text(v)
                    alts.append(t if t is not None else "<unknown>")
                else:
                    alts.extend(_alternative_texts(v.value[len(head):]))
            piece = unknown(reason, name, span, dict.fromkeys(alts))
            if key is not None:
                self.result.merged_from[id(piece)] = (piece, key)
            merged[name] = Var(name, head + (piece,), None, exported, span)
        self.vars = merged
        self.functions = {k: v for e in ends for k, v in e.functions.items()}
        self.positional = ends[0].positional

    def condition(self, nodes, unit: Unit) -> int | None:
        status: int | None = 0
        for n in nodes:
            if n.is_named and n.type != "comment":
                status = self.statement(n, unit)
        return status

    def if_statement(self, node, unit: Unit) -> int | None:
        cond_nodes, body, clauses, state = [], [], [], "cond"
        for c in node.children:
            if c.type == "then":
                state = "body"
                continue
            if c.type in ("elif_clause", "else_clause"):
                clauses.append(c)
                continue
            if c.type in ("if", "fi"):
                continue
            if state == "cond":
                cond_nodes.append(c)
            else:
                body.append(c)
        arms: list[tuple[list, list, str]] = [(cond_nodes, body, "if")]
        for cl in clauses:
            if cl.type == "elif_clause":
                cn, bd, st = [], [], "cond"
                for c in cl.children:
                    if c.type == "then":
                        st = "body"
                        continue
                    if c.type == "elif":
                        continue
                    (cn if st == "cond" else bd).append(c)
                arms.append((cn, bd, "elif"))
            else:
                arms.append(([], [c for c in cl.children if c.type != "else"], "else"))
        return self._arms(arms, unit, node)

    def _arms(self, arms, unit: Unit, node) -> int | None:
        """if/elif/else: the first arm whose condition is known true runs; arms after an unknown
        condition become alternatives, each labelled with what must hold for it to run."""
        pending: list[tuple[tuple[str, ...], Callable[[], object]]] = []
        falses: list[str] = []  # "if X (line 3) is false" for each unknown condition passed
        first_unknown = None
        reasons: list[str] = []  # why the undecided conditions are unknown
        for cond_nodes, body, kind in arms:
            if kind == "else":
                if not pending:
                    return self.block(body, unit)
                pending.append((tuple(falses), lambda b=body: self.block(b, unit)))
                break
            self.unknown_reasons = []
            status = self.condition(cond_nodes, unit)
            cond_text = f"{kind} " + (self.describe(cond_nodes[0], unit) if cond_nodes else "condition")
            if status == 0 and not pending:
                return self.block(body, unit)
            if status == 0:
                pending.append((tuple(falses) + (f"{cond_text} is true",), lambda b=body: self.block(b, unit)))
                break
            if status is None:
                reasons.extend(self.unknown_reasons or ["?"])
                if first_unknown is None:
                    first_unknown = cond_text
                    if self.unknown_reasons:
                        first_unknown += ", which is unknown: " + "; ".join(dict.fromkeys(self.unknown_reasons))
                pending.append((tuple(falses) + (f"{cond_text} is true",), lambda b=body: self.block(b, unit)))
                falses.append(f"{cond_text} is false")
        else:
            if pending:
                pending.append((tuple(falses), lambda: None))
        if pending:  # the last alternative is what runs when every undecided condition is false
            self.branches(pending, first_unknown or "a condition",
                          Choice.of(unit.span(node.start_byte, node.end_byte), first_unknown or "",
                                    len(pending), len(pending) - 1, only_about_arguments(reasons)))
        return None

    def case_statement(self, node, unit: Unit) -> int | None:
        value_node = node.child_by_field_name("value")
        value_pieces = _flatten(self.expand(value_node, unit, quoted=True)) if value_node is not None else ()
        word = _text(value_pieces)
        why = "; ".join(dict.fromkeys(p.reason for p in value_pieces if not p.known and p.reason))
        items = [c for c in node.named_children if c.type == "case_item"]
        import fnmatch

        alternatives = []
        for item in items:
            patterns, body = [], []
            seen_paren = False
            for c in item.children:
                if c.type == ")" and not seen_paren:
                    seen_paren = True
                    continue
                if not seen_paren:
                    if c.is_named:
                        patterns.append(c)
                elif c.is_named and c.type != "comment":
                    body.append(c)
            texts = [_text(_flatten(self.expand(p, unit, quoted=True))) for p in patterns]
            shown = "|".join(t if t is not None else "?" for t in texts)
            if word is not None and all(t is not None for t in texts):
                if any(fnmatch.fnmatchcase(word, t) for t in texts):  # type: ignore[arg-type]
                    if alternatives:
                        alternatives.append((shown, body))
                        break
                    return self.block(body, unit)
                continue
            alternatives.append((shown, body))
        if not alternatives:
            return 0
        label = "case " + (self.describe(value_node, unit) if value_node is not None else "")
        arms: list = [(f"{label} matches {shown}", (lambda b=b: self.block(b, unit)))
                      for shown, b in alternatives]
        if not any(shown.split("|").count("*") for shown, _ in alternatives):
            arms.append((f"{label} matches no pattern", lambda: None))
        fallback = next((i for i, (shown, _) in enumerate(alternatives) if "*" in shown.split("|")), len(arms) - 1)
        reasons = [p.reason or "?" for p in value_pieces if not p.known]
        self.branches(arms, label + (f", which is unknown: {why}" if why else ""),
                      Choice.of(unit.span(node.start_byte, node.end_byte), label, len(arms), fallback,
                                only_about_arguments(reasons)))
        return None

    def and_or(self, node, unit: Unit) -> int | None:
        children = [c for c in node.children if c.type != "comment"]
        self.unknown_reasons = []
        status = self.statement(children[0], unit) if children else 0
        i = 1
        while i + 1 < len(children):
            op, right = children[i].type, children[i + 1]
            i += 2
            if status is None:
                left = children[0] if i == 3 else node
                label = self.describe(left, unit)
                yes, no = ("is true", "is false") if self._is_test(left, unit) else ("succeeds", "fails")
                if op == "||":
                    yes, no = no, yes
                why = "; ".join(dict.fromkeys(self.unknown_reasons))
                self.branches([(f"{label} {yes}", lambda r=right: self.statement(r, unit)),
                               (f"{label} {no}", lambda: None)],
                              label + (f", which is unknown: {why}" if why else ""))
                status = None
                continue
            if (op == "&&" and status == 0) or (op == "||" and status != 0):
                status = self.statement(right, unit)
        return status

    @staticmethod
    def _is_test(node, unit: Unit) -> bool:
        """A test (`[ ]`, `[[ ]]`, `test`, `(( ))`) rather than a command that succeeds or fails."""
        while node.type == "negated_command" and node.named_children:
            node = node.named_children[0]
        if node.type == "test_command" or (node.type == "compound_statement" and node.children
                                           and node.children[0].type == "(("):
            return True
        name = node.child_by_field_name("name") if node.type == "command" else None
        return name is not None and unit.text(name.start_byte, name.end_byte) in ("test", "[", "[[")

    def run_loop_body(self, body, unit: Unit) -> bool:
        """Run a loop body once; False when it broke out."""
        self.loops += 1
        try:
            self.statement(body, unit)
        except _Break:
            return False
        except _Continue:
            pass
        finally:
            self.loops -= 1
        return True

    def for_statement(self, node, unit: Unit) -> int | None:
        var = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        if var is None or body is None:
            return None
        name = unit.text(var.start_byte, var.end_byte)
        values = [c for c in node.children if node.field_name_for_child(list(node.children).index(c)) == "value"]
        if values:
            items = self.words(values, unit)
            if items and all(_unknown_arguments(w) for w in items) and self.no_arguments():
                items = []  # `for a in "$@"` with no arguments given: the body never runs
        else:
            items = list(self.positional) if self.positional is not None else [] if self.no_arguments() else [
                Word((unknown(NOT_GIVEN, "@"),))]
        if any(not w.known for w in items) or len(items) > MAX_LOOP:
            def once():
                self.vars[name] = Var(name, (unknown(f"${name} is the variable of a loop over values "
                                                     "plint cannot know", name),))
                self.run_loop_body(body, unit)
            self.branches([(self.describe(node.children[0], unit, " loop body"), once),
                           ("loop not run", lambda: None)], f"the loop at {self.describe(var, unit)}")
            return None
        for w in items:
            self.vars[name] = Var(name, w.pieces, None, self.vars[name].exported if name in self.vars else False,
                                  w.site)
            if not self.run_loop_body(body, unit):
                break
        return 0

    def c_for(self, node, unit: Unit) -> int | None:
        body = node.child_by_field_name("body")
        parts = {k: node.child_by_field_name(k) for k in ("initializer", "condition", "update")}
        if body is None:
            return None
        text = {k: unit.text(v.start_byte, v.end_byte) if v is not None else "" for k, v in parts.items()}
        self.arith_text_plain(text["initializer"], None)
        for _ in range(MAX_LOOP):
            cond = arith.evaluate(text["condition"] or "1", self.arith_lookup).value
            if cond is None:
                self.branches([("loop body", lambda: self.run_loop_body(body, unit)), ("loop ends", lambda: None)],
                              "a loop condition")
                return None
            if cond == 0:
                return 0
            if not self.run_loop_body(body, unit):
                return 0
            self.arith_text_plain(text["update"], None)
        return None

    def while_statement(self, node, unit: Unit) -> int | None:
        """Iterate while the condition is known to hold (capped, and stopped as soon as an iteration
        changes nothing, as in `while true; do ...; done`); an unknown condition runs the body once
        as an alternative to not running it."""
        cond = node.child_by_field_name("condition")
        body = node.child_by_field_name("body")
        until = bool(node.children) and node.children[0].type == "until"
        if body is None:
            return None
        cond_nodes = [c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "condition"] \
            or ([cond] if cond is not None else [])
        label = ("until " if until else "while ") + (self.describe(cond, unit) if cond is not None else "")
        for _ in range(MAX_LOOP):
            self.unknown_reasons = []
            status = self.condition(cond_nodes, unit)
            runs = None if status is None else (status == 0) != until
            if runs is False:
                return 0
            if runs is None and only_about_arguments(self.unknown_reasons) and self.no_arguments():
                return 0  # a loop over the script's arguments (`while [[ $# -gt 0 ]]`): none are given
            if runs is None:
                why = "; ".join(dict.fromkeys(self.unknown_reasons))
                self.branches([(f"{label} runs its body", lambda: self.run_loop_body(body, unit)),
                               (f"{label} does not run its body", lambda: None)],
                              label + (f", which is unknown: {why}" if why else ""))
                return None
            before = dict(self.vars)
            if not self.run_loop_body(body, unit):
                return 0
            if before.keys() == self.vars.keys() and all(_same(v, self.vars[k]) for k, v in before.items()):
                return None  # the next iteration would repeat this one
        return None

    # ---- tests ------------------------------------------------------------------------------------
    def test(self, node, unit: Unit) -> int | None:
        inner = [c for c in node.named_children]
        if not inner:
            return 1
        return self.test_expr(inner[0], unit)

    def test_expr(self, node, unit: Unit) -> int | None:
        t = node.type
        if t == "parenthesized_expression":
            inner = node.named_children
            return self.test_expr(inner[0], unit) if inner else None
        if t == "unary_expression":
            op = node.children[0]
            opt = unit.text(op.start_byte, op.end_byte)
            if opt == "!":
                s = self.test_expr(node.named_children[-1], unit)
                return None if s is None else int(s == 0)
            operand = node.named_children[-1]
            fields = self.expand(operand, unit, quoted=True)
            value = self._test_text(fields)
            if value is None and opt in ("-z", "-n"):
                return self.emptiness(opt, _flatten(fields))
            return self.unary(opt, value)
        if t == "binary_expression":
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            op_node = node.child_by_field_name("operator")
            op = unit.text(op_node.start_byte, op_node.end_byte) if op_node is not None else ""
            if op in ("&&", "||", "-a", "-o"):
                a = self.test_expr(left, unit)
                if (op in ("&&", "-a") and a == 1) or (op in ("||", "-o") and a == 0):
                    return a
                b = self.test_expr(right, unit)
                if a is None or b is None:
                    return None
                return b
            lv = self._test_text(self.expand(left, unit, quoted=True)) if left is not None else ""
            rv = self._test_text(self.expand(right, unit, quoted=True)) if right is not None else ""
            return self.binary(op, lv, rv)
        if t in ("string", "word", "simple_expansion", "expansion", "concatenation", "raw_string", "number"):
            fields = self.expand(node, unit, quoted=True)
            value = self._test_text(fields)
            return self.emptiness("-n", _flatten(fields)) if value is None else int(value == "")
        return None

    def _test_text(self, fields: Fields) -> str | None:
        pieces = _flatten(fields)
        self.unknown_reasons.extend(p.reason for p in pieces if not p.known and p.reason)
        return _text(pieces)

    def test_words(self, args: list[Word]) -> int | None:
        for w in args:
            self.unknown_reasons.extend(p.reason for p in w.unknowns if p.reason)
        texts = [w.text for w in args]
        if not texts:
            return 1
        if texts[0] == "!":
            s = self.test_words(args[1:])
            return None if s is None else int(s == 0)
        for joiner in ("-o", "-a"):
            if joiner in texts[1:-1]:
                i = texts.index(joiner)
                a, b = self.test_words(args[:i]), self.test_words(args[i + 1:])
                if joiner == "-a":
                    return 1 if 1 in (a, b) else (None if None in (a, b) else 0)
                return 0 if 0 in (a, b) else (None if None in (a, b) else 1)
        if len(texts) == 1:
            return self.emptiness("-n", args[0].pieces) if texts[0] is None else int(texts[0] == "")
        if len(texts) == 2:
            if texts[1] is None and texts[0] in ("-z", "-n"):
                return self.emptiness(texts[0], args[1].pieces)
            return self.unary(texts[0] or "", texts[1])
        if len(texts) == 3:
            return self.binary(texts[1] or "", texts[0], texts[2])
        return None

    @staticmethod
    def emptiness(op: str, pieces) -> int | None:
        """`-z`/`-n` of a value whose text is unknown but whose emptiness may be known."""
        empty = _is_empty(pieces)
        return None if empty is None else int(empty != (op == "-z"))

    @staticmethod
    def unary(op: str, value: str | None) -> int | None:
        if value is None:
            return None
        if op == "-z":
            return int(value != "")
        if op == "-n":
            return int(value == "")
        return None  # file tests and the like: run-time facts

    @staticmethod
    def binary(op: str, a: str | None, b: str | None) -> int | None:
        if a is None or b is None:
            return None
        import fnmatch

        if op in ("=", "=="):
            return int(not fnmatch.fnmatchcase(a, b))
        if op == "!=":
            return int(fnmatch.fnmatchcase(a, b))
        if op in ("-eq", "-ne", "-gt", "-lt", "-ge", "-le"):
            x = arith.evaluate(a, lambda n: None).value
            y = arith.evaluate(b, lambda n: None).value
            if x is None or y is None:
                return None
            return int(not {"-eq": x == y, "-ne": x != y, "-gt": x > y, "-lt": x < y, "-ge": x >= y,
                            "-le": x <= y}[op])
        if op in ("<", ">"):
            return int(not (a < b if op == "<" else a > b))
        if op == "=~":  # POSIX extended regular expressions read as Python's: close for simple ones
            import re

            try:
                return int(re.search(b, a) is None)
            except re.error:
                return None
        return None


class _Span:
    """A fake node covering a run of sibling nodes (the operand of ${X:-...})."""

    def __init__(self, children, start: int, end: int):
        self.children = children
        self.start_byte = start
        self.end_byte = end


SBATCH_FLAGS = {"--exclusive", "--wait", "-W", "--parsable", "--hold", "-H", "--requeue", "--no-requeue",
                "--test-only", "--overcommit", "-O", "--contiguous", "--spread-job", "--use-min-nodes",
                "--quiet", "-Q", "--verbose", "-v", "--ignore-pbs"}


def evaluate(source: SourceFile, options: EvalOptions | None = None) -> ShellResult:
    """Evaluate a script statically; never raises."""
    options = options or EvalOptions()
    shell = Shell(source, options)
    try:
        shell.run_file(source)
    except _Budget as budget:
        shell.result.problems.append(Problem(
            "unresolved", f"plint stopped evaluating {budget.args[0] if budget.args else ''}; later values are "
                          "not read"))
    except (_Exit, _Return, _Break, _Continue):
        pass
    except RecursionError:
        shell.result.problems.append(Problem("unresolved", "the script nests too deeply to evaluate"))
    except Exception as exc:  # noqa: BLE001 - a reader never raises; the problem names what went wrong
        shell.result.problems.append(Problem(
            "unresolved", f"plint could not evaluate the rest of the script ({type(exc).__name__}: {exc})"))
    shell.result.variables = dict(shell.vars)
    return shell.result
