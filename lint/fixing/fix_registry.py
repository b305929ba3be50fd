"""The fixer registry and the helpers every fixer shares (plint.fixing.fixers, plint.fixing.layout_fixers,
plint.fixing.startup_fixers register into it; plint.fixing.fixers looks a diagnostic's fixer up).

A fixer takes the Diagnostic and a FixContext and returns a Fix (plint.rules.base) or None. Whether it
is safe is not the fixer's to say: the rule's record declares it (`fix=unsafe_fix(...)` in rules/, a
RuleFix), and a fix of a rule declared unsafe runs only under `plint fix --unsafe-fixes`:

    from plint.fixing.fix_registry import fixer

    @fixer("PL305")
    def add_distributed_optimizer(diag, ctx): ...
"""

from __future__ import annotations

import os

from plint.record import field, record
from plint.rules.base import Edit, Fix
from plint.source import read_through

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from plint.diagnostics import Diagnostic
    from plint.reading.read import FileReading
    from plint.source import Span


@record(frozen=True)
class Fixer:
    code: str
    function: Callable[[Diagnostic, FixContext], Fix | None]


# The one table of fixers: rule code -> its fixers, in the order they are tried
FIXERS: dict[str, list[Fixer]] = {}


def fixer(code: str):
    """Decorator: register a fixer for a rule code (several may be registered; the first that
    returns a Fix wins). The rule's record declares whether its fix is safe (RuleFix)."""

    def wrap(function):
        FIXERS.setdefault(code, []).append(Fixer(code, function))
        return function

    return wrap


def real_path(path: str) -> str:
    """The file a span's (display) path names, as a key for file contents."""
    return os.path.realpath(os.path.abspath(path))


@record
class FixContext:
    reading: FileReading
    settings: object = None
    # real path -> current bytes (what is being fixed, in memory); other files are read from disk
    files: dict[str, bytes] = field(default_factory=dict)

    def data(self, path: str) -> bytes | None:
        key = real_path(path)
        if key not in self.files:
            try:  # only where the check read (plint.root); standard input as the file it is checked as
                self.files[key] = read_through(getattr(self.reading, "root", None), key)
            except (OSError, ValueError):
                return None
        return self.files[key]

    def contexts(self):
        """A RuleContext per layout of the reading (or one without a layout)."""
        from plint.rules.base import RuleContext

        return [RuleContext(self.reading, layout, self.settings) for layout in self.reading.layouts] or [
            RuleContext(self.reading, None, self.settings)
        ]


# ---- helpers ------------------------------------------------------------------------------------


def points_at(span: Span | None, diag: Diagnostic) -> bool:
    """Whether a span is where the diagnostic points."""
    return (
        span is not None
        and span.line == diag.line
        and span.col == diag.col
        and real_path(span.path) == real_path(diag.path)
    )


def replace_in_span(ctx: FixContext, span: Span | None, old: str, new: str) -> Edit | None:
    """An edit replacing `old` by `new` inside the characters of span: the whole span when it holds
    exactly `old`, else the one occurrence of `old` in it (`"--x"` with its quotes); None when the
    characters are not what the reader saw (an expansion, an escape) or `old` occurs twice."""
    if span is None:
        return None
    data = ctx.data(span.path)
    if data is None or span.end > len(data):
        return None
    raw = data[span.start : span.end]
    want = old.encode("utf-8", "surrogateescape")
    if raw == want:
        return Edit(span.path, span.start, span.end, new)
    if raw.count(want) != 1:
        return None
    i = raw.index(want)
    # the occurrence must be a whole token (not `--x` inside `--x-y`)
    before = raw[i - 1 : i]
    after = raw[i + len(want) : i + len(want) + 1]
    if (before and (before.isalnum() or before in b"-_")) or (after and (after.isalnum() or after in b"-_")):
        return None
    return Edit(span.path, span.start + i, span.start + i + len(want), new)


_BOUNDARY_AFTER = frozenset(b" \t\r\n)\\;|&")
_BOUNDARY_BEFORE = frozenset(b" \t\r\n(")


def word_end(ctx: FixContext, span: Span | None) -> int | None:
    """The end of a word written in a command or an array at span, or None when span is not a
    whole shell word there (inside a quoted string, part of a longer word)."""
    if span is None:
        return None
    data = ctx.data(span.path)
    if data is None or span.end > len(data) or span.start >= span.end:
        return None
    if span.start > 0 and data[span.start - 1] not in _BOUNDARY_BEFORE:
        return None
    if span.end < len(data) and data[span.end] not in _BOUNDARY_AFTER:
        return None
    return span.end


def trainer_args_of(ctx):
    layout = ctx.layout
    return layout.extras.trainer_args if layout is not None else None


TP_OPTIONS = ("--tensor-model-parallel-size", "tensor_model_parallel_size")


def ds_configs(ctx: FixContext):
    seen: list = []
    for layout in ctx.reading.layouts:
        cfg = layout.extras.ds_config
        if cfg is not None and all(cfg is not s for s in seen):
            seen.append(cfg)
    if getattr(ctx.reading, "ds_config", None) is not None:
        seen.append(ctx.reading.ds_config)
    return seen
