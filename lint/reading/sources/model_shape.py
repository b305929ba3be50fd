"""The model a fine-tuning launch trains, from its name or its config.json, as the layout's model fields.

A Hugging Face script names its model (`--model_name_or_path meta-llama/Llama-3.1-8B`, a local folder); the
shape comes from, in order: `[tool.plint] model` (a hub name, or a config.json or a folder holding one,
relative to the config file), a `config.json` in the folder the launch names when that folder lies inside the
checked tree (read as JSON, never run), then plint's catalog of public architectures (plint.catalog.models). An
unknown name leaves the shape unresolved, saying how to supply it (PL002).
"""

from __future__ import annotations

import json
import os
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from plint.reading.scoped import scoped
from plint.values import Value, unresolved
from plint.root import tree_root
from plint.source import probe, read_bytes

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

# [tool.plint] model of the check under way (plint.checking.check sets it around each file's reading)
_CONFIGURED: ContextVar[str | None] = ContextVar("plint_configured_model", default=None)
_MAX_CONFIG_BYTES = 256 * 1024  # a model's config.json is a few KiB

SUPPLY_HINT = (
    'give its shape with [tool.plint] model = "<hub name>" or "<path to its config.json>", '
    "or keep its config.json in the checked tree"
)


# the model fields a trainer that builds its model from a checkpoint's config (Megatron-SWIFT, verl) takes from it
CHECKPOINT_FIELDS = (
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "num_query_groups",
    "num_experts",
    "moe_topk",
    "seq_length",
)


def checkpoint_shape(trainer: str) -> dict[str, Value]:
    """model.* facts of a launch whose trainer takes the model's shape from its checkpoint: `[tool.plint] model`'s,
    else each unknown."""
    if _CONFIGURED.get() is not None:
        return model_facts(None, None)
    why = (
        f"{trainer} builds the model from its checkpoint's config: its shape is not in the launch; give it with "
        '[tool.plint] model = "<hub name>" or "<path to its config.json>"'
    )
    return {f"model.{name}": unresolved(why) for name in CHECKPOINT_FIELDS}


def configured_model(model: str | None) -> AbstractContextManager[None]:
    return scoped(_CONFIGURED, model)


def _config_json(path: str) -> dict | None:
    """A config.json (or the one in a folder) read through the root; None when absent, outside or not JSON."""

    candidate = os.path.join(path, "config.json") if probe(Path(path).is_dir) else path
    if not candidate.endswith(".json") or not probe(Path(candidate).is_file):
        return None
    try:
        data = read_bytes(candidate)
        if len(data) > _MAX_CONFIG_BYTES:
            return None
        config = json.loads(data.decode("utf-8"))
    except (OSError, ValueError):  # outside the root (Refused), not UTF-8, not JSON
        return None
    return config if isinstance(config, dict) else None


def _local_config(name: str, base: str) -> tuple[dict, str] | None:
    """The config.json of a local model folder the launch names, relative to the launch file's folder or, as a
    script run from the repository root would read it, to a folder above it inside the tree."""
    root = tree_root(os.path.join(base, "_"))
    here = base
    for _ in range(8):
        path = name if os.path.isabs(name) else os.path.join(here, name)
        config = _config_json(path)
        if config is not None:
            return config, os.path.relpath(path, root)
        if here == root or os.path.dirname(here) == here:
            break
        here = os.path.dirname(here)
    return None


def _facts(shape: dict, span, origin: str, note: str) -> dict[str, Value]:
    # transformers builds the embedding at vocab_size itself: no Megatron padding to a multiple of 128
    return {
        f"model.{key}": Value(value, span, origin, note)
        for key, value in {**shape, "make_vocab_size_divisible_by": 1}.items()
    }


def model_facts(name: Value | None, launch_file: str | None) -> dict[str, Value]:
    """model.* facts for a launch whose model is `name` (the word of --model_name_or_path), or {}."""
    from plint.catalog.models import lookup_model, shape_from_config

    configured = _CONFIGURED.get()
    if configured is not None:
        config = _config_json(configured) if os.path.isabs(configured) else None
        if config is not None and (shape := shape_from_config(config)) is not None:
            return _facts(shape, None, "literal", f"[tool.plint] model: {configured}")
        found = lookup_model(configured)
        if found is not None:
            return _facts(
                found.shape,
                None,
                "derived",
                f"[tool.plint] model {configured!r}: the {found.name} "
                f"architecture (plint's model catalog, from {found.hub})",
            )
        return {
            "model.num_layers": unresolved(
                f"[tool.plint] model {configured!r} is neither a config.json plint "
                f"can read nor a model in its catalog; {SUPPLY_HINT}"
            )
        }
    if name is None:
        return {}
    if not name.known:
        return {
            "model.num_layers": unresolved(
                f"the model's shape: its name is not known ({name.note}); {SUPPLY_HINT}", name.span
            )
        }
    text = str(name.value)
    if launch_file is not None:
        local = _local_config(text, os.path.dirname(os.path.realpath(launch_file)) or ".")
        if local is not None and (shape := shape_from_config(local[0])) is not None:
            return _facts(shape, name.span, "literal", f"{local[1]}: the model's config.json")
    found = lookup_model(text)
    if found is not None:
        read = f" (a size folder in its family's, read as {found.read_as})" if found.read_as else ""
        facts = _facts(
            found.shape,
            name.span,
            "derived",
            f"{text}{read}: the {found.name} architecture (plint's model catalog: {found.hub}'s config.json)",
        )
        if found.unmodelled:  # the cost model counts the language model only (plint.cost.layout_estimate)
            facts["catalog.unmodelled"] = Value(
                found.unmodelled, name.span, "derived", f"{found.hub} (plint's model catalog)"
            )
        return facts
    return {
        "model.num_layers": unresolved(f"the model {text!r} is not in plint's model catalog; {SUPPLY_HINT}", name.span)
    }
