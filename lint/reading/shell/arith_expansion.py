"""The evaluator's arithmetic: `$(( ))`, `(( ))` and the variables they read and assign (a mixin of
plint.reading.shell.evaluator.Shell, under plint.reading.shell.expansions.Expansions)."""

from __future__ import annotations

import re

from plint.reading.shell import arith, keyed
from plint.reading.shell.core import ShellCore
from plint.reading.shell.fields import pieces_text, var_text
from plint.reading.shell.model import Piece, Problem, Var, unknown
from plint.reading.shell.unit import Unit

_NAME = re.compile(r"[A-Za-z_]\w*")  # a variable an arithmetic expression may read, bare or as $NAME
_ELEMENT = re.compile(r"\b([A-Za-z_]\w*)\[([^\[\]]*)\]")  # NAME[SUBSCRIPT]


class ArithmeticExpansions(ShellCore):
    def ref_target(self, name: str) -> str | None:
        """The variable `name` stands for: itself, or the one a nameref (`declare -n`) names, followed through
        other namerefs; None when a name on the way is unknown or the chain does not end."""
        for _ in range(keyed.MAX_REF_CHAIN):
            var = self.vars.get(name)
            if var is None or not var.nameref:
                return name
            target = pieces_text(var.value)
            if not target or not target.isidentifier():
                return None
            name = target
        return None

    def arith_lookup(self, name: str) -> str | None:
        """A variable's text for arithmetic (`NAME` or `NAME[INDEX]`, the index already evaluated);
        None when unknown, including a variable neither the script nor the environment sets."""
        base, bracket, rest = name.partition("[")
        target = self.ref_target(base)
        var = self.vars.get(target) if target is not None else None
        if var is None:
            return None
        if not bracket:
            return var_text(var)
        index = rest[:-1]
        if not index.lstrip("-").isdigit() or var.associative:  # an associative key is a string, not a number
            return None
        if var.keys is not None:
            item = keyed.element(var, int(index))
            return pieces_text(item) if item is not None else ""
        elements = var.items if var.items is not None else ((var.value,) if var.value else ())
        i = int(index)
        return pieces_text(elements[i]) if -len(elements) <= i < len(elements) else ""

    def arithmetic(self, node, unit: Unit) -> Piece:
        span = unit.span(node.start_byte, node.end_byte)
        inner_start = node.children[0].end_byte if node.children else node.start_byte
        inner_end = node.children[-1].start_byte if len(node.children) > 1 else node.end_byte
        # from the nodes tree-sitter parsed, as array indexes are; a region it could not parse, from its text
        inline = None if node.has_error else self.expand_between(node, inner_start, inner_end, unit)
        return self.arith_text(inner_start, inner_end, unit, span, inline=inline)

    def arith_text(
        self,
        start: int,
        end: int,
        unit: Unit,
        span,
        reasons: list[str] | None = None,
        inline: tuple[str | None, list[Piece]] | None = None,
        command: bool = False,
    ) -> Piece:
        """$((...)): expand $-parameters inside first (as bash does), then evaluate. `reasons`, when
        given, collects why the $-parameters inside are unknown; `inline`, the expansion when done already;
        `command`, the text of a `(( ))` command rather than of an expansion."""
        expr, hidden = self.expand_inline(start, end, unit) if inline is None else inline
        if expr is None:
            if reasons is not None:
                reasons.extend(p.reason for p in hidden if p.reason)
            why = "; ".join(dict.fromkeys(p.reason for p in hidden if p.reason)) or "a value is unknown"
            first = next((p.name for p in hidden if p.name), None)
            return unknown(f"$(({unit.text(start, end).strip()})) needs {why}", first, span)
        expr = self._associative_elements(expr)
        if expr is None:
            return unknown(
                f"$(({unit.text(start, end).strip()})) reads an element of an associative array plint cannot know",
                None,
                span,
            )
        out = arith.evaluate(expr, self.arith_lookup)
        self._assign(out.assignments, span, "is assigned in arithmetic from unknown values")
        if out.error:
            if not command:  # an expansion: bash abandons the top-level command; `(( ))` only fails
                self.discarding = True
            self.result.problems.append(Problem("shell-error", _refusal(expr, out.error, command), span))
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
            return unknown(
                f"$(({expr.strip()})) needs {names}" + (f" ({why})" if why else ""),
                out.unknown[0] if out.unknown else None,
                span,
                self._alternatives(expr, out.unknown),
            )
        return Piece(str(out.value), span, "assumed" if self._reads_assumed(unit.text(start, end)) else "derived")

    def _reads_assumed(self, expression: str) -> bool:
        """Whether an arithmetic expression reads a variable whose value is assumed (--assume, a node file's
        host count): what it computes is then assumed too, not derived from what the script says."""
        names = set(_NAME.findall(expression))
        return any(p.origin == "assumed" for n in names if n in self.vars for p in self.vars[n].value)

    def arith_command(self, node, unit: Unit) -> int | None:
        """`(( expr ))`: true when the value is not zero; assignments inside take effect."""
        start = node.children[0].end_byte
        end = node.children[-1].start_byte if node.children[-1].type == "))" else node.end_byte
        inside: list[str] = []
        piece = self.arith_text(start, end, unit, unit.span(node.start_byte, node.end_byte), inside, command=True)
        if not piece.known:
            if inside or piece.reason:
                self.unknown_reasons.extend(inside or [piece.reason or ""])
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

            def lookup(n: str, v: str = option) -> str | None:
                return v if n == names[0] else self.arith_lookup(n)

            value = arith.evaluate(expr, lookup).value
            if value is not None:
                out.append(str(value))
        return out

    def _associative_elements(self, expr: str) -> str | None:
        """The expression with each element of an associative array (`CFG[7b]`, whose subscript is a string, not
        arithmetic) replaced by its value, as bash reads it; None when one of them is unknown."""
        out, pos = [], 0
        for m in _ELEMENT.finditer(expr):
            target = self.ref_target(m.group(1))
            var = self.vars.get(target) if target is not None else None
            if var is None or not var.associative:
                continue
            item = keyed.element(var, keyed.unquoted(m.group(2).strip()))
            text = pieces_text(item) if item is not None else "0"  # an unset element is 0 in arithmetic
            if text is None:
                return None
            out += [expr[pos : m.start()], f"({text or 0})"]
            pos = m.end()
        return "".join(out) + expr[pos:]

    def arith_text_plain(self, text: str, site) -> None:
        """Arithmetic already expanded (a `let` argument, a C-style for loop's parts): only its assignments count."""
        out = arith.evaluate(text, self.arith_lookup)
        self._assign(out.assignments, site, "is computed from unknown values")

    def _assign(self, assignments: dict[str, int | None], span, unknown_why: str) -> None:
        """The variables an arithmetic expression assigned: each value, or unknown saying why."""
        for name, value in assignments.items():
            self.vars[name] = Var(
                name,
                (Piece(str(value), span, "derived"),)
                if value is not None
                else (unknown(f"${name} {unknown_why}", name, span),),
                None,
                self.vars[name].exported if name in self.vars else False,
                span,
            )


def _refusal(expr: str, error: str, command: bool) -> str:
    """What bash does with arithmetic it refuses (bash 5.2, checked): `$(( ))` abandons the whole top-level
    command it stands in, set -e or not; `(( ))` fails with status 1."""
    if command:
        return f"bash refuses (({expr.strip()})): {error}; the command fails (status 1)"
    return (
        f"bash refuses $(({expr.strip()})): {error}; bash abandons the top-level command it stands in: nothing "
        "on it is assigned or run, nor the rest of its line, loop, if or function call (set -e or not)"
    )
