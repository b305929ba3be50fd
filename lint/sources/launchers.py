"""What launcher commands mean: torchrun, the legacy torch.distributed.launch, the deepspeed launcher,
srun, mpirun and accelerate, and chains of them (`srun ... torchrun ...`, `srun ... bash -c "..."`).

Option tables come from the launchers' own parsers: torch 2.13 `torch.distributed.run.get_args_parser`
(and `torch.distributed.launch`, which adds `--local-rank` and `--use-env`), DeepSpeed 0.19.8
`deepspeed/launcher/runner.py::parse_args`, srun(1), mpirun(1) of Open MPI, and accelerate's
`commands/launch.py`. Each chain yields nodes, workers per node and world size, with the reasoning
kept in each Value's note.
"""

from __future__ import annotations

import posixpath
from plint.record import field, record
TYPE_CHECKING = False  # typing is imported by type checkers only: it costs start-up time
if TYPE_CHECKING:
    from typing import Callable

from plint.shell.model import Command, Problem, ShellResult, Word
from plint.source import SourceFile
from plint.values import Value, default, derived, from_word, parse_int, unresolved

# torch.distributed.run: options that take a value (each also has an underscore spelling)
TORCHRUN_VALUES = {
    "--nnodes", "--nproc-per-node", "--rdzv-backend", "--rdzv-endpoint", "--rdzv-id", "--rdzv-conf",
    "--max-restarts", "--monitor-interval", "--start-method", "--event-log-handler", "--role", "--log-dir",
    "-r", "--redirects", "-t", "--tee", "--local-ranks-filter", "--duplicate-stdout-filters",
    "--duplicate-stderr-filters", "--node-rank", "--master-addr", "--master-port", "--local-addr",
    "--logs-specs", "--numa-binding", "--signals-to-handle", "--shutdown-timeout",
    "--local-rank",  # torch.distributed.launch only
}
TORCHRUN_FLAGS = {"--standalone", "-m", "--module", "--no-python", "--run-path", "--virtual-local-rank",
                  "--use-env"}
DEEPSPEED_VALUES = {"-H", "--hostfile", "-i", "--include", "-e", "--exclude", "--num_nodes", "--num_gpus",
                    "--num_accelerators", "--master_port", "--master_addr", "--node_rank", "--launcher",
                    "--launcher_args", "--enable_each_rank_log", "--autotuning", "--bind_core_list",
                    "--ssh_port", "--venv_script", "--log_level", "--min_elastic_nodes", "--max_elastic_nodes"}
DEEPSPEED_FLAGS = {"--module", "--no_python", "--no_local_rank", "--no_ssh", "--no_ssh_check", "--force_multi",
                   "--save_pid", "--bind_cores_to_rank", "-q", "--quiet", "--elastic_training"}
SRUN_VALUES = {"-N", "--nodes", "-n", "--ntasks", "--ntasks-per-node", "--gpus-per-node", "--gres",
               "--gpus-per-task", "-c", "--cpus-per-task", "--mpi", "--container-image", "--container-mounts",
               "--container-workdir", "--container-name", "--container-env", "--export", "-o", "--output",
               "-e", "--error", "-i", "--input", "-J", "--job-name", "-p", "--partition", "-t", "--time",
               "-w", "--nodelist", "-x", "--exclude", "--jobid", "--cpu-bind", "--gpu-bind", "--mem",
               "--mem-per-cpu", "--mem-per-gpu", "-m", "--distribution", "-A", "--account", "--het-group",
               "--environment", "--network", "-G", "--gpus", "-C", "--constraint", "--cpus-per-gpu",
               "--ntasks-per-socket", "--sockets-per-node", "--cores-per-socket", "-D", "--chdir",
               "--qos", "-q", "--reservation", "--signal", "--wckey", "--comment", "-d", "--dependency",
               "--open-mode", "--threads-per-core", "--hint", "--mpi-args", "--prolog", "--epilog",
               "--task-prolog", "--task-epilog", "--uid", "--gid", "-W", "--wait", "--ntasks-per-gpu"}
SRUN_FLAGS = {"-l", "--label", "-u", "--unbuffered", "--exclusive", "--overlap", "-K", "--kill-on-bad-exit",
              "--no-container-mount-home", "--container-remap-root", "--container-writable", "-Q", "--quiet",
              "-v", "--verbose", "--pty", "-X", "--disable-status", "--no-kill", "-k", "--overcommit", "-O",
              "--exact", "--whole", "--no-container-entrypoint", "--container-mount-home", "-s", "--oversubscribe",
              "--multi-prog", "--spread-job", "--use-min-nodes", "--mpi=pmix"}
MPIRUN_VALUES = {"-np", "-n", "-c", "--np", "-npernode", "--npernode", "-ppn", "--map-by", "-H", "--host",
                 "-hostfile", "--hostfile", "-machinefile", "--machinefile", "-x", "--bind-to", "-wdir",
                 "--wdir", "-N", "--rank-by", "-genv", "-env", "--prefix", "-f", "-hosts", "--report-bindings"}
MPIRUN_PAIRS = {"--mca", "-mca", "-genv"}  # options that take two values
ACCELERATE_VALUES = {"--num-processes", "--num-machines", "--machine-rank", "--main-process-ip",
                     "--main-process-port", "--config-file", "--mixed-precision", "--gpu-ids",
                     "--deepspeed-config-file", "--zero-stage", "--gradient-accumulation-steps",
                     "--deepspeed-hostfile", "--deepspeed-multinode-launcher", "--dynamo-backend",
                     "--num-cpu-threads-per-process", "--rdzv-backend", "--rdzv-conf", "--max-restarts",
                     "--monitor-interval", "--offload-optimizer-device", "--offload-param-device",
                     "--zero3-init-flag", "--zero3-save-16bit-model", "--fsdp-sharding-strategy",
                     "--same-network", "--deepspeed-exclusion-filter", "--deepspeed-inclusion-filter",
                     "--dynamo-mode", "--tpu-vm", "--env"}
ACCELERATE_FLAGS = {"--multi-gpu", "--use-deepspeed", "--use-fsdp", "--use-megatron-lm", "--cpu", "--debug",
                    "-m", "--module", "--no-python", "--quiet", "-q", "--tee", "--use-cpu"}
WRAPPERS = {"nohup", "time", "exec", "stdbuf", "nice", "ionice", "taskset", "xargs", "caffeinate"}
PYTHONS = ("python", "python3", "python2", "pypy3")
TRAINING_FLAGS = ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--deepspeed",
                  "--deepspeed_config", "--micro-batch-size", "--num-layers", "--per_device_train_batch_size")


@record
class LauncherCall:
    launcher: str
    command: Command
    options: dict[str, list[Word]] = field(default_factory=dict)
    nnodes: Value | None = None
    nproc_per_node: Value | None = None
    world_size: Value | None = None
    node_rank: Value | None = None
    master_addr: Value | None = None
    master_port: Value | None = None
    hostfile: Value | None = None
    program: Word | None = None
    program_index: int = -1
    is_module: bool = False
    tasks: Value | None = None  # srun / mpirun: how many copies of the program it starts
    tasks_per_node: Value | None = None
    nodes: Value | None = None

    def option(self, *names: str) -> Word | None:
        for n in names:
            if n in self.options and self.options[n]:
                return self.options[n][-1]
        return None

    def flag(self, *names: str) -> bool:
        return any(n in self.options for n in names)


@record
class LaunchChain:
    calls: list[LauncherCall]
    launcher: str | None
    entrypoint: Word | None
    trainer_args: list[Word]
    nnodes: Value
    workers_per_node: Value
    world_size: Value
    node_rank: Value | None = None
    master_addr: Value | None = None
    problems: list[Problem] = field(default_factory=list)
    command: Command | None = None


def _base(word: Word | None) -> str | None:
    text = word.text if word is not None else None
    return posixpath.basename(text) if text else None


def _is_python(name: str | None) -> bool:
    if not name:
        return False
    return name in PYTHONS or (name.startswith("python") and name[6:].replace(".", "").isdigit())


def _scan(words: list[Word], start: int, values: set[str], flags: set[str], canon: Callable[[str], str],
          pairs: set[str] = frozenset()) -> tuple[dict[str, list[Word]], int]:
    """Options from words[start:] until the first non-option word (the program)."""
    options: dict[str, list[Word]] = {}
    i = start
    while i < len(words):
        w = words[i]
        t = w.text
        if t is None:
            return options, i  # an unknown word: could be the program
        if t == "--":
            return options, i + 1
        if not t.startswith("-") or t == "-":
            return options, i
        name, eq, _ = t.partition("=")
        key = canon(name)
        if eq:
            options.setdefault(key, []).append(w.slice(len(name) + 1))
            i += 1
        elif key in pairs:
            options.setdefault(key, []).extend(words[i + 1:i + 3])
            i += 3
        elif key in values:
            if i + 1 < len(words):
                options.setdefault(key, []).append(words[i + 1])
            i += 2
        elif key in flags or canon(t) in flags:
            options.setdefault(key, [])
            i += 1
        elif len(name) > 2 and not name.startswith("--") and canon(name[:2]) in values:
            options.setdefault(canon(name[:2]), []).append(w.slice(2))  # -N2, -n16
            i += 1
        else:
            options.setdefault(key, [])  # unknown: assume a flag rather than swallow the program
            i += 1
    return options, i


def _dash(name: str) -> str:
    return name if not name.startswith("--") else "--" + name[2:].replace("_", "-")


def _same(name: str) -> str:
    return name


def _int_option(call: LauncherCall, what: str, *names: str) -> Value | None:
    w = call.option(*names)
    return from_word(w, parse_int, what) if w is not None else None


def _python_program(words: list[Word], i: int) -> tuple[Word | None, int, bool]:
    """Skip interpreter options; returns (program word, its index, is_module)."""
    while i < len(words):
        t = words[i].text
        if t is None:
            return words[i], i, False
        if t == "-m" and i + 1 < len(words):
            return words[i + 1], i + 1, True
        if t.startswith("-m") and len(t) > 2:
            return words[i].slice(2), i, True
        if t == "-c":
            return None, -1, False
        if t in ("-W", "-X", "-Q") and i + 1 < len(words):
            i += 2
            continue
        if t.startswith("-"):
            i += 1
            continue
        return words[i], i, False
    return None, -1, False


def _unwrap(words: list[Word]) -> int:
    """Index of the first word after wrappers such as nohup, env A=1, numactl ... --, timeout 10h."""
    i = 0
    while i < len(words):
        name = _base(words[i])
        if name in WRAPPERS:
            i += 1
            while i < len(words) and (words[i].text or "").startswith("-"):
                i += 1
            continue
        if name == "env":
            i += 1
            while i < len(words) and ((words[i].text or "").startswith("-") or "=" in (words[i].text or "")):
                i += 2 if words[i].text in ("-u", "--unset", "-C", "--chdir") else 1
            continue
        if name == "timeout":
            i += 1
            while i < len(words) and (words[i].text or "").startswith("-"):
                i += 2 if words[i].text in ("-s", "-k", "--signal", "--kill-after") else 1
            i += 1  # the duration
            continue
        if name in ("numactl", "taskset"):
            j = i + 1
            while j < len(words) and words[j].text != "--" and (words[j].text or "").startswith("-"):
                j += 1 if "=" in (words[j].text or "") or name == "numactl" and (words[j].text or "").startswith("--") else 2
            i = j + 1 if j < len(words) and words[j].text == "--" else j
            continue
        if name in ("singularity", "apptainer") and i + 1 < len(words) and words[i + 1].text in ("exec", "run"):
            j = i + 2
            while j < len(words) and (words[j].text or "").startswith("-"):
                j += 1 if "=" in (words[j].text or "") or words[j].text in ("--nv", "--cleanenv", "--rocm",
                                                                             "--contain", "--writable") else 2
            i = j + 1  # the image
            continue
        return i
    return i


def parse_launcher(command: Command, words: list[Word] | None = None) -> LauncherCall | None:
    """The launcher at the head of a command (after wrappers), or a bare python program."""
    words = command.words if words is None else words
    i = _unwrap(words)
    if i >= len(words):
        return None
    name = _base(words[i])
    if name == "torchrun":
        return _torchrun(command, words, i + 1, "torchrun")
    if _is_python(name):
        j = i + 1
        while j < len(words) and (words[j].text or "").startswith("-") and words[j].text != "-m":
            j += 1
        if j + 1 < len(words) and words[j].text == "-m" and words[j + 1].text in (
                "torch.distributed.run", "torch.distributed.launch"):
            kind = "torchrun" if words[j + 1].text == "torch.distributed.run" else "torch.distributed.launch"
            return _torchrun(command, words, j + 2, kind)
        program, index, is_module = _python_program(words, i + 1)
        return LauncherCall("python", command, program=program, program_index=index, is_module=is_module)
    if name == "deepspeed":
        return _deepspeed(command, words, i + 1)
    if name == "srun":
        return _srun(command, words, i + 1)
    if name in ("mpirun", "mpiexec", "orterun"):
        return _mpirun(command, words, i + 1)
    if name == "accelerate" and i + 1 < len(words) and words[i + 1].text == "launch":
        return _accelerate(command, words, i + 2)
    return None


def _torchrun(command: Command, words: list[Word], start: int, kind: str) -> LauncherCall:
    options, i = _scan(words, start, TORCHRUN_VALUES, TORCHRUN_FLAGS, _dash)
    call = LauncherCall(kind, command, options)
    module = call.flag("-m", "--module")
    call.is_module = module
    call.program = words[i] if i < len(words) else None
    call.program_index = i if i < len(words) else -1
    nnodes_word = call.option("--nnodes")
    if call.flag("--standalone"):
        call.nnodes = derived(1, "--standalone: a single node", words[start].site if start < len(words) else None)
    elif nnodes_word is None:
        call.nnodes = default(1, f"{kind} --nnodes defaults to 1:1")
    elif nnodes_word.known and ":" in (nnodes_word.text or ""):
        lo, _, hi = nnodes_word.text.partition(":")  # type: ignore[union-attr]
        if lo.strip() == hi.strip() and lo.strip().isdigit():
            call.nnodes = Value(int(lo), nnodes_word.value_span, nnodes_word.origin)
        else:
            call.nnodes = unresolved(f"--nnodes {nnodes_word.text} is elastic: the node count is decided "
                                     "at run time", nnodes_word.value_span)
    else:
        call.nnodes = from_word(nnodes_word, parse_int, "--nnodes")
    nproc = call.option("--nproc-per-node")
    if nproc is None:
        call.nproc_per_node = default(1, f"{kind} --nproc-per-node defaults to 1")
    elif nproc.text in ("gpu", "auto", "cpu", "xpu"):
        call.nproc_per_node = unresolved(f"--nproc-per-node {nproc.text} counts the local devices at run time",
                                         nproc.value_span)
    else:
        call.nproc_per_node = from_word(nproc, parse_int, "--nproc-per-node")
    call.node_rank = _int_option(call, "--node-rank", "--node-rank")
    addr = call.option("--master-addr")
    call.master_addr = from_word(addr, str) if addr is not None else None
    endpoint = call.option("--rdzv-endpoint")
    if call.master_addr is None and endpoint is not None:
        v = from_word(endpoint, str)
        call.master_addr = Value(v.value.rsplit(":", 1)[0], v.span, v.origin) if v.known else v
    return call


def _deepspeed(command: Command, words: list[Word], start: int) -> LauncherCall:
    options, i = _scan(words, start, DEEPSPEED_VALUES, DEEPSPEED_FLAGS, _same)
    for alias, name in (("-H", "--hostfile"), ("-i", "--include"), ("-e", "--exclude"),
                        ("--num_accelerators", "--num_gpus"), ("-q", "--quiet")):
        if alias in options:
            options.setdefault(name, []).extend(options.pop(alias))
    call = LauncherCall("deepspeed", command, options)
    call.program = words[i] if i < len(words) else None
    call.program_index = i if i < len(words) else -1
    call.is_module = call.flag("--module")
    hostfile = call.option("--hostfile")
    call.hostfile = from_word(hostfile, str, "--hostfile") if hostfile is not None else None
    call.master_addr = from_word(call.option("--master_addr"), str) if call.option("--master_addr") else None
    call.node_rank = _int_option(call, "--node_rank", "--node_rank")
    return call


def _srun(command: Command, words: list[Word], start: int) -> LauncherCall:
    options, i = _scan(words, start, SRUN_VALUES, SRUN_FLAGS, _same)
    for alias, name in (("-N", "--nodes"), ("-n", "--ntasks"), ("-c", "--cpus-per-task"), ("-G", "--gpus")):
        if alias in options:
            options.setdefault(name, []).extend(options.pop(alias))
    call = LauncherCall("srun", command, options)
    call.program = words[i] if i < len(words) else None
    call.program_index = i if i < len(words) else -1
    nodes = call.option("--nodes")
    if nodes is not None and nodes.known and "-" in (nodes.text or ""):
        lo, _, hi = nodes.text.partition("-")  # type: ignore[union-attr]
        call.nodes = Value(int(lo), nodes.value_span, nodes.origin) if lo == hi and lo.isdigit() else \
            unresolved(f"srun --nodes {nodes.text} is a range", nodes.value_span)
    elif nodes is not None:
        call.nodes = from_word(nodes, parse_int, "srun --nodes")
    call.tasks = _int_option(call, "srun --ntasks", "--ntasks")
    call.tasks_per_node = _int_option(call, "srun --ntasks-per-node", "--ntasks-per-node")
    return call


def _mpirun(command: Command, words: list[Word], start: int) -> LauncherCall:
    options, i = _scan(words, start, MPIRUN_VALUES, set(), _same, MPIRUN_PAIRS)
    call = LauncherCall("mpirun", command, options)
    call.program = words[i] if i < len(words) else None
    call.program_index = i if i < len(words) else -1
    call.tasks = _int_option(call, "mpirun -np", "-np", "-n", "--np", "-c")
    call.tasks_per_node = _int_option(call, "mpirun -npernode", "-npernode", "--npernode", "-ppn", "-N")
    mapping = call.option("--map-by")
    if call.tasks_per_node is None and mapping is not None and mapping.known:
        parts = (mapping.text or "").split(":")
        if len(parts) >= 3 and parts[0] == "ppr" and parts[1].isdigit() and parts[2].startswith("node"):
            call.tasks_per_node = Value(int(parts[1]), mapping.value_span, mapping.origin)
    return call


def _accelerate(command: Command, words: list[Word], start: int) -> LauncherCall:
    options, i = _scan(words, start, ACCELERATE_VALUES, ACCELERATE_FLAGS, _dash)
    call = LauncherCall("accelerate", command, options)
    call.program = words[i] if i < len(words) else None
    call.program_index = i if i < len(words) else -1
    call.is_module = call.flag("-m", "--module")
    call.tasks = _int_option(call, "--num_processes", "--num-processes")
    call.nodes = _int_option(call, "--num_machines", "--num-machines")
    return call


# ---- chains -------------------------------------------------------------------------------------
def _chain_calls(command: Command) -> list[LauncherCall] | None:
    """The launcher calls of one command, outermost first: srun torchrun ... -> [srun, torchrun]."""
    calls: list[LauncherCall] = []
    words = command.words
    offset = 0  # where `words` starts in command.words: program_index is kept absolute
    while words:
        call = parse_launcher(command, words)
        if call is None:
            return calls or None
        if call.program_index >= 0:
            call.program_index += offset
        calls.append(call)
        if call.launcher == "python" or call.program is None or call.program_index < 0:
            return calls
        if call.launcher in ("srun", "mpirun"):
            words = command.words[call.program_index:]
            offset = call.program_index
            continue
        if call.launcher in ("torchrun", "torch.distributed.launch", "deepspeed", "accelerate"):
            prog = _base(call.program)
            if _is_python(prog) and not call.is_module:
                # `torchrun --no-python python train.py` / `deepspeed --no_python python x.py`
                words = command.words[call.program_index:]
                offset = call.program_index
                continue
            return calls
        return calls
    return calls or None


def _parent_calls(command: Command) -> list[LauncherCall]:
    """Launchers of the commands that started this one through `bash -c` or a script."""
    out: list[LauncherCall] = []
    parent = command.parent
    while parent is not None:
        calls = _chain_calls(parent) or []
        out = [c for c in calls if c.launcher != "python"] + out
        parent = parent.parent
    return out


def _is_training(call: LauncherCall, calls: list[LauncherCall]) -> bool:
    program = call.program
    if program is None:
        return False
    if not program.known:
        return True
    name = posixpath.basename(program.text or "")
    if call.launcher == "python" and len(calls) == 1:
        args = [w.text or "" for w in call.command.words[call.program_index + 1:]]
        looks = name.startswith(("pretrain", "train", "finetune", "run_clm", "run_pretrain")) or \
            any(a.split("=")[0] in TRAINING_FLAGS for a in args)
        return looks and not call.is_module or (call.is_module and "train" in name)
    if call.launcher in ("srun", "mpirun"):
        return False  # srun running something that is not python (a shell, a binary)
    return True


def _resolve(calls: list[LauncherCall], job, result_problems: list[Problem]) -> tuple[Value, Value, Value, str | None]:
    """(nnodes, workers per node, world size, DESIGN's launcher field)."""
    spawners = [c for c in calls if c.launcher in ("torchrun", "torch.distributed.launch", "deepspeed",
                                                   "accelerate")]
    schedulers = [c for c in calls if c.launcher in ("srun", "mpirun")]
    if spawners:
        s = spawners[-1]
        if s.launcher == "deepspeed":
            return s.nnodes, s.nproc_per_node, s.world_size, "deepspeed"  # filled by _deepspeed_resources
        if s.launcher == "accelerate":
            nodes = s.nodes or default(1, "accelerate --num_machines defaults to 1")
            world = s.tasks or unresolved("accelerate launch without --num_processes uses every local GPU "
                                          "(or its config file) at run time")
            per = _quotient(world, nodes, "workers per node = {w} / {n} (num_processes / num_machines)")
            return nodes, per, world, "accelerate"
        nodes, per = s.nnodes, s.nproc_per_node
        world = _product(nodes, per, f"world size = {{a}} nodes * {{b}} workers ({s.launcher} --nnodes * "
                                     "--nproc-per-node)")
        return nodes, per, world, s.launcher
    if schedulers:
        s = schedulers[-1]
        if s.launcher == "mpirun":
            tasks = s.tasks or unresolved("mpirun without -np starts one rank per slot of its host list, "
                                          "known at run time")
            per = s.tasks_per_node or (unresolved("mpirun gives no ranks per node") if tasks.known else tasks)
            nodes = _quotient(tasks, per, "nodes = {w} / {n} (ranks / ranks per node)") if s.tasks_per_node \
                else (derived(1, "one host") if tasks.known else tasks)
            return nodes, per, tasks, "mpirun"
        return _srun_counts(s, job) + ("srun",)
    nodes = default(1, "a single process")
    one = default(1, "a single process")
    return nodes, one, default(1, "a single process (no launcher)"), None


def _srun_counts(s: LauncherCall, job) -> tuple[Value, Value, Value]:
    nodes = s.nodes or (job.nodes if job is not None and job.nodes is not None else None)
    if nodes is None:
        nodes = unresolved("srun outside a batch script with no --nodes: the allocation decides")
    per = s.tasks_per_node or (job.ntasks_per_node if job is not None and job.ntasks_per_node is not None
                               and s.tasks is None else None)
    tasks = s.tasks
    if tasks is None and per is not None:
        tasks = _product(nodes, per, "tasks = {a} nodes * {b} tasks per node")
    if tasks is None and job is not None and job.ntasks is not None and s.nodes is None:
        tasks = job.ntasks
    if tasks is None:
        tasks = Value(nodes.value, nodes.span, "derived" if nodes.known else nodes.origin,
                      "srun starts one task per node by default" if nodes.known else nodes.note)
        per = default(1, "srun starts one task per node by default")
    if per is None:
        per = _quotient(tasks, nodes, "tasks per node = {w} / {n}")
    return nodes, per, tasks


def _product(a: Value, b: Value, note: str) -> Value:
    if a is None or b is None:
        return unresolved("missing")
    if not a.known or not b.known:
        missing = [v.note for v in (a, b) if not v.known and v.note]
        return Value(None, None, "unresolved", "needs " + "; ".join(missing) if missing else "unknown")
    return derived(a.value * b.value, note.format(a=a.value, b=b.value))


def _quotient(w: Value, n: Value, note: str) -> Value:
    if not w.known or not n.known:
        missing = [v.note for v in (w, n) if not v.known and v.note]
        return Value(None, None, "unresolved", "needs " + "; ".join(missing) if missing else "unknown")
    if n.value == 0 or w.value % n.value:
        return Value(None, None, "derived", f"{w.value} is not divisible by {n.value}")
    return derived(w.value // n.value, note.format(w=w.value, n=n.value))


def _deepspeed_resources(call: LauncherCall, read_file: Callable[[str], SourceFile | None],
                         problems: list[Problem]) -> None:
    from plint.sources.hostfile import read_hostfile, resolve_resources

    hostfile = None
    if call.hostfile is not None:
        if not call.hostfile.known:
            note = f"the hostfile path is unknown: {call.hostfile.note}"
            call.world_size = call.nnodes = call.nproc_per_node = unresolved(note, call.hostfile.span)
            return
        src = read_file(call.hostfile.value)
        if src is None:
            note = f"the hostfile {call.hostfile.value} is not in the repository (it is written at run time?)"
            call.world_size = call.nnodes = call.nproc_per_node = unresolved(note, call.hostfile.span)
            return
        hostfile = read_hostfile(src)
        problems.extend(hostfile.problems)

    def text(name: str) -> str | None:
        w = call.option(name)
        return w.text if w is not None else None

    def number(name: str) -> int | None:
        w = call.option(name)
        if w is None:
            return None
        try:
            value = int(w.text) if w.text is not None else None
        except ValueError:
            value = None
        return value if value is None or value >= 0 else None

    unknown_opts = [n for n in ("--num_nodes", "--num_gpus", "--include", "--exclude")
                    if call.option(n) is not None and not call.option(n).known]
    if unknown_opts:
        w = call.option(unknown_opts[0])
        v = from_word(w, str)
        call.world_size = call.nnodes = call.nproc_per_node = unresolved(
            f"deepspeed {unknown_opts[0]}: {v.note}", w.value_span)
        return
    res = resolve_resources(hostfile, text("--include"), text("--exclude"), number("--num_nodes"),
                            number("--num_gpus"), call.command.words[0].site)
    problems.extend(res.problems)
    call.world_size, call.nnodes, call.nproc_per_node = res.world_size, res.nnodes, res.gpus_per_node
    num_gpus = call.option("--num_gpus")
    if num_gpus is not None and num_gpus.known and hostfile is None:
        call.nproc_per_node = from_word(num_gpus, parse_int, "--num_gpus")


def find_launches(result: ShellResult, job, read_file: Callable[[str], SourceFile | None]) -> list[LaunchChain]:
    chains: list[LaunchChain] = []
    for command in result.commands:
        calls = _chain_calls(command)
        if not calls:
            continue
        calls = _parent_calls(command) + calls
        inner = calls[-1]
        if not _is_training(inner, calls):
            continue
        problems: list[Problem] = []
        for c in calls:
            if c.launcher == "deepspeed":
                _deepspeed_resources(c, read_file, problems)
        nodes, per, world, launcher = _resolve(calls, job, problems)
        program = inner.program
        args = command.words[inner.program_index + 1:] if inner.program_index >= 0 else []
        node_rank = next((c.node_rank for c in reversed(calls) if c.node_rank is not None), None)
        master = next((c.master_addr for c in reversed(calls) if c.master_addr is not None), None)
        chains.append(LaunchChain(calls, launcher, program, args, nodes, per, world, node_rank, master,
                                  problems, command))
    return chains
