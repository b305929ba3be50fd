"""An argument list plint cannot know in full, and what that means for the flags it does not see.

argparse reads every word of the command line. A word whose text plint cannot know (`$EXTRA_ARGS`
with no value, an `${options}` string appended to on unknown conditions, an unresolved
`"${ARGS[@]}"`, a variable a missing sourced file would set) may stand for any number of flags. A
flag not seen among the known words may hide among those: its value is unresolved, never the
trainer's default (DESIGN.md: a default only where the whole argument list is known).

A flag written next to such words keeps its written value. argparse lets a later occurrence win, so
an unknown part after it could override it; plint says so in the value's note but does not assume
it, since repeating a flag in a separate string is rare and the written value is what the author
meant.

The script's own arguments (`"$@"`) are taken as none: plint reads a script as it runs with no arguments,
as it does for `$1` defaults (`${1:-8}`); `--env 1=...` supplies them.

An unknown word is not always wholly unknown: `OPTS="$OPTS --fp16"` inside an `if` on an unset
variable leaves a tail the shell reader knows to be one of a few texts (" --fp16" or ""). Such a
word can only give the options those texts hold, so only the fields of those options are unknown.
"""

from __future__ import annotations

import re
from itertools import product

from plint.record import record
from plint.reading.shell.model import Word
from plint.values import Value, unresolved

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Callable, Iterable

_NAMED = 3  # unknown words named in a note; more are counted
_MAX_TEXTS = 128  # spellings of one word worth reading (as shell.fields keeps); more and it is wholly unknown
_UNKNOWN_TEXT = re.compile(r"\$\{|<\?>|<unknown>")  # how the shell reader shows unknown text in alternatives
_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _texts(word: Word) -> list[str] | None:
    """Every text the word can have, or None when some part has no known alternatives."""
    choices: list[tuple[str, ...]] = []
    for p in word.pieces:
        if p.text is not None:
            choices.append((p.text,))
        elif p.alternatives:
            choices.append(tuple("" if a == "<unset>" else a for a in p.alternatives))
        else:
            return None
    count = 1
    for c in choices:
        count *= len(c)
    if count > _MAX_TEXTS:
        return None
    return ["".join(t) for t in product(*choices)]


def passes_script_arguments(word: Word) -> bool:
    """`"$@"` / `$*`: the script's own arguments, none when it is run as written (the reading plint makes of a
    script: what it does with no arguments and its own defaults, issue 12)."""
    return bool(word.unknowns) and all(p.name in ("@", "*") for p in word.unknowns) and not word.known_prefix()


def possible_options(word: Word, takes_value: Callable[[str], bool]) -> frozenset[str] | None:
    """The options an unknown word could give (as written, before any `=`), or None for any at all.
    Inside an alternative, unknown text right after an option that takes a value is that value. A word that
    starts with known text other than a dash (`out/${RUN}`), or ends in a path under its unknown part
    (`${DATA_DIR}/c4_en_6_text_document`), is one positional word: it gives no option."""
    prefix = word.known_prefix()
    last = word.pieces[-1] if word.pieces else None
    under_a_folder = last is not None and last.known and (last.text or "").startswith("/") and not prefix
    if passes_script_arguments(word) or (prefix and not prefix.startswith("-")) or under_a_folder:
        return frozenset()
    texts = _texts(word)
    if texts is None:
        return None
    found: set[str] = set()
    for text in texts:
        wants_value = False
        for token in text.split():
            if _UNKNOWN_TEXT.search(token):
                if wants_value and not token.startswith("-"):
                    wants_value = False
                    continue
                return None
            if token.startswith("-") and token != "-" and not _NUMBER.match(token):
                name = token.split("=", 1)[0]
                found.add(name)
                wants_value = "=" not in token and takes_value(name)
            else:
                wants_value = False
    return frozenset(found)


@record(frozen=True)
class UnknownPart:
    """One word of the list whose text plint cannot know, and the options it could give (None: any)."""

    word: Word
    options: frozenset[str] | None

    @property
    def span(self):
        return self.word.site or self.word.value_span

    def note(self) -> str:
        reasons = list(dict.fromkeys(p.reason for p in self.word.unknowns if p.reason))
        where = f" (line {self.span.line})" if self.span is not None and self.span.line else ""
        what = (
            "could hold any flag"
            if self.options is None
            else "may hold " + (", ".join(sorted(self.options)) or "no flag")
        )
        note = f"the trainer's argument list is incomplete: {self.word.display()}{where} {what}"
        return note + (f" ({'; '.join(reasons)})" if reasons else "")


@record(frozen=True)
class ArgumentGap:
    """The unknown words of one argument list, in order."""

    parts: tuple[UnknownPart, ...]

    def could_give(self, matches: Callable[[str], bool]) -> UnknownPart | None:
        """The first unknown part that could give an option `matches` accepts."""
        return next((p for p in self.parts if p.options is None or any(map(matches, p.options))), None)

    @property
    def wholly_unknown(self) -> list[UnknownPart]:
        return [p for p in self.parts if p.options is None]


def argument_gap(words: Iterable[Word], takes_value: Callable[[str], bool] = lambda _: True) -> ArgumentGap | None:
    parts = tuple(UnknownPart(w, possible_options(w, takes_value)) for w in words)
    return ArgumentGap(parts) if parts else None


def unknown_value(part: UnknownPart) -> Value:
    """The value of a flag that is not among the known words but may be in this part."""
    return unresolved(part.note(), part.span)


def overridable(value: Value, option: str, part: UnknownPart) -> Value:
    """A written value with an unknown part after it that could give it again: kept, with a note."""
    note = (
        f"{option} is written; {part.word.display()} after it could give it again and win (argparse keeps "
        "the last), which plint does not assume"
    )
    return Value(value.value, value.span, value.origin, f"{value.note}; {note}" if value.note else note)


def gap_fact(gap: ArgumentGap | None) -> Value | None:
    """The fact rules and the layout read (`arguments.incomplete`): the first part of the list that could
    hold any flag. None when the list is known in full, or its unknown parts can only hold known options."""
    whole = gap.wholly_unknown if gap is not None else []
    return unknown_value(whole[0]) if whole else None


def option_word(words: list[Word], name: str) -> Word | None:
    """The word after the first `name` among the words (an option's value), or None."""
    for k, word in enumerate(words[:-1]):
        if word.text == name:
            return words[k + 1]
    return None


def options_given(
    words: list[Word], key: Callable[[str], str] = lambda name: name
) -> tuple[dict[str, tuple[Word, Word | None]], list[Word]]:
    """Each `--option` among the words, by `key` of its name (the last one given counts): (its word, its value's word,
    after `=` or the next word unless that is another option); and the words of unknown text that are no option's
    value, in which any option may hide."""
    given: dict[str, tuple[Word, Word | None]] = {}
    unknown: list[Word] = []
    i = 0
    while i < len(words):
        word, text = words[i], words[i].text
        if text is None:
            unknown.append(word)
            i += 1
            continue
        name, eq, _ = text.partition("=")
        if not name.startswith("--"):
            i += 1
            continue
        value = word.after(len(name) + 1) if eq else words[i + 1] if i + 1 < len(words) else None
        if value is not None and not eq and (value.text or "").startswith("--"):
            value = None  # a switch, followed by the next option
        given[key(name)] = (word, value)
        i += 1 if eq or value is None else 2
    return given, unknown
