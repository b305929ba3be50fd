"""Slurm batch directives (`#SBATCH`) and the environment they give the job.

sbatch reads directives only from the comment block at the top of the script: it stops at the first
line that is neither blank nor a comment (sbatch(1), "the batch script may contain options preceded
with #SBATCH before any executable commands"). `# SBATCH` with a space is an ordinary comment.
The variables set from these options are listed under "OUTPUT ENVIRONMENT VARIABLES" in sbatch(1);
per-task variables (SLURM_PROCID, SLURM_NODEID, SLURM_LOCALID) and the node list are only known at
run time and are not set here.
"""

from __future__ import annotations

import re
from plint.record import field, record

from plint.shell.model import Piece, Var, Word
from plint.source import SourceFile, Span
from plint.values import Value

# long option -> canonical name; short options and whether they take a value (sbatch(1))
_LONG = {
    "nodes": "nodes", "ntasks": "ntasks", "ntasks-per-node": "ntasks_per_node",
    "gpus-per-node": "gpus_per_node", "gpus": "gpus", "gres": "gres", "constraint": "constraint",
    "exclusive": "exclusive", "cpus-per-task": "cpus_per_task", "partition": "partition",
    "job-name": "job_name", "time": "time", "account": "account", "gpus-per-task": "gpus_per_task",
    "mem": "mem", "qos": "qos", "output": "output", "error": "error",
}
_SHORT = {"N": "nodes", "n": "ntasks", "c": "cpus_per_task", "p": "partition", "J": "job_name",
          "t": "time", "A": "account", "G": "gpus", "C": "constraint", "o": "output", "e": "error",
          "q": "qos"}
_FLAG_ONLY = {"exclusive"}  # may also take a value (=user|mcs|topo); bare form is common
_DIRECTIVE = re.compile(r"^#SBATCH\s+(.*)$")


@record
class SlurmJob:
    nodes: Value | None = None
    ntasks: Value | None = None
    ntasks_per_node: Value | None = None
    gpus_per_node: Value | None = None
    gpus: Value | None = None
    gpu_type: Value | None = None
    constraint: Value | None = None
    exclusive: Value | None = None
    cpus_per_task: Value | None = None
    partition: Value | None = None
    options: dict[str, Value] = field(default_factory=dict)  # every option as written, last wins


def _int_value(text: str, span: Span | None, what: str, origin: str = "literal") -> Value:
    text = text.strip()
    if text.isdigit():
        return Value(int(text), span, origin)
    if re.fullmatch(r"(\d+)-(\d+)", text):
        lo, hi = text.split("-")
        if lo == hi:
            return Value(int(lo), span, origin)
        return Value(None, span, "unresolved", f"{what} is a range {text}: Slurm picks the count at run time")
    return Value(None, span, "unresolved", f"{what} {text!r} is not a number plint can read")


def _gpu_spec(text: str) -> tuple[str | None, str]:
    """`[type:]count` -> (type, count)."""
    if ":" in text:
        kind, _, count = text.rpartition(":")
        return kind.lower(), count
    return None, text


def _apply(job: SlurmJob, name: str, value: str, span: Span | None, origin: str = "literal") -> None:
    job.options[name] = Value(value, span, origin)
    if name == "nodes":
        job.nodes = _int_value(value, span, "--nodes", origin)
    elif name == "ntasks":
        job.ntasks = _int_value(value, span, "--ntasks", origin)
    elif name == "ntasks_per_node":
        job.ntasks_per_node = _int_value(value, span, "--ntasks-per-node", origin)
    elif name == "cpus_per_task":
        job.cpus_per_task = _int_value(value, span, "--cpus-per-task", origin)
    elif name == "partition":
        job.partition = Value(value, span, origin)
    elif name == "exclusive":
        job.exclusive = Value(True, span, origin)
    elif name == "constraint":
        job.constraint = Value(value, span, origin)
        if job.gpu_type is None:
            job.gpu_type = Value(value.strip().lower(), span, origin)
    elif name in ("gpus_per_node", "gpus"):
        kind, count = _gpu_spec(value)
        v = _int_value(count, span, f"--{name.replace('_', '-')}", origin)
        setattr(job, name, v)
        if kind:
            job.gpu_type = Value(kind, span, origin)
    elif name == "gres":
        for item in value.split(","):
            parts = item.strip().split(":")
            if parts[0] != "gpu":
                continue
            if len(parts) == 2:
                job.gpus_per_node = _int_value(parts[1], span, "--gres gpu count", origin)
            elif len(parts) >= 3:
                job.gpu_type = Value(parts[1].lower(), span, origin)
                job.gpus_per_node = _int_value(parts[2].split("(")[0], span, "--gres gpu count", origin)


def _parse_options(tokens: list[tuple[str, Span | None]], job: SlurmJob, origin: str = "literal") -> int:
    """Apply sbatch options from (text, span) tokens; returns how many tokens were options."""
    i = 0
    while i < len(tokens):
        text, span = tokens[i]
        if text.startswith("--"):
            opt, eq, value = text[2:].partition("=")
            name = _LONG.get(opt)
            if name is None:
                i += 1 if eq or i + 1 >= len(tokens) or tokens[i + 1][0].startswith("-") else 2
                continue
            if eq:
                _apply(job, name, value, span, origin)
                i += 1
            elif name in _FLAG_ONLY:
                _apply(job, name, "", span, origin)
                i += 1
            elif i + 1 < len(tokens):
                _apply(job, name, tokens[i + 1][0], tokens[i + 1][1], origin)
                i += 2
            else:
                i += 1
        elif text.startswith("-") and len(text) >= 2:
            name = _SHORT.get(text[1])
            if len(text) > 2:
                if name:
                    _apply(job, name, text[2:].lstrip("="), span, origin)
                i += 1
            elif i + 1 < len(tokens):
                if name:
                    _apply(job, name, tokens[i + 1][0], tokens[i + 1][1], origin)
                i += 2
            else:
                i += 1
        else:
            return i
    return i


def read_directives(source: SourceFile) -> SlurmJob | None:
    job = SlurmJob()
    found = False
    offset = 0
    for raw in source.text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        stripped = line.strip()
        start = offset
        offset += len(raw.encode("utf-8", "surrogateescape"))
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        found = True
        body = m.group(1).split(" #", 1)[0]
        tokens: list[tuple[str, Span | None]] = []
        for t in re.finditer(r"\S+", body):
            s = start + len(line[: m.start(1) + t.start()].encode("utf-8", "surrogateescape"))
            token = t.group().strip("\"'")
            tokens.append((token, source.span(s, s + len(t.group().encode("utf-8", "surrogateescape")))))
        # the value span of --opt=value points at the value
        refined = []
        for text, span in tokens:
            if text.startswith("--") and "=" in text and span is not None:
                k = text.index("=") + 1
                span = source.span(span.start + k, span.end)
            elif text.startswith("-") and not text.startswith("--") and len(text) > 2 and span is not None:
                span = source.span(span.start + 2, span.end)
            refined.append((text, span))
        _parse_options(refined, job)
    return job if found else None


def apply_options(job: SlurmJob | None, words: list[Word]) -> SlurmJob | None:
    """Options given on the sbatch/salloc command line override the file's directives."""
    tokens = []
    for w in words:
        if w.text is None:
            break
        tokens.append((w.text, w.value_span))
    if not tokens or not tokens[0][0].startswith("-"):
        return job
    job = job if job is not None else SlurmJob()
    _parse_options(tokens, job)
    return job


def _var(name: str, value: Value) -> Var:
    return Var(name, (Piece(str(value.value), value.span, "derived"),), None, True, value.span)


def implied_env(job: SlurmJob) -> dict[str, Var]:
    """The SLURM_* variables sbatch sets from the job's options (sbatch(1), OUTPUT ENVIRONMENT)."""
    env: dict[str, Var] = {}
    if job.nodes is not None and job.nodes.known:
        env["SLURM_NNODES"] = _var("SLURM_NNODES", job.nodes)
        env["SLURM_JOB_NUM_NODES"] = _var("SLURM_JOB_NUM_NODES", job.nodes)
    ntasks = job.ntasks
    if (ntasks is None or not ntasks.known) and job.nodes is not None and job.nodes.known \
            and job.ntasks_per_node is not None and job.ntasks_per_node.known:
        ntasks = Value(job.nodes.value * job.ntasks_per_node.value, job.ntasks_per_node.span, "derived")
    if ntasks is not None and ntasks.known:
        env["SLURM_NTASKS"] = _var("SLURM_NTASKS", ntasks)
        env["SLURM_NPROCS"] = _var("SLURM_NPROCS", ntasks)
    if job.ntasks_per_node is not None and job.ntasks_per_node.known:
        env["SLURM_NTASKS_PER_NODE"] = _var("SLURM_NTASKS_PER_NODE", job.ntasks_per_node)
    if job.gpus_per_node is not None and job.gpus_per_node.known:
        env["SLURM_GPUS_ON_NODE"] = _var("SLURM_GPUS_ON_NODE", job.gpus_per_node)
        if "gpus_per_node" in job.options:
            env["SLURM_GPUS_PER_NODE"] = _var("SLURM_GPUS_PER_NODE", job.gpus_per_node)
    if job.gpus is not None and job.gpus.known:
        env["SLURM_GPUS"] = _var("SLURM_GPUS", job.gpus)
    if job.cpus_per_task is not None and job.cpus_per_task.known:
        env["SLURM_CPUS_PER_TASK"] = _var("SLURM_CPUS_PER_TASK", job.cpus_per_task)
    return env
