"""Whether a report is coloured: `--color always|never`, or (auto) what rich decides for the stream."""

from __future__ import annotations

import os
import sys


def use_color(choice: str, stream=None) -> bool:
    """--color: always, never, or (auto) what rich decides for the stream: FORCE_COLOR and TTY_COMPATIBLE
    force a terminal or refuse one, else the stream's isatty; TERM=dumb|unknown and NO_COLOR turn colour
    off. rich (about 25 ms to import) is asked only where it could say yes."""
    if choice in ("always", "never"):
        return choice == "always"
    stream = stream if stream is not None else sys.stdout
    environ = os.environ
    if environ.get("NO_COLOR", "") != "" or environ.get("TTY_COMPATIBLE") == "0":
        return False
    if environ.get("FORCE_COLOR") is None and environ.get("TTY_COMPATIBLE") != "1":
        try:
            if not stream.isatty():
                return False
        except (AttributeError, ValueError):  # no isatty, a closed stream
            return False
    from rich.console import Console

    console = Console(file=stream)
    return console.color_system is not None and not console.no_color
