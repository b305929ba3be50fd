"""The script's own arguments: why a value that depends on them is unknown, and `getopts`.

plint reads a script as run with no arguments unless `--env 1=VALUE ...` gives some. A branch on `$1`
stays undecided (the author may mean it to be chosen), but a loop that walks the arguments
(`while [[ $# -gt 0 ]]; do case $1 in ...`, `for arg in "$@"`, `while getopts ...`) runs no time at all
with none given, so the values set before it stand.
"""

from __future__ import annotations

from plint.record import record
from plint.source import Piece, Span, Word, unknown

NOT_GIVEN = "the script's positional parameters are not given"
COUNT_NOT_GIVEN = "the number of positional parameters is not given"
ARGUMENT_NAMES = {"@", "*", "#"}


def parameter_not_given(name: str) -> str:
    return f"positional parameter ${name} is not given"


def moved_by_spread(words: list[Word], what: str) -> str | None:
    """Why a count or a position among `words` is unknown: an unquoted unknown argument (`bash x.sh 4 $NUM_GPUS 8`)
    is as many words as its value holds, so the words after it move with it; None when there is none."""
    spread = next((w for w in words if w.spread), None)
    if spread is None:
        return None
    return f"{what} {spread.display()}, an unquoted value bash makes no argument when empty and several when it holds blanks"


def positional_pieces(positional: list[Word] | None, index: int, span: Span | None) -> list[Piece] | None:
    """$INDEX: None when the arguments are not given, nothing past the last, unknown after one that may spread."""
    if positional is None:
        return None
    moved = moved_by_spread(positional[: index - 1], f"${index} comes after")  # `x.sh 4 $N 8`: is $3 8?
    if moved is not None:
        return [unknown(moved, str(index), span)]
    return list(positional[index - 1].pieces) if index <= len(positional) else []


def is_argument_name(name: str | None) -> bool:
    return name is not None and (name in ARGUMENT_NAMES or (name.isdigit() and name != "0"))


def only_about_arguments(reasons: list[str]) -> bool:
    """Whether every reason a condition is unknown is an argument plint was not given."""
    return bool(reasons) and all(
        r in (NOT_GIVEN, COUNT_NOT_GIVEN) or (r.startswith("positional parameter $") and r.endswith(" is not given"))
        for r in reasons
    )


@record
class GetoptsStep:
    """One call of `getopts OPTSTRING NAME`: its status, what NAME and OPTARG become, and the new
    position (OPTIND, and the offset inside a word of grouped flags such as `-ab`)."""

    status: int | None
    name: str | None = None
    optarg: str | None = None
    optind: int = 1
    offset: int = 0
    unknown_optarg: bool = False  # the value is the next word, whose text plint does not know (`-H $H`)


def getopts_step(optstring: str, args: list[str | None], optind: int, offset: int) -> GetoptsStep:
    """bash's getopts over known words (bash builtins/getopts.def): options end at the first word that
    does not start with `-`, at `--`, or at the end; an option letter followed by `:` takes a value,
    the rest of its word or the next word. Unknown words make the step unknown."""
    silent = optstring.startswith(":")
    spec = optstring[1:] if silent else optstring
    index = optind - 1
    if index >= len(args):
        return GetoptsStep(1, "?", None, optind, 0)
    word = args[index]
    if word is None:
        return GetoptsStep(None, None, None, optind, offset)
    if offset == 0:
        if word == "--":
            return GetoptsStep(1, "?", None, optind + 1, 0)
        if not word.startswith("-") or word == "-":
            return GetoptsStep(1, "?", None, optind, 0)
        offset = 1
    letter = word[offset]
    at = spec.find(letter) if letter != ":" else -1
    rest = word[offset + 1 :]
    if at < 0:
        return _advance(GetoptsStep(0, "?", letter if silent else None), optind, offset, rest)
    if at + 1 < len(spec) and spec[at + 1] == ":":
        if rest:
            return GetoptsStep(0, letter, rest, optind + 1, 0)
        if index + 1 >= len(args):
            return GetoptsStep(0, ":" if silent else "?", letter if silent else None, optind + 1, 0)
        value = args[index + 1]
        if value is None:  # whatever it holds, the next word is the value
            return GetoptsStep(0, letter, None, optind + 2, 0, unknown_optarg=True)
        return GetoptsStep(0, letter, value, optind + 2, 0)
    return _advance(GetoptsStep(0, letter), optind, offset, rest)


def _advance(step: GetoptsStep, optind: int, offset: int, rest: str) -> GetoptsStep:
    step.optind, step.offset = (optind, offset + 1) if rest else (optind + 1, 0)
    return step
