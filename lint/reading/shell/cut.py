"""`cut -d DELIM -f LIST` over text plint knows: `$(echo $SLURM_TASKS_PER_NODE | cut -d '(' -f 1)` takes the
tasks of the first node from Slurm's `8(x16)`. Only fields of a known text are cut (POSIX cut: each line is split
at every delimiter; a line without one is written whole unless -s); bytes and characters (-b, -c) and an unknown
text are left to run time."""

from __future__ import annotations

from plint.reading.shell.model import MappedText, Piece, Word

# the origin a cut keeps: the least certain of its input's
_ORIGINS = ("assumed", "env", "derived")


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
    origins = {p.origin for p in stdin.pieces}
    origin = next((o for o in _ORIGINS if o in origins), "literal")
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
    """`1`, `1,3`, `2-4`, `-2`, `3-`: the 1-based fields; an open range `N-` as -N. None if malformed."""
    out: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.partition("-")
        if not dash:
            if not low.isdigit() or int(low) < 1:
                return None
            out.add(int(low))
        elif not high:
            if not low.isdigit() or int(low) < 1:
                return None
            out.add(-int(low))
        else:
            first = int(low) if low.isdigit() else 1 if not low else None
            if first is None or not high.isdigit() or int(high) < first or int(high) > 10_000:
                return None
            out.update(range(first, int(high) + 1))
    return frozenset(out)
