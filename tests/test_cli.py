"""The command line contract: exit codes, JSON shape, unreadable files as PL001."""

import json
import subprocess
import sys

from click.testing import CliRunner

from plint.cli.commands import cli

CONTRACT_LAYOUT_KEYS = {
    "launcher",
    "scheduler",
    "trainer",
    "entrypoint",
    "cluster",
    "parallel",
    "batch",
    "model",
    "precision",
    "recompute",
    "estimate",
    "provenance",
    "unresolved",
}


def run(*args):
    return CliRunner().invoke(cli, list(args))


def test_missing_path_is_a_usage_error(tmp_path):
    result = run("check", str(tmp_path / "nope.sh"))
    assert result.exit_code == 2
    assert "no such file" in result.output


def test_bad_env_is_a_usage_error(tmp_path):
    script = tmp_path / "a.sh"
    script.write_text("echo hi\n")
    result = run("check", "--env", "NOVALUE", str(script))
    assert result.exit_code == 2


def test_file_without_launch_has_null_layout(tmp_path):
    script = tmp_path / "a.sh"
    script.write_text("#!/bin/bash\necho hello\n")
    result = run("check", "--format", "json", str(script))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["files"][0]["layout"] is None
    assert doc["summary"]["files"] == 1
    assert "plint_version" in doc


def test_binary_file_is_pl001(tmp_path):
    blob = tmp_path / "weights.sh"
    blob.write_bytes(b"\x7fELF\x00\x00\x01binary")
    result = run("check", "--format", "json", str(blob))
    assert result.exit_code == 1
    diags = json.loads(result.output)["files"][0]["diagnostics"]
    assert [d["code"] for d in diags] == ["PL001"]
    assert "binary" in diags[0]["message"]


def test_broken_json_is_pl001_with_position(tmp_path):
    cfg = tmp_path / "ds_config.json"
    cfg.write_text('{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2\n}\n')
    result = run("check", "--format", "json", str(cfg))
    assert result.exit_code == 1
    diag = json.loads(result.output)["files"][0]["diagnostics"][0]
    assert diag["code"] == "PL001" and diag["line"] is not None


def test_layout_json_has_every_contract_field(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text(
        "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
        "--micro-batch-size 1 --global-batch-size 64\n"
    )
    result = run("check", "--format", "json", str(script))
    layout = json.loads(result.output)["files"][0]["layout"]
    assert CONTRACT_LAYOUT_KEYS <= set(layout)
    assert set(layout["parallel"]) >= {
        "tp",
        "pp",
        "vpp",
        "cp",
        "ep",
        "etp",
        "dp",
        "sequence_parallel",
        "distributed_optimizer",
        "zero_stage",
    }
    assert layout["parallel"]["tp"] == 2 and layout["parallel"]["dp"] == 4
    assert layout["batch"]["num_microbatches"] == 16
    assert layout["provenance"]["parallel.tp"]["line"] == 1
    assert layout["provenance"]["parallel.pp"]["origin"] == "default"


def test_env_seeds_an_unresolved_variable(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text("torchrun --nnodes $NNODES --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1\n")
    unseeded = json.loads(run("check", "--format", "json", str(script)).output)["files"][0]
    assert unseeded["layout"]["cluster"]["nnodes"] is None
    assert any(u.startswith("cluster.nnodes") for u in unseeded["layout"]["unresolved"])
    assert any(d["code"] == "PL002" and "--env NNODES=" in d["message"] for d in unseeded["diagnostics"])
    seeded = json.loads(run("check", "--format", "json", "--env", "NNODES=4", str(script)).output)["files"][0]
    assert seeded["layout"]["cluster"]["world_size"] == 32
    assert seeded["layout"]["provenance"]["cluster.nnodes"]["origin"] in ("env", "derived")


def test_python_dash_m_entry_point(tmp_path):
    script = tmp_path / "a.sh"
    script.write_text("echo hi\n")
    proc = subprocess.run([sys.executable, "-m", "plint", "check", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "1 file(s) checked" in proc.stdout


def test_fast_path_runs_check_without_click(tmp_path):
    script = tmp_path / "a.sh"
    script.write_text("torchrun --nproc_per_node 2 pretrain_gpt.py --tensor-model-parallel-size 2\n")
    code = (
        "import sys, runpy; sys.argv = ['plint', 'check', '--format', 'json', %r]\n"
        "try:\n    runpy.run_module('plint', run_name='__main__')\n"
        "except SystemExit as e:\n    print('EXIT', e.code, 'click' in sys.modules)\n"
    ) % str(script)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip().endswith("EXIT 0 False"), proc.stdout + proc.stderr


def test_fast_path_and_click_agree_on_options(tmp_path):
    from plint.cli.check_command import OPTIONS, parse_fast
    from plint.cli.commands import check as click_check

    click_flags = {f for p in click_check.params for f in getattr(p, "opts", [])}
    assert {name for o in OPTIONS for name in o.names} == click_flags - {"--help"} - {"paths"}  # aliases too
    script = tmp_path / "a.sh"
    script.write_text("echo\n")
    parsed = parse_fast(["--format=json", "--env", "A=1", "--env", "B=2", "--concise", str(script)])
    assert parsed["fmt"] == "json" and parsed["env"] == ["A=1", "B=2"] and parsed["concise"] is True
    assert parse_fast(["--format", "xml", str(script)]) is None  # click explains bad choices
    assert parse_fast(["--unknown", str(script)]) is None
    assert parse_fast([str(tmp_path / "missing.sh")]) is None
    short = parse_fast(["-q", "--color=never", str(script)])
    assert short["quiet"] is True and short["color"] == "never" and short["verbose"] is False
    assert parse_fast(["-", "--stdin-filename", "x.sh"])["paths"] == ["-"]
    assert parse_fast(["--stdin-filename", "x.sh"])["paths"] == ["-"]  # ruff: the name alone reads stdin
