"""`plint fix` writes only inside the root, never through a symlink, through a temporary file beside the
target that never outlives the run."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from hostile_helpers import SECRET, make_tree, opened_under, outside_snapshot, plint, recording_opens, time_limit

FIXABLE = 'ARGS="--tensor-model-paralel-size 2 --use-flash-attn"  # {secret}\n'  # PL501 has a did-you-mean fix
LAUNCH = (
    "torchrun --nproc_per_node 8 pretrain_gpt.py $ARGS --num-layers 4 --hidden-size 512 --num-attention-heads 8 "
    "--seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 8\n"
)


def _fix(args: list[str]):
    with time_limit(120):
        return plint(["fix", *args])


@pytest.mark.parametrize("unsafe", [False, True])
@pytest.mark.parametrize("how", ["relative", "absolute", "symlinked-dir"])
def test_fix_never_touches_a_sourced_file_outside_the_root(tmp_path, monkeypatch, unsafe, how):
    sourced = {
        "relative": "../outside/victim.sh",
        "absolute": "{outside}/victim.sh",
        "symlinked-dir": "conf/victim.sh",
    }[how]
    links = {"repo/conf": "{outside}"} if how == "symlinked-dir" else {}
    repo, outside = make_tree(
        tmp_path, {"outside/victim.sh": FIXABLE, "repo/launch.sh": f"source {sourced}\n" + LAUNCH}, links
    )
    before = outside_snapshot(outside)
    monkeypatch.chdir(repo)
    with recording_opens() as opened:
        result = _fix(["launch.sh"] + (["--unsafe-fixes"] if unsafe else []))
    assert result.exit_code in (0, 1), result.output
    assert SECRET not in result.output
    assert outside_snapshot(outside) == before  # same files, same bytes, same mtimes: no temp file either
    assert not opened_under(opened, outside)


def test_fix_refuses_a_named_file_that_is_a_symlink_to_outside(tmp_path, monkeypatch):
    repo, outside = make_tree(
        tmp_path, {"outside/victim.sh": FIXABLE + LAUNCH}, {"repo/launch.sh": "{outside}/victim.sh"}
    )
    before = outside_snapshot(outside)
    monkeypatch.chdir(repo)
    result = _fix(["--unsafe-fixes", "launch.sh"])
    assert outside_snapshot(outside) == before
    # it says why it fixed nothing: the file is not even read, as check does not read it (issue 30)
    assert "launch.sh: PL001 [error] cannot read file: outside the checked tree" in result.output
    assert "PLINT_SECRET" not in result.output


def test_fix_refuses_a_symlink_inside_the_root_too(tmp_path, monkeypatch):
    repo, _ = make_tree(tmp_path, {"repo/real.sh": FIXABLE + LAUNCH}, {"repo/launch.sh": "{repo}/real.sh"})
    before = (repo / "real.sh").read_bytes()
    monkeypatch.chdir(repo)
    result = _fix(["launch.sh"])
    assert (repo / "real.sh").read_bytes() == before
    assert (repo / "launch.sh").is_symlink()
    assert "symlink" in result.output


def test_fix_writes_a_file_inside_the_root(tmp_path, monkeypatch):
    """The guard lets the ordinary case through: a sourced file of the repository is fixed."""
    repo, _ = make_tree(tmp_path, {"repo/args.sh": FIXABLE, "repo/launch.sh": "source ./args.sh\n" + LAUNCH})
    monkeypatch.chdir(repo)
    _fix(["launch.sh"])
    assert "--tensor-model-parallel-size" in (repo / "args.sh").read_text()
    assert not [p for p in os.listdir(repo) if p.endswith(".plint-fix")]


def test_a_widened_root_is_written_only_where_it_is_read(tmp_path, monkeypatch):
    repo, outside = make_tree(
        tmp_path, {"outside/victim.sh": FIXABLE, "repo/launch.sh": "source ../outside/victim.sh\n" + LAUNCH}
    )
    monkeypatch.chdir(repo)
    _fix(["--root", str(tmp_path), "launch.sh"])  # the user trusts the folder above: it is fixed
    assert "--tensor-model-parallel-size" in (outside / "victim.sh").read_text()


def test_unwritable_names_files_outside_every_root(tmp_path):
    from plint.fixing.fix_writes import unwritable
    from plint.root import Root

    repo, outside = make_tree(tmp_path, {"repo/launch.sh": "x\n", "outside/victim.sh": "y\n"})
    run = SimpleNamespace(
        results=[
            SimpleNamespace(reading=SimpleNamespace(root=Root((str(repo),), frozenset({str(repo / "launch.sh")}))))
        ]
    )
    inside, out = str(repo / "launch.sh"), str(outside / "victim.sh")
    refused = unwritable(run, [repo / "launch.sh"], [inside, out])
    assert inside not in refused
    assert "outside the checked tree" in refused[out]


def test_stale_temporary_files_of_a_killed_run_are_removed(tmp_path, monkeypatch):
    repo, _ = make_tree(tmp_path, {"repo/launch.sh": LAUNCH.replace("$ARGS", "")})
    stale = repo / ".launch.sh.a1b2c3d4.plint-fix"
    stale.write_text("half a file")
    unrelated = repo / ".other.sh.a1b2c3d4.plint-fix"  # no `other.sh` here: not plint's to remove
    unrelated.write_text("keep")
    monkeypatch.chdir(repo)
    _fix(["launch.sh"])
    assert not stale.exists()
    assert unrelated.exists()


def test_the_temporary_file_is_removed_when_writing_fails(tmp_path, monkeypatch):
    from plint.fixing import fix_writes

    target = tmp_path / "launch.sh"
    target.write_text("old\n")

    def refuse(*_):
        raise OSError("disk full")

    monkeypatch.setattr(fix_writes.os, "replace", refuse)
    with pytest.raises(OSError):
        fix_writes.write_atomic(str(target), b"new\n")
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["launch.sh"]
