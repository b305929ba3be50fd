"""Defaults written as guards (a mixin of plint.reading.shell.evaluator.Shell, under Control): while a
condition is tested whose branch assigns a variable, a test of that variable unset in the script, or of a
positional parameter the branch assigns from, reads it empty, as bash run with no arguments and no environment
does, so that `[ -z "$X" ] && X=d`, `X=$2; [ -z "$X" ] && X=3` and `V=16; if [ -n "$6" ]; then V=$6; fi` are
defaults like `${X:-d}`; and `-z`/`-n` of a value whose text is unknown but whose emptiness is known."""

from __future__ import annotations

import re
from contextlib import contextmanager

from plint.reading.shell.arguments import parameter_not_given
from plint.reading.shell.core import ShellCore
from plint.reading.shell.fields import is_empty
from plint.reading.shell.model import Piece, Var
from plint.reading.shell.unit import Unit


class Guards(ShellCore):
    @contextmanager
    def guarding(self, names: frozenset[str], arguments: frozenset[tuple[str, str]] = frozenset()):
        """While a condition is tested whose branch assigns `names`: a test of one of them that is unset
        in the script reads it as empty, as bash does with no environment, so that `[ -z "$X" ] && X=d`
        and `if [ -z "$X" ]; then X=d; fi` are defaults like ${X:-d} (the environment may override them,
        as it may ${X:-d}). A test of a positional parameter the statement assigns a variable from
        (`arguments`: (variable, parameter) pairs) reads it as the script run with no arguments does, empty:
        `V=16; if [ -n "$6" ]; then V=$6; fi` is `V=${6:-16}`, V's value a default that argument overrides."""
        before, before_arguments = self.guarded, self.guarded_arguments
        self.guarded, self.guarded_arguments = before | names, before_arguments | arguments
        try:
            yield
        finally:
            self.guarded, self.guarded_arguments = before, before_arguments

    @staticmethod
    def _assigned_arguments(nodes, unit: Unit) -> frozenset[tuple[str, str]]:
        """(variable, positional parameter) for each variable the statements `nodes` assign a positional
        parameter, whole (`V=$6`, `V="${6}"`), when they only assign (a default's branch); none when they also
        run a command, as a branch that launches with the argument does: that one stays undecided."""
        if any(n.is_named and n.type not in ("variable_assignment", "declaration_command", "comment") for n in nodes):
            return frozenset()
        found: set[tuple[str, str]] = set()
        for name, value in _assignments(nodes):
            if value is None:  # `V=`
                continue
            text = unit.text(value.start_byte, value.end_byte).strip('"')
            whole = re.fullmatch(r"\$(?:([1-9])|\{([1-9][0-9]*)\})", text)
            if whole:
                found.add((unit.text(name.start_byte, name.end_byte), whole.group(1) or whole.group(2)))
        return frozenset(found)

    @staticmethod
    def _assigned(nodes, unit: Unit) -> frozenset[str]:
        """The variables a branch body assigns (NAME=..., export/declare NAME=...), nested functions aside."""
        return frozenset(unit.text(n.start_byte, n.end_byte).split("[", 1)[0] for n, _ in _assignments(nodes))

    def _unset_guarded(self, pieces) -> bool:
        """Whether the tested text is only variables a guard assigns that the script has not set, or that
        hold only a positional parameter not given."""
        unknowns = [p for p in pieces if not p.known]
        return (
            bool(unknowns)
            and all(p.text == "" for p in pieces if p.known)
            and all(
                (
                    p.name in self.guarded
                    and p.name not in self.vars
                    and (p.reason or "").startswith(f"${p.name} is not set")
                )
                or self._argument_holder(p) is not None
                or self._guarded_argument(p)
                for p in unknowns
            )
        )

    def _argument_holder(self, piece: Piece) -> str | None:
        """The guarded variable whose whole value is `piece`, a positional parameter not given (`X=$2`):
        bash run with no arguments reads it empty, so `X=$2; [ -z "$X" ] && X=3` is `X=${2:-3}`."""
        name = piece.name
        if (
            self.positional is not None
            or name is None
            or not name.isdigit()
            or name == "0"
            or piece.reason != parameter_not_given(name)
        ):
            return None
        return next((g for g in sorted(self.guarded) if g in self.vars and tuple(self.vars[g].value) == (piece,)), None)

    def _guarded_argument(self, piece: Piece) -> bool:
        """Whether `piece` is a positional parameter not given that the statement under test assigns a
        variable from (Control.guarding)."""
        name = piece.name
        return (
            self.positional is None
            and name is not None
            and any(parameter == name for _, parameter in self.guarded_arguments)
            and piece.reason == parameter_not_given(name)
        )

    def _mark_argument_default(self, parameter: str) -> None:
        """The variables the statement under test assigns `parameter` keep their value, as the default that
        argument overrides (as `${6:-16}` marks its 16)."""
        for name, assigned_from in self.guarded_arguments:
            var = self.vars.get(name)
            if assigned_from != parameter or var is None or var.items is not None:
                continue
            self.vars[name] = Var(name, _default_of(var.value, parameter), None, var.exported, var.span)

    def argument_default(self, name: str, old: Var | None, value: tuple) -> tuple:
        """The value a guard assigns to a variable that held only a positional parameter not given:
        that parameter's default, as `${2:-3}` gives it (an argument overrides it)."""
        piece = self.argument_defaults.pop(name, None)
        if piece is None or old is None or tuple(old.value) != (piece,):
            return value
        return _default_of(value, piece.name)

    def emptiness(self, op: str, pieces) -> int | None:
        """`-z`/`-n` of a value whose text is unknown but whose emptiness may be known."""
        pieces = list(pieces)
        guarded = self._unset_guarded(pieces)
        for p in pieces if guarded else ():
            holder = self._argument_holder(p)
            if holder is not None:
                self.argument_defaults[holder] = p
            elif self._guarded_argument(p):
                self._mark_argument_default(p.name)
        empty = True if guarded else is_empty(pieces)
        return None if empty is None else int(empty != (op == "-z"))

    def empty_comparison(self, op: str, left, left_text: str | None, right, right_text: str | None) -> int | None:
        """`[ "$X" == "" ]`, `[ "$X" = "" ]`, `[ "$X" != "" ]`: a comparison with the empty string is
        `-z`/`-n` of the other side, whose emptiness may be known when its text is not."""
        if op not in ("=", "==", "!="):
            return None
        if left_text is None and right_text == "":
            return self.emptiness("-n" if op == "!=" else "-z", left)
        if right_text is None and left_text == "":
            return self.emptiness("-n" if op == "!=" else "-z", right)
        return None


def _assignments(nodes):
    """(name node, value node) of each `NAME=value` among `nodes` and inside them, nested functions aside; at most
    400 nodes are looked at: a default's branch is short, and a huge one is no default's guard."""
    stack = list(nodes)
    seen = 0
    while stack and seen < 400:
        n = stack.pop()
        seen += 1
        if n.type == "function_definition":
            continue
        if n.type == "variable_assignment":
            name, value = n.child_by_field_name("name"), n.child_by_field_name("value")
            if name is not None:
                yield name, value
        stack.extend(n.named_children)


def _default_of(value, parameter: str | None) -> tuple:
    """A value's known pieces marked as the default positional parameter `parameter` overrides (as `${2:-3}`)."""
    return tuple(
        Piece(p.text, p.span, p.origin, p.exact, p.reason, p.name, p.alternatives, p.source, parameter)
        if p.known
        else p
        for p in value
    )
