"""DeepSpeed hostfiles and the launcher's choice of hosts and slots, as `deepspeed/launcher/runner.py`
(DeepSpeed 0.19.8, installed) does it; reference/deepspeed.md §3.2-3.3.

A hostfile line is `host slots=N`, matched with `^(\\S+)\\s+slots=(\\d+)` on the stripped line (so trailing
text is fine); blank lines and `#` comments are skipped; the first bad line stops the launcher. Resources are
then narrowed in the runner's order: `--include`/`--exclude` (`host[:slot,slot][@host...]`), then
`--num_nodes` (the first N hosts, all of them when N is larger) and `--num_gpus` (slots 0..G-1 on every host,
whatever the hostfile says). World size is the sum of the active slots. Each Problem carries the message
DeepSpeed raises; the first one ends resolution, as the exception does.
"""

from __future__ import annotations

import re
from contextvars import ContextVar

from plint.bounds import count_problem
from plint.reading.scoped import scoped
from plint.record import field, record
from plint.reading.shell.model import MARKER, MappedText, Piece, Problem
from plint.source import SourceFile, Span, display_path
from plint.values import NumberTooLong, Value, derived, parse_int, unresolved

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from typing import Sequence

# [tool.plint] gpus-per-node of the check under way (plint.checking.check sets it around each file's reading):
# the GPUs of the launching node, which DeepSpeed counts at run time when nothing on the command line does
_CONFIGURED_GPUS_PER_NODE: ContextVar[int | None] = ContextVar("plint_configured_gpus_per_node", default=None)
GPUS_PER_NODE_SETTING = "[tool.plint] gpus-per-node"


def configured_gpus_per_node(count: int | None) -> AbstractContextManager[None]:
    return scoped(_CONFIGURED_GPUS_PER_NODE, count)


def configured_count() -> int | None:
    """[tool.plint] gpus-per-node of the check under way, None when not set."""
    return _CONFIGURED_GPUS_PER_NODE.get()


_LINE = re.compile(r"^(\S+)\s+slots=(\d+)")
# `host slots=N` whose N the script wrote from one word known only at run time (`$(ssh $h nvidia-smi -L | wc -l)`)
_RUN_TIME_SLOTS = re.compile(f"^(\\S+)\\s+slots={MARKER}\\d+{MARKER}(?:\\s|$)")
_TAIL = ", unable to proceed with launching"


@record
class Hostfile:
    path: str
    hosts: list[tuple[str, int | None, Span]] = field(default_factory=list)  # slots None: known at run time
    problems: list[Problem] = field(default_factory=list)
    # why the hosts cannot be counted (a file the script writes from text known only at run time), else None
    uncounted: str | None = None
    # why its hosts are told apart only by assumption (a PBS node file's chunks under free placement), else None
    assumed: str | None = None
    # how it was found when not where the script's folder puts it (above the script, where the script is assumed to
    # be run from: plint.reading.file_lookup.FileLookup.config), else None: every count read from it is assumed
    found_above: str | None = None


# A job's host (a PBS node file's chunk, plint.reading.sources.pbs.node_file; a Slurm node, `scontrol show
# hostnames`): one word, the same for every line that names it, written into a hostfile as this stand-in so that
# the runner's reading counts and compares hosts by the part of the job they are the host of
_JOB_HOST = re.compile(f"{MARKER}(chunk|node)-(\\d+)-host{MARKER}")


def with_chunk_hosts(content: MappedText) -> tuple[MappedText, str | None]:
    """`content` with each job host word as its stand-in name, and why two PBS chunks' hosts are taken for
    different only by assumption (no place=scatter), else None."""
    from plint.reading.shell.lines import chunk_host

    pieces, shared = [], set()
    for piece in content.pieces:
        host = chunk_host(piece)
        if host is None:
            pieces.append(piece)
            continue
        if host[1]:
            shared.add(host[0])
        part, index = host[0].split(" ")
        pieces.append(Piece(f"{MARKER}{part}-{index}-host{MARKER}", piece.span, "derived"))
    why = (
        "one host a chunk, as PBS places whole-node chunks; without place=scatter two chunks may share one"
        if len(shared) > 1
        else None
    )
    return MappedText(pieces), why


def shown(text: str) -> str:
    """A hostfile line or host as a message names it: a job host's stand-in as the host of that chunk or node."""
    return _JOB_HOST.sub(lambda m: f"<the host of the job's {m.group(1)} {m.group(2)}>", text)


def uncounted(content: MappedText) -> str | None:
    """Why the lines of a hostfile the script writes cannot be counted: an unknown piece that may hold several
    words or lines (a loop's variable, the output of `scontrol show hostnames`), else None. A piece known to be
    one word (a host name: the output of `hostname`, $SLURMD_NODENAME) keeps its line one host; two such names
    may be the same host, which the runner refuses (`_parse_hostfile`: multiple entries)."""
    names, line_start = 0, True
    for piece in content.pieces:
        if piece.known:
            text = piece.text or ""
            line_start = text.rsplit("\n", 1)[-1].strip() == "" if "\n" in text else line_start and not text.strip()
            continue
        if not piece.one_word:
            return piece.reason or "text known only at run time"
        names += line_start  # a line's first word is its host; a word after it (slots=N) names none
        line_start = False
    return "host names known only at run time, which may repeat" if names > 1 else None


def read_hostfile(source: SourceFile) -> Hostfile:
    """runner.py `_parse_hostfile`: hosts in file order, or the one error the runner raises. A line the script
    writes from unknown text (rendered with MARKER) that is no `host slots=N` is left uncounted, not refused."""
    out = Hostfile(source.path)
    offset = 0
    seen: set[str] = set()  # a set: a 4 MiB hostfile has 200,000 lines
    for raw in source.text.splitlines(keepends=True):
        start = offset
        offset += len(raw.encode("utf-8", "surrogateescape"))
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip())
        b0 = start + len(raw[:indent].encode("utf-8", "surrogateescape"))
        span = source.span(b0, b0 + len(line.encode("utf-8", "surrogateescape")))
        m = _LINE.search(line)
        run_time = None if m else _RUN_TIME_SLOTS.search(line)
        if run_time is not None and MARKER in _JOB_HOST.sub("", run_time.group(1)):
            run_time = None  # its host is text known only at run time too
        if not m and run_time is None and MARKER in _JOB_HOST.sub("", line):  # a line known only at run time
            out.uncounted = out.uncounted or "a line known only at run time"
            continue
        if not m and run_time is None:
            out.problems.append(Problem("hostfile", f"Hostfile contains a bad entry: {shown(line)}{_TAIL}", span))
            return out
        host = (m or run_time).group(1)  # type: ignore[union-attr]
        if host in seen:
            said = f"Hostfile contains multiple entries for {shown(host)}{_TAIL}"
            out.problems.append(Problem("hostfile", said, span))
            return out
        slots: int | None = None  # a count written at run time
        if m is not None:
            try:
                slots = parse_int(m.group(2))
            except NumberTooLong as exc:
                out.problems.append(Problem("invalid-value", f"{host} slots is {exc}", span))
                return out
            too_many = count_problem(f"{host} slots", slots)
            if too_many is not None:  # never a list of 10**8 slot ids
                out.problems.append(Problem("invalid-value", too_many, span))
                return out
        seen.add(host)
        out.hosts.append((host, slots, span))
    if not out.hosts and out.uncounted is None:
        out.problems.append(
            Problem(
                "hostfile", f"Hostfile is empty or not formatted correctly{_TAIL}.", source.span(0, len(source.data))
            )
        )
    return out


@record
class Resources:
    # active hosts in rank order with their slot count (None: the local GPU count, known only at run time)
    hosts_and_slots: list[tuple[str, int | None]]
    world_size: Value
    nnodes: Value
    gpus_per_node: Value
    problems: list[Problem] = field(default_factory=list)
    multi_node: bool = False  # the runner launches through pdsh/mpirun/srun rather than locally


class _Refused(Exception):
    """The runner raises: `args[0]` is its message."""


def _node_configs(spec: str) -> dict[str, list[int]]:
    """`parse_node_config_list`: `host[:s,s]@host...` -> {host: sorted unique slots}; a repeated host merges."""
    out: dict[str, list[int]] = {}
    for node in spec.split("@"):
        if ":" in node:
            parts = node.split(":")
            if len(parts) != 2:
                raise _Refused(f"too many values to unpack (expected 2, got {len(parts)})")
            host, slots_text = parts
            slots = []
            for s in slots_text.split(","):
                try:
                    slots.append(parse_int(s))
                except NumberTooLong as exc:
                    raise _Refused(f"slot {exc}") from None
                except ValueError:
                    raise _Refused(
                        f"slot {s!r} of {node!r} is no number (the runner's int() refuses it: invalid literal for "
                        f"int() with base 10: {s!r})"
                    ) from None
        else:
            host, slots = node, []
        out[host] = sorted(set(out.get(host, []) + slots))
    return out


def include_as_hostfile(include: str | None, where: str, span: Span | None) -> Hostfile | None:
    """An --include that names slots on every host (`worker-0:0,1@worker-1:0,1`) decides the active
    resources whatever the unread hostfile holds: runner.py `parse_resource_filter` keeps exactly those
    slots, or stops ('not found in hostfile'). A hostfile of just those hosts reads the same; None when a
    host takes all its slots (`worker-0`), which only the real file knows."""
    if not include:
        return None
    try:
        nodes = _node_configs(include)
    except _Refused:
        return None
    if not nodes or any(not slots for slots in nodes.values()):
        return None
    return Hostfile(where, [(host, max(slots) + 1, span) for host, slots in nodes.items()])  # type: ignore[misc]


def _filter(pool: dict[str, Sequence[int] | None], include: str, exclude: str) -> dict[str, Sequence[int] | None]:
    """`parse_resource_filter` over {host: slot ids (None: unknown local GPU count)}."""
    if include and exclude:
        raise _Refused("include_str and exclude_str are mutually exclusive.")
    if not include and not exclude:
        return pool
    chosen: dict[str, Sequence[int] | None] = {} if include else dict(pool)  # ranges stay ranges
    for host, slots in _node_configs(include or exclude).items():
        if host not in pool:
            raise _Refused(f"Hostname '{host}' not found in hostfile")
        available = pool[host]
        if slots:
            for slot in slots:
                if available is not None and slot not in available:
                    raise _Refused(f"No slot '{slot}' specified on host '{host}'")
            if include:
                chosen[host] = slots
            else:
                current = chosen[host]
                chosen[host] = None if current is None else [s for s in current if s not in slots]
        else:
            chosen[host] = available if include else []
    return {h: chosen[h] for h in pool if h in chosen and chosen[h] != []}


def resolve_resources(
    hostfile: Hostfile | None,
    include: str | None,
    exclude: str | None,
    num_nodes: int | None,
    num_gpus: int | None,
    span: Span | None = None,
    *,
    visible_devices: str | None = None,
    launcher: str | None = None,
    no_ssh: bool = False,
    node_rank: int | None = None,
) -> Resources:
    """runner.py `main` from the hostfile to the active resources. Absent options are None (DeepSpeed's -1 / "").
    `visible_devices` is CUDA_VISIBLE_DEVICES as the launcher sees it, when known."""
    include, exclude = include or "", exclude or ""
    nodes = -1 if num_nodes is None else num_nodes
    gpus = -1 if num_gpus is None else num_gpus
    # a file the script writes under a folder it computed ($(cd "$(dirname "$0")" && pwd)) is named as a checked
    # file is, relative to the working directory, not by this checkout's absolute path
    where = f"hostfile {display_path(hostfile.path)}" if hostfile is not None else "no hostfile: the local node"
    try:
        if hostfile is not None and hostfile.problems:
            raise _Refused(hostfile.problems[0].message)
        for option, count in (("--num_nodes", nodes), ("--num_gpus", gpus)):
            too_many = count_problem(option, count)
            if too_many is not None:
                return Resources(
                    [],
                    unresolved(too_many, span),
                    unresolved(too_many, span),
                    unresolved(too_many, span),
                    [Problem("invalid-value", too_many, span)],
                )
        pool: dict[str, Sequence[int] | None]  # slot ids: a range per host, never a list per GPU
        if hostfile is None and visible_devices and not (include or exclude or nodes > 1 or gpus > 0):
            include = f"localhost:{visible_devices}"  # the runner turns CUDA_VISIBLE_DEVICES into --include
            where = "CUDA_VISIBLE_DEVICES on the local node"
        if (nodes >= 0 or gpus >= 0) and (include or exclude):
            raise _Refused("Cannot specify num_nodes/gpus with include/exclude")
        if hostfile is None:
            # every local GPU: device_count() at run time, which the configuration may state where nothing
            # narrows it (CUDA_VISIBLE_DEVICES, --include/--exclude, --num_gpus keep their own reading)
            local = None if include or exclude or gpus > 0 else _CONFIGURED_GPUS_PER_NODE.get()
            pool = {"localhost": range(local) if local else None}
            if local:
                where += f" with {local} GPUs ({GPUS_PER_NODE_SETTING})"
            if nodes > 1:
                raise _Refused("Num nodes is >1 but no extra nodes available via hostfile")
        else:
            pool = {h: range(s) if s is not None else None for h, s, _ in hostfile.hosts}
        active = _filter(pool, include, exclude)
        if nodes > 0:
            active = dict(list(active.items())[:nodes])
        if gpus > 0:
            active = {h: range(gpus) for h in active}
        if launcher == "slurm":
            _slurm_backend_check(active)
        if no_ssh and node_rank is not None and not 0 <= node_rank < len(active):
            raise _Refused("Launching training without ssh, but --node_rank is not set correctly.")
    except _Refused as refused:
        note = f"DeepSpeed refuses the resources: {refused.args[0]}"
        kind = (
            hostfile.problems[0].kind
            if hostfile is not None and hostfile.problems
            else "unresolved"
            if hostfile is not None and hostfile.found_above is not None  # a guessed file refused: nothing known
            else "hostfile"
        )
        problem = Problem(
            kind, refused.args[0], span if hostfile is None or not hostfile.problems else hostfile.problems[0].span
        )
        return Resources([], unresolved(note, span), unresolved(note, span), unresolved(note, span), [problem])
    hosts = [(h, len(s) if s is not None else None) for h, s in active.items()]
    multi = len(hosts) > 1 and not no_ssh
    assumed = hostfile.assumed if hostfile is not None and len(hosts) > 1 else None
    if hostfile is not None and hostfile.found_above is not None:
        assumed = hostfile.found_above if assumed is None else f"{hostfile.found_above}; {assumed}"
    unknown_slots = (
        _LOCAL_GPUS
        if hostfile is None
        else f"the slots of {where}, written from text known only at run time (--num_gpus G would say)"
    )
    return Resources(
        hosts,
        _assumed(_world(hosts, where, span, unknown_slots), assumed),
        _assumed(derived(len(hosts), f"{len(hosts)} active host(s) ({where})", span), assumed),
        _assumed(_per_node(hosts, where, span, unknown_slots), hostfile.found_above if hostfile is not None else None),
        [],
        multi,
    )


def _assumed(value: Value, why: str | None) -> Value:
    """A count that rests on telling hosts apart by assumption is assumed, and says which."""
    if why is None or not value.known:
        return value
    return Value(value.value, value.span, "assumed", f"{value.note}; {why}" if value.note else why)


def _slurm_backend_check(active: dict[str, Sequence[int] | None]) -> None:
    """multinode_runner.py SlurmRunner.validate_active_resources (0.19.8)."""
    counts = set()
    for host, slots in active.items():
        if slots is None:
            continue
        if not all(s == i for i, s in enumerate(slots)):
            raise _Refused(
                f"slurm backend cannot select specific device ids, got {slots} on {host}. Filter whole "
                "hosts, or keep the first N slots on every host."
            )
        counts.add(len(slots))
    if len(counts) > 1:
        raise _Refused(
            "slurm backend needs the same slot count on every host, got "
            f"{ {h: len(s) for h, s in active.items() if s is not None} }."
        )


# the words that mark a count of "every GPU of the launching node" (normalise may assume the node's size)
EVERY_LOCAL_GPU = "DeepSpeed uses every GPU of the launching node"
_LOCAL_GPUS = (
    f"no --hostfile (nor /job/hostfile) and no --num_gpus/--include: {EVERY_LOCAL_GPU}, known only at "
    f"run time ({GPUS_PER_NODE_SETTING} = N states it)"
)


def _world(hosts: list[tuple[str, int | None]], where: str, span: Span | None, unknown_slots: str) -> Value:
    if any(s is None for _, s in hosts):
        return unresolved(unknown_slots, span)
    total = sum(s for _, s in hosts)  # type: ignore[misc]
    parts = " + ".join(str(s) for _, s in hosts) if len(hosts) <= 16 else f"{len(hosts)} hosts' "
    how = (
        f"{parts} slots" if len(hosts) > 1 else f"{total} slot(s) on {_host_name(hosts[0][0])}" if hosts else "no host"
    )
    return derived(total, f"world size = {how} ({where})", span)


def _host_name(host: str) -> str:
    """A host as a note names it: a name written from run-time text (`$(hostname)`) has no text to show."""
    if _JOB_HOST.fullmatch(host):
        return shown(host)
    return "a host named at run time" if MARKER in host else host


def _per_node(hosts: list[tuple[str, int | None]], where: str, span: Span | None, unknown_slots: str) -> Value:
    counts = {s for _, s in hosts}
    if None in counts:
        return unresolved(unknown_slots, span)
    if len(counts) == 1:
        return derived(counts.pop(), f"slots per host ({where})", span)
    shown = sorted(c for c in counts if c is not None)
    return Value(None, span, "derived", f"hosts use different slot counts {shown} ({where})")


# ---- a hostfile plint cannot read --------------------------------------------------------------------
# runner.py `parse_args`: --hostfile defaults to DLTS_HOSTFILE = "/job/hostfile"; `fetch_hostfile` returns None
# when the file is missing, and `main` then runs on the local accelerators (device_count()). Whether
# /job/hostfile exists is a fact of the machine the job starts on, never of the repository.
DEFAULT_HOSTFILE = "/job/hostfile"
LOCAL_ASSUMED = (
    f"no --hostfile: DeepSpeed reads {DEFAULT_HOSTFILE} when that file exists on the launching "
    "machine, else it runs on the local node; plint assumes one node (name a --hostfile, or give "
    "--num_nodes, to say otherwise)"
)


def unread_resources(where: str, nodes: Value | None, gpus: Value | None, span: Span | None) -> Resources:
    """Resources from a hostfile plint cannot read (not in the repository, a path known at run time only, or the
    runner's default): `main` keeps the first --num_nodes hosts and gives every host --num_gpus slots, so those
    two decide the size, assuming the file lists at least --num_nodes hosts. `nodes`/`gpus` are the options'
    values (None when not given)."""
    if nodes is not None and nodes.known and nodes.value <= 0:
        nodes = None  # runner.py filters on num_nodes > 0 only
    if gpus is not None and gpus.known and gpus.value <= 0:
        gpus = None
    if nodes is None:
        nnodes = unresolved(
            f"the number of hosts in {where}, which plint cannot read (--num_nodes N would say; "
            "DeepSpeed runs on the local GPUs when the file is missing)",
            span,
        )
    elif not nodes.known:
        nnodes = nodes
    elif nodes.value == 1:  # one host of the file, or the local node when the file is missing: one node either way
        nnodes = Value(1, nodes.span, nodes.origin, f"deepspeed --num_nodes 1: one host of {where}")
    else:
        n = nodes.value
        nnodes = Value(
            n,
            nodes.span,
            "assumed",
            f"deepspeed --num_nodes {n}: the first {n} hosts of {where}, which plint cannot read, assumed "
            f"to list at least {n} (with fewer DeepSpeed uses them all; with none it stops: Num nodes is "
            ">1 but no extra nodes available via hostfile)",
        )
    if gpus is None:
        per = unresolved(f"the slots per host in {where}, which plint cannot read (--num_gpus G would say)", span)
    elif not gpus.known:
        per = gpus
    else:
        per = Value(
            gpus.value,
            gpus.span,
            gpus.origin,
            f"deepspeed --num_gpus {gpus.value}: slots 0..{gpus.value - 1} on every host, whatever the hostfile says",
        )
    if nnodes.known and per.known:
        world = Value(
            nnodes.value * per.value,
            nnodes.span,
            "assumed" if nnodes.origin == "assumed" else "derived",
            f"world size = {nnodes.value} hosts * {per.value} slots (--num_nodes, --num_gpus)",
        )
    else:
        world = unresolved(
            "needs " + "; ".join(dict.fromkeys(v.note or "" for v in (nnodes, per) if not v.known)), span
        )
    return Resources([], world, nnodes, per, [], multi_node=bool(nnodes.known and nnodes.value > 1))


def assume_local_node(res: Resources) -> Resources:
    """Resources resolved on the local node for a launch that names no hostfile: the node count, and a world size
    counted on it, are plint's assumption that /job/hostfile is missing, never a reading."""
    if res.problems or not res.nnodes.known:
        return res
    nnodes = Value(res.nnodes.value, res.nnodes.span, "assumed", LOCAL_ASSUMED)
    world = res.world_size
    if world.known:
        world = Value(
            world.value,
            world.span,
            "assumed",
            f"{world.note}, on the one node plint assumes (no --hostfile: {DEFAULT_HOSTFILE} may name more)",
        )
    per = res.gpus_per_node  # --num_gpus makes it a reading again (the caller points at the option)
    if per.known:
        per = Value(
            per.value,
            per.span,
            "assumed",
            f"{per.note}, on the one node plint assumes (no --hostfile: {DEFAULT_HOSTFILE} may name more)",
        )
    return Resources(res.hosts_and_slots, world, nnodes, per, res.problems, res.multi_node)
