"""A JSON document as a tree of keys and values, each with the span where it was written (a contract of the
flow: the JSON reader, plint.reading.sources.jsonpos, builds it from a file or from text the shell
assembled; rules and fixers read it, never the reader). A value the shell cannot know is a JUnknown that
carries the unknown piece and its reason.
"""

from __future__ import annotations

from plint.record import field, record
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Protocol

    from plint.source import Piece, Problem, Span
    from plint.values import Value


@record
class JScalar:
    value: Any  # str, int, float, bool or None (JSON null)
    span: Span | None
    origin: str = "literal"  # the shell origin of the characters: literal, env, derived, assumed
    default_of: str | None = None  # the variable whose `${NAME:-default}` wrote it, when one did

    def to_python(self) -> Any:
        return self.value


@record
class JUnknown:
    """A value the shell cannot know statically, wholly or in part."""

    piece: Piece  # the (first) unknown piece: its reason, name and alternatives
    span: Span | None
    shown: str = ""  # the value as far as known, unknown parts as ${NAME} (`"$DIR/x"` -> `${DIR}/x`)

    def to_python(self) -> Any:
        return None


@record
class JArray:
    items: list
    span: Span | None

    def to_python(self) -> Any:
        return [item.to_python() for item in self.items]


@record
class JEntry:
    key: str  # unknown parts shown as ${NAME}
    key_span: Span | None
    value: Any  # a node
    key_piece: Piece | None = None  # set when the key itself is partly unknown


@record
class JObject:
    entries: list[JEntry]
    span: Span | None
    # unknown shell text standing where members belong (`{ $EXTRA_KEYS "a": 1 }`)
    unknown_members: list[JUnknown] = field(default_factory=list)

    def entry(self, key: str) -> JEntry | None:
        """The entry for key; the last of duplicates, as json.load keeps it."""
        found = None
        for e in self.entries:
            if e.key == key:
                found = e
        return found

    def get(self, key: str) -> Any:
        e = self.entry(key)
        return None if e is None else e.value

    def find(self, *keys: str) -> Any:
        """The node at a path of keys (`find("zero_optimization", "stage")`), None when absent."""
        node: Any = self
        for key in keys:
            if not isinstance(node, JObject):
                return None
            node = node.get(key)
        return node

    def keys(self) -> list[str]:
        return [e.key for e in self.entries]

    def to_python(self) -> Any:
        return {e.key: e.value.to_python() for e in self.entries}


JNode = "JScalar | JUnknown | JArray | JObject"  # for annotations only


@record
class JsonDocument:
    path: str
    root: Any  # a node, or None when nothing could be read
    problems: list[Problem] = field(default_factory=list)  # what neither json nor hjson accepts
    leniencies: list[tuple[str, Span | None]] = field(default_factory=list)  # hjson yes, json.load no
    duplicates: list[tuple[str, Span | None]] = field(default_factory=list)  # (key, the repeat's span)

    @property
    def json_load_accepts(self) -> bool:
        """Would Python's json.load read it (Megatron-DeepSpeed's way)? Duplicates it lets through."""
        return not self.problems and not self.leniencies

    @property
    def deepspeed_accepts(self) -> bool:
        """Would DeepSpeed's hjson loader read it? It refuses duplicate keys."""
        return not self.problems and not self.duplicates


if TYPE_CHECKING:  # typing only: the reader's record is one, and nothing asks at run time

    class DeepSpeedSettings(Protocol):
        """A DeepSpeed config as rules, fixers and the cost model read it (plint.layout.LaunchExtras.ds_config; the
        reader's plint.reading.sources.deepspeed_config.DeepSpeedConfig is one): its path, its key tree with spans,
        and the settings the reader normalises, each a Value with DeepSpeed's default where the config is silent."""

        path: str
        document: JsonDocument
        train_batch_size: Value
        train_micro_batch_size_per_gpu: Value
        gradient_accumulation_steps: Value
        zero_stage: Value
        fp16_enabled: Value
        bf16_enabled: Value
        gradient_clipping: Value
        offload_optimizer: Value
        offload_param: Value
        sequence_parallel_size: Value
        pipeline_stages: Value
        optimizer_type: Value
        overlap_comm: Value

        @property
        def has_deepspeed_marker(self) -> bool: ...

        @property
        def problems(self) -> list[Problem]: ...

        def value(self, *keys: str, absent: Any = None) -> Value:
            """Any setting by its path of keys, as written; `absent` (origin "default") when the config does not set it."""
            ...
