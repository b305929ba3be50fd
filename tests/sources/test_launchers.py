"""Launchers in every spelling, wrappers, chains, and what each says about nodes, workers and world size.

Most tests build Commands directly (`cmd`), the way the shell evaluator would hand them over; the last
ones go through the evaluator end to end (the `launches` fixture in conftest.py)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plint.reading.shell.model import Command, Piece, ShellResult, Var, Word
from plint.source import SourceFile
from plint.reading.sources.launchers import find_launches, parse_launcher, unwrap
from plint.reading.sources.slurm import read_directives


# ---- building commands --------------------------------------------------------------------------
def cmd(
    line: str,
    env: dict[str, str] | None = None,
    parent: Command | None = None,
    assignments: dict[str, str] | None = None,
) -> Command:
    """A Command from a shell-like line split on blanks; `$NAME` inside a token is an unknown expansion.
    Every known character keeps its span in a SourceFile holding the line."""
    src = SourceFile("launch.sh", line)
    words, at = [], 0
    for token in line.split():
        at = line.index(token, at)
        pieces = []
        for i, part in enumerate(token.split("$")):
            if i == 0:
                start = at
            else:
                name = part.rstrip(".,:/")
                pieces.append(Piece(None, None, "unresolved", reason=f"${name} is not set", name=name))
                part, start = part[len(name) :], start + 1 + len(name)
            if part:
                b0 = len(line[:start].encode())
                pieces.append(Piece(part, src.span(b0, b0 + len(part.encode())), "literal", True, source=src))
            start += len(part)
        b0, b1 = len(line[:at].encode()), len(line[: at + len(token)].encode())
        words.append(Word(tuple(pieces), src.span(b0, b1)))
        at += len(token)
    variables = {k: Var(k, (Piece(v),), exported=True) for k, v in (env or {}).items()}
    prefix = {k: Var(k, (Piece(v),)) for k, v in (assignments or {}).items()}
    return Command(words, src.span(0, len(line.encode())), variables, prefix, parent, "bash -c" if parent else None)


def chains(*commands: Command, job=None, files: dict[str, str] | None = None):
    result = ShellResult(commands[0].site and SourceFile("launch.sh", ""), list(commands))
    files = files or {}
    return find_launches(result, job, lambda path: SourceFile(path, files[path]) if path in files else None)


def one(line: str, **kw):
    (chain,) = chains(
        cmd(line, **{k: v for k, v in kw.items() if k in ("env", "assignments")}),
        **{k: v for k, v in kw.items() if k in ("job", "files")},
    )
    return chain


def sizes(chain):
    return chain.nnodes.value, chain.workers_per_node.value, chain.world_size.value


def job(text: str):
    return read_directives(SourceFile("job.sbatch", text))


# ---- torchrun and torch.distributed.launch ------------------------------------------------------
@pytest.mark.parametrize(
    "line, expected",
    [
        ("torchrun --nproc_per_node 8 --nnodes 2 train.py", ("torchrun", (2, 8, 16))),
        ("torchrun --nproc-per-node=4 --nnodes=3:3 train.py", ("torchrun", (3, 4, 12))),
        ("torchrun --nnode 2 --nproc_per_node=8 train.py", ("torchrun", (2, 8, 16))),  # argparse abbreviation
        ("torchrun --standalone --nproc-per-node 2 train.py", ("torchrun", (1, 2, 2))),
        (
            (
                "torchrun --rdzv_backend c10d --rdzv-endpoint h:29500 --rdzv_id 7 --max_restarts 3 -r3 --tee=1 "
                "--log-dir logs --nproc_per_node 8 --nnodes 4 train.py"
            ),
            ("torchrun", (4, 8, 32)),
        ),
        ("python -m torch.distributed.run --nproc_per_node 8 train.py", ("torchrun", (1, 8, 8))),
        ("/usr/bin/python3.11 -um torch.distributed.run --nproc_per_node 2 train.py", ("torchrun", (1, 2, 2))),
        # Jülich's fixed torchrun (pypi.org/project/torchrun-jsc), as a module and as its own command
        (
            "python -u -m torchrun_jsc --nproc_per_node=4 --nnodes=2 --rdzv_backend=c10d train.py",
            ("torchrun", (2, 4, 8)),
        ),
        ("torchrun_jsc --nproc_per_node 4 --nnodes 3 train.py", ("torchrun", (3, 4, 12))),
        # a launcher's console script run by python: the launcher (was: python running a script named deepspeed)
        ("python /opt/venv/bin/deepspeed --num_gpus 4 train.py", ("deepspeed", (1, 4, 4))),
        ("python -u /usr/local/bin/torchrun --nnodes 2 --nproc_per_node 8 train.py", ("torchrun", (2, 8, 16))),
        (
            (
                "python3 -u -W ignore -m torch.distributed.launch --use_env --nproc_per_node=4 --nnodes=2 --node_rank=0 "
                "--master_addr n0 --master_port 6000 train.py"
            ),
            ("torch.distributed.launch", (2, 4, 8)),
        ),
    ],
)
def test_torchrun_spellings(line, expected):
    chain = one(line)
    assert (chain.launcher, sizes(chain)) == expected
    assert chain.entrypoint.text == "train.py" and chain.trainer_args == []


def test_torchrun_defaults_say_so():
    chain = one("torchrun train.py")
    assert sizes(chain) == (1, 1, 1)
    assert chain.nnodes.origin == "default" and "defaults to 1:1" in chain.nnodes.note
    assert chain.world_size.origin == "derived" and "--nnodes * --nproc-per-node" in chain.world_size.note


def test_torchrun_values_keep_their_spans():
    line = "torchrun --nnodes=2 --nproc_per_node 8 train.py"
    chain = one(line)
    assert (chain.nnodes.span.col, chain.workers_per_node.span.col) == (line.index("=2") + 2, line.index(" 8") + 2)


def test_elastic_and_device_counting_values_are_unresolved():
    chain = one("torchrun --nnodes 1:4 --nproc_per_node gpu train.py")
    assert chain.nnodes.value is None and "elastic" in chain.nnodes.note
    assert chain.workers_per_node.value is None and "devices at run time" in chain.workers_per_node.note
    assert chain.world_size.value is None and "elastic" in chain.world_size.note


def test_torchrun_reads_pet_environment_defaults():
    chain = one("torchrun train.py", env={"PET_NNODES": "2", "PET_NPROC_PER_NODE": "4"})
    assert sizes(chain) == (2, 4, 8)
    assert sizes(one("torchrun --nnodes 3 train.py", env={"PET_NNODES": "2"})) == (3, 1, 3)


def test_module_program_and_rendezvous_host():
    chain = one(
        "torchrun --nproc_per_node 8 --rdzv-backend=c10d --rdzv_endpoint node7:29500 "
        "-m megatron.training --num-layers 4"
    )
    assert chain.calls[0].is_module and chain.entrypoint.text == "megatron.training"
    assert [w.text for w in chain.trainer_args] == ["--num-layers", "4"]
    assert chain.master_addr.value == "node7"
    assert one("torchrun --nnodes 2 --master_addr 10.0.0.1 x.py").master_addr.value == "10.0.0.1"


def test_options_are_canonical():
    call = parse_launcher(cmd("torchrun --nproc_per_node 8 --rdzv_backend c10d --node_rank=1 x.py"))
    assert set(call.options) == {"--nproc-per-node", "--rdzv-backend", "--node-rank"}
    assert call.option("--node-rank").text == "1" and call.node_rank.value == 1


# ---- unknown words ------------------------------------------------------------------------------
def test_unknown_option_words_make_counts_unresolved():
    chain = one("torchrun $DISTRIBUTED_ARGS pretrain_gpt.py --num-layers 2")
    assert chain.entrypoint.text == "pretrain_gpt.py"
    assert chain.nnodes.value is None and "DISTRIBUTED_ARGS" in chain.nnodes.note
    assert chain.world_size.value is None
    assert any("DISTRIBUTED_ARGS" in p.message for p in chain.problems)


def test_an_unknown_word_that_may_be_the_program_is_said_so():
    chain = one("torchrun --nproc_per_node 8 $SCRIPT --lr 1")
    assert chain.entrypoint.text is None and sizes(chain) == (1, 8, 8)
    assert any(p.kind == "unresolved" and "SCRIPT" in p.message and "program" in p.message for p in chain.problems)


def test_unknown_option_values():
    chain = one("torchrun --nnodes=$NNODES --nproc_per_node $GPUS train.py")
    assert chain.nnodes.value is None and "NNODES" in chain.nnodes.note
    assert chain.workers_per_node.value is None and "GPUS" in chain.workers_per_node.note


# ---- deepspeed ----------------------------------------------------------------------------------
HOSTS = "# two nodes\nw0 slots=8\nw1 slots=8 max_slots=8\n"


def test_deepspeed_without_hostfile_or_num_gpus_is_unresolved():
    chain = one("deepspeed train.py --deepspeed_config ds.json")
    assert chain.launcher == "deepspeed" and chain.world_size.value is None
    assert "/job/hostfile" in chain.world_size.note
    # after the script, --num_gpus belongs to the script (argparse REMAINDER)
    assert one("deepspeed train.py --num_gpus 2").world_size.value is None


@pytest.mark.parametrize(
    "line, expected",
    [
        ("deepspeed --num_gpus 4 train.py", (1, 4, 4)),
        ("deepspeed --num_accelerators=2 train.py", (1, 2, 2)),
        ("deepspeed --hostfile hf train.py", (2, 8, 16)),
        ("deepspeed -H hf --include w0:0,1@w1 train.py", (2, None, 10)),
        ("deepspeed -H=hf --exclude=w1 train.py", (1, 8, 8)),
        ("deepspeed -H hf --num_nodes 5 train.py", (2, 8, 16)),
        ("deepspeed -H hf --num_nodes 1 --num_gpus 2 train.py", (1, 2, 2)),
        ("deepspeed --hostfile hf --no_ssh --node_rank 1 --master_addr w0 train.py", (2, 8, 16)),
        ("python -m deepspeed.launcher.runner -H hf train.py", (2, 8, 16)),
        # the elastic options (runner.py since 2022): a switch and two counts before the script
        ("deepspeed -H hf --elastic_training --max_elastic_nodes 16 --min_elastic_nodes 1 train.py", (2, 8, 16)),
    ],
)
def test_deepspeed_resources(line, expected):
    chain = one(line, files={"hf": HOSTS})
    assert chain.launcher == "deepspeed" and sizes(chain) == expected


@pytest.mark.parametrize("interpreter", ["$PY", "/PATH/TO/PYTHON", "/opt/env/bin/python3.10-dbg"])
def test_whatever_runs_a_launcher_module_is_a_python_interpreter(interpreter):
    # Eutenacity/Mast-Megatron-DeepSpeed: `PYTHON_PAHT=$2` given "/PATH/TO/PYTHON", then `$PYTHON_PAHT -m
    # torch.distributed.launch --nproc_per_node=8 ...`: only a Python interpreter takes a module that way
    chain = one(f"{interpreter} -m torch.distributed.launch --nproc_per_node=4 train.py")
    assert chain.launcher == "torch.distributed.launch" and sizes(chain) == (1, 4, 4)
    # a wrapper's own -m takes no module: numactl's memory node stays numactl's
    chain = one("numactl -m 0 python -m torch.distributed.run --nproc_per_node=2 train.py")
    assert chain.launcher == "torchrun" and sizes(chain) == (1, 2, 2)


def test_deepspeed_elastic_options_are_not_the_script():
    chain = one("deepspeed --num_gpus 1 --elastic_training --max_elastic_nodes 16 train.py --tp 2")
    assert chain.entrypoint.text == "train.py" and [w.text for w in chain.trainer_args] == ["--tp", "2"]


def test_deepspeed_refusals_use_its_messages():
    chain = one("deepspeed -H hf --num_gpus 2 --include w0 train.py", files={"hf": HOSTS})
    assert [p.message for p in chain.problems] == ["Cannot specify num_nodes/gpus with include/exclude"]
    # Was: the refusal "Num nodes is >1 but no extra nodes available via hostfile". Without --hostfile the runner
    # reads /job/hostfile (runner.py DLTS_HOSTFILE), which may exist on the launching machine: DeepSpeed refuses
    # only when it does not, which plint cannot know (issue 12). Two nodes of eight are now an assumption.
    chain = one("deepspeed --num_nodes 2 --num_gpus 8 train.py")
    assert chain.problems == [] and sizes(chain) == (2, 8, 16)
    assert chain.nnodes.origin == "assumed" and "/job/hostfile" in chain.nnodes.note


def test_deepspeed_missing_or_unknown_hostfile():
    chain = one("deepspeed --hostfile missing train.py")
    assert chain.world_size.value is None and "missing" in chain.world_size.note
    chain = one("deepspeed --hostfile $HOSTFILE train.py")
    assert chain.world_size.value is None and "HOSTFILE" in chain.world_size.note


def test_deepspeed_unreadable_hostfile_sized_by_num_nodes_and_num_gpus():
    # runner.py keeps the first --num_nodes hosts and gives each --num_gpus slots: the hostfile need not be read,
    # on the assumption that it lists that many hosts (said so)
    chain = one("deepspeed --hostfile /etc/mpi/hostfile --num_nodes 4 --num_gpus 8 train.py")
    assert sizes(chain) == (4, 8, 32) and chain.problems == []
    assert chain.nnodes.origin == "assumed" and "first 4 hosts of the hostfile /etc/mpi/hostfile" in chain.nnodes.note
    assert chain.world_size.origin == "assumed" and chain.workers_per_node.origin == "literal"
    # one node is one node whether the file exists or not
    chain = one("deepspeed --hostfile missing --num_nodes 1 --num_gpus 2 train.py")
    assert sizes(chain) == (1, 2, 2) and chain.nnodes.origin == "literal"
    # only --num_gpus: the host count stays the file's
    chain = one("deepspeed --hostfile missing --num_gpus 8 train.py")
    assert sizes(chain) == (None, 8, None) and "missing" in chain.nnodes.note


def test_deepspeed_unknown_num_nodes_is_not_dropped():
    chain = one("deepspeed --hostfile $HOSTFILE --num_nodes=$NODES --num_gpus=8 train.py")
    assert sizes(chain) == (None, 8, None) and "NODES" in chain.nnodes.note
    chain = one("deepspeed --hostfile hf --num_nodes=$NODES train.py", files={"hf": HOSTS})
    assert sizes(chain) == (None, 8, None) and "NODES" in chain.nnodes.note and "NODES" in chain.world_size.note


def test_deepspeed_without_hostfile_assumes_one_node():
    # no --hostfile: the runner reads /job/hostfile when it exists, else the local GPUs
    chain = one("deepspeed --num_gpus 4 train.py")
    assert sizes(chain) == (1, 4, 4)
    assert chain.nnodes.origin == "assumed" and "/job/hostfile" in chain.nnodes.note
    assert chain.world_size.origin == "assumed" and chain.workers_per_node.origin == "literal"
    chain = one("deepspeed train.py")
    assert sizes(chain) == (1, None, None) and chain.nnodes.origin == "assumed"
    # --include naming a host without slots takes all its slots in /job/hostfile, which plint cannot read
    chain = one("deepspeed --include worker-0 train.py")
    assert sizes(chain) == (None, None, None) and "/job/hostfile" in chain.nnodes.note and chain.problems == []
    # was (None, None, None) too: slots named on every host are the active resources whatever the file
    # holds (runner.py parse_resource_filter keeps exactly them or stops), so they are known (issue 12)
    chain = one("deepspeed --include worker-0:0,1 train.py")
    assert sizes(chain) == (1, 2, 2) and chain.problems == []
    chain = one("deepspeed --include worker-0:0,1,2,3@worker-1:0,1,2,3 train.py")
    assert sizes(chain) == (2, 4, 8)
    chain = one("deepspeed --include worker-0:0,1@worker-1 train.py")  # worker-1's slots are the file's
    assert sizes(chain)[2] is None


def test_deepspeed_program_master_and_visible_devices():
    chain = one("deepspeed --master_port 6000 -H hf pretrain_gpt.py --deepspeed", files={"hf": HOSTS})
    assert chain.entrypoint.text == "pretrain_gpt.py" and [w.text for w in chain.trainer_args] == ["--deepspeed"]
    assert chain.master_addr.value == "w0" and "first host" in chain.master_addr.note
    assert chain.calls[0].master_port.value == 6000
    chain = one("deepspeed train.py", assignments={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert sizes(chain) == (1, 2, 2)


# ---- srun ---------------------------------------------------------------------------------------
JOB_2x8 = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
JOB_4x1 = "#!/bin/bash\n#SBATCH -N 4\n#SBATCH --ntasks-per-node=1\n"
JOB_2x1 = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n"


def test_srun_starting_python_per_task_inherits_the_allocation():
    chain = one("srun python pretrain_gpt.py --bf16", job=job(JOB_2x8))
    assert chain.launcher == "srun" and sizes(chain) == (2, 8, 16)
    assert [c.launcher for c in chain.calls] == ["srun", "python"]
    assert [w.text for w in chain.trainer_args] == ["--bf16"]
    assert chain.nnodes.span.path == "job.sbatch"


def test_srun_torchrun_chain():
    chain = one("srun --kill-on-bad-exit=1 -l torchrun --nnodes 4 --nproc_per_node 8 pretrain_gpt.py", job=job(JOB_4x1))
    assert [c.launcher for c in chain.calls] == ["srun", "torchrun"]
    assert chain.launcher == "torchrun" and sizes(chain) == (4, 8, 32)
    assert (chain.calls[0].tasks.value, chain.calls[0].tasks_per_node.value) == (4, 1)


@pytest.mark.parametrize(
    "line, expected",
    [
        ("srun -N 2 --ntasks-per-node=8 python train.py", (2, 8, 16)),
        ("srun -N2 -n16 python train.py", (2, 8, 16)),
        ("srun --nodes=4 python train.py", (4, 1, 4)),  # one task per node by default
        # was (1, 1, 1), srun's answer on a login node; a script's srun with no -N/-n and no #SBATCH takes the
        # size of the allocation it is submitted into, which the file does not show (issue 12: NVIDIA nvlm)
        ("srun python train.py", (None, None, None)),
        (
            (
                "srun --mpi=pmix --cpus-per-task 8 --container-image nvcr.io/x:1 --container-mounts=/a:/a "
                "-N 2 --gpus-per-node 8 --ntasks-per-node 8 --export=ALL,A=1 python train.py"
            ),
            (2, 8, 16),
        ),
    ],
)
def test_srun_outside_a_job(line, expected):
    assert sizes(one(line)) == expected


@pytest.mark.parametrize(
    "line", ["srun -N 2 --tasks-per-node 8 python train.py", "srun -N 2 --tasks-per-node=8 python train.py"]
)
def test_srun_reads_the_tasks_per_node_spelling(line):
    # --tasks-per-node is Slurm's other name for --ntasks-per-node (slurm_opt.c slurm_opt_tasks_per_node)
    call = one(line).calls[0]
    assert sizes(one(line)) == (2, 8, 16) and call.tasks_per_node.value == 8


def test_srun_tasks_per_node_spelling_over_torchrun_counts_every_task():
    call = one("srun -N 2 --tasks-per-node 8 torchrun --nnodes 2 --nproc_per_node 8 x.py", job=job(JOB_2x1)).calls[0]
    assert (call.nodes.value, call.tasks.value, call.tasks_per_node.value) == (2, 16, 8)


def test_srun_options_override_the_job():
    # -N given on the command line: the inherited SLURM_NTASKS is dropped
    call = one("srun -N 2 --ntasks-per-node=1 torchrun --nnodes 2 --nproc_per_node 8 x.py", job=job(JOB_2x8)).calls[0]
    assert (call.nodes.value, call.tasks.value, call.tasks_per_node.value) == (2, 2, 1)
    # only --ntasks-per-node: srun keeps the inherited 16 tasks and ignores it, as Slurm warns
    chain = one("srun --ntasks-per-node=1 torchrun --nnodes 2 --nproc_per_node 8 x.py", job=job(JOB_2x8))
    call = chain.calls[0]
    assert (call.tasks.value, call.tasks_per_node.value) == (16, 8)
    assert any("can't honor --ntasks-per-node" in p.message for p in call.problems)


def test_srun_reads_the_job_from_the_environment():
    env = {"SLURM_JOB_NUM_NODES": "3", "SLURM_NTASKS": "24", "SLURM_NTASKS_PER_NODE": "8"}
    assert sizes(one("srun python train.py", env=env)) == (3, 8, 24)


def test_srun_with_unknown_options():
    chain = one("srun $SRUN_ARGS python train.py", job=job(JOB_2x8))
    assert chain.entrypoint.text == "train.py" and chain.world_size.value is None
    assert "SRUN_ARGS" in chain.world_size.note
    assert chains(cmd("srun $COMMAND")) == []  # srun running an unknown program is not read as a launch


def test_srun_bash_c_chain_walks_the_parent():
    outer = cmd('srun --ntasks-per-node=8 -N 2 bash -c "python pretrain_gpt.py --rank $SLURM_PROCID"')
    inner = cmd("python pretrain_gpt.py --rank $SLURM_PROCID", parent=outer)
    (chain,) = chains(outer, inner)
    assert [c.launcher for c in chain.calls] == ["srun", "python"]
    assert chain.launcher == "srun" and sizes(chain) == (2, 8, 16) and chain.command is inner
    outer = cmd('srun -N 4 --ntasks-per-node 1 bash -c "torchrun --nnodes 4 --nproc_per_node 8 train.py"')
    (chain,) = chains(outer, cmd("torchrun --nnodes 4 --nproc_per_node 8 train.py", parent=outer))
    assert [c.launcher for c in chain.calls] == ["srun", "torchrun"] and sizes(chain) == (4, 8, 32)


# ---- mpirun and accelerate ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "line, expected",
    [
        ("mpirun -np 16 -npernode 8 --mca btl ^openib -x NCCL_DEBUG=WARN python train.py", (2, 8, 16)),
        ("mpirun -n 8 --map-by ppr:4:node --bind-to none --report-bindings python train.py", (2, 4, 8)),
        ("mpirun --np 16 -N 8 --allow-run-as-root python train.py", (2, 8, 16)),
        ("mpiexec -n 16 -ppn 8 -genv OMP_NUM_THREADS 4 -hosts a,b python train.py", (2, 8, 16)),
        # HPE Cray PALS's mpiexec (ALCF Polaris and Aurora): --depth, --cpu-bind, `--env NAME=VALUE` in one word
        (
            "mpiexec -n 16 --ppn 4 --depth=8 --cpu-bind depth --env OMP_NUM_THREADS=8 --hostfile hosts python train.py",
            (4, 4, 16),
        ),
        ("mpiexec --pmi=pmix -n 24 -ppn 12 -l --line-buffer --no-vni -genvall python train.py", (2, 12, 24)),
        ("mpiexec -np 8 -ppn 4 -d 16 --cpu-bind list:4:56 --rlimit CORE python train.py", (2, 4, 8)),
    ],
)
def test_mpirun(line, expected):
    chain = one(line)
    assert (chain.launcher, sizes(chain)) == ("mpirun", expected)
    assert chain.entrypoint.text == "train.py"


def test_mpirun_without_a_rank_count_is_unresolved():
    assert one("mpirun python train.py").world_size.value is None


# Cray ALPS / PALS aprun: -n PEs in all, -N per node, -d and --cc placement only (HPE aprun manual)
@pytest.mark.parametrize(
    "line, expected",
    [
        ("aprun -n 16 -N 4 --cc depth -d 16 python3 train.py", (4, 4, 16)),
        ("aprun -n 8 -N 8 -cc cpu -j 1 -e OMP_NUM_THREADS=4 python train.py", (1, 8, 8)),
        ("aprun --pes 32 --pes-per-node 4 --cpus-per-pe 8 python train.py", (8, 4, 32)),
    ],
)
def test_aprun(line, expected):
    chain = one(line)
    assert (chain.launcher, sizes(chain)) == ("aprun", expected)
    assert chain.entrypoint.text == "train.py"


def test_aprun_without_pes_per_node_leaves_the_nodes_to_alps():
    chain = one("aprun -n 16 python train.py")
    assert sizes(chain) == (None, None, 16)
    assert "aprun" in chain.nnodes.note


# IBM Job Step Manager jsrun (LSF: OLCF Summit, LLNL Sierra): -n resource sets of -a tasks, -r sets a node
# (olcf-tutorials/jsrun_quick_start_guide); -c, -g, -b, -d, -l, --smpiargs place them only
@pytest.mark.parametrize(
    "line, expected",
    [
        (
            "jsrun --nrs 48 --tasks_per_rs 1 --cpu_per_rs 7 --gpu_per_rs 1 --rs_per_host 6 --latency_priority CPU-CPU "
            "--launch_distribution packed --bind packed:1 python pretrain_gpt.py",
            (8, 6, 48),
        ),
        ("jsrun -n12 -a1 -c7 -g1 -r6 -bpacked:7 python pretrain_gpt.py", (2, 6, 12)),
        ('jsrun --smpiargs="-disable_gpu_hooks" -n 2 -r 1 -g 6 -a 6 -c 42 python pretrain_gpt.py', (2, 6, 12)),
    ],
)
def test_jsrun(line, expected):
    chain = one(line)
    assert (chain.launcher, sizes(chain)) == ("jsrun", expected)
    assert chain.entrypoint.text == "pretrain_gpt.py"


def test_jsrun_sizes_it_does_not_write_stay_unknown():
    no_tasks = one("jsrun -n 4 -r 2 -g 1 python pretrain_gpt.py")  # -a not written
    assert sizes(no_tasks) == (None, None, None) and "-a" in no_tasks.world_size.note
    no_per_host = one("jsrun -n 12 -a 1 -g 1 python pretrain_gpt.py")  # -r not written: as many as fit a node
    assert sizes(no_per_host) == (None, None, 12)
    total = one("jsrun -n 12 -a 1 -r 6 -p 24 python pretrain_gpt.py")  # -p: a total plint does not read
    assert total.world_size.value is None and "-p" in total.world_size.note


def test_a_rank_script_before_python_is_read_as_a_wrapper_and_said_so():
    chain = one("mpiexec -n 8 -ppn 4 ./set_affinity.sh python3 pretrain_gpt.py --num-layers 2")
    assert ([c.launcher for c in chain.calls], sizes(chain)) == (["mpirun", "python"], (2, 4, 8))
    assert chain.entrypoint.text == "pretrain_gpt.py"
    assert any("set_affinity.sh" in p.message and "does not follow" in p.message for p in chain.problems)


def test_a_script_that_is_the_program_is_not_a_wrapper():
    # `mpirun -np 8 ./train.sh` runs a shell script: no python launch in this command
    assert chains(cmd("mpirun -np 8 ./train.sh --epochs 3")) == []


def test_a_command_plint_does_not_know_before_python_is_a_wrapper_and_said_so():
    chain = one("launch python3 finetune.py --num-layers 2 --tensor-model-parallel-size 2")
    assert (chain.launcher, chain.entrypoint.text, sizes(chain)) == (None, "finetune.py", (None, None, None))
    assert any("`launch`" in p.message and "does not know" in p.message for p in chain.problems)


@pytest.mark.parametrize(
    "line",
    [
        "echo python3 pretrain_gpt.py --num-layers 2",
        "log python3 pretrain_gpt.py --num-layers 2",
        "./setup.sh python3 pretrain_gpt.py --num-layers 2",  # named first: the shell runs it, read as a child
        "nohup.out python3 pretrain_gpt.py --num-layers 2",
    ],
)
def test_commands_that_print_or_scripts_named_first_are_not_wrappers(line):
    assert chains(cmd(line)) == []


@pytest.mark.parametrize(
    "line, launches",
    [
        ("python tools/merge_mp_partitions.py --tensor-model-parallel-size 2 --num-layers 24", False),
        ("python tools/checkpoint_util.py --micro-batch-size 1 --hidden-size 1024", False),
        ("python my_run.py --num-layers 24 --train-iters 100", True),  # says how long it trains
        ("python my_run.py --num-layers 24 --deepspeed", True),
        ("python pretrain_gpt.py --num-layers 24", True),  # named for training
        ("srun python tools/merge_mp_partitions.py --num-layers 24", True),  # a launcher starts it
    ],
)
def test_a_plain_python_tool_with_megatron_flags_is_not_a_training_launch(line, launches):
    assert bool(chains(cmd(line))) is launches


def test_unknown_interpreter_options_before_the_script():
    chain = one("python3 $PY_OPTS pretrain_gpt.py --num-layers 2 --tensor-model-parallel-size 2")
    assert chain.entrypoint.text == "pretrain_gpt.py"
    assert any("PY_OPTS" in p.message and "interpreter options" in p.message for p in chain.problems)


@pytest.mark.parametrize(
    "line, expected",
    [
        ("accelerate launch --num_processes 16 --num_machines 2 --machine_rank 0 train.py", (2, 8, 16)),
        ("accelerate launch --num-processes=8 --multi-gpu train.py", (1, 8, 8)),
        ("accelerate launch --num_processes 10 --num_machines 3 train.py", (3, 3, 9)),  # floor division per machine
        ("accelerate launch --config_file acc.yaml train.py", (2, 4, 8)),
    ],
)
def test_accelerate(line, expected):
    files = {"acc.yaml": "compute_environment: LOCAL_MACHINE\nnum_machines: 2\nnum_processes: 8\n"}
    chain = one(line, files=files)
    assert (chain.launcher, sizes(chain)) == ("accelerate", expected)


def test_accelerate_without_counts_is_unresolved():
    assert one("accelerate launch train.py").world_size.value is None


def test_accelerate_machines_from_a_config_file_plint_cannot_read_are_unknown():
    """NCHC's LLAMA-on-HPC names ../accelerate/single_config.yaml, which is not in the repository: its
    num_machines may be anything, so no default of 1 machine is printed as if it were read."""
    chain = one("accelerate launch --config_file missing.yaml --num_processes 4 train.py")
    assert chain.nnodes.value is None and "--config_file" in (chain.nnodes.note or "")
    assert one("accelerate launch --num_processes 4 train.py").nnodes.value == 1


# ---- wrappers and what counts as a launch -------------------------------------------------------
@pytest.mark.parametrize(
    "prefix",
    [
        "nohup",
        "time -p",
        "exec",
        "env -u HOME A=1 B=2",
        "numactl --interleave=all --",
        "numactl -N 0 -m 0",
        "stdbuf -o0 -e0",
        "stdbuf -o L",
        "timeout -k 30 10h",
        "taskset -c 0-7",
        "nice -n 5",
        "singularity exec --nv -B /data:/data img.sif",
        "apptainer exec --nv img.sif",
        "docker run --rm --gpus all -v /a:/b --ipc=host img:1",
        "conda run -n train --no-capture-output",
        "nohup env A=1 numactl --interleave=all",
        # nsys: every switch takes a value, in the next word or after `=` (Nsight Systems profile switch table)
        "nsys profile -t cuda,nvtx -s none -o prof --force-overwrite true --capture-range=cudaProfilerApi",
        "nsys profile --stats=true -w true -x true --ftrace-keep-user-config -y 30",
        "nsys launch -t cuda",
        "uv run",
        "uv run --no-sync --with pkg -p 3.12 --extra gpu",
        "uv run --python=3.11 --",
        "$VENV_PREFIX",
        "$A nohup $B",
        "poetry run",
        "poetry run -C proj --no-interaction -vv",
    ],
)
def test_wrappers_are_unwrapped(prefix):
    command = cmd(f"{prefix} torchrun --nproc_per_node 2 train.py")
    assert command.words[unwrap(command.words)].text == "torchrun"
    assert sizes(one(f"{prefix} torchrun --nproc_per_node 2 train.py")) == (1, 2, 2)


@pytest.mark.parametrize(
    "line, launcher, program, sizes_",
    [
        ("uv run -m torch.distributed.run --nproc_per_node 4 train.py", "torchrun", "train.py", (1, 4, 4)),
        (
            "uv run --frozen --module torch.distributed.launch --nproc_per_node=2 train.py",
            "torch.distributed.launch",
            "train.py",
            (1, 2, 2),
        ),
        ("uv run pretrain_gpt.py --num-layers 2", None, "pretrain_gpt.py", (1, 1, 1)),  # uv runs python itself
        ("$PYTHON -u -m torch.distributed.run --nproc_per_node 4 train.py", "torchrun", "train.py", (1, 4, 4)),
        (
            "python --check-hash-based-pycs never -m torch.distributed.run --nproc_per_node 2 train.py",
            "torchrun",
            "train.py",
            (1, 2, 2),
        ),
        # debugpy-run's argparse takes -m MODULE and drops the `--` before the module's arguments
        (
            "debugpy-run -p :5678 -m torch.distributed.run -- --nproc_per_node 2 train.py",
            "torchrun",
            "train.py",
            (1, 2, 2),
        ),
        (
            "debugpy-run -W --log-to /tmp/dbg --module torch.distributed.run --nproc_per_node 4 train.py",
            "torchrun",
            "train.py",
            (1, 4, 4),
        ),
        ("debugpy-run -p 5678 -- pretrain_gpt.py --num-layers 2", None, "pretrain_gpt.py", (1, 1, 1)),
    ],
)
def test_launchers_behind_wrappers_and_unknown_paths(line, launcher, program, sizes_):
    chain = one(line)
    assert (chain.launcher, chain.entrypoint.display(), sizes(chain)) == (launcher, program, sizes_)


def test_an_unknown_word_before_a_launcher():
    # before a spawner: a wrapper whose launcher's own options give the counts, said as an unresolved reading
    chain = one("$VENV_PREFIX torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2")
    assert sizes(chain) == (1, 8, 8) and chain.calls[0].wrapped_by[0].display() == "${VENV_PREFIX}"
    (problem,) = chain.problems
    assert problem.kind == "unresolved" and "${VENV_PREFIX}" in problem.message and "$VENV_PREFIX" in problem.message
    # before bare python: it may be srun or mpirun, so nothing is known of the process counts
    for line in ("$SRUN_EXEC python3 pretrain_gpt.py --num-layers 2", "$LAUNCHER pretrain_gpt.py --num-layers 2"):
        chain = one(line)
        assert chain.entrypoint.text == "pretrain_gpt.py" and sizes(chain) == (None, None, None), line
        assert "may be a launcher" in chain.world_size.note and chain.problems[0].kind == "unresolved"
    # an unknown word followed by nothing recognisable is the program itself, as before
    assert chains(cmd("$A echo hi"), cmd("$A nohup tools/run.sh")) == []


def test_what_is_a_launch():
    assert [
        c.entrypoint.text
        for c in chains(
            cmd("python -c print(1)"),
            cmd("python -m pip install x"),
            cmd("python tools/preprocess_data.py --input x"),
            cmd("srun hostname"),
            cmd("python pretrain_gpt.py --num-layers 2"),
            cmd("python run.py --deepspeed"),
            cmd("python3 -m megatron.training.finetune_x"),
            cmd("srun python tools/preprocess_data.py"),  # Megatron's data tool: srun tokenizes in parallel
            cmd("srun python pretrain_x.py"),
            cmd("srun python smoe/convert/convert_mixtral_v2.py --num_experts 8"),  # a checkpoint converter
            cmd("mpirun -np 8 python tools/checkpoint/convert.py --model-type GPT"),
            # a converter, an exporter or an inference script over the model's ranks trains nothing
            cmd("torchrun --nproc_per_node 8 examples/post_training/modelopt/convert_model.py --tp 8"),
            cmd("torchrun --nproc_per_node 8 export.py --export-dir /out"),
            cmd("python -m torch.distributed.run --nproc_per_node 8 swift/cli/infer.py --model X"),
            cmd("torchrun --nproc_per_node 8 pretrain_gpt_converted_data.py"),
            # a converter between checkpoint formats, by its name (Pai-Megatron-Patch's hf2mcore.py)
            cmd(
                "torchrun --nproc_per_node 8 toolkits/hf2mcore_qwen2_dense_and_moe_gqa.py --tensor-model-parallel-size 2"
            ),
            cmd("deepspeed --num_gpus 1 deepspeed_to_hf_llama.py --input-folder ckpt"),
            cmd("torchrun --nproc_per_node 8 train_hf2.py"),
        )
    ] == [
        "pretrain_gpt.py",
        "run.py",
        "megatron.training.finetune_x",
        "pretrain_x.py",
        "pretrain_gpt_converted_data.py",
        "train_hf2.py",
    ]


def test_bare_python_is_one_process_on_one_node():
    chain = one("python pretrain_gpt.py --num-layers 2")
    assert chain.launcher is None and sizes(chain) == (1, 1, 1) and chain.world_size.origin == "derived"


# ---- end to end, through the shell evaluator ----------------------------------------------------
def test_evaluated_script_with_sbatch_and_srun_torchrun(launches):
    (chain,) = launches(
        "#!/bin/bash\n#SBATCH -N 4\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:8\n"
        "GPUS=8\nsrun --kill-on-bad-exit=1 torchrun --nnodes $SLURM_NNODES --nproc_per_node $GPUS "
        "--rdzv-endpoint $(hostname):29500 pretrain_gpt.py --num-layers 4\n"
    )
    assert [c.launcher for c in chain.calls] == ["srun", "torchrun"] and sizes(chain) == (4, 8, 32)
    assert chain.nnodes.origin == "derived" and chain.nnodes.span.line == 2
    assert [w.text for w in chain.trainer_args] == ["--num-layers", "4"]


def test_evaluated_argument_strings_are_split(launches):
    (chain,) = launches(
        'DIST="--nproc_per_node 8 --nnodes 2 --node_rank 0 --master_addr n0"\ntorchrun $DIST pretrain_gpt.py\n'
    )
    assert sizes(chain) == (2, 8, 16) and chain.master_addr.value == "n0"


def test_evaluated_srun_bash_c(launches):
    (chain,) = launches(
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
        'srun bash -c "python pretrain_gpt.py --rank \\$SLURM_PROCID"\n'
    )
    assert [c.launcher for c in chain.calls] == ["srun", "python"]
    assert chain.launcher == "srun" and sizes(chain) == (2, 8, 16)


def test_evaluated_deepspeed_hostfile_written_by_the_script(launches):
    (chain,) = launches(
        "cat > hostfile <<EOF\nw0 slots=4\nw1 slots=4\nEOF\ndeepspeed --hostfile hostfile pretrain_gpt.py\n"
    )
    assert sizes(chain) == (2, 4, 8)


def test_evaluated_hostfile_beside_the_script(launches):
    (chain,) = launches("deepspeed -H hf --include w0:0,1@w1 train.py\n", {"hf": HOSTS})
    assert sizes(chain) == (2, None, 10)


def test_evaluated_launchers_under_a_directory_or_an_array_plint_cannot_know(launches):
    (chain,) = launches('${VENV}/bin/nsys profile -o x "$CONDA_PREFIX/bin/torchrun" --nproc_per_node 4 train.py\n')
    assert (chain.launcher, sizes(chain)) == ("torchrun", (1, 4, 4))
    (chain,) = launches(
        'PROFILE=()\n[ "$1" = prof ] && PROFILE=(nsys profile -o p)\n'
        '"${PROFILE[@]}" python -u -m torch.distributed.run --nproc_per_node 2 train.py\n'
    )
    assert (chain.launcher, sizes(chain)) == ("torchrun", (1, 2, 2)) and chain.calls[0].wrapped_by


def test_evaluated_launches_come_in_order(launches):
    found = launches("python -c 'print(1)'\ntorchrun --nproc_per_node 2 train.py\ndeepspeed --num_gpus 4 finetune.py\n")
    assert [c.launcher for c in found] == ["torchrun", "deepspeed"]


# ---- bad input never raises ---------------------------------------------------------------------
VOCAB = [
    "srun",
    "torchrun",
    "deepspeed",
    "python",
    "python3",
    "-m",
    "torch.distributed.run",
    "accelerate",
    "launch",
    "mpirun",
    "-np",
    "-N",
    "-n",
    "--nnodes",
    "--nnodes=2:4",
    "--nproc_per_node",
    "gpu",
    "8",
    "0",
    "-1",
    "x",
    "--num_gpus",
    "-H",
    "hf",
    "--include",
    "w0:0,1@w9",
    "--exclude=w0",
    "--hostfile=hf",
    "train.py",
    "--",
    "-c",
    "$X",
    "--nodes=$N",
    "env",
    "A=1",
    "numactl",
    "--",
    "timeout",
    "10h",
    "bash",
    "--map-by",
    "ppr:x:node",
    "--ntasks-per-node",
    "--kill-on-bad-exit",
    "-K1",
    "--num_processes",
    "--config_file",
    "acc.yaml",
    "=",
    "-",
    "uv",
    "run",
    "--with",
    "nsys",
    "profile",
    "-o",
    "debugpy-run",
    "--module",
    "$PREFIX",
    "x.py",
    "bcprun",
    "--npernode",
    "--cmd",
    "-no_redirect",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=12), st.booleans())
def test_any_word_sequence_reads_without_raising(tokens, in_job):
    files = {"hf": "w0 slots=8\nw1 slots=x\n", "acc.yaml": "num_processes: [1\n"}
    for chain in chains(cmd(" ".join(tokens)), job=job(JOB_2x8) if in_job else None, files=files):
        for value in (chain.nnodes, chain.workers_per_node, chain.world_size):
            assert value.known or value.note  # an unknown size always says why


def test_a_gpu_count_an_undecided_branch_sets_is_unknown(launches):
    # `${#GPUS[@]}` is 4 or 8 as the branch goes: plint said 1 (one merged word) before
    (chain,) = launches(
        '#!/bin/bash\nif [ "$MODE" = big ]; then\n  GPUS=(0 1 2 3)\nelse\n  GPUS=(0 1 2 3 4 5 6 7)\nfi\n'
        "torchrun --nproc_per_node ${#GPUS[@]} pretrain_gpt.py --num-layers 2\n"
    )
    assert chain.workers_per_node.value is None and "$MODE" in chain.workers_per_node.note


def test_an_unknown_option_with_an_unknown_value_is_one_word(launches):
    # `--name=$X` is one option whatever X holds: it cannot be hiding --nnodes
    (chain,) = launches(
        "#!/bin/bash\ntorchrun --nnodes 2 --nproc_per_node 8 --my-plugin=$T pretrain_gpt.py --num-layers 2\n"
    )
    assert (chain.nnodes.value, chain.workers_per_node.value) == (2, 8)
    assert [w.display() for w in chain.calls[0].unknown_options] == ["--my-plugin=${T}"]


# ---- ray job submit (plint.reading.sources.launch_ray) ------------------------------------------
@pytest.mark.parametrize(
    "line, expected",
    [
        # slime: the actor's ranks, dashed (was: no launch)
        (
            "ray job submit --address=http://127.0.0.1:8265 -- python3 train.py --actor-num-nodes 2 "
            "--actor-num-gpus-per-node 8 --colocate --tensor-model-parallel-size 2",
            ("ray", "train.py", (2, 8, 16)),
        ),
        # OpenRLHF: underscored, as a module
        (
            "ray job submit --runtime-env-json={} -- python3 -m openrlhf.cli.train_ppo_ray --actor_num_nodes 1 "
            "--actor_num_gpus_per_node 4 --zero_stage 3",
            ("ray", "openrlhf.cli.train_ppo_ray", (1, 4, 4)),
        ),
        # without the trainer's counts the job places what it wants: unknown
        ("ray job submit -- python train.py --lr 1e-6", ("ray", "train.py", (None, None, None))),
    ],
)
def test_ray_job_submit_runs_a_trainer_that_places_its_ranks(line, expected):
    chain = one(line)
    assert (chain.launcher, chain.entrypoint.text, sizes(chain)) == expected


def test_ray_commands_that_run_no_trainer_are_no_launch():
    assert chains(cmd("ray start --head --num-gpus 8"), cmd("ray job submit -- bash run.sh"), cmd("ray status")) == []


def test_a_tool_is_known_by_its_file_name_under_an_unknown_folder(launches):
    """nightingal3/llm-pretraining-behaviours' convert_to_hf.sh: `deepspeed $distributed_args
    $repo/scripts/deepspeed_to_hf_llama.py`, $repo unknown: the file's own name says it converts a checkpoint.
    A program whose name itself is unknown is still read as the launch it may be."""
    assert launches("deepspeed --num_gpus 1 $repo/scripts/deepspeed_to_hf_llama.py --input-folder ckpt\n") == []
    assert launches("srun python $MEGATRON/tools/preprocess_data.py --input x\n") == []
    (chain,) = launches("deepspeed --num_gpus 1 $repo/$SCRIPT --deepspeed\n")
    assert chain.entrypoint is not None
