"""fixtures/good: published production runs written as Megatron-LM launches (scripts/write_good_launches.py).
These layouts ran, so the trainer accepted them: no start-up check, nor any other rule, may call one an
error. (That none draws a warning either is issue 25's goal; fixtures/good/README.md keeps the count.)"""

import pytest

from fixture_paths import ROOT
from plint.checking.check import check_paths

GOOD = sorted(p for p in (ROOT / "fixtures" / "good").iterdir() if p.is_dir()) \
    if (ROOT / "fixtures" / "good").exists() else []


def test_there_are_good_launches():
    assert len(GOOD) >= 25


@pytest.mark.parametrize("folder", GOOD, ids=[p.name for p in GOOD])
def test_a_launch_that_ran_draws_no_error(folder):
    (result,) = check_paths([folder / "launch.sh"])  # its .plint.toml names the GPU and the network
    (layout,) = result.layouts
    assert layout.value("trainer") == "megatron" and layout.value("cluster.gpu") is not None
    errors = [f"{d.code} {d.message}" for d in result.diagnostics if d.severity == "error"]
    assert not errors
