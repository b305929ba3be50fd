"""A JSON reader that keeps the position of every key and value.

It reads text assembled by the shell evaluator (a heredoc with `$VARS` inside, a sed-filled template)
as well as plain files: an unknown shell value in a value position becomes a JUnknown node that says
why, and every span maps back to the script line where the characters were written.
It is lenient where DeepSpeed's own loader (hjson) is: comments and trailing commas are read and
recorded, since Megatron-DeepSpeed reads the file with the strict `json` module.
"""

from __future__ import annotations

from plint.record import field, record
TYPE_CHECKING = False  # typing is imported by type checkers only: it costs start-up time
if TYPE_CHECKING:
    from typing import Any

from plint.shell.model import MARKER, MappedText, Piece, Problem
from plint.source import Span


@record
class JScalar:
    value: Any
    span: Span | None

    def to_python(self) -> Any:
        return self.value


@record
class JUnknown:
    piece: Piece
    span: Span | None

    def to_python(self) -> Any:
        return None


@record
class JArray:
    items: list["JNode"]
    span: Span | None

    def to_python(self) -> Any:
        return [i.to_python() for i in self.items]


@record
class JEntry:
    key: str
    key_span: Span | None
    value: "JNode"


@record
class JObject:
    entries: list[JEntry]
    span: Span | None

    def get(self, key: str) -> "JNode | None":
        found = None
        for e in self.entries:
            if e.key == key:
                found = e.value  # the last duplicate wins, as json.load does
        return found

    def entry(self, key: str) -> JEntry | None:
        found = None
        for e in self.entries:
            if e.key == key:
                found = e
        return found

    def keys(self) -> list[str]:
        return [e.key for e in self.entries]

    def to_python(self) -> Any:
        return {e.key: e.value.to_python() for e in self.entries}


JNode = "JScalar | JUnknown | JArray | JObject"  # for annotations only


@record
class JsonDocument:
    path: str
    root: JNode | None
    problems: list[Problem] = field(default_factory=list)
    leniencies: list[tuple[str, Span | None]] = field(default_factory=list)
    duplicates: list[tuple[str, Span | None]] = field(default_factory=list)


class _Error(Exception):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


class _Reader:
    def __init__(self, mapped: MappedText):
        self.mapped = mapped
        self.text = mapped.render()
        self.i = 0
        self.leniencies: list[tuple[str, Span | None]] = []
        self.duplicates: list[tuple[str, Span | None]] = []
        self.depth = 0

    def span(self, start: int, end: int) -> Span | None:
        return self.mapped.locate(start, end)

    def skip(self) -> None:
        t = self.text
        while self.i < len(t):
            c = t[self.i]
            if c in " \t\r\n":
                self.i += 1
            elif t.startswith("//", self.i) or c == "#":
                end = t.find("\n", self.i)
                self.leniencies.append(("a comment (DeepSpeed's loader accepts it; json.load does not)",
                                        self.span(self.i, self.i + 1)))
                self.i = len(t) if end < 0 else end + 1
            elif t.startswith("/*", self.i):
                end = t.find("*/", self.i + 2)
                self.leniencies.append(("a block comment", self.span(self.i, self.i + 2)))
                self.i = len(t) if end < 0 else end + 2
            else:
                return

    def value(self) -> JNode:
        self.depth += 1
        if self.depth > 200:
            raise _Error("JSON nested too deeply", self.i)
        try:
            self.skip()
            if self.i >= len(self.text):
                raise _Error("Expecting value", self.i)
            c = self.text[self.i]
            if c == "{":
                return self.obj()
            if c == "[":
                return self.arr()
            if c == '"':
                return self.string_node()
            if c == MARKER:
                return self.unknown()
            return self.literal()
        finally:
            self.depth -= 1

    def unknown(self) -> JNode:
        start = self.i
        end = self.text.index(MARKER, start + 1) + 1
        piece = self.mapped.pieces[int(self.text[start + 1:end - 1])]
        self.i = end
        # an unknown followed by literal characters (`${X}0`) is still one unknown value
        while self.i < len(self.text) and self.text[self.i] not in ",}] \t\r\n":
            self.i += 1
        return JUnknown(piece, piece.span or self.span(start, end))

    def string(self) -> tuple[str | None, Piece | None]:
        t = self.text
        start = self.i
        self.i += 1
        out = []
        hidden = None
        while self.i < len(t):
            c = t[self.i]
            if c == '"':
                self.i += 1
                return ("".join(out) if hidden is None else None), hidden
            if c == MARKER:
                end = t.index(MARKER, self.i + 1)
                hidden = hidden or self.mapped.pieces[int(t[self.i + 1:end])]
                self.i = end + 1
                continue
            if c == "\\":
                esc = t[self.i + 1:self.i + 2]
                if esc == "u":
                    try:
                        out.append(chr(int(t[self.i + 2:self.i + 6], 16)))
                    except ValueError:
                        raise _Error("Invalid \\uXXXX escape", self.i) from None
                    self.i += 6
                    continue
                mapping = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
                if esc not in mapping:
                    raise _Error("Invalid \\escape", self.i)
                out.append(mapping[esc])
                self.i += 2
                continue
            if c == "\n":
                raise _Error("Invalid control character in string", self.i)
            out.append(c)
            self.i += 1
        raise _Error("Unterminated string starting at", start)

    def string_node(self) -> JNode:
        start = self.i
        value, hidden = self.string()
        span = self.span(start, self.i)
        if hidden is not None:
            return JUnknown(hidden, span)
        return JScalar(value, span)

    def literal(self) -> JNode:
        t = self.text
        start = self.i
        while self.i < len(t) and t[self.i] not in ",}] \t\r\n" and t[self.i] != MARKER:
            self.i += 1
        word = t[start:self.i]
        span = self.span(start, self.i)
        if self.i < len(t) and t[self.i] == MARKER:
            node = self.unknown()
            return JUnknown(node.piece, span or node.span) if isinstance(node, JUnknown) else node
        if word in ("true", "false", "null"):
            return JScalar({"true": True, "false": False, "null": None}[word], span)
        try:
            if any(ch in word for ch in ".eE") and not word.lower().startswith(("0x", "-0x")):
                return JScalar(float(word), span)
            return JScalar(int(word, 10), span)
        except ValueError:
            raise _Error("Expecting value", start) from None

    def obj(self) -> JNode:
        start = self.i
        self.i += 1
        entries: list[JEntry] = []
        seen: set[str] = set()
        self.skip()
        if self.text.startswith("}", self.i):
            self.i += 1
            return JObject(entries, self.span(start, self.i))
        while True:
            self.skip()
            if self.i >= len(self.text):
                raise _Error("Expecting property name enclosed in double quotes", self.i)
            if self.text[self.i] == "}":
                self.leniencies.append(("a trailing comma", self.span(self.i - 1, self.i)))
                self.i += 1
                return JObject(entries, self.span(start, self.i))
            if self.text[self.i] != '"':
                raise _Error("Expecting property name enclosed in double quotes", self.i)
            kstart = self.i
            key, hidden = self.string()
            key_span = self.span(kstart, self.i)
            key = key if key is not None else f"<{hidden.reason if hidden else 'unknown key'}>"
            if key in seen:
                self.duplicates.append((key, key_span))
            seen.add(key)
            self.skip()
            if not self.text.startswith(":", self.i):
                raise _Error("Expecting ':' delimiter", self.i)
            self.i += 1
            entries.append(JEntry(key, key_span, self.value()))
            self.skip()
            if self.text.startswith(",", self.i):
                self.i += 1
                continue
            if self.text.startswith("}", self.i):
                self.i += 1
                return JObject(entries, self.span(start, self.i))
            raise _Error("Expecting ',' delimiter", self.i)

    def arr(self) -> JNode:
        start = self.i
        self.i += 1
        items: list[JNode] = []
        self.skip()
        if self.text.startswith("]", self.i):
            self.i += 1
            return JArray(items, self.span(start, self.i))
        while True:
            self.skip()
            if self.text.startswith("]", self.i):
                self.leniencies.append(("a trailing comma", self.span(self.i - 1, self.i)))
                self.i += 1
                return JArray(items, self.span(start, self.i))
            items.append(self.value())
            self.skip()
            if self.text.startswith(",", self.i):
                self.i += 1
                continue
            if self.text.startswith("]", self.i):
                self.i += 1
                return JArray(items, self.span(start, self.i))
            raise _Error("Expecting ',' delimiter", self.i)


def parse_json(text: MappedText, path: str) -> JsonDocument:
    reader = _Reader(text)
    doc = JsonDocument(path, None)
    try:
        doc.root = reader.value()
        reader.skip()
        if reader.i < len(reader.text):
            raise _Error("Extra data", reader.i)
    except _Error as exc:
        at = max(0, min(exc.offset, len(reader.text) - 1))
        span = reader.span(at, at + 1) if reader.text else None
        doc.problems.append(Problem("syntax", f"invalid JSON in {path}: {exc}", span))
    except (ValueError, IndexError) as exc:
        doc.problems.append(Problem("syntax", f"invalid JSON in {path}: {exc}", None))
    doc.leniencies = reader.leniencies
    doc.duplicates = reader.duplicates
    return doc
