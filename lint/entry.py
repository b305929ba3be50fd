"""The `plint` console entry: an ordinary `plint check ...` runs without importing click (see
plint.check_command for why); every other command line goes to the click CLI."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["check"]:
        from plint.check_command import parse_fast, run

        parsed = parse_fast(argv[1:])
        if parsed is not None:
            try:
                code = run(parsed.pop("paths"), **parsed)
            except ValueError:
                code = None  # let click report the usage error the same way it reports all others
            if code is not None:
                sys.exit(code)
    from plint.cli import main as click_main

    click_main()
