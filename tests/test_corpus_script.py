"""The real-file corpus scorer (benchmarks/corpus.py) on a tiny synthetic mirror: no network, no corpus."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from tests.fixture_paths import FIXTURES, ROOT


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


corpus = _load("corpus")

LABELS = """\
repo: acme/demo
commit: 0123456789abcdef0123456789abcdef01234567
files:
  - path: scripts/launch.sh
    launches: true
    fields:
      launcher: torchrun
      parallel.tp: 2
      parallel.pp: 1
      batch.global: 128
      precision: bf16
      batch.micro: null
      parallel.dp: 8
      model.num_layers: 40
  - path: tools/prep.sh
    launches: false
"""

PREP = """\
#!/bin/bash
# Tokenise the corpus once before training.
python tools/preprocess_data.py --input /data/raw.jsonl --output-prefix /data/books --workers 8
"""


@pytest.fixture()
def mirror(tmp_path: Path) -> tuple[Path, Path]:
    """A mirror holding one of our fixtures and a preprocessing script, with a label file for both."""
    repo = tmp_path / "mirror" / "acme+demo" / "demo"  # a clone's folder name, as corpus_mirror.py extracts it
    (repo / "scripts").mkdir(parents=True)
    (repo / "tools").mkdir()
    shutil.copy(FIXTURES / "branches-known-unknown" / "launch.sh", repo / "scripts" / "launch.sh")
    (repo / "tools" / "prep.sh").write_text(PREP)
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "acme+demo.yaml").write_text(LABELS)
    return tmp_path / "mirror", labels


def test_scores_a_synthetic_mirror(mirror: tuple[Path, Path]) -> None:
    mirror_dir, labels_dir = mirror
    scores = corpus.score_corpus(corpus.load_labels(labels_dir), mirror_dir)
    launch, prep = scores
    # The fixture sets TP=2, GLOBAL_BATCH=128, --bf16 and 32 layers on 8 GPUs; micro depends on $1.
    assert (launch.right, launch.total) == (6, 8)
    assert launch.mismatches == [
        "parallel.dp: label 8, plint 4 (origin derived)",
        "model.num_layers: label 40, plint 32 (origin literal)",
    ]
    assert launch.crash is None and not launch.silent and launch.errors == []
    assert (prep.right, prep.total, prep.mismatches) == (1, 1, [])
    text = corpus.render(scores)
    assert "fields right: 7/9 (77.8%)" in text
    assert "tracebacks/timeouts/missing: 0" in text


def test_missing_file_counts_wrong(mirror: tuple[Path, Path]) -> None:
    mirror_dir, labels_dir = mirror
    (mirror_dir / "acme+demo" / "demo" / "tools" / "prep.sh").unlink()
    prep = corpus.score_corpus(corpus.load_labels(labels_dir), mirror_dir)[1]
    assert (prep.right, prep.total) == (0, 1)
    assert prep.crash is not None and prep.crash.startswith("missing from the mirror")


def _label(**fields) -> "corpus.FileLabel":
    return corpus.FileLabel(repo="acme/demo", path="run.sh", launches=True, fields=fields)


def _run(layout: dict | None, *diagnostics: dict, rc: int = 0) -> "corpus.PlintRun":
    return corpus.PlintRun(rc, {"files": [{"path": "run.sh", "layout": layout, "diagnostics": list(diagnostics)}]})


def test_null_label_is_right_only_for_null() -> None:
    layout = {"parallel": {"tp": 1, "cp": None}, "provenance": {"parallel.tp": {"origin": "default"}}}
    score = corpus.score_file(_label(**{"parallel.tp": None, "parallel.cp": None}), _run(layout))
    assert (score.right, score.total) == (1, 2)
    assert score.mismatches == ["parallel.tp: label null, plint 1 (origin default)"]


def test_silent_and_explained_empty_readings() -> None:
    silent = corpus.score_file(_label(launcher="torchrun"), _run(None))
    assert silent.silent and (silent.right, silent.total) == (0, 1)
    explained = corpus.score_file(
        _label(launcher="torchrun"), _run(None, {"code": "PL005", "severity": "info", "message": "m"})
    )
    assert not explained.silent and (explained.right, explained.total) == (0, 1)


def test_crash_and_error_findings() -> None:
    crash = corpus.score_file(_label(launcher="torchrun"), corpus.PlintRun(2, None, "Traceback ..."))
    assert crash.crash == "exit 2, output is not JSON" and crash.right == 0
    timeout = corpus.score_file(_label(launcher="torchrun"), corpus.PlintRun(None, None))
    assert timeout.crash.startswith("timeout")
    error = {"code": "PL101", "severity": "error", "path": "run.sh", "line": 3, "message": "tp does not divide"}
    scored = corpus.score_file(_label(launcher="torchrun"), _run({"launcher": "torchrun"}, error, rc=1))
    assert scored.errors == ["PL101 run.sh:3 tp does not divide"] and scored.right == 1


def test_unknown_label_field_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("repo: a/b\ncommit: c\nfiles:\n  - path: f\n    fields: {parallel.tpp: 2}\n")
    with pytest.raises(ValueError, match="parallel.tpp"):
        corpus.load_labels(tmp_path)


def test_a_launch_read_in_a_non_launching_file_is_wrong() -> None:
    label = corpus.FileLabel(repo="acme/demo", path="merge.sh", launches=False)
    score = corpus.score_file(label, _run({"launcher": None, "entrypoint": "tools/merge.py"}))
    assert (score.right, score.total) == (0, 1)
    assert score.mismatches == [
        'launches: label false, plint reads a launch (launcher null, entrypoint "tools/merge.py")'
    ]
    assert corpus.score_file(label, _run(None)).right == 1


def test_scores_are_also_given_per_family() -> None:
    scores = [
        corpus.FileScore("a/b", "x.sh", right=3, total=4, family="rlhf"),
        corpus.FileScore("a/b", "y.sh", right=2, total=2, family="rlhf"),
        corpus.FileScore("c/d", "z.json", right=0, total=5, family="deepspeed-json"),
    ]
    text = corpus.render(scores)
    assert "    rlhf: 2 files, 5/6 (83.3%)" in text and "    deepspeed-json: 1 files, 0/5 (0.0%)" in text
    assert "per family" not in corpus.render([corpus.FileScore("a/b", "x.sh", right=1, total=1)])


def test_a_label_names_its_family(tmp_path: Path) -> None:
    (tmp_path / "a+b.yaml").write_text(
        "repo: a/b\ncommit: x\nfiles:\n  - path: x.sh\n    family: moe\n    fields: {launcher: torchrun}\n"
    )
    assert [label.family for label in corpus.load_labels(tmp_path)] == ["moe"]


def _git(work: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(work), *args], capture_output=True, text=True, check=True).stdout


def _committed(work: Path) -> str:
    """Commit everything in `work` (a new repository); its commit id."""
    _git(work, "init", "-q")
    _git(work, "add", ".")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    return _git(work, "rev-parse", "HEAD").strip()


def _mirrored(tmp_path: Path, work: Path, commit: str) -> str:
    """Move `work`'s git directory where fetched snapshots lie and extract it; corpus_mirror's status."""
    mirror_tool = _load("corpus_mirror")
    snapshots = tmp_path / "snapshots" / "a+b"
    snapshots.mkdir(parents=True)
    (work / ".git").rename(snapshots / "repo")
    (tmp_path / "mirror").mkdir()  # as main() makes it
    return mirror_tool.extract(mirror_tool.Wanted("a/b", commit), tmp_path / "snapshots", tmp_path / "mirror")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_mirror_extracts_a_snapshot_that_lacks_a_large_file(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "launch.sh").write_text("torchrun train.py\n")
    (work / "big.bin").write_text("pretend this is 5 MiB\n")
    commit = _committed(work)
    big = _git(work, "rev-parse", "HEAD:big.bin").strip()
    (work / ".git" / "objects" / big[:2] / big[2:]).unlink()  # what a snapshot leaves out
    assert _mirrored(tmp_path, work, commit) == "extracted"
    assert (tmp_path / "mirror" / "a+b" / "b" / "launch.sh").read_text() == "torchrun train.py\n"
    assert not (tmp_path / "mirror" / "a+b" / "b" / "big.bin").exists()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_mirror_leaves_out_a_link_out_of_the_tree(tmp_path: Path) -> None:
    """A snapshot holding a link to an absolute path (`.context -> /home/someone/...`) is extracted without it:
    tarfile's data filter would refuse the whole tree."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "launch.sh").write_text("torchrun train.py\n")
    (work / "outside").symlink_to("/etc/hostname")
    (work / "up").symlink_to("../../elsewhere")
    assert _mirrored(tmp_path, work, _committed(work)) == "extracted"
    tree = tmp_path / "mirror" / "a+b" / "b"
    assert (tree / "launch.sh").read_text() == "torchrun train.py\n"
    assert not (tree / "outside").is_symlink() and not (tree / "up").is_symlink()
