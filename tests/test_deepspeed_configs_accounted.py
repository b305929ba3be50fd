"""Every DeepSpeed config a launch names is read, or a finding says why not (issue 26: in 13 of 14 held-out
DeepSpeed launches the ZeRO stage was lost without a word).

Checked on every fixture (always), and on the real-file corpora (benchmarks/corpus/labels, labels2, labels4)
when their mirrors are there (PLINT_CORPUS_MIRROR / PLINT_CORPUS_MIRROR2 / PLINT_CORPUS_MIRROR4, default
/work/corpus/mirror, mirror2, mirror4, filled by benchmarks/corpus_mirror.py); without a mirror those cases skip.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from fixture_paths import ROOT, fixture_dirs
from plint.checking.check import check_paths

sys.path.insert(0, str(ROOT / "benchmarks"))
import corpus  # noqa: E402  (benchmarks/corpus.py: the labels' loader)

EXPLAINING = ("PL001", "PL002")  # could not read it / could not know it


def unaccounted(result) -> list[str]:
    """The DeepSpeed configs the file's launches name that are neither read nor explained by a finding."""
    out = []
    for launch in result.reading.launches:
        named = launch.facts.get("deepspeed.config_path")
        if named is None or launch.ds_config is not None:
            continue
        why = launch.facts.get("deepspeed.config")
        note = why.note if why is not None and why.value is None else None
        said = note is not None and any(
            d.code in EXPLAINING and (note in d.message or d.message in note) for d in result.diagnostics
        )
        if not said:
            out.append(
                f"{result.path}: the DeepSpeed config {named.value or named.note!r} is neither read nor "
                f"explained (note: {note!r})"
            )
    return out


def _names_deepspeed_config(folder: Path, main: str) -> bool:
    return "deepspeed" in (folder / main).read_text(errors="replace").lower()


FIXTURES = [d for d in fixture_dirs()]


@pytest.mark.parametrize("folder", FIXTURES, ids=[d.name for d in FIXTURES])
def test_fixture_deepspeed_configs_are_read_or_explained(folder):
    import yaml

    main = yaml.safe_load((folder / "expected.yaml").read_text())["main"]
    if not _names_deepspeed_config(folder, main):
        pytest.skip("names no DeepSpeed config")
    (result,) = check_paths([folder / main])
    assert unaccounted(result) == []


def test_the_fixtures_exercise_both_outcomes():
    """Some fixture launches read their config and some cannot, each said: the check above is not vacuous."""
    read = explained = 0
    for folder in FIXTURES:
        import yaml

        main = yaml.safe_load((folder / "expected.yaml").read_text())["main"]
        if not _names_deepspeed_config(folder, main):
            continue
        (result,) = check_paths([folder / main])
        for launch in result.reading.launches:
            if launch.facts.get("deepspeed.config_path") is not None:
                read += launch.ds_config is not None
                explained += launch.ds_config is None
    assert read >= 10 and explained >= 3, (read, explained)


def _corpus_cases():
    cases = []
    for labels_dir, variable, default in (
        (corpus.DEFAULT_LABELS, "PLINT_CORPUS_MIRROR", "/work/corpus/mirror"),
        (corpus.HERE / "corpus" / "labels2", "PLINT_CORPUS_MIRROR2", "/work/corpus/mirror2"),
        (corpus.HERE / "corpus" / "labels4", "PLINT_CORPUS_MIRROR4", "/work/corpus/mirror4"),
    ):
        mirror = Path(os.environ.get(variable, default))
        for label in corpus.load_labels(labels_dir):
            if label.launches:
                cases.append(pytest.param(mirror, label, id=f"{label.repo}:{label.path}"))
    return cases


@pytest.mark.parametrize("mirror, label", _corpus_cases())
def test_corpus_deepspeed_configs_are_read_or_explained(mirror, label, monkeypatch):
    repo = mirror / label.folder
    if not (repo / label.path).is_file():
        pytest.skip(f"no corpus mirror at {mirror} (benchmarks/corpus_mirror.py fills it)")
    if not _names_deepspeed_config(repo, label.path):
        pytest.skip("names no DeepSpeed config")
    monkeypatch.chdir(repo)  # as corpus.py runs plint: from the repository's root
    (result,) = check_paths([Path(label.path)])
    assert unaccounted(result) == []
