"""--use-checkpoint-args with --load: Megatron sets num_query_groups from the checkpoint's arguments whatever the
command line says (load_args_from_checkpoint, _set_arg(..., force=True)), so a launch that writes no grouped-query
flags has unknown query groups, not one group per head (Swallow's Llama-2 70B jobs: 8 groups from the checkpoint)."""

import pytest

from plint.checking.check import check_paths
from plint.report.json_report import file_json

LAUNCH = (
    "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 4 --hidden-size 1024 "
    "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 "
    "--global-batch-size 8 --train-iters 10 {extra}\n"
)


def _query_groups(tmp_path, extra: str) -> dict:
    (tmp_path / "run.sh").write_text(LAUNCH.format(extra=extra))
    (result,) = check_paths([tmp_path / "run.sh"], root=str(tmp_path))
    layout = file_json(result)["layout"]
    return {"value": layout["model"]["num_query_groups"], **layout["provenance"]["model.num_query_groups"]}


def test_the_checkpoint_sets_the_query_groups(tmp_path):
    # fail before: 16 groups (one per head) printed as derived
    got = _query_groups(tmp_path, "--use-checkpoint-args --load ckpt/")
    assert got["value"] is None and got["origin"] == "unresolved" and "--use-checkpoint-args" in got["note"]


@pytest.mark.parametrize("extra", ["", "--use-checkpoint-args", "--load ckpt/"])
def test_without_both_the_command_line_decides(tmp_path, extra):
    assert _query_groups(tmp_path, extra)["value"] == 16
