"""Fields: splitting and joining expanded words, and the alternatives a value may take."""

from __future__ import annotations

import re
from collections.abc import Callable

from plint.reading.shell.arguments import is_argument_name
from plint.reading.shell.model import MappedText, Piece, Span, Var, Word
from plint.reading.shell.state import IFS


# `hostname` alone or with one of these prints the one name of the machine (hostname(1)); -I, -i, -A and -a
# may print several
_ONE_NAME_OPTIONS = frozenset(("-s", "--short", "-f", "--fqdn", "--long"))


def prints_one_name(argv: list[str | None]) -> bool:
    """A command (its words, None where unknown) whose output is one word: `hostname`, never run."""
    return (
        bool(argv)
        and argv[0] is not None
        and argv[0].rsplit("/", 1)[-1] == "hostname"
        and all(a in _ONE_NAME_OPTIONS for a in argv[1:])
    )


# ---- fields: the words of an expansion before splitting ------------------------------------------
# A field is a list of (piece, splittable); an expansion yields a list of fields ("$@" yields many).

Fields = list[list[tuple[Piece, bool]]]

ALL_ELEMENTS = re.compile(r"\$(@|\{@\}|\{[A-Za-z_][A-Za-z0-9_]*\[@\]\})")


def join_fields(a: Fields, b: Fields) -> Fields:
    if not b:
        return a
    a[-1].extend(b[0])
    a.extend(b[1:])
    return a


def blank_edge(piece: Piece, end: int) -> bool:
    """An unknown piece each of whose alternatives is empty or starts (end 0) / ends (end -1) with IFS: whatever
    it holds, the text before (after) it ends (starts) a word there."""
    alts = piece.alternatives
    return bool(alts) and all(a in ("", "<unset>") or a[end] in IFS for a in alts)


def may_split(piece: Piece) -> bool:
    """An unknown piece that word splitting may make any number of words: not known to be one word (a host
    name), nor one of alternatives that each are one word."""
    if piece.known or piece.one_word:
        return False
    alts = piece.alternatives
    return not alts or any(a in ("", "<unset>") or any(ch in IFS for ch in a) for a in alts)


def split_fields(fields: Fields) -> list[list[Piece]]:
    """Word splitting on IFS whitespace, keeping per-character provenance."""
    words: list[list[Piece]] = []
    for f in fields:
        current: list[Piece] = []
        keep = False
        for piece, splittable in f:
            if not splittable or not piece.known:
                if splittable and blank_edge(piece, 0) and current:
                    words.append(current)  # `$OPTS` whose unknown tail is " --fp16" or "": a word of its own
                    current = []
                current.append(piece)
                keep = True
                if splittable and blank_edge(piece, -1):
                    words.append(current)
                    current, keep = [], False
                continue
            text = piece.text or ""
            i = 0
            while i < len(text):
                if text[i] in IFS:
                    if current and (keep or any(p.text for p in current)):
                        words.append(current)
                    current, keep = [], False
                    while i < len(text) and text[i] in IFS:
                        i += 1
                    continue
                j = i
                while j < len(text) and text[j] not in IFS:
                    j += 1
                current.append(piece if i == 0 and j == len(text) else piece.sub(i, j))
                keep = True
                i = j
        if current or keep:
            words.append(current)
    return words


def flatten(fields: Fields, sep: str = " ") -> tuple[Piece, ...]:
    out: list[Piece] = []
    for i, f in enumerate(fields):
        if i:
            out.append(Piece(sep, None, "literal"))
        out.extend(p for p, _ in f)
    return tuple(p for p in out if p.text != "" or not p.known)


def pieces_text(pieces: tuple[Piece, ...] | list[Piece]) -> str | None:
    if any(not p.known for p in pieces):
        return None
    return "".join(p.text for p in pieces)  # type: ignore[misc]


def is_empty(pieces) -> bool | None:
    """Whether expanded text is empty: known from known text, or from an unknown piece that is known
    not to be empty (Piece.nonempty); None when it cannot be told."""
    if any(p.text or p.nonempty for p in pieces):
        return False
    return True if all(p.known for p in pieces) else None


def var_text(var: Var | None) -> str | None:
    if var is None:
        return ""
    if var.is_array:
        if var.keys is not None:  # `$A` is `${A[0]}`
            first = next((item for key, item in zip(var.keys, var.items or ()) if key == "0"), ())
            return pieces_text(first)
        return pieces_text([p for item in var.items[:1] for p in item])  # type: ignore[index]
    return pieces_text(var.value)


def same_var(a: Var | None, b: Var | None) -> bool:
    """Whether two branches left a variable alike (same pieces, unknown ones included)."""
    if a is b:
        return True
    if a is None or b is None:
        return False
    if a.is_array != b.is_array or (a.keys, a.associative, a.nameref) != (b.keys, b.associative, b.nameref):
        return False
    if a.value == b.value and a.items == b.items:
        return True
    if a.is_array:
        items_a, items_b = [pieces_text(i) for i in a.items or ()], [pieces_text(i) for i in b.items or ()]
        return items_a == items_b and None not in items_a
    text_a = pieces_text(a.value)
    return text_a is not None and text_a == pieces_text(b.value)


# spellings a value keeps: options appended under seven independent unknown conditions (2**7, the zero-bubble
# fork's examples have six); past it a value is wholly unknown
_MAX_ALTERNATIVES = 128


def common_head(values: list[Var | None]) -> tuple[Piece, ...]:
    """The pieces every branch's (scalar, set) value starts with, ending in known text: an unknown piece every
    branch holds as it was before the branches stays in it when known text follows (`--pipeline-model-parallel-
    size $PP --hidden-size 4096` with PP known only at run time keeps the flags after it); one at the end (an
    earlier merge's tail) goes to the tail, whose alternatives then compose over both merges."""
    if any(v is None or v.is_array for v in values):
        return ()
    head: list[Piece] = []
    for pieces in zip(*(v.value for v in values)):  # type: ignore[union-attr]
        if any(p != pieces[0] for p in pieces[1:]):
            break
        head.append(pieces[0])
    while head and not head[-1].known:
        head.pop()
    return tuple(head)


def merged_array(
    values: list[Var | None], unknown_item: Callable[[list[str]], Piece], exported: bool, span: Span | None
) -> Var | None:
    """The array the branches of an undecided if/case left, or None unless each left an array of one kind or
    nothing (an unset array lists no elements). An item every branch agrees on is kept. When every branch left
    as many items under the same subscripts, each position they disagree on is one unknown item
    (`unknown_item(alternatives)`); else the items they all start with are kept and one unknown item stands for
    the rest: how many elements there are is then unknown (Var.uncounted_from)."""
    if not any(v is not None and v.is_array for v in values) or any(v is not None and v.nameref for v in values):
        return None
    values = _one_kind(values)
    arrays = [v for v in values if v is not None]
    if len({v.associative for v in arrays}) != 1:
        return None
    name, associative = arrays[0].name, arrays[0].associative
    if arrays[0].keys is not None:
        keys, items, uncounted = _merged_keyed(values, associative, unknown_item)
        return Var(name, (), items, exported, span, keys, associative, False, uncounted)
    items = [tuple(v.items or ()) if v is not None else () for v in values]
    if len({len(it) for it in items}) == 1 and all(v is not None and v.uncounted_from is None for v in values):
        agreed = tuple(_agreed(position, unknown_item) for position in zip(*items))
        return Var(name, (), agreed, exported, span)
    # past the first element a branch left uncounted, positions are unknown whatever the items look like
    agreed_up_to = min(
        (v.uncounted_from for v in values if v is not None and v.uncounted_from is not None), default=None
    )
    head: list[tuple[Piece, ...]] = []
    for position in zip(*items):
        if not _alike(position) or len(head) == agreed_up_to:
            break
        head.append(position[0])
    tails = [alternative_texts(joined_items(it[len(head) :])) for it in items]
    tail = unknown_item(list(dict.fromkeys(t for ts in tails for t in ts)))
    return Var(name, (), (*head, (tail,)), exported, span, uncounted_from=len(head))


def _one_kind(values: list[Var | None]) -> list[Var | None]:
    """Branch values as arrays of one kind, as bash reads them: a scalar is element 0, and a dense indexed array
    beside a gapped one is keyed by its indexes (`GPUS=(0 1 2 3)` in one branch, `GPUS=0` in the other)."""
    out: list[Var | None] = [
        v if v is None or v.is_array else Var(v.name, (), (v.value,), v.exported, v.span) for v in values
    ]
    if any(v is not None and v.keys is not None for v in out) and not any(v is not None and v.associative for v in out):
        out = [
            v
            if v is None or v.keys is not None
            else Var(
                v.name,
                (),
                v.items,
                v.exported,
                v.span,
                tuple(str(i) for i in range(len(v.items or ()))),
                False,
                False,
                v.uncounted_from,
            )
            for v in out
        ]
    return out


def uncounted_reason(var: Var) -> str:
    """Why the elements of an array merged_array() left uncounted are unknown: the merge's reason."""
    items = var.items or ()
    at = var.uncounted_from or 0
    piece = next((p for item in items[at:] for p in item if not p.known and p.reason), None)
    return piece.reason if piece is not None and piece.reason else "branches left it with different elements"


def _merged_keyed(values: list[Var | None], associative: bool, unknown_item: Callable[[list[str]], Piece]):
    """merged_array() of associative or gapped arrays, element by subscript: (keys, items, uncounted_from).
    An element set in some branches only is unknown (unset in the others), and so is the count."""
    keys = list(dict.fromkeys(k for v in values if v is not None for k in v.keys or ()))
    if not associative:  # a gapped indexed array lists its elements in index order
        keys.sort(key=int)
    tables = [dict(zip(v.keys or (), v.items or ())) if v is not None else {} for v in values]
    items = tuple(_agreed(tuple(table.get(k, ()) for table in tables), unknown_item) for k in keys)
    counted = all(v is not None and v.uncounted_from is None and len(v.keys or ()) == len(keys) for v in values)
    return tuple(keys), items, None if counted else 0


def _alike(position: tuple[tuple[Piece, ...], ...]) -> bool:
    """Items the branches agree on: the one each held before the branches, or the same known text."""
    if all(it == position[0] for it in position[1:]):
        return True
    text = pieces_text(position[0])
    return text is not None and all(pieces_text(it) == text for it in position[1:])


def _agreed(position: tuple[tuple[Piece, ...], ...], unknown_item: Callable[[list[str]], Piece]):
    if _alike(position):
        return position[0]
    return (unknown_item(list(dict.fromkeys(t for it in position for t in alternative_texts(it)))),)


def joined_items(items) -> tuple[Piece, ...]:
    """Array items as one text, a blank between items."""
    out: list[Piece] = []
    for i, item in enumerate(items):
        if i:
            out.append(Piece(" "))
        out.extend(item)
    return tuple(out)


def alternative_texts(pieces: tuple[Piece, ...]) -> list[str]:
    """Every text a value can have: known pieces as written, an unknown piece as each of its alternatives
    (or as ${NAME} when it has none: a value whose text is unknown, but that stands where it stands)."""
    texts = [""]
    for p in pieces:
        choices = (p.text,) if p.known else p.alternatives or ("${%s}" % p.name if p.name else "<unknown>",)
        texts = [t + c for t in texts for c in choices]  # type: ignore[operator]
        if len(texts) > _MAX_ALTERNATIVES:
            return ["<unknown>"]
    return texts


def expanded_directives(raw: bytes, content: MappedText) -> bytes:
    """A heredoc body as sbatch reads it: `#SBATCH --nodes=$NODES` in an unquoted heredoc reaches Slurm
    expanded, so directive lines take their expanded text (an unknown part shown as ${NAME}). Lines, and so
    line numbers, stay those of the script: where the body's backslash-newlines joined lines (an unquoted
    heredoc removes them), a directive that was one line of the script is still matched to it; where the
    expansion changed the lines otherwise, the body is left as written."""
    shown = "".join(p.text if p.text is not None else "${%s}" % (p.name or "?") for p in content.pieces)
    raw_lines = raw.split(b"\n")
    new_lines = shown.encode("utf-8", "surrogateescape").split(b"\n")
    firsts = list(range(len(raw_lines))) if len(raw_lines) == len(new_lines) else _logical_line_starts(raw_lines)
    if len(firsts) != len(new_lines):
        return raw
    out = list(raw_lines)
    for k, (first, new) in enumerate(zip(firsts, new_lines)):
        single = (firsts[k + 1] if k + 1 < len(firsts) else len(raw_lines)) - first == 1
        if single and new.startswith(_DIRECTIVES):
            out[first] = _in_place(raw_lines[first], new)
    return b"\n".join(out)


_DIRECTIVES = (b"#SBATCH", b"#SLURM")  # src/sbatch/opt.c: a directive begins its line


def _logical_line_starts(lines: list[bytes]) -> list[int]:
    """The first raw line of each line the shell reads: a line ending in an odd number of backslashes
    continues on the next (an unquoted heredoc's backslash-newline is removed)."""
    firsts, continued = [], False
    for i, line in enumerate(lines):
        if not continued:
            firsts.append(i)
        continued = (len(line) - len(line.rstrip(b"\\"))) % 2 == 1
    return firsts


def _in_place(old: bytes, new: bytes) -> bytes:
    """A directive's expanded line where the script wrote it. `<<-` strips the line's leading tabs before sbatch
    reads it: the directive still begins the line, and the tabs become blanks after its magic word, so that
    what follows keeps its columns."""
    tabs = len(old) - len(old.lstrip(b"\t"))
    if not tabs:
        return new
    magic = next(m for m in _DIRECTIVES if new.startswith(m))
    return magic + b" " * tabs + new[len(magic) :]


def unknown_arguments(word: Word) -> bool:
    """A word that is only the script's arguments, which plint was not given (`"$@"`)."""
    return bool(word.pieces) and all(
        p.text is None and p.name is not None and is_argument_name(p.name) and p.name != "#" and not p.name.isdigit()
        for p in word.pieces
    )


# `$_name` as the whole operand of `${VAR:-$_name}`: tree-sitter-bash reads it as a literal word, bash as the variable
_UNDERSCORE_NAME = re.compile(r"\$(_\w*)")


def misparsed_underscore(operand, unit) -> str | None:
    """The variable of an operand that is one word `$_name` (`${CAP:-$_hep_cap}`), which tree-sitter-bash leaves
    unexpanded; None for any other operand."""
    if len(operand) != 1 or operand[0].type != "word":
        return None
    found = _UNDERSCORE_NAME.fullmatch(unit.text(operand[0].start_byte, operand[0].end_byte))
    return found[1] if found and found[1] != "_" else None
