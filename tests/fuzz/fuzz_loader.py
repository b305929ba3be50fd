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


_WORKER = None


def check_in_worker(case_dir: Path, entry: str) -> dict:
    """fuzz.check_case run in a process of its own (one for the session, plint imported once), as the fuzzer runs
    it: the test process may have imported torch for the dry-run tests, whose hundreds of MB a measurement made
    here would count as plint's."""
    global _WORKER
    fuzz = load_fuzz()
    if _WORKER is None:
        _WORKER = fuzz.Worker(memory_mb=0, hooks=[])
    answer = _WORKER.run(Path(case_dir), entry, timeout=300)
    assert answer is not None, f"the fuzz worker hung on {case_dir}"
    return answer
