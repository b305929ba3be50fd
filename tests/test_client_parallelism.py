"""A trainer other than Megatron (an HF Trainer or DeepSpeed client script) runs no model parallelism unless its
flags or its DeepSpeed config ask for it: tp = pp = cp = ep = 1, as dp = world already says. AutoTP's
tensor_parallel.autotp_size and Ulysses' sequence_parallel_size divide the world (deepspeed/runtime/engine.py,
0.19.8); a model-parallel flag of the script's own leaves the sizes unknown."""

import pytest

from plint.checking.check import check_paths
from plint.report.json_report import file_json

LAUNCH = "deepspeed --num_gpus 8 train.py --deepspeed ds.json --per_device_train_batch_size 2 {flags}\n"


def _layout(tmp_path, ds: str = "", flags: str = "") -> dict:
    (tmp_path / "launch.sh").write_text(LAUNCH.format(flags=flags))
    (tmp_path / "ds.json").write_text(
        '{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}' + ds + "}"
    )
    (result,) = check_paths([tmp_path / "launch.sh"], root=str(tmp_path))
    return file_json(result)["layout"]


def test_a_client_script_runs_no_model_parallelism(tmp_path):
    # fail before: tp, pp, cp and ep null beside "dp = world size (no model parallelism)"
    layout = _layout(tmp_path)
    sizes = {k: layout["parallel"][k] for k in ("tp", "pp", "cp", "ep", "dp")}
    assert sizes == {"tp": 1, "pp": 1, "cp": 1, "ep": 1, "dp": 8}
    assert layout["provenance"]["parallel.tp"]["origin"] == "derived"
    assert "no model parallelism" in layout["provenance"]["parallel.tp"]["note"]
    # a trainer may split sequences under a name no list holds: cp 1 is said as an assumption
    assert layout["provenance"]["parallel.cp"]["origin"] == "assumed"


@pytest.mark.parametrize("autotp, dp", [(4, 2), (1, 8), (0, 8)])
def test_autotp_size_is_the_tensor_parallel_size(tmp_path, autotp, dp):
    layout = _layout(tmp_path, f', "tensor_parallel": {{"autotp_size": {autotp}}}')
    assert (layout["parallel"]["tp"], layout["parallel"]["dp"]) == (max(autotp, 1), dp)
    assert layout["provenance"]["parallel.tp"]["origin"] == ("literal" if autotp > 1 else "derived")


def test_ulysses_divides_the_world_and_leaves_cp_unsaid(tmp_path):
    layout = _layout(tmp_path, ', "sequence_parallel_size": 4')
    assert layout["parallel"]["dp"] == 2 and layout["parallel"]["cp"] is None
    assert layout["parallel"]["tp"] == 1


@pytest.mark.parametrize("flag", ["--tp_size 2", "--model_parallel_size 2", "--pipe_parallel_size 2"])
def test_the_scripts_own_model_parallel_flags_leave_the_sizes_unknown(tmp_path, flag):
    layout = _layout(tmp_path, flags=flag)
    assert layout["parallel"]["tp"] is None and layout["parallel"]["dp"] is None
    assert flag in layout["provenance"]["parallel.dp"]["note"]


@pytest.mark.parametrize(
    "flag",
    [
        "--seq_parallel_size 14",
        "--sequence_parallel_size 4",
        "--context_parallel_size 2",
        "--ring_attn_size 4",  # OpenRLHF
        "--ulysses_degree 2",
        "--parallel_mode zigzag_ring_attn",  # EasyContext
    ],
)
def test_the_scripts_own_sequence_split_leaves_cp_and_dp_unknown(tmp_path, flag):
    # LongVILA's train_hybrid.py --seq_parallel_size 14: sequences split over 14 GPUs, the model whole
    layout = _layout(tmp_path, flags=flag)
    assert layout["parallel"]["cp"] is None and layout["parallel"]["dp"] is None
    assert (layout["parallel"]["tp"], layout["parallel"]["pp"]) == (1, 1)
    assert flag in layout["provenance"]["parallel.dp"]["note"]


def test_a_config_checked_alone_says_no_sizes(tmp_path):
    (tmp_path / "ds.json").write_text('{"train_batch_size": 16, "tensor_parallel": {"autotp_size": 2}}')
    (result,) = check_paths([tmp_path / "ds.json"], root=str(tmp_path))
    assert file_json(result)["layout"]["parallel"]["tp"] is None


@pytest.mark.parametrize("flag", ["--ring_attn_size 1", "--parallel_mode data_parallel"])
def test_a_sequence_split_of_one_is_none(tmp_path, flag):
    layout = _layout(tmp_path, flags=flag)
    assert (layout["parallel"]["cp"], layout["parallel"]["dp"]) == (1, 8)
