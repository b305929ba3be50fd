"""Value: a fact about a launch together with where it came from.

Every layer above the shell reader speaks in Values: the launcher's node count, the trainer's
tensor-parallel size, a DeepSpeed batch number. `value is None` means unknown; `note` then says why
(and is what PL002 reports).
"""

from __future__ import annotations

from plint.record import record
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable

from plint.source import Span, Word
from plint.bounds import NumberTooLong as NumberTooLong, parse_int as parse_int  # re-exported: the readers' converter
from plint.bounds import clip

# "missing": the launch leaves out a value the trainer has no default for (Megatron's --seq-length): null,
# listed in the layout's `unresolved`, never labelled "default" as if the trainer supplied one
ORIGINS = ("literal", "default", "env", "derived", "assumed", "unresolved", "missing")


@record(frozen=True)
class Value:
    value: Any
    span: Span | None = None
    origin: str = "literal"
    note: str | None = None  # why unknown, or how it was derived

    @property
    def known(self) -> bool:
        return self.value is not None

    def provenance(self) -> dict[str, Any]:
        out: dict[str, Any] = {"origin": self.origin}
        if self.span is not None:
            out.update(path=self.span.path, line=self.span.line, col=self.span.col)
        else:
            out.update(path=None, line=None, col=None)
        if self.note:
            out["note"] = clip(self.note)
        return out


def default(value: Any, note: str | None = None) -> Value:
    """A trainer's or launcher's own default for something the launch does not set."""
    return Value(value, None, "default", note)


def unresolved(note: str, span: Span | None = None) -> Value:
    return Value(None, span, "unresolved", note)


def derived(value: Any, note: str, span: Span | None = None) -> Value:
    return Value(value, span, "derived", note)


def from_word(word: Word, convert: Callable[[str], Any] = str, what: str = "value") -> Value:
    """A Value from an expanded word; unknown pieces and conversion failures become unresolved."""
    span = word.value_span
    if not word.known:
        reasons = [p.reason for p in word.unknowns if p.reason]
        alts = [a for p in word.unknowns for a in p.alternatives]
        note = "; ".join(dict.fromkeys(reasons)) or f"{what} cannot be known statically"
        if alts:
            note += " (could be " + ", ".join(dict.fromkeys(alts)) + ")"
        return Value(None, span, "unresolved", note)
    text = word.text or ""
    try:
        return Value(convert(text), span, word.origin)
    except NumberTooLong as exc:
        return Value(None, span, "unresolved", f"{what} is {exc}")
    except (ValueError, TypeError):
        return Value(None, span, "unresolved", f"{what} {text!r} is not a valid {convert.__name__}")
