"""The GPU and every gap said (issue 29): the text report names the GPU its estimate assumes and whether
it was assumed; an unknown --gpu is a usage error with a did-you-mean in every command that takes one;
a missing estimate names the field it lacks in the text report, the JSON, `show` and `plan`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from plint.cli.commands import cli

SHAPE = (
    "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --max-position-embeddings 4096 "
    "--micro-batch-size 1 --global-batch-size 64 --vocab-size 32000 --bf16"
)
GOOD = f"#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --seq-length 4096 {SHAPE}\n"
MISSPELT = f"#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --seq-lenght 4096 {SHAPE}\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "good.sh").write_text(GOOD)
    (tmp_path / "misspelt.sh").write_text(MISSPELT)
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


# ---- an unknown --gpu: a usage error everywhere, with the nearest name -------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["check", "{launch}"],
        ["fix", "--diff", "{launch}"],
        ["show", "{launch}"],
        ["plan", "{launch}"],
        ["plan", "--model", "llama3-8b", "--nodes", "1"],
        ["generate", "--target", "torchrun", "--model", "llama3-8b", "--nodes", "1", "--stdout"],
    ],
    ids=["check", "fix", "show", "plan-launch", "plan-model", "generate"],
)
def test_an_unknown_gpu_is_a_usage_error_with_a_did_you_mean(tree, command):
    args = [a.format(launch=tree / "good.sh") for a in command] + ["--gpu", "h100sxm"]
    out = invoke(*args)
    assert out.exit_code == 2, out.output
    assert "unknown GPU 'h100sxm'" in out.output and "did you mean 'h100-sxm'?" in out.output


def test_the_console_scripts_fast_path_refuses_an_unknown_gpu_too(tree):
    plint = Path(sys.executable).with_name("plint")
    if not plint.exists():
        pytest.skip("the plint console script is not installed")
    proc = subprocess.run(
        [str(plint), "check", "--gpu", "h100sxm", "good.sh"], cwd=tree, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "did you mean 'h100-sxm'?" in proc.stderr
    assert proc.stdout == ""  # no report that silently lacks the estimate


def test_a_known_alias_still_works(tree):
    out = invoke("check", "--gpu", "H100_SXM", str(tree / "good.sh"))
    assert out.exit_code == 0, out.output


# ---- the GPU named in the text report -----------------------------------------------------------------


def gpu_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("  GPU "))


def test_the_text_report_names_the_assumed_gpu_and_why(tree):
    line = gpu_line(invoke("check", str(tree / "good.sh")).output)
    assert "h100-sxm, 80 GiB, 989 TFLOP/s dense bf16" in line
    assert "assumed" in line and "the launch names no GPU type" in line and "--gpu NAME" in line


def test_the_text_report_names_a_given_gpu_without_calling_it_assumed(tree):
    line = gpu_line(invoke("check", "--gpu", "a100-40gb", str(tree / "good.sh")).output)
    assert line.startswith("  GPU        a100-40gb, 40 GiB, 312 TFLOP/s dense bf16")
    assert "assumed" not in line and "--gpu" in line


def test_the_text_report_names_a_gpu_read_from_the_launch_with_its_line(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "job.sbatch").write_text(
        "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:h200:8\n"
        f"torchrun --nproc_per_node 8 pretrain_gpt.py --seq-length 4096 {SHAPE}\n"
    )
    line = gpu_line(invoke("check", str(tmp_path / "job.sbatch")).output)
    assert "h200, 141 GiB" in line and "job.sbatch:3" in line and "assumed" not in line


# ---- a missing estimate says which field and why ------------------------------------------------------


def test_a_missing_estimate_names_the_field_in_the_text_report(tree):
    out = invoke("check", str(tree / "misspelt.sh")).output
    assert "memory/GPU" not in out
    (line,) = [line for line in out.splitlines() if "no memory or step estimate" in line]
    assert "model.seq_length" in line and "--seq-length not given" in line


def test_a_missing_required_field_is_unresolved_in_the_json_not_a_default(tree):
    doc = json.loads(invoke("check", "--format", "json", str(tree / "misspelt.sh")).output)
    layout = doc["files"][0]["layout"]
    assert layout["model"]["seq_length"] is None
    assert layout["provenance"]["model.seq_length"]["origin"] == "missing"
    assert any(entry.startswith("model.seq_length: --seq-length not given") for entry in layout["unresolved"])
    # a trainer default that is None is still a default: no experts means a dense model
    assert layout["provenance"]["model.num_experts"]["origin"] == "default"


@pytest.mark.parametrize("command", [["show"], ["plan"]])
def test_show_and_plan_name_the_missing_field(tree, command):
    out = invoke(*command, str(tree / "misspelt.sh"))
    assert out.exit_code == 2
    assert "no launch with a complete model shape" in out.output and "model.seq_length" in out.output


def test_show_names_fields_a_launch_never_gives(tmp_path):
    (tmp_path / "launch.sh").write_text("torchrun --nproc-per-node 8 train.py --lr 1e-4\n")
    out = invoke("show", str(tmp_path / "launch.sh"))
    assert out.exit_code == 2 and "model.num_layers" in out.output and "model.hidden_size" in out.output


def test_a_complete_launch_prints_no_gap_line(tree):
    out = invoke("check", str(tree / "good.sh")).output
    assert "memory/GPU" in out and "no memory or step estimate" not in out
