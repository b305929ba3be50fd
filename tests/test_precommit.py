"""The pre-commit hook, run for real with `pre-commit try-repo` in a fresh git repository.

try-repo installs the hook from a git repository; from a checkout with changes it commits only the
tracked files (into a shadow clone), so a module not yet added to git would be missing. The test
therefore copies the working tree as it is (tracked and untracked files, less what .gitignore
drops) into a new repository with one commit, and points try-repo at that.
"""

import os
import shutil
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest
from doc_snippets import RELEASE_TAG, precommit_snippets

ROOT = Path(__file__).resolve().parent.parent
PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
SKIPPED = (
    ".git",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".benchmarks",
    ".ruff_cache",
    "*.egg-info",
    ".venv",
    "build",
    "dist",
)

pytestmark = pytest.mark.skipif(
    not Path(PRE_COMMIT).exists() or shutil.which("git") is None, reason="pre-commit or git is not installed"
)


def git(cwd, *args) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "HOME": str(cwd),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def working_tree_files() -> list[str]:
    if (ROOT / ".git").exists():
        listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
        return [name for name in listed if name and (ROOT / name).is_file()]
    out = []  # an unpacked source tree: everything but caches and build output
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not any(fnmatch(d, pattern) for pattern in SKIPPED)]
        out += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files]
    return out


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """A one-commit copy of this working tree: what try-repo installs the hook from."""
    copy = tmp_path_factory.mktemp("plint-hook-repo")
    for name in working_tree_files():
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "working tree")
    return copy


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")  # the hook env is built once and thrown away


def try_repo(tmp_path, hook_repo, pre_commit_home, name, text):
    repo = tmp_path / "user-repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / name).write_text(text)
    git(repo, "add", name)
    env = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home)}
    return subprocess.run(
        [PRE_COMMIT, "try-repo", str(hook_repo), "plint", "--files", name, "--verbose"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )


def test_hook_refuses_a_bad_launch_with_line_and_code(tmp_path, hook_repo, pre_commit_home):
    bad = "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3 --bf16\n"
    proc = try_repo(tmp_path, hook_repo, pre_commit_home, "train.slurm", bad)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.slurm:2:" in proc.stdout and "PL101" in proc.stdout


def test_hook_passes_a_good_launch(tmp_path, hook_repo, pre_commit_home):
    good = (
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
        "--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer "
        "--overlap-grad-reduce --overlap-param-gather --bf16\n"
    )
    proc = try_repo(tmp_path, hook_repo, pre_commit_home, "launch.sh", good)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the hook runs `plint check -q`: a clean commit prints no layout line, no estimate bars, no summary
    hook_output = proc.stdout.split("- hook id: plint")[-1]
    assert "launcher=" not in hook_output and "memory/GPU" not in hook_output, hook_output
    assert "file(s) checked" not in hook_output, hook_output


def test_hook_prints_findings_without_layout_bars(tmp_path, hook_repo, pre_commit_home):
    bad = "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3 --bf16\n"
    proc = try_repo(tmp_path, hook_repo, pre_commit_home, "train.sh", bad)
    assert proc.returncode == 1 and "PL101" in proc.stdout, proc.stdout + proc.stderr
    assert "launcher=" not in proc.stdout and "memory/GPU" not in proc.stdout


def test_readme_lists_the_fixing_hook_before_the_checking_hook():
    """pre-commit runs hooks in the order listed: fix first, then report what is left."""
    import re

    import yaml

    for page in (ROOT / "README.md", ROOT / "docs" / "pre-commit.md"):
        section = re.search(r"^#+ pre-commit\n(.*?)(?=^#+ |\Z)", page.read_text(), re.S | re.M).group(1)
        snippet = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
        (repo,) = snippet["repos"] if isinstance(snippet, dict) else snippet
        assert [hook["id"] for hook in repo["hooks"]] == ["plint-fix", "plint"], page


def test_hook_skips_json_that_is_no_deepspeed_config(tmp_path, hook_repo, pre_commit_home):
    proc = try_repo(tmp_path, hook_repo, pre_commit_home, "package.json", '{"name": "web", "version": "1.0.0"}\n')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PL" not in proc.stdout.split("- hook id: plint")[-1]


def test_hook_environment_stays_light():
    import tomllib

    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "plint"]
    assert hook["language"] == "python" and not hook.get("additional_dependencies")
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not [
        d for d in dependencies if d.split(">")[0].split("=")[0].strip() in ("torch", "deepspeed", "megatron-core")
    ]


@pytest.fixture(scope="module")
def released_hook_repo(hook_repo) -> Path:
    """The copy of this tree as it would be published: its one commit tagged with the release the snippets name."""
    if not git(hook_repo, "tag", "--list", RELEASE_TAG).strip():
        git(hook_repo, "tag", RELEASE_TAG)
    return hook_repo


@pytest.mark.parametrize("snippet", precommit_snippets())
def test_the_documented_snippet_works_as_pasted(tmp_path, released_hook_repo, pre_commit_home, snippet):
    """The README's and docs' pre-commit block, pasted as the whole .pre-commit-config.yaml (only the URL
    pointed at a copy of this tree), runs as it is: its rev is a tag of the repository (before issue 29 it
    was a COMMIT placeholder that failed with `pathspec 'COMMIT'` until `pre-commit autoupdate`)."""
    repo = tmp_path / "user-repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(
        snippet.replace("https://github.com/plint-dev/plint", str(released_hook_repo))
    )
    (repo / "launch.sh").write_text(
        "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3 --bf16\n"
    )
    git(repo, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home)}
    proc = subprocess.run(
        [PRE_COMMIT, "run", "plint", "--files", "launch.sh"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert proc.returncode == 1 and "PL101" in proc.stdout, proc.stdout + proc.stderr


def test_autoupdate_moves_the_snippet_to_a_newer_release(tmp_path, released_hook_repo, pre_commit_home):
    """What the docs say `pre-commit autoupdate` does: rev moves to the newest tag of the hook repository."""
    upstream = tmp_path / "upstream"
    git(tmp_path, "clone", "-q", str(released_hook_repo), str(upstream))
    (upstream / "CHANGELOG.md").write_text("# Changelog\n\n## [99.0.0] - 2099-01-01\n")
    git(upstream, "commit", "-q", "-am", "a later release")
    git(upstream, "tag", "v99.0.0")
    repo = tmp_path / "user-repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(
        precommit_snippets()[0].replace("https://github.com/plint-dev/plint", str(upstream))
    )
    env = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home)}
    update = subprocess.run(
        [PRE_COMMIT, "autoupdate"], cwd=repo, capture_output=True, text=True, timeout=600, env=env, check=False
    )
    assert update.returncode == 0, update.stdout + update.stderr
    config = (repo / ".pre-commit-config.yaml").read_text()
    assert "rev: v99.0.0" in config and f"rev: {RELEASE_TAG}" not in config
