"""Invariant hooks for benchmarks/fuzz.py's --hook (called in the worker after each input)."""


def always_objects(case_dir, entry, outputs):
    return [f"objects to everything ({entry.name}, {len(outputs)} outputs)"]
