"""ms-swift's `swift sft|pt|rlhf|infer`: torchrun from NPROC_PER_NODE / NNODES / NODE_RANK / MASTER_ADDR /
MASTER_PORT when either of the first two is set, else one python process (swift/cli/main.py, cli_main)."""

import pytest

from plint.checking.check import check_paths
from plint.report.json_report import file_json

ARGS = "--model Qwen/Qwen2.5-7B-Instruct --tuner_type full --per_device_train_batch_size 2 --deepspeed zero2\n"


def _layout(tmp_path, text: str) -> dict | None:
    (tmp_path / "train.sh").write_text(text)
    (result,) = check_paths([tmp_path / "train.sh"], root=str(tmp_path))
    return file_json(result)["layout"]


def test_nproc_per_node_makes_it_torchrun(tmp_path):
    # fail before: no launch (PL005 or silence): `swift` was no launcher plint knew
    layout = _layout(tmp_path, "NPROC_PER_NODE=8 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 swift sft " + ARGS)
    assert layout is not None
    assert (layout["launcher"], layout["entrypoint"], layout["cluster"]["world_size"]) == ("torchrun", "sft.py", 8)
    assert layout["provenance"]["cluster.world_size"]["path"].endswith("train.sh")
    assert layout["trainer"] == "deepspeed" and layout["batch"]["micro"] == 2


def test_the_multi_node_variables_are_torchruns_options(tmp_path):
    text = "export NNODES=2\nexport NODE_RANK=1\nexport MASTER_ADDR=10.0.0.1\nNPROC_PER_NODE=4 swift rlhf " + ARGS
    layout = _layout(tmp_path, text)
    assert (layout["cluster"]["nnodes"], layout["cluster"]["world_size"], layout["parallel"]["dp"]) == (2, 8, 8)


def test_without_either_variable_it_is_one_python_process(tmp_path):
    layout = _layout(tmp_path, "swift sft " + ARGS)
    assert layout is not None and layout["launcher"] is None and layout["entrypoint"] == "sft.py"
    assert layout["cluster"]["world_size"] == 1


@pytest.mark.parametrize("route", ["export", "deploy", "web-ui"])
def test_routes_that_do_not_train_are_no_launch(tmp_path, route):
    assert _layout(tmp_path, f"NPROC_PER_NODE=8 swift {route} --model X\n") is None
