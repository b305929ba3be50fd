"""Launches a branch chooses: each way through an undecided if/case is a launch candidate.

    if [ "$1" = pretrain ]; then full_cmd="torchrun ... pretrain_gpt.py ..."
    elif [ "$1" = finetune ]; then full_cmd="torchrun ... finetune.py ..."
    else full_cmd="..."; fi
    eval "$full_cmd"

Merging the arms (what the evaluator does with an undecided branch) leaves `$full_cmd` unknown, and the
eval runs nothing plint can read. When such a merge hides a command (an `eval` of it, or a command named
by it), the script is read again once per arm with that branch forced (EvalOptions.choices), so every
reachable launch is read whole. The first candidate is what bash does with no arguments (for a branch on
the script's arguments), else the else / `*` arm; the other arms follow in the order written.
"""

from __future__ import annotations

import re
from itertools import product

from plint.record import record
from plint.reading.shell.arguments import is_argument_name

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.reading.shell.model import Command, ShellResult, Word
    from plint.source import Span

_PROGRAM = re.compile(r"(?:^|\s)\S+\.py(?:\s|$)|(?:^|\s)-m\s+\S")  # a script, or `python -m module`
MAX_READINGS = 12  # readings of one script in all (a product of several choices is cut there)


@record(frozen=True)
class Choice:
    key: tuple  # where the if/case statement is written: the same in every reading of the script
    label: str
    count: int  # how many ways through (the last of an if is "every condition false")
    fallback: int  # the else / `*` / no-match alternative
    on_arguments: bool  # undecided only because the script's arguments are not given

    @classmethod
    def of(cls, span: Span | None, label: str, count: int, fallback: int, on_arguments: bool) -> "Choice":
        key = (span.path, span.start, span.end) if span is not None else (label,)
        return cls(key, label, count, fallback, on_arguments)

    def order(self) -> list[int]:
        """The alternatives, the fallback first."""
        return [self.fallback] + [i for i in range(self.count) if i != self.fallback]


def _names_a_program(piece) -> bool:
    """A merged value whose alternatives name the program that runs (`pretrain_gpt.py ...` in one arm,
    `finetune.py ...` in another): the arms launch different things, not one thing with other values."""
    return any(_PROGRAM.search(text) for text in (piece.alternatives or ()))


def hidden_choices(result: ShellResult) -> list[Choice]:
    """The undecided branches whose merge hides which command runs: a command whose name is a merged
    value (`$LAUNCHER ...`, or the first word of `eval "$full_cmd"` parsed again), or whose merged tail
    names the program (`$LAUNCHER pretrain_gpt.py ...` in every arm keeps the launcher and leaves the
    rest to the arms). A merged value among the arguments of a known program hides values only, which
    stay unresolved in one reading."""
    found: dict[tuple, Choice] = {}
    for command in result.commands:
        for position, word in enumerate(command.words):
            for piece in word.pieces:
                hit = result.merged_from.get(id(piece)) if not piece.known else None
                if hit is None or hit[0] is not piece or hit[1] not in result.choices:
                    continue
                if position == 0 or _names_a_program(piece):
                    found.setdefault(hit[1], result.choices[hit[1]])
    return list(found.values())


def forced_readings(choices: list[Choice]) -> list[dict[tuple, int]]:
    """The `EvalOptions.choices` of each reading: every combination of the hidden choices' alternatives,
    fallbacks first, at most MAX_READINGS."""
    orders = [[(c.key, i) for i in c.order()] for c in choices]
    out: list[dict[tuple, int]] = []
    for combination in product(*orders):
        out.append(dict(combination))
        if len(out) >= MAX_READINGS:
            break
    return out


def same_launch(a: Command, b: Command) -> bool:
    """Whether two readings read the same launch: the command written at the same place, and each word
    written at the same place, where both readings know it. A word one reading cannot know (the
    script's arguments, another branch it left undecided) matches anything; an argument word that is
    gone in the other reading (`$1` expands to nothing when no arguments are given) is left out."""
    if _where(a.site) != _where(b.site):
        return False
    words_a, words_b = _comparable(a.words), _comparable(b.words)
    if len(words_a) != len(words_b):
        return False
    return all(
        not x.known or not y.known or _where(x.value_span) == _where(y.value_span) for x, y in zip(words_a, words_b)
    )


def written_at(command: Command):
    """Where a command is written, the same in every reading of the script."""
    return _where(command.site)


_BRANCH = re.compile(r"^(.*? \(line \d+\))")  # Control.describe: "<branch text> (line N)<what>"


def sibling_arms(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two commands' conditions put them in different arms of one undecided branch (the same
    enclosing branches, then another arm of the innermost): one run of the script takes one of them."""
    if not a or len(a) != len(b) or a[:-1] != b[:-1] or a[-1] == b[-1]:
        return False
    first, second = _BRANCH.match(a[-1]), _BRANCH.match(b[-1])
    return first is not None and second is not None and first.group(1) == second.group(1)


def chosen_elsewhere(command: Command, forced: list[Command], merged_from: dict) -> bool:
    """Whether a launch of the undecided reading is one a forced reading read arm by arm: written at the
    same place, with a word that is a value the branch left undecided (`$L pretrain_gpt.py` after
    `case ... L="deepspeed ..." ;; L="torchrun ..."`: an unquoted value splits into words, so the
    readings' words cannot be paired one by one)."""
    if not any(_where(f.site) == _where(command.site) for f in forced):
        return False
    return any(id(p) in merged_from for w in command.words for p in w.pieces if not p.known)


def _comparable(words: list[Word]) -> list[Word]:
    return [w for w in words if not all(not p.known and is_argument_name(p.name) for p in w.pieces)]


def _where(span: Span | None) -> tuple | None:
    return (span.path, span.start, span.end) if span is not None else None
