"""Line tools over text plint knows line by line: `wc -l`, `sort [-u]`, `uniq`, `head -n N`, and awk's
`{print NF}` / `{print $N}`.

Their input may hold unknown words (a node file's host names) as long as each is known to be one word on
its line (Piece.one_word): the count of lines is then known though the text is not. Telling two lines apart
needs more: lines of known text compare as text, and the node file's host words (sources/pbs.py) as hosts,
the same chunk's host equal, two chunks' hosts different (for certain under place=scatter, else assumed:
the output says so and `wc -l` counts it as assumed). Any other unknown word makes `sort -u` and `uniq`
unknown. Options other than those named here make the output unknown (None), never guessed.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from plint.reading.shell.model import MappedText, Piece, Word

MAX_LINES = 100_000  # lines a tool here reads (the node file of a large job has thousands)

Line = tuple[Piece, ...]

# the names of a job's host words: a host of its own (a Slurm node, a PBS chunk under place=scatter), or one the
# scheduler may share with another chunk; then the part ("node 3", "chunk 3")
HOST_NAME_PREFIX = "host of the job's "
SHARED_HOST_NAME_PREFIX = "host (maybe shared) of the job's "
_HOST_NAME = re.compile(r"(chunk|node) (\d+)")


MAX_JOB_HOSTS = 100_000  # the host list plint writes for a job (a --nodes of 10^9 is not built)


def host_word(part: str, index: int, span, reason: str, shared: bool = False) -> Piece:
    """The name of the host of a job's `part` `index` (a PBS "chunk", a Slurm "node"), known when the job runs:
    one non-empty word, the same for every line that names it; `shared`: another index may name the same host."""
    prefix = SHARED_HOST_NAME_PREFIX if shared else HOST_NAME_PREFIX
    return Piece(None, span, "unresolved", reason=reason, name=f"{prefix}{part} {index}", nonempty=True, one_word=True)


def names_own_nodes(args: list[Word]) -> bool | None:
    """For `scontrol show ENTITY [LIST]`'s arguments: None unless ENTITY names hostnames (scontrol takes any
    case-blind prefix of five letters or more: SchedMD/slurm src/scontrol/scontrol.c _show_it,
    strncasecmp(tag, "hostnames", MAX(tag_len, 5))); else whether the list is the job's own (none given, which
    scontrol(1) reads from SLURM_JOB_NODELIST, or that variable or SLURM_NODELIST alone)."""
    entity = args[1].text if len(args) > 1 and args[0].text == "show" else None
    if entity is None or len(entity) < 5 or not "hostnames".startswith(entity.lower()):
        return None
    listed = args[2].pieces if len(args) == 3 else None
    return len(args) == 2 or (
        listed is not None
        and len(listed) == 1
        and not listed[0].known
        and listed[0].name in ("SLURM_JOB_NODELIST", "SLURM_NODELIST")
    )


def job_hosts(count: int, span) -> MappedText | None:
    """A Slurm job's `count` nodes a line each, every one a host of its own; None past MAX_JOB_HOSTS."""
    if count > MAX_JOB_HOSTS:
        return None
    pieces: list[Piece] = []
    for index in range(1, count + 1):
        reason = f"the host name of the job's node {index}, known when the Slurm job runs"
        pieces += [host_word("node", index, span, reason), Piece("\n", span, "derived")]
    return MappedText(pieces)


def chunk_host(piece: Piece) -> tuple[str, bool] | None:
    """A job's host word as (the part it is the host of, "node 3" or "chunk 3"; whether another part may share
    its host); None for any other piece."""
    name = piece.name or ""
    if piece.text is not None:
        return None
    for prefix in (HOST_NAME_PREFIX, SHARED_HOST_NAME_PREFIX):
        if name.startswith(prefix) and _HOST_NAME.fullmatch(name[len(prefix) :]):
            return name[len(prefix) :], prefix == SHARED_HOST_NAME_PREFIX
    return None


def split_lines(text: MappedText) -> tuple[list[Line], bool] | None:
    """The text's lines (each without its newline) and whether the last one ended in a newline; None when an
    unknown piece may hold a newline of its own."""
    lines: list[Line] = []
    current: list[Piece] = []
    for piece in text.pieces:
        if piece.text is None:
            if not piece.one_word:
                return None
            current.append(piece)
            continue
        parts = piece.text.split("\n")
        for i, part in enumerate(parts):
            if part:
                current.append(Piece(part, piece.span, piece.origin))
            if i < len(parts) - 1:
                lines.append(tuple(current))
                current = []
                if len(lines) > MAX_LINES:
                    return None
    ended = not current
    if current:
        lines.append(tuple(current))
    return lines, ended


def _key(line: Line) -> tuple | None:
    """What two lines compare by: their text in order, node-file hosts by chunk; None for any other unknown word."""
    out: list = []
    for p in line:
        host = chunk_host(p)
        if p.text is None and host is None:
            return None
        part = p.text if host is None else ("host", host[0])
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] += part  # text split over pieces compares as written
        else:
            out.append(part)
    return tuple(out)


def _shared(line: Line) -> bool:
    return any(host[1] for host in map(chunk_host, line) if host is not None)


def _hosts(key: tuple) -> bool:
    return any(not isinstance(part, str) for part in key)


def _join(lines: list[Line], assumed: bool) -> MappedText:
    pieces: list[Piece] = []
    for line in lines:
        pieces.extend(line)
        pieces.append(Piece("\n", None, "derived"))
    return MappedText(pieces, assumed=assumed)


def _input(args: list[Word], stdin: MappedText | None, read) -> tuple[MappedText | None, bool]:
    """The text a tool reads: its one file operand, else stdin; (None, False) when unknown."""
    files = [w for w in args if not (w.text or "").startswith("-") or w.text == "-"]
    if len(files) > 1:
        return None, False
    if files and files[0].text != "-":
        return read(files[0]), True
    return stdin, False


class _Read(NamedTuple):
    text: MappedText  # what the tool reads
    lines: list[Line]
    ended: bool  # the last line ended in a newline
    named: bool  # read from a file operand, not stdin


def _read(args: list[Word], stdin: MappedText | None, read) -> _Read | None:
    text, named = _input(args, stdin, read)
    split = split_lines(text) if text is not None else None
    return None if text is None or split is None else _Read(text, split[0], split[1], named)


def _unique(lines: list[Line], adjacent_only: bool) -> tuple[list[Line], bool] | None:
    """Lines with repeats dropped (all of them, or adjacent ones as uniq drops them), and whether two kept
    lines were taken for different only by assumption (two chunks' hosts under free placement)."""
    kept: list[Line] = []
    seen: set = set()
    assumed = False
    previous = None
    for line in lines:
        key = _key(line)
        if key is None:
            return None
        if (key == previous) if adjacent_only else (key in seen):
            continue
        assumed = assumed or (bool(kept) and (_shared(line) or _shared(kept[-1])) and _hosts(key))
        kept.append(line)
        seen.add(key)
        previous = key
    return kept, assumed


def run_wc(args: list[Word], stdin: MappedText | None, read) -> MappedText | None:
    """`wc -l` (or `--lines`): the number of newlines; with a file operand, then its name."""
    flags = [w.text for w in args if (w.text or "").startswith("-") and w.text != "-"]
    if flags not in (["-l"], ["--lines"]):
        return None
    given = _read(args, stdin, read)
    if given is None:
        return None
    text, lines, ended, named = given
    count = len(lines) - (0 if ended or not lines else 1)
    origin = "assumed" if text.assumed else "derived"
    out = [Piece(str(count), None, origin)]
    if named:
        operand = next(w for w in args if not (w.text or "").startswith("-"))
        out += [Piece(" ", None, "derived"), *operand.pieces]
    return MappedText([*out, Piece("\n", None, "derived")])


def run_sort(args: list[Word], stdin: MappedText | None, read) -> MappedText | None:
    """`sort [-u]`: equal lines grouped (the order of unknown hosts is not known, their grouping is); with
    -u one of each. Other options (-n, -r, ...) order the lines otherwise: unknown."""
    flags = {f for w in args if (w.text or "").startswith("-") and w.text != "-" for f in (w.text or "")[1:]}
    if not flags <= {"u"}:
        return None
    given = _read(args, stdin, read)
    if given is None:
        return None
    text, lines = given.text, given.lines
    keys = [_key(line) for line in lines]
    if any(k is None for k in keys):
        return None
    order = {k: i for i, k in reversed(list(enumerate(keys)))}
    lines = [line for _, line in sorted(zip(keys, lines), key=lambda kl: order[kl[0]])]
    if all(p.text is not None for line in lines for p in line):
        lines.sort(key=lambda line: "".join(p.text or "" for p in line))
    if "u" not in flags:
        return _join(lines, text.assumed)
    unique = _unique(lines, adjacent_only=False)
    return _join(unique[0], text.assumed or unique[1]) if unique is not None else None


def run_uniq(args: list[Word], stdin: MappedText | None, read) -> MappedText | None:
    """`uniq`: adjacent repeated lines dropped (the node file writes a chunk's lines together)."""
    if any((w.text or "").startswith("-") and w.text != "-" for w in args):
        return None
    given = _read(args, stdin, read)
    unique = _unique(given.lines, adjacent_only=True) if given is not None else None
    return _join(unique[0], given.text.assumed or unique[1]) if given is not None and unique is not None else None


def run_head(args: list[Word], stdin: MappedText | None, read) -> MappedText | None:
    """`head -n N` / `head -N` / `head --lines=N` (N lines; 10 without an option)."""
    count, rest = 10, list(args)
    first = rest[0].text if rest else None
    if first == "-n" and len(rest) > 1 and re.fullmatch(r"\d{1,6}", rest[1].text or ""):
        count, rest = int(rest[1].text or "0"), rest[2:]
    elif first is not None and (option := re.fullmatch(r"(?:-n|--lines=|-)(\d{1,6})", first)):
        count, rest = int(option.group(1)), rest[1:]
    if any((w.text or "-").startswith("-") and w.text != "-" for w in rest):
        return None
    given = _read(rest, stdin, read)
    if given is None:
        return None
    out = _join(given.lines[:count], given.text.assumed)
    if count >= len(given.lines) and not given.ended and out.pieces:  # the last line is copied as it is
        out.pieces.pop()
    return out


# awk programs read here: print the number of fields, or one field, of every line
_AWK_PRINT = re.compile(r"\{\s*print\s+(?:(NF)|\$(\d{1,3}))\s*;?\s*\}")


def run_awk(args: list[Word], stdin: MappedText | None, read) -> MappedText | None:
    """`awk [-F C] '{print NF}'` and `'{print $N}'` over text plint knows: each line's field count or field N.
    POSIX awk(1): a field separator of one character other than a blank splits at each of them (an empty line has
    no field); the default splits at runs of blanks and tabs, ignoring those at the ends. Any other program,
    separator or option: unknown."""
    texts = [w.text for w in args]
    if None in texts or not texts:
        return None
    words = [t for t in texts if t is not None]
    sep: str | None = None
    if words[0].startswith("-F"):
        sep, words = (words[0][2:], words[1:]) if len(words[0]) > 2 else ((words[1:2] or [""])[0], words[2:])
        if len(sep) != 1 or sep in " \t\\":
            return None
    program = _AWK_PRINT.fullmatch(words[0].strip()) if words else None
    if program is None:
        return None
    given = _read([*args[len(args) - len(words) + 1 :]], stdin, read)
    if given is None or any(not p.known for line in given.lines for p in line):
        return None
    out: list[Line] = []
    for line in given.lines:
        text = "".join(p.text or "" for p in line)
        fields = (text.split(sep) if text else []) if sep is not None else text.split()
        value = str(len(fields)) if program.group(1) else _field(text, fields, int(program.group(2)))
        out.append((Piece(value, None, "assumed" if given.text.assumed else "derived"),))
    return _join(out, given.text.assumed)


def _field(line: str, fields: list[str], n: int) -> str:
    return line if n == 0 else (fields[n - 1] if n <= len(fields) else "")


RUNNERS = {"wc": run_wc, "sort": run_sort, "uniq": run_uniq, "head": run_head, "awk": run_awk}


# grep(1)'s options that only quiet it or name the pattern's kind; a pattern of ordinary characters matches as
# a fixed string whichever kind it is read as (no . [ ] * ^ $ \ of a basic regex, nor + ? ( ) { } | of -E)
_GREP_QUIET = frozenset(("-q", "--quiet", "--silent"))
_GREP_KINDS = frozenset(("-F", "--fixed-strings", "-G", "--basic-regexp", "-E", "--extended-regexp", "-s"))
_REGEX_CHARS = re.compile(r"[.\[\]*^$\\+?(){}|]")


def grep_quiet(args: list[str | None], text: MappedText | None) -> int | None:
    """The status of `grep -q PATTERN` reading `text` (0: a line holds it, 1: none does), for a pattern of
    ordinary characters (or -F) and text plint knows; None for anything else (files, other options, a
    pattern that is a regular expression, unknown words or text)."""
    if text is None or any(a is None for a in args) or any(not p.known for p in text.pieces):
        return None
    words = [a for a in args if a is not None]
    quiet, fixed, pattern = False, False, None
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--" or not word.startswith("-") or word == "-":
            rest = words[i + 1 :] if word == "--" else words[i:]
            if pattern is None and rest:
                pattern, rest = rest[0], rest[1:]
            if rest:
                return None  # files: grep reads them, not its stdin
            break
        if word in ("-e", "--regexp") and i + 1 < len(words) and pattern is None:
            pattern, i = words[i + 1], i + 2
            continue
        if word in _GREP_QUIET:
            quiet = True
        elif word in ("-F", "--fixed-strings"):
            fixed = True
        elif word not in _GREP_KINDS:
            return None
        i += 1
    if not quiet or pattern is None or (not fixed and _REGEX_CHARS.search(pattern)):
        return None
    lines = "".join(p.text or "" for p in text.pieces).split("\n")
    return 0 if any(pattern in line for line in lines) else 1
