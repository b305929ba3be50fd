"""A small `sed` for the template pattern launch scripts use to fill a DeepSpeed JSON:

    sed "s/CONFIG_BATCH_SIZE/${GBS}/" template.json | sed "s/ZERO_STAGE/$ZERO/" > ds_config.json

Only `s` commands are run (any delimiter, `g` flag, several per script or several -e); a pattern with
regular-expression syntax beyond `.`, `*`, `^` and `$` (and, in sed's default basic syntax, the literal
`${NAME}` of a `${VAR}` template) makes the output unknown rather than wrong.
The replacement keeps the provenance of the variables it came from.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Callable

from plint.reading.shell.model import MARKER, MappedText, Piece, Word, unknown

_SENTINEL = "\x00"


def _chars(word: Word) -> list[tuple[str, Piece, int]]:
    out = []
    for p in word.pieces:
        if not p.known:
            out.append((_SENTINEL, p, 0))
            continue
        for i, ch in enumerate(p.text or ""):
            out.append((ch, p, i))
    return out


def _pieces(chars: list[tuple[str, Piece, int]]) -> list[Piece]:
    out: list[Piece] = []
    i = 0
    while i < len(chars):
        ch, p, k = chars[i]
        if not p.known:
            out.append(p)
            i += 1
            continue
        j = i
        while j + 1 < len(chars) and chars[j + 1][1] is p and chars[j + 1][2] == chars[j][2] + 1:
            j += 1
        out.append(p.sub(k, chars[j][2] + 1))
        i = j + 1
    return out


def _split_commands(chars):
    """s<d>pattern<d>replacement<d>flags, separated by ; or newlines."""
    commands = []
    i = 0
    n = len(chars)
    while i < n:
        while i < n and chars[i][0] in " \t\n;":
            i += 1
        if i >= n:
            break
        if chars[i][0] != "s" or i + 1 >= n:
            return None
        delim = chars[i + 1][0]
        parts, cur, j = [], [], i + 2
        while j < n and len(parts) < 2:
            c = chars[j][0]
            if c == "\\" and j + 1 < n:
                nxt = chars[j + 1]
                cur.append(nxt if nxt[0] == delim else chars[j])
                if nxt[0] != delim:
                    cur.append(nxt)
                j += 2
                continue
            if c == delim:
                parts.append(cur)
                cur = []
                j += 1
                continue
            cur.append(chars[j])
            j += 1
        if len(parts) < 2:
            return None
        flags = ""
        while j < n and chars[j][0] not in ";\n":
            flags += chars[j][0]
            j += 1
        commands.append((parts[0], parts[1], flags.strip()))
        i = j
    return commands


def _regex(pattern: str, extended: bool = False) -> re.Pattern | None:
    """A sed pattern as a Python regex, for the simple ones; None for what plint does not evaluate.
    In a basic regular expression (sed's default) `^` anchors only at the start, `$` only at the end,
    a leading `*` is literal, and `{ } + ? ( ) |` are literal (their escaped forms are GNU operators),
    so `s/${GBS}/64/` replaces the text `${GBS}`."""
    if _SENTINEL in pattern:
        return None
    if not re.search(r"[.*^$\[\]\\+?(){}|]", pattern):
        return re.compile(re.escape(pattern))
    if extended:
        return None if re.search(r"[\[\]\\+?(){}|]", pattern) else re.compile(pattern, re.MULTILINE)
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 < len(pattern) and pattern[i + 1] in "+?" and out:  # GNU BRE: `[0-9]\+`, `x\?`
                out.append(pattern[i + 1])
                i += 2
                continue
            if i + 1 >= len(pattern) or pattern[i + 1] not in ".*^$[]\\/":
                return None  # \( \{ \| \n ...: GNU operators and escapes plint does not evaluate
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "[":
            bracket = _bracket(pattern, i)
            if bracket is None:
                return None
            out.append(bracket[0])
            i = bracket[1]
            continue
        if c == "^" and i == 0:
            out.append("^")
        elif c == "$" and i == len(pattern) - 1:
            out.append("$")
        elif c == "." or (c == "*" and i > 0):
            out.append(c)
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.MULTILINE)  # `^` and `$` at each line's ends, as sed anchors them


# POSIX character classes inside a bracket expression, as Python writes them
_CLASSES = {
    "digit": "0-9",
    "alpha": "a-zA-Z",
    "alnum": "0-9a-zA-Z",
    "upper": "A-Z",
    "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v",
    "xdigit": "0-9a-fA-F",
}


def _bracket(pattern: str, start: int) -> tuple[str, int] | None:
    """The bracket expression at pattern[start] (`[0-9]`, `[^,]`, `[[:digit:]_]`) as a Python character class, and
    where the pattern goes on; None for one plint does not translate (collating symbols, equivalence classes, other
    classes, no closing `]`). Inside it a backslash is an ordinary character, as POSIX has it."""
    i = start + 1
    out: list[str] = ["["]
    if i < len(pattern) and pattern[i] == "^":
        out.append("^")
        i += 1
    first = True
    while i < len(pattern):
        c = pattern[i]
        if c == "]" and not first:
            return "".join(out) + "]", i + 1
        if c == "[" and pattern[i + 1 : i + 2] in (":", ".", "="):
            end = pattern.find(pattern[i + 1] + "]", i + 2)
            name = pattern[i + 2 : end] if end != -1 else None
            if pattern[i + 1] != ":" or name not in _CLASSES:
                return None
            out.append(_CLASSES[name])
            i = end + 2
        else:
            out.append("\\" + c if c in "\\[]^" and not (c == "^" and not first) else c)
            i += 1
        first = False
    return None


def _substitute(content: MappedText, rx: re.Pattern, replacement: list[Piece], global_: bool) -> MappedText:
    text = content.render()
    out: list[Piece] = []
    pos = 0
    layout = []
    offset = 0
    for idx, p in enumerate(content.pieces):
        length = len(p.text) if p.text is not None else len(f"{MARKER}{idx}{MARKER}")
        layout.append((offset, offset + length, p))
        offset += length

    def take(lo: int, hi: int) -> None:
        for s, e, p in layout:
            a, b = max(lo, s), min(hi, e)
            if a >= b:
                continue
            out.append(p.sub(a - s, b - s) if p.known else p)

    line_start = 0
    while line_start < len(text):  # sed edits line by line: `s` (without g) the first match of each line
        end = text.find("\n", line_start)
        end = len(text) if end < 0 else end
        for m in rx.finditer(text, line_start, end):
            take(pos, m.start())
            out.extend(replacement)
            pos = m.end()
            if not global_:
                break
        line_start = end + 1
    take(pos, len(text))
    return MappedText([p for p in out if not p.known or p.text])


def run_sed(
    args: list[Word],
    stdin: MappedText | None,
    read: Callable[[Word], MappedText | None],
    write: Callable[[Word, MappedText], None],
) -> MappedText | None:
    scripts: list[Word] = []
    files: list[Word] = []
    in_place = False
    extended = False
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        if t in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 2
            continue
        if t is not None and t.startswith("--expression="):
            scripts.append(w.slice(len("--expression=")))
        elif t is not None and (
            t == "-i" or t.startswith("-i") and not t.startswith("-i=") or t.startswith("--in-place")
        ):
            in_place = True
        elif t in ("-E", "-r", "-n", "--regexp-extended", "-s", "-u"):
            if t == "-n":
                return None
            extended = extended or t in ("-E", "-r", "--regexp-extended")
        elif t is not None and t.startswith("-") and t != "-":
            pass
        elif not scripts:
            scripts.append(w)
        else:
            files.append(w)
        i += 1
    commands = []
    for s in scripts:
        parsed = _split_commands(_chars(s))
        if parsed is None:
            return None
        commands.extend(parsed)

    def apply(content: MappedText) -> MappedText:
        for pattern, repl, flags in commands:
            rx = _regex("".join(c for c, _, _ in pattern), extended)
            if rx is None:
                return MappedText([unknown("sed with a regular expression plint does not evaluate")])
            repl_pieces = _pieces(repl)
            if any(p.known and "&" in (p.text or "") for p in repl_pieces):
                return MappedText([unknown("sed replacement with & is not evaluated")])
            content = _substitute(content, rx, repl_pieces, "g" in flags)
        return content

    if in_place:
        for f in files:
            content = read(f)
            if content is not None:
                write(f, apply(content))
        return None
    if files:
        contents = [read(f) for f in files]
        if any(c is None for c in contents):
            return MappedText([unknown(f"sed reads {', '.join(f.display() for f in files)}, which plint cannot find")])
        return apply(MappedText([p for c in contents for p in c.pieces]))  # type: ignore[union-attr]
    if stdin is not None:
        return apply(stdin)
    return None
