"""The `plint` console entry: an ordinary `plint check ...` runs without importing click (see
plint.cli.check_command for why); every other command line goes to the click CLI."""

from __future__ import annotations

import gc  # built in: free
import sys


def tune_collector() -> None:
    """A check allocates tens of thousands of objects and frees few: at the default threshold (700) the
    cyclic collector makes ~20 passes over one file, a few ms, and finds next to nothing (and on a hostile
    file of 20,000 words, a second of passes). It still runs, 70x less often, so a long run over many files
    keeps its memory in check. The fuzzer's worker runs plint with it too, as the console entry does."""
    gc.set_threshold(50_000, 10, 10)


def main() -> None:
    tune_collector()
    # A file name that is not UTF-8 (kept by Python as lone surrogates) prints as \udcXX escapes instead
    # of stopping a strict UTF-8 stream with an encoding error after the check
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    argv = sys.argv[1:]
    if argv[:1] == ["check"]:
        from plint.cli.check_command import parse_fast, run

        parsed = parse_fast(argv[1:])
        if parsed is not None:
            from plint.checking.config import UsageError

            try:
                code = run(parsed.pop("paths"), **parsed)
            except UsageError:
                code = None  # let click report the usage error the same way it reports all others
            if code is not None:
                sys.exit(code)
    from plint.cli.commands import main as click_main

    click_main()
