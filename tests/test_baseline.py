"""The baseline: write it, accept what it lists (kept as suppressed), report entries that went stale."""

import json

from click.testing import CliRunner

from plint.cli import cli

BAD = "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3 --bf16\n"


def test_write_then_accept_then_report_stale(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "launch.sh").write_text(BAD)
    runner = CliRunner()
    assert runner.invoke(cli, ["check", "launch.sh"]).exit_code == 1
    written = runner.invoke(cli, ["check", "launch.sh", "--write-baseline", ".plint-baseline"])
    assert written.exit_code == 0
    lines = (tmp_path / ".plint-baseline").read_text().splitlines()
    assert "launch.sh PL101 parallel.tp" in lines and not any(":" in line.split()[0] for line in lines[1:])
    (tmp_path / "launch.sh").write_text("# a comment that moves every line\n" + BAD)
    accepted = runner.invoke(cli, ["check", "launch.sh", "--format", "json"])
    assert accepted.exit_code == 0
    pl101 = [d for d in json.loads(accepted.output)["files"][0]["diagnostics"] if d["code"] == "PL101"]
    assert pl101[0]["suppressed"] == {"kind": "external", "justification": "baseline"}
    (tmp_path / "launch.sh").write_text(BAD.replace("3", "2 --sequence-parallel"))
    stale = runner.invoke(cli, ["check", "launch.sh", "--concise"])
    assert "PL004" in stale.output and "baseline entry `launch.sh PL101 parallel.tp`" in stale.output


def test_missing_baseline_is_a_usage_error(tmp_path):
    (tmp_path / "launch.sh").write_text(BAD)
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "launch.sh"), "--baseline", str(tmp_path / "nope")])
    assert result.exit_code == 2
