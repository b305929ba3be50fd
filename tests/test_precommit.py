"""The pre-commit hook, run for real with `pre-commit try-repo` in a fresh git repository."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))

pytestmark = pytest.mark.skipif(not Path(PRE_COMMIT).exists() or shutil.which("git") is None,
                                reason="pre-commit or git is not installed")


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin"})


def try_repo(tmp_path, name, text):
    repo = tmp_path / "user-repo"
    repo.mkdir(exist_ok=True)
    if not (repo / ".git").exists():
        git(repo, "init", "-q")
    (repo / name).write_text(text)
    git(repo, "add", name)
    return subprocess.run([PRE_COMMIT, "try-repo", str(ROOT), "plint", "--files", name, "--verbose"],
                          cwd=repo, capture_output=True, text=True, timeout=600)


def test_hook_refuses_a_bad_launch_with_line_and_code(tmp_path):
    bad = "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3 --bf16\n"
    proc = try_repo(tmp_path, "train.slurm", bad)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.slurm:2:" in proc.stdout and "PL101" in proc.stdout


def test_hook_passes_a_good_launch(tmp_path):
    good = ("#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
            "--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer "
            "--overlap-grad-reduce --overlap-param-gather --bf16\n")
    proc = try_repo(tmp_path, "launch.sh", good)
    assert proc.returncode == 0, proc.stdout + proc.stderr
