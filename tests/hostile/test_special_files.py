"""Files that are not files: FIFOs, sockets, devices, /proc, unreadable files, symlink loops, names too
long for the file system. Each is named on the command line and by a launch, in every format: a
diagnostic, never a hang or a traceback."""

from __future__ import annotations

import json
import os
import socket

import pytest

from hostile_helpers import TRAINER, all_formats, make_tree, plint, time_limit

LONG = "a" * 300  # over NAME_MAX (255 bytes): stat raises ENAMETOOLONG


def _fifo(path):
    os.mkfifo(path)


def _socket(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock  # kept open for the test's duration by the caller


def _json(output: str) -> dict:
    return json.loads(output)


def _messages(outputs) -> list[str]:
    return [d["message"] for f in _json(outputs["json"])["files"] for d in f["diagnostics"]]


def _check_everywhere(paths, extra=None):
    with time_limit(60):
        return all_formats(paths, extra)


@pytest.mark.parametrize("kind", ["fifo", "socket", "loop", "directory"])
def test_a_special_file_named_on_the_command_line(tmp_path, monkeypatch, kind):
    repo, _ = make_tree(tmp_path, {})
    target = repo / "launch.sh"
    keep = None
    if kind == "fifo":
        _fifo(target)
    elif kind == "socket":
        keep = _socket(target)
    elif kind == "loop":
        (repo / "other.sh").symlink_to(target)
        target.symlink_to(repo / "other.sh")
    else:
        target.mkdir()
    monkeypatch.chdir(repo)
    try:
        with time_limit(60):
            result = plint(["check", "--format", "json", "launch.sh"])
    finally:
        if keep is not None:
            keep.close()
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output
    if result.exit_code != 2:  # a usage error for what click cannot take as a path
        files = _json(result.output)["files"]
        assert all(d["code"] in ("PL001", "PL002") for f in files for d in f["diagnostics"]) or not files


@pytest.mark.parametrize("kind", ["fifo", "socket", "loop", "directory", "long-name", "unreadable"])
@pytest.mark.parametrize("how", ["source", "ds-config", "hostfile", "bash"])
def test_a_special_file_named_by_a_launch(tmp_path, monkeypatch, kind, how):
    name = {"long-name": LONG + ".sh"}.get(kind, "special.sh")
    launch = {
        "source": f"source ./{name}\ntorchrun --nproc_per_node 8 {TRAINER}\n",
        "ds-config": f"deepspeed --num_gpus 8 {TRAINER} --deepspeed --deepspeed_config {name}\n",
        "hostfile": f"deepspeed --hostfile {name} {TRAINER}\n",
        "bash": f"bash {name}\n",
    }[how]
    repo, _ = make_tree(tmp_path, {"repo/launch.sh": launch})
    target = repo / name
    keep = None
    if kind == "fifo":
        _fifo(target)
    elif kind == "socket":
        keep = _socket(target)
    elif kind == "loop":
        (repo / "other").symlink_to(target)
        target.symlink_to(repo / "other")
    elif kind == "directory":
        target.mkdir()
    elif kind == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads a chmod 000 file")
        target.write_text("TP=2\n")
        target.chmod(0)
    monkeypatch.chdir(repo)
    try:
        outputs = _check_everywhere(["launch.sh"])
    finally:
        if keep is not None:
            keep.close()
        if kind == "unreadable":
            target.chmod(0o600)
    assert _json(outputs["json"])["files"][0]["path"] == "launch.sh"


@pytest.mark.parametrize(
    "device", ["/dev/zero", "/dev/urandom", "/dev/null", "/proc/self/status", "/proc/self/mem", "/proc/self/fd/0"]
)
@pytest.mark.parametrize("how", ["source", "ds-config", "hostfile", "cat"])
def test_devices_and_proc_inside_a_wide_root(tmp_path, monkeypatch, device, how):
    """With --root / everything is inside the root: the file type still keeps plint from hanging on a
    device or reading /proc without end."""
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    launch = {
        "source": f"source {device}\ntorchrun --nproc_per_node 8 {TRAINER}\n",
        "ds-config": f"deepspeed --num_gpus 8 {TRAINER} --deepspeed --deepspeed_config {device}\n",
        "hostfile": f"deepspeed --hostfile {device} {TRAINER}\n",
        "cat": f"cat {device} > ds.json\ndeepspeed --num_gpus 8 {TRAINER} --deepspeed --deepspeed_config ds.json\n",
    }[how]
    repo, _ = make_tree(tmp_path, {"repo/launch.sh": launch})
    monkeypatch.chdir(repo)
    outputs = _check_everywhere(["launch.sh"], ["--root", "/"])
    assert _json(outputs["json"])["summary"]["files"] == 1


def test_devices_named_on_the_command_line(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for device in ("/dev/zero", "/dev/null", "/proc/self/status"):
        if not os.path.exists(device):
            continue
        with time_limit(60):
            result = plint(["check", "--format", "json", device])
        assert result.exit_code in (0, 1), result.output
        files = _json(result.output)["files"]
        if device.startswith("/dev"):
            assert files[0]["diagnostics"][0]["code"] == "PL001"


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "markdown"])
def test_a_name_too_long_for_the_file_system_is_a_diagnostic(tmp_path, monkeypatch, fmt):
    repo, _ = make_tree(
        tmp_path,
        {
            "repo/launch.sh": f"source ./{LONG}.sh\n"
            f"deepspeed --hostfile {LONG} {TRAINER} --deepspeed "
            f"--deepspeed_config {LONG}.json\n"
        },
    )
    monkeypatch.chdir(repo)
    with time_limit(60):
        result = plint(["check", "--format", fmt, "launch.sh"])
    assert result.exit_code in (0, 1), (result.output, result.exc_info)
    assert result.output.strip()
    named = plint(["check", "--format", fmt, f"{LONG}.sh"])
    assert named.exit_code in (0, 1, 2) and "Traceback" not in named.output, named.exc_info


def test_an_unreadable_file_simulated_for_root(tmp_path, monkeypatch):
    """chmod 000 does not stop root (the suite may run as root): refuse the open itself instead."""
    import plint.root

    repo, _ = make_tree(
        tmp_path,
        {
            "repo/launch.sh": f"source ./env.sh\ntorchrun --nproc_per_node 8 {TRAINER} "
            "--tensor-model-parallel-size $TP\n",
            "repo/env.sh": "TP=2\n",
        },
    )
    real_open = os.open
    locked = os.path.realpath(repo / "env.sh")

    def no_permission(path, *args, **kwargs):
        if os.fspath(path) == locked:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(plint.root.os, "open", no_permission)
    monkeypatch.chdir(repo)
    outputs = _check_everywhere(["launch.sh"])
    assert any("env.sh" in m for m in _messages(outputs)), _messages(outputs)


def test_a_long_name_is_named_in_the_finding(tmp_path, monkeypatch):
    repo, _ = make_tree(tmp_path, {"repo/launch.sh": f"source ./{LONG}.sh\ntorchrun --nproc_per_node 8 {TRAINER}\n"})
    monkeypatch.chdir(repo)
    outputs = _check_everywhere(["launch.sh"])
    assert any(LONG in m for m in _messages(outputs))
