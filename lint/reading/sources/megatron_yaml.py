"""Megatron-LM's `--yaml-cfg FILE`: the trainer's whole argument namespace from a YAML file.

megatron/training/arguments.py parse_args (Megatron-LM d98e8a64dd) returns yaml_arguments.load_yaml(args.yaml_cfg)
when the option is given: the YAML, nested as its sections (`language_model:`, `model_parallel:`) and top-level keys,
becomes the namespace, and "argparse arguments will be ignored" (load_yaml's warning). So the command line's other
flags set nothing, and every layout value is the YAML's. plint reads the YAML as the command line it stands for:
each key whose name is an option's (`tensor_model_parallel_size` is `--tensor-model-parallel-size`), or one of the
few TransformerConfig names below, becomes that option with the value written in the YAML (its span), so the
reader's flag semantics and defaults apply. A YAML plint cannot read leaves the whole list unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from plint.bounds import MAX_ARRAY_ITEMS
from plint.reading.shell.model import Piece, Word
from plint.record import record
from plint.values import Value

if TYPE_CHECKING:
    from plint.catalog.flags import FlagCatalog
    from plint.reading.sources.megatron_args import TrainerArgs
    from plint.source import SourceFile, Span

YAML_OPTION = "--yaml-cfg"

# TransformerConfig's names in the YAML (examples/gpt3/gpt_config.yaml) where the option's differ, and
# yaml_arguments.validate_yaml's reading of them: `activation_func: swiglu` is --swiglu, `squaredrelu` --squared-relu
_RENAMED = {"num_moe_experts": "--num-experts", "layernorm_epsilon": "--norm-epsilon", "fp8": "--fp8-format"}
_ACTIVATIONS = {"swiglu": "--swiglu", "squaredrelu": "--squared-relu"}
# what one option's value can be: a scalar or a short list of scalars (a YAML's aliases can fan a list out to
# billions of items, so nothing else is ever rendered as text)
_SCALARS = (str, int, float, bool)


@record
class YamlArguments:
    """The command line a `--yaml-cfg` file stands for: its words, and the note its values carry (None where the
    file could not be read: the words are then one unknown that could hold any flag)."""

    words: list[Word]
    path: str | None = None
    note: str | None = None

    def annotate(self, facts: dict[str, Value]) -> None:
        """Say on each value read from the YAML where it came from (and, found above the script, that it is a
        guess where the script is run from)."""
        if self.path is None or self.note is None:
            return
        for key, value in facts.items():
            if value.span is not None and value.span.path == self.path and not value.note:
                facts[key] = Value(value.value, value.span, value.origin, self.note)


def yaml_cfg_words(
    args: TrainerArgs, catalog: FlagCatalog, find: Callable[[str], tuple[SourceFile | None, str | None]]
) -> YamlArguments | None:
    """The command line the `--yaml-cfg` file stands for, or None without one. `find` looks a file up as the
    script would see it: (its source or None, a note when it was found above the script)."""
    use = args.get(YAML_OPTION) if catalog.lookup(YAML_OPTION) is not None else None
    if use is None or use.value is None:
        return None
    where = use.value.value_span or use.flag_word.value_span
    if use.value.text is None:
        return _unread(f"{YAML_OPTION} {use.value.display()} names a file known only at run time", where)
    source, assumed = find(use.value.text)
    if source is None:
        return _unread(f"{YAML_OPTION} {use.value.text}: plint cannot read that file", where)
    from plint.reading.sources.neox_config import nested, read_config_file

    entries, problem = read_config_file(source)
    if problem is not None:
        return _unread(f"{YAML_OPTION} {use.value.text}: not a YAML mapping Megatron can load", where)
    words: list[Word] = []
    for entry in entries.values():
        sections = [nested(entry, k) for k in entry.value] if isinstance(entry.value, dict) else [entry]
        for item in sections:
            if item is not None:
                words += _option_words(item.key, item.value, item.span, catalog, "assumed" if assumed else "literal")
    note = f"from {source.path} ({YAML_OPTION}: Megatron takes its arguments from the YAML, not the command line)"
    return YamlArguments(words, source.path, f"{note}; {assumed}" if assumed else note)


def _option_words(key: str, value: Any, span: Span | None, catalog: FlagCatalog, origin: str) -> list[Word]:
    """The words of one YAML key as the option it stands for; none for a key no option of this release takes,
    a null, or a false switch."""
    if key == "activation_func":
        option = _ACTIVATIONS.get(value) if isinstance(value, str) else None
        return [_option(option, span, origin)] if option and catalog.lookup(option) else []
    option = _RENAMED.get(key, "--" + key.replace("_", "-"))
    spec = catalog.lookup(option)
    if spec is None or value is None or isinstance(value, dict):
        return []
    if spec.takes_value is False:
        return [_option(option, span, origin)] if value is True and spec.kind == "store_true" else []
    values = value if isinstance(value, list) else [value]
    if len(values) > MAX_ARRAY_ITEMS or not all(isinstance(v, _SCALARS) for v in values):
        why = f"{key} in {YAML_OPTION}: not a value or list of values plint reads"
        return [_option(option, span, origin), Word((Piece(None, span, "unresolved", reason=why, name=key),), span)]
    return [_option(option, span, origin), *(Word.of(_text(v), span, origin) for v in values)]


def _option(option: str, span: Span | None, origin: str) -> Word:
    """An option the YAML key stands for: located at the key's value (what a finding points at), but written
    nowhere (no site), so that no fix edits the YAML as if the option's characters were there."""
    return Word((Piece(option, span, origin),), None)


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _unread(reason: str, span: Span | None) -> YamlArguments:
    why = f"{reason}; Megatron takes every argument from it and ignores the command line's ({YAML_OPTION})"
    return YamlArguments([Word((Piece(None, span, "unresolved", reason=why, name="yaml-cfg"),), span)])
