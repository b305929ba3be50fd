"""srun: its options, and how many tasks a step starts (from its options or the job's environment)."""

from __future__ import annotations

from plint.reading.shell.model import Command, Problem
from plint.values import Value, derived, from_word, parse_int, unresolved
from plint.reading.sources.launch_calls import (
    LauncherCall,
    OptionScan,
    finish_call,
    hidden_by_unknown,
    looks_like_program,
    quotient_of,
    var_value,
)


def srun_call(command: Command, start: int) -> LauncherCall:
    from plint.reading.sources.slurm import node_count, parse_options

    words = command.words[start:]
    parsed = parse_options(words, "srun", opaque=lambda i: any(looks_like_program(w) for w in words[i + 1 :]))
    scan = OptionScan({}, start + parsed.stop, parsed.opaque, parsed.unknown)
    for opt in parsed.options:
        scan.options.setdefault("--" + opt.name, []).extend([opt.value] if opt.value is not None else [])
    call = finish_call(LauncherCall("srun", command, scan.options), scan)
    nodes = call.option("--nodes")
    call.nodes = node_count(nodes) if nodes is not None else None
    for attr, name in (("tasks", "--ntasks"), ("tasks_per_node", "--ntasks-per-node")):
        w = call.option(name)
        if w is not None:
            setattr(call, attr, from_word(w, parse_int, f"srun {name}"))
    return call


# ---- srun: how many tasks a step starts ---------------------------------------------------------
class _Unknown(Exception):
    pass


def _job_env_value(command: Command, job, names: tuple[str, ...]) -> Value | None:
    """A SLURM_* variable srun reads as a default (srun(1) INPUT ENVIRONMENT VARIABLES): from the command's
    environment (the batch script's, seeded from #SBATCH), else from the job."""
    for name in names:
        var = command.env.get(name)
        if var is not None and var.exported:
            return var_value(var, parse_int, name)
    if job is not None:
        from plint.reading.sources.slurm import implied_env

        env = implied_env(job)
        for name in names:
            if name in env:
                return var_value(env[name], parse_int, name)
    return None


def read_srun_step(call: LauncherCall, job) -> None:
    """Nodes, tasks and tasks per node of an srun step, following srun's `_opt_verify` (src/srun/opt.c): the
    command line overrides SLURM_JOB_NUM_NODES/SLURM_NTASKS/SLURM_NTASKS_PER_NODE from the job; with nodes and
    no task count it starts one task per node; a --ntasks-per-node that contradicts an inherited task count
    is ignored (srun warns "can't honor --ntasks-per-node")."""
    env = call.command
    cli_nodes, cli_tasks, cli_per = call.nodes, call.tasks, call.tasks_per_node
    env_nodes = _job_env_value(env, job, ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"))
    env_tasks = _job_env_value(env, job, ("SLURM_NTASKS", "SLURM_NPROCS"))
    env_per = _job_env_value(env, job, ("SLURM_NTASKS_PER_NODE",))
    hidden = hidden_by_unknown(call, "--nodes/--ntasks")
    nodes, tasks, per = cli_nodes or env_nodes, cli_tasks or env_tasks, cli_per or env_per
    nodes_by_env, tasks_by_env = (
        cli_nodes is None and env_nodes is not None,
        cli_tasks is None and env_tasks is not None,
    )
    in_job = env_nodes is not None or env_tasks is not None or job is not None

    def need(v: Value | None) -> int:
        if v is None or not v.known:
            raise _Unknown(v.note if v is not None and v.note else "unknown")
        return v.value

    try:
        if hidden is not None:
            raise _Unknown(hidden.note)
        if nodes is None and tasks is None and per is None:
            if in_job:
                raise _Unknown("srun inside a job whose node count is not known from its options")
            # srun(1): inside an allocation (sbatch/salloc) a step with no -N/-n takes the allocation's
            # SLURM_NNODES/SLURM_NTASKS; a script with no #SBATCH directive gets its allocation from the
            # command line that submits it, which the file does not show. One task is only srun's answer
            # on a login node, which a multi-GPU launch script is not written for.
            raise _Unknown(
                "srun with no -N/-n runs as many tasks as the allocation it is started in, and no "
                "#SBATCH directive gives it (supply the sbatch/salloc options with --env "
                "SLURM_NNODES=<n> --env SLURM_NTASKS=<n>)"
            )
        if nodes is not None and per is None and tasks is None:
            n = need(nodes)
            call.nodes, call.tasks = nodes, derived(n, f"srun starts one task per node: {n} tasks", nodes.span)
            call.tasks_per_node = derived(1, "srun starts one task per node by default", nodes.span)
            return
        if nodes is not None and tasks is not None:
            n, t = need(nodes), need(tasks)
            if t < n:
                nodes = derived(t, f"srun cannot run {t} tasks on {n} nodes and uses {t}", tasks.span)
                n = t
            if per is not None and tasks_by_env and not nodes_by_env:
                tasks = None  # srun drops the inherited count and takes nodes * tasks-per-node
            elif per is not None and t > n * need(per):
                call.problems.append(
                    Problem(
                        "slurm",
                        f"srun: can't honor --ntasks-per-node set to {per.value} which doesn't match the "
                        f"requested tasks {t} with the maximum number of requested nodes {n}. Ignoring "
                        "--ntasks-per-node.",
                        per.span,
                    )
                )
                per = None
        if per is not None and tasks is None:
            n = need(nodes) if nodes is not None else 1
            tasks = derived(n * need(per), f"tasks = {n} nodes * {per.value} tasks per node (srun)", per.span)
        if nodes is None:
            raise _Unknown(
                f"srun -n {tasks.value if tasks is not None else '?'} without -N: Slurm spreads the "
                "tasks over nodes at run time"
            )
        call.nodes, call.tasks = nodes, tasks
        if per is None:
            per = quotient_of(tasks, nodes, "tasks per node = {w} tasks / {n} nodes (srun)")  # type: ignore[arg-type]
        call.tasks_per_node = per
    except _Unknown as why:
        note = f"srun step size unknown: {why.args[0]}"
        call.nodes = nodes if nodes is not None and nodes.known and hidden is None else unresolved(note)
        call.tasks = unresolved(note)
        call.tasks_per_node = per if per is not None and per.known and hidden is None else unresolved(note)
