"""Template slots: `${NAME}` / `$NAME` in a file a script fills before use (a DeepSpeed JSON template).

`envsubst` (GNU gettext) replaces each `$NAME` and `${NAME}` of its input with the value of that
environment variable, and with nothing when the variable is not in the environment; given a
SHELL-FORMAT argument (`envsubst '$GBS ${MBS}'`) it replaces only the variables named there.
Only exported variables reach it: a value the script assigns without `export` does not, so such a
slot is filled from whatever environment the job runs in, which plint cannot know.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Callable

    from plint.reading.shell.model import Var, Word

from plint.reading.shell.model import MappedText, Piece, unknown

SLOT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _split(content: MappedText, replace: Callable[[str, Piece], list[Piece] | None]) -> MappedText:
    """Content with each slot of its known text replaced by replace(name, slot piece); None keeps it."""
    out: list[Piece] = []
    for p in content.pieces:
        if not p.known or "$" not in (p.text or ""):
            out.append(p)
            continue
        pos = 0
        for m in SLOT.finditer(p.text):  # type: ignore[arg-type]
            new = replace(m.group(1) or m.group(2), p.sub(m.start(), m.end()))
            if new is None:
                continue
            out.append(p.sub(pos, m.start()))
            out.extend(new)
            pos = m.end()
        out.append(p.sub(pos, len(p.text)))  # type: ignore[arg-type]
    return MappedText([p for p in out if not p.known or p.text])


def run_envsubst(args: list[Word], stdin: MappedText | None, lookup: Callable[[str], Var | None]) -> MappedText | None:
    """What `envsubst [SHELL-FORMAT] < template` writes; None when plint does not evaluate the call."""
    if stdin is None or any((w.text or "-").startswith("-") for w in args) or len(args) > 1:
        return None  # --variables / --help print something else; a second operand is an error
    operand = args[0].text if args else None
    if args and operand is None:
        return None
    named = {a or b for a, b in SLOT.findall(operand)} if operand is not None else None

    def fill(name: str, slot: Piece) -> list[Piece] | None:
        if named is not None and name not in named:
            return None  # envsubst leaves variables outside SHELL-FORMAT as written
        var = lookup(name)
        if var is not None and var.exported and not var.is_array:
            return list(var.value)
        why = (
            "is set in the script but not exported, so envsubst does not see it"
            if var is not None
            else "is not set in the script"
        )
        return [
            unknown(
                f"unfilled template slot {slot.text}: envsubst fills it from the environment, and ${name} {why}",
                name,
                slot.span,
            )
        ]

    return _split(stdin, fill)


def mark_unfilled(content: MappedText, where: str) -> MappedText:
    """A file the script filled (sed, envsubst) with the slots left in it made unknown, each saying so."""
    return _split(
        content,
        lambda name, slot: [
            unknown(
                f"unfilled template slot {slot.text} in {where}: nothing in the script replaces it", name, slot.span
            )
        ],
    )
