"""Where the fixture launches live, for tests that walk them."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "launches"


def fixture_dirs() -> list[Path]:
    return sorted(p for p in FIXTURES.iterdir() if (p / "expected.yaml").exists()) if FIXTURES.exists() else []
