"""What a file holds never changes the meaning of the exit code: numbers of any length, any escape in a
JSON string, any kind of file or broken link named on the command line give findings (PL001, PL002,
PL506), the other files named are still checked, and exit 2 stays for how plint was called. Each case
ran into exit 2 (a ValueError taken for a usage error) or a traceback before."""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from console_script import run_plint  # noqa: E402

from hostile_helpers import FORMATS, TRAINER, make_tree  # noqa: E402

LONG = "9" * 5000  # past Python's 4,300-digit int <-> str limit
CLEAN = "torchrun --nproc_per_node 8 " + TRAINER + " --tensor-model-parallel-size 3\n"  # PL101: world 8, tp 3


def _codes(stdout: str) -> list[str]:
    return [d["code"] for f in json.loads(stdout)["files"] for d in f["diagnostics"]]


def _check(repo, *paths, fmt="json", env=None):
    return run_plint("check", "--format", fmt, "--fail-on", "never", *paths, cwd=repo, env=env)


CASES = {
    "sbatch-nodes": ("job.slurm", f"#!/bin/bash\n#SBATCH --nodes={LONG}\nsrun torchrun --nproc_per_node 8 {TRAINER}\n"),
    "hostfile-slots": ("ds.sh", f"deepspeed --hostfile hostfile {TRAINER}\n"),
    "ds-json-number": ("ds.json", '{"train_batch_size": ' + LONG + "}"),
    "shift-and-positional": ("pos.sh", f"set -- 8\nshift {LONG}\necho ${{{LONG}}}\n{CLEAN}"),
    "mpirun-ppr": ("mpi.sh", f"mpirun -np 16 --map-by ppr:{LONG}:node python {TRAINER}\n"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_number_of_any_length_is_a_finding(tmp_path, name):
    path, text = CASES[name]
    repo, _ = make_tree(tmp_path, {f"repo/{path}": text, "repo/hostfile": f"w1 slots={LONG}\n", "repo/other.sh": CLEAN})
    done = _check(repo, path, "other.sh")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    codes = _codes(done.stdout)
    assert "PL101" in codes  # the other file is checked
    assert LONG not in done.stdout  # said as "a 5000-digit number", never quoted whole


def test_a_long_number_is_named_by_its_length(tmp_path):
    repo, _ = make_tree(
        tmp_path, {"repo/ds.sh": f"deepspeed --hostfile hostfile {TRAINER}\n", "repo/hostfile": f"w1 slots={LONG}\n"}
    )
    done = _check(repo, "ds.sh", fmt="text")
    assert "w1 slots is a 5000-digit number" in done.stdout, done.stdout


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_lone_surrogate_escape_in_a_deepspeed_key_is_reported_in_every_format(tmp_path, fmt):
    repo, _ = make_tree(tmp_path, {"repo/ds.json": '{"train_batch_size": 8, "\\ud800": 1}', "repo/other.sh": CLEAN})
    summary = tmp_path / "summary.md"
    done = _check(repo, "ds.json", "other.sh", fmt=fmt, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "PL504" in done.stdout and "PL101" in done.stdout
    # shown as its escape (markdown writes its backslash as the character reference `&#92;`, the same when read)
    shown = done.stdout.replace("&#92;", "\\") if fmt == "markdown" else done.stdout
    assert "\\ud800" in shown
    if fmt in ("json", "sarif"):
        document = json.loads(done.stdout)  # valid JSON, and the key is the same string again
        assert "\ud800" in json.dumps(document, ensure_ascii=False)
    if fmt == "github":
        assert "PL504" in summary.read_text(encoding="utf-8")


def _special(repo, kind):
    target = repo / kind
    if kind == "dangling.sh":
        target.symlink_to("nowhere.sh")
    elif kind == "loop.sh":
        (repo / "loop2.sh").symlink_to("loop.sh")
        target.symlink_to("loop2.sh")
    elif kind == "fifo.sh":
        os.mkfifo(target)
    elif kind == "dir.sh":
        target.mkdir()
        (target / "inner.sh").write_text(CLEAN)


@pytest.mark.parametrize("kind", ["dangling.sh", "loop.sh", "fifo.sh"])
def test_a_broken_link_or_special_file_named_is_pl001_and_the_others_are_checked(tmp_path, kind):
    repo, _ = make_tree(tmp_path, {"repo/other.sh": CLEAN})
    _special(repo, kind)
    for fmt in FORMATS:
        done = _check(repo, kind, "other.sh", fmt=fmt)
        assert done.returncode == 0, (fmt, done.stdout, done.stderr)
        assert "PL001" in done.stdout and "PL101" in done.stdout, (fmt, done.stdout)
        assert kind in done.stdout  # named by its own name, not its target
    failing = run_plint("check", kind, "other.sh", cwd=repo)
    assert failing.returncode == 1, failing.stderr  # an error finding, not a usage error


def test_a_folder_named_is_walked(tmp_path):
    repo, _ = make_tree(tmp_path, {"repo/other.sh": CLEAN})
    _special(repo, "dir.sh")
    done = _check(repo, "dir.sh", "other.sh")
    assert done.returncode == 0 and _codes(done.stdout).count("PL101") == 2, done.stdout


def test_a_path_that_is_not_there_is_still_a_usage_error(tmp_path):
    repo, _ = make_tree(tmp_path, {"repo/other.sh": CLEAN})
    done = run_plint("check", "missing.sh", "other.sh", cwd=repo)
    assert done.returncode == 2 and "missing.sh" in done.stderr


def test_a_bug_met_on_one_file_is_pl001_for_that_file(tmp_path, monkeypatch):
    """The guard of plint.checking.check: an exception while reading one file (here forced) is that
    file's PL001, never a traceback or exit 2, and the next file is checked."""
    from plint.checking import check

    repo, _ = make_tree(tmp_path, {"repo/bad.sh": CLEAN, "repo/other.sh": CLEAN})
    monkeypatch.chdir(repo)
    monkeypatch.delenv("PLINT_STRICT", raising=False)  # the tests' switch that lets such a bug raise
    real = check.read_path

    def failing(path, **kwargs):
        if str(path).endswith("bad.sh"):
            raise ValueError("forced")
        return real(path, **kwargs)

    monkeypatch.setattr(check, "read_path", failing)
    bad, other = check.check_paths(["bad.sh", "other.sh"]).results
    assert [d.message for d in bad.diagnostics] == ["plint failed on this file (ValueError: forced); please report it"]
    assert "PL101" in [d.code for d in other.diagnostics]


def test_a_lone_surrogate_key_goes_into_a_baseline_and_back(tmp_path):
    repo, _ = make_tree(tmp_path, {"repo/ds.json": '{"train_batch_size": 8, "\\ud800": 1}'})
    written = run_plint("check", "--write-baseline", "base.txt", "ds.json", cwd=repo)
    assert written.returncode == 0 and "Traceback" not in written.stderr, written.stderr
    accepted = run_plint("check", "--baseline", "base.txt", "ds.json", cwd=repo)
    assert accepted.returncode == 0 and "1 suppressed" in accepted.stdout, accepted.stdout + accepted.stderr
