"""`cut -d DELIM -f LIST` over text plint knows: `$(echo $SLURM_TASKS_PER_NODE | cut -d '(' -f 1)` takes the
tasks of the first node from Slurm's `8(x16)`. Only fields of a known text are cut (POSIX cut: each line is split
at every delimiter; a line without one is written whole unless -s); bytes and characters (-b, -c) and an unknown
text are left to run time."""

from __future__ import annotations

from plint.bounds import NumberTooLong, parse_int
from plint.reading.shell.model import MappedText, Piece, Word

# the largest field a range of LIST may reach: a range is expanded field by field
_MAX_FIELD = 10_000


def run_cut(args: list[Word], stdin: MappedText | None) -> MappedText | None:
    """What `cut ARGS` writes for `stdin`, or None where plint cannot tell."""
    if stdin is None or any(not p.known for p in stdin.pieces):
        return None
    options = _options([w.text for w in args])
    if options is None:
        return None
    delimiter, fields, only_delimited = options
    text = "".join(p.text or "" for p in stdin.pieces)
    lines = text.split("\n")
    ended = text.endswith("\n")
    out = []
    for line in lines[:-1] if ended else lines:
        if delimiter not in line:
            if not only_delimited:
                out.append(line)
            continue
        parts = line.split(delimiter)
        out.append(delimiter.join(parts[i] for i in range(len(parts)) if i + 1 in fields or _open_end(fields, i)))
    origin = Word(tuple(stdin.pieces)).origin  # the least certain of its input's
    return MappedText([Piece("\n".join(out) + ("\n" if out else ""), None, origin)])


def _open_end(fields: frozenset[int], index: int) -> bool:
    """`-f 2-`: every field from the start of an open range on (kept as its negated start)."""
    return any(f < 0 and index + 1 >= -f for f in fields)


def _options(texts: list[str | None]) -> tuple[str, frozenset[int], bool] | None:
    """(delimiter, fields, -s) of `cut -d X -f LIST [-s]`; None for any other use."""
    delimiter, fields, only_delimited = "\t", None, False
    i = 0
    while i < len(texts):
        t = texts[i]
        if t is None:
            return None
        if t in ("-d", "-f") and i + 1 < len(texts):
            value = texts[i + 1]
            i += 2
        elif t.startswith(("-d", "-f")) and len(t) > 2:
            value = t[2:]
            i += 1
        elif t.startswith(("--delimiter=", "--fields=")):
            value = t.split("=", 1)[1]
            t = "-d" if t.startswith("--delimiter") else "-f"
            i += 1
        elif t in ("-s", "--only-delimited"):
            only_delimited = True
            i += 1
            continue
        else:
            return None  # -b, -c, --complement, a file operand: not cut here
        if value is None:
            return None
        if t.startswith("-d"):
            if len(value) != 1:
                return None
            delimiter = value
        else:
            fields = _field_list(value)
            if fields is None:
                return None
    return (delimiter, fields, only_delimited) if fields else None


def _field_list(text: str) -> frozenset[int] | None:
    """`1`, `1,3`, `2-4`, `-2`, `3-`: the 1-based fields; an open range `N-` as -N. None if malformed or past
    _MAX_FIELD."""
    out: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.partition("-")
        first = _field(low) if low or not dash else 1
        last = first if not dash else _field(high) if high else None
        if first is None or (high and (last is None or last < first)) or part == "-":
            return None
        if dash and not high:
            out.add(-first)  # open range
        else:
            out.update(range(first, (last or first) + 1))
    return frozenset(out)


def _field(text: str) -> int | None:
    """One field number of LIST, 1 to _MAX_FIELD; None otherwise."""
    if not text.isdigit():
        return None
    try:
        number = parse_int(text)
    except NumberTooLong:
        return None
    return number if 1 <= number <= _MAX_FIELD else None
