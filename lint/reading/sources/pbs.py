"""PBS Professional / OpenPBS: `#PBS` directives, and what a batch job's script sees (its variables and the
node file `$PBS_NODEFILE` names).

Everything here follows OpenPBS's own code and manual pages (openpbs/openpbs at cd7ab5ed):
- directives: qsub (src/cmds/qsub_sup.c) reads lines whose first non-blank characters are `#PBS`
  (pbs_ispbsdir in src/lib/Libcmds/check_job_script.c skips leading blanks) until the first executable
  line (pbs_isexecutable: after blanks, anything but `#`; a blank line, or one starting with `:` or `#!`,
  is not one); a directive line ending in a backslash goes on in the next line;
- the node file: src/resmom/start_exec.c (generate_pbs_nodefile) writes one line per MPI process slot, the
  host's short name; doc/man1/pbs_resources.7B, mpiprocs: "For each chunk with mpiprocs=P, the host name for
  that chunk is written to the PBS_NODEFILE P times", in the order of the select statement's chunks;
  mpiprocs defaults to 1 where ncpus > 0 (ncpus defaults to 1), else 0;
- placement (pbs_resources.7B, "Default Placement"): without a place statement the arrangement is free, so
  two chunks may share a host; place=scatter puts every chunk on a host of its own. The old node spelling
  `-l nodes=N[:ppn=P]` (Torque's) is converted to select=N:mpiprocs=P with place=scatter (its "Node
  Specification Conversion": a spec list without N is one chunk; a host name or a site's Boolean property in
  it, and a `#suffix`, select and place hosts but count nothing).
Torque (adaptivecomputing/torque at 34ff8454, src/resmom/start_exec.c) sets three more variables from that
spelling, which scripts written for it read: PBS_NUM_NODES, the node count (InitUserEnv through
get_num_nodes_ppn: each `+` part's count, a host name counting one), PBS_NUM_PPN, the first part's ppn (default
1), and PBS_NP, the job's execution slots (ji_numvnod: count x ppn summed). OpenPBS sets none of them, so
plint sets them only for a job that asks in the old spelling.
"""

from __future__ import annotations

import re

from plint.reading.shell.lines import host_word
from plint.reading.shell.model import MappedText, Piece, Problem, Var, Word
from plint.reading.sources.slurm import assigned_variables
from plint.record import field, record
from plint.source import SourceFile, Span
from plint.values import NumberTooLong, parse_int

PREFIX = "#PBS"
NODE_FILE = "PBS_NODEFILE"
MAX_NODE_FILE_LINES = 100_000  # the node file plint writes for a job (a select of 10^9 chunks is not built)


@record
class Chunk:
    count: int  # how many chunks of this spec (`4:ngpus=8` is four)
    mpiprocs: int  # lines each chunk writes to the node file


@record
class PbsJob:
    chunks: list[Chunk] | None = None  # the select statement's, None when no select or nodes is read
    chunks_unread: str | None = None  # why the chunks are not known (a select plint cannot read)
    scatter: bool = False  # place=scatter: every chunk on a host of its own
    select_span: Span | None = None
    old_spelling: bool = False  # the chunks come from `-l nodes=` (Torque's spelling), not from a select
    job_name: str | None = None
    queue: str | None = None
    problems: list[Problem] = field(default_factory=list)
    resources: set[str] = field(default_factory=set)  # the `-l` resources the directives have given so far


def _directive_lines(source: SourceFile):
    """(byte offset of the line, the line) of each directive, continuation lines joined, up to the first
    executable line."""
    offset = 0
    pending: tuple[int, str] | None = None
    for raw in source.text.splitlines(keepends=True):
        start = offset
        offset += len(raw.encode("utf-8", "surrogateescape"))
        line = raw.rstrip("\r\n")
        if pending is not None:  # the line a backslash continued, joined so that its bytes keep their offsets
            start, line = pending[0], pending[1] + line
            pending = None
        stripped = line.lstrip()
        if stripped.startswith(PREFIX):
            if line.endswith("\\"):  # the backslash as a blank, the line end kept: both separate words
                pending = (start, line[:-1] + " " + raw[len(raw.rstrip("\r\n")) :])
                continue
            yield start, line
            continue
        if stripped and not stripped.startswith("#") and not line.startswith(":"):
            return


def read_directives(source: SourceFile) -> PbsJob | None:
    """The job a batch script's `#PBS` lines ask for; None without any."""
    from plint.reading.sources.slurm import directive_words

    job: PbsJob | None = None
    for start, line in _directive_lines(source):
        job = job or PbsJob()
        body_at = line.index(PREFIX) + len(PREFIX)
        words, error = directive_words(source, start, line, body_at)
        if error:
            job.problems.append(Problem("syntax", f"qsub: {error}", source.span(start, start + len(line))))
        _apply(job, words, directive=True)
    return job


# qsub's options that take a value (src/cmds/qsub_sup.c GETOPT_ARGS "a:A:c:C:e:fhIj:J:k:l:m:M:N:o:p:q:r:R:S:u:
# v:VW:XzP:"); f, h, I, V, X and z are flags
VALUE_OPTIONS = frozenset("aAcCejJklmMNopqrRSuvWP")


def _apply(job: PbsJob, words: list[Word], directive: bool = False) -> None:
    """qsub's options on one directive line, or on its command line: `-l` resources, `-N` the job's name, `-q` its
    queue. Of a resource the directives give twice the first stands: qsub reads the command line first and adds a
    directive's resource only when it has none of that name yet (openpbs src/cmds/qsub.c, option l:
    set_resources(..., add=passet == CMDLINE); src/lib/Libcmds/set_resource.c), so the command line's wins too."""
    i = 0
    while i < len(words):
        text = words[i].text or ""
        letter, attached = (text[1:2], text[2:]) if text.startswith("-") and len(text) > 1 else ("", "")
        takes = letter in VALUE_OPTIONS
        value = attached if takes and attached else words[i + 1].text if takes and i + 1 < len(words) else None
        i += 2 if takes and not attached else 1
        if value is None:
            continue
        if letter == "l":
            for resource in value.split(","):
                name = resource.partition("=")[0]
                if directive and name in job.resources:
                    continue
                if directive:
                    job.resources.add(name)
                _resource(job, resource, words[i - 1])
        elif letter == "N":
            job.job_name = value
        elif letter == "q":
            job.queue = value


def submitted_job(child: SourceFile, words: list[Word]) -> PbsJob:
    """The job `qsub OPTIONS SCRIPT` asks for (`words`: those after `qsub`): the script's directives, then the
    command line's options, which qsub applies over them (OpenPBS qsub(1B): an option on the command line takes
    precedence over the same option in a directive)."""
    job = read_directives(child) or PbsJob()
    _apply(job, words)
    return job


def passed_variables(words: list[Word]) -> dict[str, Var]:
    """The variables `qsub -v NAME=value,...` (words after `qsub`) puts in the job's environment; a bare NAME, which
    takes the submitter's own value, is left to the environment the job inherits."""
    out: dict[str, Var] = {}
    for i, word in enumerate(words[:-1]):
        if word.text == "-v":
            out.update(assigned_variables(words[i + 1]))
    return out


def _resource(job: PbsJob, resource: str, word: Word) -> None:
    name, _, value = resource.partition("=")
    if name == "select":
        job.chunks, job.chunks_unread = _chunks(value, old=False)
        job.select_span = word.site
        job.old_spelling = False  # the later request stands
    elif name == "nodes":
        job.chunks, job.chunks_unread = _chunks(value, old=True)
        job.select_span = word.site
        job.scatter = True  # the conversion places the old spelling's chunks with place=scatter
        job.old_spelling = True
    elif name == "place":
        job.scatter = "scatter" in value.split(":") and "vscatter" not in value.split(":")


def _chunks(spec: str, old: bool) -> tuple[list[Chunk] | None, str | None]:
    """The chunks of a select statement (`2:ngpus=4:mpiprocs=4+1:ncpus=8`) or of the old node spelling
    (`4:ppn=8`, converted as pbs_resources.7B says), or why they cannot be read."""
    chunks = []
    if old:
        spec = spec.split("#", 1)[0]  # `#excl`, `#shared`, `#<property>`: placement, no count
    for part in spec.split("+"):
        items = part.split(":")
        count = 1
        if items and re.fullmatch(r"\d+", items[0]):
            try:
                count = parse_int(items.pop(0))
            except NumberTooLong as exc:
                return None, f"the chunk count is {exc}"
        if old:  # a host name or a Boolean property (`nodes=2:ppn=8:a100`) chooses hosts and counts nothing
            items = [item for item in items if "=" in item or not item]
        if any("=" not in item for item in items):  # a host or property name, or text qsub would refuse
            return None, f"{'nodes' if old else 'select'}={spec} is not a chunk count plint can read"
        values = dict(item.partition("=")[::2] for item in items if "=" in item)
        procs = values.get("ppn" if old else "mpiprocs")
        cpus = values.get("ncpus", "1")
        if procs is None:  # 1 where ncpus > 0 (as digits: a 5,000-digit ncpus is past int()'s limit), else 0
            procs = "1" if old or not cpus.isdigit() or cpus.strip("0") else "0"
        if not procs.isdigit() or len(procs) > 6:
            return None, f"mpiprocs={procs} is not a count plint can read"
        chunks.append(Chunk(count, int(procs)))
    return chunks, None


def _torque_counts(chunks: list[Chunk]) -> tuple[int, int, int]:
    """Torque's (PBS_NUM_NODES, PBS_NUM_PPN, PBS_NP) for the chunks of `-l nodes=` (module docstring)."""
    return sum(c.count for c in chunks), chunks[0].mpiprocs, sum(c.count * c.mpiprocs for c in chunks)


# ---- what the job's script sees -------------------------------------------------------------------------
# Set in every PBS job (the PBS Professional User's Guide's table of job environment variables; src/resmom/
# mom_main.c and start_exec.c set them), to values known only when the job runs.
RUN_TIME_VARIABLES = ("PBS_JOBID", "PBS_O_WORKDIR", "PBS_O_HOST", "PBS_JOBDIR", "PBS_NODENUM", "PBS_TASKNUM")


def _run_time(name: str, why: str | None = None) -> Var:
    reason = why or f"${name} is set by PBS when the job runs; its value is only known then"
    return Var(name, (Piece(None, None, "unresolved", reason=reason, name=name, nonempty=True),), None, True)


def _literal(name: str, text: str) -> Var:
    return Var(name, (Piece(text, None, "derived"),), None, True)


def implied_env(job: PbsJob | None) -> dict[str, Var]:
    """The PBS_* variables the job's script sees: PBS_NODEFILE names the node file (node_file), its path known
    only when the job runs; PBS_ENVIRONMENT is PBS_BATCH in a batch job; the job's name and queue; Torque's
    counts for a job asking in the old node spelling."""
    if job is None:
        return {}
    env = {name: _run_time(name) for name in RUN_TIME_VARIABLES}
    env[NODE_FILE] = Var(
        NODE_FILE,
        (
            Piece(
                None,
                None,
                "unresolved",
                reason="$PBS_NODEFILE is the path of the job's node file, known when the job runs",
                name=NODE_FILE,
                nonempty=True,
                one_word=True,
            ),
        ),
        None,
        True,
    )
    env["PBS_ENVIRONMENT"] = _literal("PBS_ENVIRONMENT", "PBS_BATCH")
    if job.job_name is not None:
        env["PBS_JOBNAME"] = _literal("PBS_JOBNAME", job.job_name)
    if job.queue is not None and "@" not in job.queue:
        env["PBS_QUEUE"] = _literal("PBS_QUEUE", job.queue)
    if job.old_spelling and job.chunks:
        for name, count in zip(("PBS_NUM_NODES", "PBS_NUM_PPN", "PBS_NP"), _torque_counts(job.chunks)):
            env[name] = Var(name, (Piece(str(count), job.select_span, "derived"),), None, True)
    return env


def node_file_key() -> str:
    """How the evaluator names the node file among the files a script's environment gives it: the display
    of the word `$PBS_NODEFILE` expands to."""
    return Word((Piece(None, name=NODE_FILE),)).display()


def node_file(job: PbsJob | None) -> MappedText | None:
    """The node file's lines: each chunk's host once per MPI process. Host names are known only when the job
    runs; each chunk's host is one unknown word, the same word for all its lines, so that `sort -u` and
    `uniq` count hosts. Two chunks are on different hosts for certain only under place=scatter; otherwise
    plint assumes so (PBS's free arrangement may put two small chunks on one host), and the count says
    it is assumed (shell/lines.py)."""
    if job is None or job.chunks is None:
        return None
    if sum(c.count * c.mpiprocs for c in job.chunks) > MAX_NODE_FILE_LINES:
        return None
    pieces: list[Piece] = []
    newline = Piece("\n", job.select_span, "derived")
    index = 0
    for chunk in job.chunks:
        for _ in range(chunk.count):
            index += 1
            host = host_word(
                "chunk",
                index,
                job.select_span,
                f"the host of the job's chunk {index}, known when the job runs",
                not job.scatter,
            )
            pieces += [host, newline] * chunk.mpiprocs
    return MappedText(pieces)
