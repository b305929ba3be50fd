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


def paint(lines: list[list[tuple[str, str]]]) -> str:
    """Lines of (style, text) segments as ANSI-coloured text, each line ending in a newline. Colour has
    been decided (use_color): the 16 standard colours whatever TERM says, so `--color always` colours a
    CI log too; nothing in the text is read as markup or emoji."""
    from rich.console import Console
    from rich.text import Text

    console = Console(
        force_terminal=True,
        color_system="standard",
        no_color=False,
        highlight=False,
        soft_wrap=True,
        emoji=False,
        markup=False,
    )
    with console.capture() as capture:
        for line in lines:
            text = Text()
            for style, segment in line:
                text.append(segment, style=style or None)
            console.print(text)
    return capture.get()
