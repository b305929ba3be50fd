"""The static bash evaluator: walks tree-sitter-bash nodes the way bash would run them, without
running anything, and records every simple command with fully expanded, provenance-carrying words.

What cannot be known statically (a command substitution, a variable nobody sets, a branch on such a
value) becomes an unknown Piece that says why; it is never guessed and never executed.
"""

from __future__ import annotations

import os

from plint.reading.shell import arith, keyed
from plint.reading.shell.model import Piece, Problem, ShellResult, Var, VirtualFile, Word, unknown
from plint.reading.shell.placeholders import slot_pieces, slot_spans, slot_syntax_problems
from plint.reading.shell.unit import Unit
from plint.source import SourceFile
from plint.reading.shell.fields import flatten, may_split, split_fields, pieces_text
from plint.reading.shell.glued import glued_groups
from plint.reading.shell.state import (
    EvalOptions,
    MAX_COMMAND_WORDS,
    MAX_PIECES,
    ShellBreak,
    OverBudget,
    ShellContinue,
    ShellDiscard,
    ShellExit,
    ShellReturn,
    ShellState,
    default_read,
    path_reader,
)
from plint.reading.shell.expansions import Expansions
from plint.reading.shell.commands import Commands
from plint.reading.shell.sourcing import Sourcing
from plint.reading.shell.control import Control
from plint.bounds import MAX_ARRAY_ITEMS, MAX_VALUE_CHARS


class Shell(Expansions, Commands, Sourcing, Control):
    """The evaluator: its state is declared, with a comment for each part, in core.ShellCore."""

    def __init__(self, source: SourceFile, options: EvalOptions, result: ShellResult | None = None):
        self.options = options
        self.read = default_read if options.read_file is None else path_reader(options.read_file)
        self.result = result or ShellResult(source)
        if result is None:  # files the environment gives the script (a scheduler's node file)
            self.result.virtual_files.update((key, VirtualFile(key, text)) for key, text in options.files.items())
        self.vars = {k: v.exported_copy() for k, v in options.env.items()}
        self.positional = options.positional
        self.functions = {}
        self.readonly = set()
        self.steps = 0
        self.work = 0
        self.depth = 0
        self.nesting = 0
        self.reparsed = 0
        self.conditions = []
        self.loops = 0
        self.parents = []
        self.active_files = set()
        self.locals = []
        self.script_path = os.path.abspath(source.path)
        self.arg0 = None
        self.current_file = self.script_path
        self.unknown_reasons = []
        self.unread_sources = []
        self.guarded = frozenset()
        self.guarded_arguments = frozenset()
        self.argument_defaults = {}
        self.last_output = None
        self.output_sinks = []
        self.body_ranges = {}
        self.getopts_at, self.getopts_offset = 0, 0
        self.discarding = False

    # ---- entry points ----------------------------------------------------------------------------
    def run_file(self, source: SourceFile) -> None:
        from plint.reading.shell.parse import TooComplex, too_complex_message

        slots = slot_spans(source.data)
        # a template slot (`<PATH TO DATASET>`) is one unknown value, never a redirection
        unit = Unit.from_pieces(slot_pieces(source, slots), source) if slots else Unit.for_file(source)
        try:
            self._parse_file(source, unit, slots)
        except TooComplex as exc:  # past the syntax budget: the file is not evaluated, and PL002 says where
            why, at = exc.args
            self.result.problems.append(Problem("unresolved", too_complex_message(why), unit.span(at, at + 1)))
            return
        key = os.path.abspath(source.path)
        self.active_files.add(key)
        outer, self.current_file = self.current_file, key
        try:
            self.top_level(unit.tree.root_node.children, unit)
        finally:
            self.active_files.discard(key)
            self.current_file = outer

    def _parse_file(self, source: SourceFile, unit: Unit, slots) -> None:
        """unit.tree, and the file's syntax problems (PL001) in the result."""
        from plint.reading.shell.parse import parse, recover, syntax_problems

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

    def run_unit(self, unit: Unit) -> None:
        """A string run as shell code (`eval`, `bash -c`, `ssh`, `sbatch --wrap`): bash reads each as it reads a
        file, one top-level command at a time (an expansion it refuses in `eval`'s string ends that string only)."""
        from plint.reading.shell.parse import TooComplex, parse

        try:
            unit.tree = parse(unit.data)
        except TooComplex as exc:
            raise OverBudget(f"where a string it runs is too complex ({exc.args[0]})") from None
        self.top_level(unit.tree.root_node.children, unit)

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.options.max_steps:
            raise OverBudget(f"after {self.options.max_steps} steps (a loop or recursion it cannot bound)")

    def over_budget(self, size: int, chars: int) -> bool:
        """Count a value of `size` pieces and `chars` characters against the file's work budget;
        True when the value itself is over the value budget (plint.bounds)."""

        self.work += size + chars // 64
        if self.work > self.options.max_work:
            raise OverBudget(
                f"after building {self.options.max_work:,} words and values (plint's work budget per file)"
            )
        return size > MAX_PIECES or chars > MAX_VALUE_CHARS

    @staticmethod
    def _too_big(what: str, span) -> Piece:
        return unknown(
            f"{what} is over plint's value budget ({MAX_VALUE_CHARS // 1024} KiB, {MAX_PIECES} parts): not evaluated",
            name=what.strip("${}[@]") or None,
            span=span,
        )

    def capped(self, pieces: tuple[Piece, ...] | list[Piece], what: str, span=None) -> tuple[Piece, ...]:
        """A value as built, or one unknown piece saying so when it is over the value budget."""
        size = len(pieces)
        chars = size if size > MAX_PIECES else sum(len(p.text) for p in pieces if p.text is not None)
        return (self._too_big(what, span),) if self.over_budget(size, chars) else tuple(pieces)

    def capped_items(self, items: tuple[tuple[Piece, ...], ...], name: str, span) -> tuple[tuple[Piece, ...], ...]:
        """An array as built, or one unknown element when it is over the value budget."""

        size = sum(len(item) for item in items[: MAX_ARRAY_ITEMS + 1])
        chars = (
            sum(len(p.text) for item in items[: MAX_ARRAY_ITEMS + 1] for p in item if p.text is not None)
            if size <= MAX_PIECES
            else size
        )
        if len(items) > MAX_ARRAY_ITEMS or self.over_budget(size, chars):
            return ((self._too_big(f"${{{name}[@]}}", span),),)
        return items

    # ---- statements -------------------------------------------------------------------------------
    def block(self, nodes, unit: Unit) -> int | None:
        status: int | None = 0
        for node in nodes:
            if node.is_named and node.type not in ("comment", "heredoc_body"):
                if self.discarding:  # met in a condition or a word: the statements after it do not run
                    raise ShellDiscard()
                status = self.statement(node, unit)
        if self.discarding:
            raise ShellDiscard()
        return status

    def piped(self, node, unit: Unit) -> int | None:
        """A pipeline: each of its commands runs in a subshell, so one an expansion error abandons ends there."""
        try:
            status = self.pipeline(node, unit)
        except ShellDiscard:
            status = 1
        if self.output_sinks:  # its last command's output, where a redirected compound command collects it
            self.to_sink(self.last_output, "a pipeline whose output plint cannot tell")
            self.last_output = None
        if self.discarding:
            self.discarding = False
            return 1
        return status

    def top_level(self, nodes, unit: Unit) -> None:
        """A file's (or a new shell's) statements, as bash reads them: one top-level command at a time, a line
        (and the compound command it opens) each; where an expansion bash refuses abandons one, bash goes on
        with the next line."""
        skip_row = -1
        for node in nodes:
            if not node.is_named or node.type in ("comment", "heredoc_body") or node.start_point[0] == skip_row:
                continue
            try:
                self.statement(node, unit)
                if self.discarding:
                    raise ShellDiscard()
            except ShellDiscard:
                self.discarding = False
                skip_row = node.end_point[0]  # the rest of the line bash read with it

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
                if node.named_child_count > MAX_COMMAND_WORDS:  # `A=1 B=2 ...` of a 4 MiB line: as a command's words
                    raise OverBudget(
                        f"at {node.named_child_count:,} assignments in one statement (plint's bound is "
                        f"{MAX_COMMAND_WORDS:,}; too complex: not evaluated)",
                        unit.span(node.start_byte, node.start_byte + 1),
                    )
                for c in node.named_children:
                    self.assign(c, unit)
                return 0
            if t == "declaration_command":
                return self.declaration(node, unit)
            if t == "unset_command":  # `unset 'A[k]'`, `unset "A[$i]"`: the words as bash passes them
                words = self.words(list(node.named_children), unit)
                self.unset([w.text if w.text is not None else w.known_prefix() + "[?]" for w in words])
                return 0
            if t == "redirected_statement":
                return self.redirected(node, unit)
            if t == "pipeline":
                return self.piped(node, unit)
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
                except ShellDiscard:  # a subshell is a shell of its own: its top level ends it
                    self.discarding = False
                    return 1
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
            raise OverBudget(
                "where the script nests deeper than plint follows (too complex: not evaluated)",
                unit.span(node.start_byte, node.start_byte + 1),
            ) from None
        return None

    def unset(self, names: list[str]) -> None:
        """`unset [-v|-f] NAME...`: variables by default, functions with -f."""
        functions = "-f" in names
        for name in names:
            if "[" in name and name.endswith("]") and not functions:
                base, _, key = name[:-1].partition("[")
                self.unset_element(base, None if name.endswith("[?]") else key)
                continue
            if name.startswith("-") or name in self.readonly:
                continue
            if functions:
                self.functions.pop(name, None)
            else:
                self.vars.pop(name, None)

    def unset_element(self, name: str, key: str | None) -> None:
        """`unset 'A[KEY]'`: the element goes; the array keeps its other subscripts (a gap, for an indexed one).
        `key` None: a subscript plint cannot know."""
        target = self.ref_target(name)
        var = self.vars.get(target) if target is not None else None
        if target is None or var is None or not var.is_array or target in self.readonly:
            return
        subscript = keyed.subscript(var, key, self.arith_int) if key is not None else None
        if subscript is None:  # which element goes is unknown
            self.vars[target] = Var(target, (unknown(f"${target}: an element is unset by an unknown index", target),))
            return
        self.store_keyed(target, keyed.without(var, subscript), var.associative, var.exported, var.span, self.vars, var)

    def snapshot(self) -> ShellState:
        return ShellState(
            dict(self.vars), list(self.positional) if self.positional is not None else None, dict(self.functions)
        )

    def restore(self, state: ShellState) -> None:
        self.vars = dict(state.vars)
        self.positional = list(state.positional) if state.positional is not None else None
        self.functions = dict(state.functions)

    # ---- assignments ------------------------------------------------------------------------------
    def assign(
        self,
        node,
        unit: Unit,
        local: bool = False,
        export: bool = False,
        env: dict[str, Var] | None = None,
        associative: bool = False,
        as_ref: bool = False,
    ) -> None:
        """NAME=VALUE, NAME[SUB]=VALUE, NAME=(...) and their `+=`; `associative` for `declare -A`, `as_ref` for
        `declare -n` (the nameref itself is set, not the variable it names)."""
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None:
            return
        op = next((c.type for c in node.children if c.type in ("=", "+=")), "=")
        subscript: tuple[str | None] | None = None  # (the subscript's text, None when unknown)
        if name_node.type == "subscript":
            base = name_node.child_by_field_name("name")
            idx = name_node.child_by_field_name("index")
            name = unit.text(base.start_byte, base.end_byte) if base is not None else ""
            if idx is not None:
                subscript = (self.expand_inline(idx.start_byte, idx.end_byte, unit)[0],)
        else:
            name = unit.text(name_node.start_byte, name_node.end_byte)
        if env is None and not as_ref:
            name = self.ref_target(name) or name  # a nameref writes the variable it names
        if env is None and name in self.readonly:
            return
        span = unit.span(node.start_byte, node.end_byte)
        target = env if env is not None else self.vars
        old = target.get(name) if env is None else None
        if op == "+=" and old is None and env is None and self.unread_sources:
            old = self.set_elsewhere(name, value_node is not None and value_node.type == "array", span)
        if local and self.locals:
            self.locals[-1].setdefault(name, self.vars.get(name))
        exported = export or (old.exported if old is not None else False)
        associative = associative or (old is not None and old.associative)
        if value_node is not None and value_node.type == "array":
            entries, uncounted = self.array_entries(value_node, unit)
            if (
                associative
                or any(key is not None for key, _ in entries)
                or (op == "+=" and old is not None and old.keys)
            ):
                self.keyed_literal(name, entries, associative, old if op == "+=" else None, exported, span, target)
                return
            items = tuple(value for _, value in entries)
            if op == "+=" and old is not None:
                base_items = tuple(old.items or ()) if old.is_array else ((old.value,) if old.value else ())
                items = base_items + items
                if old.uncounted_from is not None:
                    uncounted = old.uncounted_from
                elif uncounted is not None:
                    uncounted += len(base_items)
            target[name] = Var(name, (), self.capped_items(items, name, span), exported, span, uncounted_from=uncounted)
            return
        value = flatten(self.expand(value_node, unit, quoted=True)) if value_node is not None else ()
        value = self.capped(value, f"${name}", span)
        if subscript is not None and op == "+=" and old is not None and old.is_array:  # `A[k]+=v` appends
            before = self.keyed_lookup_pieces(old, subscript[0])
            value = self.capped(tuple(before) + value, f"${name}", span) if before is not None else value
        if subscript is not None and (associative or (old is not None and old.keys is not None)):
            self.keyed_element(name, old, subscript[0], value, exported, span, target)
            return
        index, uncounted = None, None
        if subscript is not None:
            out = arith.evaluate(subscript[0], self.arith_lookup) if subscript[0] is not None else None
            number = out.value if out is not None else None
            index = number if number is not None else -1  # an unknown index: appended, as before
            current = (
                list(old.items)
                if old is not None and old.items is not None
                else ([old.value] if old is not None and old.value else [])
            )
            uncounted = old.uncounted_from if old is not None else None
            if uncounted is not None and not 0 <= index < uncounted:  # among the elements plint cannot count: they
                return  # stay unknown as they were, this one with them
            if number is not None and number < 0 and -len(current) <= number:
                index = number + len(current)  # `A[-1]=v`: from the end
            if index > len(current):  # a gap (`X[3]=v` on an unset X): keyed from here
                self.keyed_element(name, old, str(index), value, exported, span, target)
                return
        if index is not None:
            if index < 0 or index >= len(current):
                current.append(value)
            else:
                current[index] = value
            items = self.capped_items(tuple(current), name, span)
            target[name] = Var(name, (), items, exported, span, uncounted_from=uncounted)
            return
        if op == "+=" and old is not None and old.is_array:
            self.append_to_first(name, old, value, exported, span, target)
            return
        if op == "+=" and old is not None:
            value = self.capped(tuple(old.value) + value, f"${name}", span)
        if env is None and name in self.argument_defaults:
            value = self.argument_default(name, old, value)
        target[name] = Var(name, self.settle(name, value, span), None, exported, span)

    def set_elsewhere(self, name: str, array: bool, span) -> Var:
        """What `NAME+=...` appends to when the script has not set NAME but sourced a file plint cannot read: the
        file's value, unknown (appending is how a script adds to what a sourced file defines)."""
        why = f"${name} may have been set by sourced file {self.unread_sources[0]}, which plint cannot read"
        piece = unknown(why, name, span)
        if array:  # its elements, in unknown number
            return Var(name, (), ((piece,),), False, span, uncounted_from=0)
        return Var(name, (piece,), None, False, span)

    def append_to_first(self, name: str, old: Var, value, exported: bool, span, target) -> None:
        """`A+=word` on an array appends to element 0 (bash(1), "Arrays": a reference without a subscript is to
        element 0); one plint cannot place (an uncounted array's first) stays unknown."""
        if old.uncounted_from == 0:
            return
        if old.keys is not None:
            before = self.keyed_lookup_pieces(old, "0") or ()
            self.keyed_element(
                name, old, "0", self.capped(tuple(before) + value, f"${name}", span), exported, span, target
            )
            return
        first = self.capped(tuple(old.items[0]) + value, f"${name}", span) if old.items else value
        items = self.capped_items((first, *(old.items or ())[1:]), name, span)
        target[name] = Var(name, (), items, exported, span, uncounted_from=old.uncounted_from)

    def integer(self, name: str) -> None:
        """`declare -i N=2*4`: the value of an integer variable is evaluated as arithmetic."""
        var = self.vars.get(name)
        if var is None or var.is_array:
            return
        text = pieces_text(var.value)
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
        return tuple(
            p
            if p.known or p.name
            else Piece(
                None,
                p.span,
                p.origin,
                reason=f"${name} is set from {p.reason}",
                name=name,
                alternatives=p.alternatives,
                one_word=p.one_word,
            )
            for p in value
        )

    def array_entries(
        self, node, unit: Unit
    ) -> tuple[list[tuple[tuple[Piece, ...] | None, tuple[Piece, ...]]], int | None]:
        """The items of `(...)`: (KEY, VALUE) for `[KEY]=VALUE`, unsplit as bash assigns it; (None, word) for
        each word of any other item. And the first entry from an unquoted unknown value, which bash splits
        into words plint cannot count (`nodes=($(cat $LSB_DJOB_HOSTFILE | sort -u))`), or None."""
        entries: list[tuple[tuple[Piece, ...] | None, tuple[Piece, ...]]] = []
        uncounted: int | None = None
        for group in glued_groups([c for c in node.named_children if c.type != "comment"]):
            c = group[0]
            if (
                len(group) == 1
                and c.type == "concatenation"
                and c.children
                and unit.text(c.children[0].start_byte, c.children[0].end_byte) == "["
            ):
                split = keyed.split_subscript(flatten(self.expand(c, unit, quoted=True)))
                if split is not None:
                    entries.append(split)
                    continue
            fields = self.glued_fields(group, unit)
            if uncounted is None and any(splits and may_split(p) for f in fields for p, splits in f):
                uncounted = len(entries)
            entries.extend((None, tuple(w)) for w in split_fields(fields))
        return entries, uncounted

    def keyed_literal(self, name: str, entries, associative: bool, base: Var | None, exported, span, target) -> None:
        """`NAME=([KEY]=VALUE ...)` (or `+=`): an associative array, or an indexed one given subscripts."""
        packed = keyed.literal(entries, associative, self.arith_int, base)
        if isinstance(packed, str):
            target[name] = Var(name, (unknown(f"${name}: {packed}", name, span),), None, exported, span)
            return
        self.store_keyed(name, packed, associative, exported, span, target, base)

    def keyed_lookup_pieces(self, var: Var, key: str | None) -> tuple | None:
        """The element `NAME[KEY]` holds now (empty when unset), for `NAME[KEY]+=...`; None when unknown."""
        subscript = keyed.subscript(var, key, self.arith_int) if key is not None else None
        if subscript is None:
            return None
        if var.keys is not None or isinstance(subscript, str):
            return keyed.element(var, subscript) or ()
        items = var.items or ()
        return items[subscript] if -len(items) <= subscript < len(items) else ()

    def keyed_element(self, name: str, old: Var | None, key: str | None, value, exported, span, target) -> None:
        """`NAME[KEY]=VALUE` into an associative or gapped array; an unknown key leaves nothing known of it."""
        associative = old is not None and old.associative
        # `CFG["70b"]=80`: the key is 70b; an indexed subscript is arithmetic
        subscript = keyed.subscript(old, key, self.arith_int) if old is not None and key is not None else None
        if old is None and key is not None:
            subscript = self.arith_int(key)
        if subscript is None or (isinstance(subscript, int) and subscript < 0):
            why = f"${name}: an element is set under a subscript plint cannot know"
            target[name] = Var(name, (unknown(why, name, span),), None, exported, span)
            return
        self.store_keyed(name, keyed.with_element(old, subscript, value), associative, exported, span, target, old)

    def store_keyed(self, name: str, packed, associative: bool, exported, span, target, old: Var | None) -> None:
        keys, items = packed
        capped = self.capped_items(items, name, span)
        uncounted = old.uncounted_from if old is not None else None  # an element more or less: still uncounted
        keys = keys if capped is items else None
        target[name] = Var(name, (), capped, exported, span, keys, associative, uncounted_from=uncounted)

    def arith_int(self, text: str) -> int | None:
        return arith.evaluate(text, self.arith_lookup).value

    def declaration(self, node, unit: Unit) -> int:
        keyword = node.children[0].type if node.children else "declare"
        flags = ""
        for c in node.named_children:
            if c.type == "word" and unit.text(c.start_byte, c.end_byte).startswith(("-", "+")):
                flags += unit.text(c.start_byte, c.end_byte)
                continue
            export = keyword == "export" or "x" in flags
            if c.type == "variable_assignment":
                self.assign(
                    c,
                    unit,
                    local=keyword == "local" or (keyword in ("declare", "typeset") and bool(self.locals)),
                    export=export,
                    associative="A" in flags,
                    as_ref="n" in flags,
                )
                name_node = c.child_by_field_name("name")
                if "n" in flags and name_node is not None:
                    ref = self.vars.get(unit.text(name_node.start_byte, name_node.end_byte))
                    if ref is not None and not ref.is_array:
                        ref.nameref = True
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
                elif "a" in flags or "A" in flags:
                    span = unit.span(c.start_byte, c.end_byte)
                    if keyword in ("declare", "typeset") and self.locals:  # inside a function: its own
                        self.locals[-1].setdefault(name, None)
                    self.vars[name] = Var(name, (), (), export, span, () if "A" in flags else None, "A" in flags)
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
                self.vars[name] = Var(
                    name,
                    self.capped(value.pieces, f"${name}", w.site),
                    None,
                    export or (name in self.vars and self.vars[name].exported),
                    w.site,
                )
            elif name in self.vars:
                if export:
                    self.vars[name].exported = True
            elif keyword == "local" and self.locals:
                self.locals[-1].setdefault(name, None)
                self.vars[name] = Var(name, (), None, False, w.site)


def evaluate(source: SourceFile, options: EvalOptions | None = None) -> ShellResult:
    """Evaluate a script statically; never raises."""
    options = options or EvalOptions()
    shell = Shell(source, options)
    try:
        shell.run_file(source)
    except OverBudget as budget:
        shell.result.problems.append(
            Problem(
                "unresolved",
                f"plint stopped evaluating {budget.args[0] if budget.args else ''}; later values are not read",
                budget.args[1] if len(budget.args) > 1 else None,
            )
        )
    except ShellExit as leave:
        shell.result.exit_site = leave.site
    except (ShellReturn, ShellBreak, ShellContinue, ShellDiscard):
        pass
    except RecursionError:
        shell.result.problems.append(Problem("unresolved", "the script nests too deeply to evaluate"))
    except Exception as exc:  # noqa: BLE001 - a reader never raises; the problem names what went wrong
        shell.result.problems.append(
            Problem("unresolved", f"plint could not evaluate the rest of the script ({type(exc).__name__}: {exc})")
        )
    shell.result.variables = dict(shell.vars)
    shell.result.spent = (shell.steps, shell.work)
    return shell.result
