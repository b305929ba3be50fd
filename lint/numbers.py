"""Numbers read from a file's text: one converter for every reader, bounded in length.

A launch file is written by a stranger; Python refuses to convert between int and str past 4,300 digits
(sys.get_int_max_str_digits, a ValueError that a reader would take for a usage error), and a product of a
few long numbers could not even be printed in a message. So no number longer than MAX_INT_DIGITS is
converted: the reader says it is too long (an unknown value, PL002) instead.
"""

from __future__ import annotations

import sys

# No count of a launch comes near (bash arithmetic and torch hold 64 bits: 19 digits); plint.bounds judges
# every number up to this length
MAX_INT_DIGITS = 30


class NumberTooLong(ValueError):
    """A number of more than MAX_INT_DIGITS digits; str() says how long, never quoting it."""


def parse_int(text: str, base: int = 10) -> int:
    """An integer the way Python's argparse `int` reads it (so '0x10' is rejected, ' 8' is not), for
    every number plint reads from a file's text; NumberTooLong (a ValueError) past MAX_INT_DIGITS."""
    text = text.strip()
    significant = text.lstrip("+-").replace("_", "").lstrip("0")
    if len(significant) > MAX_INT_DIGITS and significant.isdigit():
        raise NumberTooLong(
            f"a {len(significant)}-digit number, longer than any count plint reads "
            f"(at most {MAX_INT_DIGITS} digits); not evaluated"
        )
    return int(text, base)


def parse_index(text: str) -> int:
    """A count or index the shell reads (`shift N`, `${N}`): a number too long to read stands for one
    past any list (sys.maxsize), as bash's own 64-bit number would."""
    try:
        return parse_int(text)
    except NumberTooLong:
        return sys.maxsize
