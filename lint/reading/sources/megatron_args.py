"""Megatron-LM and Megatron-DeepSpeed command lines: argparse semantics over expanded words, and the
pipeline layout mini-language of --pipeline-model-parallel-layout. plint.reading.sources.megatron reads
the layout facts they set.

Parsing follows argparse as the trainers configure it: allow_abbrev=False (a prefix is an unknown
option), `--x v` and `--x=v`, nargs (None, N, ?, *, +), a word that looks like a negative number is a
value, a word with a space is never an option, `--` ends the options.
"""

from __future__ import annotations

import re

from plint.catalog.flags import FlagCatalog, FlagSpec
from plint.record import field, record
from plint.reading.shell.model import Word
from plint.reading.shell.placeholders import is_slot
from plint.values import parse_int

# argparse's negative-number test on Python 3.11-3.13 (Lib/argparse.py `_negative_number_matcher`):
# "-1", "-0.5", "-.5" are values; "-1e-5" is not, so `--x -1e-5` fails with "expected one
# argument" before Python 3.14. No trainer defines an option that looks like a negative number.
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")
_WEIGHT = re.compile(r"^\d*\.?\d+(e-?\d+)?$")
# the weight-and-prefix lists of Megatron's data options (megatron/training/arguments.py, --data-path: "a list of
# weight prefix pairs e.g. weight1 prefix1 weight2 prefix2"; --train/valid/test-data-path "follow the same pattern")
_BLEND_DESTS = frozenset(("data_path", "train_data_path", "valid_data_path", "test_data_path"))


@record
class FlagUse:
    """One occurrence of an option on the command line."""

    option: str  # as written (before any `=`); for an abbreviation, not the full name
    flag_word: Word  # the option's own characters (`--x` of `--x=v`)
    values: list[Word]
    spec: FlagSpec | None  # None: the release's parser has no such option
    inline_value: bool = False  # written `--x=v`

    @property
    def value(self) -> Word | None:
        return self.values[0] if self.values else None


@record
class TrainerArgs:
    uses: list[FlagUse] = field(default_factory=list)  # in order, unknown options included
    positionals: list[Word] = field(default_factory=list)  # the trainers take none: argparse rejects them
    opaque: list[Word] = field(default_factory=list)  # words of unknown text: cannot tell flag from value
    opaque_at: list[int] = field(default_factory=list)  # for each opaque word, how many uses precede it

    def opaque_after(self, use: FlagUse) -> list[Word]:
        """The opaque words after a use: they could give the option again (the last one wins)."""
        index = next(i for i, u in enumerate(self.uses) if u is use)
        return [w for w, at in zip(self.opaque, self.opaque_at) if at > index]

    def all(self, key: str) -> list[FlagUse]:
        """Every use of an option string or of any option with that dest, in order."""
        return [
            u
            for u in self.uses
            if u.option == key or (u.spec is not None and (u.spec.dest == key or key in u.spec.flags))
        ]

    def get(self, key: str) -> FlagUse | None:
        """The use that wins (argparse: the last one on the line)."""
        found = self.all(key)
        return found[-1] if found else None

    def text(self, key: str) -> str | None:
        """The known text of the winning use's (first) value, or None."""
        use = self.get(key)
        return use.value.text if use is not None and use.value is not None else None

    def get_any(self, *keys: str) -> FlagUse | None:
        """The last use among several spellings."""
        found = [
            (i, u)
            for i, u in enumerate(self.uses)
            for k in keys
            if u.option == k or (u.spec is not None and k in (u.spec.dest, *u.spec.flags))
        ]
        return max(found, key=lambda pair: pair[0])[1] if found else None


# ---- parsing --------------------------------------------------------------------------------------


def _is_option(text: str, catalog: FlagCatalog) -> bool:
    """argparse's `_parse_optional`: would this word be read as an option (known or not)?"""
    if not text.startswith("-") or text == "-":
        return False
    if catalog.lookup(text) is not None:
        return True
    if "=" in text and catalog.lookup(text.split("=", 1)[0]) is not None:
        return True
    return not (_NEGATIVE.match(text) or " " in text)


def _value_like(word: Word, catalog: FlagCatalog) -> bool | None:
    """True: a value; False: an option (or `--`); None: unknown text that could be either."""
    text = word.text
    if text is None:
        if word.known_prefix().startswith("--"):
            return False
        # a template slot (`<PATH TO THE FIRST DATASET>`) is one value left to fill in, never options
        return True if all(is_slot(p) for p in word.unknowns) else None
    return text != "--" and not _is_option(text, catalog)


def _take_values(words: list[Word], j: int, spec: FlagSpec | None, catalog: FlagCatalog) -> list[Word]:
    """The words an option consumes from words[j:] (argparse's consume_optional, per nargs)."""
    nargs = spec.nargs if spec is not None and spec.kind != "unknown" else None
    greedy = nargs in ("*", "+")
    limit = nargs if isinstance(nargs, int) else 1
    values: list[Word] = []
    while j < len(words) and (greedy or len(values) < limit):
        like = _value_like(words[j], catalog)
        # An unknown word is taken when the option still needs a value; after the first value of a
        # `nargs +/*` list it may as well hold further options ($EXTRA_ARGS), so the list ends there, but
        # for the quoted prefix a data blend's weight pairs with (`--train-data-path 1.0 "$PREFIX"`).
        if like is False or (like is None and greedy and values and not _pairs_a_weight(values, spec, words[j])):
            break
        values.append(words[j])
        j += 1
    return values


def _pairs_a_weight(values: list[Word], spec: FlagSpec | None, word: Word) -> bool:
    """Whether `word`, an unset variable inside double quotes (one argument whatever it holds), is the prefix the
    last value of a data blend list, a weight, pairs with: then it is that path, not options (the list reads weight
    prefix weight prefix ...)."""
    if spec is None or spec.dest not in _BLEND_DESTS or len(values) % 2 == 0:
        return False
    weight = values[-1].text
    quoted = bool(word.unknowns) and all(p.quoted for p in word.unknowns)
    return quoted and weight is not None and bool(_WEIGHT.match(weight))


def parse_trainer_args(words: list[Word], catalog: FlagCatalog, unknown_switches: bool = False) -> TrainerArgs:
    """`unknown_switches`: the parser is extended with options of the framework's own, many of them switches (slime's
    `--colocate ${MODEL_ARGS[@]}`), so an option the catalog does not know takes no wholly unknown word as its value."""
    args = TrainerArgs()
    i = 0
    while i < len(words):
        w = words[i]
        text = w.text
        if text == "--":  # argparse: everything after `--` is positional
            args.positionals.extend(words[i + 1 :])
            break
        if text is None:
            prefix = w.known_prefix()
            name = prefix.split("=", 1)[0]
            if prefix.startswith("--") and "=" in prefix:  # `--x=$V`: the option is known, its value not
                args.uses.append(
                    FlagUse(name, w.slice(0, len(name)), [w.after(len(name) + 1)], catalog.lookup(name), True)
                )
            else:
                args.opaque.append(w)
                args.opaque_at.append(len(args.uses))
            i += 1
            continue
        if not _is_option(text, catalog):
            args.positionals.append(w)
            i += 1
            continue
        spec = catalog.lookup(text)
        if spec is None and "=" in text:
            name = text.split("=", 1)[0]
            args.uses.append(FlagUse(name, w.slice(0, len(name)), [w.slice(len(name) + 1)], catalog.lookup(name), True))
            i += 1
            continue
        if spec is not None and spec.takes_value is False:
            args.uses.append(FlagUse(text, w, [], spec))
            i += 1
            continue
        # a known option that takes values, an option whose shape is unknown, or an unknown option
        # (argparse rejects the latter; its following value-like word is read as its value so that
        # neither is mistaken for something else)
        values = _take_values(words, i + 1, spec, catalog)
        if spec is None and unknown_switches and values and _value_like(values[0], catalog) is None:
            values = []  # a wholly unknown word after it stays a word that may hold any flag
        args.uses.append(FlagUse(text, w, values, spec))
        i += 1 + len(values)
    return args


# ---- the pipeline layout mini-language (--pipeline-model-parallel-layout) --------------------------
# megatron/core/transformer/pipeline_parallel_layer_layout.py (parse_str_to_list): commas are dropped,
# then `(group)*n` is unrolled (one pass, groups do not nest), then `x*n` for single symbols; `|`
# separates stages (empty stages allowed); symbols E (embedding), t (decoder layer), m (MTP), L (loss).
_LAYOUT_SYMBOLS = frozenset("EtmL")
_GROUP_REPEAT = r"\(([^)]+)\)\*(\d+)"  # compiled on use (re caches them): few launches give a layout
_SYMBOL_REPEAT = r"(.)\*(\d+)"
_MAX_LAYOUT = 1_000_000  # characters after unrolling: more is certainly a typo


def _unroll(pattern: str, text: str) -> str:
    def repeat(m: re.Match) -> str:
        count = parse_int(m.group(2))  # NumberTooLong is a ValueError: the layout is then invalid
        if count * len(m.group(1)) > _MAX_LAYOUT:
            raise ValueError("layout too long")
        return m.group(1) * count

    return re.sub(pattern, repeat, text)


def layout_stages(layout: str) -> tuple[list[str] | None, str | None]:
    """(stages, None) for a layout string, or (None, why it is invalid)."""
    try:
        flat = _unroll(_SYMBOL_REPEAT, _unroll(_GROUP_REPEAT, layout.replace(",", "")))
    except ValueError:
        return None, "the layout unrolls to more than a million symbols"
    bad = sorted(set(flat) - _LAYOUT_SYMBOLS - {"|"})
    if bad:
        return None, f"invalid layout character {bad[0]!r} (E, t, m, L, | and *n only)"
    return flat.split("|"), None
