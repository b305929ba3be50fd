"""Over every fixture launch (tests/test_fixtures.py's and the rule docs' examples): no guess passes for a
reading. A value plint cannot know is null with origin "unresolved"; a guessed value is "assumed" (with a
note saying what was assumed) or the trainer's "default"; and a trainer default only where the trainer's
whole argument list is known (issue 12)."""

from pathlib import Path

import pytest
import yaml

from fixture_paths import FIXTURES, ROOT
from plint.reading.read import read_path
from plint.values import ORIGINS


def _mains() -> list[Path]:
    mains = [
        d / yaml.safe_load((d / "expected.yaml").read_text())["main"]
        for d in sorted(FIXTURES.iterdir())
        if (d / "expected.yaml").exists()
    ]
    rules = ROOT / "fixtures" / "rules"
    mains += sorted(f for f in rules.glob("*/*/*") if f.suffix in (".sh", ".slurm", ".sbatch"))
    return mains


MAINS = _mains()


def _layouts(path: Path):
    expected = FIXTURES / path.parent.name / "expected.yaml"
    env = (yaml.safe_load(expected.read_text()).get("env") or {}) if expected.exists() else {}
    return read_path(path, env={k: str(v) for k, v in env.items()}).layouts


def test_the_walk_sees_the_fixtures():
    assert len(MAINS) >= 100 and any("options-conditional-append" in str(m) for m in MAINS)


@pytest.mark.parametrize("path", MAINS, ids=[str(p.relative_to(ROOT)) for p in MAINS])
def test_no_guess_passes_for_a_reading(path):
    for layout in _layouts(path):
        facts = layout.extras.facts
        incomplete = facts.get("arguments.incomplete")
        for key, value in list(layout.fields.items()) + [(f"fact {k}", v) for k, v in facts.items()]:
            assert value.origin in ORIGINS, (key, value)
            if value.origin == "unresolved":
                assert value.value is None, (key, value)
            if value.origin in ("assumed", "default"):
                assert value.note, (key, value)  # what was assumed, or whose default it is
        if incomplete is None:
            continue
        assert incomplete.value is None and incomplete.origin == "unresolved"
        # the trainer's argument list has a part that could hold any flag: none of what its flags set is a default
        trainer_defaults = [k for k, v in facts.items() if v.origin == "default"]
        assert not trainer_defaults, trainer_defaults
        for key in ("precision", "batch.global", "batch.micro", "parallel.tp", "parallel.pp", "parallel.cp"):
            v = layout.get(key)
            assert v is None or v.origin != "default", (key, v)


def test_a_value_computed_from_an_assumption_is_an_assumption():
    from plint.reading.derive import product, quotient
    from plint.values import Value, derived

    world = Value(16, None, "assumed", "one node assumed")
    dp = quotient("dp = {n} / {tp}", world, tp=derived(2, "tp"))
    assert (dp.value, dp.origin) == (8, "assumed") and "16 assumed" in dp.note
    assert product("{a}*{b}", a=derived(2, ""), b=derived(3, "")).origin == "derived"
