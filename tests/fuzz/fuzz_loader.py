"""benchmarks/fuzz.py as a module (benchmarks/ is not a package)."""

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz.py"


def load_fuzz():
    if "plint_fuzz" not in sys.modules:
        spec = importlib.util.spec_from_file_location("plint_fuzz", _PATH)
        module = importlib.util.module_from_spec(spec)
        sys.modules["plint_fuzz"] = module
        spec.loader.exec_module(module)
    return sys.modules["plint_fuzz"]
