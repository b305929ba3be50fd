"""GPT-NeoX config files as deepy.py loads them (megatron/neox_arguments/arguments.py `from_ymls`; the module
docstring of plint.reading.sources.neox names what each part follows): each file's top-level keys with the
position of their values, and the files merged in order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plint.reading.shell.model import Problem, Word
from plint.record import field, record
from plint.source import SourceFile, Span

if TYPE_CHECKING:
    from collections.abc import Callable

    from plint.reading.loading import Unread


@record
class Entry:
    """One key of a NeoX config: its value and where the value is written."""

    key: str  # as written
    value: Any
    span: Span | None
    path: str
    node: Any = None  # the composed yaml node (nested keys are looked up in it)
    source: SourceFile | None = None
    assumed: str | None = None  # why the file's values are a guess (found above the script), else None


def _span(source: SourceFile, node) -> Span:
    """The span of a composed yaml node. pyyaml's marks count characters; a SourceFile spans bytes."""
    text = source.text
    start = len(text[: node.start_mark.index].encode("utf-8", "surrogateescape"))
    end = start + len(text[node.start_mark.index : node.end_mark.index].encode("utf-8", "surrogateescape"))
    return source.span(start, end)


def _construct(node) -> tuple[Any, bool]:
    """A node's python value as yaml's loader builds it, and whether it could be built (a python tag that
    FullLoader builds and the safe loader refuses is left unknown)."""
    import yaml

    try:
        return yaml.SafeLoader("").construct_object(node, deep=True), True
    except (yaml.YAMLError, TypeError, ValueError, RecursionError):
        return None, False


_PARSED: dict[tuple[str, str], tuple[dict[str, Entry], Problem | None]] = {}
_PARSED_KEPT = 64  # files whose parse is kept: a script launching deepy.py a thousand times reads its configs once


def read_config_file(source: SourceFile) -> tuple[dict[str, Entry], Problem | None]:
    """The top-level keys of one config file, last one winning where a key repeats (as yaml.load builds a
    dict); a Problem (PL001) when NeoX could not load it (from_ymls: not YAML, or not a mapping). Each call gets
    its own entries (a caller marks them assumed), parsed once per file text."""
    key = (source.path, source.text)
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_KEPT:
            _PARSED.clear()
        _PARSED[key] = _parse_config_file(source)
    entries, problem = _PARSED[key]
    return {
        name: Entry(e.key, e.value, e.span, e.path, e.node, e.source, e.assumed) for name, e in entries.items()
    }, problem


def _parse_config_file(source: SourceFile) -> tuple[dict[str, Entry], Problem | None]:
    import yaml

    try:
        node = yaml.compose(source.text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        span = None
        if mark is not None:
            start = len(source.text[: mark.index].encode("utf-8", "surrogateescape"))
            span = source.span(start, start)
        return {}, Problem(
            "syntax", f"{source.path}: GPT-NeoX cannot load this config (YAML: {exc.problem or exc})", span
        )
    except (yaml.YAMLError, RecursionError) as exc:
        return {}, Problem("syntax", f"{source.path}: GPT-NeoX cannot load this config (YAML: {exc})", None)
    if not isinstance(node, yaml.MappingNode):
        span = _span(source, node) if node is not None else source.span(0, 0)
        return {}, Problem(
            "syntax",
            f"{source.path}: GPT-NeoX cannot load this config: it is not a mapping of keys to values "
            "(from_ymls iterates conf.items())",
            span,
        )
    entries: dict[str, Entry] = {}
    for key_node, value_node in node.value:
        key, ok = _construct(key_node)
        if not ok or not isinstance(key, str):
            continue
        value, ok = _construct(value_node)
        entry = Entry(key, value if ok else UNBUILT, _span(source, value_node), source.path, value_node, source)
        entries.pop(key, None)  # a repeated key: yaml keeps the last value
        entries[key] = entry
    return entries, None


UNBUILT = object()  # a value the safe loader cannot build


def nested(entry: Entry, key: str) -> Entry | None:
    """A key of a mapping value (`zero_optimization: {stage: 1}`), with its own position."""
    import yaml

    if not isinstance(entry.node, yaml.MappingNode) or entry.source is None:
        return None
    found = None
    for key_node, value_node in entry.node.value:
        name, ok = _construct(key_node)
        if ok and name == key:
            value, built = _construct(value_node)
            found = Entry(
                key, value if built else UNBUILT, _span(entry.source, value_node), entry.path, value_node, entry.source
            )
            found.assumed = entry.assumed
    return found


@record
class NeoXConfig:
    """The merged config: key (with `_`) -> its entry, and what could not be read."""

    entries: dict[str, Entry] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # why a file's keys are unknown (then absent keys are too)
    files: list[str] = field(default_factory=list)  # the files read, in order
    unread_words: list[Word] = field(default_factory=list)  # the config words whose files were not read


def merge_configs(
    names: list[tuple[Word, str | None]],
    read_config: Callable[[str], tuple[SourceFile | None, str | None]],
    why_unread: Callable[[str], Unread | None],
) -> NeoXConfig:
    """The files merged as from_ymls merges them; a repeated key is its ValueError (PL001)."""
    merged = NeoXConfig()
    for word, name in names:
        source, assumed = read_config(name) if name is not None else (None, None)
        if name is None or (source is None and "${" in name):  # a part known only at run time, no tail of it here
            note = f"the GPT-NeoX config {name or word.display()} cannot be known statically: its keys are unknown"
            merged.unread.append(note)
            merged.unread_words.append(word)
            merged.problems.append(Problem("unresolved", note, word.site))
            continue
        if source is None:
            why = why_unread(name)  # a file that is there but not read is not said to be missing
            note = (
                why.say(f"the GPT-NeoX config {name}", "its keys are unknown")
                if why is not None
                else f"the GPT-NeoX config {name} is not in the repository (beside the script or in a folder "
                "above it): its keys are unknown (deepy.py stops with FileNotFoundError if nothing writes it first)"
            )
            merged.unread.append(note)
            merged.unread_words.append(word)
            merged.problems.append(Problem(why.kind if why is not None else "unresolved", note, word.site))
            continue
        entries, problem = read_config_file(source)
        if problem is not None:
            merged.unread.append(f"the GPT-NeoX config {name} cannot be loaded (PL001): its keys are unknown")
            merged.unread_words.append(word)
            merged.problems.append(problem)
            continue
        merged.files.append(source.path)
        for key, entry in entries.items():
            if key in merged.entries:  # compared as written: `train-iters` after `train_iters` replaces it
                merged.problems.append(
                    Problem(
                        "syntax",
                        f"{source.path}: the key {key!r} was already loaded from "
                        f'{merged.entries[key].path}: GPT-NeoX stops with "Conf file ... has the following '
                        'duplicate keys with previously loaded file" (arguments.py from_ymls)',
                        entry.span,
                    )
                )
            entry.assumed = assumed  # found where the script is assumed to run from: its values are assumed
            merged.entries[key.replace("-", "_")] = entry
    return merged
