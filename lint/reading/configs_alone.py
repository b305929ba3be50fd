"""Config files checked on their own, with no launch: a DeepSpeed JSON config, and a GPT-NeoX YAML config
named on the command line (the file deepy.py merges, which a pre-commit hook hands plint when it changes).

Each yields the layout of what the file states, its rules run on it: no launcher, no world size (the launch
and its hostfile decide those), so every field that needs one stays unknown.
"""

from __future__ import annotations

import re

from plint.layout import Layout
from plint.reading.shell.model import MappedText, Problem, Word
from plint.record import field, record
from plint.source import SourceFile

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.reading.sources.deepspeed_config import DeepSpeedConfig


@record
class ConfigReading:
    """What a config read alone gives the file's reading."""

    problems: list[Problem] = field(default_factory=list)
    layouts: list[Layout] = field(default_factory=list)
    ds_config: DeepSpeedConfig | None = None


def read_json_alone(source: SourceFile) -> ConfigReading:
    """A JSON file: a DeepSpeed config's layout; a GPT-NeoX config's, as a YAML one; a template a script fills,
    said to be one; anything else (a tokenizer's vocabulary) no layout."""
    from plint.reading.normalise import build_config_layout
    from plint.reading.sources.deepspeed_config import is_deepspeed_document, is_neox_config, read_deepspeed_config
    from plint.reading.sources.jsonpos import QUOTELESS, JObject

    cfg = read_deepspeed_config(MappedText.from_source(source), source.path)
    out = ConfigReading(ds_config=cfg)
    problems = list(getattr(cfg.document, "problems", []))
    quoteless = [span for what, span in getattr(cfg.document, "leniencies", []) if what == QUOTELESS]
    slots = template_slots(source) if problems or quoteless else None  # hjson reads a bare slot as a string
    if slots:
        # a template a script fills (`sed "s/ZERO_STAGE/$Z/"`, `envsubst < t.json > ds.json`): invalid JSON
        # by design until then; its values are read through the script that fills it
        out.problems.append(
            Problem(
                "unresolved",
                f"{source.path} is a template: {', '.join(slots)} "
                f"{'is' if len(slots) == 1 else 'are'} filled by the script that writes the real config; check "
                "that script to read the values",
                problems[0].span if problems else quoteless[0],
            )
        )
        out.ds_config = None  # its values are the script's to fill: no rule judges the template itself
        return out
    root = cfg.document.root
    if not problems and isinstance(root, JObject) and is_neox_config(root.keys()):
        return read_yaml_alone(source)  # GPT-NeoX loads its .json configs with yaml.load too (from_ymls)
    out.problems.extend(problems)
    if not any(p.kind == "syntax" for p in problems) and is_deepspeed_document(root):
        layout = build_config_layout(cfg)  # what the config states, its rules run on it (no launcher)
        out.problems.extend(layout.extras.problems)
        layout.extras.problems = []
        out.layouts.append(layout)
    return out


def _names_neox_key(text: str) -> bool:
    """Whether GPT-NeoX keys (NEOX_MARKERS_NEEDED of NEOX_MARKERS, spelt with `-` or `_`) start lines
    (`pipe-parallel-size: 2`, `"num_layers": 24,`): a YAML file that names them is taken for a NeoX config even when
    YAML cannot load it, so that the error is said."""
    from plint.reading.sources.deepspeed_config import NEOX_MARKERS, NEOX_MARKERS_NEEDED

    keys = "|".join(key.replace("_", "[-_]") for key in sorted(NEOX_MARKERS))
    named = {m.group(1).replace("-", "_") for m in re.finditer(rf"""^[ \t]*["']?({keys})["']?[ \t]*:""", text, re.M)}
    return len(named) >= NEOX_MARKERS_NEEDED


def read_yaml_alone(source: SourceFile) -> ConfigReading:
    """A YAML file: a GPT-NeoX config's layout (its keys merged as deepy.py merges one file, NeoX's defaults for
    the rest); a file NeoX could not load is PL001 when it names a NeoX key; any other YAML (a CI workflow, a
    Hydra config) no layout, as a JSON file that is no DeepSpeed config."""
    from plint.reading.normalise import build_neox_config_layout
    from plint.reading.sources.deepspeed_config import is_neox_config
    from plint.reading.sources.neox_config import merge_configs, read_config_file
    from plint.reading.sources.neox_values import neox_facts

    out = ConfigReading()
    entries, problem = read_config_file(source)
    if problem is not None:
        if _names_neox_key(source.text):
            out.problems.append(problem)
        return out
    if not is_neox_config(entries):
        return out
    # merged as deepy.py merges its one file: keys stored with `_`, a key repeated in another spelling refused
    config = merge_configs([(Word.of(source.path), source.path)], lambda name: (source, None), lambda name: None)
    out.problems.extend(config.problems)
    out.layouts.append(build_neox_config_layout(source.path, neox_facts(config)))
    return out


# A slot a script fills: `${NAME}` / `$NAME` (envsubst, sed) or an ALL_CAPS placeholder (sed)
_SLOT = r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\b[A-Z][A-Z0-9_]{2,}\b"


def template_slots(source: SourceFile) -> list[str]:
    """The slots of a JSON template, when every token that makes the JSON invalid is one: the text
    parses once each slot stands for a number. Empty for JSON that is broken some other way."""
    import json

    text = source.data.decode("utf-8", "replace")
    slots = list(dict.fromkeys(re.findall(_SLOT, text)))
    if not slots or {"TRUE", "FALSE", "NULL", "NAN"} & set(slots):
        return []  # no slot, or a mistyped literal rather than one
    try:
        json.loads(re.sub(r",\s*([}\]])", r"\1", re.sub(_SLOT, "0", text)))  # hjson allows trailing commas
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json's recursion allows
        return []
    return [s for s in slots if s.startswith("$") or not _inside_string(text, s)] if slots else []


def _inside_string(text: str, word: str) -> bool:
    """Whether every occurrence of an ALL_CAPS word lies inside a JSON string (a value, not a slot)."""

    return all(text.count('"', 0, m.start()) % 2 for m in re.finditer(rf"\b{word}\b", text))
