"""The baseline: write it, accept what it lists (kept as suppressed), report entries that went stale."""

import json

from click.testing import CliRunner

from plint.cli.commands import cli

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


def test_paths_are_relative_to_the_baseline_so_any_working_directory_matches(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "jobs").mkdir()
    (tmp_path / ".plint.toml").write_text("")  # the baseline beside the config is found by default
    (tmp_path / "jobs" / "launch.sh").write_text(BAD)
    runner = CliRunner()
    monkeypatch.chdir(tmp_path / "jobs")
    assert runner.invoke(cli, ["check", "launch.sh", "--write-baseline", "../.plint-baseline"]).exit_code == 0
    assert "jobs/launch.sh PL101 parallel.tp" in (tmp_path / ".plint-baseline").read_text().splitlines()
    assert runner.invoke(cli, ["check", "launch.sh"]).exit_code == 0
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(cli, ["check", "jobs/launch.sh"]).exit_code == 0
    assert runner.invoke(cli, ["check", "--isolated", "jobs/launch.sh"]).exit_code == 1  # no implicit baseline
    assert runner.invoke(cli, ["check", "--isolated", "--baseline", ".plint-baseline", "jobs/launch.sh"]).exit_code == 0


def test_rewriting_keeps_accepted_findings_and_drops_directive_findings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "launch.sh").write_text("# plint: disable=PL201\n" + BAD)
    runner = CliRunner()
    runner.invoke(cli, ["check", "launch.sh", "--write-baseline", ".plint-baseline"])
    first = (tmp_path / ".plint-baseline").read_text()
    assert " PL101 " in first and " PL004 " not in first
    runner.invoke(cli, ["check", "launch.sh", "--write-baseline", ".plint-baseline"])
    assert (tmp_path / ".plint-baseline").read_text() == first  # accepted findings stay accepted


def test_key_without_a_layout_field_ignores_numbers():
    from plint.checking.baseline import key_of
    from plint.diagnostics import Diagnostic

    a = Diagnostic("PL305", "x", "warning", "dp 4 without the optimizer: 18 bytes per parameter", "a.sh")
    b = Diagnostic("PL305", "x", "warning", "dp 16 without the optimizer: 12.5 bytes per parameter", "a.sh")
    assert key_of(a) == key_of(b) and " " not in key_of(a)


def test_a_malformed_baseline_is_a_usage_error(tmp_path):
    (tmp_path / "launch.sh").write_text(BAD)
    (tmp_path / "base").write_text("launch.sh PL101\n")
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "launch.sh"), "--baseline", str(tmp_path / "base")])
    assert result.exit_code == 2 and "base:1: bad baseline line" in result.output


def test_the_engine_looks_for_the_default_name():
    from plint.checking.baseline import DEFAULT_NAME
    from plint.checking.engine import BASELINE_NAME

    assert BASELINE_NAME == DEFAULT_NAME


def test_entries_about_a_sourced_file_match_and_go_stale_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "common.sh").write_text('TP_ARGS="--tensor-model-parallel-size 3"\n')
    for name in ("a.sh", "b.sh"):
        (tmp_path / name).write_text("source ./common.sh\ntorchrun --nproc_per_node 8 pretrain_gpt.py $TP_ARGS\n")
    runner = CliRunner()
    runner.invoke(cli, ["check", "a.sh", "b.sh", "--write-baseline", ".plint-baseline"])
    assert "common.sh PL101 parallel.tp" in (tmp_path / ".plint-baseline").read_text().splitlines()
    assert runner.invoke(cli, ["check", "a.sh", "b.sh"]).exit_code == 0
    (tmp_path / "common.sh").write_text('TP_ARGS="--tensor-model-parallel-size 2"\n')
    doc = json.loads(runner.invoke(cli, ["check", "a.sh", "b.sh", "--format", "json"]).output)
    stale = [d for f in doc["files"] for d in f["diagnostics"] if d["code"] == "PL004"]
    assert len(stale) == 1 and "common.sh PL101 parallel.tp" in stale[0]["message"]
