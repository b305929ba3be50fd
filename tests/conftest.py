import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "launches"


@pytest.fixture(autouse=True)
def _repo_root_cwd(monkeypatch):
    """Diagnostics show paths relative to the working directory: pin it to the repository root."""
    monkeypatch.chdir(ROOT)
    yield


def fixture_dirs() -> list[Path]:
    return sorted(p for p in FIXTURES.iterdir() if (p / "expected.yaml").exists()) if FIXTURES.exists() else []
