"""Launchers in every spelling, chains, and what each says about nodes, workers and world size."""

import pytest


def sizes(chain):
    return chain.nnodes.value, chain.workers_per_node.value, chain.world_size.value


@pytest.mark.parametrize("line, expected", [
    ("torchrun --nproc_per_node 8 --nnodes 2 train.py", ("torchrun", (2, 8, 16))),
    ("torchrun --nproc-per-node=4 --nnodes=3:3 train.py", ("torchrun", (3, 4, 12))),
    ("torchrun --standalone --nproc-per-node 2 train.py", ("torchrun", (1, 2, 2))),
    ("torchrun train.py", ("torchrun", (1, 1, 1))),
    ("python -m torch.distributed.run --nproc_per_node 8 train.py", ("torchrun", (1, 8, 8))),
    ("python3 -u -m torch.distributed.launch --use_env --nproc_per_node=4 --nnodes=2 --node_rank=0 train.py",
     ("torch.distributed.launch", (2, 4, 8))),
    ("deepspeed --num_gpus 4 train.py", ("deepspeed", (1, 4, 4))),
    ("mpirun -np 16 -npernode 8 --mca btl ^openib python train.py", ("mpirun", (2, 8, 16))),
    ("mpirun -n 8 --map-by ppr:4:node python train.py", ("mpirun", (2, 4, 8))),
    ("accelerate launch --num_processes 16 --num_machines 2 train.py", ("accelerate", (2, 8, 16))),
    ("python pretrain_gpt.py --num-layers 2", (None, (1, 1, 1))),
    ("nohup env A=1 numactl --interleave=all -- torchrun --nproc_per_node 2 train.py &> log &",
     ("torchrun", (1, 2, 2))),
    ("timeout 10h torchrun --nproc_per_node 2 train.py", ("torchrun", (1, 2, 2))),
])
def test_launcher_spellings(launches, line, expected):
    (chain,) = launches(line + "\n")
    assert (chain.launcher, sizes(chain)) == expected


def test_program_and_trainer_args_are_split_off(launches):
    (chain,) = launches("torchrun --nproc_per_node 8 --rdzv_backend c10d pretrain_gpt.py --num-layers 4\n")
    assert chain.entrypoint.text == "pretrain_gpt.py"
    assert [w.text for w in chain.trainer_args] == ["--num-layers", "4"]


def test_elastic_and_device_counting_values_are_unresolved(launches):
    (chain,) = launches("torchrun --nnodes 1:4 --nproc_per_node gpu train.py\n")
    assert chain.nnodes.value is None and "elastic" in chain.nnodes.note
    assert chain.workers_per_node.value is None and "local devices" in chain.workers_per_node.note


def test_deepspeed_without_hostfile_or_num_gpus_is_unresolved(launches):
    (chain,) = launches("deepspeed train.py --deepspeed_config ds.json\n")
    assert chain.world_size.value is None and "/job/hostfile" in chain.world_size.note


def test_deepspeed_hostfile_include_exclude(launches):
    hostfile = "# two nodes\nw0 slots=8\nw1 slots=8 max_slots=8\n"
    (chain,) = launches("deepspeed --hostfile hf --include w0:0,1@w1 train.py\n", {"hf": hostfile})
    assert sizes(chain) == (2, None, 10)  # uneven slot counts: no single per-node value
    (chain,) = launches("deepspeed -H hf --exclude w1 train.py\n", {"hf": hostfile})
    assert sizes(chain) == (1, 8, 8)
    (chain,) = launches("deepspeed -H hf --num_nodes 5 train.py\n", {"hf": hostfile})
    assert sizes(chain) == (2, 8, 16)  # more nodes than the hostfile: all of them, silently
    (chain,) = launches("deepspeed -H hf --num_gpus 2 --include w0 train.py\n", {"hf": hostfile})
    assert any("Cannot specify num_nodes/gpus with include/exclude" in p.message for p in chain.problems)


def test_srun_starting_python_per_task_inherits_the_allocation(launches):
    (chain,) = launches("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\nsrun python pretrain_gpt.py\n")
    assert chain.launcher == "srun" and sizes(chain) == (2, 8, 16)


def test_srun_torchrun_chain(launches):
    (chain,) = launches("#!/bin/bash\n#SBATCH -N 4\n#SBATCH --ntasks-per-node=1\n"
                        "srun --kill-on-bad-exit=1 torchrun --nnodes $SLURM_NNODES --nproc_per_node 8 "
                        "--rdzv-endpoint $(hostname):29500 pretrain_gpt.py\n")
    assert [c.launcher for c in chain.calls] == ["srun", "torchrun"]
    assert chain.launcher == "torchrun" and sizes(chain) == (4, 8, 32)


def test_srun_bash_c_chain_goes_through_the_second_parse(launches):
    (chain,) = launches("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
                        "srun bash -c \"python pretrain_gpt.py --rank \\$SLURM_PROCID\"\n")
    assert [c.launcher for c in chain.calls] == ["srun", "python"]
    assert chain.launcher == "srun" and sizes(chain) == (2, 8, 16)


def test_non_training_python_is_not_a_launch(launches):
    assert launches("python tools/preprocess_data.py --input x\npython -c 'print(1)'\n") == []


def test_trainer_args_start_after_the_innermost_program(launches):
    (chain,) = launches("mpirun -np 16 -npernode 8 --mca btl ^openib -x NCCL_DEBUG=WARN python -u pretrain_gpt.py --num-layers 2\n")
    assert [w.text for w in chain.trainer_args] == ["--num-layers", "2"]
    (chain,) = launches("#!/bin/bash\n#SBATCH -N 2\nsrun --ntasks-per-node=8 --cpu-bind=none python pretrain_gpt.py --bf16\n")
    assert [w.text for w in chain.trainer_args] == ["--bf16"]
