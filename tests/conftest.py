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


@pytest.fixture(scope="session", autouse=True)
def _private_cache_home(tmp_path_factory):
    """plint keeps marshal copies of its JSON catalogs in $XDG_CACHE_HOME/plint: the suite (and the
    pre-commit environments it builds, which inherit the environment) writes them to a folder of its
    own, not the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield
