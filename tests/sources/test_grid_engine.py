"""Grid Engine jobs: `#$` directives, NHOSTS for whole-node resource types, ABCI's SGE_RESOURCE_TYPE."""

from __future__ import annotations

import pytest

from plint.checking.check import check_paths
from plint.reading.sources.grid_engine import implied_env, read_directives
from plint.report.json_report import file_json
from plint.source import SourceFile

# an ABCI job as its users write them: the GPUs of a node chosen by the resource type, the nodes from NHOSTS
ABCI = """#!/bin/bash
#$ -l {request}
#$ -l h_rt=1:00:00
#$ -j y
#$ -cwd
if [[ "$SGE_RESOURCE_TYPE" == "rt_F" ]]; then
  NUM_GPU_PER_NODE=4
elif [[ "$SGE_RESOURCE_TYPE" == "rt_AF" ]]; then
  NUM_GPU_PER_NODE=8
else
  echo "Unrecognized SGE_RESOURCE_TYPE: $SGE_RESOURCE_TYPE"
  exit 1
fi
NUM_NODES=$NHOSTS
NUM_GPUS=$((NUM_NODES * NUM_GPU_PER_NODE))
mpirun -np $NUM_GPUS -npernode $NUM_GPU_PER_NODE python pretrain_gpt.py --tensor-model-parallel-size 2 \\
  --num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 512 --max-position-embeddings 512 \\
  --micro-batch-size 1 --global-batch-size 64 --train-iters 10 --bf16
"""


def _layout(tmp_path, text: str) -> dict:
    (tmp_path / "job.sh").write_text(text)
    (result,) = check_paths([tmp_path / "job.sh"], root=str(tmp_path))
    return file_json(result)["layout"]


@pytest.mark.parametrize("request_, nodes, gpus", [("rt_AF=2", 2, 8), ("rt_F=4", 4, 4)])
def test_an_abci_job_has_its_resource_types_nodes_and_gpus(tmp_path, request_, nodes, gpus):
    # fail before: NHOSTS and SGE_RESOURCE_TYPE unknown, so nodes, world and dp were unknown
    layout = _layout(tmp_path, ABCI.format(request=request_))
    cluster = layout["cluster"]
    assert (cluster["nnodes"], cluster["gpus_per_node"], cluster["world_size"]) == (nodes, gpus, nodes * gpus)
    assert layout["parallel"]["dp"] == nodes * gpus // 2
    assert layout["scheduler"] == "sge"


TSUBAME = (
    "#!/bin/sh\n#$ -cwd\n#$ -l {request}\nNUM_NODES=$NHOSTS\ntorchrun --nnodes $NUM_NODES --nproc_per_node 4 train.py\n"
)


def test_a_tsubame_job_counts_whole_nodes(tmp_path):
    layout = _layout(tmp_path, TSUBAME.format(request="node_f=16"))
    assert (layout["cluster"]["nnodes"], layout["cluster"]["world_size"]) == (16, 64)


@pytest.mark.parametrize("request_", ["node_q=4", "rt_G.small=1", "gpu=4", "node_f=$N"])
def test_requests_that_name_no_whole_nodes_leave_the_hosts_unknown(tmp_path, request_):
    layout = _layout(tmp_path, TSUBAME.format(request=request_))
    assert layout["cluster"]["nnodes"] is None and layout["scheduler"] == "sge"


def test_directives_are_read_anywhere_and_only_at_a_lines_start():
    # qsub(1): a line whose first two characters are `#$`; an indented one is a comment
    source = SourceFile("job.sh", "#!/bin/bash\necho hi\n#$ -l rt_AF=3\n  #$ -l rt_AF=9\n")
    job = read_directives(source)
    assert job is not None and (job.resource_type, job.nodes) == ("rt_AF", 3)
    env = implied_env(job)
    assert env["NHOSTS"].value[0].text == "3" and env["SGE_RESOURCE_TYPE"].value[0].text == "rt_AF"


def test_no_directive_no_job():
    assert read_directives(SourceFile("job.sh", "#!/bin/bash\n# $ -l rt_AF=2\necho $NHOSTS\n")) is None
