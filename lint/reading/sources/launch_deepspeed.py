"""The `deepspeed` launcher: its options, and the nodes and GPUs its hostfile, --include/--exclude
and CUDA_VISIBLE_DEVICES give it."""

from __future__ import annotations

import os

from plint.reading.shell.files import path_key, resolve_path
from plint.reading.shell.model import Command, Problem, ShellResult
from plint.source import SourceFile, Span, display_path
from plint.values import Value, derived, from_word, parse_int, unresolved
from plint.reading.sources.launch_calls import (
    LauncherCall,
    finish_call,
    grammar_of,
    hidden_by_unknown,
    scan_options,
    var_value,
)
from plint.root import WIDEN_HINT, note_for

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from plint.reading.loading import Unread


# deepspeed/launcher/runner.py parse_args (deepspeedai/DeepSpeed edaa72212): options with a value, then switches;
# the elastic ones since 1ed5aa96a (2022-07-29, "Elastic Training support")
DEEPSPEED = grammar_of(
    """--hostfile|-H --include|-i --exclude|-e --num_nodes --min_elastic_nodes --max_elastic_nodes
    --num_gpus|--num_accelerators --master_port --master_addr --node_rank --launcher --launcher_args
    --enable_each_rank_log --autotuning --bind_core_list --ssh_port --venv_script --log_level""",
    """--module --no_python --no_local_rank --no_ssh --no_ssh_check --force_multi --save_pid --elastic_training
    --bind_cores_to_rank --quiet|-q --help|-h""",
)


def deepspeed_call(command: Command, start: int) -> LauncherCall:
    scan = scan_options(command.words, start, DEEPSPEED)
    call = finish_call(LauncherCall("deepspeed", command, scan.options), scan)
    call.is_module = call.flag("--module")
    hostfile = call.option("--hostfile")
    call.hostfile = from_word(hostfile, str, "--hostfile") if hostfile is not None else None
    addr = call.option("--master_addr")
    call.master_addr = from_word(addr, str, "--master_addr") if addr is not None else None
    rank = call.option("--node_rank")
    call.node_rank = from_word(rank, parse_int, "--node_rank") if rank is not None else None
    port = call.option("--master_port")
    call.master_port = from_word(port, parse_int, "--master_port") if port is not None else None
    return call


def _not_read(result: ShellResult | None, name: str, why_unread: Callable[[str], Unread | None] | None) -> str | None:
    """Why a file the launch names, and that is there, is not read (outside the root, too large, not a
    regular file: the lookup's `why_unread`, else plint.root's note), else None."""
    if why_unread is None:
        return _outside(result, name)
    why = why_unread(name)
    return why.reason if why is not None else None


def _outside(result: ShellResult | None, name: str) -> str | None:
    """plint.root's note when the file a launch names (against the script's folder) lies outside the
    root of the check, else None."""
    if result is None:
        return None

    note = note_for(os.path.join(os.path.dirname(os.path.abspath(result.source.path)), name))
    return f"{note} ({WIDEN_HINT})" if note is not None else None


def read_deepspeed_resources(
    call: LauncherCall,
    read_file: Callable[[str], SourceFile | None],
    problems: list[Problem],
    result: ShellResult | None = None,
    why_unread: Callable[[str], Unread | None] | None = None,
    read_config: Callable[[str], tuple[SourceFile | None, str | None]] | None = None,
) -> None:
    """Nodes, slots per node and world size as deepspeed/launcher/runner.py `main` computes them (plint.reading.sources.
    hostfile). A hostfile plint cannot read leaves --num_nodes / --num_gpus to decide; no --hostfile means the
    runner's /job/hostfile, whose existence only the launching machine knows. `why_unread`: why a named file
    that is there is not read (plint.reading.file_lookup.FileLookup.unread)."""
    from plint.reading.sources.hostfile import (
        assume_local_node,
        include_as_hostfile,
        resolve_resources,
        unread_resources,
    )

    def unknown(note: str, span: Span | None) -> None:
        call.world_size = call.nnodes = call.nproc_per_node = unresolved(note, span)

    hidden = hidden_by_unknown(call, "--hostfile/--num_gpus")
    if hidden is not None:
        return unknown(hidden.note or "", hidden.span)
    texts: dict[str, str | None] = {}
    numbers: dict[str, int | None] = {}
    sizes: dict[str, Value | None] = {}  # --num_nodes / --num_gpus, known or not
    for name in ("--include", "--exclude", "--num_nodes", "--num_gpus", "--launcher", "--node_rank"):
        w = call.option(name)
        v = from_word(w, parse_int, f"deepspeed {name}") if w is not None else None
        if name in ("--num_nodes", "--num_gpus"):
            sizes[name] = v
            if v is not None and not v.known:
                continue  # the size it sets is unknown; the rest of the resources may still be read
        elif w is not None and v is not None and not w.known:
            return unknown(f"deepspeed {name}: {v.note}", w.value_span)
        texts[name] = w.text if w is not None else None
        if name in ("--num_nodes", "--num_gpus", "--node_rank") and w is not None and v is not None:
            if not v.known:
                return unknown(f"deepspeed {name} {w.text!r} is not a number", w.value_span)
            numbers[name] = v.value
    selection = texts["--include"] or texts["--exclude"]
    # provenance: the hostfile named, else --num_gpus, else the launcher word
    chosen = call.option("--hostfile") or call.option("--num_gpus")
    span = chosen.value_span if chosen is not None else call.command.words[0].site
    hostfile, unread = _hostfile(
        call,
        read_config or (lambda name: (read_file(name), None)),
        result,
        numbers.get("--num_nodes"),
        sizes["--num_nodes"],
        selection,
        why_unread,
    )
    slots: set[int] = set()  # what every line of a hostfile plint cannot count says
    if hostfile is not None and hostfile.uncounted is not None and not hostfile.problems:
        slots, unread, hostfile = {s for _, s, _ in hostfile.hosts if s is not None}, hostfile.uncounted, None
    if unread is not None and texts["--include"] and not texts["--exclude"]:
        hostfile = include_as_hostfile(texts["--include"], unread, span)
        unread = None if hostfile is not None else unread
    if unread is not None:
        if selection:
            return unknown(
                f"deepspeed --include/--exclude select hosts of {unread}, which plint cannot read",
                call.hostfile.span if call.hostfile is not None else span,
            )
        res = unread_resources(unread, sizes["--num_nodes"], sizes["--num_gpus"], span)
        if len(slots) == 1 and sizes["--num_gpus"] is None:
            (n,) = slots
            res.gpus_per_node = derived(n, f"slots={n} on every line of {unread}", span)
    else:
        res = resolve_resources(
            hostfile,
            texts["--include"],
            texts["--exclude"],
            numbers.get("--num_nodes"),
            numbers.get("--num_gpus"),
            span,
            visible_devices=_visible_devices(call.command),
            launcher=(texts["--launcher"] or "").lower() or None,
            no_ssh=call.flag("--no_ssh"),
            node_rank=numbers.get("--node_rank"),
        )
        if hostfile is None and numbers.get("--num_nodes") == 1:  # one node, whichever file the runner reads
            w = call.option("--num_nodes")
            assert w is not None  # its number was read above
            res.nnodes = (
                Value(1, w.value_span, w.origin, "deepspeed --num_nodes 1: one node")
                if res.nnodes.known
                else res.nnodes
            )
        elif hostfile is None:
            res = assume_local_node(res)
        nodes = sizes["--num_nodes"]
        if nodes is not None and not nodes.known:  # `--num_nodes=$NODES` over a hostfile plint reads
            res.nnodes = nodes
            res.world_size = unresolved(f"needs --num_nodes: {nodes.note}", nodes.span)
    problems.extend(res.problems)
    _set_resources(call, res)


def _hostfile(
    call: LauncherCall,
    read_file: Callable[[str], tuple[SourceFile | None, str | None]],
    result: ShellResult | None,
    num_nodes: int | None,
    nodes: Value | None,
    selection: str | None,
    why_unread: Callable[[str], Unread | None] | None = None,
):
    """(the hostfile read, None) or (None, the hostfile the runner reads when plint cannot, or None when the
    runner reads none: one local node)."""
    from plint.reading.sources.hostfile import DEFAULT_HOSTFILE, read_hostfile, uncounted, with_chunk_hosts

    unread: str | None = None
    found_above: str | None = None
    # the files the script had written when this launch ran (Command.files), not a later job's under the same name
    files = call.command.files if call.command.files is not None else (result.virtual_files if result else {})
    if call.hostfile is not None:
        word = call.option("--hostfile")
        if not call.hostfile.known:
            # a path with unknown parts still names the file the script wrote under that name (the
            # evaluator keys such virtual files by the path's rendering, unknown parts as ${NAME})
            written = _written_under(files, word.display(), result) if word is not None else None
            src = SourceFile(written.path, written.content.render()) if written is not None else None
            shown = word.display() if word is not None else ""
            unread = f"the hostfile {shown} ({call.hostfile.note})"
            if src is None and word is not None:
                src, found_above = _under_unknown_folder(word, read_file)
        else:
            # a relative hostfile is read from where the script is run, like the DeepSpeed config (file_lookup.FileLookup)
            src, found_above = read_file(call.hostfile.value)
            key = resolve_path(result, call.hostfile.value) if result is not None else None
            written = files.get(key) if key is not None else None
            shown = call.hostfile.value
            why = _not_read(result, call.hostfile.value, why_unread) if src is None else None
            unread = (
                f"the hostfile {call.hostfile.value} ({why})"
                if why is not None
                else f"the hostfile {call.hostfile.value} (neither in the repository nor written by the script)"
            )
        if src is not None:
            content, assumed = with_chunk_hosts(written.content) if written is not None else (None, None)
            if content is not None:  # a file the script wrote: its PBS node-file hosts counted by chunk
                src = SourceFile(src.path, content.render())
            hostfile = read_hostfile(src)
            hostfile.assumed = assumed
            hostfile.found_above = found_above
            # a file guessed to be the one the run reads: what is wrong with it leaves the counts unknown, no error
            if found_above is not None:
                hostfile.problems = [
                    Problem("unresolved", f"{p.message} ({found_above})", p.span) for p in hostfile.problems
                ]
            if written is not None and written.written_by is None and word is not None:
                # a file the environment gives (PBS's node file): its lines are nowhere to point at, the option is
                hostfile.problems = [
                    Problem(p.kind, p.message + _NODE_FILE_HINT, word.value_span) for p in hostfile.problems
                ]
            why = uncounted(content) if content is not None else hostfile.uncounted
            if why is not None:  # its lines may hold several hosts each: only their slots are read
                hostfile.uncounted = f"the hostfile {shown}, written by the script from text known at run time ({why})"
            return hostfile, None
    elif (num_nodes or 0) > 1 or (nodes is not None and not nodes.known):
        unread = f"{DEFAULT_HOSTFILE} (the runner's default --hostfile)"  # several nodes: the author relies on it
    elif selection and any(h.split(":")[0] != "localhost" for h in selection.split("@")):
        unread = f"{DEFAULT_HOSTFILE} (the runner's default --hostfile)"  # --include names its hosts
    return None, unread


def _under_unknown_folder(word, read_file) -> tuple[SourceFile | None, str | None]:
    """`--hostfile $LLM_DK_DIR/repo/examples/hostfile`: the file at the tail of the path's known end that is a file of
    the checked tree, and the note saying that plint assumed so (as for a script run under such a folder)."""
    suffix = word.under_unknown_folder()
    src = read_file(suffix)[0] if suffix is not None else None
    if src is None or suffix is None:
        return None, None
    shown = word.display()
    prefix = shown[: len(shown) - len(suffix)]
    return src, (
        f"the hostfile {shown} starts with {prefix}, known only at run time; plint read {display_path(src.path)}, the "
        f"same path inside the checked tree, as if {prefix} held a checkout of it"
    )


# runner.py _parse_hostfile wants `host slots=N` lines; a PBS node file lists bare host names
_NODE_FILE_HINT = (
    " (the job's node file lists host names alone; DeepSpeed wants `host slots=N` lines: write them with "
    "`sed 's/$/ slots=N/' $PBS_NODEFILE > hostfile`)"
)


def _set_resources(call: LauncherCall, res) -> None:
    """The call's world size, nodes and GPUs per node from the resources the runner computes, each pointing
    at the option that set it; the master address DeepSpeed asks the first host for when none is given."""
    call.world_size, call.nnodes, call.nproc_per_node = res.world_size, res.nnodes, res.gpus_per_node
    gpus = call.option("--num_gpus")
    if gpus is not None and res.gpus_per_node.known:  # point at the option that set it
        n = res.gpus_per_node.value
        call.nproc_per_node = Value(
            n, gpus.value_span, gpus.origin, f"deepspeed --num_gpus {n}: slots 0..{n - 1} on every host"
        )
    if call.master_addr is None and res.multi_node and res.hosts_and_slots:
        first = res.hosts_and_slots[0][0]
        call.master_addr = derived(
            first,
            f"no --master_addr: DeepSpeed asks the first host ({first}) for its address",
            call.hostfile.span if call.hostfile else None,
        )


def _visible_devices(command: Command) -> str | None:
    var = command.assignments.get("CUDA_VISIBLE_DEVICES") or command.env.get("CUDA_VISIBLE_DEVICES")
    if var is None or ("CUDA_VISIBLE_DEVICES" not in command.assignments and not var.exported):
        return None
    value = var_value(var, str, "CUDA_VISIBLE_DEVICES")
    return value.value if value.known else None


def _written_under(files: dict, rendering: str, result: ShellResult | None):
    """The file the script wrote under a path with unknown parts (`hostfile-$SLURM_JOB_ID`): the evaluator keys it
    by the path's rendering as written, which a relative name matches also against the script's folder (`pwd`/x
    written, x read)."""
    found = files.get(rendering)
    if found is None and result is not None and not rendering.startswith(("/", "$")):
        found = files.get(path_key(os.path.dirname(os.path.abspath(result.source.path)), rendering))
    return found


def read_named_hostfile(
    call: LauncherCall,
    read_file: Callable[[str], tuple[SourceFile | None, str | None]],
    result: ShellResult | None,
    why_unread: Callable[[str], Unread | None] | None = None,
):
    """The hostfile another launcher names with --hostfile (mpirun's: the same `host slots=N` lines), read as the
    deepspeed runner's is (the files the script wrote, then where the script is run from); None when unread."""
    word = call.option("--hostfile")
    if word is None:
        return None
    call.hostfile = from_word(word, str, f"{call.launcher} --hostfile")
    hostfile, _ = _hostfile(call, read_file, result, None, None, None, why_unread)
    return hostfile
