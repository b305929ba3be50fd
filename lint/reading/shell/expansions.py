"""The evaluator's expansions: words, parameters and their operators, arithmetic, command
substitutions (a mixin of plint.reading.shell.evaluator.Shell)."""

from __future__ import annotations

import os
import re
from typing import Any

from plint.reading.shell import arith, keyed, patterns
from plint.reading.shell.arith_expansion import ArithmeticExpansions
from plint.reading.shell.arguments import (
    COUNT_NOT_GIVEN,
    NOT_GIVEN,
    moved_by_spread,
    parameter_not_given,
    positional_pieces,
)
from plint.reading.shell.model import MappedText, Piece, Var, Word, unknown
from plint.reading.shell.unit import Unit
from plint.reading.shell.glued import glued_groups, joined
from plint.reading.shell.pure_commands import prints_a_count, program_lookup, pure_output, stdout_discarded
from plint.reading.shell.fields import (
    Fields,
    ALL_ELEMENTS,
    uncounted_reason,
    alternative_texts,
    flatten,
    is_empty,
    join_fields,
    may_split,
    misparsed_underscore,
    split_fields,
    pieces_text,
    prints_one_name,
    var_text,
)
from plint.reading.shell.state import EXPANSIONS, LISTING_COMMANDS, MAX_PIECES, OverBudget, SpanNode
from plint.bounds import MAX_NESTING, parse_index

# surrogates a `\u` escape can make, less U+DC80..U+DCFF: those are how plint holds a file's undecodable bytes
_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def _as_bash_writes_it(match) -> str:
    return match.group().encode("utf-8", "surrogatepass").decode("utf-8", "surrogateescape")


# array indexes read from their nodes; any other (rare) shape is expanded from its text
_INDEX_NODES = frozenset(
    {
        "simple_expansion",
        "expansion",
        "command_substitution",
        "arithmetic_expansion",
        "word",
        "number",
        "string",
        "concatenation",
    }
)


class Expansions(ArithmeticExpansions):
    # ---- expansion --------------------------------------------------------------------------------
    def words(self, nodes, unit: Unit) -> list[Word]:
        out: list[Word] = []
        for group in glued_groups(nodes):
            site = unit.span(group[0].start_byte, group[-1].end_byte)
            fields = self.glued_fields(group, unit)
            loose = {id(p) for f in fields for p, splittable in f if splittable and may_split(p)}
            for w in split_fields(fields):
                # empty pieces (the "" that keeps a quoted empty word alive) only matter alone
                pieces = tuple(p for p in w if p.text != "") or tuple(w[:1])
                out.append(
                    Word(self.capped(pieces, "a word", site), site, bool(loose) and {id(p) for p in pieces} <= loose)
                )
        return out

    def glued_fields(self, group: list, unit: Unit) -> Fields:
        """The fields of one word: a node, or touching nodes tree-sitter split it into (plint.reading.shell.glued)."""
        if len(group) == 1:
            return self.expand(group[0], unit)
        fields: Fields = [[]]
        self._container(joined(group, unit.data), unit, group[0].start_byte, group[-1].end_byte, fields, False)
        return fields

    def expand(self, node, unit: Unit, quoted: bool = False) -> Fields:
        if node.type not in EXPANSIONS:
            return self._expand(node, unit, quoted)
        # an expansion inside an expansion: each level costs a Python call chain, so the depth is a budget
        # that says where it ran out (a RecursionError would say nothing, after ~200 levels of work)
        self.nesting += 1
        try:
            if self.nesting > MAX_NESTING:
                raise OverBudget(
                    f"where expansions nest more than {MAX_NESTING} deep (too complex: not evaluated)",
                    unit.span(node.start_byte, node.start_byte + 1),
                )
            return self._expand(node, unit, quoted)
        finally:
            self.nesting -= 1

    def _expand(self, node, unit: Unit, quoted: bool) -> Fields:
        t = node.type
        if (
            t == "regex"
            and getattr(node.parent, "type", None) == "expansion"
            and patterns.EXPANDED.search(unit.text(node.start_byte, node.end_byte))
        ):
            # a pattern bash expands and unquotes before matching (`${f%.$ext}`, `${p//\//_}`): not evaluated
            what = unit.text(node.start_byte, node.end_byte)
            return [
                [
                    (
                        unknown(
                            f"the pattern {what} is not evaluated", None, unit.span(node.start_byte, node.end_byte)
                        ),
                        False,
                    )
                ]
            ]
        if t in (
            "word",
            "number",
            "extglob_pattern",
            "regex",
            "test_operator",
            "variable_name",
            "special_variable_name",
            "file_descriptor",
            "heredoc_start",
        ):
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
            # `$'\ud800'`: bash writes a surrogate's three UTF-8 bytes (ED A0 80), which plint keeps as it keeps
            # any undecodable byte; a lone surrogate left in the text stopped every later encode (found by the fuzzer)
            text = _SURROGATE.sub(_as_bash_writes_it, text)
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
            if all(c.type == "word" for c in node.children):
                # tree-sitter splits some plain words (`[[`, `a]b`) into adjacent words: one literal, as
                # bash reads it, and half the pieces of expanding each
                return [[(p, False) for p in self.literal(node.start_byte, node.end_byte, unit, quoted)]]
            fields = [[]]
            self._container(node, unit, node.start_byte, node.end_byte, fields, quoted)
            return fields
        if t == "simple_expansion" or t == "expansion":
            return self.parameter(node, unit, quoted)
        if t == "command_substitution":
            piped = self.heredoc_text(node, unit) or self.piped_text(node, unit)
            if piped is not None:
                return [[(p, not quoted) for p in piped]]
            return [[(self.substitution(node, unit), not quoted)]]
        if t == "arithmetic_expansion":
            return [[(self.arithmetic(node, unit), not quoted)]]
        if t == "process_substitution":
            return [
                [
                    (
                        unknown(
                            f"{unit.text(node.start_byte, node.end_byte)} is a process substitution",
                            span=unit.span(node.start_byte, node.end_byte),
                        ),
                        False,
                    )
                ]
            ]
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
            and ALL_ELEMENTS.fullmatch(unit.text(c.start_byte, c.end_byte).strip()) is not None
            for c in inner
        )

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
        parts = node.child_count if hasattr(node, "child_count") else len(node.children)  # a node or a SpanNode
        if parts > MAX_PIECES:  # a word of more parts than a value may hold: not built only to be dropped
            self.over_budget(MAX_PIECES, 0)
            fields[-1].append((self._too_big("a word", unit.span(start, end)), False))
            return
        pos = start
        for c in node.children:
            if c.type in ('"', '$"') and (c.start_byte == node.start_byte or c.end_byte == node.end_byte):
                continue
            cs = max(self._real_start(c), pos)
            if cs > pos:
                for p in self.literal(pos, min(cs, end), unit, quoted):
                    fields[-1].append((p, False))
            if c.type == "string_content":
                for p in self.literal(max(c.start_byte, pos), c.end_byte, unit, True):
                    fields[-1].append((p, False))
            else:
                join_fields(fields, self.expand(c, unit, quoted))
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
            if unit.data[i : i + 1] == b"\\" and i + 1 < end:
                nxt = unit.data[i + 1 : i + 2]
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
        target = self.ref_target(name)
        return self.vars.get(target) if target is not None else None

    def parameter(self, node, unit: Unit, quoted: bool) -> Fields:
        """$X, ${X}, ${X:-d} and the other parameter expansions."""
        span = unit.span(node.start_byte, node.end_byte)
        children = [c for c in node.children if c.type not in ("$", "${", "}")]
        prefix = None
        if children and children[0].type in ("#", "!") and len(children) > 1:
            prefix = children[0].type
            children = children[1:]
        if not children:
            return [[(unknown(f"{unit.text(node.start_byte, node.end_byte)} cannot be read", span=span), False)]]
        target = children[0]
        rest = children[1:]
        name, index = unit.text(target.start_byte, target.end_byte), None
        if target.type == "subscript":
            base = target.child_by_field_name("name")
            idx = target.child_by_field_name("index")
            name = unit.text(base.start_byte, base.end_byte) if base is not None else name
            index = unit.text(idx.start_byte, idx.end_byte) if idx is not None else "0"
            if idx is not None and index not in ("@", "*"):
                index, hidden = self.expand_index(idx, unit)
                if index is None:
                    why = "; ".join(dict.fromkeys(p.reason for p in hidden if p.reason))
                    return [
                        [
                            (
                                unknown(
                                    f"the index of ${{{name}[...]}} is unknown" + (f": {why}" if why else ""),
                                    name,
                                    span,
                                ),
                                False,
                            )
                        ]
                    ]
        value, is_set, multi = self.resolve(name, index, span, quoted)
        if prefix == "#":
            if multi is not None:
                count = self.element_count(name, len(multi), span)
                return [[(count, False)]]
            if value is None and not is_set and not name.isdigit():
                return [[(self.unset_piece(name, span), False)]]
            t = pieces_text(value) if value is not None else ""
            p = (
                Piece(str(len(t)), span, "derived")
                if t is not None
                else unknown(f"the length of ${name} is unknown", name, span)
            )
            return [[(p, not quoted)]]
        if prefix == "!" and index in ("@", "*"):  # `${!A[@]}`: the array's subscripts
            var = self.lookup(name)
            if var is not None and var.uncounted_from is not None:
                multi, value = [[self.element_count(name, 0, span)]], None
            elif var is not None and var.is_array:
                multi, value = [[Piece(k, None, "derived")] for k in keyed.subscripts(var)], None
            elif var is not None and not var.nameref:  # a set scalar is element 0
                multi, value = [[Piece("0", None, "derived")]], None
        if prefix == "!" and not (index in ("@", "*") and multi is not None):
            ref = pieces_text(value) if value is not None else None
            if ref and ref.isidentifier():
                value, is_set, multi = self.resolve(ref, None, span, quoted)
            else:
                return [
                    [(unknown(f"${{!{name}}} is an indirect reference plint cannot follow", name, span), not quoted)]
                ]
        if rest:
            op_node = rest[0]
            op = op_node.type if not op_node.is_named else None
            operand = rest[1:]
            # `"${A[@]:-}"` of elements, not all empty: the elements as "${A[@]}" gives them (the default is not used)
            elements = multi is not None and op in (":-", "-") and any(pieces_text(w) != "" for w in multi)
            if op is not None and not elements and not (multi is not None and op in patterns.EACH_ELEMENT):
                return self.operator(op, operand, name, value, is_set, multi, node, unit, quoted, span)
            if op is not None and not elements:  # bash removes, replaces or changes case in each element
                multi = [
                    list(flatten(self.operator(op, operand, name, w, True, None, node, unit, True, span)))
                    or [Piece("", None)]  # an element that ends up empty is still a word
                    for w in multi
                ]
        if multi is not None:
            if quoted and index in ("@",) or (quoted and name == "@"):
                # the items from an uncounted array's first unknown one stand for any number of words
                past = self.uncounted_at(name)
                return [[(p, i >= past and not p.known) for p in w] for i, w in enumerate(multi)] or [[]]
            joined: Fields = [[]]
            for i, w in enumerate(multi):
                if i:
                    joined[-1].append((Piece(" ", None), not quoted))
                joined[-1].extend((p, not quoted) for p in w)
            return joined
        if value is None:
            return [[(self.unset_piece(name, span, quoted), not quoted)]]  # unquoted: any number of words
        return [[(p, not quoted) for p in value]]

    def unset_piece(self, name: str, span, quoted: bool = False) -> Piece:
        if name.isdigit():
            return unknown(parameter_not_given(name), name, span)
        reason = f"${name} is not set in the script and has no default"
        return Piece(None, span, "unresolved", reason=reason, name=name, quoted=quoted)

    def resolve(self, name: str, index: str | None, span, quoted: bool):
        """(pieces or None when unset/unknown-unset, is_set, list of words for @/* or None)."""
        if name in ("@", "*"):
            if self.positional is None:
                return [unknown(NOT_GIVEN, name, span)], True, None
            return None, True, [list(w.pieces) for w in self.positional]
        if name == "#":
            if self.positional is None:
                return [unknown(COUNT_NOT_GIVEN, name, span)], True, None
            moved = moved_by_spread(self.positional, "the arguments include")
            count = unknown(moved, name, span) if moved else Piece(str(len(self.positional)), span, "derived")
            return [count], True, None
        if name.isdigit():
            if name == "0":
                if self.arg0 is not None:
                    return list(self.arg0.pieces), True, None
                return [Piece(self.script_path, span, "derived")], True, None  # at the expansion: `eval $0`
            position = parse_index(name)
            pieces = positional_pieces(self.positional, position, span)
            if pieces is None:
                return None, False, None
            return pieces, position <= len(self.positional or []), None
        if name in ("?", "$", "!", "-", "RANDOM", "SECONDS", "LINENO", "BASHPID", "PPID"):
            return [unknown(f"${name} is only known at run time", name, span)], True, None
        if name == "BASH_SOURCE" and name not in self.vars:
            return [Piece(self.current_file, None, "derived")], True, None
        if name == "PWD" and name not in self.vars:  # bash sets it at start-up: the folder `$(pwd)` prints
            return [Piece(self.working_folder(), None, "derived")], True, None
        target = self.ref_target(name)
        if target is None:
            return [unknown(f"${name} is a nameref to a variable plint cannot know", name, span)], True, None
        var = self.vars.get(target)
        if var is None:
            return None, False, None
        if var.keys is not None:
            return self.keyed_lookup(var, name, index, span)
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
            if var.uncounted_from is not None and not 0 <= i < var.uncounted_from:
                return [unknown(f"${{{name}[{index}]}} is unknown: {uncounted_reason(var)}", name, span)], True, None
            return (list(items[i]) if -len(items) <= i < len(items) else []), True, None
        if index in ("@", "*"):
            return None, True, [list(var.value)] if var.value else []
        return list(var.value), True, None

    def keyed_lookup(self, var: Var, name: str, index: str | None, span):
        """resolve() of an associative array or an indexed one with gaps (plint.reading.shell.keyed)."""
        if index in ("@", "*"):
            return None, True, [list(i) for i in keyed.listed_items(var)]
        key = (
            "0" if index is None else keyed.subscript(var, index, lambda t: arith.evaluate(t, self.arith_lookup).value)
        )
        if key is None:
            return [unknown(f"${{{name}[{index}]}}: the index is unknown", name, span)], True, None
        item = keyed.element(var, key)
        if item is None and var.uncounted_from is not None:  # it may be among the elements plint cannot count
            return [unknown(f"${{{name}[{index}]}} is unknown: {uncounted_reason(var)}", name, span)], True, None
        return (list(item), True, None) if item is not None else ([], False, None)  # an unset element: empty

    def uncounted_at(self, name: str) -> int:
        """The index from which the items of array NAME stand for an unknown number of elements (past the end
        when they are counted)."""
        var = self.lookup(name) if name not in ("@", "*") else None
        return var.uncounted_from if var is not None and var.uncounted_from is not None else 1 << 30

    def element_count(self, name: str, count: int, span) -> Piece:
        """`${#A[@]}`: how many elements; unknown where branches left the array with different lengths."""
        var = self.lookup(name)
        if var is None or var.uncounted_from is None:
            return Piece(str(count), None, "derived")
        return unknown(f"${{#{name}[@]}} is unknown: {uncounted_reason(var)}", name, span)

    def operator(self, op, operand, name, value, is_set, multi, node, unit, quoted, span) -> Fields:
        if multi is not None and op == ":":
            return self.slice_words(operand, name, multi, unit, quoted, span)
        if multi is not None:
            value = [p for w in multi for p in w]
        operand_fields: Fields | None = None

        def opnd() -> Fields:
            nonlocal operand_fields
            if operand_fields is None:
                operand_fields = [[]]
                if operand:
                    s = operand[0].start_byte
                    e = operand[-1].end_byte
                    if self.misparsed_arithmetic(operand, unit):  # `${S:-$(((N + 3) / 4))}`: tree-sitter-bash
                        return [[(self.arith_text(s + 3, e - 2, unit, span), False)]]  # reads a subshell, and fails
                    if any(n.type == "ERROR" or n.has_error for n in operand):  # its text is no value
                        return [[(unknown(f"{unit.text(s, e)} could not be parsed", name, span), False)]]
                    if (named := misparsed_underscore(operand, unit)) is not None:
                        found, was_set, _ = self.resolve(named, None, span, quoted)
                        pieces = found if found is not None else [] if was_set else [self.unset_piece(named, span)]
                        return [[(p, not quoted) for p in pieces]]
                    fake = SpanNode(operand, s, e)
                    self._container(fake, unit, s, e, operand_fields, quoted)
            return operand_fields

        text = pieces_text(value) if value is not None else None
        empty = value is None or text == ""
        unknown_value = value is not None and text is None
        if op in (":-", "-", ":=", "=", ":?", "?"):
            use_default = (not is_set) if op in ("-", "=", "?") else (not is_set or text == "")
            if unknown_value and op.startswith(":"):
                return [[(p, not quoted) for p in value]]
            if not use_default:
                return [[(p, not quoted) for p in value]]
            if op in ("?", ":?"):
                return [[(unknown(f"${name} is not set (the script stops with an error here)", name, span), False)]]
            result = [
                [
                    (
                        Piece(p.text, p.span, p.origin, p.exact, p.reason, p.name, p.alternatives, p.source, name)
                        if p.known
                        else p,
                        s,
                    )
                    for p, s in f
                ]
                for f in opnd()
            ]
            if op in (":=", "="):
                self.vars[name] = Var(
                    name, flatten(result), None, self.vars[name].exported if name in self.vars else False, span
                )
            return [[(p, s and not quoted) for p, s in f] for f in result]
        if op in (":+", "+"):
            use = is_set and (op == "+" or not empty)
            if unknown_value and is_empty(value) is False:
                return opnd()  # set and known not to be empty (a merged value may be unset): the word is used
            if unknown_value:  # nothing, or the operand: both are its alternatives
                alts = ["<unset>"] + alternative_texts(flatten(opnd()))
                return [
                    [
                        (
                            unknown(
                                f"${{{name}{op}...}} depends on ${name}, which is unknown",
                                name,
                                span,
                                dict.fromkeys(alts),
                            ),
                            False,
                        )
                    ]
                ]
            return opnd() if use else [[]]
        if unknown_value or text is None:
            if value is None and not is_set and name.isdigit() and self.positional is not None:
                text = ""
            elif value is None and not is_set:
                return [[(self.unset_piece(name, span), False)]]
            else:
                return [[(unknown(f"${name} is unknown", name, span), not quoted)]]
        pattern = pieces_text(flatten(opnd())) if operand else ""
        changed = self.string_op(op, text, pattern, operand, unit, quoted)
        if changed is None:
            return [
                [
                    (
                        unknown(
                            f"{unit.text(node.start_byte, node.end_byte)} cannot be evaluated statically", name, span
                        ),
                        not quoted,
                    )
                ]
            ]
        return [[(Piece(changed, span, "derived"), not quoted)]]

    @staticmethod
    def misparsed_arithmetic(operand, unit: Unit) -> bool:
        """An operand that is one `$((...))` tree-sitter could not parse (it tries a subshell in a command
        substitution first, where bash takes the arithmetic expansion)."""
        text = unit.text(operand[0].start_byte, operand[-1].end_byte)
        return any(n.type == "ERROR" or n.has_error for n in operand) and text.startswith("$((") and text.endswith("))")

    def slice_words(self, operand, name, multi, unit, quoted, span) -> Fields:
        """`${@:2}`, `${A[@]:1:3}`: a slice of the words, each kept whole when quoted."""
        nums = [c for c in operand if c.type != ":"]
        bounds = [self.expand_inline(n.start_byte, n.end_byte, unit)[0] for n in nums[:2]]
        evaluated = [arith.evaluate(b, self.arith_lookup).value if b is not None else None for b in bounds]
        values = [v for v in evaluated if v is not None]
        if not values or len(values) != len(evaluated):
            return [[(unknown(f"a slice of ${name} with unknown bounds", name, span), False)]]
        start = values[0]
        var = self.lookup(name) if name not in ("@", "*") else None
        if var is not None and var.uncounted_from is not None:
            end = start + values[1] if len(values) > 1 and values[1] >= 0 else None
            if start < 0 or end is None or end > var.uncounted_from:
                return [[(unknown(f"${{{name}[@]:...}} is unknown: {uncounted_reason(var)}", name, span), False)]]
        if name in ("@", "*"):  # positional slices count from $0
            if start == 0:
                multi = [[Piece(self.script_path, span, "derived")]] + list(multi)
            else:
                start -= 1
        if var is not None and var.keys is not None and not var.associative:  # a gapped array: by index, not position
            first = start if start >= 0 else max((int(k) for k in var.keys), default=-1) + 1 + start
            start = sum(1 for k in var.keys if int(k) < max(first, 0))
        if start < 0:
            start += len(multi)
        chosen = multi[max(start, 0) :]
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
        """`${X#P}`, `${X/P/S}`, `${X^^}`, `${X:O:L}` of a known value (plint.reading.shell.patterns)."""
        if pattern is None:
            return None
        if op in ("/", "//", "/#", "/%"):
            cut = next((i for i, c in enumerate(operand) if c.type == "/"), len(operand))  # PATTERN/STRING
            before, after = operand[:cut], operand[cut + 1 :]
            pat = pieces_text(flatten(self.expand(before[0], unit, True))) if before else ""
            rep = pieces_text(flatten(self.expand(after[0], unit, True))) if after else ""
            return patterns.substitute(op, text, pat, rep)
        if op == ":":
            nums = [c for c in operand if c.type != ":"]
            if not nums:
                return None
            bounds = [arith.evaluate(unit.text(n.start_byte, n.end_byte), self.arith_lookup).value for n in nums[:2]]
            known = [b for b in bounds if b is not None]
            return patterns.substring(text, *known) if len(known) == len(bounds) else None
        return patterns.trimmed(op, text, pattern)

    # ---- substitutions ----------------------------------------------------------------------------
    def expand_between(self, node, start: int, end: int, unit: Unit) -> tuple[str | None, list[Piece]]:
        """expand_inline of bytes [start, end) inside node, each expansion in it taken from its node (re-parsing
        the text would parse a nested `$((...))` once per level)."""
        parts, hidden, pos = [], [], start
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            if child.end_byte <= start or child.start_byte >= end:
                continue
            if child.type not in EXPANSIONS:
                stack.extend(reversed(child.children))
                continue
            pieces = flatten(self.expand(child, unit, quoted=True))
            parts += [unit.text(pos, child.start_byte), pieces_text(pieces) or ""]
            hidden += [p for p in pieces if not p.known]
            pos = child.end_byte
        parts.append(unit.text(pos, end))
        return (None if hidden else "".join(parts)), hidden

    def expand_inline(self, start: int, end: int, unit: Unit) -> tuple[str | None, list[Piece]]:
        """The text of bytes [start, end) of an arithmetic expression or array index with $X, ${X...},
        $(( )) and $( ) replaced by their values (bash expands those before evaluating); None when
        one of them is unknown, with the unknown pieces saying why."""
        raw = unit.data[start:end]
        if b"$" not in raw and b"`" not in raw and not unit.unknowns:
            return unit.text(start, end), []
        pieces = self.expand_heredoc_line(start, end, unit, escapes=False)
        return pieces_text(pieces), [p for p in pieces if not p.known]

    def expand_index(self, node, unit: Unit) -> tuple[str | None, list[Piece]]:
        """An array index (`${A[$i]}`, `${A[${B[1]}]}`) as expand_inline gives it, from the nodes tree-sitter
        already parsed: re-parsing the index's text would parse a nested index once per level."""
        if node.type not in _INDEX_NODES:
            return self.expand_inline(node.start_byte, node.end_byte, unit)
        pieces = flatten(self.expand(node, unit, quoted=True))
        return pieces_text(pieces), [p for p in pieces if not p.known]

    def substitution(self, node, unit: Unit) -> Piece:
        span = unit.span(node.start_byte, node.end_byte)
        body = [c for c in node.named_children]
        command = body[0] if len(body) == 1 and body[0].type == "command" else None
        # one command's words are expanded once: read twice, `$($($(...)))` doubled its work at each level
        texts = [w.text for w in self.words(self._command_parts(command)[1], unit)] if command is not None else []
        folder = self.current_folder()
        value = (
            (pure_output(texts, folder)[0] if folder is not None else None)
            if command is not None
            else self.pure(body, unit)
        )
        if value is not None:
            return Piece(value.rstrip("\n"), span, "derived")
        program = program_lookup(body, unit, texts if command is not None else None)
        if program is not None:  # `$(command -v deepspeed || true)`: the program bash finds, assumed installed
            return Piece(program, span, "assumed")
        return self._run_time_output(node, unit, texts)

    def _run_time_output(self, node, unit: Unit, texts: list[str | None]) -> Piece:
        """A command substitution's output known only at run time; `texts` its command's words."""
        shown = " ".join(unit.text(node.start_byte, node.end_byte).split())
        if len(shown) > 60:
            shown = shown[:57] + "...)"
        reason = f"the output of {shown}, known only at run time"
        span = unit.span(node.start_byte, node.end_byte)
        one_word = prints_one_name(texts) or prints_a_count(node, unit)
        return Piece(None, span, "unresolved", reason=reason, one_word=one_word)

    def heredoc_text(self, node, unit: Unit) -> list[Piece] | None:
        """The output of `$(cat <<EOF ... EOF)`: the heredoc's text, its trailing newlines dropped as
        bash drops them; None for anything else."""
        body = [c for c in node.named_children if c.type != "comment"]
        if len(body) != 1 or body[0].type != "redirected_statement":
            return None
        command = body[0].child_by_field_name("body")
        redirects = [c for c in body[0].children if c.type == "heredoc_redirect"]
        if command is None or command.type != "command" or len(redirects) != 1:
            return None
        words = self.words(self._command_parts(command)[1], unit)
        if [w.text for w in words] != ["cat"] or any(c.type == "file_redirect" for c in redirects[0].children):
            return None
        return _without_trailing_newlines(list(self.heredoc(redirects[0], unit).pieces)) or None

    def piped_text(self, node, unit: Unit) -> list[Piece] | None:
        """The output of `$(echo "$CMD" | sed 's/  */ /g')`: a pipeline of text producers (echo, printf,
        cat, sed, envsubst; `producer`) whose input plint knows piece by piece, unknown pieces kept as
        they stand; bash drops the trailing newlines. None for anything else (then `substitution`)."""
        body = [c for c in node.named_children if c.type != "comment"]
        if len(body) != 1 or body[0].type not in ("pipeline", "command", "redirected_statement"):
            return None
        stages = [c for c in body[0].named_children if c.type != "comment"] if body[0].type == "pipeline" else body
        text: MappedText | None = None
        if stages and stages[0].type == "redirected_statement":  # `wc -l < FILE`: the file is its input
            first, text = self._reading_file(stages[0], unit)
            if first is None or text is None:
                return None
            stages = [first, *stages[1:]]
        if any(st.type != "command" for st in stages):
            return None
        if len(stages) == 1 and text is None and not self._names_line_tool(stages[0], unit):
            return None  # one pure command alone is `pure`'s; a pipeline, a line tool or a read file's here
        for stage in stages:
            prefix, rest = self._command_parts(stage)
            if text is None and stage is stages[0] and [c.type for c in prefix] == ["file_redirect"]:
                named = self._file_source(prefix[0], unit)  # `< FILE wc -l`: the redirect written first
                text, prefix = (self.file_text(named, unit) if named is not None else None), []
                if text is None:
                    return None
            if prefix:
                return None
            words = self.words(rest, unit)
            text = self.producer(words, unit, text, unit.span(stage.start_byte, stage.end_byte))
            if text is None and len(stages) == 1:  # its words are expanded: not again in `substitution`
                return [self._run_time_output(node, unit, [w.text for w in words])]
            if text is None:
                return None
        if text is None:
            return None
        pieces = _without_trailing_newlines(list(text.pieces))
        if not pieces or (
            len(pieces) == 1 and not pieces[0].known and "plint does not evaluate" in (pieces[0].reason or "")
        ):
            return None
        return pieces

    def _names_line_tool(self, command, unit: Unit) -> bool:
        """Whether a command's name, as written, is one of the line tools (read before any expansion: a
        command substitution's words are expanded once, see `substitution`)."""
        name = command.child_by_field_name("name")
        return name is not None and unit.text(name.start_byte, name.end_byte) in LISTING_COMMANDS

    def _reading_file(self, node, unit: Unit) -> tuple[Any, MappedText | None]:
        """A redirected command that reads one file (`CMD < FILE`, no other redirect): (the command, the file's
        text); (None, None) for anything else."""
        redirects = [c for c in node.children if c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect")]
        command = node.child_by_field_name("body")
        if command is None or command.type != "command" or len(redirects) != 1 or redirects[0].type != "file_redirect":
            return None, None
        named = self._file_source(redirects[0], unit)
        return (command, self.file_text(named, unit)) if named is not None else (None, None)

    def working_folder(self) -> str:
        """The folder plint reads the script as run from: its own, where files.path_key resolves paths."""
        return os.path.dirname(os.path.abspath(self.script_path))

    def current_folder(self) -> str | None:
        """The folder bash is in now: where a `cd` moved it ($PWD, which cd sets), else the one it ran from;
        None after a `cd` to a folder plint cannot know."""
        var = self.vars.get("PWD")
        return self.working_folder() if var is None else var_text(var)

    def pure(self, nodes, unit: Unit) -> str | None:
        """The output of a command substitution made only of pure commands (dirname, basename, pwd,
        cd, echo, printf, realpath); None for anything else."""
        cwd = self.current_folder()
        if cwd is None:
            return None
        out = None
        for n in nodes:
            if n.type == "list":
                result = self.pure(list(n.named_children), unit)
                if result is None:
                    return None
                out = result
                continue
            silenced: bool | None = False
            if n.type == "redirected_statement":  # `cd -- "$DIR" &>/dev/null`: it runs, its output may be dropped
                silenced = stdout_discarded(n)
                n = n.child_by_field_name("body") if silenced is not None else None
            if n is None or n.type != "command":
                return None
            out, cwd = pure_output([w.text for w in self.words(self._command_parts(n)[1], unit)], cwd)
            if out is None:
                return None
            out = "" if silenced else out
        return out


def _without_trailing_newlines(pieces: list[Piece]) -> list[Piece]:
    """What a command substitution keeps of its output: bash drops the trailing newlines."""
    while pieces and pieces[-1].known and (pieces[-1].text or "").endswith("\n"):
        last = pieces.pop()
        kept = (last.text or "").rstrip("\n")
        if kept:
            pieces.append(last.sub(0, len(kept)))
            break
    return pieces
