"""Keyed arrays and namerefs, as bash(1) defines them ("Arrays", and `declare -n` under "PARAMETERS").

An associative array (`declare -A A=([k]=v)`, `A[k]=v`) maps strings to values. An indexed array given
subscripts (`A=([2]=x [0]=y)`, `A[5]=z` past its end) may have gaps, and `${A[@]}` lists its set elements in
index order. A nameref (`declare -n R=NAME`) reads and writes the variable NAME.

bash lists an associative array's elements (`${A[@]}`, `${!A[@]}`) in the order of its hash table, not as
written, and plint lists them in that order (listing_order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from plint.reading.shell.model import Piece, Var

MAX_REF_CHAIN = 8  # namerefs followed through at most this many names (bash warns on a circular one)
# bash's hash table (hashlib.c): 32-bit FNV-1 of the key (hash_string), ASSOC_HASH_BUCKETS = 1024 buckets for an
# associative array (assoc.h), a new key put first in its bucket (hash_search with HASH_CREATE)
_FNV_OFFSET, _FNV_PRIME, _BUCKETS = 2166136261, 16777619, 1024

Pieces = tuple[Piece, ...]


def _cut(pieces: Sequence[Piece], at: int) -> tuple[list[Piece], list[Piece]]:
    """The pieces before character `at` and from it (an unknown piece counts as one character)."""
    left: list[Piece] = []
    right: list[Piece] = []
    pos = 0
    for p in pieces:
        n = len(p.text) if p.text is not None else 1
        if pos + n <= at:
            left.append(p)
        elif pos >= at:
            right.append(p)
        else:
            left.append(p.sub(0, at - pos))
            right.append(p.sub(at - pos, n))
        pos += n
    return left, right


def split_subscript(pieces: Sequence[Piece]) -> tuple[Pieces, Pieces] | None:
    """`[KEY]=VALUE` of a compound assignment, expanded: (KEY, VALUE), split at the first `]=` in known text;
    None when the item has no subscript."""
    text = "".join(p.text if p.text is not None else "\0" for p in pieces)
    at = text.find("]=")
    if not text.startswith("[") or at < 1:
        return None
    key, rest = _cut(pieces, at)
    return tuple(_cut(key, 1)[1]), tuple(p for p in _cut(rest, 2)[1] if p.text != "")


def _text(pieces: Sequence[Piece]) -> str | None:
    texts = [p.text for p in pieces]
    return None if None in texts else "".join(texts)  # type: ignore[arg-type]


def literal(
    entries: Sequence[tuple[Pieces | None, Pieces]],
    associative: bool,
    arith: Callable[[str], int | None],
    base: Var | None = None,
) -> tuple[tuple[str, ...] | None, tuple[Pieces, ...]] | str:
    """(keys or None for a gapless indexed array, items) of `NAME=(...)` or `NAME+=(...)` onto `base`; or why it is
    unknown. `entries` are (KEY or None without a subscript, VALUE); `arith` evaluates an indexed subscript."""
    table = _table(base) if base is not None and base.is_array else {}
    next_index = max((k for k in table if isinstance(k, int)), default=-1) + 1
    for key, value in entries:
        if associative:
            if key is None:
                return "an associative array's item without [KEY]= (a key-value list plint does not read)"
            text = _text(key)
            if text is None:
                return "a key of the associative array is unknown"
            table[text] = value
            continue
        if key is None:
            index: int | None = next_index
        else:
            text = _text(key)
            index = arith(text) if text is not None else None
        if index is None or index < 0:
            return "an index of the array is unknown" if index is None else "a negative index in an array's literal"
        table[index] = value
        next_index = index + 1
    return packed(table, associative)


def _keys_of(var: Var) -> list:
    """A keyed or gapless array's subscripts as the table keys them (ints for an indexed array)."""
    if var.keys is None:
        return list(range(len(var.items or ())))
    return list(var.keys) if var.associative else [int(k) for k in var.keys]


def packed(table: dict, associative: bool) -> tuple[tuple[str, ...] | None, tuple[Pieces, ...]]:
    if associative:
        return tuple(table), tuple(table.values())
    order = sorted(table)
    if order == list(range(len(order))):
        return None, tuple(table[i] for i in order)
    return tuple(str(i) for i in order), tuple(table[i] for i in order)


def _table(var: Var | None) -> dict:
    """An array's elements by subscript (ints for an indexed one); a set scalar is element 0."""
    if var is None:
        return {}
    if var.is_array:
        return dict(zip(_keys_of(var), var.items or ()))
    return {0: var.value} if var.value else {}


def with_element(var: Var | None, key: str | int, value: Pieces) -> tuple[tuple[str, ...] | None, tuple[Pieces, ...]]:
    """(keys, items) of `var` after `NAME[KEY]=VALUE` (an int key for an indexed array)."""
    table = _table(var)
    table[key] = value
    return packed(table, var is not None and var.associative)


def without(var: Var, key: str | int) -> tuple[tuple[str, ...] | None, tuple[Pieces, ...]]:
    """(keys, items) of `var` after `unset 'NAME[KEY]'` (an int key for an indexed array)."""
    table = _table(var)
    table.pop(key, None)
    return packed(table, var.associative)


def subscript(var: Var, text: str, arith: Callable[[str], int | None]) -> str | int | None:
    """The subscript bash takes from `text` for `var`: an associative array's string (quotes removed), else the
    arithmetic value; None when that is unknown."""
    return unquoted(text) if var.associative else arith(text)


def unquoted(key: str) -> str:
    """A subscript written quoted (`CFG["70b"]`, `CFG['13b']`): bash removes the quotes."""
    if len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"":
        return key[1:-1]
    return key


def element(var: Var, key: str | int) -> Pieces | None:
    """The element of a keyed array (`key` a string for an associative one); None when it is not set. A negative
    index of an indexed array counts back from one past its highest index, as bash does."""
    if isinstance(key, int) and key < 0 and var.keys:
        key = max(int(k) for k in var.keys) + 1 + key
    wanted = str(key)
    for k, item in zip(var.keys or (), var.items or ()):
        if k == wanted:
            return item
    return None


def _bucket(key: str) -> int:
    h = _FNV_OFFSET
    for byte in key.encode("utf-8", "surrogateescape"):
        h = ((h * _FNV_PRIME) & 0xFFFFFFFF) ^ byte
    return h & (_BUCKETS - 1)


def listing_order(keys: Sequence[str]) -> list[int]:
    """The positions of an associative array's keys (in the order they were first set) in the order bash lists
    them: bucket by bucket, the last set first within one (tests/shell/test_keyed_arrays.py checks it against
    the real bash). A table that has grown past 2,048 keys (hashlib.c's HASH_REHASH_FACTOR) is not modelled."""
    return sorted(range(len(keys)), key=lambda i: (_bucket(keys[i]), -i))


def subscripts(var: Var) -> list[str]:
    """`${!A[@]}`: the set subscripts of an array, as bash lists them."""
    if var.keys is not None:
        keys = list(var.keys)
        return [keys[i] for i in listing_order(keys)] if var.associative else keys
    return [str(i) for i in range(len(var.items or ()))]


def listed_items(var: Var) -> list[Pieces]:
    """`${A[@]}`: the elements of a keyed array, as bash lists them."""
    items = list(var.items or ())
    if not var.associative or var.keys is None:
        return items
    return [items[i] for i in listing_order(list(var.keys))]
