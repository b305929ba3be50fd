import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # test helper modules (fixture_paths, ...)
from fixture_paths import ROOT  # noqa: E402

os.environ["PLINT_STRICT"] = "1"  # a rule that raises fails its test instead of being skipped


@pytest.fixture(autouse=True)
def _repo_root_cwd(monkeypatch):
    """Diagnostics show paths relative to the working directory: pin it to the repository root."""
    monkeypatch.chdir(ROOT)
    yield
