"""A file a launch names that is there but that plint does not read (over its 4 MiB limit, not a regular
file, outside the checked tree, binary) is said to be so, at the word naming it: not reported as missing,
which sends the user looking for a file that is there (each fails before but the symlink cases and the
missing ones, which pin today's messages)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plint.checking.check import check_paths
from plint.root import MAX_FILE_BYTES

TRAINER = (
    "pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
    "--max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 8"
)
DS_LAUNCH = f"deepspeed --num_gpus 8 {TRAINER} --deepspeed --deepspeed_config ds_config.json\n"
NEOX_LAUNCH = "python ./deepy.py train.py -d configs big.yml\n"
PADDING = "x" * (MAX_FILE_BYTES + 1)
BIG_JSON = '{"train_micro_batch_size_per_gpu": 1, "padding": "' + PADDING + '"}\n'
BIG_YAML = f"# {PADDING}\ntrain_micro_batch_size_per_gpu: 1\n"
MISSING_DS = (
    "the DeepSpeed config ds_config.json is neither in the repository (beside the script or in a folder above "
    "it) nor written by the script: its keys are unknown"
)
MISSING_NEOX = (
    "the GPT-NeoX config configs/big.yml is not in the repository (beside the script or in a folder above it): "
    "its keys are unknown (deepy.py stops with FileNotFoundError if nothing writes it first)"
)


def _repo(tmp_path: Path, launch: str) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (repo / "launch.sh").write_text(launch)
    return repo


def _findings(repo: Path, about: str) -> list[tuple[str, int | None, int | None, str]]:
    """(code, line, column, message) of the PL001/PL002 findings that start by naming `about`."""
    (result,) = check_paths([repo / "launch.sh"])
    return [
        (d.code, d.line, d.col, d.message)
        for d in result.diagnostics
        if d.code in ("PL001", "PL002") and d.message.startswith(about)
    ]


def _column(launch: str, word: str) -> int:
    return launch.index(word) + 1


def _make(kind: str, path: Path, content: str) -> None:
    if kind == "too-large":
        path.write_text(content)
    elif kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink-outside":
        target = _outside(path) / path.name  # the folder beside the repository: outside the checked tree
        target.write_text(content[:40] + "\n")
        path.symlink_to(target)


def _outside(path: Path) -> Path:
    folder = path.parent
    while not (folder / ".git").exists():
        folder = folder.parent
    return folder.parent / "outside"


REASONS = {
    "too-large": "too large to read ({size} bytes, over plint's limit of " + f"{MAX_FILE_BYTES} bytes)",
    "directory": "not a regular file (a directory)",
    "fifo": "not a regular file (a FIFO)",
    "symlink-outside": "outside the checked tree: not read",
}


def _said_at_the_name(repo: Path, kind: str, config: Path, what: str, launch: str, word: str) -> str:
    """The finding about the config `what`, checked to be PL002 at `word` of the launch and to give the reason
    of `kind`; its message."""
    found = _findings(repo, what)
    assert found, f"{what} is not reported"
    code, line, col, message = found[0]
    assert (code, line, col) == ("PL002", 1, _column(launch, word)), found
    reason = REASONS[kind].format(size=os.stat(config).st_size if kind == "too-large" else 0)
    assert message.startswith(f"{what}: {reason}; its keys are unknown"), message
    return message


@pytest.mark.parametrize("kind", list(REASONS))
def test_a_deepspeed_config_that_is_there_but_not_read_says_why(tmp_path, kind):
    repo = _repo(tmp_path, DS_LAUNCH)
    _make(kind, repo / "ds_config.json", BIG_JSON)
    what = "the DeepSpeed config ds_config.json"
    message = _said_at_the_name(repo, kind, repo / "ds_config.json", what, DS_LAUNCH, "ds_config.json")
    assert "neither in the repository" not in message


@pytest.mark.parametrize("kind", list(REASONS))
def test_a_neox_config_that_is_there_but_not_read_says_why(tmp_path, kind):
    repo = _repo(tmp_path, NEOX_LAUNCH)
    (repo / "configs").mkdir()
    _make(kind, repo / "configs" / "big.yml", BIG_YAML)
    what = "the GPT-NeoX config configs/big.yml"
    message = _said_at_the_name(repo, kind, repo / "configs" / "big.yml", what, NEOX_LAUNCH, "big.yml")
    assert "not in the repository" not in message


def test_a_missing_deepspeed_config_is_still_said_to_be_missing(tmp_path):
    repo = _repo(tmp_path, DS_LAUNCH)
    found = _findings(repo, "the DeepSpeed config ds_config.json")
    assert found[0] == ("PL002", 1, _column(DS_LAUNCH, "ds_config.json"), MISSING_DS)


def test_a_missing_neox_config_is_still_said_to_be_missing(tmp_path):
    repo = _repo(tmp_path, NEOX_LAUNCH)
    found = _findings(repo, "the GPT-NeoX config configs/big.yml")
    assert found == [("PL002", 1, _column(NEOX_LAUNCH, "big.yml"), MISSING_NEOX)]


def test_a_binary_deepspeed_config_is_a_file_that_cannot_be_read(tmp_path):
    # its content is what is wrong, not plint's choice: the PL001 it gets when checked alone, as broken JSON
    repo = _repo(tmp_path, DS_LAUNCH)
    (repo / "ds_config.json").write_bytes(b'{"train_micro_batch_size_per_gpu": \x00}\n')
    found = _findings(repo, "the DeepSpeed config ds_config.json")
    assert found[0] == (
        "PL001",
        1,
        _column(DS_LAUNCH, "ds_config.json"),
        "the DeepSpeed config ds_config.json: binary (contains NUL bytes); its keys are unknown",
    )


def test_a_deepspeed_config_not_utf8_is_a_file_that_cannot_be_read(tmp_path):
    repo = _repo(tmp_path, DS_LAUNCH)
    (repo / "ds_config.json").write_bytes(b'{"train_micro_batch_size_per_gpu": 1, "name": "\xe9"}\n')
    ((code, _, _, message),) = _findings(repo, "the DeepSpeed config ds_config.json")
    assert code == "PL001"
    assert message.startswith("the DeepSpeed config ds_config.json: not UTF-8 text ("), message


def test_an_accelerate_config_too_large_is_said_once_at_its_name(tmp_path):
    # read through the same lookup: before, nothing said the config named was not read
    launch = "accelerate launch --config_file acc.yaml train.py\n"
    repo = _repo(tmp_path, launch)
    (repo / "acc.yaml").write_text(f"# {PADDING}\nnum_processes: 8\n")
    size = os.stat(repo / "acc.yaml").st_size
    (result,) = check_paths([repo / "launch.sh"])
    said = [(d.code, d.line, d.col, d.message) for d in result.diagnostics if "acc.yaml" in d.message]
    assert said == [
        (
            "PL002",
            1,
            _column(launch, "acc.yaml"),
            f"the accelerate config acc.yaml: too large to read ({size} bytes, over plint's limit of "
            f"{MAX_FILE_BYTES} bytes); values from it are unknown",
        )
    ]


def test_a_hostfile_too_large_is_not_said_to_be_missing(tmp_path):
    launch = f"deepspeed --hostfile hosts {TRAINER}\n"
    repo = _repo(tmp_path, launch)
    (repo / "hosts").write_text(f"# {PADDING}\nnode1 slots=8\n")
    (result,) = check_paths([repo / "launch.sh"])
    messages = [d.message for d in result.diagnostics if d.code == "PL002" and "the hostfile hosts" in d.message]
    assert messages, [d.message for d in result.diagnostics]
    assert all("neither in the repository" not in m for m in messages), messages
    assert all("the hostfile hosts (too large to read (" in m for m in messages), messages


def test_a_neox_vocab_file_too_large_is_not_said_to_be_outside_the_tree(tmp_path):
    # an HF tokenizer.json can pass 4 MiB: its vocabulary is unknown because of plint's limit, not its place
    repo = _repo(tmp_path, NEOX_LAUNCH)
    (repo / "configs").mkdir()
    (repo / "configs" / "big.yml").write_text(
        'tokenizer_type: "HFTokenizer"\nvocab_file: "data/tokenizer.json"\nmodel_parallel_size: 1\n'
    )
    (repo / "data").mkdir()
    (repo / "data" / "tokenizer.json").write_text(BIG_JSON)
    size = os.stat(repo / "data" / "tokenizer.json").st_size
    (result,) = check_paths([repo / "launch.sh"])
    notes = [d.message for d in result.diagnostics if "data/tokenizer.json" in d.message]
    assert any(
        f"data/tokenizer.json is not read (too large to read ({size} bytes, over plint's limit of {MAX_FILE_BYTES} "
        "bytes))" in m
        for m in notes
    ), notes
    assert all("not in the checked tree" not in m for m in notes), notes
