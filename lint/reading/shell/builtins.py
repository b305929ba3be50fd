"""Builtins that give variables their values from text: `read`, `printf -v`, `mapfile`/`readarray`.

Each follows the bash manual (bash(1), SHELL BUILTIN COMMANDS): `read` takes one line (up to `-d`'s
delimiter; `-d ''` reads up to a NUL, so a whole heredoc, and then fails because none came), splits it on
IFS whitespace into the names, the last name taking the rest, and without `-r` a backslash-newline
joins lines; `printf -v NAME FORMAT ARGS` assigns what printf would print; `mapfile -t NAME` makes one
array element per line. The text comes from the command's standard input (a heredoc, a here-string)
as pieces, so unknown parts stay unknown and known parts keep their spans.
"""

from __future__ import annotations

import re
import sys

from plint.reading.shell.model import MappedText, Piece, Word, unknown

_IFS_WHITESPACE = " \t\n"
NO_STDIN = "read from standard input, which plint does not know here"


def _options(args: list[Word], with_value: str, switches: str) -> tuple[dict[str, Word | None], list[Word]] | None:
    """getopts-like scan of `-rd ''`, `-a NAME`; None on an option this reader does not know."""
    opts: dict[str, Word | None] = {}
    i = 0
    while i < len(args):
        text = args[i].text
        if text is None or not text.startswith("-") or text == "-":
            break
        if text == "--":
            i += 1
            break
        for k, ch in enumerate(text[1:], 1):
            if ch in switches:
                opts[ch] = None
                continue
            if ch not in with_value:
                return None
            rest = text[k + 1 :]
            if rest:
                opts[ch] = Word.of(rest, args[i].site)
            elif i + 1 < len(args):
                i += 1
                opts[ch] = args[i]
            else:
                return None
            break
        i += 1
    return opts, args[i:]


def _until(pieces: list[Piece], delimiter: str) -> tuple[list[Piece], bool]:
    """The pieces before the first delimiter in known text (a NUL delimiter never appears in shell text),
    and whether it was found."""
    out: list[Piece] = []
    for p in pieces:
        if p.known and delimiter and delimiter in (p.text or ""):
            cut = (p.text or "").index(delimiter)
            if cut:
                out.append(p.sub(0, cut))
            return out, True
        out.append(p)
    return out, False


def _strip(pieces: list[Piece], chars: str = _IFS_WHITESPACE) -> list[Piece]:
    """IFS whitespace off both ends, through known pieces only."""
    out = [p for p in pieces if p.text != ""]
    while out and out[0].known and not (out[0].text or "").strip(chars):
        out.pop(0)
    if out and out[0].known:
        text = out[0].text or ""
        out[0] = out[0].sub(len(text) - len(text.lstrip(chars)), len(text))
    while out and out[-1].known and not (out[-1].text or "").strip(chars):
        out.pop()
    if out and out[-1].known:
        out[-1] = out[-1].sub(0, len((out[-1].text or "").rstrip(chars)))
    return out


def _join_continued(pieces: list[Piece]) -> list[Piece]:
    """Without -r a backslash-newline is removed (and other backslashes escape the next character)."""
    out = []
    for p in pieces:
        if p.known and "\\" in (p.text or ""):
            text = re.sub(r"\\(.)", r"\1", (p.text or "").replace("\\\n", ""), flags=re.S)
            out.append(Piece(text, p.span, p.origin, source=p.source, default_of=p.default_of))
        else:
            out.append(p)
    return out


def _fields(pieces: list[Piece]) -> list[tuple[Piece, ...]]:
    """IFS-whitespace fields of the text; an unknown piece stays in the field it touches."""
    fields: list[list[Piece]] = [[]]
    for p in pieces:
        if not p.known:
            fields[-1].append(p)
            continue
        text = p.text or ""
        start = 0
        for m in re.finditer(r"[ \t\n]+", text):
            if m.start() > start:
                fields[-1].append(p.sub(start, m.start()))
            if fields[-1]:
                fields.append([])
            start = m.end()
        if start < len(text):
            fields[-1].append(p.sub(start, len(text)))
    return [tuple(f) for f in fields if f]


def _split_at(pieces: list[Piece], separators: str, limit: int) -> list[tuple[Piece, ...]]:
    """Fields of the text split at each of `separators` (IFS characters that are not whitespace: every one ends a
    field, two together make an empty one), at most `limit` fields, the last keeping the rest with its separators."""
    fields: list[list[Piece]] = [[]]
    for p in pieces:
        text = p.text if p.known else None
        if text is None:
            fields[-1].append(p)
            continue
        start = 0
        for i, ch in enumerate(text):
            if ch in separators and len(fields) < limit:
                if i > start:
                    fields[-1].append(p.sub(start, i))
                fields.append([])
                start = i + 1
        if start < len(text):
            fields[-1].append(p.sub(start, len(text)))
    return [tuple(f) for f in fields]


def read_values(
    args: list[Word], stdin: MappedText | None, site, ifs: str | None = _IFS_WHITESPACE
) -> tuple[dict[str, tuple], int | None] | None:
    """`read`: {name: pieces} (an array name maps to a tuple of items, marked by the key's "[]" suffix),
    and the exit status; None when the options are not ones this reader knows, or IFS is one it does not split
    by (unknown, or whitespace mixed with other characters). `ifs`: the IFS read sees (`IFS=: read -r a b`)."""
    if ifs is None or (ifs.strip(_IFS_WHITESPACE) and set(ifs) & set(_IFS_WHITESPACE)):
        return None
    scanned = _options(args, "adinNptu", "ers")
    if scanned is None:
        return None
    opts, names = scanned
    if any(k in opts for k in "nNtu"):  # a count, a time-out or another descriptor: run-time facts
        return None
    targets = [w.text for w in names]
    if any(t is None for t in targets):
        return None
    array = opts.get("a")
    if stdin is None:
        missing = (unknown(NO_STDIN, None, site),)
        out: dict[str, tuple] = {(t or "REPLY"): missing for t in targets or ["REPLY"]}
        if array is not None and array.text:
            out[array.text + "[]"] = (missing,)
        return out, None
    delimiter_word = opts.get("d")
    delimiter = (
        "\n" if delimiter_word is None else (delimiter_word.text or "")[:1] if delimiter_word.text is not None else None
    )
    if delimiter is None:
        return None
    line, found = _until(list(stdin.pieces), delimiter)
    if "r" not in opts:
        line = _join_continued(line)
    status = 0 if found else 1
    if not targets and array is None:  # REPLY keeps the line whole, whitespace included
        return {"REPLY": tuple(line)}, status
    if ifs == "":  # `IFS= read -r line`: no splitting, no blanks stripped
        fields = [tuple(line)]
        if array is not None and array.text:
            return {array.text + "[]": tuple(fields)}, status
        return {name or "REPLY": (fields[k] if k < len(fields) else ()) for k, name in enumerate(targets)}, status
    if set(ifs) == set(_IFS_WHITESPACE):
        fields = _fields(line)
    elif set(ifs) & set(_IFS_WHITESPACE):  # blanks that collapse among others that do not: not read
        return None
    else:  # bash(1) read: each IFS character ends a field; the last name takes the rest of the line
        every = _split_at(line, ifs, sys.maxsize)
        if every and not every[-1]:  # a delimiter ends the line: it ends a field, and starts none
            every = every[:-1]
        if array is not None and array.text:
            return {array.text + "[]": tuple(every)}, status
        fields = every if len(every) <= len(targets) else _split_at(line, ifs, len(targets))
        return {name or "REPLY": (fields[k] if k < len(fields) else ()) for k, name in enumerate(targets)}, status
    if array is not None and array.text:
        return {array.text + "[]": tuple(fields)}, status
    out = {}
    for k, name in enumerate(targets):
        if k == len(targets) - 1:
            rest = _strip(line) if k == 0 else [p for f in fields[k:] for p in (*f, Piece(" ", None))][:-1]
            out[name or "REPLY"] = tuple(rest)
        else:
            out[name or "REPLY"] = fields[k] if k < len(fields) else ()
    return out, status


def mapfile_values(args: list[Word], stdin: MappedText | None, site) -> tuple[str, tuple] | None:
    """`mapfile`/`readarray [-t] [-d delim] [NAME]`: the array and its items, one per line."""
    scanned = _options(args, "dnOsuCc", "t")
    if scanned is None:
        return None
    opts, names = scanned
    if any(k in opts for k in "nOsuCc"):
        return None
    name = names[0].text if names else "MAPFILE"
    if name is None:
        return None
    if stdin is None:
        return name, ((unknown(NO_STDIN, None, site),),)
    delimiter = "\n" if opts.get("d") is None else (opts["d"].text or "\0")[:1]  # type: ignore[union-attr]
    items: list[tuple[Piece, ...]] = []
    rest = list(stdin.pieces)
    while rest:
        line, found = _until(rest, delimiter)
        consumed = sum(len(p.text or "") for p in line if p.known)
        items.append(tuple(line) + (() if "t" in opts or not found else (Piece(delimiter, None),)))
        if not found:
            break
        rest = _after(rest, consumed + 1)
    if items and not any(p.text for p in items[-1]) and all(p.known for p in items[-1]):
        items.pop()
    return name, tuple(items)


def _after(pieces: list[Piece], count: int) -> list[Piece]:
    """The pieces after the first `count` known characters (an unknown piece counts for none)."""
    out: list[Piece] = []
    for p in pieces:
        if count <= 0:
            out.append(p)
        elif p.known:
            n = len(p.text or "")
            if count < n:
                out.append(p.sub(count, n))
            count -= n
    return out


_SPEC = re.compile(r"%([-+ 0#]*)(\d*)(?:\.(\d+))?([sdiuxXfgeEc%])")


def printf_value(args: list[Word], site) -> tuple[str, tuple[Piece, ...]] | None:
    """`printf -v NAME FORMAT [ARG...]`: the name and what printf would print into it (None for another
    form of printf, or a format this reader does not follow)."""
    if len(args) < 3 or args[0].text != "-v" or args[1].text is None:
        return None
    name, fmt, values = args[1].text, args[2].text, list(args[3:])
    if fmt is None:
        return name, (unknown(f"the format of printf -v {name} is not known", name, site),)
    pieces: list[Piece] = []
    pos = 0
    for m in _SPEC.finditer(fmt):
        pieces.append(Piece(_escapes(fmt[pos : m.start()]), site, "derived"))
        pos = m.end()
        flags, width, precision, conv = m.groups()
        if conv == "%":
            pieces.append(Piece("%", site, "derived"))
            continue
        arg = values.pop(0) if values else Word.of("", site)
        if conv == "s" and not (flags or width or precision):
            pieces.extend(arg.pieces)
            continue
        if arg.text is None:
            pieces.append(unknown(f"printf -v {name}: {arg.display()} is not known", name, site))
            continue
        try:
            number = float(arg.text or 0) if conv in "fgeE" else int(arg.text or "0", 0) if conv != "s" else arg.text
            spec = f"%{flags}{width}{'.' + precision if precision else ''}{'d' if conv in 'iu' else conv}"
            pieces.append(Piece(spec % number, site, "derived"))
        except (ValueError, TypeError):
            return name, (unknown(f"printf -v {name}: {arg.text!r} is not a number", name, site),)
    pieces.append(Piece(_escapes(fmt[pos:]), site, "derived"))
    if values:  # bash reuses the format for the rest: not followed
        return name, (unknown(f"printf -v {name} reuses its format for more arguments", name, site),)
    return name, tuple(p for p in pieces if p.text != "")


def _escapes(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")
