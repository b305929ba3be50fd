"""bash's string operators on a known value (bash(1), "Parameter Expansion"): removing a matching prefix or
suffix, replacing a pattern, changing case and taking a substring. Patterns are glob patterns (fnmatch)."""

from __future__ import annotations

import fnmatch
import re

_GLOB = "*?["
# a pattern of `${V#P}` / `${V/P/S}` that bash expands or unquotes before matching: a parameter, a command, a quote
EXPANDED = re.compile(r"\$[\w{(@*#?!$-]|[`\\'\"]")
# the operators bash applies to each element of `${A[@]}` and `$@` (bash(1), "Parameter Expansion")
EACH_ELEMENT = frozenset(("#", "##", "%", "%%", ",,", "^^", ",", "^", "/", "//", "/#", "/%"))


def trimmed(op: str, text: str, pattern: str) -> str | None:
    """`${X#P}`, `${X##P}`, `${X%P}`, `${X%%P}` (shortest or longest match removed), `${X,,}`, `${X^^}`, `${X,}`,
    `${X^}`; None for another operator."""
    if op in ("#", "##"):
        starts = range(len(text) + 1) if op == "#" else range(len(text), -1, -1)
        return next((text[i:] for i in starts if fnmatch.fnmatchcase(text[:i], pattern)), text)
    if op in ("%", "%%"):
        ends = range(len(text), -1, -1) if op == "%" else range(len(text) + 1)
        return next((text[:i] for i in ends if fnmatch.fnmatchcase(text[i:], pattern)), text)
    if op in (",,", "^^", ",", "^") and pattern not in ("", "?"):
        return None  # `${x^^b}`: only the characters the pattern matches change (not evaluated)
    if op == ",,":
        return text.lower()
    if op == "^^":
        return text.upper()
    if op in (",", "^"):
        return (text[:1].lower() if op == "," else text[:1].upper()) + text[1:]
    return None


def substitute(op: str, text: str, pattern: str | None, string: str | None) -> str | None:
    """`${X/P/S}` (first match), `${X//P/S}` (every match), `${X/#P/S}` (at the start), `${X/%P/S}` (at the end);
    None when the pattern or the string is unknown, or the pattern is a glob (not evaluated)."""
    if pattern is None or string is None or any(ch in pattern for ch in _GLOB) or "&" in string:
        return None  # bash 5.2 puts the match where an unquoted `&` stands in the string (patsub_replacement)
    if not pattern:  # an empty pattern matches only where it is anchored: `${x/#/--}` prefixes
        return string + text if op == "/#" else text + string if op == "/%" else text
    if op == "//":
        return text.replace(pattern, string)
    if op == "/#":
        return string + text[len(pattern) :] if text.startswith(pattern) else text
    if op == "/%":
        return text[: -len(pattern)] + string if text.endswith(pattern) else text
    return text.replace(pattern, string, 1)


def substring(text: str, offset: int, length: int | None = None) -> str:
    """`${X:OFFSET}` and `${X:OFFSET:LENGTH}`: a negative offset counts from the end, a negative length stops
    that many characters before it."""
    part = text[offset:] if offset >= 0 else text[len(text) + offset :]
    return part if length is None else part[:length]
