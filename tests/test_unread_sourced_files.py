"""A file a launch script sources (`source x.sh`, `. x.sh`) that plint does not read says why, at the word
naming it, as a named config does (plint.reading.loading): missing, too large, not a regular file, not
permitted, binary or not UTF-8, outside the checked tree (with how to widen the root). Each fails before
but the two outside-the-root cases, which pin the message the root already gave; a GPT-NeoX config outside
the root now carries the same hint (fails before)."""

from __future__ import annotations

import os

import pytest

from plint.checking.check import check_paths
from plint.root import MAX_FILE_BYTES, WIDEN_HINT
from test_unread_named_files import BIG_JSON, DS_LAUNCH, NEOX_LAUNCH, PADDING, _column, _findings, _outside, _repo

TRAINER = (
    "pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
    "--max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 8"
)
LAUNCH = f"source ./env.sh\ntorchrun --nproc_per_node 8 {TRAINER} --tensor-model-parallel-size $TP\n"
UNKNOWN = "values it sets are unknown"


def _sourced(tmp_path, write) -> tuple[str, int | None, int | None, str]:
    """The one PL001/PL002 finding about the sourced ./env.sh, once `write(path)` made it."""
    repo = _repo(tmp_path, LAUNCH)
    write(repo / "env.sh")
    found = [f for f in _findings(repo, "") if "./env.sh" in f[3]]
    assert len(found) == 1, found
    return found[0]


def _at_the_name(code: str, message: str) -> tuple[str, int, int, str]:
    return (code, 1, _column(LAUNCH, "./env.sh"), message)


def test_a_missing_sourced_file_is_said_to_be_missing(tmp_path):
    assert _sourced(tmp_path, lambda path: None) == _at_the_name(
        "PL002", f"cannot read sourced file ./env.sh: no such file beside the script that sources it; {UNKNOWN}"
    )


def test_a_sourced_file_too_large_says_its_size_and_the_limit(tmp_path):
    found = _sourced(tmp_path, lambda path: path.write_text(f"# {PADDING}\nTP=2\n"))
    size = len(PADDING) + len("# \nTP=2\n")
    assert found == _at_the_name(
        "PL002",
        f"sourced file ./env.sh: too large to read ({size} bytes, over plint's limit of {MAX_FILE_BYTES} bytes); "
        f"{UNKNOWN}",
    )


@pytest.mark.parametrize(("make", "what"), [(os.mkdir, "a directory"), (os.mkfifo, "a FIFO")])
def test_a_sourced_file_that_is_not_a_regular_file_says_what_it_is(tmp_path, make, what):
    found = _sourced(tmp_path, make)
    assert found == _at_the_name("PL002", f"sourced file ./env.sh: not a regular file ({what}); {UNKNOWN}")


def test_a_binary_sourced_file_is_a_file_that_cannot_be_read(tmp_path):
    # its content is what is wrong: PL001, as the file checked alone gets (before: parsed as shell, silent)
    found = _sourced(tmp_path, lambda path: path.write_bytes(b"TP=2\n\x00\x01\x02\n"))
    assert found == _at_the_name("PL001", f"sourced file ./env.sh: binary (contains NUL bytes); {UNKNOWN}")


def test_a_sourced_file_not_utf8_is_a_file_that_cannot_be_read(tmp_path):
    code, line, col, message = _sourced(tmp_path, lambda path: path.write_bytes(b"# caf\xe9\nTP=2\n"))
    assert (code, line, col) == _at_the_name("PL001", "")[:3]
    assert message.startswith("sourced file ./env.sh: not UTF-8 text (invalid continuation byte at byte 5)")


def test_a_sourced_file_not_permitted_says_so(tmp_path, monkeypatch):
    """chmod 000 does not stop root (the suite may run as root): refuse the open itself instead."""
    import plint.root

    real_open = os.open
    locked = os.path.realpath(tmp_path / "repo" / "env.sh")

    def no_permission(path, *args, **kwargs):
        if os.fspath(path) == locked:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(plint.root.os, "open", no_permission)
    found = _sourced(tmp_path, lambda path: path.write_text("TP=2\n"))
    assert found == _at_the_name("PL002", f"sourced file ./env.sh: cannot be read (Permission denied); {UNKNOWN}")


def _outside_file(path):
    target = _outside(path) / "env.sh"
    target.write_text("TP=3\n")
    return target


OUTSIDE = f"sourced file ./env.sh: outside the checked tree: not read; {UNKNOWN} ({WIDEN_HINT})"


def test_a_sourced_symlink_leading_outside_the_root_is_not_read_and_says_how_to_widen(tmp_path):
    assert _sourced(tmp_path, lambda path: path.symlink_to(_outside_file(path))) == _at_the_name("PL002", OUTSIDE)


def test_a_sourced_file_outside_the_root_is_not_read_and_says_how_to_widen(tmp_path):
    launch = "source ../outside/env.sh\n" + LAUNCH.split("\n", 1)[1]
    repo = _repo(tmp_path, launch)
    _outside_file(repo / "env.sh")
    (result,) = check_paths([repo / "launch.sh"])
    found = [(d.code, d.line, d.col, d.message) for d in result.diagnostics if "env.sh" in d.message]
    assert found[0] == (
        "PL002",
        1,
        _column(launch, "../outside/env.sh"),
        OUTSIDE.replace("./env.sh", "../outside/env.sh"),
    )
    tp = result.layouts[0].fields["parallel.tp"]
    assert not tp.known and tp.value != 3  # nothing of the file outside is read


def test_a_script_run_that_is_too_large_says_why(tmp_path):
    # `bash FILE` reads its file through the same loading: the commands it runs are unknown, and why
    launch = "bash ./train.sh\n"
    repo = _repo(tmp_path, launch)
    (repo / "train.sh").write_text(f"# {PADDING}\ntorchrun --nproc_per_node 8 {TRAINER}\n")
    size = os.stat(repo / "train.sh").st_size
    assert _findings(repo, "script ./train.sh") == [
        (
            "PL002",
            1,
            _column(launch, "./train.sh"),
            f"script ./train.sh (bash FILE): too large to read ({size} bytes, over plint's limit of "
            f"{MAX_FILE_BYTES} bytes); the commands it runs are unknown",
        )
    ]


@pytest.mark.parametrize("how", ["symlink", "relative"])
def test_a_neox_config_outside_the_root_says_how_to_widen(tmp_path, how):
    launch = NEOX_LAUNCH if how == "symlink" else NEOX_LAUNCH.replace("-d configs big.yml", "../outside/big.yml")
    repo = _repo(tmp_path, launch)
    target = tmp_path / "outside" / "big.yml"
    target.write_text("train_micro_batch_size_per_gpu: 1\n")
    name = "configs/big.yml" if how == "symlink" else "../outside/big.yml"
    if how == "symlink":
        (repo / "configs").mkdir()
        (repo / "configs" / "big.yml").symlink_to(target)
    found = _findings(repo, f"the GPT-NeoX config {name}")
    assert found[0] == (
        "PL002",
        1,
        _column(launch, name.rsplit("/", 1)[-1] if how == "symlink" else name),
        f"the GPT-NeoX config {name}: outside the checked tree: not read; its keys are unknown ({WIDEN_HINT})",
    )


def test_a_config_copied_from_a_file_too_large_says_why_without_widening_the_root(tmp_path):
    # `cat` reads its file through the same loading: the copy's keys are unknown because of plint's limit
    # (before: said to be neither in the repository nor written by the script, which writes it)
    launch = "cat big.json > ds.json\n" + DS_LAUNCH.replace("ds_config.json", "ds.json")
    repo = _repo(tmp_path, launch)
    (repo / "big.json").write_text(BIG_JSON)
    size = os.stat(repo / "big.json").st_size
    (code, line, _, message), *_ = _findings(repo, "the DeepSpeed config ds.json")
    assert (code, line) == ("PL002", 2)
    assert message == (
        f"the DeepSpeed config ds.json: written from big.json, too large to read ({size} bytes, over plint's "
        f"limit of {MAX_FILE_BYTES} bytes); its keys are unknown"
    )
