"""[tool.plint] discovery, validation, selection, per-file ignores, severities and releases."""

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from plint.check import CheckOptions, check_paths
from plint.cli import cli
from plint.config import discover, load, settings_from

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "schemas" / "config.schema.json").read_text())
BAD = "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --bf16\n"


def codes(path, **options):
    (result,) = check_paths([path], CheckOptions(**options))
    return {d.code: d.severity for d in result.diagnostics if d.suppressed is None}


def test_nearest_file_wins_and_the_git_root_stops_the_walk(tmp_path):
    (tmp_path / "outer").mkdir()
    (tmp_path / "outer" / ".plint.toml").write_text('ignore = ["PL601"]\n')
    repo = tmp_path / "outer" / "repo"
    (repo / "jobs").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "jobs" / "launch.sh").write_text(BAD)
    assert discover(repo / "jobs" / "launch.sh") is None  # stops at the git root
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert discover(repo / "jobs" / "launch.sh") is None  # a pyproject without [tool.plint] does not count
    (repo / "pyproject.toml").write_text('[tool.plint]\nignore = ["sequence-parallel-off"]\n')
    assert discover(repo / "jobs" / "launch.sh") == (repo / "pyproject.toml").resolve()
    (repo / "jobs" / ".plint.toml").write_text('ignore = ["PL601"]\n')
    assert discover(repo / "jobs" / "launch.sh") == (repo / "jobs" / ".plint.toml").resolve()
    found = codes(repo / "jobs" / "launch.sh")
    assert "PL601" not in found and "PL303" in found  # no merging: the nearest file alone
    assert "PL601" in codes(repo / "jobs" / "launch.sh", isolated=True)
    assert "PL303" not in codes(repo / "jobs" / "launch.sh", config_file=repo / "pyproject.toml")


def test_selection_severity_and_per_file_ignores(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "launch.sh").write_text(BAD)
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.sh").write_text(BAD)
    (tmp_path / ".plint.toml").write_text(
        'select = ["PL3", "cuda-device-max-connections"]\nseverity = {PL303 = "error", "PL305" = "off"}\n'
        '[per-file-ignores]\n"legacy/*" = ["PL303"]\n')
    assert codes(tmp_path / "launch.sh") == {"PL303": "error", "PL601": "warning"}
    assert codes(tmp_path / "legacy" / "old.sh") == {"PL601": "warning"}
    assert codes(tmp_path / "launch.sh", select=["PL601"]) == {"PL601": "warning"}  # the command line wins


@pytest.mark.parametrize("text, message", [
    ('ignor = ["PL101"]\n', "did you mean 'ignore'"),
    ('ignore = ["PL1O1"]\n', "unknown rule selector 'PL1O1'"),
    ('severity = {PL101 = "fatal"}\n', "severity.PL101"),
    ('thresholds = {bubbles = 0.2}\n', "thresholds.bubbles"),
    ('megatron = "0.99"\n', "unknown release '0.99'"),
    ('select = [\n', "invalid TOML"),
])
def test_bad_config_is_a_usage_error_with_a_clear_message(tmp_path, text, message):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".plint.toml").write_text(text)
    (tmp_path / "launch.sh").write_text(BAD)
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "launch.sh")])
    assert result.exit_code == 2 and message in result.output, result.output


@pytest.mark.parametrize("table", [
    {"select": ["PL1"], "severity": {"PL201": "off"}, "assume": {"NNODES": 4}, "megatron": "0.16"},
    {"thresholds": {"bubble": 0.2}, "fail-on": "warning", "per-file-ignores": {"a/*": ["PL303"]}},
    {"selec": ["PL1"]}, {"fail-on": "sometimes"}, {"gpus-per-node": "eight"},
])
def test_hand_checks_agree_with_the_schema(tmp_path, table):
    schema_ok = jsonschema.Draft202012Validator(SCHEMA).is_valid(table)
    try:
        settings_from(tmp_path / ".plint.toml", table)
        light_ok = True
    except ValueError:
        light_ok = False
    assert schema_ok == light_ok


def test_fail_on_assume_and_release_from_config(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "launch.sh").write_text("GPUS=$(nvidia-smi -L | wc -l)\n" + BAD.replace("8", "$GPUS", 1))
    (tmp_path / ".plint.toml").write_text('fail-on = "warning"\nassume = {GPUS = 8}\nmegatron = "0.8"\n')
    settings = load(tmp_path / ".plint.toml")
    assert settings.releases == {"megatron": "0.8"} and settings.fail_on == "warning"
    (result,) = check_paths([tmp_path / "launch.sh"])
    assert result.layouts[0].value("cluster.world_size") == 8
    assert result.layouts[0].extras["release"] == ("0.8", False)
    assert CliRunner().invoke(cli, ["check", str(tmp_path / "launch.sh")]).exit_code == 1  # warnings fail


def test_nvlink_domain_from_config_widens_the_tensor_parallel_limit(tmp_path):
    (tmp_path / ".git").mkdir()
    launch = tmp_path / "launch.sh"
    launch.write_text("export CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nnodes 2 --nproc_per_node 4 --master_addr n0 "
                      "pretrain_gpt.py --tensor-model-parallel-size 8 --sequence-parallel --num-attention-heads 32\n")
    assert "PL201" in codes(launch)
    (tmp_path / ".plint.toml").write_text("nvlink-domain = 72\n")
    assert "PL201" not in codes(launch)
