"""PL207 (several nodes rendezvous at localhost) and the head node's own script: torchrun's static rendezvous store
is hosted by node rank 0 and listens on every local address (c10d's SocketListenOp::tryListen binds the wildcard
address), so `--node_rank 0 --master_addr 127.0.0.1` on the head node, with the others given its real address in
their own scripts, rendezvous fine (ms-swift's examples/train/multi-node/torchrun/train_node1.sh)."""

import pytest

from plint.checking.check import check_paths

LAUNCH = (
    "torchrun --nnodes 2 --nproc_per_node 8 --node_rank {rank} --master_addr 127.0.0.1 --master_port 29500 "
    "pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 2 --hidden-size 256 --num-attention-heads 8 "
    "--seq-length 512 --max-position-embeddings 512 --micro-batch-size 1 --global-batch-size 8 --train-iters 10\n"
)


def _codes(tmp_path, rank: str) -> set[str]:
    (tmp_path / "node.sh").write_text(LAUNCH.format(rank=rank))
    (result,) = check_paths([tmp_path / "node.sh"], root=str(tmp_path))
    return {d.code for d in result.diagnostics}


def test_the_head_nodes_own_script_may_name_localhost(tmp_path):
    # fail before: PL207 error on the head node's script of a per-node pair
    assert "PL207" not in _codes(tmp_path, "0")


@pytest.mark.parametrize("rank", ["$NODE_RANK", "${NODE_RANK:-0}", "$SLURM_NODEID"])
def test_a_script_every_node_runs_still_waits_for_itself(tmp_path, rank):
    assert "PL207" in _codes(tmp_path, rank)
