"""A YAML config whose every setting is an alias bomb (a few hundred bytes that PyYAML builds as shared references to
a list of 10**9 items): every bundled fixture that reads a YAML config (accelerate, NeoX, ROLL, NeMo RL, Megatron's
--yaml-cfg) still gets its verdict in time, in every output format, without a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from hostile_helpers import all_formats, time_limit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "launches"
BOMB = "\n".join(
    ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    + [f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]" for p, n in zip("abcdefgh", "bcdefghi")]
)
KEPT = {"defaults"}  # a NeMo RL recipe's parent: kept so that the reader goes on into the chain


def _configs(fixture: Path) -> list[Path]:
    return sorted(p for p in fixture.rglob("*.y*ml") if p.name != "expected.yaml")


def _bombed(node):
    """The config with every scalar setting (not a key) replaced by a placeholder for the bomb's alias."""
    if isinstance(node, dict):
        return {k: (v if k in KEPT else _bombed(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_bombed(v) for v in node]
    return "BOMB_ALIAS"


def _bomb_text(config: Path) -> str | None:
    try:
        loaded = yaml.safe_load(config.read_text())
    except yaml.YAMLError:
        return None  # a fixture's deliberately broken YAML: nothing to put a bomb in
    if not isinstance(loaded, dict):
        return None
    body = yaml.safe_dump(_bombed(loaded), sort_keys=False).replace("BOMB_ALIAS", "*i")
    return BOMB + "\n" + "\n".join(line for line in body.splitlines() if line.split(":")[0] not in "abcdefghi") + "\n"


WITH_YAML = sorted(f.name for f in FIXTURES.iterdir() if f.is_dir() and _configs(f))


def test_the_fixtures_that_read_yaml_configs_are_found():
    assert {"accelerate-fsdp-config-file", "rl-roll-rlvr-pipeline", "rl-nemo-rl-recipe", "megatron-yaml-cfg"} <= set(
        WITH_YAML
    )


@pytest.mark.parametrize("name", WITH_YAML)
def test_every_setting_an_alias_bomb_still_gets_a_verdict(tmp_path, monkeypatch, name):
    tree = tmp_path / name
    shutil.copytree(FIXTURES / name, tree)
    bombed = 0
    for config in _configs(tree):
        text = _bomb_text(config)
        if text is not None:
            config.write_text(text)
            bombed += 1
    main = yaml.safe_load((FIXTURES / name / "expected.yaml").read_text()).get("main", "launch.sh")
    monkeypatch.chdir(tree)
    with time_limit(120):
        outputs = all_formats([main])
    assert bombed or name == "neox-yaml-broken"
    assert all(len(out) < 1_000_000 for out in outputs.values())  # no setting printed out whole
