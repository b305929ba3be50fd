"""Budgets on what one check may compute, so a hostile or broken file costs seconds and megabytes.

A value past a bound is never evaluated further: the reader makes it unresolved and says which bound
(PL002), and a count no cluster has is also an invalid value (PL506). Numbers chosen far above any
real launch: the largest published training clusters have ~100,000 GPUs, the deepest models ~200 layers.

Numbers read from a file's text have one converter for every reader, bounded in length (parse_int): Python
refuses to convert between int and str past 4,300 digits (sys.get_int_max_str_digits, a ValueError that a
reader would take for a usage error), and a product of a few long numbers could not even be printed in a
message. So no number longer than MAX_INT_DIGITS is converted: the reader says it is too long (an unknown
value, PL002) instead.
"""

from __future__ import annotations

import sys

MAX_GPUS = 1_000_000  # GPUs, nodes, slots, ranks, parallel sizes
MAX_LAYERS = 100_000  # transformer layers: the cost model keeps a per-layer pattern
MAX_SIZE = 10**12  # any other count (batch, hidden size, sequence length, vocabulary)
MAX_VALUE_CHARS = 64 * 1024  # one evaluated shell value (a variable, a word, an array, a heredoc)
MAX_ARRAY_ITEMS = 16 * 1024  # elements of one shell array
MAX_LAUNCHES = 32  # launches read per file (each is a layout, its rules and ~11 kB of JSON)
MAX_UNUSED_LAUNCHES = 1000  # training commands plint did not use that one file's scan lists (~45 us each; PL005
# shows three and counts the rest)
MAX_FINDINGS_PER_RULE = 100  # findings one rule reports in one file; the rest are counted
MAX_FINDINGS_PER_FILE = 500  # findings of all rules in one file (SARIF is ~1.2 kB a finding)
MAX_SUGGESTIONS = 200  # did-you-mean searches per file (difflib over ~1,000 flag names: ~3 ms each)
MAX_MESSAGE_CHARS = 2000  # a diagnostic message or a value's note: they may quote a file's text
# One shell file's syntax (issue 30): tree-sitter's own time grows with its tokens (~8 us per unbalanced `${`,
# 16 s for 4 MiB of them), its tree holds ~250 bytes a node (4 MiB of `if true; then` nested: 285 MB) and every
# walk of it costs ~2 us a node, so a file with more expansions and brackets, words and statements, or syntax
# nodes than these is not evaluated. Real launch scripts have a few thousand of each.
MAX_SHELL_OPENERS = 100_000  # `$`, quotes, `{` and `(` in one file, counted before it is parsed
# braces and parentheses open at once: tree-sitter's error recovery over unclosed ones costs time quadratic in
# their depth (20,000 unclosed `f() {` in an argument list: 9 s; 1,000: 0.07 s)
MAX_SHELL_DEPTH = 1_000
# `$` on one line of a file with a heredoc: tree-sitter-bash's heredoc scanner costs time quadratic in a line's
# expansions (~1.4e-8 s per pair: 20,000 `$x` on one heredoc line, 3 s; 97 lines of 1,024, 1.4 s); at 256 a file
# within MAX_SHELL_OPENERS parses in about 0.4 s at worst. A real heredoc line holds a few.
MAX_HEREDOC_LINE_EXPANSIONS = 256
MAX_SHELL_BLANKS = 150_000  # blanks, newlines and `;` in one file (its words and statements), counted the same way
MAX_SHELL_NODES = 500_000  # syntax nodes of one file's tree
MAX_JSON_VALUES = 50_000  # values of one JSON document (a DeepSpeed config has a few hundred): ~0.5 s to read
MAX_NESTING = 100  # expansions inside expansions (`${a[${a[...]}]}`, `$($(...))`): real scripts nest a few
MAX_REPARSED_NESTING = 10  # of them, those in a heredoc's text, which each level parses again (O(size) a level)

# layout fields that count GPUs (DESIGN.md "The normalised layout"), and per-layer counts
GPU_FIELDS = frozenset(
    {
        "cluster.nnodes",
        "cluster.gpus_per_node",
        "cluster.workers_per_node",
        "cluster.world_size",
        "cluster.nvlink_domain",
        "parallel.tp",
        "parallel.pp",
        "parallel.vpp",
        "parallel.cp",
        "parallel.ep",
        "parallel.etp",
        "parallel.dp",
    }
)
LAYER_FIELDS = frozenset({"model.num_layers", "recompute.num_layers"})
UNBOUNDED = frozenset({"model.params", "cluster.gpu_memory_gib"})


def limit_for(key: str) -> int | None:
    """The largest value a layout field may hold (None: not a count)."""
    if key in UNBOUNDED:
        return None
    if key in GPU_FIELDS:
        return MAX_GPUS
    if key in LAYER_FIELDS:
        return MAX_LAYERS
    if key.startswith(("batch.", "model.")):
        return MAX_SIZE
    return None


def over_limit(key: str, value: object) -> str | None:
    """Why a layout value is past its bound, or None when it is within it (a negative size is PL506's
    own "at least 1" check, not a budget)."""
    limit = limit_for(key)
    if limit is None or isinstance(value, bool) or not isinstance(value, int) or value <= limit:
        return None
    if limit == MAX_GPUS:
        return f"{key} is {_shown(value)}: no cluster has that many GPUs (plint's bound is {limit:,}); not evaluated"
    unit = " layers" if limit == MAX_LAYERS else ""
    return f"{key} is {_shown(value)}, over plint's bound of {limit:,}{unit}; not evaluated"


def _shown(value: int) -> str:
    text = str(value)
    return text if len(text) <= 30 else f"a {len(text)}-digit number"


def count_problem(option: str, value: int) -> str | None:
    """A launcher count (--num_gpus, --nproc_per_node, a hostfile's slots) no cluster has."""
    if value <= MAX_GPUS:
        return None
    return f"{option} is {_shown(value)}: no cluster has that many GPUs (plint's bound is {MAX_GPUS:,}); not evaluated"


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """Text for a message or note, shortened in the middle when a quoted value makes it long."""
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]}...({len(text) - 2 * keep} characters)...{text[-keep:]}"


# ---- numbers read from a file's text ----

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
