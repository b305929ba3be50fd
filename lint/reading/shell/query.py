"""`yq` and `jq` reading one value of a YAML or JSON file plint knows: `num_layers=$(yq -e '.num_layers' config.yaml)`,
`MBS=$(jq -r .train_micro_batch_size_per_gpu ds_config.json)`. Only a path of plain keys (`.a.b`) to a scalar is
read; what the implementations print differently is left to run time:
- a float (jq prints JSON's shortest form, mikefarah's yq the YAML text as written: `3.0e-4` or `0.0003`);
- a string without -r from jq and kislyuk's yq (quoted) or mikefarah's yq (bare);
- a YAML mapping that repeats a key (PyYAML, under kislyuk's yq, keeps the last; go-yaml, under mikefarah's,
  refuses the file).
Integers, booleans, null and, with -r, strings print alike in all three."""

from __future__ import annotations

import json
import re

import yaml

from plint.reading.shell.model import MappedText, Piece, Word

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

_PATH = re.compile(r"\.(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)?")
_FLAGS = frozenset(("-r", "-e", "-er", "-re", "--raw-output", "--exit-status"))
MAX_QUERY_BYTES = 1024 * 1024  # a config a script queries is small; more is not parsed


def run_query(
    name: str, args: list[Word], stdin: MappedText | None, file_text: Callable[[Word], MappedText | None]
) -> MappedText | None:
    """What `yq`/`jq ARGS` prints, or None where plint cannot tell."""
    texts = [w.text for w in args]
    if any(t is None for t in texts):
        return None
    flags = [t for t in texts if t is not None and t.startswith("-")]
    operands = [(t, w) for t, w in zip(texts, args) if t is not None and not t.startswith("-")]
    if any(f not in _FLAGS for f in flags) or not 1 <= len(operands) <= 2 or not _PATH.fullmatch(operands[0][0]):
        return None
    content = file_text(operands[1][1]) if len(operands) == 2 else stdin
    if content is None or any(not p.known for p in content.pieces):
        return None
    text = content.render()
    if len(text) > MAX_QUERY_BYTES:
        return None
    raw = any(f in ("-r", "-er", "-re", "--raw-output") for f in flags)
    if name == "jq":
        printed, where = _from_json(text, operands[0][0], raw), None
    else:
        printed, where = _from_yaml(text, operands[0][0], raw)
    if printed is None:
        return None
    origin = Word(tuple(content.pieces)).origin  # the least certain of its input's
    span = content.locate(*where) if where is not None else None  # the scalar in the YAML file
    return MappedText([Piece(printed, span, origin if span is not None or origin != "literal" else "derived"),
                       Piece("\n", None)])  # fmt: skip


def _keys(path: str) -> list[str]:
    return path[1:].split(".") if path != "." else []


def _from_json(text: str, path: str, raw: bool) -> str | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    for key in _keys(path):
        if not isinstance(data, dict):
            return None
        data = data.get(key)  # a missing key: null
    if data is None or isinstance(data, bool):
        return json.dumps(data)
    if isinstance(data, int) or (isinstance(data, str) and raw):
        return str(data)
    return None


_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)")
# a plain scalar as every implementation prints it: (its YAML 1.1 tag, the text that alone is read alike)
_ALIKE = {"tag:yaml.org,2002:int": _DECIMAL, "tag:yaml.org,2002:bool": re.compile("true|false")}


def _from_yaml(text: str, path: str, raw: bool) -> tuple[str | None, tuple[int, int] | None]:
    """What yq prints for `path`, and where the scalar is written in `text`."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None, None
    for key in _keys(path):
        if not isinstance(node, yaml.MappingNode):
            return None, None
        found = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key]
        if len(found) > 1:
            return None, None  # a repeated key: the last (PyYAML), or the file refused (go-yaml)
        if not found:
            return "null", None
        node = found[0]
    if not isinstance(node, yaml.ScalarNode):
        return None, None
    where = (node.start_mark.index, node.end_mark.index)
    if node.tag == "tag:yaml.org,2002:null":
        return ("null", where) if node.value == "null" else (None, None)
    alike = _ALIKE.get(node.tag)
    if alike is not None:
        return (node.value, where) if alike.fullmatch(node.value) else (None, None)
    if node.tag == "tag:yaml.org,2002:str" and raw:
        return node.value, where
    return None, None
