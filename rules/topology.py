"""PL2xx: where process groups land on the hardware, and launches that start the wrong number of
processes. Megatron orders ranks tp-cp-ep-dp-pp with tp fastest (parallel_state RankGenerator), and
launchers number ranks node by node, so a group of size k starting at a multiple of k stays inside a
node exactly when k divides the GPUs per node (shared/reference/megatron.md §3).
"""

from __future__ import annotations

from plint.layout import AXIS_PATHS, LayoutKey
from plint.rules.base import Example, Finding, LaunchContext, RuleContext, RuleDocs, no_fix, register, unsafe_fix
from plint.rules.common import (
    FIGURES,
    gpt,
    is_gpt_neox,
    is_megatron,
    known,
    on_assumed_node,
    span,
    torchrun,
    value,
)

SLURM_TORCHRUN = (
    "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node={tasks}\n#SBATCH --gpus-per-node=8\n"
    "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
    "srun torchrun --nnodes 2 --nproc_per_node {nproc} --rdzv-endpoint node0:29500 pretrain_gpt.py "
    "--tensor-model-parallel-size 8 --sequence-parallel --num-layers 24 --hidden-size 4096 "
    "--num-attention-heads 32 --seq-length 2048 --max-position-embeddings 2048 "
    "--micro-batch-size 1 --global-batch-size 64 --bf16\n"
)


def domain_of(ctx: LaunchContext) -> int | None:
    """GPUs that share NVLink: [tool.plint] nvlink-domain when given (72 on a GB200 NVL72 rack), else
    the GPUs of one node."""
    configured = ctx.settings.cluster.get("nvlink-domain") if ctx.settings is not None else None
    if configured:
        return int(configured)
    per = known(ctx, "cluster.nvlink_domain") or known(ctx, "cluster.gpus_per_node")
    return per[0] if per else None


def _multi_node(ctx: LaunchContext) -> bool:
    nodes = known(ctx, "cluster.nnodes")
    return bool(nodes and nodes[0] > 1)


def _crosses(size: int, domain: int) -> bool:
    return size > domain or domain % size != 0


@register(
    "PL201",
    "tp-spans-nodes",
    "error",
    "A tensor-parallel group crosses the NVLink domain.",
    RuleDocs(
        what="Checks that tp divides the GPUs per node (the NVLink domain) in a multi-node launch, so every "
        "tensor-parallel group sits on one node.",
        why="Tensor parallelism all-reduces (or reduce-scatters and all-gathers) activations of "
        "batch*sequence*hidden bytes twice per layer in forward and backward; over InfiniBand at 50 GB/s "
        "per GPU instead of NVLink at 450 GB/s (H100) that traffic runs about 9x slower and dominates "
        "the step.",
        bad=Example(
            {
                "launch.sh": SLURM_TORCHRUN.format(tasks=1, nproc=8).replace(
                    "--tensor-model-parallel-size 8", "--tensor-model-parallel-size 16"
                )
            }
        ),
        good=Example({"launch.sh": SLURM_TORCHRUN.format(tasks=1, nproc=8)}),
        fix=unsafe_fix(
            "Keep tensor parallelism inside a node. `plint fix --unsafe-fixes` rewrites tp, pp and the micro-"
            "batch (and uneven first/last pipeline stages where the planner picks them) to the planner's best "
            "Megatron layout that keeps the launch's global batch, cp, virtual stages, recompute, experts and "
            "sharding (unsafe: checkpoints change layout); `plint plan` lists the alternatives."
        ),
        references=("megatron/core/parallel_state.py RankGenerator",),
    ),
)
def tp_spans_nodes(ctx: LaunchContext):
    yield from on_assumed_node(ctx, _tp_spans_nodes(ctx))


def _tp_spans_nodes(ctx: LaunchContext):
    if not is_megatron(ctx) or not _multi_node(ctx):
        return
    domain, tp = domain_of(ctx), known(ctx, "parallel.tp")
    if domain and tp and tp[0] > 1 and _crosses(tp[0], domain):
        yield Finding(
            f"tp {tp[0]} does not fit in the {domain} GPUs of a node: each tensor-parallel group "
            "spans nodes and all-reduces every layer's activations over the network",
            span(ctx, "parallel.tp"),
            key="parallel.tp",
        )


ALTERNATIVE_DOC = (
    "It speaks only when it can name a concrete alternative of the same launch: the same GPUs, "
    "global batch, model, sharding and recompute, a smaller {axis} size whose group fits in the "
    "NVLink domain (the GPUs freed given to {given}), that passes the start-up checks, fits "
    "in memory (the high end of its measured error band included) and whose step the cost model "
    "predicts shorter by more than it can tell apart (5%; 10% for MoE models), at least half of it "
    "in the {what}. The message names it (" + FIGURES + "). Crossing nodes with no better "
    "layout (a large MoE model whose experts fit only over many nodes) is what the run costs, and "
    "plint stays quiet."
)


@register(
    "PL202",
    "cp-spans-nodes",
    "warning",
    "The tensor x context parallel group crosses the NVLink domain, and a smaller cp does better.",
    RuleDocs(
        what="Checks that tp*cp divides the GPUs per node in a multi-node launch (cp ranks follow tp ranks "
        "in Megatron's order). "
        + ALTERNATIVE_DOC.format(axis="context-parallel", given="data parallelism", what="context-parallel exchange"),
        why="The context-parallel ring exchanges key/value blocks every layer; across nodes it rides the "
        "slower network and is hard to overlap with attention compute for short chunks. Where the "
        "exchange hides under the attention it feeds (NVIDIA's Llama-3.1 405B recipes run tp 8 x cp 2 "
        "across two nodes), no smaller cp is faster and the rule is quiet.",
        bad=torchrun(
            gpt("--tensor-model-parallel-size 4 --context-parallel-size 4 --sequence-parallel", seq=32768, glob=32),
            launcher="torchrun --nproc_per_node 8 --nnodes 2 --master_addr n0",
        ),
        good=torchrun(
            gpt("--tensor-model-parallel-size 4 --context-parallel-size 2 --sequence-parallel", seq=32768, glob=32),
            launcher="torchrun --nproc_per_node 8 --nnodes 2 --master_addr n0",
        ),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` writes the context-parallel size the message names (unsafe: the "
            "data-parallel size and checkpoints change)."
        ),
    ),
)
def cp_spans_nodes(ctx: LaunchContext):
    if not is_megatron(ctx) or not _multi_node(ctx):
        return
    domain, sizes = domain_of(ctx), known(ctx, "parallel.tp", "parallel.cp")
    if not (
        domain and sizes and sizes[1] > 1 and not _crosses(sizes[0], domain) and _crosses(sizes[0] * sizes[1], domain)
    ):
        return
    yield from _with_alternative(
        ctx,
        "cp",
        domain,
        f"tp*cp = {sizes[0]}*{sizes[1]} = {sizes[0] * sizes[1]} does not fit in the {domain} GPUs "
        "of a node: the context-parallel ring crosses nodes",
        lambda new: f"cp {new.cp} and dp {new.data_parallel()} instead keep it inside a node",
    )


def _with_alternative(ctx: LaunchContext, axis: str, domain: int, head: str, instead):
    """PL202's and PL203's finding: the group that crosses nodes, its share of the step and the smaller size
    that does better (plint.rules.cost.spanning_alternative); nothing when there is none."""
    from plint.rules.cost import gain_text, spanning_alternative

    better = spanning_alternative(ctx, axis, domain)
    if better is None:
        return
    new, variant, est = better
    share = 100 * est.time_s.get(axis, 0.0) / est.step_time_s
    yield Finding(
        f"{head} ({share:.1f}% of the step); {instead(new)}: {gain_text(variant, est, new)}",
        span(ctx, AXIS_PATHS[axis]),
        key=AXIS_PATHS[axis],
    )


@register(
    "PL203",
    "ep-spans-nodes",
    "warning",
    "The expert all-to-all group crosses the NVLink domain, and a smaller ep does better.",
    RuleDocs(
        what="Checks that etp*ep divides the GPUs per node in a multi-node launch. "
        + ALTERNATIVE_DOC.format(axis="expert-parallel", given="more experts on each GPU", what="expert all-to-all"),
        why="Every MoE layer sends each token to its top-k experts and back (two all-to-alls per layer); "
        "Megatron's MoE guide: 'Ensure EP x TP fits within a single node ... prefer PP over expanding "
        "TP/EP across nodes.' Large MoE models (DeepSeek-V3, Mixtral 8x22B at scale) train with ep across "
        "nodes because their experts fit nowhere else: there the rule finds no better layout.",
        bad=torchrun(
            gpt(
                "--expert-model-parallel-size 16 --num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size "
                "512\n--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather",
                seq=8192,
                glob=64,
            ),
            launcher="torchrun --nproc_per_node 8 --nnodes 2 --master_addr n0",
        ),
        good=torchrun(
            gpt(
                "--expert-model-parallel-size 8 --num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size "
                "512\n--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather",
                seq=8192,
                glob=64,
            ),
            launcher="torchrun --nproc_per_node 8 --nnodes 2 --master_addr n0",
        ),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` writes the expert-parallel size the message names (unsafe: checkpoints change)."
        ),
    ),
)
def ep_spans_nodes(ctx: LaunchContext):
    if not is_megatron(ctx) or not _multi_node(ctx):
        return
    domain, sizes = domain_of(ctx), known(ctx, "parallel.etp", "parallel.ep")
    if not (domain and sizes and sizes[1] > 1 and _crosses(sizes[0] * sizes[1], domain)):
        return
    yield from _with_alternative(
        ctx,
        "ep",
        domain,
        f"etp*ep = {sizes[0]}*{sizes[1]} = {sizes[0] * sizes[1]} does not fit in the {domain} GPUs "
        "of a node: the expert all-to-all crosses nodes every MoE layer",
        lambda new: f"ep {new.ep} instead keeps it inside a node",
    )


def _calls(ctx: RuleContext):
    chain = ctx.layout.extras.chain if ctx.layout is not None else None
    return chain.calls if chain is not None else []


@register(
    "PL204",
    "srun-double-launch",
    "error",
    "srun starts a launcher per GPU, and each launcher starts a worker per GPU.",
    RuleDocs(
        what="Checks srun (or a batch job's --ntasks-per-node) starting several tasks per node, each running "
        "torchrun/deepspeed/accelerate that itself starts several workers; and srun starting GPT-NeoX's deepy.py "
        "in more than one task, since deepy.py runs DeepSpeed's runner, which starts every rank of the job itself "
        "(a fork's deepy.py that runs the trainer directly is one rank, and srun is then its launcher); and srun "
        "running the deepspeed runner in more than one task when its hostfile or --include names several hosts "
        "and it has no --no_ssh, since each runner then starts every rank of the job; and srun running it once "
        "on each of several nodes with no hostfile, or a hostfile plint knows names one host, since each runner "
        "then trains its own node alone (or, with no hostfile, starts every rank /job/hostfile lists where that "
        "file exists), or with --no_ssh stops at its --node_rank check (quiet when a --hostfile's host count is "
        "unknown: a file plint cannot read, or one written from the job's node list).",
        why="With 8 tasks per node each starting 8 workers, 64 processes fight over 8 GPUs: ranks collide on "
        "devices, rendezvous sizes disagree and the job hangs or dies with CUDA out-of-memory. deepy.py under "
        "srun on 2 nodes starts the whole job twice, each copy on every GPU of both nodes. DeepSpeed's runner "
        "with no --hostfile and no /job/hostfile runs on 'local resources only' (runner.py fetch_hostfile), so "
        "`srun deepspeed` on 4 nodes of 8 GPUs trains 4 separate jobs of 8 ranks, not one of 32; a hostfile of "
        "one host does the same (the runner is multi-node only with more than one host, and never checks that "
        "host is the node it runs on).",
        bad=Example({"launch.sh": SLURM_TORCHRUN.format(tasks=8, nproc=8)}),
        good=Example({"launch.sh": SLURM_TORCHRUN.format(tasks=1, nproc=8)}),
        fix=no_fix(
            "use one task per node for a launcher, and run GPT-NeoX's deepy.py once, not under srun; give DeepSpeed's "
            "runner a hostfile of the job's nodes and run it once, or in every task with --no_ssh --node_rank "
            "$SLURM_NODEID --master_addr (the first node)."
        ),
    ),
)
def srun_double_launch(ctx: LaunchContext):
    calls = _calls(ctx)
    kinds = [c.launcher for c in calls]
    if "srun" not in kinds:
        return
    srun = calls[kinds.index("srun")]
    if is_gpt_neox(ctx):  # deepy.py read as the DeepSpeed runner it starts: its own count of processes
        yield from _deepy_under_srun(ctx, srun, calls[-1])
        return
    if not any(k in kinds for k in ("torchrun", "torch.distributed.launch", "deepspeed", "accelerate")):
        return
    if "deepspeed" in kinds:
        runner = calls[kinds.index("deepspeed")]
        message = _runner_whole_jobs(srun, runner) or _runner_local_jobs(ctx, srun, runner)
        if message is not None:
            yield Finding(message, _srun_word(srun), key="cluster.world_size")
            return
    job = ctx.layout.extras.slurm
    per_node = srun.tasks_per_node
    if per_node is None and srun.tasks is None and job is not None:
        per_node = job.ntasks_per_node
    workers = known(ctx, "cluster.workers_per_node")
    if per_node is not None and per_node.value and per_node.value > 1 and workers and workers[0] > 1:
        yield Finding(
            f"srun starts {per_node.value} tasks per node and each starts {workers[0]} workers: "
            f"{per_node.value * workers[0]} processes per node",
            per_node.span or srun.command.site,
            key="cluster.workers_per_node",
        )


def _count(v) -> int | None:
    return v.value if v is not None and isinstance(v.value, int) and not isinstance(v.value, bool) else None


def _backend(runner) -> str | None:
    """How DeepSpeed's runner reaches other hosts: its --launcher (pdsh when not given), None when not read."""
    word = runner.option("--launcher")
    if word is None:
        return "pdsh"
    return (word.text or "").lower() if word.known else None


def _started(program: str, tasks: int | None, per: int | None) -> str:
    return f"srun starts {program} {tasks} times" if tasks else f"srun starts {program} {per} times per node"


def _srun_word(srun):
    """Where a finding about the srun step points: the srun word, else the whole command."""
    words = srun.command.words
    word = next((w for w in words if w.known and (w.text or "").rsplit("/", 1)[-1] == "srun"), None)
    return word.site if word is not None else srun.command.site


def _runner_whole_jobs(srun, runner) -> str | None:
    """What several srun tasks each running DeepSpeed's runner start, when each starts the whole job: the
    runner is multi-node when `(args.force_multi or len(active_resources) > 1) and not args.no_ssh`
    (deepspeed/launcher/runner.py `main`, DeepSpeed 0.19; --no_ssh since 0.14.5) and then launches every
    host of its hostfile/--include through pdsh, mpirun or srun (multinode_runner.py) rather than its own
    node's GPUs. None when a task runs only its own node, or plint cannot tell."""
    if runner.flag("--no_ssh"):
        return None  # each task launches its own node (with --node_rank): srun is the node launcher
    tasks, per = _count(srun.tasks), _count(srun.tasks_per_node)
    hosts, world = _count(runner.nnodes), _count(runner.world_size)
    read = runner.nnodes is not None and runner.nnodes.origin != "assumed"
    if not ((tasks or 0) > 1 or (per or 0) > 1) or not (read and (hosts or 0) > 1):
        return None  # one task, or one host (even --force_multi then only reaches the task's own node)
    backend = _backend(runner)
    how = f"through {backend or 'its launcher'}" + (" (srun inside srun)" if backend == "slurm" else "")
    started = _started("DeepSpeed's runner", tasks, per)
    on_hosts = f" on its {hosts} hosts" if hosts else ""
    many = (
        f": {tasks} x {world} = {tasks * world} processes for a job of {world} ranks"
        if tasks and world
        else f": {per} whole jobs per node"
        if per and not tasks
        else ""
    )
    return (
        f"{started}, and each, multi-node without --no_ssh, starts every rank of the job{on_hosts} {how}{many}; "
        "run deepspeed once outside srun, or give it --no_ssh --node_rank $SLURM_NODEID --master_addr (the first node) "
        "with one task per node"
    )


def _runner_local_jobs(ctx: LaunchContext, srun, runner) -> str | None:
    """What srun tasks, one per node on several nodes, each running DeepSpeed's runner over one host start.
    With no file at --hostfile (default /job/hostfile, the DLTS platform's) runner.py `fetch_hostfile` warns
    "Unable to find hostfile, will proceed with training with local resources only", and `main` takes
    {'localhost': device_count}, sets master_addr to 127.0.0.1 and runs deepspeed.launcher.launch on that
    node alone (multi_node_exec False; the same from v0.9.0 to 0.19): every task is a job of its own. Where
    /job/hostfile exists, `main` reads it instead, and with several hosts each runner starts them all.
    A hostfile of one host (or --num_nodes 1) leaves `main` one active resource, so it is not multi-node either
    (`(force_multi or len(active_resources) > 1) and not no_ssh`, 0.19.5): it runs launch.py, which starts the
    slots of `node_list[node_rank]` (node_rank 0) on the node it runs on, never comparing that host with its
    own name (launch.py `main`); before that `main` ssh-checks the host (unless --no_ssh_check) and, with no
    --master_addr, takes its `hostname -I`, so a runner that cannot reach it stops. --no_ssh does not join them:
    `main` then asserts 0 <= node_rank < len(active_resources), here 1 (since 0.14.5).
    Quiet when a named --hostfile's host count is unknown (not read, or written from values known at run time),
    with --include/--exclude (hosts plint leaves to the reader), --force_multi (the backend then decides where
    ranks land), and with more than one task per node (the per-node count speaks)."""
    if runner.option("--include", "--exclude") is not None or runner.flag("--force_multi"):
        return None
    nodes, tasks, per = _count(srun.nodes), _count(srun.tasks), _count(srun.tasks_per_node)
    if nodes is None or nodes < 2 or per != 1:
        return None
    named = runner.option("--hostfile") is not None
    no_ssh = runner.flag("--no_ssh")
    if named and not _one_host(runner):
        return None  # several hosts (the whole-jobs case), or a host count plint does not know
    several = runner.option("--num_nodes") is not None if no_ssh else _count(runner.nnodes) != 1
    if not named and several:
        return None  # --num_nodes above 1 with no hostfile: the runner raises first (PL208)
    gpus = _count(runner.world_size) or (None if runner.option("--num_gpus") else _stated(ctx, "cluster.gpus_per_node"))
    started = _started("DeepSpeed's runner", tasks or nodes, per) + " (one per node)"
    slots = f"`<host> slots={gpus or 'N'}` a line"
    if no_ssh:
        knows = (
            "with --no_ssh and a hostfile of one host, so each runner knows only one node"
            if named
            else "with --no_ssh but no --hostfile, so unless /job/hostfile (DeepSpeed's default) lists the job's "
            "nodes each runner knows only its own node"
        )
        return f"{started} {knows} and its --node_rank must be 0: " + (
            f"{_no_ssh_ranks(runner, nodes, gpus)}; give every task a --hostfile of the job's nodes ({slots}), "
            "which --no_ssh needs"
        )
    fix = (
        "run deepspeed once outside srun, or give every task that --hostfile with --no_ssh --node_rank "
        "$SLURM_NODEID --master_addr (the first node)"
    )
    if named:
        one = "with --num_nodes 1" if runner.option("--num_nodes") is not None else "and its hostfile names one host"
        return (
            f"{started} {one}, so none is multi-node: each runs that host's slots on its own node, whichever it "
            f"is: {_separate_jobs(nodes, gpus)}; list the job's nodes in the hostfile ({slots}) and {fix}"
        )
    return (
        f"{started} with no --hostfile: where /job/hostfile (DeepSpeed's default) is missing, each runs its own "
        f"node's GPUs only: {_separate_jobs(nodes, gpus)}; where it lists several hosts, each starts them all: "
        f"{nodes} copies of the job; write the job's nodes to a hostfile ({slots}) and {fix}"
    )


def _one_host(runner) -> bool:
    """The runner's active hosts are known to be one: a hostfile plint read (or that the script writes with
    known lines) naming one host, or --num_nodes 1 (runner.py `main` keeps the first num_nodes hosts)."""
    hosts = runner.nnodes
    return hosts is not None and hosts.origin != "assumed" and _count(hosts) == 1


def _no_ssh_ranks(runner, nodes: int, gpus: int | None) -> str:
    """What runners that each know one node do with their --node_rank (runner.py `main`: the assertion
    'Launching training without ssh, but --node_rank is not set correctly', default -1)."""
    rank = runner.node_rank
    if rank is None:
        return "without --node_rank (default -1) every runner stops at that check"
    if rank.known and rank.value == 0:
        return _separate_jobs(nodes, gpus)
    if rank.known:
        return f"--node_rank {rank.value} stops every runner at that check"
    alone = f" with {gpus} ranks instead of {nodes * gpus}" if gpus else ""
    return f"a runner given a --node_rank above 0 stops at that check, one given 0 trains its node alone{alone}"


def _separate_jobs(nodes: int, gpus: int | None) -> str:
    """Runners that each start only their own node's GPUs: that many jobs, not one across the nodes."""
    return (
        f"{nodes} separate jobs of {gpus} ranks instead of one of {nodes * gpus}" if gpus else f"{nodes} separate jobs"
    )


def _deepy_under_srun(ctx: LaunchContext, srun, runner):
    """GPT-NeoX's deepy.py is a launcher, not a rank: deepy.py `main` hands its config to DeepSpeed's runner
    (deepspeed.launcher.runner.main), which starts the ranks itself, and NeoX gives the runner no --no_ssh or
    --node_rank (NeoXArgsDeepspeedRunner, gpt-neox ea7aefd8). So each srun task running deepy.py starts a
    launch of its own."""
    runs = value(ctx, "neox.deepy_runs_runner")
    if runs is None or runs.value is not True:
        return  # a fork's deepy.py that is one rank itself: srun with a task per GPU is its launcher
    tasks, per = _count(srun.tasks), _count(srun.tasks_per_node)
    if not ((tasks or 0) > 1 or (per or 0) > 1):
        return  # one deepy.py: the runner starts the job once
    message = _deepy_launches(ctx, srun, runner)
    if runs.origin == "assumed":
        message += " (GPT-NeoX's deepy.py assumed: the one run is not in the checked tree)"
    yield Finding(
        f"{message}; run deepy.py once, not under srun",
        _srun_word(srun),
        key="cluster.world_size",
    )


def _deepy_launches(ctx: LaunchContext, srun, runner) -> str:
    """What the srun tasks each running DeepSpeed's runner start. The runner (DeeperSpeed 91d1c55b, which
    GPT-NeoX pins, runner.py `main`) launches every host of its hostfile when multi-node (`force_multi or
    len(active_resources) > 1`; deepy.py sets force_multi for deepspeed_slurm / deepspeed_mpi), for launcher
    slurm through `srun -n <slots>` (multinode_runner.py SlurmRunner.get_cmd); else only the GPUs of the node
    it runs on."""
    tasks, per, nodes = _count(srun.tasks), _count(srun.tasks_per_node), _count(srun.nodes)
    started = _started("deepy.py", tasks, per)
    backend = _backend(runner)
    hosts, world = _count(runner.nnodes), _count(runner.world_size)
    unknown_world = f"how many ranks each starts is unknown: {runner.world_size.note if runner.world_size else None}"
    if "--force_multi" in runner.options or (hosts or 0) > 1:
        how = (
            "which calls srun itself for every rank (launcher slurm: srun inside srun)"
            if backend == "slurm"
            else f"which starts every rank of the job{f' on its {hosts} hosts' if hosts else ''} through "
            f"{backend or 'its launcher'}"
        )
        if not world:
            return f"{started}, and each runs DeepSpeed's runner, {how}: each a whole job ({unknown_world})"
        many = f"{tasks} x {world} = {tasks * world} processes" if tasks else f"{per} whole jobs per node"
        return f"{started}, and each runs DeepSpeed's runner, {how}: {many} for a job of {world} ranks"
    gpus = world or _stated(ctx, "cluster.gpus_per_node")
    if hosts == 1 and per is not None and per > 1:
        total = f": {per} x {gpus} = {per * gpus} processes per node" if gpus else ""
        return f"{started}, and each runs DeepSpeed's runner on every GPU of its node{total}"
    if hosts == 1 and nodes is not None and nodes > 1:
        return (
            f"srun starts deepy.py on each of {nodes} nodes, and each runs DeepSpeed's runner on one host only "
            f"(no hostfile in the launch names the other nodes): {_separate_jobs(nodes, gpus)}"
        )
    return f"{started}, and each runs DeepSpeed's runner, which starts the job's ranks itself ({unknown_world})"


def _stated(ctx: LaunchContext, key: LayoutKey) -> int | None:
    """A layout count read from the launch (not assumed by plint), else None."""
    v = value(ctx, key)
    return _count(v) if v is not None and v.origin != "assumed" else None


def _allocated(ctx: RuleContext):
    job = ctx.layout.extras.slurm if ctx.layout is not None else None
    if job is None or job.gpus_per_node is None or job.gpus_per_node.value is None:
        return None
    return job.gpus_per_node


@register(
    "PL205",
    "nproc-exceeds-gpus",
    "error",
    "More workers per node than GPUs allocated.",
    RuleDocs(
        what="Compares the workers each node starts with the GPUs the Slurm job allocates per node.",
        why="Extra workers find no device: they fail with 'invalid device ordinal' or share a GPU and run "
        "out of memory.",
        bad=Example(
            {
                "launch.sh": SLURM_TORCHRUN.format(tasks=1, nproc=16).replace(
                    "--tensor-model-parallel-size 8", "--tensor-model-parallel-size 4"
                )
            }
        ),
        good=Example({"launch.sh": SLURM_TORCHRUN.format(tasks=1, nproc=8)}),
        fix=no_fix(),
    ),
)
def nproc_exceeds_gpus(ctx: LaunchContext):
    gpus, workers = _allocated(ctx), value(ctx, "cluster.workers_per_node")
    if gpus is not None and workers is not None and workers.value and workers.value > gpus.value:
        yield Finding(
            f"{workers.value} workers per node but the job allocates {gpus.value} GPUs per node",
            workers.span or span(ctx, "cluster.workers_per_node"),
            key="cluster.workers_per_node",
        )


@register(
    "PL206",
    "gpus-left-idle",
    "warning",
    "Fewer workers per node than GPUs allocated.",
    RuleDocs(
        what="Compares the workers each node starts with the GPUs the Slurm job allocates per node.",
        why="The idle GPUs are paid for and unused: with 4 workers on 8 allocated GPUs half the allocation "
        "does nothing.",
        bad=Example(
            {
                "launch.sh": SLURM_TORCHRUN.format(tasks=1, nproc=4).replace(
                    "--tensor-model-parallel-size 8", "--tensor-model-parallel-size 4"
                )
            }
        ),
        good=Example({"launch.sh": SLURM_TORCHRUN.format(tasks=1, nproc=8)}),
        fix=no_fix(),
    ),
)
def gpus_left_idle(ctx: LaunchContext):
    gpus, workers = _allocated(ctx), value(ctx, "cluster.workers_per_node")
    if gpus is not None and workers is not None and workers.value and workers.value < gpus.value:
        yield Finding(
            f"{workers.value} workers per node leave {gpus.value - workers.value} of the "
            f"{gpus.value} allocated GPUs idle",
            workers.span or gpus.span,
            key="cluster.workers_per_node",
        )


LOCAL = ("localhost", "127.0.0.1", "::1")


@register(
    "PL207",
    "master-addr-localhost",
    "error",
    "Several nodes rendezvous at localhost.",
    RuleDocs(
        what="Checks multi-node launches whose --master_addr / --rdzv-endpoint is localhost or 127.0.0.1 as "
        "written (a `${MASTER_ADDR:-localhost}` default that the environment overrides is not flagged, nor the "
        "head node's own script of a per-node pair, `--node_rank 0`, whose rendezvous store listens on every "
        "address).",
        why="Each node then waits for its own local rendezvous: the job hangs until the NCCL or rendezvous "
        "timeout (10 minutes by default) and fails.",
        bad=torchrun(gpt(""), launcher="torchrun --nnodes 2 --nproc_per_node 8 --master_addr localhost"),
        good=torchrun(gpt(""), launcher="torchrun --nnodes 2 --nproc_per_node 8 --master_addr node001"),
        fix=no_fix("the head node's address is known only to the cluster."),
    ),
)
def master_addr_localhost(ctx: LaunchContext):
    if not _multi_node(ctx):
        return
    chain = ctx.layout.extras.chain
    addr = chain.master_addr if chain is not None else None
    if chain is None or addr is None or addr.value not in LOCAL:
        return
    for call in chain.calls:
        for name in ("--master-addr", "--rdzv-endpoint", "--master_addr"):
            word = call.option(name)
            if word is not None and any(p.default_of for p in word.pieces):
                return  # `${MASTER_ADDR:-localhost}`: the job's environment sets the real address
        if _head_node_only(call):
            return
    nodes = value(ctx, "cluster.nnodes")
    assert nodes is not None  # _multi_node read it
    yield Finding(
        f"{nodes.value} nodes rendezvous at {addr.value}: every node waits for itself",
        addr.span,
        key="cluster.master_addr",
    )


def _head_node_only(call) -> bool:
    """A launch written for the head node alone (`--node_rank 0`, literal): the others start from their own
    script with the head's address. The head's agent hosts the rendezvous store, which listens on every local
    address (torch/csrc/distributed/c10d/socket.cpp, SocketListenOp::tryListen: getaddrinfo(nullptr, port,
    AI_PASSIVE)), so its own workers reach it at 127.0.0.1 and the other nodes at its real address."""
    word = call.option("--node_rank", "--node-rank")
    return word is not None and word.text == "0" and not any(p.default_of for p in word.pieces)


@register(
    "PL208",
    "hostfile-mismatch",
    "error",
    "The deepspeed launcher's hostfile and its node/GPU options disagree or cannot be combined.",
    RuleDocs(
        what="Reports what DeepSpeed's runner rejects when it resolves resources: bad or duplicate hostfile "
        "lines, --num_nodes/--num_gpus together with --include/--exclude, unknown hosts or slots, more "
        "than one node without a hostfile.",
        why="The runner raises before any rank starts, using DeepSpeed's own messages quoted here.",
        bad=Example(
            {
                "launch.sh": "deepspeed --hostfile hostfile --num_gpus 4 --include w0 train.py\n",
                "hostfile": "w0 slots=8\nw1 slots=8\n",
            }
        ),
        good=Example(
            {
                "launch.sh": "deepspeed --hostfile hostfile --include w0:0,1,2,3 train.py\n",
                "hostfile": "w0 slots=8\nw1 slots=8\n",
            }
        ),
        fix=no_fix(),
        references=("deepspeed/launcher/runner.py",),
    ),
    needs_layout=False,
)
def hostfile_mismatch(ctx: RuleContext):
    reading = ctx.reading
    if ctx.layout is not None and reading.layouts and ctx.layout is not reading.layouts[0]:
        return
    for problem in reading.problems:
        if problem.kind == "hostfile":
            yield Finding(problem.message, problem.span)


SRUN_PYTHON = (
    "#!/bin/bash\n#SBATCH --nodes=2 --ntasks-per-node=8 --gpus-per-node=8\n{prefix}"
    "srun {wrap}python pretrain_gpt.py --tensor-model-parallel-size 8 --sequence-parallel "
    "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
    "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --bf16{end}\n"
)
SRUN_RANK_ENV = (
    "export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1) MASTER_PORT=29500\n"
    "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
)


# what an MPI launcher gives each process instead: Open MPI's OMPI_COMM_WORLD_*, and the PMI_RANK/PMI_SIZE of
# MPICH's Hydra and HPE Cray PALS (the mpiexec of ALCF's Polaris and Aurora: argonne-lcf/user-guides 7d04a3f9)
MPI_RANK_VARIABLES = "OMPI_COMM_WORLD_RANK/SIZE (Open MPI) or PMI_RANK/PMI_SIZE (MPICH, Cray PALS)"


@register(
    "PL209",
    "rank-env-missing",
    "info",
    "srun or mpirun starts Megatron-LM directly, and nothing gives it RANK and WORLD_SIZE.",
    RuleDocs(
        what="Checks a Megatron-LM entry point started by srun or mpirun with no torchrun in between, where the "
        "launch sets neither RANK nor WORLD_SIZE (nor passes them with `env`, `--export` or `-x`). Quiet "
        "for srun with a pyxis container (--container-image/--container-name): enroot's "
        "50-slurm-pytorch.sh hook exports RANK, WORLD_SIZE, LOCAL_RANK and MASTER_ADDR/PORT from Slurm's "
        "variables in PyTorch images. Info only: a container entry point or sitecustomize may map them "
        "where plint cannot see.",
        why="Megatron-LM takes its rank and world size from the RANK and WORLD_SIZE variables, defaulting to 0 "
        "and 1 (training/arguments.py); srun sets SLURM_PROCID and SLURM_NTASKS instead and mpirun "
        "OMPI_COMM_WORLD_*. Every task then believes it is rank 0 of 1, and the start-up check that the "
        "world divides into the model-parallel sizes fails on all of them.",
        bad=Example({"launch.sh": SRUN_PYTHON.format(prefix="", wrap="", end="")}),
        good=Example(
            {
                "launch.sh": SRUN_PYTHON.format(
                    prefix=SRUN_RANK_ENV,
                    end="'",
                    wrap="bash -c 'RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID ",
                )
            }
        ),
        fix=no_fix(
            "start torchrun with one task per node, or map SLURM_PROCID/SLURM_NTASKS to RANK/WORLD_SIZE in the task."
        ),
    ),
)
def rank_env_missing(ctx: LaunchContext):
    from plint.rules.environment import launch_env

    if ctx.layout.value("trainer") != "megatron":
        return  # the Megatron-DeepSpeed forks start through deepspeed.init_distributed, which discovers MPI
    kinds = [c.launcher for c in _calls(ctx)]
    starter = next((k for k in ("srun", "mpirun") if k in kinds), None)
    if starter is None or any(k in kinds for k in ("torchrun", "torch.distributed.launch", "deepspeed", "accelerate")):
        return
    world = known(ctx, "cluster.world_size")
    if not world or world[0] <= 1:
        return
    if starter == "srun" and any(
        c.launcher == "srun" and c.flag("--container-image", "--container-name") for c in _calls(ctx)
    ):
        return  # pyxis: enroot's 50-slurm-pytorch hook (which NVIDIA's recipes require) maps SLURM_* to RANK etc.
    missing = [name for name in ("RANK", "WORLD_SIZE") if launch_env(ctx, name) is None]
    if missing:
        yield Finding(
            f"{starter} starts {world[0]} processes that run the trainer directly, but "
            f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set in the launch: "
            "Megatron-LM reads them (default rank 0 of 1), so unless the image maps "
            f"{'SLURM_PROCID/SLURM_NTASKS' if starter == 'srun' else MPI_RANK_VARIABLES} to them, "
            "every process believes it is alone",
            ctx.layout.site,
            key="cluster.world_size",
        )
