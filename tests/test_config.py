"""[tool.plint] discovery, validation, selection, per-file ignores, severities and releases."""

import json
from pathlib import Path

import jsonschema
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from click.testing import CliRunner

from plint.checking.check import CheckOptions, check_paths
from plint.cli.commands import cli
from plint.checking.config import discover, load, settings_from

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
        '[per-file-ignores]\n"legacy/*" = ["PL303"]\n'
    )
    assert codes(tmp_path / "launch.sh") == {"PL303": "error", "PL601": "warning"}
    assert codes(tmp_path / "legacy" / "old.sh") == {"PL601": "warning"}
    assert codes(tmp_path / "launch.sh", select=["PL601"]) == {"PL601": "warning"}  # the command line wins


@pytest.mark.parametrize(
    "text, message",
    [
        ('ignor = ["PL101"]\n', "'ignor': unknown key; did you mean 'ignore'?"),
        ('ignore = ["PL1O1"]\n', "ignore: unknown rule selector 'PL1O1'; did you mean 'PL101'?"),
        (
            'select = ["PL3", "sequence-paralel-off"]\n',
            "select: unknown rule selector 'sequence-paralel-off'; did you mean 'sequence-parallel-off'?",
        ),
        ('[per-file-ignores]\n"old/*" = ["PL9"]\n', "per-file-ignores.old/*: unknown rule selector 'PL9'"),
        ('severity = {PL101 = "fatal"}\n', "severity.PL101: expected one of error, warning, info, off"),
        ('severity = {PL10l = "info"}\n', "severity: unknown rule selector 'PL10l'"),
        ('ignore = "PL101"\n', "ignore: expected a list, got 'PL101'"),
        ("thresholds = {bubbles = 0.2}\n", "thresholds.bubbles: unknown threshold; did you mean 'bubble'?"),
        ("thresholds = {bubble = -1}\n", "thresholds.bubble: expected a number >= 0"),
        ("gpus-per-node = 0\n", "gpus-per-node: expected a positive number"),
        ('gpu = "h1OO"\n', "gpu: unknown GPU 'h1OO'"),
        ('assume = {"NODES COUNT" = 2}\n', "assume.NODES COUNT: not a shell variable name"),
        ("assume = {NNODES = [2]}\n", "assume.NNODES: expected a string or an integer"),
        ('fail-on = "sometimes"\n', "fail-on: expected one of error, warning, info, never"),
        ('megatron = "0.99"\n', "unknown release '0.99'"),
        # a .plint.toml takes [tool.plint] too (issue 16: the README's block pasted into it was refused); what
        # stays an error is mixing the two forms, or a [tool] table with no plint in it
        ('fail-on = "warning"\n[tool.plint]\nselect = ["PL1"]\n', "settings both at top level ('fail-on') and under"),
        ("[tool.ruff]\nline-length = 100\n", "no [tool.plint] table ([tool] holds [tool.ruff])"),
        ('[tool.plint]\nselec = ["PL1"]\n', ": [tool.plint] 'selec': unknown key; did you mean 'select'?"),
        ("select = [\n", "invalid TOML"),
    ],
)
def test_bad_config_is_a_usage_error_with_a_clear_message(tmp_path, text, message):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".plint.toml").write_text(text)
    (tmp_path / "launch.sh").write_text(BAD)
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "launch.sh")])
    assert result.exit_code == 2 and message in result.output, result.output


@pytest.mark.parametrize(
    "table",
    [
        {"select": ["PL1"], "severity": {"PL201": "off"}, "assume": {"NNODES": 4, "HOST": "n0"}, "megatron": "0.16"},
        {"thresholds": {"bubble": 0.2, "mfu": 0}, "fail-on": "warning", "per-file-ignores": {"a/*": ["PL303"]}},
        {
            "gpu": "h100-sxm",
            "nvlink-domain": 72,
            "inter-node-bandwidth-gbps": 400,
            "gpus-per-node": 8,
            "deepspeed": "0.19",
            "baseline": "ci/.plint-baseline",
            "extend-select": [],
            "ignore": ["PL0"],
        },
        {"selec": ["PL1"]},
        {"fail-on": "sometimes"},
        {"gpus-per-node": "eight"},
        {"gpus-per-node": True},
        {"gpus-per-node": 0},
        {"nvlink-domain": 8.5},
        {"inter-node-bandwidth-gbps": 0},
        {"thresholds": {"mfu": -0.1}},
        {"thresholds": {"mfu": "high"}},
        {"thresholds": {"bubbles": 0.1}},
        {"severity": {"PL201": "fatal"}},
        {"per-file-ignores": {"a/*": "PL303"}},
        {"select": "PL1"},
        {"ignore": [3]},
        {"assume": {"N": [1]}},
        {"assume": {"N": True}},
        {"assume": {"1N": 1}},
        {"megatron": 16},
        {"baseline": None},
    ],
)
def test_hand_checks_agree_with_the_schema(tmp_path, table):
    schema_ok = jsonschema.Draft202012Validator(SCHEMA).is_valid(table)
    assert jsonschema.Draft202012Validator(SCHEMA).is_valid({"tool": {"plint": table}}) == schema_ok
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
    assert result.layouts[0].extras.release == ("0.8", False)
    assert CliRunner().invoke(cli, ["check", str(tmp_path / "launch.sh")]).exit_code == 1  # warnings fail


def test_nvlink_domain_from_config_widens_the_tensor_parallel_limit(tmp_path):
    (tmp_path / ".git").mkdir()
    launch = tmp_path / "launch.sh"
    launch.write_text(
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nnodes 2 --nproc_per_node 4 --master_addr n0 "
        "pretrain_gpt.py --tensor-model-parallel-size 8 --sequence-parallel --num-attention-heads 32\n"
    )
    assert "PL201" in codes(launch)
    (tmp_path / ".plint.toml").write_text("nvlink-domain = 72\n")
    assert "PL201" not in codes(launch)


def test_messages_name_the_table_of_a_pyproject(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.plint]\nignore = ["PL1O1"]\n')
    (tmp_path / "launch.sh").write_text(BAD)
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "launch.sh")])
    assert result.exit_code == 2
    assert f"{(tmp_path / 'pyproject.toml').resolve()}: [tool.plint] ignore: unknown rule selector" in result.output


def test_a_git_file_marks_the_root_too_and_config_discovery_is_per_file(tmp_path):
    worktree = tmp_path / "wt"
    (worktree / "a").mkdir(parents=True)
    (worktree / "b").mkdir()
    (worktree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")  # a worktree or submodule
    (tmp_path / ".plint.toml").write_text('ignore = ["PL303"]\n')
    (worktree / "a" / ".plint.toml").write_text('ignore = ["PL601"]\n')
    for folder in ("a", "b"):
        (worktree / folder / "launch.sh").write_text(BAD)
    assert discover(worktree / "b" / "launch.sh") is None
    run = check_paths([worktree / "a" / "launch.sh", worktree / "b" / "launch.sh"])
    found = [{d.code for d in r.diagnostics} for r in run]
    assert "PL601" not in found[0] and "PL303" in found[0] and {"PL601", "PL303"} <= found[1]


def test_command_line_selectors_are_checked_too(tmp_path):
    (tmp_path / "launch.sh").write_text(BAD)
    result = CliRunner().invoke(
        cli, ["check", "--isolated", "--select", "PL3,tp-spans-node", str(tmp_path / "launch.sh")]
    )
    assert result.exit_code == 2 and "--select: unknown rule selector 'tp-spans-node'" in result.output


def test_the_console_entry_reports_a_bad_config_as_a_usage_error(tmp_path):
    import subprocess
    import sys

    (tmp_path / ".git").mkdir()
    (tmp_path / ".plint.toml").write_text('severity = {PL303 = "loud"}\n')
    (tmp_path / "launch.sh").write_text(BAD)
    proc = subprocess.run(
        [sys.executable, "-c", "from plint.entry import main; main()", "check", "launch.sh"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "severity.PL303: expected one of" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_explicit_config_without_a_plint_table_is_an_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / "launch.sh").write_text(BAD)
    result = CliRunner().invoke(
        cli, ["check", "--config", str(tmp_path / "pyproject.toml"), str(tmp_path / "launch.sh")]
    )
    assert result.exit_code == 2 and "no [tool.plint] table" in result.output


SETTINGS = SCHEMA["$defs"]["settings"]
# the schema's type for each Python type the loader accepts (plint.checking.config.KEYS)
JSON_TYPE = {list: "array", dict: "object", str: "string", int: "integer", (int, float): "number"}


def _schema_type(prop: dict) -> str:
    prop = SCHEMA["$defs"][prop["$ref"].rsplit("/", 1)[1]] if "$ref" in prop else prop
    if "enum" in prop:
        assert {type(v) for v in prop["enum"]} == {str}
        return "string"
    return prop["type"]


def test_the_schema_and_the_loader_accept_the_same_keys_with_the_same_types():
    from plint.checking.config import CLUSTER_KEYS, FAIL_ON, KEYS, SEVERITIES, THRESHOLDS

    assert set(SETTINGS["properties"]) == set(KEYS)
    assert {key: _schema_type(SETTINGS["properties"][key]) for key in KEYS} == {
        key: JSON_TYPE[expected] for key, expected in KEYS.items()
    }
    assert set(SETTINGS["properties"]["thresholds"]["properties"]) == set(THRESHOLDS)
    assert {p["type"] for p in SETTINGS["properties"]["thresholds"]["properties"].values()} == {"number"}
    assert SETTINGS["properties"]["fail-on"]["enum"] == list(FAIL_ON)
    assert SETTINGS["properties"]["severity"]["additionalProperties"]["enum"] == list(SEVERITIES)
    assert set(CLUSTER_KEYS) <= set(KEYS)


@pytest.mark.parametrize(
    "text",
    [
        'select = ["PL1"]\n',
        '[tool.plint]\nselect = ["PL1"]\n',
        '[tool.plint]\nselect = ["PL1"]\n[tool.ruff]\nline-length = 100\n',  # other tools beside plint: left alone
        "",
        'select = ["PL1"]\n[tool.plint]\nignore = ["PL2"]\n',  # both forms
        "[tool.ruff]\nline-length = 100\n",  # [tool] without plint
        "tool = 3\n",
        '[tool]\nplint = "PL1"\n',
        '[project]\nname = "x"\n[tool.plint]\nselect = ["PL1"]\n',  # a pyproject under another name: one form only
    ],
)
def test_a_whole_file_is_valid_for_the_schema_exactly_when_plint_loads_it(tmp_path, text):
    (tmp_path / ".plint.toml").write_text(text)
    schema_ok = jsonschema.Draft202012Validator(SCHEMA).is_valid(tomllib.loads(text))
    try:
        load(tmp_path / ".plint.toml")
        loaded = True
    except ValueError:
        loaded = False
    assert schema_ok == loaded


def test_the_documented_configuration_block_is_valid_in_both_files(tmp_path):
    import re

    page = (ROOT / "docs" / "configuration.md").read_text()
    block = re.search(r"# Configuration and suppression.*?```toml\n(.*?)```", page, re.S).group(1)
    assert block.startswith("[tool.plint]\n")
    assert jsonschema.Draft202012Validator(SCHEMA).is_valid(tomllib.loads(block))
    (tmp_path / ".git").mkdir()
    for name in ("pyproject.toml", ".plint.toml"):
        (tmp_path / name).write_text(block)
        settings = load(tmp_path / name)
        assert settings.select and settings.fail_on == "warning", name
        (tmp_path / name).unlink()


def test_the_docs_name_the_schema_editors_read():
    import re

    page = (ROOT / "docs" / "configuration.md").read_text()
    directive = re.search(r"^#:schema (\S+)$", page, re.M).group(1)
    assert directive == SCHEMA["$id"] and directive.endswith("/schemas/config.schema.json")
    assert "config.schema.json#/$defs/settings" in page and "$defs" in SCHEMA and "settings" in SCHEMA["$defs"]


def test_per_file_ignores_reach_findings_inside_the_json_a_script_reads(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "ds.json").write_text('{"train_batch_size": 60, "train_micro_batch_size_per_gpu": 2}\n')
    (tmp_path / "launch.sh").write_text("deepspeed --num_gpus 8 train.py --deepspeed_config conf/ds.json\n")
    assert "PL106" in codes(tmp_path / "launch.sh")
    (tmp_path / ".plint.toml").write_text('[per-file-ignores]\n"conf/*.json" = ["PL106"]\n')
    assert "PL106" not in codes(tmp_path / "launch.sh")
