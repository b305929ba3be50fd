"""mpirun/mpiexec/orterun, aprun and jsrun: their options and the sizes they give."""

from __future__ import annotations

import re

from plint.reading.shell.model import Command, Word
from plint.values import Value, derived, from_word, parse_int, unresolved
from plint.reading.sources.launch_calls import (
    LauncherCall,
    finish_call,
    grammar_of,
    hidden_by_unknown,
    product_of,
    quotient_of,
    scan_options,
)


# Open MPI names work with one dash or two; Hydra (MPICH, Intel MPI) names take one. HPE Cray PALS's mpiexec
# (ALCF's Polaris and Aurora, NCAR's Derecho) adds --depth, --cpu-bind, --mem-bind, --pmi, --rlimit, --no-vni,
# --line-buffer and --no-transfer, and takes `--env NAME=VALUE` as one word where Hydra's `-env` takes two
# (argonne-lcf/user-guides 7d04a3f9: docs/aurora/running-jobs-aurora.md "some helpful options", and the
# mpiexec lines of docs/aurora and docs/polaris)
MPIRUN = grammar_of(
    """--np|-np|-n|--n|-c --npernode|-npernode|-N|-ppn|--ppn --npersocket|-npersocket --map-by|-map-by
    --rank-by|-rank-by --bind-to|-bind-to --host|-host|-H|-hosts|--hosts|-hostlist
    --hostfile|-hostfile|--machinefile|-machinefile|-f --default-hostfile --rankfile|-rankfile|-rf --x|-x --wdir|-wdir|--wd|-wd --path|-path
    --prefix|-prefix --cpus-per-proc|-cpus-per-proc --cpus-per-rank|-cpus-per-rank --cpu-list|-cpu-list
    --cpu-set|-cpu-set --ppr --timeout|-timeout --output-filename|-output-filename --stdin|-stdin --personality
    --launch-agent|-launch-agent --am|-am --tune|-tune --xml-file --report-pid --report-uri --hnp --xterm
    --max-vm-size --ompi-server --debugger --report-events --max-restarts --genvlist|-genvlist --envlist|-envlist
    --launcher|-launcher --bootstrap|-bootstrap --iface|-iface --profile|-profile
    --depth|-depth|-d --cpu-bind|-cpu-bind --mem-bind|-mem-bind --pmi|-pmi --rlimit|--rlimits""",
    """--verbose|-v --quiet|-q --version|-V --tag-output|-tag-output --timestamp-output|-timestamp-output
    --merge-stderr-to-stdout --display-map|-display-map --display-allocation --report-bindings|-report-bindings
    --oversubscribe|-oversubscribe --nooversubscribe|-nooversubscribe --nolocal|-nolocal --pernode|-pernode
    --bynode|-bynode --byslot|-byslot --bycore|-bycore --bind-to-core|-bind-to-core --bind-to-socket
    --use-hwthread-cpus|-use-hwthread-cpus --allow-run-as-root|-allow-run-as-root --noprefix --novm
    --do-not-resolve --show-progress --enable-recovery --disable-recovery --continuous --debug --tv
    --genvall|-genvall --genvnone|-genvnone --envall|-envall --envnone|-envnone --prepend-rank|-prepend-rank|-l
    --ordered-output|-ordered-output --rr|-rr --help|-h --no-vni --line-buffer --no-transfer""",
    "--mca|-mca --gmca|-gmca --genv|-genv --env|-env",
    abbrev=False,
)


# Cray ALPS `aprun [options] executable [args]` (also the PALS aprun of HPE Cray EX): -n PEs in all, -N PEs per
# node, -d CPUs per PE, -cc binding; the option list of "Run Applications Using the aprun Command" (HPE
# a00114008en_us) and Cray S-2496 "Using the aprun Command"; `--cc` is the spelling the PALS aprun accepts too
APRUN = grammar_of(
    """--pes|-n --pes-per-node|-N --cpus-per-pe|-d --cpu-binding|-cc|--cc --environment-override|-e
    --memory-per-pe|-m -a -cp -D -L -l -j -F -p -r -R -S -sl -sn -t""",
    "-b -B -C -q -ss -T --help --version",
    abbrev=False,
)


# IBM Job Step Manager `jsrun [options] program [args]` (LSF clusters: OLCF Summit, LLNL Sierra and Lassen): resource
# sets of -c cores and -g GPUs on one node each, -n of them, -r a node, -a tasks in each (the option table of the
# jsrun quick start guide, olcf-tutorials/jsrun_quick_start_guide 631e6d9 README.md; the others as IBM's jsrun
# command reference names them). Long names are written with underscores, and take `=` too.
JSRUN = grammar_of(
    """--nrs|-n --tasks_per_rs|-a --cpu_per_rs|-c --gpu_per_rs|-g --rs_per_host|-r --bind|-b
    --launch_distribution|-d --latency_priority|-l --smpiargs|-M|-smpiargs --env|-E --chdir|-h --np|-p
    --memory_per_rs|-m --erf_input|-U --stdio_mode|-e --stdio_stdout|-o --stdio_stderr|-k --stdio_input|-t
    --appfile|-f --exit_on_error|-X --progress|-Z --pre_post_exec|-P --env_eval|-F --env_no_propagate|-D""",
    "--immediate|-i --help --version",
    abbrev=False,
)


def mpirun_call(command: Command, start: int) -> LauncherCall:
    scan = scan_options(command.words, start, MPIRUN)
    call = finish_call(LauncherCall("mpirun", command, scan.options), scan)
    np_word = call.option("--np")
    call.tasks = from_word(np_word, parse_int, "mpirun -np") if np_word is not None else None
    per = call.option("--npernode")
    if per is not None:
        call.tasks_per_node = from_word(per, parse_int, "mpirun -npernode")
    for option in ("--map-by", "--ppr"):  # `--map-by ppr:8:node` / `--ppr 8:node`
        w = call.option(option)
        if call.tasks_per_node is None and w is not None and w.known:
            m = re.match(r"(?:ppr:)?(\d+):node", w.text or "")
            if m and (option == "--ppr" or (w.text or "").startswith("ppr:")):
                at = (w.text or "").index(m.group(1))
                call.tasks_per_node = from_word(w.slice(at, at + len(m.group(1))), parse_int, f"{option} ppr")
    if call.flag("--pernode") and call.tasks_per_node is None:
        call.tasks_per_node = derived(1, "mpirun -pernode: one process per node", call.command.site)
    return call


def aprun_call(command: Command, start: int) -> LauncherCall:
    scan = scan_options(command.words, start, APRUN)
    call = finish_call(LauncherCall("aprun", command, scan.options), scan)
    for attr, name, what in (("tasks", "--pes", "aprun -n"), ("tasks_per_node", "--pes-per-node", "aprun -N")):
        w = call.option(name)
        if w is not None:
            setattr(call, attr, from_word(w, parse_int, what))
    return call


def jsrun_call(command: Command, start: int) -> LauncherCall:
    """jsrun: its tasks are -n resource sets of -a tasks each, -r sets a node (read by mpirun_sizes)."""
    scan = scan_options(command.words, start, JSRUN)
    call = finish_call(LauncherCall("jsrun", command, scan.options), scan)
    counts = {
        name: from_word(w, parse_int, f"jsrun {name}")
        for name in ("--nrs", "--tasks_per_rs", "--rs_per_host")
        if (w := call.option(name)) is not None
    }
    sets, per_set, per_host = (counts.get(n) for n in ("--nrs", "--tasks_per_rs", "--rs_per_host"))
    if call.option("--np") is not None or call.option("--erf_input") is not None:
        call.tasks = unresolved("jsrun -p or an explicit resource file sets the tasks: plint reads -n x -a only")
    elif sets is not None and per_set is not None:
        call.tasks = product_of(per_set, sets, "jsrun -n resource sets x -a tasks each")
    elif sets is not None:
        call.tasks = unresolved("jsrun -n without -a: the tasks a resource set runs are not written")
    if per_host is not None and per_set is not None:
        call.tasks_per_node = product_of(per_set, per_host, "jsrun -r resource sets a node x -a tasks each")
    return call


def mpirun_sizes(s: LauncherCall) -> tuple[Value, Value, Value]:
    """mpirun -np / -npernode, aprun -n / -N (with neither -N, ALPS fills each node: the nodes decide), or jsrun's
    tasks over -n resource sets and its tasks a node over -r of them (without -r, as many as fit a node)."""
    np_, per_name = {"aprun": ("-n", "-N"), "jsrun": ("-n", "-r")}.get(s.launcher, ("-np", "-npernode"))
    tasks = (
        s.tasks
        or hidden_by_unknown(s, np_)
        or unresolved(
            f"{s.launcher} without {np_} starts one rank per slot of its host list or allocation, known at run time"
        )
    )
    per = s.tasks_per_node or hidden_by_unknown(s, per_name)
    if per is None:
        if tasks.known:
            return (
                unresolved(f"{s.launcher} gives no ranks per node: the hosts' slots decide"),
                unresolved(f"{s.launcher} gives no ranks per node: the hosts' slots decide"),
                tasks,
            )
        return tasks, tasks, tasks
    if s.tasks is None and per.known:
        return unresolved(f"{s.launcher} without {np_}: the number of hosts decides"), per, tasks
    nodes = quotient_of(tasks, per, f"nodes = {{w}} ranks / {{n}} per node ({s.launcher} {np_} / {per_name})")
    return nodes, per, tasks


# Open MPI's and Hydra's options that name the hosts to run on
_HOST_OPTIONS = ("--host", "--hostfile", "--default-hostfile", "--rankfile")
# and those that may, by a file or parameter plint does not read: MCA parameters (orte_default_hostfile), tuning
# files of MCA parameters (--am, --tune); an option outside the grammar (an --app context file) counts as one too
_MAY_GIVE_HOSTS = (*_HOST_OPTIONS, "--mca", "--gmca", "--am", "--tune")
_PLACEHOLDER = re.compile(r"\$\{\w+\}|<unset>")


def _may_name_hosts(word: Word) -> bool:
    """Whether an option word of unknown text could give mpirun hosts: yes, unless its text is one of the texts the
    script could have written there (a branch plint could not decide: `[[ -n $MPI_ROOT ]] && CMD="$CMD --prefix
    $MPI_ROOT"`), each only options that name no host and their values."""
    if not all(p.text == "" or (not p.known and p.alternatives) for p in word.pieces):
        return True
    return any(_names_hosts(text) for p in word.unknowns for text in p.alternatives)


def _names_hosts(text: str) -> bool:
    value_next = False
    for token in text.split():
        if value_next:  # the value of the option before it, known or not
            value_next = False
            continue
        if _PLACEHOLDER.fullmatch(token) or not token.startswith("-"):
            return True  # a word that could be anything, or the program: the options end there
        name = token.split("=", 1)[0]
        canonical = MPIRUN.values.get(name) or MPIRUN.flags.get(name) or MPIRUN.pairs.get(name)
        if canonical is None or canonical in _MAY_GIVE_HOSTS:
            return True
        value_next = canonical in MPIRUN.values and "=" not in token
    return False


def one_host_reason(call: LauncherCall, allocation_nodes: Value | None, scheduler: bool) -> str | None:
    """Why every rank of an mpirun/mpiexec that names no hosts runs on one node, else None: outside any
    scheduler's job it runs them on the host it is started on (Open MPI's mpirun(1), "If no hostfile or host list
    is given, mpirun runs all processes on the local host"; Hydra's mpiexec likewise), inside a Slurm job of one
    node on that node (the allocation is its host list)."""
    # mpiexec and orterun are read as mpirun calls (mpirun_call): one launcher name for the three
    hidden = any(_may_name_hosts(w) for w in call.opaque)
    if call.launcher != "mpirun" or hidden or any(call.option(o) is not None for o in _HOST_OPTIONS):
        return None
    if not scheduler:
        return f"{call.launcher} names no hosts and no scheduler's job gives it any: every rank runs on the local host"
    if allocation_nodes is not None and allocation_nodes.known and allocation_nodes.value == 1:
        return f"{call.launcher} names no hosts: every rank runs on the job's one node"
    return None


def hostfile_slots(call: LauncherCall, hostfile) -> None:
    """Ranks a node from an mpirun --hostfile of `host slots=N` lines, every host the same N: Open MPI maps by slot
    (mpirun(1), "Mapping, Ranking, and Binding": the default --map-by slot fills each host's slots in the order of
    the hostfile), so -np ranks take ceil(np / N) hosts, N on each but the last. Left unknown unless np is a
    multiple of N within the hosts listed (more ranks than slots: Open MPI refuses without --oversubscribe), or for
    a hostfile plint reads only in part (its lines written from text known at run time, guessed where it is)."""
    if hostfile is None or hostfile.problems or hostfile.uncounted or hostfile.found_above or hostfile.assumed:
        return
    if call.tasks_per_node is not None or call.opaque or call.tasks is None or not call.tasks.known:
        return
    slots = {s for _, s, _ in hostfile.hosts}
    if len(slots) != 1 or None in slots:
        return
    (per,) = slots
    tasks = int(call.tasks.value)
    if per <= 0 or tasks % per or tasks // per > len(hostfile.hosts):
        return
    first = hostfile.hosts[0][2]
    call.tasks_per_node = derived(per, f"{call.launcher} --hostfile {hostfile.path}: slots={per} on every host", first)
