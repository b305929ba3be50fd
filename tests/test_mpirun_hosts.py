"""mpirun/mpiexec that names no hosts: one node when nothing else can give it hosts (Open MPI's mpirun(1): with no
hostfile or host list, every process runs on the local host; inside a one-node Slurm job, that node)."""

from __future__ import annotations

import pytest

from plint.checking.check import check_paths

LAUNCH = "mpirun -np 2 python train.py --deepspeed --deepspeed_config ds.json\n"
_BRANCHES = (
    'CMD="mpirun --allow-run-as-root"\n[[ -n "$MPI_ROOT" ]] && CMD="$CMD --prefix $MPI_ROOT"\n'
    'if [[ -n "$HL_PE" ]]; then CMD="$CMD --bind-to core {extra}"; else CMD="$CMD --bind-to none"; fi\n'
)
_COMMAND = "$CMD -np 2 -x MASTER_PORT=12345 python train.py --deepspeed --deepspeed_config ds.json\n"


@pytest.mark.parametrize(
    "header, launch, nodes",
    [
        ("", LAUNCH, 1),  # no scheduler, no host list: the local host (linskybing/HPC-II-DeepSpeed-LLM's AMD runs)
        ("#SBATCH --nodes=1\n", LAUNCH, 1),  # the job's one node
        ("#SBATCH --nodes=2\n", LAUNCH, None),  # the allocation's slots decide
        ("#PBS -l select=1:ngpus=2\n", LAUNCH, None),  # PBS's node file is mpirun's host list
        ("", LAUNCH.replace("-np 2", "-np 2 --hostfile hosts"), None),
        ("", LAUNCH.replace("-np 2", "-np 2 -H a,b"), None),
        ("", LAUNCH.replace("-np 2", "-np 2 $MPI_OPTS"), None),  # unknown words may name hosts
        # options a branch on the environment adds (HabanaAI/Megatron-LM's examples): none of them names a host
        (_BRANCHES.format(extra="--map-by ppr:${HL_PPR}:socket"), _COMMAND, 1),
        (_BRANCHES.format(extra="--hostfile ${HL_HOSTS}"), _COMMAND, None),
        (_BRANCHES.format(extra="--mca orte_default_hostfile ${HL_HOSTS}"), _COMMAND, None),
        (_BRANCHES.format(extra="${HL_MPI_OPTS}"), _COMMAND, None),
    ],
)
def test_mpirun_without_hosts_runs_on_one_node(tmp_path, header, launch, nodes):
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 1}\n')
    (tmp_path / "run.sh").write_text("#!/bin/bash\n" + header + launch)
    (result,) = check_paths([tmp_path / "run.sh"], root=str(tmp_path))
    fields = result.layouts[0].fields
    assert fields["cluster.nnodes"].value == nodes
    if nodes == 1:
        assert (fields["cluster.workers_per_node"].value, fields["cluster.nnodes"].origin) == (2, "derived")
        assert "mpirun names no hosts" in fields["cluster.nnodes"].note


@pytest.mark.parametrize("directive", ['#PJM -L "node=48x6x48"', "#$ -l rt_F=2", "#COBALT -n 8", "#flux: -N 2"])
def test_a_job_of_a_resource_manager_plint_does_not_read_keeps_the_nodes_unknown(tmp_path, directive):
    # Fugaku-LLM/DeepSpeedFugaku: `#PJM -L "node=48x6x48"` then `mpirun -n ${num_node}`: 13,824 nodes, not one
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 1}\n')
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\n{directive}\n{LAUNCH}")
    (result,) = check_paths([tmp_path / "run.sh"], root=str(tmp_path))
    assert result.layouts[0].fields["cluster.nnodes"].value is None


JOB_HOSTFILE = """#SBATCH -N 3
hostfile=./hostfile/$SLURM_JOB_ID
scontrol show hostnames $SLURM_JOB_NODELIST > ${hostfile}
for i in `cat $hostfile`
do
    echo ${i} slots=4 >> `pwd`/hostfile/hostfile-dl-$SLURM_JOB_ID
done
np=$(cat $hostfile|sort|uniq |wc -l)
np=$(($np*4))
"""


@pytest.mark.parametrize(
    "body, sizes",
    [
        # yuguo-Jack/ChatGLM-6B-in-DeepSpeed-Chat: a hostfile the job writes from its node list, `slots=4` a node
        (
            JOB_HOSTFILE + "mpirun -np $np --hostfile hostfile/hostfile-dl-$SLURM_JOB_ID python train.py --deepspeed\n",
            (3, 4, 12),
        ),
        ("printf 'a slots=4\\nb slots=4\\n' > hosts\nmpirun -np 8 --hostfile hosts python train.py\n", (2, 4, 8)),
        ("printf 'a slots=4\\nb slots=4\\n' > hosts\nmpirun -np 4 --hostfile hosts python train.py\n", (1, 4, 4)),
        # ranks that do not fill whole hosts, hosts of different slots, more ranks than slots: the mapping decides
        ("printf 'a slots=4\\nb slots=4\\n' > hosts\nmpirun -np 6 --hostfile hosts python train.py\n", (None, None, 6)),
        ("printf 'a slots=4\\nb slots=2\\n' > hosts\nmpirun -np 6 --hostfile hosts python train.py\n", (None, None, 6)),
        (
            "printf 'a slots=4\\nb slots=4\\n' > hosts\nmpirun -np 16 --hostfile hosts python train.py\n",
            (None, None, 16),
        ),
    ],
)
def test_mpirun_hostfile_slots_give_the_ranks_a_node(tmp_path, body, sizes):
    (tmp_path / "run.sh").write_text("#!/bin/bash\n" + body)
    (result,) = check_paths([tmp_path / "run.sh"], root=str(tmp_path))
    fields = result.layouts[0].fields
    got = tuple(fields[k].value for k in ("cluster.nnodes", "cluster.workers_per_node", "cluster.world_size"))
    assert got == sizes
