"""DeepSpeed hostfiles and the launcher's resource selection (deepspeed/launcher/runner.py, 0.19).

A hostfile line is `host slots=N` (the runner searches `^(\\S+)\\s+slots=(\\d+)`, so trailing text is
fine); blank lines and `#` comments are skipped. `--include/--exclude` pick hosts and slots,
`--num_nodes` keeps the first N hosts (silently all of them when N is larger), `--num_gpus` sets every
host to slots 0..G-1 without checking the hostfile. World size is the sum of the active slots.
The error messages below are DeepSpeed's own.
"""

from __future__ import annotations

import re
from plint.record import field, record

from plint.shell.model import Problem
from plint.source import SourceFile, Span
from plint.values import Value, derived, unresolved

_LINE = re.compile(r"^(\S+)\s+slots=(\d+)")


@record
class Hostfile:
    path: str
    hosts: list[tuple[str, int, Span]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def read_hostfile(source: SourceFile) -> Hostfile:
    out = Hostfile(source.path)
    offset = 0
    seen: set[str] = set()
    for raw in source.text.splitlines(keepends=True):
        start = offset
        offset += len(raw.encode("utf-8", "surrogateescape"))
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.search(raw.rstrip("\r\n").lstrip())
        indent = len(raw) - len(raw.lstrip())
        span = source.span(start + indent, start + len(raw.rstrip("\r\n").encode("utf-8", "surrogateescape")))
        if not m:
            out.problems.append(Problem("hostfile", f"Hostfile contains a bad entry: {line}", span))
            continue
        host, slots = m.group(1), int(m.group(2))
        if host in seen:
            out.problems.append(Problem("hostfile", f"Hostfile contains multiple entries for {host}", span))
            continue
        seen.add(host)
        out.hosts.append((host, slots, span))
    if not out.hosts and not out.problems:
        out.problems.append(Problem("hostfile", "Hostfile is empty or not formatted correctly",
                                    source.span(0, len(source.data))))
    return out


@record
class Resources:
    hosts: list[tuple[str, int]]
    world_size: Value
    nnodes: Value
    gpus_per_node: Value
    problems: list[Problem] = field(default_factory=list)


def _parse_filter(spec: str) -> dict[str, list[int] | None]:
    """`host[:slot[,slot]]@host...` -> {host: slots or None for the whole host}."""
    out: dict[str, list[int] | None] = {}
    for node in spec.split("@"):
        if not node:
            continue
        host, _, slots = node.partition(":")
        out[host] = [int(s) for s in slots.split(",") if s.strip().isdigit()] if slots else None
    return out


def resolve_resources(hostfile: Hostfile | None, include: str | None, exclude: str | None,
                      num_nodes: int | None, num_gpus: int | None, span: Span | None = None) -> Resources:
    problems: list[Problem] = []
    if (num_nodes is not None or num_gpus is not None) and (include or exclude):
        problems.append(Problem("hostfile", "Cannot specify num_nodes/gpus with include/exclude", span))
    if include and exclude:
        problems.append(Problem("hostfile", "include_str and exclude_str are mutually exclusive.", span))
    if hostfile is None:
        if num_nodes is not None and num_nodes > 1:
            problems.append(Problem("hostfile", "Num nodes is >1 but no extra nodes available via hostfile", span))
        if num_gpus is None:
            note = ("no --hostfile and no --num_gpus: the launcher uses /job/hostfile or every local GPU, "
                    "known only at run time")
            return Resources([], unresolved(note, span), derived(1, "no hostfile: one node", span) if not
                             problems else unresolved(note, span), unresolved(note, span), problems)
        hosts = [("localhost", num_gpus)]
    else:
        active: dict[str, list[int]] = {h: list(range(s)) for h, s, _ in hostfile.hosts}
        if include:
            wanted = _parse_filter(include)
            new: dict[str, list[int]] = {}
            for host, slots in wanted.items():
                if host not in active:
                    problems.append(Problem("hostfile", f"Hostname '{host}' not found in hostfile", span))
                    continue
                for s in slots or []:
                    if s not in active[host]:
                        problems.append(Problem("hostfile", f"No slot '{s}' specified on host '{host}'", span))
                new[host] = [s for s in (slots if slots is not None else active[host]) if s in active[host]]
            active = {h: new[h] for h in active if h in new}
        elif exclude:
            for host, slots in _parse_filter(exclude).items():
                if host not in active:
                    problems.append(Problem("hostfile", f"Hostname '{host}' not found in hostfile", span))
                    continue
                if slots is None:
                    active.pop(host)
                else:
                    for s in slots:
                        if s not in active[host]:
                            problems.append(Problem("hostfile", f"No slot '{s}' specified on host '{host}'", span))
                    active[host] = [s for s in active[host] if s not in slots]
                    if not active[host]:
                        active.pop(host)
        if num_nodes is not None and num_nodes > 0:
            active = dict(list(active.items())[:num_nodes])
        if num_gpus is not None and num_gpus > 0:
            active = {h: list(range(num_gpus)) for h in active}
        hosts = [(h, len(s)) for h, s in active.items()]
    world = sum(s for _, s in hosts)
    per_node = {s for _, s in hosts}
    where = f"hostfile {hostfile.path}" if hostfile is not None else "--num_gpus"
    return Resources(
        hosts,
        derived(world, f"world size = sum of slots over {len(hosts)} host(s) ({where})", span),
        derived(len(hosts), f"{len(hosts)} active host(s) ({where})", span),
        derived(per_node.pop(), f"slots per host ({where})", span) if len(per_node) == 1 else
        Value(None, span, "derived", f"hosts have different slot counts: {sorted(per_node)}"),
        problems,
    )
