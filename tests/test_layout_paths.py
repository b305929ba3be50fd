"""The typed hand-off from reading to rules (issue 28): the layout's field paths are a Literal type
(plint.layout.FieldPath) that mypy checks wherever a path is passed, and what a launch says beyond them is a
record (plint.layout.LaunchExtras). These tests keep the types and what the readers write from drifting apart:
a path a reader sets that the Literal lacks, or a name in the Literal no reader writes, would leave a rule
reading None and saying nothing."""

import ast
import json
import re
from pathlib import Path
from typing import get_args

import pytest

from fixture_paths import ROOT
from plint.cost.layout_estimate import layout_estimate
from plint.layout import (
    AXIS_PATHS,
    CONTRACT_FIELDS,
    ContractPath,
    ExtraPath,
    FactKey,
    FieldPath,
    LaunchExtras,
    LayoutKey,
)
from plint.reading.read import read_path
from plint.rules.common import gpt, torchrun
from test_provenance_invariants import MAINS, _layouts

FIELD_PATHS = set(get_args(FieldPath))


def _catalog_shape_keys() -> set[str]:
    """The model.* facts plint.reading.sources.model_shape writes for a catalog model: its shape's keys."""
    models = json.loads((ROOT / "schemas" / "model_catalog.json").read_text(encoding="utf-8"))["models"]
    return {f"model.{key}" for model in models for key in model["shape"]} | {"model.make_vocab_size_divisible_by"}


def _reader_literals() -> set[str]:
    """Every string literal in the readers' source (lint/reading): the keys they write facts and fields under."""
    found: set[str] = set()
    for path in (ROOT / "lint" / "reading").rglob("*.py"):
        found |= set(re.findall(r'"([a-z_][a-z0-9_.]*)"', path.read_text(encoding="utf-8")))
    return found


def test_contract_paths_are_the_json_fields_in_order():
    assert get_args(ContractPath) == CONTRACT_FIELDS
    assert not set(get_args(ContractPath)) & set(get_args(ExtraPath))
    assert FIELD_PATHS == set(get_args(ContractPath)) | set(get_args(ExtraPath))


def test_axis_paths_are_field_paths():
    assert all(path == f"parallel.{axis}" and path in FIELD_PATHS for axis, path in AXIS_PATHS.items())


def test_fact_keys_are_not_field_paths():
    """A name is either a field (Layout.get finds it) or a trainer fact only (LaunchExtras.facts): a fact key
    passed to Layout.get would read None, which is why the two Literals are apart."""
    assert not set(get_args(FactKey)) & FIELD_PATHS


def test_every_catalog_shape_key_is_a_field_path():
    assert _catalog_shape_keys() <= FIELD_PATHS, sorted(_catalog_shape_keys() - FIELD_PATHS)


def test_every_extra_path_and_fact_key_is_written_by_a_reader():
    written = _reader_literals() | _catalog_shape_keys()
    unwritten = sorted((set(get_args(ExtraPath)) | set(get_args(FactKey))) - written)
    assert not unwritten, f"no reader writes these any more: {unwritten}"


# Modules whose `layout` is the JSON layout (a nested dict read with .get("parallel")), not a Layout
JSON_LAYOUT_READERS = {"lint/planning/generate.py"}


def _path_arguments() -> list[tuple[str, str, set[str]]]:
    """(where, literal, what it must be) for every string literal passed as a path: to a Layout's get, value or
    set (a receiver named ...layout), to the rules' value/known/span (first argument ctx), or to .fact()."""
    found = []
    for path in sorted([*(ROOT / "lint").rglob("*.py"), *(ROOT / "rules").rglob("*.py")]):
        name = str(path.relative_to(ROOT))
        if name in JSON_LAYOUT_READERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func, args = node.func, node.args
            if isinstance(func, ast.Attribute) and func.attr in ("get", "value", "set"):
                allowed = FIELD_PATHS if ast.unparse(func.value).endswith("layout") else None
            elif isinstance(func, ast.Attribute) and func.attr == "fact":
                allowed = LAYOUT_KEYS
            elif isinstance(func, ast.Name) and func.id in ("value", "known", "span"):
                ctx = args and isinstance(args[0], ast.Name) and args[0].id in ("ctx", "rctx")
                allowed = LAYOUT_KEYS if ctx else None
            else:
                allowed = None
            if allowed is None:
                continue
            for arg in args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.append((f"{name}:{node.lineno}", arg.value, allowed))
    return found


LAYOUT_KEYS = set(get_args(LayoutKey))


def test_every_literal_path_is_a_field_path_in_untyped_code_too():
    """mypy checks the paths passed in annotated functions only (it skips an unannotated body): this walks
    every call, so a misspelt path in a function without annotations is caught as well."""
    calls = _path_arguments()
    assert len(calls) > 200  # the walk sees the layout readers
    wrong = [f"{where}: {literal!r}" for where, literal, allowed in calls if literal not in allowed]
    assert not wrong, wrong


@pytest.mark.parametrize("path", MAINS, ids=[str(p.relative_to(ROOT)) for p in MAINS])
def test_what_a_reader_hands_over_is_typed(path):
    declared = set(LaunchExtras.__record_fields__)
    for layout in _layouts(path):
        assert set(layout.fields) <= FIELD_PATHS, sorted(set(layout.fields) - FIELD_PATHS)
        assert set(vars(layout.extras)) <= declared, sorted(set(vars(layout.extras)) - declared)


def test_a_misspelt_extra_fails_loudly():
    """Layout.extras was a dict whose .get of a misspelt key gave None; the record raises instead."""
    with pytest.raises(AttributeError):
        getattr(LaunchExtras(), "trainer_arg")


def test_the_estimate_splits_the_pipeline_by_the_account_for_flags(tmp_path: Path):
    """--account-for-embedding/loss-in-pipeline-split are trainer facts, not layout fields: the estimate read
    them with layout.value (always None) and split 30 layers evenly over 4 ranks (a path mypy now rejects).
    Megatron-LM counts the embedding and the loss as a layer each: 32 / 4 = 8, so the first and last ranks
    hold 7 transformer layers (core_v0.19 get_num_layers_to_build, plint.cost.pipeline_stages)."""
    flags = "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4\n"
    flags += "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split\n--vocab-size 32000"
    launch = tmp_path / "launch.sh"
    launch.write_text(torchrun(gpt(flags, layers=30)).files["launch.sh"])
    (layout,) = read_path(launch).layouts
    estimate = layout_estimate(layout)
    assert estimate is not None
    uneven = [note for note in estimate.notes if note.startswith("uneven pipeline")]
    assert uneven and "layers per rank 7, 8, 8, 7" in uneven[0], estimate.notes
