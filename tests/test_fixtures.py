"""Every fixture reads to its golden layout, and agrees with the hand-derived facts in expected.yaml.

Goldens are regenerated with `PLINT_UPDATE_GOLDEN=1 python -m pytest tests/test_fixtures.py`;
expected.yaml files are written by hand (reasoning as bash, the launcher and the trainer would)
and are never regenerated, so a golden that drifts from them fails here.
"""

import json
import os

import pytest
import yaml

from fixture_paths import ROOT, fixture_dirs
from plint.checking.check import check_paths
from plint.report.json_report import file_json

UPDATE = os.environ.get("PLINT_UPDATE_GOLDEN") == "1"
DIRS = fixture_dirs()


def _expected(folder):
    return yaml.safe_load((folder / "expected.yaml").read_text())


def _result(folder):
    expected = _expected(folder)
    # the repository's root named, as a git checkout would find it: an sdist or `git archive` copy has no
    # work tree, and the root would then be the current folder (notes quote paths relative to the root)
    (result,) = check_paths([folder / expected["main"]], env=expected.get("env") or {}, root=str(ROOT))
    return expected, file_json(result)


def test_there_are_enough_fixtures():
    assert len(DIRS) >= 30


@pytest.mark.parametrize("folder", DIRS, ids=[d.name for d in DIRS])
def test_golden_layout(folder):
    _, got = _result(folder)
    golden = folder / "golden.json"
    if UPDATE or not golden.exists():
        golden.write_text(json.dumps(got, indent=2, sort_keys=False) + "\n")
        if not UPDATE:
            pytest.fail(f"wrote missing golden {golden}; review and commit it")
    assert got == json.loads(golden.read_text())


@pytest.mark.parametrize("folder", DIRS, ids=[d.name for d in DIRS])
def test_output_names_no_checkout_path_and_no_internal_marker(folder):
    """What plint prints about a fixture is the same in any checkout: no absolute path of this one (a file the
    script writes under $(cd "$(dirname "$0")" && pwd) is named relative, as checked files are), and no marker
    the shell reader brackets unknown text with (a host written from $(hostname))."""
    _, got = _result(folder)
    text = json.dumps(got)
    assert str(ROOT.resolve()) not in text
    assert "\\u0000" not in text


def _lookup(layout, dotted):
    node = layout
    for part in dotted.split("."):
        node = node[part]
    return node


@pytest.mark.parametrize("folder", DIRS, ids=[d.name for d in DIRS])
def test_hand_derived_facts(folder):
    expected, got = _result(folder)
    layout = got["layout"]
    if expected.get("launcher", "absent") is None and expected.get("trainer") is None:
        assert layout is None
        return
    assert layout is not None, got["diagnostics"]
    for key in ("launcher", "scheduler", "trainer", "entrypoint", "precision"):
        if key in expected:
            assert layout[key] == expected[key], key
    for section in ("cluster", "parallel", "batch", "model", "recompute"):
        for field, value in (expected.get(section) or {}).items():
            assert layout[section][field] == value, f"{section}.{field}"
    unresolved_fields = {u.split(":", 1)[0] for u in layout["unresolved"]}
    for field in expected.get("unresolved") or []:
        assert _lookup(layout, field) is None, field
        assert field in unresolved_fields, f"{field} not listed in unresolved: {layout['unresolved']}"
    for field, (line, col) in (expected.get("provenance") or {}).items():
        prov = layout["provenance"][field]
        assert (prov["line"], prov["col"]) == (line, col), field
    for field, origin in (expected.get("origins") or {}).items():  # a reading, a default or an assumption
        assert layout["provenance"][field]["origin"] == origin, field
    for field, path in (expected.get("provenance_paths") or {}).items():
        assert layout["provenance"][field]["path"] == path, field
    if "layouts" in expected:
        assert len(got.get("layouts") or [layout]) == expected["layouts"]
    codes = sorted({d["code"] for d in got["diagnostics"]})
    for code in expected.get("diagnostics") or []:
        assert code in codes, f"{code} expected among {codes}"
    if "diagnostics" in expected and not expected["diagnostics"]:
        assert not codes, codes


def test_goldens_need_no_git(tmp_path):
    """A copy without .git (an sdist, `git archive`) reads a fixture as the checkout does when the root is
    named: the entry script's repository is placed relative to that root, not to the launch's folder."""
    import shutil

    folder = next(d for d in DIRS if d.name == "entry-mds-fork-repo")
    copy = tmp_path / "fixtures" / "launches" / folder.name
    shutil.copytree(folder, copy)
    (result,) = check_paths([copy / "launch.sh"], root=str(tmp_path))
    note = file_json(result)["layout"]["provenance"]["trainer"]["note"]
    assert "fixtures/launches/entry-mds-fork-repo/megatron/model/gpt_model.py defines GPTModelPipe" in note
