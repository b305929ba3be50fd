"""The evaluator's control flow: pipelines, branches and their merge, if, case, && and ||, loops,
and test expressions (a mixin of plint.reading.shell.evaluator.Shell)."""

from __future__ import annotations

import re
from functools import partial

from plint.reading.shell import arith
from plint.reading.shell.guards import Guards
from plint.reading.shell.arguments import NOT_GIVEN, only_about_arguments
from plint.reading.shell.choices import Choice
from plint.reading.shell.model import MappedText, Piece, Var, Word, unknown
from plint.reading.shell.unit import Unit
from plint.reading.shell.fields import (
    Fields,
    alternative_texts,
    common_head,
    flatten,
    merged_array,
    same_var,
    pieces_text,
    unknown_arguments,
    var_text,
)
from plint.reading.shell.state import (
    CAPTURED_BODIES,
    MAX_LOOP,
    ShellBreak,
    ShellContinue,
    ShellDiscard,
    ShellExit,
    ShellReturn,
    ShellState,
)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Callable, Sequence


_VARIABLE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(.*)\])?")  # `-v NAME` and `-v NAME[KEY]`


class Control(Guards):
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
            elif stage.type in CAPTURED_BODIES:  # `scontrol show hostnames | while read -r h; do ...; done`
                status, stdin = self.compound_output(stage, unit, stdin)
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

    def branches(
        self,
        alternatives: Sequence[tuple[str | tuple[str, ...], Callable[[], object]]],
        cond_text: str,
        choice: Choice | None = None,
    ) -> None:
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
                    del self.conditions[len(self.conditions) - len(labels) :]
                return
            self.result.choices.setdefault(choice.key, choice)
        if self.output_sinks:  # what goes to a collected stdout depends on the way bash takes
            self.sinks_unknown(f"its output depends on {cond_text}")
        start = self.snapshot()
        ends: list[ShellState] = []
        stopped: list[type] = []  # how alternatives that left early left (exit, return)
        exits: list = []  # the `exit` each way that exited ran
        for label, run in alternatives:
            self.restore(start)
            labels = (label,) if isinstance(label, str) else label
            self.conditions.extend(labels)
            try:
                run()
                ends.append(self.snapshot())
            except (ShellExit, ShellReturn) as leave:
                stopped.append(type(leave))
                exits.append(getattr(leave, "site", None))
                if isinstance(leave, ShellReturn):
                    ends.append(self.snapshot())
            except (ShellBreak, ShellContinue):
                ends.append(self.snapshot())
            except ShellDiscard:  # this way abandons the top-level command; the others are merged
                self.discarding = False
                stopped.append(ShellDiscard)
            finally:
                del self.conditions[len(self.conditions) - len(labels) :]
        if not ends:
            self.restore(start)
            if ShellDiscard in stopped and ShellReturn not in stopped:
                self.discarding = True
                raise ShellDiscard()
            raise ShellExit(exits[0] if exits else None)
        self.merge(ends, cond_text, choice.key if choice is not None else None)
        if len(stopped) == len(alternatives):  # every way through leaves: so does the statement
            raise ShellReturn() if ShellReturn in stopped else ShellExit(exits[0] if exits else None)

    def merge(self, ends: list[ShellState], cond_text: str, key=None) -> None:
        merged = dict(ends[0].vars)
        names = set().union(*(e.vars.keys() for e in ends))
        for name in names:
            values = [e.vars.get(name) for e in ends]
            if all(same_var(values[0], v) for v in values[1:]):
                if values[0] is not None:
                    merged[name] = values[0]
                continue
            exported = any(v is not None and v.exported for v in values)
            span = next((v.span for v in values if v is not None), None)
            reason = f"${name} depends on {cond_text}"
            array = merged_array(values, partial(self.merged_piece, reason, name, span, key), exported, span)
            if array is not None:
                merged[name] = array
                continue
            # A string every branch starts alike (`OPTS="$OPTS --fp16"` in an `if`) keeps that start: only
            # the tail the branches disagree on is unknown, and its alternatives are the tails.
            head = common_head(values)
            # an earlier merge of the same tail stays named: each condition it depends on is a way to supply it
            lead = f"${name} depends on "
            earlier = [
                p.reason[len(lead) :]
                for v in values
                if v is not None and not v.is_array
                for p in v.value[len(head) :]
                if not p.known and p.reason and p.reason.startswith(lead)
            ]
            # each condition once, however many earlier merges named it (a flag appended in several `if`s)
            clauses = dict.fromkeys(c for r in earlier for c in r.split("; and on ") if c != cond_text)
            reason += "".join(f"; and on {c}" for c in clauses)
            alts: list[str] = []
            for v in values:
                if v is None:
                    alts.append("<unset>")
                elif v.is_array:
                    t = var_text(v)
                    alts.append(t if t is not None else "<unknown>")
                else:
                    alts.extend(alternative_texts(v.value[len(head) :]))
            merged[name] = Var(name, head + (self.merged_piece(reason, name, span, key, alts),), None, exported, span)
        self.vars = merged
        self.functions = {k: v for e in ends for k, v in e.functions.items()}
        self.positional = ends[0].positional

    def merged_piece(self, reason: str, name: str, span, key, alternatives: list[str]) -> Piece:
        """The unknown value a merge leaves, with what each branch gave."""
        piece = unknown(reason, name, span, dict.fromkeys(alternatives))
        if key is not None:  # a launch chosen by this branch is read again once per arm (shell.choices)
            self.result.merged_from[id(piece)] = (piece, key)
        return piece

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
                cn: list = []
                bd: list = []
                st = "cond"
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
        arguments = self._assigned_arguments([n for _, body, _ in arms for n in body], unit)
        for cond_nodes, body, kind in arms:
            if kind == "else":
                if not pending:
                    return self.block(body, unit)
                pending.append((tuple(falses), partial(self.block, body, unit)))
                break
            self.unknown_reasons = []
            with self.guarding(self._assigned(body, unit), arguments):
                status = self.condition(cond_nodes, unit)
            cond_text = f"{kind} " + (self.describe(cond_nodes[0], unit) if cond_nodes else "condition")
            if status == 0 and not pending:
                return self.block(body, unit)
            if status == 0:
                pending.append((tuple(falses) + (f"{cond_text} is true",), partial(self.block, body, unit)))
                break
            if status is None:
                reasons.extend(self.unknown_reasons or ["?"])
                if first_unknown is None:
                    first_unknown = cond_text
                    if self.unknown_reasons:
                        first_unknown += ", which is unknown: " + "; ".join(dict.fromkeys(self.unknown_reasons))
                pending.append((tuple(falses) + (f"{cond_text} is true",), partial(self.block, body, unit)))
                falses.append(f"{cond_text} is false")
        else:
            if pending:
                pending.append((tuple(falses), lambda: None))
        if pending:  # the last alternative is what runs when every undecided condition is false
            self.branches(
                pending,
                first_unknown or "a condition",
                Choice.of(
                    unit.span(node.start_byte, node.end_byte),
                    first_unknown or "",
                    len(pending),
                    len(pending) - 1,
                    only_about_arguments(reasons),
                ),
            )
        return None

    def case_statement(self, node, unit: Unit) -> int | None:
        value_node = node.child_by_field_name("value")
        value_pieces = flatten(self.expand(value_node, unit, quoted=True)) if value_node is not None else ()
        word = pieces_text(value_pieces)
        why = "; ".join(dict.fromkeys(p.reason for p in value_pieces if not p.known and p.reason))
        items = [c for c in node.named_children if c.type == "case_item"]
        import fnmatch

        alternatives: list[tuple[str, list]] = []
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
            texts = [pieces_text(flatten(self.expand(p, unit, quoted=True))) for p in patterns]
            shown = "|".join(t if t is not None else "?" for t in texts)
            known = [t for t in texts if t is not None]
            if word is not None and len(known) == len(texts):
                if any(fnmatch.fnmatchcase(word, t) for t in known):
                    if alternatives:
                        alternatives.append((shown, body))
                        break
                    return self.block(body, unit)
                continue
            alternatives.append((shown, body))
        if not alternatives:
            return 0
        label = "case " + (self.describe(value_node, unit) if value_node is not None else "")
        arms: list = [(f"{label} matches {shown}", (lambda b=b: self.block(b, unit))) for shown, b in alternatives]
        if not any(shown.split("|").count("*") for shown, _ in alternatives):
            arms.append((f"{label} matches no pattern", lambda: None))
        fallback = next((i for i, (shown, _) in enumerate(alternatives) if "*" in shown.split("|")), len(arms) - 1)
        reasons = [p.reason or "?" for p in value_pieces if not p.known]
        self.branches(
            arms,
            label + (f", which is unknown: {why}" if why else ""),
            Choice.of(
                unit.span(node.start_byte, node.end_byte), label, len(arms), fallback, only_about_arguments(reasons)
            ),
        )
        return None

    def and_or(self, node, unit: Unit) -> int | None:
        children = [c for c in node.children if c.type != "comment"]
        self.unknown_reasons = []
        with self.guarding(self._assigned(children[2:3], unit), self._assigned_arguments(children[2:3], unit)):
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
                self.branches(
                    [(f"{label} {yes}", partial(self.statement, right, unit)), (f"{label} {no}", lambda: None)],
                    label + (f", which is unknown: {why}" if why else ""),
                )
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
        if node.type == "test_command" or (
            node.type == "compound_statement" and node.children and node.children[0].type == "(("
        ):
            return True
        name = node.child_by_field_name("name") if node.type == "command" else None
        return name is not None and unit.text(name.start_byte, name.end_byte) in ("test", "[", "[[")

    def run_loop_body(self, body, unit: Unit) -> bool:
        """Run a loop body once; False when it broke out."""
        self.loops += 1
        try:
            self.statement(body, unit)
        except ShellBreak:
            return False
        except ShellContinue:
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
            if items and all(unknown_arguments(w) for w in items) and self.no_arguments():
                items = []  # `for a in "$@"` with no arguments given: the body never runs
        else:
            items = (
                list(self.positional)
                if self.positional is not None
                else []
                if self.no_arguments()
                else [Word((unknown(NOT_GIVEN, "@"),))]
            )
        if any(not w.known and not _one_word(w) for w in items) or len(items) > MAX_LOOP:

            def once():
                self.vars[name] = Var(
                    name, (unknown(f"${name} is the variable of a loop over values plint cannot know", name),)
                )
                self.run_loop_body(body, unit)

            self.branches(
                [(self.describe(node.children[0], unit, " loop body"), once), ("loop not run", lambda: None)],
                f"the loop at {self.describe(var, unit)}",
            )
            return None
        for w in items:
            self.vars[name] = Var(
                name, w.pieces, None, self.vars[name].exported if name in self.vars else False, w.site
            )
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
                self.branches(
                    [("loop body", lambda: self.run_loop_body(body, unit)), ("loop ends", lambda: None)],
                    "a loop condition",
                )
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
        cond_nodes = [c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "condition"] or (
            [cond] if cond is not None else []
        )
        label = ("until " if until else "while ") + (self.describe(cond, unit) if cond is not None else "")
        for _ in range(MAX_LOOP):
            before = dict(self.vars)  # what the condition changes counts too (`while getopts ...` moves OPTIND)
            self.unknown_reasons = []
            status = self.condition(cond_nodes, unit)
            runs = None if status is None else (status == 0) != until
            if runs is False:
                return 0
            if runs is None and only_about_arguments(self.unknown_reasons) and self.no_arguments():
                return 0  # a loop over the script's arguments (`while [[ $# -gt 0 ]]`): none are given
            if runs is None:
                why = "; ".join(dict.fromkeys(self.unknown_reasons))
                self.branches(
                    [
                        (f"{label} runs its body", lambda: self.run_loop_body(body, unit)),
                        (f"{label} does not run its body", lambda: None),
                    ],
                    label + (f", which is unknown: {why}" if why else ""),
                )
                return None
            if not self.run_loop_body(body, unit):
                return 0
            if before.keys() == self.vars.keys() and all(same_var(v, self.vars[k]) for k, v in before.items()):
                return None  # the next iteration would repeat this one
        return None

    def read_loop(self, node, unit: Unit, stdin: MappedText) -> bool:
        """`while read [-r] NAME; do ...; done` fed text plint knows line by line (a pipe, `< FILE`, a heredoc):
        the body runs once a line with NAME set to the line, its blanks at either end dropped (read's default
        IFS). False, having run nothing, for any other loop or text whose lines plint cannot count."""
        from plint.reading.shell.lines import split_lines

        cond = [c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "condition" and c.is_named]
        body = node.child_by_field_name("body")
        if body is None or len(cond) != 1 or cond[0].type != "command" or node.children[0].type != "while":
            return False
        words = [unit.text(c.start_byte, c.end_byte) for c in cond[0].named_children]
        if words[:1] != ["read"] or [w for w in words[1:] if w.startswith("-")] not in ([], ["-r"]):
            return False
        names = [w for w in words[1:] if not w.startswith("-")]
        lines = split_lines(stdin)
        if len(names) != 1 or not names[0].isidentifier() or lines is None or len(lines[0]) > MAX_LOOP:
            return False
        for line in lines[0]:
            pieces = _trimmed(line)
            self.vars[names[0]] = Var(names[0], pieces or (Piece("", None, "derived"),))
            if not self.run_loop_body(body, unit):
                break
        self.vars[names[0]] = Var(names[0], (Piece("", None, "derived"),))  # read at the end of input: empty
        return True

    # ---- tests ------------------------------------------------------------------------------------
    def test(self, node, unit: Unit) -> int | None:
        inner = [c for c in node.named_children]
        if not inner:
            return 1
        if node.children and node.children[0].type == "[":
            if _unclosed(node, unit):  # `[ $X -eq 1]`: bash's `[` sees `1]` and fails ("[: missing `]'", status 2)
                return 2
            # `[` is the test builtin: its arguments are words after expansion and splitting, and -a/-o
            # bind as test(1) says; the grammar's tree of `[ a = b -o c = d ]` nests them wrongly
            return self.test_words(self._bracket_words(inner, unit))
        return self.test_expr(inner[0], unit)

    _WORD_NODES = frozenset(
        {
            "string",
            "word",
            "simple_expansion",
            "expansion",
            "concatenation",
            "raw_string",
            "number",
            "command_substitution",
            "arithmetic_expansion",
            "ansi_c_string",
            "translated_string",
            "regex",
            "extglob_pattern",
        }
    )

    def _bracket_words(self, nodes, unit: Unit) -> list[Word]:
        """The words between `[` and `]` in order: operands expanded and split, operators as written."""
        out: list[Word] = []
        stack = list(reversed(nodes))
        while stack:
            n = stack.pop()
            if n.type in self._WORD_NODES:
                out.extend(self.words([n], unit))
            elif n.type == "test_operator" or not n.is_named or not n.children:
                out.append(Word.of(unit.text(n.start_byte, n.end_byte), unit.span(n.start_byte, n.end_byte)))
            else:
                stack.extend(reversed(n.children))
        return out

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
                return self.emptiness(opt, flatten(fields))
            return self.variable_set(value) if opt == "-v" else self.unary(opt, value)
        if t == "binary_expression":
            return self._test_sequence(self._test_items(node, unit), unit)
        if t in ("string", "word", "simple_expansion", "expansion", "concatenation", "raw_string", "number"):
            fields = self.expand(node, unit, quoted=True)
            value = self._test_text(fields)
            return self.emptiness("-n", flatten(fields)) if value is None else int(value == "")
        return None

    def _test_items(self, node, unit: Unit) -> list:
        """The operands (nodes) and operators (their text) of a `[[ ]]` binary expression, in source order.
        tree-sitter-bash nests `[[ $a = x || $a = y ]]` as `$a = (x || $a) = y`, so the tree's shape is not
        bash's precedence; the order of its leaves is."""
        items: list = []
        for i, child in enumerate(node.children):
            if child.type == "binary_expression":
                items.extend(self._test_items(child, unit))
            elif node.field_name_for_child(i) == "operator":
                items.append(unit.text(child.start_byte, child.end_byte))
            else:
                items.append(child)
        return items

    def _test_sequence(self, items: list, unit: Unit) -> int | None:
        """Evaluate operands and operators as bash's `[[ ]]` binds them: `||` loosest, then `&&` (both
        left-associative and short-circuit), then one comparison; 0 is true, None unknown."""
        for joiners in (("||", "-o"), ("&&", "-a")):
            at = [i for i, x in enumerate(items) if isinstance(x, str) and x in joiners]
            if not at:
                continue
            i = at[-1]
            is_or = items[i] in ("||", "-o")
            a = self._test_sequence(items[:i], unit)
            if a == (0 if is_or else 1):
                return a
            b = self._test_sequence(items[i + 1 :], unit)
            decided = 0 if is_or else 1
            return decided if decided == b else (None if None in (a, b) else b)
        if len(items) == 1 and not isinstance(items[0], str):
            return self.test_expr(items[0], unit)
        if len(items) == 3 and isinstance(items[1], str) and not isinstance(items[0], str):
            return self._test_comparison(items[0], items[1], items[2], unit)
        return None

    def _test_comparison(self, left, op: str, right, unit: Unit) -> int | None:
        """`[[ LEFT OP RIGHT ]]` for one comparison operator."""
        negated = (
            left is not None
            and left.type == "unary_expression"
            and left.children
            and unit.text(left.children[0].start_byte, left.children[0].end_byte) == "!"
        )
        if negated:  # `[[ ! $M == x ]]`: the grammar binds `!` to $M alone; bash negates the comparison
            left = left.named_children[-1]
        lf = self.expand(left, unit, quoted=True) if left is not None else [[]]
        rf = self.expand(right, unit, quoted=True) if right is not None else [[]]
        lv, rv = self._test_text(lf), self._test_text(rf)
        status = self.binary(op, lv, rv)
        if status is None:
            status = self.empty_comparison(op, flatten(lf), lv, flatten(rf), rv)
        return status if not negated or status is None else int(status == 0)

    def _test_text(self, fields: Fields) -> str | None:
        pieces = flatten(fields)
        self.unknown_reasons.extend(p.reason for p in pieces if not p.known and p.reason)
        return pieces_text(pieces)

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
                a, b = self.test_words(args[:i]), self.test_words(args[i + 1 :])
                if joiner == "-a":
                    return 1 if 1 in (a, b) else (None if None in (a, b) else 0)
                return 0 if 0 in (a, b) else (None if None in (a, b) else 1)
        if len(texts) == 1:
            return self.emptiness("-n", args[0].pieces) if texts[0] is None else int(texts[0] == "")
        if len(texts) == 2:
            if texts[1] is None and texts[0] in ("-z", "-n"):
                return self.emptiness(texts[0], args[1].pieces)
            return self.variable_set(texts[1]) if texts[0] == "-v" else self.unary(texts[0] or "", texts[1])
        if len(texts) == 3:
            status = self.binary(texts[1] or "", texts[0], texts[2])
            if status is None:
                status = self.empty_comparison(texts[1] or "", args[0].pieces, texts[0], args[2].pieces, texts[2])
            return status
        return None

    def variable_set(self, operand: str | None) -> int | None:
        """`-v NAME` or `-v NAME[KEY]`: whether the variable (through namerefs), or that element of an array, is set;
        None where the script's variables do not say (one it never sets may come from the environment, an array's
        keys may be unknown)."""
        found = _VARIABLE.fullmatch(operand) if operand is not None else None
        target = self.ref_target(found.group(1)) if found is not None else None
        var = self.vars.get(target) if target is not None else None
        if found is None or var is None:
            return None
        key = found.group(2)
        if key is None:
            return 0
        if not var.is_array or var.uncounted_from is not None:
            return None
        if var.keys is not None:
            return 0 if key in var.keys else (None if not var.associative and not key.isdigit() else 1)
        return (0 if int(key) < len(var.items or ()) else 1) if key.isdigit() else None

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
            return int(not {"-eq": x == y, "-ne": x != y, "-gt": x > y, "-lt": x < y, "-ge": x >= y, "-le": x <= y}[op])
        if op in ("<", ">"):
            return int(not (a < b if op == "<" else a > b))
        if op == "=~":  # POSIX extended regular expressions read as Python's: close for simple ones
            try:
                return int(re.search(b, a) is None)
            except re.error:
                return None
        return None


def _one_word(word: Word) -> bool:
    """Whether a loop item whose text is known only at run time is still one item for certain: each unknown part
    is one non-empty word (a host name of the job's node list), so the loop's count of runs is known."""
    return all(p.known or (p.one_word and p.nonempty) for p in word.pieces)


def _trimmed(line: tuple[Piece, ...]) -> tuple[Piece, ...]:
    """A line as `read` with the default IFS leaves it in one variable: blanks at either end dropped."""
    pieces = list(line)
    while pieces and pieces[0].text is not None and not pieces[0].text.strip(" \t"):
        pieces.pop(0)
    while pieces and pieces[-1].text is not None and not pieces[-1].text.strip(" \t"):
        pieces.pop()
    if pieces and pieces[0].text is not None:
        pieces[0] = Piece(pieces[0].text.lstrip(" \t"), pieces[0].span, pieces[0].origin)
    if pieces and pieces[-1].text is not None:
        pieces[-1] = Piece(pieces[-1].text.rstrip(" \t"), pieces[-1].span, pieces[-1].origin)
    return tuple(pieces)


def _unclosed(node, unit: Unit) -> bool:
    """Whether a `[ ... ]` test's closing bracket is glued to the word before it (`1]`): bash reads no `]`."""
    close = node.children[-1]
    return close.type == "]" and close.start_byte > 0 and unit.data[close.start_byte - 1] not in b" \t\n"
