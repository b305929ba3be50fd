"""Slurm: `#SBATCH` directives, sbatch/salloc/srun options, and the variables a job gives its steps.

Everything here follows Slurm's own code (SchedMD/slurm at 284c3b9):
- options and whether each takes a value: `src/common/slurm_opt.c` (`has_arg`, short letter, and which of
  sbatch/srun/salloc accepts it); the parser is getopt_long with a leading `+`, so options end at the first
  word that is not one, a long option may be abbreviated to a unique prefix, and an optional value binds only
  as `--opt=value` (short: `-Kvalue`);
- directives: `src/sbatch/opt.c::_opt_batch_script` reads lines that *begin* with `#SBATCH` (a ` #SBATCH`
  with leading space, or `# SBATCH`, is a comment) and stops at the first line whose first non-blank
  character is not `#`; `get_argument` splits a line on blanks, honours quotes and backslashes, and ends at
  an unquoted `#`; all directive words form one argv, and a word that is not an option is an error;
- implied variables: sbatch(1) "OUTPUT ENVIRONMENT VARIABLES" (what a batch step sees) and srun(1) "INPUT
  ENVIRONMENT VARIABLES" (what srun takes from them: SLURM_NNODES is -N, SLURM_NTASKS is -n, ...).
Pyxis adds `--container-*` options to all three commands (NVIDIA/pyxis `args.c`, SPANK options).
"""

from __future__ import annotations

import re

from plint.record import field, record

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeGuard

from plint.reading.shell.model import Piece, Problem, Var, Word, unknown
from plint.reading.shell.placeholders import is_placeholder, slot_reason, slot_spans
from plint.source import SourceFile
from plint.values import NumberTooLong, Value, from_word, parse_int

# name[/short][= required value | ? optional value | nothing: a flag], from slurm_opt.c
_COMMON = """
account/A= acctg-freq= autocomplete= bb= bbf= begin/b= chdir/D= cluster= cluster-constraint= clusters/M= comment=
consolidate-segments constraint/C= container= container-id= context= contiguous core-spec/S= cores-per-socket=
cpu-freq= cpus-per-gpu= cpus-per-task/c= deadline= delay-boot= dependency/d= distribution/m= exclude/x= exclusive?
extra= extra-node-info/B= gpu-bind= gpu-freq= gpus/G= gpus-per-node= gpus-per-socket= gpus-per-task= gres=
gres-flags= help/h hint= hold/H job-name/J= licenses/L= mail-type= mail-user= mcs-label= mem= mem-bind= mem-per-cpu=
mem-per-gpu= mem-update= mincpus= network= nice? no-kill/k? nodefile/F= nodelist/w= nodes/N= ntasks/n= ntasks-per-core=
ntasks-per-gpu= ntasks-per-node= ntasks-per-socket= ntasks-per-tres= oom-kill-step? overcommit/O oversubscribe/s
partition/p= prefer= priority= profile= qos/q= quiet/Q reboot reservation= resources= resv-ports? runtime= segment=
signal= sockets-per-node= spread-job spread-segments stepmgr switches= tasks-per-node= thread-spec= threads-per-core=
time/t= time-min= tmp= tres-bind= tres-per-task= usage use-min-nodes verbose/v version/V wckey=
container-image= container-mounts= container-workdir= container-name= container-save= container-env=
container-mount-home no-container-mount-home container-remap-root no-container-remap-root container-entrypoint
no-container-entrypoint container-entrypoint-log container-writable container-readonly
"""
_ONLY = {
    "sbatch": """array/a= batch= error/e= export= export-file= external get-user-env gid= ignore-pbs input/i=
        kill-on-invalid-dep= no-requeue open-mode= output/o= parsable propagate? requeue? test-only uid= wait/W
        wait-all-nodes= wrap=""",
    "srun": """accel-bind= async bcast? bcast-exclude= compress? cpu-bind= cpu_bind= debugger-test disable-status/X
        epilog= error/e= exact export= external-launcher? het-group= ignore-signals= immediate/I? input/i= interactive
        jobid= kill-on-bad-exit/K? label/l mpi= msg-timeout= multi-prog no-allocate/Z open-mode= output/o= overlap?
        pack-group= parsable preserve-env/E prolog= propagate? pty? quit-on-interrupt relative/r= send-libs?
        slurmd-debug= task-epilog= task-prolog= test-only threads/T= treewidth= unbuffered/u wait/W= wait-for-children
        whole x11?""",
    "salloc": "bell immediate/I? kill-command/K? no-bell no-shell wait-all-nodes= x11?",
}
_TABLES: dict[str, tuple[dict[str, str], dict[str, str]]] = {}


def option_table(command: str) -> tuple[dict[str, str], dict[str, str]]:
    """({long name: "=" | "?" | ""}, {short letter: long name}) for sbatch, srun or salloc."""
    if command not in _TABLES:
        arity: dict[str, str] = {}
        shorts: dict[str, str] = {}
        for spec in (_COMMON + " " + _ONLY.get(command, "")).split():
            kind = spec[-1] if spec[-1] in "=?" else ""
            name, _, short = spec.rstrip("=?").partition("/")
            arity[name] = kind
            if short:
                shorts[short] = name
        _TABLES[command] = (arity, shorts)
    return _TABLES[command]


@record
class SlurmOption:
    name: str  # the long name, e.g. "nodes" for -N
    value: Word | None  # the value as written (None for a flag)
    word: Word  # the option word itself


@record
class ParsedOptions:
    options: list[SlurmOption]
    stop: int  # index of the first word that is not an option (the program), len(words) if none
    unknown: list[Word]  # option words Slurm does not know (it would refuse them)
    opaque: list[Word]  # words whose text is unknown, read as options (they may hold any)


def parse_options(words: list[Word], command: str, opaque: Callable[[int], bool] | None = None) -> ParsedOptions:
    """Slurm's getopt_long("+...") over words. A word of unknown text in option position ends the options
    (it may be the program) unless `opaque(index)` says to read it as options plint cannot see."""
    arity, shorts = option_table(command)
    out = ParsedOptions([], len(words), [], [])
    i = 0
    while i < len(words):
        word = words[i]
        text = word.text
        if text is None:
            head = (word.pieces[0].text if word.pieces else None) or ""
            if head.startswith("-") and "=" in head:  # `--nodes=$N`: the option is known, its value is not
                name = _long_name(head[2:].partition("=")[0], arity) if head.startswith("--") else None
                if name is not None:
                    out.options.append(SlurmOption(name, word.after(head.index("=") + 1), word))
                    i += 1
                    continue
            if head.startswith("--") and "=" in head:  # `--environment=$DIR/x.toml`: one option Slurm does not
                out.unknown.append(word)  # know (a SPANK plugin's), whose value is unknown: it sets nothing else
                i += 1
                continue
            if opaque is not None and opaque(i):
                out.opaque.append(word)
                i += 1
                continue
            out.stop = i
            return out
        if text == "--":
            out.stop = i + 1
            return out
        if not text.startswith("-") or text == "-":
            out.stop = i
            return out
        if text.startswith("--"):
            body, eq, _ = text[2:].partition("=")
            name = _long_name(body, arity)
            if name is None:
                out.unknown.append(word)
                i += 1
                continue
            kind = arity[name]
            if eq:
                out.options.append(SlurmOption(name, word.slice(len(body) + 3), word))
                i += 1
            elif kind == "=" and i + 1 < len(words):
                out.options.append(SlurmOption(name, words[i + 1], word))
                i += 2
            else:
                out.options.append(SlurmOption(name, None, word))
                i += 1
            continue
        # a cluster of short options: -lu, -N2, -N 2, -K1
        pos = 1
        while pos < len(text):
            name = shorts.get(text[pos])
            if name is None:
                out.unknown.append(word)
                break
            kind = arity[name]
            if kind and pos + 1 < len(text):
                out.options.append(SlurmOption(name, word.slice(pos + 1), word))
                break
            if kind == "=":
                value = words[i + 1] if i + 1 < len(words) else None
                out.options.append(SlurmOption(name, value, word))
                i += 1
                break
            out.options.append(SlurmOption(name, None, word))
            pos += 1
        i += 1
    return out


# Spellings Slurm reads as another option: --tasks-per-node sets the same value as --ntasks-per-node for srun,
# sbatch and salloc (SchedMD/slurm src/common/slurm_opt.c: slurm_opt_tasks_per_node shares
# LONG_OPT_NTASKSPERNODE and arg_set_ntasks_per_node; sbatch(1) up to Slurm 18.08: "--tasks-per-node=<n> ...
# Equivalent to --ntasks-per-node"; commit 9056111b dropped the entry from the man page, not the option).
# No other task, node or GPU count option has an alias there.
_ALIASES = {"tasks-per-node": "ntasks-per-node"}


def _long_name(body: str, arity: dict[str, str]) -> str | None:
    """Exact name, else a unique prefix of one (getopt_long accepts abbreviations), as its canonical name."""
    if body in arity:
        return _ALIASES.get(body, body)
    matches = [n for n in arity if n.startswith(body)] if body else []
    return _ALIASES.get(matches[0], matches[0]) if len(matches) == 1 else None


# ---- the job -----------------------------------------------------------------------------------
@record
class SlurmJob:
    nodes: Value | None = None
    ntasks: Value | None = None
    ntasks_per_node: Value | None = None
    gpus_per_node: Value | None = None
    gpus: Value | None = None
    gpu_type: Value | None = None
    gpu_type_is_feature: bool = False  # gpu_type is --constraint's text: node features, maybe no GPU name
    constraint: Value | None = None
    exclusive: Value | None = None
    cpus_per_task: Value | None = None
    partition: Value | None = None
    gpus_per_task: Value | None = None
    job_name: Value | None = None
    time: Value | None = None
    account: Value | None = None
    # every option in the order sbatch applies it (directives, then the command line):
    # (long name, value word or None for a flag, the option word)
    directives: list[tuple[str, Word | None, Word]] = field(default_factory=list)
    options: dict[str, Value] = field(default_factory=dict)  # long name with `-` as `_` -> last value as written
    problems: list[Problem] = field(default_factory=list)


def _count(word: Word, what: str) -> Value:
    """A count as Slurm reads it; `k`/`m` suffixes multiply by 1024 / 1048576 (srun(1), --nodes)."""
    value = from_word(word, str, what)
    if not value.known:
        return value
    text = value.value.strip()
    m = re.fullmatch(r"(\d+)([kKmM]?)", text)
    if not m and is_placeholder(text):
        return Value(
            None,
            value.span,
            "unresolved",
            f"{what}={text}, a placeholder the author left to fill in (an unfilled template slot), is not a count",
        )
    if not m:
        return Value(None, value.span, "unresolved", f"{what} {text!r} is not a count plint can read")
    scale = {"": 1, "k": 1024, "m": 1048576}[m.group(2).lower()]
    try:
        return Value(parse_int(m.group(1)) * scale, value.span, value.origin)
    except NumberTooLong as exc:
        return Value(None, value.span, "unresolved", f"{what} is {exc}")


def node_count(word: Word) -> Value:
    """--nodes=N, MIN-MAX (known only when MIN == MAX), or a size list `2,4` / `1-15:4` (decided at run time)."""
    value = from_word(word, str, "--nodes")
    if not value.known:
        return value
    text = value.value.strip()
    m = re.fullmatch(r"(\d+[kKmM]?)-(\d+[kKmM]?)", text)
    if m and m.group(1) == m.group(2):
        return _count(word.slice(0, len(m.group(1))), "--nodes")
    if m or "," in text or ":" in text:
        return Value(
            None, value.span, "unresolved", f"--nodes={text} is a range: Slurm picks the node count when the job starts"
        )
    return _count(word, "--nodes")


MAX_LISTED_HOSTS = 100_000  # a host list counted (`n[1-1000000000]` is not)


def hostlist_count(text: str) -> int | None:
    """How many hosts a Slurm host list names (`gpu[01-04,07],login2`: 6): comma-separated host expressions, each
    bracket of comma-separated numbers and ranges multiplying the names (scontrol(1), "show hostnames"); None for
    a file name (sbatch --nodelist reads hosts from a file when the value holds a `/`), a malformed list, or
    more than MAX_LISTED_HOSTS."""
    if "/" in text or not text:
        return None
    total, depth, expression = 0, 0, ""
    for c in text + ",":
        depth += (c == "[") - (c == "]")
        if depth not in (0, 1):
            return None
        if c == "," and depth == 0:
            count = _host_expression_count(expression)
            if count is None:
                return None
            total, expression = total + count, ""
            if total > MAX_LISTED_HOSTS:
                return None
        else:
            expression += c
    return total if depth == 0 and not expression else None  # an unclosed bracket held the last comma


def _host_expression_count(expression: str) -> int | None:
    """The names one host expression stands for (`n[1-3]x[a]` is malformed); None when it is malformed."""
    if not expression or not re.fullmatch(r"[^\[\]\s]*(\[[0-9,\-]+\][^\[\]\s]*)*", expression):
        return None
    count = 1
    for group in re.findall(r"\[([0-9,\-]+)\]", expression):
        names = 0
        for item in group.split(","):
            bounds = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
            if bounds is None or (bounds.group(2) is not None and int(bounds.group(2)) < int(bounds.group(1))):
                return None
            names += int(bounds.group(2) or bounds.group(1)) - int(bounds.group(1)) + 1
        count *= names
        if count > MAX_LISTED_HOSTS:
            return None
    return count


def _listed_nodes(value: Value) -> Value | None:
    """The node count of a job that names its hosts (--nodelist) and no --nodes: sbatch(1) allocates every listed
    host and adds others only where another request needs them; None when the list cannot be counted."""
    if not value.known or not isinstance(value.value, str):  # `#SBATCH --nodelist` with no list names no host
        return None
    count = hostlist_count(value.value.strip())
    if count is None:
        return None
    return Value(
        count,
        value.span,
        "derived",
        f"the {count} host(s) --nodelist={value.value.strip()} names (Slurm adds others only where another "
        "request needs them)",
    )


def _split(word: Word, sep: str) -> list[Word]:
    """A known word split at `sep`, each part keeping its own span."""
    text = word.text or ""
    out, start = [], 0
    for part in text.split(sep):
        out.append(word.slice(start, start + len(part)))
        start += len(part) + len(sep)
    return out


def _gpu_request(word: Word) -> tuple[Word | None, Word]:
    """`[type:]count` of --gpus / --gpus-per-node / --gpus-per-task -> (type word, count word)."""
    text = word.text or ""
    if ":" in text:
        cut = text.rindex(":")
        return word.slice(0, cut), word.slice(cut + 1)
    return None, word


def _gres_gpus(word: Word) -> tuple[bool, Word | None, Word | None]:
    """The GPU item of `--gres=gpu[:type][:count][(S:0-1)][,other...]` -> (asks for GPUs, type word, count
    word; None for the one GPU a bare `gpu` or `gpu:type` asks for)."""
    for item in _split(word, ","):
        text = item.text or ""
        if text.startswith("gres/"):  # the TRES spelling
            item, text = item.slice(5), text[5:]
        name, _, rest = text.partition(":")
        if name != "gpu":
            continue
        rest = re.sub(r"\(.*\)$", "", rest)
        if not rest:
            return True, None, None
        parts = rest.split(":")
        at = len("gpu:")
        if len(parts) == 1:
            part = item.slice(at, at + len(parts[0]))
            return (True, None, part) if parts[0].isdigit() else (True, part, None)
        kind = ":".join(parts[:-1])
        count_at = at + len(kind) + 1
        return True, item.slice(at, at + len(kind)), item.slice(count_at, count_at + len(parts[-1]))
    return False, None, None


def _type_value(word: Word) -> Value:
    value = from_word(word, str, "GPU type")
    return Value(value.value.lower(), value.span, value.origin) if value.known else value


def _settle(job: SlurmJob) -> SlurmJob:
    """Fill the typed fields from `directives`: the last occurrence of an option wins, as in sbatch."""
    out = SlurmJob(directives=list(job.directives), problems=list(job.problems))
    type_from_gpus = type_from_constraint = None
    for name, value, option in out.directives:
        key = name.replace("-", "_")
        if value is None:  # a flag
            out.options[key] = Value(True, option.value_span, option.origin)
            if name == "exclusive":
                out.exclusive = out.options[key]
            continue
        out.options[key] = from_word(value, str, f"--{name}")
        if name == "nodes":
            out.nodes = node_count(value)
        elif name in ("ntasks", "ntasks-per-node", "cpus-per-task"):
            setattr(out, key, _count(value, f"--{name}"))
        elif name in ("partition", "job-name", "time", "account", "constraint", "exclusive"):
            setattr(out, key, out.options[key])
            if name == "constraint":
                type_from_constraint = _type_value(value)
        elif name in ("gpus", "gpus-per-node", "gpus-per-task"):
            kind, count = _gpu_request(value) if value.known else (None, value)
            setattr(out, key, _count(count, f"--{name}"))
            if kind is not None:
                type_from_gpus = _type_value(kind)
        elif name == "gres":
            if not value.known:
                out.gpus_per_node = from_word(value, str, "--gres")
                continue
            asks, gpu_kind, gpu_count = _gres_gpus(value)
            if not asks:
                continue
            out.gpus_per_node = (
                _count(gpu_count, "--gres gpu count")
                if gpu_count is not None
                else Value(1, value.value_span, value.origin, "--gres=gpu without a count asks for one GPU per node")
            )
            if gpu_kind is not None:
                type_from_gpus = _type_value(gpu_kind)
    listed = out.options.get("nodelist")
    if out.nodes is None and listed is not None:
        out.nodes = _listed_nodes(listed)
    out.gpu_type = type_from_gpus or type_from_constraint
    out.gpu_type_is_feature = type_from_gpus is None and type_from_constraint is not None
    return out


def directive_words(source: SourceFile, line_start: int, line: str, body_at: int) -> tuple[list[Word], str | None]:
    """get_argument over one directive line: words with spans, or an error text (unmatched quote)."""
    words: list[Word] = []
    i = body_at
    n = len(line)
    while True:
        while i < n and line[i].isspace():
            i += 1
        if i >= n or line[i] == "#":
            return words, None
        if line[i] == ":":
            return words, f"Unexpected `:` in [{line}]"
        start, chars, exact, quote = i, [], True, ""
        while i < n and (quote or not line[i].isspace()):
            c = line[i]
            if quote:
                if c == quote:
                    quote = ""
                else:
                    chars.append(c)
                i += 1
                continue
            if c == "\\":
                exact = False
                if i + 1 < n:
                    chars.append(line[i + 1])
                i += 2
                continue
            if c in "\"'":
                quote, exact = c, False
                i += 1
                continue
            if c == "#":
                break
            chars.append(c)
            i += 1
        if quote:
            return words, f"Unmatched `{quote}` in [{line}]"
        b0 = line_start + len(line[:start].encode("utf-8", "surrogateescape"))
        b1 = line_start + len(line[:i].encode("utf-8", "surrogateescape"))
        span = source.span(b0, b1)
        words.append(Word((Piece("".join(chars), span, "literal", exact, source=source),), span))


_BRACE_SLOT = re.compile(rb"\{ +[A-Za-z][\w -]*? +\}")


def _without_slots(
    source: SourceFile, line_start: int, line: str, words: list[Word]
) -> tuple[list[Word], list[Problem]]:
    """`#SBATCH <SLURM OPTIONS> --nodes=128`: a template slot stands for options the author left to fill
    in (issue 12 point 8), not a word sbatch would reject; the options written after it are read."""
    encoded = line.encode("utf-8", "surrogateescape")
    spans = [(line_start + a, line_start + b) for a, b in slot_spans(encoded)]
    # `#SBATCH -p { partition }` (OpenRLHF's examples): a brace slot is an option's value left to fill in
    # (sbatch itself refuses the stray words until then): one unknown value, so the next option stays one
    values = [(line_start + m.start(), line_start + m.end()) for m in _BRACE_SLOT.finditer(encoded)]
    spans += values
    if not spans:
        return words, []
    data = source.data
    kept: list[Word] = []
    for w in words:
        inside = next(((a, b) for a, b in spans if w.site is not None and a <= w.site.start and w.site.end <= b), None)
        if inside is None:
            kept.append(w)
        elif inside in values and w.site is not None and w.site.start == inside[0]:
            text = data[inside[0] : inside[1]].decode("utf-8", "surrogateescape")
            kept.append(Word((unknown(slot_reason(text), None, source.span(*inside)),), source.span(*inside)))
    problems = [
        Problem(
            "unresolved",
            slot_reason(data[a:b].decode("utf-8", "surrogateescape"))
            + "; the directive's other options are read as written",
            source.span(a, b),
        )
        for a, b in spans
    ]
    return kept, problems


def read_directives(source: SourceFile) -> SlurmJob | None:
    """The job a batch script asks for; None when it has no `#SBATCH` line."""
    words: list[Word] = []
    problems: list[Problem] = []
    found = False
    offset = 0
    for raw in source.text.splitlines(keepends=True):
        start = offset
        offset += len(raw.encode("utf-8", "surrogateescape"))
        line = raw.rstrip("\r\n")
        magic = "#SBATCH" if line.startswith("#SBATCH") else "#SLURM" if line.startswith("#SLURM") else None
        if magic is None:
            stripped = line.lstrip()
            if stripped and not stripped.startswith("#"):
                break  # the first command ends the directives
            continue
        found = True
        body = line[len(magic) :].lstrip()
        if re.match(r"(?i)(hetjob|packjob)(\s|$)", body):
            break  # later components of a heterogeneous job: the launch runs in the first
        line_words, error = directive_words(source, start, line, len(magic))
        line_words, slots = _without_slots(source, start, line, line_words)
        words.extend(line_words)
        problems.extend(slots)
        if error:
            problems.append(Problem("syntax", f"sbatch: {error}", source.span(start, offset)))
    if not found:
        return None
    parsed = parse_options(words, "sbatch")
    job = SlurmJob(directives=_as_directives(parsed), problems=problems)
    if parsed.stop < len(words):
        w = words[parsed.stop]
        job.problems.append(Problem("syntax", f"Invalid directive found in batch script: {w.text}", w.site))
    for w in parsed.unknown:  # kind "slurm": a site's SPANK plugin may add options plint does not know
        job.problems.append(Problem("slurm", f"sbatch: unrecognized option '{w.text}'", w.site))
    return _settle(job)


def _as_directives(parsed: ParsedOptions) -> list[tuple[str, Word | None, Word]]:
    return [(o.name, o.value, o.word) for o in parsed.options]


def apply_options(job: SlurmJob | None, words: list[Word], command: str = "sbatch") -> SlurmJob:
    """The job after `sbatch`/`salloc` options on the command line (words after the command name), which
    override the script's directives."""
    parsed = parse_options(words, command)
    base = job if job is not None else SlurmJob()
    return _settle(SlurmJob(directives=list(base.directives) + _as_directives(parsed), problems=list(base.problems)))


def exported_variables(words: list[Word]) -> dict[str, Var]:
    """The variables `sbatch --export=ALL,NAME=VALUE,...` (words after `sbatch`) sets in the job's environment:
    sbatch(1) --export takes comma-separated names, NAME=VALUE giving a value, among ALL, NIL and NONE (what else
    the job inherits; plint reads every form as ALL, sbatch's default)."""
    out: dict[str, Var] = {}
    for opt in parse_options(words, "sbatch").options:
        if opt.name == "export" and opt.value is not None:
            out.update(assigned_variables(opt.value))
    return out


def assigned_variables(word: Word) -> dict[str, Var]:
    """The exported variables a comma-separated `NAME=VALUE,...` list gives (sbatch --export, qsub -v); a bare NAME,
    which passes on the submitter's own value, gives none here."""
    out: dict[str, Var] = {}
    for item in _comma_items(word):
        name, eq, _ = item.known_prefix().partition("=")
        if eq and name.isidentifier():
            out[name] = Var(name, item.after(len(name) + 1).pieces, None, True, item.site)
    return out


def _comma_items(word: Word) -> list[Word]:
    """A word split at the commas of its known text, each part keeping its pieces."""
    items: list[list[Piece]] = [[]]
    for p in word.pieces:
        if p.text is None:
            items[-1].append(p)
            continue
        start = 0
        for i, ch in enumerate(p.text):
            if ch == ",":
                items[-1].append(p.sub(start, i))
                items.append([])
                start = i + 1
        items[-1].append(p.sub(start, len(p.text)))
    return [Word(tuple(q for q in item if q.text != ""), word.site) for item in items]


# ---- what the batch step sees ------------------------------------------------------------------
def _var(name: str, value: Value, text: str | None = None) -> Var:
    return Var(
        name, (Piece(text if text is not None else str(value.value), value.span, "derived"),), None, True, value.span
    )


def _known(v: Value | None) -> TypeGuard[Value]:
    return v is not None and v.known


# Set in every batch job whatever its options (sbatch(1), OUTPUT ENVIRONMENT VARIABLES, SchedMD/slurm
# doc/man/man1/sbatch.1), to values known only when it runs. The per-task ones (SLURM_PROCID, SLURM_NODEID,
# SLURM_LOCALID) are set in the batch script too (it runs as a single copy on the first node) and differ
# per task under srun, so they stay unknown as well: set, not empty, value unknown.
RUN_TIME_VARIABLES = (
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_SUBMIT_DIR",
    "SLURM_SUBMIT_HOST",
    "SLURM_CLUSTER_NAME",
    "SLURMD_NODENAME",
    "SLURM_CPUS_ON_NODE",
    "SLURM_JOB_CPUS_PER_NODE",
    "SLURM_TASK_PID",
    "SLURM_GTIDS",
    "SLURM_PROCID",
    "SLURM_NODEID",
    "SLURM_LOCALID",
)


# one node's name (sbatch(1): SLURMD_NODENAME, "Name of the node running the job script"): one word
ONE_WORD_VARIABLES = frozenset(("SLURMD_NODENAME",))


def _run_time(name: str) -> Var:
    return Var(
        name,
        (
            Piece(
                None,
                None,
                "unresolved",
                reason=f"${name} is set by Slurm when the job runs; its value is only known then",
                name=name,
                nonempty=True,
                one_word=name in ONE_WORD_VARIABLES,
            ),
        ),
        None,
        True,
    )


def implied_env(job: SlurmJob | None) -> dict[str, Var]:
    """The SLURM_* variables sbatch(1) sets in the batch step: from the job's options where their values follow
    from the options alone, and as set-but-unknown (RUN_TIME_VARIABLES) where only the running job knows them.
    A batch script's `if [ -z "$SLURM_JOB_ID" ]` (not inside a job) is therefore the branch not taken."""
    env: dict[str, Var] = {}
    if job is None:
        return env
    env.update((name, _run_time(name)) for name in RUN_TIME_VARIABLES)
    if _known(job.nodes):
        for name in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
            env[name] = _var(name, job.nodes)
    elif job.nodes is not None and job.nodes.origin == "unresolved":  # given, but unknown (a slot, a range)
        for name in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
            env[name] = Var(
                name,
                (Piece(None, job.nodes.span, "unresolved", reason=job.nodes.note, name=name, nonempty=True),),
                None,
                True,
                job.nodes.span,
            )
    # SLURM_NTASKS: --ntasks, or the task count when an --ntasks-per-* option is given
    ntasks = job.ntasks if _known(job.ntasks) else None
    if ntasks is None and _known(job.nodes) and _known(job.ntasks_per_node):
        ntasks = Value(job.nodes.value * job.ntasks_per_node.value, job.ntasks_per_node.span, "derived")
    if ntasks is not None:
        for name in ("SLURM_NTASKS", "SLURM_NPROCS"):
            env[name] = _var(name, ntasks)
    if _known(job.ntasks_per_node):
        env["SLURM_NTASKS_PER_NODE"] = _var("SLURM_NTASKS_PER_NODE", job.ntasks_per_node)
        if _known(job.nodes):
            n, per = job.nodes.value, job.ntasks_per_node.value
            env["SLURM_TASKS_PER_NODE"] = _var(
                "SLURM_TASKS_PER_NODE", job.ntasks_per_node, f"{per}(x{n})" if n > 1 else str(per)
            )
    per_node = job.gpus_per_node
    if not _known(per_node) and _known(job.gpus_per_task) and _known(job.ntasks_per_node):
        per_node = Value(job.gpus_per_task.value * job.ntasks_per_node.value, job.gpus_per_task.span, "derived")
    if _known(per_node):
        env["SLURM_GPUS_ON_NODE"] = _var("SLURM_GPUS_ON_NODE", per_node)
    if "gpus_per_node" in job.options and _known(job.gpus_per_node):
        env["SLURM_GPUS_PER_NODE"] = _var("SLURM_GPUS_PER_NODE", job.gpus_per_node)
    if "gpus" in job.options and _known(job.gpus):
        env["SLURM_GPUS"] = _var("SLURM_GPUS", job.gpus)
    if "gpus_per_task" in job.options and _known(job.gpus_per_task):
        env["SLURM_GPUS_PER_TASK"] = _var("SLURM_GPUS_PER_TASK", job.gpus_per_task)
    if _known(job.cpus_per_task):
        env["SLURM_CPUS_PER_TASK"] = _var("SLURM_CPUS_PER_TASK", job.cpus_per_task)
    if _known(job.job_name):
        env["SLURM_JOB_NAME"] = _var("SLURM_JOB_NAME", job.job_name)
    if _known(job.partition) and "," not in job.partition.value:
        env["SLURM_JOB_PARTITION"] = _var("SLURM_JOB_PARTITION", job.partition)
    if _known(job.account):
        env["SLURM_JOB_ACCOUNT"] = _var("SLURM_JOB_ACCOUNT", job.account)
    return env
