"""mpirun/mpiexec that names no hosts: one node when nothing else can give it hosts (Open MPI's mpirun(1): with no
hostfile or host list, every process runs on the local host; inside a one-node Slurm job, that node)."""

from __future__ import annotations

import pytest

from plint.checking.check import check_paths

LAUNCH = "mpirun -np 2 python train.py --deepspeed --deepspeed_config ds.json\n"


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
