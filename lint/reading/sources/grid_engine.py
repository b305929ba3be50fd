"""Grid Engine (Sun, Univa and Altair Grid Engine, Son of Grid Engine): `#$` directives, and what a batch job's
script sees of its hosts.

- Directives: qsub parses every line of a job script whose first two characters are `#$` (the default prefix)
  for its options (gridengine 6.2 qsub(1), DESCRIPTION; `-C` names another prefix, which plint does not follow).
- NHOSTS: "the number of hosts in use by a parallel job", set in every job's environment (qsub(1),
  ENVIRONMENTAL VARIABLES). Grid Engine alone does not say how a slot request spreads over hosts, so plint
  knows it only where a site's resource type is a whole node and `-l TYPE=N` asks for N of them:
  ABCI 2.0's rt_F and rt_AF and TSUBAME 3.0's f_node and TSUBAME 4.0's node_f, the sites' full-node resource
  types (docs.abci.ai/en/job-execution/, "Job Execution Resource"; the TSUBAME user guides), as their users' job
  scripts read them: `NUM_NODES=$NHOSTS` in 268 of the 585 Grid Engine scripts (`#$ -l ...`) of the corpus
  mirrors. ABCI's job environment names the type in SGE_RESOURCE_TYPE, on which those scripts branch for the GPUs of
  a node (`if [[ "$SGE_RESOURCE_TYPE" == "rt_AF" ]]; then NUM_GPU_PER_NODE=8`).
"""

from __future__ import annotations

from plint.reading.shell.model import Piece, Problem, Var, Word
from plint.record import field, record
from plint.source import SourceFile, Span
from plint.values import NumberTooLong, parse_int

PREFIX = "#$"
# resource types of one whole node each, and the system whose types they are
WHOLE_NODE_TYPES = {"rt_F": "ABCI", "rt_AF": "ABCI", "f_node": "TSUBAME 3.0", "node_f": "TSUBAME 4.0"}


@record
class GridEngineJob:
    resource_type: str | None = None  # the last `-l TYPE=N` of a whole-node type or of ABCI's rt_* types
    nodes: int | None = None  # N of a whole-node type
    span: Span | None = None  # where the request is written
    problems: list[Problem] = field(default_factory=list)


def read_directives(source: SourceFile) -> GridEngineJob | None:
    """The job a batch script's `#$` lines ask for; None without any."""
    from plint.reading.sources.slurm import directive_words

    job: GridEngineJob | None = None
    offset = 0
    for raw in source.text.splitlines(keepends=True):
        start = offset
        offset += len(raw.encode("utf-8", "surrogateescape"))
        line = raw.rstrip("\r\n")
        if not line.startswith(PREFIX):
            continue
        job = job or GridEngineJob()
        words, error = directive_words(source, start, line, len(PREFIX))
        if error:
            job.problems.append(Problem("syntax", f"qsub: {error}", source.span(start, start + len(line))))
        _apply(job, words)
    return job


def _apply(job: GridEngineJob, words: list[Word]) -> None:
    """`-l name=value[,name=value]` resource requests of one directive line."""
    for i, word in enumerate(words[:-1]):
        if word.text != "-l":
            continue
        for resource in (words[i + 1].text or "").split(","):
            name, _, count = resource.partition("=")
            if name in WHOLE_NODE_TYPES or name.startswith("rt_"):
                job.resource_type, job.span = name, words[i + 1].site
                job.nodes = _count(count) if name in WHOLE_NODE_TYPES else None


def _count(text: str) -> int | None:
    if not text.isdigit():
        return None
    try:
        return parse_int(text)
    except NumberTooLong:
        return None


def implied_env(job: GridEngineJob | None) -> dict[str, Var]:
    """NHOSTS for N whole nodes, and ABCI's SGE_RESOURCE_TYPE for an rt_* request."""
    if job is None or job.resource_type is None:
        return {}
    env: dict[str, Var] = {}
    if job.nodes is not None:
        env["NHOSTS"] = Var("NHOSTS", (Piece(str(job.nodes), job.span, "derived"),), None, True)
    if job.resource_type.startswith("rt_"):
        env["SGE_RESOURCE_TYPE"] = Var(
            "SGE_RESOURCE_TYPE", (Piece(job.resource_type, job.span, "derived"),), None, True
        )
    return env
