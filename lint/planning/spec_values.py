"""What a generate spec may hold before any of it is written into a script.

A spec comes from a JSON file (`--layout`, `--plan`), perhaps one a pull request brings, and its values are
rendered into a shell script unquoted. So every count must be a whole number and every text a word no shell
would split, expand or end a comment with; anything else is refused with the key that holds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# a word a shell takes literally, even unquoted: no blank, newline, quote, $, `, ;, &, |, <, >, glob or brace
SAFE_TEXT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+:=@-]{0,127}")
# a --pipeline-model-parallel-layout string, written inside double quotes: Megatron's grammar (stage letters,
# counts, '|' between stages, '(...)*n' repeats, ',' in lists; megatron/core/transformer/
# pipeline_parallel_layer_layout.py) and nothing a shell expands inside double quotes ($, `, \, ")
LAYOUT_TEXT = re.compile(r"[A-Za-z0-9|()*,]{1,4096}")
# keys whose value is a count (whole, at least 1 where given) wherever they appear
COUNTS = frozenset(
    {
        "tp",
        "pp",
        "vpp",
        "cp",
        "ep",
        "etp",
        "dp",
        "dp_outer",
        "micro",
        "global",
        "grad_accum",
        "num_microbatches",
        "nnodes",
        "gpus_per_node",
        "world_size",
        "nvlink_domain",
        "num_layers",
        "hidden_size",
        "ffn_hidden_size",
        "num_attention_heads",
        "num_query_groups",
        "kv_channels",
        "seq_length",
        "vocab_size",
        "num_experts",
        "moe_topk",
        "moe_ffn_hidden_size",
        "max_position_embeddings",
    }
)
WHOLE = frozenset({"moe_shared_expert_size", "moe_first_dense_layers", "zero_stage"})  # whole, may be 0
NUMBERS = frozenset(
    {
        "rotary_base",
        "norm_epsilon",
        "attention_dropout",
        "hidden_dropout",
        "gpu_memory_gib",
        "params",
        "factor",
        "low_freq_factor",
        "high_freq_factor",
        "original_max_position_embeddings",
    }
)


class SpecValueError(ValueError):
    """A spec value that must not be written into a script."""


# sections whose text is only compared, never written (the model's names: norm, position embedding, source)
COMPARED_ONLY = frozenset({"model", "architecture"})


def check_values(doc: dict, sections: tuple[str, ...]) -> None:
    """Raise SpecValueError for the first value under `sections` of `doc` a script must not hold."""
    for section in sections:
        value = doc.get(section)
        if value is not None:
            for path, leaf in _leaves(value, section):
                _check_leaf(path, leaf, written=section not in COMPARED_ONLY)


def _leaves(value: object, path: str) -> Iterator[tuple[str, object]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}")
    else:
        yield path, value


def _check_leaf(path: str, value: object, written: bool) -> None:
    key = path.rsplit(".", 1)[-1]
    if value is None:
        return
    if key in COUNTS or key in WHOLE:
        least = 1 if key in COUNTS else 0
        if type(value) is not int or value < least:
            raise SpecValueError(f"{path} is {value!r}: a whole number of at least {least} is needed")
    elif key in NUMBERS:
        if type(value) not in (int, float):
            raise SpecValueError(f"{path} is {value!r}: a number is needed")
    elif isinstance(value, str) and path == "pipeline.layout":
        if not LAYOUT_TEXT.fullmatch(value):
            raise SpecValueError(f"{path} is {value!r}: not a pipeline layout of Megatron's grammar")
    elif isinstance(value, str):
        if written and not SAFE_TEXT.fullmatch(value):
            raise SpecValueError(
                f"{path} is {value!r}: only letters, digits and . _ / + : = @ - are written into "
                "a launch (no blank, quote or character a shell would expand)"
            )
    elif isinstance(value, list) and all(type(item) is int and item >= 0 for item in value):
        return  # per-stage counts (pipeline.stage_layers): numbers only
    elif written and not isinstance(value, (bool, int, float)):
        raise SpecValueError(f"{path} is {value!r}: not a value a launch can hold")
