"""A JSON reader that keeps where every key and value was written.

It reads text assembled by the shell evaluator (a heredoc with `$VARS` inside, a sed-filled
template) as well as plain files. Every node's span maps back through the MappedText to the
characters in the script or file; a value the shell cannot know (`"train_batch_size": $GBS` with
GBS unknown, `"$DIR/x"`) becomes a JUnknown that carries the unknown piece and its reason.

Two readers matter downstream (shared/reference/deepspeed.md §1.1): DeepSpeed loads its config with
hjson, which accepts comments (`//`, `#`, `/* */`), trailing commas, unquoted and single-quoted keys,
single-quoted strings and strings without quotes (to the end of their line), and a newline instead of a
comma, but refuses duplicate keys; Megatron-DeepSpeed and the autotuner use the strict `json.load`, which
accepts none of those and lets a duplicate key silently win. So this reader accepts what hjson accepts,
records each such `leniency` and each duplicate, and reports only what neither accepts as a syntax problem,
worded as `json` words it.
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable

from plint.bounds import MAX_JSON_VALUES
from plint.keytree import JArray, JEntry, JObject, JScalar, JsonDocument, JUnknown
from plint.reading.shell.model import MARKER, MappedText, Piece, Problem
from plint.source import Span

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?\Z")
_LITERALS = {"true": True, "false": False, "null": None}
_WORD_END = frozenset(" \t\r\n,:{}[]\"'#/")  # characters that end a bare word (a number, true, a key)
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
MAX_NESTING = 200
_BLANKS = re.compile(r"[ \t\r\n]*")

# what each leniency is; all are accepted by DeepSpeed's hjson loader and refused by json.load
COMMENT = "a comment (DeepSpeed's hjson loader skips it; json.load refuses it)"
TRAILING_COMMA = "a trailing comma (DeepSpeed's hjson loader accepts it; json.load refuses it)"
MISSING_COMMA = "no comma between two members (DeepSpeed's hjson loader accepts it; json.load refuses it)"
UNQUOTED_KEY = "a key without quotes (DeepSpeed's hjson loader accepts it; json.load refuses it)"
SINGLE_QUOTES = "a string in single quotes (DeepSpeed's hjson loader accepts it; json.load refuses it)"
QUOTELESS = "a string without quotes (DeepSpeed's hjson loader reads the rest of the line as one; json.load refuses it)"


class _Broken(Exception):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


class _TooComplex(_Broken):
    """Past MAX_JSON_VALUES: reading stops where the budget ran out."""


class _Reader:
    def __init__(self, mapped: MappedText):
        self.mapped = mapped
        self.text = mapped.render()
        self.i = 0
        self.depth = 0
        self.values = 0  # read so far (MAX_JSON_VALUES)
        self.leniencies: list[tuple[str, Span | None]] = []
        self.duplicates: list[tuple[str, Span | None]] = []
        self.comma_at = 0  # where the last comma was: a trailing one is reported there
        self.first_quoteless: int | None = None  # where the first string without quotes starts
        self.ranges: list[tuple[int, int, Piece]] = []  # rendered [lo, hi) of each piece
        pos = 0
        for index, piece in enumerate(mapped.pieces):
            n = len(piece.text) if piece.known else len(f"{MARKER}{index}{MARKER}")  # type: ignore[arg-type]
            self.ranges.append((pos, pos + n, piece))
            pos += n
        # A plain ASCII file read as it is (one exact piece): a rendered offset is a byte offset of that
        # file, so spans come straight from it (a 4 MiB config has 400,000 of them)
        only = mapped.pieces[0] if len(mapped.pieces) == 1 else None
        self.file = (
            only.source
            if only is not None
            and only.known
            and only.exact
            and only.span is not None
            and getattr(only.source, "_ascii", False)
            else None
        )
        self.base = only.span.start if self.file is not None and only is not None and only.span is not None else 0

    # ---- positions and provenance -----------------------------------------------------------------
    def span(self, start: int, end: int) -> Span | None:
        if not self.text:
            return self.mapped.pieces[0].span if self.mapped.pieces else None
        start = max(0, min(start, len(self.text) - 1))
        if self.file is not None:  # what MappedText.locate gives for one exact piece, without the walk
            return self.file.span(self.base + start, self.base + min(len(self.text), max(end, start + 1)))
        return self.mapped.locate(start, max(end, start + 1))

    def pieces_in(self, start: int, end: int) -> list[Piece]:
        return [p for lo, hi, p in self.ranges if lo < end and hi > start and (p.text != "")]

    def lenient(self, message: str, start: int, end: int) -> None:
        self.leniencies.append((message, self.span(start, end)))

    # ---- blanks and comments ----------------------------------------------------------------------
    def skip(self) -> bool:
        """Skip blanks and comments; True when a line ended on the way (hjson's comma)."""
        t, newline = self.text, False
        while self.i < len(t):
            blanks = _BLANKS.match(t, self.i).end()  # type: ignore[union-attr]  # it matches "" too; at C speed: a 4 MiB config is mostly blanks and values
            newline |= "\n" in t[self.i : blanks]
            self.i = blanks
            if self.i >= len(t):
                break
            c = t[self.i]
            if c == "#" or t.startswith("//", self.i):
                end = t.find("\n", self.i)
                self.lenient(COMMENT, self.i, self.i + (2 if c == "/" else 1))
                self.i = len(t) if end < 0 else end
            elif t.startswith("/*", self.i):
                end = t.find("*/", self.i + 2)
                if end < 0:
                    raise _Broken("Unterminated comment", self.i)
                self.lenient(COMMENT, self.i, self.i + 2)
                newline |= "\n" in t[self.i : end]
                self.i = end + 2
            else:
                break
        return newline

    # ---- values -----------------------------------------------------------------------------------
    def value(self, sink: Callable[[Any], None]) -> str:
        """Read one value and hand its node to sink as soon as it exists (so that a document
        broken further on keeps what was read); returns the kind read: "string", "container" or
        "bare" (hjson wants a comma or a newline after a bare value only)."""
        self.skip()
        if self.i >= len(self.text):
            raise _Broken("Expecting value", self.i)
        self.values += 1
        if self.values > MAX_JSON_VALUES:
            raise _TooComplex("too many values", self.i)
        c = self.text[self.i]
        if c in "{[":
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise _Broken("Nested too deeply", self.i)
            if c == "{":
                self.members(sink)
            else:
                self.items(sink)
            self.depth -= 1
            return "container"
        if c in "\"'":
            start = self.i
            text, unknown = self.string()
            sink(self.string_node(text, unknown, start))
            return "string"
        sink(self.bare_value())
        return "bare"

    def bare_value(self) -> Any:
        """A number, true/false/null, or a value (partly) made of unknown shell text."""
        start = self.i
        word, unknown = self.word()
        if unknown is not None:
            return JUnknown(unknown, unknown.span or self.span(start, self.i), self.display(start, self.i))
        if word in _LITERALS:
            return self.scalar(_LITERALS[word], start)
        match = _NUMBER.match(word)
        if match is None:
            return self.quoteless(start)
        try:
            number = float(word) if match.group(1) or match.group(2) else int(word)
        except ValueError as exc:  # past 4,300 digits json.load itself refuses an integer
            raise _Broken(f"Integer too long ({len(word)} characters): {str(exc).split(';')[0]}", start) from None
        return self.scalar(number, start)

    def quoteless(self, start: int) -> Any:
        """hjson's string without quotes: a value that is no number, true, false or null runs to the end of its line,
        commas, brackets and comment marks included (hjson/decoder.py scantfnns); unknown shell text in it makes the
        whole value unknown."""
        t = self.text
        if start >= len(t) or t[start] in "{}[],:":
            raise _Broken("Expecting value", start)
        end = start
        unknown = None
        self.i = start
        while self.i < len(t) and t[self.i] not in "\r\n":
            if t[self.i] == MARKER:
                unknown = unknown or self.marker()
                continue
            self.i += 1
            if t[self.i - 1] not in " \t":
                end = self.i
        self.i = end
        self.lenient(QUOTELESS, start, end)
        if self.first_quoteless is None:
            self.first_quoteless = start
        if unknown is not None:
            return JUnknown(unknown, unknown.span or self.span(start, end), self.display(start, end))
        return JScalar(t[start:end], self.span(start, end), "literal", None)

    def scalar(self, value: Any, start: int) -> JScalar:
        pieces = self.pieces_in(start, self.i)
        origins = {p.origin for p in pieces} or {"literal"}
        origin = next((o for o in ("assumed", "env", "derived") if o in origins), "literal")
        default_of = next((p.default_of for p in pieces if p.default_of), None)
        return JScalar(value, self.span(start, self.i), origin, default_of)

    def word(self) -> tuple[str, Piece | None]:
        """Characters up to a delimiter; unknown pieces inside make the whole word unknown."""
        t, start = self.text, self.i
        unknown = None
        while self.i < len(t):
            c = t[self.i]
            if c == MARKER:
                piece = self.marker()
                unknown = unknown or piece
                continue
            if c in _WORD_END and not (c == "/" and not t.startswith(("//", "/*"), self.i)):
                break
            self.i += 1
        return t[start : self.i], unknown

    def marker(self) -> Piece:
        """Step over one rendered unknown piece (MARKER index MARKER) and return it."""
        close = self.text.find(MARKER, self.i + 1)
        index = self.text[self.i + 1 : close]
        # a NUL byte in the file itself, also one that happens to enclose the index of a piece: only an unknown
        # piece is rendered as a marker
        if close < 0 or not index.isdigit() or int(index) >= len(self.mapped.pieces):
            raise _Broken("Invalid control character at", self.i)
        if self.mapped.pieces[int(index)].known:
            raise _Broken("Invalid control character at", self.i)
        self.i = close + 1
        return self.mapped.pieces[int(index)]

    def display(self, start: int, end: int) -> str:
        """Rendered text with each unknown piece shown as ${NAME} (or <?>)."""
        out, k, t = [], start, self.text
        while k < end:
            if t[k] == MARKER:
                close = t.find(MARKER, k + 1)
                index = t[k + 1 : close]
                piece = self.mapped.pieces[int(index)] if index.isdigit() else None
                out.append(f"${{{piece.name}}}" if piece is not None and piece.name else "<?>")
                k = close + 1 if close > 0 else end
            else:
                out.append(t[k])
                k += 1
        return "".join(out)

    def string(self) -> tuple[str, Piece | None]:
        """A quoted string at self.i: its text (unknown parts as ${NAME}) and its first unknown."""
        t = self.text
        start, quote = self.i, t[self.i]
        if quote == "'":
            self.lenient(SINGLE_QUOTES, start, start + 1)
        self.i += 1
        out: list[str] = []
        unknown = None
        while self.i < len(t):
            c = t[self.i]
            if c == quote:
                self.i += 1
                return "".join(out), unknown
            if c == MARKER:
                at = self.i
                piece = self.marker()
                unknown = unknown or piece
                out.append(self.display(at, self.i))
                continue
            if c == "\\":
                esc = t[self.i + 1 : self.i + 2]
                if esc == "u":
                    digits = t[self.i + 2 : self.i + 6]
                    if len(digits) != 4 or not all(d in _HEX for d in digits):
                        raise _Broken("Invalid \\uXXXX escape", self.i)
                    code = int(digits, 16)
                    self.i += 6
                    low = t[self.i + 2 : self.i + 6] if t.startswith("\\u", self.i) else ""
                    if (
                        0xD800 <= code < 0xDC00
                        and len(low) == 4
                        and all(d in _HEX for d in low)
                        and 0xDC00 <= int(low, 16) < 0xE000
                    ):  # a surrogate pair is one character
                        code = 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
                        self.i += 6
                    out.append(chr(code))
                    continue
                if esc == "'" and quote == "'":
                    out.append("'")
                elif esc in _ESCAPES:
                    out.append(_ESCAPES[esc])
                else:
                    raise _Broken("Invalid \\escape", self.i)
                self.i += 2
                continue
            if c < " ":
                raise _Broken("Invalid control character at", self.i)
            out.append(c)
            self.i += 1
        raise _Broken("Unterminated string starting at", start)

    def string_node(self, text: str, unknown: Piece | None, start: int) -> Any:
        if unknown is not None:
            return JUnknown(unknown, unknown.span or self.span(start, self.i), text)
        pieces = self.pieces_in(start + 1, self.i - 1) or self.pieces_in(start, self.i)
        origins = {p.origin for p in pieces} or {"literal"}
        origin = next((o for o in ("assumed", "env", "derived") if o in origins), "literal")
        default_of = next((p.default_of for p in pieces if p.default_of), None)
        return JScalar(text, self.span(start, self.i), origin, default_of)

    # ---- containers -------------------------------------------------------------------------------
    def members(self, sink: Callable[[Any], None]) -> None:
        t, start = self.text, self.i
        node = JObject([], self.span(start, start + 1))
        sink(node)
        self.i += 1
        seen: set[str] = set()
        after_comma = False
        while True:
            self.skip()
            if self.i >= len(t):
                raise _Broken("Expecting property name enclosed in double quotes", self.i)
            if t[self.i] == "}":
                if after_comma:
                    self.lenient(TRAILING_COMMA, self.comma_at, self.comma_at + 1)
                self.i += 1
                node.span = self.span(start, self.i)
                return
            key_start = self.i
            key, key_piece, blob = self.key()
            if blob is not None:  # unknown text where members go
                node.unknown_members.append(blob)
                after_comma = self.separator("}", "string")
                continue
            key_span = self.span(key_start, self.i)
            if key_piece is None:
                if key in seen:
                    self.duplicates.append((key, key_span))
                seen.add(key)
            self.skip()
            if not t.startswith(":", self.i):
                raise _Broken("Expecting ':' delimiter", self.i)
            self.i += 1

            def add(v, k=key, at=key_span, piece=key_piece):
                node.entries.append(JEntry(k, at, v, piece))

            kind = self.value(add)
            after_comma = self.separator("}", kind)

    def items(self, sink: Callable[[Any], None]) -> None:
        t, start = self.text, self.i
        node = JArray([], self.span(start, start + 1))
        sink(node)
        self.i += 1
        after_comma = False
        while True:
            self.skip()
            if self.i >= len(t):
                raise _Broken("Expecting value", self.i)
            if t[self.i] == "]":
                if after_comma:
                    self.lenient(TRAILING_COMMA, self.comma_at, self.comma_at + 1)
                self.i += 1
                node.span = self.span(start, self.i)
                return
            kind = self.value(node.items.append)
            after_comma = self.separator("]", kind)

    def separator(self, close: str, kind: str) -> bool:
        """After a member or item: a comma (True), the closing bracket, or what hjson takes for a
        comma (a line break; after a string or a container, any blank)."""
        start = self.i
        newline = self.skip()
        t = self.text
        if t.startswith(",", self.i):
            self.comma_at = self.i
            self.i += 1
            self.skip()
            if t.startswith(",", self.i):  # `1,,2`: neither reader takes an empty member
                raise _Broken(
                    "Expecting value" if close == "]" else "Expecting property name enclosed in double quotes", self.i
                )
            return True
        if self.i >= len(t) or t[self.i] == close:
            return False
        if newline or kind != "bare":
            self.lenient(MISSING_COMMA, start, start + 1)
            return False
        raise _Broken("Expecting ',' delimiter", self.i)

    def key(self) -> tuple[str, Piece | None, JUnknown | None]:
        """A member's key: (text, its unknown piece if partly unknown, None), or for unknown shell
        text standing alone where members belong (no `:` after it): ("", None, the blob)."""
        t, start = self.text, self.i
        c = t[start]
        if c in "\"'":
            text, unknown = self.string()
            return text, unknown, None
        word, unknown = self.word()
        if not word:
            raise _Broken("Expecting property name enclosed in double quotes", start)
        if unknown is not None:
            after = self.i
            self.skip()
            if not t.startswith(":", self.i):
                self.i = after
                return "", None, JUnknown(unknown, unknown.span or self.span(start, after), self.display(start, after))
            self.i = after
            return self.display(start, after), unknown, None
        ahead = self.i
        while ahead < len(t) and t[ahead] in " \t\r\n":
            ahead += 1
        if not t.startswith(":", ahead):  # not a key at all: say it as json does
            raise _Broken("Expecting property name enclosed in double quotes", start)
        self.lenient(UNQUOTED_KEY, start, self.i)
        return word, None, None


def parse_json(text: MappedText, path: str) -> JsonDocument:
    """Read a JSON (or hjson-lenient) document; never raises: what cannot be read is a problem,
    and the tree holds what was read before it."""
    reader = _Reader(text)
    doc = JsonDocument(path, None)

    def keep_root(node: Any) -> None:
        doc.root = node

    try:
        reader.skip()
        if reader.i >= len(reader.text):
            raise _Broken("Expecting value", reader.i)
        reader.value(keep_root)
        reader.skip()
        if reader.i < len(reader.text):
            raise _Broken("Extra data", reader.i)
    except _TooComplex as exc:  # a node and a span per value: ~10 us each, so a huge document is not read on
        doc.root = None  # (what was read before stays unused: half a config is no config)
        doc.problems.append(
            Problem(
                "unresolved",
                f"too complex: not evaluated ({path} has more than "
                f"{MAX_JSON_VALUES:,} values, past plint's budget for one document)",
                reader.span(exc.offset, exc.offset + 1),
            )
        )
    except _Broken as exc:
        if reader.first_quoteless is not None and reader.first_quoteless < exc.offset:
            # neither reader takes the document: say json's first complaint, the bare word it stops at (a slot)
            exc = _Broken("Expecting value", reader.first_quoteless)
        doc.problems.append(
            Problem("syntax", f"invalid JSON in {path}: {exc}", reader.span(exc.offset, exc.offset + 1))
        )
    except (ValueError, IndexError, RecursionError) as exc:  # a defect here must not stop a lint
        doc.problems.append(Problem("syntax", f"invalid JSON in {path}: {exc}", None))
    doc.leniencies = reader.leniencies
    doc.duplicates = reader.duplicates
    return doc
