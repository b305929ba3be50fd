"""Checking: the engine that runs the rules over a reading, with configuration, suppression and baselines."""
