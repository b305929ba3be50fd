"""plint opens no file outside the root (the git work tree of the checked file), and prints nothing of
one in any format: each way a launch can name a file is tried against a secret planted next door."""

from __future__ import annotations

import json
import os

import pytest

from hostile_helpers import SECRET, TRAINER, all_formats, make_tree, opened_under, recording_opens, time_limit

OUTSIDE_NOTE = "outside the checked tree: not read"

SECRET_SH = 'TP="{secret}"\nexport {secret}=1\n'
SECRET_JSON = (
    '{"train_micro_batch_size_per_gpu": "{secret}", "gradient_accumulation_steps": 1,\n'
    ' "zero_optimization": {"stage": 1}, "{secret}": 1}\n'
)
DS = "deepspeed --num_gpus 8 " + TRAINER + " --tensor-model-parallel-size 2 --deepspeed --deepspeed_config {path}"
TP = "torchrun --nproc_per_node 8 " + TRAINER + " --tensor-model-parallel-size $TP"

# name -> (files relative to tmp_path, symlinks, whether a note must say the file was not read)
CASES = {
    "source-relative": (
        {"outside/secret.sh": SECRET_SH, "repo/launch.sh": f"source ../outside/secret.sh\n{TP}\n"},
        {},
        True,
    ),
    "source-absolute": (
        {"outside/secret.sh": SECRET_SH, "repo/launch.sh": f"source {{outside}}/secret.sh\n{TP}\n"},
        {},
        True,
    ),
    "source-abs-dotdot": (
        {"outside/secret.sh": SECRET_SH, "repo/launch.sh": f". {{repo}}/../outside/secret.sh\n{TP}\n"},
        {},
        True,
    ),
    "source-deep-dotdot": (
        {"outside/secret.sh": SECRET_SH, "repo/launch.sh": f"source sub/../../outside/secret.sh\n{TP}\n"},
        {},
        True,
    ),
    "source-symlink": (
        {"outside/secret.sh": SECRET_SH, "repo/launch.sh": f"source ./env.sh\n{TP}\n"},
        {"repo/env.sh": "{outside}/secret.sh"},
        True,
    ),
    "source-symlinked-dir": (
        {"outside/secret.sh": SECRET_SH, "repo/launch.sh": f"source conf/secret.sh\n{TP}\n"},
        {"repo/conf": "{outside}"},
        True,
    ),
    "source-variable": (
        {"outside/secret.sh": SECRET_SH, "repo/launch.sh": f"D=../outside\nsource $D/secret.sh\n{TP}\n"},
        {},
        True,
    ),
    "ds-config-relative": (
        {"outside/ds.json": SECRET_JSON, "repo/launch.sh": DS.format(path="../outside/ds.json") + "\n"},
        {},
        True,
    ),
    "ds-config-abs-dotdot": (
        {"outside/ds.json": SECRET_JSON, "repo/launch.sh": DS.format(path="{repo}/../outside/ds.json") + "\n"},
        {},
        True,
    ),
    "ds-config-symlink": (
        {"outside/ds.json": SECRET_JSON, "repo/launch.sh": DS.format(path="ds.json") + "\n"},
        {"repo/ds.json": "{outside}/ds.json"},
        True,
    ),
    # the copy's content is the outside file's: unknown, even though the repository has its own ds.json
    "cp-then-use": (
        {
            "outside/ds.json": SECRET_JSON,
            "repo/ds.json": '{"train_micro_batch_size_per_gpu": 1}\n',
            "repo/launch.sh": "cp {outside}/ds.json ds.json\n" + DS.format(path="ds.json") + "\n",
        },
        {},
        True,
    ),
    "cat-then-use": (
        {
            "outside/ds.json": SECRET_JSON,
            "repo/launch.sh": "cat ../outside/ds.json > ds.json\n" + DS.format(path="ds.json") + "\n",
        },
        {},
        True,
    ),
    "sed-template": (
        {
            "outside/ds.json": SECRET_JSON,
            "repo/launch.sh": "sed 's/STAGE/1/' ../outside/ds.json > ds.json\n" + DS.format(path="ds.json") + "\n",
        },
        {},
        True,
    ),
    "hostfile": (
        {
            "outside/hostfile": "{secret} slots=8\nw2 slots=8\n",
            "repo/launch.sh": "deepspeed --hostfile {outside}/hostfile " + TRAINER + "\n",
        },
        {},
        True,
    ),
    "hostfile-etc-passwd": (
        {"outside/x": "", "repo/launch.sh": "deepspeed --hostfile /etc/passwd " + TRAINER + "\n"},
        {},
        True,
    ),
    "accelerate-config": (
        {
            "outside/acc.yaml": "num_processes: 16  # {secret}\nnum_machines: 2  # {secret}\n",
            "repo/launch.sh": "accelerate launch --config_file ../outside/acc.yaml train.py --{secret}\n".replace(
                "--{secret}", ""
            ),
        },
        {},
        True,
    ),
    "bash-child": (
        {
            "outside/child.sh": "torchrun --nproc_per_node 8 " + TRAINER + " --{secret}-flag 1\n",
            "repo/launch.sh": "bash ../outside/child.sh\n",
        },
        {},
        True,
    ),
    "exec-child": (
        {
            "outside/child.sh": "torchrun --nproc_per_node 8 " + TRAINER + " --{secret}-flag 1\n",
            "repo/launch.sh": "../outside/child.sh\n",
        },
        {},
        True,
    ),
    "sbatch-child": (
        {
            "outside/job.sh": "#!/bin/bash\n#SBATCH --nodes=2 --{secret}\n"
            "srun torchrun --nproc_per_node 8 " + TRAINER + " --{secret}-flag 1\n",
            "repo/launch.sh": "sbatch ../outside/job.sh\n",
        },
        {},
        True,
    ),
}


def _assert_confined(outputs: dict[str, str], opened: list[str], outside) -> None:
    for fmt, text in outputs.items():
        assert SECRET not in text, f"{fmt} output shows content of a file outside the root:\n{text}"
        assert "root:x:0:0" not in text, f"{fmt} output shows /etc/passwd"
    assert not opened_under(opened, outside), opened_under(opened, outside)
    assert "/etc/passwd" not in opened


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_file_outside_the_root_is_never_read_nor_shown(tmp_path, monkeypatch, name):
    files, links, noted = CASES[name]
    repo, outside = make_tree(tmp_path, files, links)
    monkeypatch.chdir(repo)
    with recording_opens() as opened, time_limit(60):
        outputs = all_formats(["launch.sh"], summary=tmp_path / "summary.md")
    _assert_confined(outputs, opened, outside)
    if noted:
        messages = [d["message"] for f in json.loads(outputs["json"])["files"] for d in f["diagnostics"]]
        assert any(OUTSIDE_NOTE in m for m in messages), messages


def test_the_working_directory_does_not_widen_the_root(tmp_path, monkeypatch):
    """Run from the folder above the repository: the root is still the checked file's work tree."""
    files, links, _ = CASES["source-relative"]
    repo, outside = make_tree(tmp_path, files, links)
    monkeypatch.chdir(tmp_path)
    with recording_opens() as opened:
        outputs = all_formats(["repo/launch.sh"])
    _assert_confined(outputs, opened, outside)


def test_root_option_and_read_outside_widen_it(tmp_path, monkeypatch):
    files, links, _ = CASES["source-relative"]
    repo, outside = make_tree(tmp_path, files, links)
    monkeypatch.chdir(repo)
    from hostile_helpers import plint

    wide = plint(["check", "--format", "json", "--root", str(tmp_path), "launch.sh"])
    assert SECRET in wide.output  # the user trusts the folder above: the sourced value is read
    (repo / ".plint.toml").write_text(f'read-outside = ["{outside}"]\n')
    trusted = plint(["check", "--format", "json", "launch.sh"])
    assert SECRET in trusted.output
    (repo / ".plint.toml").write_text('read-outside = ["../elsewhere"]\n')
    narrow = plint(["check", "--format", "json", "launch.sh"])
    assert SECRET not in narrow.output


def test_root_in_the_config_is_validated(tmp_path, monkeypatch):
    repo, _ = make_tree(tmp_path, {"repo/launch.sh": "echo hi\n"})
    monkeypatch.chdir(repo)
    from hostile_helpers import plint

    (repo / ".plint.toml").write_text('read-outside = "/x"\n')
    bad = plint(["check", "launch.sh"])
    assert bad.exit_code == 2 and "read-outside" in bad.output
    (repo / ".plint.toml").write_text("root = 3\n")
    bad = plint(["check", "launch.sh"])
    assert bad.exit_code == 2 and "root" in bad.output


def test_a_path_named_on_the_command_line_is_checked_even_outside_the_root(tmp_path, monkeypatch):
    """Like ruff, plint checks what it is told to check; what that file names stays confined."""
    repo, outside = make_tree(
        tmp_path, {"outside/launch.sh": f"source ./secret.sh\n{TP}\n", "outside/secret.sh": SECRET_SH}
    )
    monkeypatch.chdir(repo)
    from hostile_helpers import plint

    result = plint(["check", "--format", "json", "--root", str(repo), str(outside / "launch.sh")])
    assert result.exit_code in (0, 1)
    assert '"torchrun"' in result.output  # the named file was read: its launch is in the layout
    assert SECRET not in result.output  # the file it sources was not


def test_root_is_recorded_in_the_reading(tmp_path):
    from plint.checking.check import check_paths

    repo, _ = make_tree(tmp_path, {"repo/sub/launch.sh": "echo hi\n"})
    (result,) = check_paths([repo / "sub" / "launch.sh"])
    assert result.reading.root.places == (os.path.realpath(repo),)


@pytest.mark.parametrize("named", [["evil.json"], ["."], ["evil.sh"]])
def test_a_named_symlink_leading_outside_is_not_read(tmp_path, monkeypatch, named):
    """A pull request can add `evil.json -> /outside/...` to the files CI names: not followed."""
    repo, outside = make_tree(
        tmp_path,
        {"outside/ds.json": SECRET_JSON, "outside/secret.sh": SECRET_SH},
        {"repo/evil.json": "{outside}/ds.json", "repo/evil.sh": "{outside}/secret.sh"},
    )
    monkeypatch.chdir(repo)
    with recording_opens() as opened:
        outputs = all_formats(named)
    _assert_confined(outputs, opened, outside)
    messages = [d["message"] for f in json.loads(outputs["json"])["files"] for d in f["diagnostics"]]
    assert any(OUTSIDE_NOTE in m for m in messages), messages
