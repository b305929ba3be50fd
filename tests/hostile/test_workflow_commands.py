"""No text from a file forms a GitHub Actions workflow command in what plint writes to stdout or stderr:
the runner reads `::name ...::` at the start of a line (after blanks) and `##[name ...]` anywhere in a
line (actions/runner src/Runner.Common/ActionCommand.cs TryParseV2 and TryParse, tried in that order
by src/Runner.Worker/ActionCommandManager.cs TryProcessCommand). Before, the findings past the tenth
annotation of a kind and the stderr note for a JSON that is no DeepSpeed config printed a file's
`##[add-mask]...` or `##[stop-commands]...` as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from console_script import run_plint  # noqa: E402

from hostile_helpers import FORMATS, TRAINER, make_tree  # noqa: E402

# the commands the runner registers (ActionCommandManager and its extensions)
REGISTERED = {
    "error",
    "warning",
    "notice",
    "debug",
    "add-mask",
    "stop-commands",
    "set-output",
    "set-env",
    "add-path",
    "save-state",
    "group",
    "endgroup",
    "echo",
    "add-matcher",
    "remove-matcher",
    "internal-set-repo-path",
}
FORGED = (
    "##[add-mask]hidden",
    "##[stop-commands]tok",
    "  ::error file=x::forged",
    "::warning::w",
    "x##[error]y",
    "##[group]g",
)
INT_FLAGS = ("--seed", "--train-iters", "--eval-iters", "--log-interval", "--save-interval", "--exit-interval")


def runner_commands(log: str) -> list[tuple[str, str, str]]:
    """(form, name, rest) of every line the runner would take for a command."""
    found = []
    for line in log.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("::"):
            end = stripped.find("::", 2)
            if end > 0:
                info = stripped[2:end]
                name = info.split(" ", 1)[0]
                if name in REGISTERED:
                    found.append(("v2", name, stripped))
                    continue
        at = line.find("##[")
        if at >= 0:
            close = line.find("]", at)
            name = line[at + 3 : close].split(" ", 1)[0] if close > 0 else ""
            if name in REGISTERED:
                found.append(("v1", name, line))
    return found


def assert_only_plints_commands(log: str) -> None:
    for form, name, line in runner_commands(log):
        assert form == "v2" and name in ("error", "warning", "notice"), line
        props = line[2 : line.find("::", 2)].split(" ", 1)[1]
        assert props.startswith("title=plint"), line


@pytest.fixture
def forged_tree(tmp_path):
    """Thirteen launches, each quoting six forged commands in findings (PL506), a JSON that is no
    DeepSpeed config with one in a key, and a folder and a file whose names are commands."""
    quoted = " ".join(f"{flag} '{text}'" for flag, text in zip(INT_FLAGS, FORGED))
    files = {f"repo/l{i:02d}.sh": f"torchrun --nproc_per_node 8 {TRAINER} {quoted}\n" for i in range(13)}
    files["repo/notds.json"] = '{"##[add-mask]k": 1, "::error::j": 2}'
    files["repo/##[error]d/::error::f.sh"] = f"torchrun --nproc_per_node 8 {TRAINER} --tensor-model-parallel-size 3\n"
    repo, _ = make_tree(tmp_path, files)
    return repo


def test_the_github_format_forms_no_command_from_file_text(forged_tree, tmp_path):
    summary = tmp_path / "summary.md"
    paths = sorted(p.name for p in forged_tree.glob("l*.sh")) + ["notds.json", "##[error]d"]
    done = run_plint("check", "--format", "github", *paths, cwd=forged_tree, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert sum(line.startswith("plint: l") for line in lines) > 10  # the overflow lines are there
    assert "not a DeepSpeed config" in done.stderr  # and the note
    assert_only_plints_commands(done.stdout)
    assert_only_plints_commands(done.stderr)
    assert "##\\[add-mask]hidden" in done.stdout  # the text is shown, broken
    # the file in the folder named like a command is named in the annotation's message, escaped, not in its
    # file= property (inert whatever order the runner's parsers try: issue 30's fuzzer flagged `file=##[`)
    assert "::##\\[error]d/::error::f.sh:1: " in done.stdout and "file=##[" not in done.stdout


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "github"])
def test_no_other_format_forms_a_command_on_stdout_or_stderr(forged_tree, fmt):
    done = run_plint("check", "--format", fmt, "l00.sh", "notds.json", "##[error]d", cwd=forged_tree)
    assert done.returncode == 1, done.stderr
    if fmt != "markdown":  # markdown goes to a file or a comment, and escapes `[` its own way
        assert_only_plints_commands(done.stdout)
    assert_only_plints_commands(done.stderr)
    if fmt in ("json", "sarif"):  # the same strings once parsed: `\u005b` is `[`
        assert "##[add-mask]hidden" in json.dumps(json.loads(done.stdout))


def test_fix_and_show_write_no_command(forged_tree):
    (forged_tree / "l00.sh").write_text(" ::error::lead\n" + (forged_tree / "l00.sh").read_text())
    for args in (["fix", "--diff", "--unsafe-fixes", "l00.sh"], ["fix", "l00.sh"], ["show", "l00.sh"]):
        done = run_plint(*args, cwd=forged_tree, env={"GITHUB_ACTIONS": "true"})
        assert "Traceback" not in done.stderr, (args, done.stderr)
        assert_only_plints_commands(done.stdout)
        assert_only_plints_commands(done.stderr)
    piped = run_plint("fix", "--diff", "--unsafe-fixes", "l00.sh", cwd=forged_tree, env={"GITHUB_ACTIONS": ""})
    assert "'##[add-mask]hidden'" in piped.stdout  # elsewhere exactly what `patch` applies


def test_the_runner_model_sees_what_it_should():
    """The model above finds the forms it must (else the tests prove nothing)."""
    assert [c[:2] for c in runner_commands("  ::add-mask::x\nab ##[stop-commands]t\n::nope::x")] == [
        ("v2", "add-mask"),
        ("v1", "stop-commands"),
    ]


def test_each_channel_escaper_is_inert():
    from plint.escape import log, terminal, workflow_data, workflow_property

    for text in FORGED + ("\n::error::x", "\r##[add-mask]y", " \t::x::y"):
        for escaped in (log(text), workflow_data(text), terminal(text)):
            assert "##[" not in escaped and not escaped.lstrip().startswith("::"), (text, escaped)
            assert "\n" not in escaped and "\r" not in escaped
        assert not any(c in workflow_property(text) for c in ",:\n\r")
    assert log("a\ud800b") == "a\\ud800b" and log("\x1b[31m") == "\\x1b[31m"
    assert terminal("[bold]x[/bold]") == "\\[bold]x\\[/bold]"
    from plint.escape import html, json_text

    assert html("a\x1b<b>") == "a\\x1b<b>" and html(3) == 3  # jinja2's autoescape then does the markup
    assert json_text('{"k": "##[x\ud800"}') == '{"k": "##\\u005bx\\ud800"}'


def test_a_usage_error_quoting_a_config_or_a_launch_forms_no_command(tmp_path):
    """A pull request may carry its own [tool.plint] (a bad value is a usage error that quotes it), and
    show/plan name the unknown values of a launch they cannot draw: stderr escapes both."""
    repo, _ = make_tree(
        tmp_path,
        {
            "repo/pyproject.toml": '[tool.plint]\ngpu = "##[add-mask]g"\n',
            "repo/l.sh": 'torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers "$X"  # ##[stop-commands]t\n',
        },
    )
    done = run_plint("check", "--format", "github", "l.sh", cwd=repo)
    assert done.returncode == 2 and "##\\[add-mask]g" in done.stderr, done.stderr
    assert_only_plints_commands(done.stderr)
    for command in ("show", "plan"):
        done = run_plint(command, "--env", "X=##[add-mask]e", "l.sh", cwd=repo)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert_only_plints_commands(done.stdout + "\n" + done.stderr)
    (repo / "pyproject.toml").unlink()  # the launch's own unknown values, named by show and plan
    for command in ("show", "plan"):
        done = run_plint(command, "--env", "X=##[add-mask]e", "l.sh", cwd=repo)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert_only_plints_commands(done.stdout + "\n" + done.stderr)


def test_a_file_named_with_a_runner_command_forms_none_in_github_or_markdown(tmp_path):
    """Issue 30's fuzzer: a file named `##[stop-commands]x.sh` came out raw in the annotation's `file=` and in
    the markdown report's code spans (a step that prints `--format markdown` puts it in the log)."""
    from plint.escape import RUNNER_COMMAND

    name = "##[stop-commands]x.sh"
    (tmp_path / name).write_text(
        "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3\n"
    )
    plint = Path(sys.executable).with_name("plint")
    for fmt in ("github", "markdown"):
        done = subprocess.run(
            [str(plint), "check", "--format", fmt, "--root", ".", name],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "PL101" in done.stdout, fmt
        assert RUNNER_COMMAND not in done.stdout + done.stderr, fmt
