"""NVIDIA Base Command Platform's `bcprun`: its --cmd string is read as a shell on each node, its counts as the
launch's (plint.reading.sources.launch_bcprun)."""

import pytest


def sizes(chain):
    return chain.nnodes.value, chain.workers_per_node.value, chain.world_size.value


TRAIN = "python /mount/k2/main.py --tensor-model-parallel-size 8 --num-layers 4 --train-iters 10"


@pytest.mark.parametrize(
    "line, expected",
    [
        (f"bcprun -n 4 -p 8 -c '{TRAIN}'", (4, 8, 32)),
        (f"bcprun --nnodes=2 --npernode=8 --env NCCL_DEBUG=WARN --cmd '{TRAIN}'", (2, 8, 16)),
        (f'bcprun --debug --nnodes 3 --npernode 8 -e A=1 --cmd "cd /workspace && {TRAIN}"', (3, 8, 24)),
        (f"bcprun -no_redirect -n 2 -p 4 -c '{TRAIN}'", (2, 4, 8)),  # a flag, not `-n o_redirect`
    ],
)
def test_bcprun_counts(launches, line, expected):
    (chain,) = launches(f"#!/bin/bash\n{line}\n")
    assert (chain.launcher, sizes(chain)) == ("bcprun", expected)
    assert [c.launcher for c in chain.calls] == ["bcprun", "python"]
    assert chain.entrypoint.text == "/mount/k2/main.py"
    assert [w.text for w in chain.trainer_args][:2] == ["--tensor-model-parallel-size", "8"]


def test_without_nnodes_the_job_decides_and_plint_says_so(launches):
    (chain,) = launches(f"#!/bin/bash\nbcprun -p 8 --env 'CUDA_DEVICE_MAX_CONNECTIONS=1' -c '{TRAIN}'\n")
    assert sizes(chain) == (None, 8, None)
    assert "--nnodes" in chain.nnodes.note and "ngc batch run" in chain.nnodes.note
    assert chain.nnodes.span.line == 2 and chain.nnodes.span.col == 1  # the bcprun word


def test_without_npernode_no_default_is_assumed(launches):
    (chain,) = launches(f"#!/bin/bash\nbcprun -n 2 -c '{TRAIN}'\n")
    assert sizes(chain) == (2, None, None) and "--npernode" in chain.workers_per_node.note


def test_a_spawner_inside_bcprun_gives_the_counts(launches):
    (chain,) = launches(
        "#!/bin/bash\nbcprun -n 2 -p 1 -c 'torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py --num-layers 2'\n"
    )
    assert [c.launcher for c in chain.calls] == ["bcprun", "torchrun"] and sizes(chain) == (2, 8, 16)


def test_a_count_in_a_variable_and_an_unknown_one(launches):
    (chain,) = launches(f'#!/bin/bash\nN=4\nbcprun --nnodes=$N --npernode "$GPUS" --cmd "{TRAIN}"\n')
    assert chain.nnodes.value == 4 and chain.workers_per_node.value is None and chain.world_size.value is None


@pytest.mark.parametrize(
    "line",
    [
        "bcprun -c 'hostname'",  # not a training program
        "bcprun -n 2 -c 'pip install lightning'",
        "bcprun -n 2 -p 8",  # no command at all
        "bcprun -n 2 -p 8 -c",
    ],
)
def test_what_is_not_a_launch(launches, line):
    assert launches(f"#!/bin/bash\n{line}\n") == []
