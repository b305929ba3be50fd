"""Hydra / OmegaConf dotlist overrides on a command line (`key.path=value`, `+key=value`, `--config-name NAME`), as the
RL frameworks' drivers take them (verl, SkyRL), and the values they give with each framework's defaults."""

from __future__ import annotations

from plint.reading.shell.model import Word
from plint.reading.sources.arglist import passes_script_arguments
from plint.reading.sources.yaml_config import shown
from plint.values import Value, default, from_word, parse_int, unresolved

# Megatron-Core's parallel sizes as its config fields name them (ModelParallelConfig), the keys the frameworks' own
# configs use for them too (ChatLearn, NeMo RL, ROLL), and the layout fact each gives
MEGATRON_CORE_SIZES = {
    "tensor_model_parallel_size": "parallel.tp",
    "pipeline_model_parallel_size": "parallel.pp",
    "context_parallel_size": "parallel.cp",
    "expert_model_parallel_size": "parallel.ep",
    "expert_tensor_parallel_size": "parallel.etp",
}


class Overrides:
    """The Hydra overrides among a command's words, the config they apply to, and words of unknown text (which could
    be any override)."""

    def __init__(self, words: list[Word]):
        self.values: dict[str, Word] = {}
        self.unknown: list[Word] = []
        self.config_name: str | None = None
        i = 0
        while i < len(words):
            word, text = words[i], words[i].text
            written = word.known_prefix()
            if text is None and "=" in written and not written.startswith("-"):  # `key=$VALUE`: its value unknown
                key = written.partition("=")[0]
                self.values[key.lstrip("+")] = word.after(len(key) + 1)
            elif text is None:
                if not passes_script_arguments(word):  # `"$@"`: none, the script run as written
                    self.unknown.append(word)
            elif text in ("--config-name", "-cn") and i + 1 < len(words):
                self.config_name = words[i + 1].text
                i += 1
            elif text.startswith("--config-name="):
                self.config_name = text.partition("=")[2]
            elif not text.startswith("-") and "=" in text:
                key = text.partition("=")[0].lstrip("+")
                self.values[key] = word.after(len(text.partition("=")[0]) + 1)
            i += 1

    def text(self, key: str) -> str | None:
        word = self.values.get(key)
        return word.text if word is not None else None


def given(found: Overrides, key: str) -> Value | None:
    word = found.values.get(key)
    if word is None:
        return None
    value = from_word(word, str, key)
    return Value(None, value.span, value.origin, f"{key}=null") if value.value in ("null", "~") else value


def absent(found: Overrides, key: str, fallback, where: str) -> Value:
    if found.unknown:
        # one note for every key it hides, so that PL002 says it once
        return unresolved(f"`{found.unknown[0].display()}` among the overrides could set it", found.unknown[0].site)
    return default(fallback, f"{key} not given: {where}")


def int_value(found: Overrides, key: str, fallback: int | None, where: str) -> Value:
    found_value = given(found, key)
    if found_value is None:
        return absent(found, key, fallback, where)
    if not found_value.known:
        return found_value
    return from_word(found.values[key], parse_int, key)


def bool_value(found: Overrides, key: str, fallback: bool, where: str) -> Value:
    found_value = given(found, key)
    if found_value is None:
        return absent(found, key, fallback, where)
    text = str(found_value.value).lower() if found_value.known else None
    if text in ("true", "false"):
        return Value(text == "true", found_value.span, found_value.origin, f"{key}={found_value.value}")
    return Value(None, found_value.span, "unresolved", f"{key}={found_value.value}: not a boolean plint can read")


def samples_a_step(prompts: Value, samples: Value, names: str) -> Value:
    """The samples of one optimizer step of an RL trainer: its mini-batch of prompts times the samples of each;
    `names` says which keys, as "PROMPTS prompts of SAMPLES samples"."""
    if not (prompts.known and samples.known):
        return unresolved(f"{names}: one of them is not known")
    note = f"{prompts.value} x {samples.value}: {names} a step"
    return Value(prompts.value * samples.value, prompts.span or samples.span, "derived", note)


def scalar(text: str):
    """An override's text as a YAML loader reads it: a number, a boolean, null, or text."""
    import yaml  # only for the frameworks whose overrides are YAML: not on the path of every check

    try:
        loaded = yaml.safe_load(text) if len(text) < 256 else text
    except (yaml.YAMLError, ValueError, RecursionError):  # `x=@y`, `x=[1,`: text no YAML reads, taken as written
        return text
    return loaded if isinstance(loaded, (int, float, bool, str)) or loaded is None else text


def option_names(framework: str, names: dict[str, str]) -> Value:
    """The trainer.option_names fact: how the framework takes each Megatron-LM flag a rule may name."""
    return Value(names, None, "derived", f"{framework}'s own keys for Megatron-LM's flags")


def override_of(found: Overrides, key: str) -> Value | None:
    """What the overrides say of `key`: its override's value read as YAML reads it, unknown when an override of
    unknown text could set it, else None (the config's own value stands)."""
    word = found.values.get(key)
    if word is not None:
        if word.text is None:
            return Value(None, word.value_span, "unresolved", f"{key}: its value is not known statically")
        return Value(scalar(word.text), word.value_span, word.origin, f"{key}={word.text}")
    if found.unknown:
        unknown = found.unknown[0]
        return unresolved(f"`{unknown.display()}` among the overrides could set {key}", unknown.site)
    return None


class ConfigSettings:
    """A framework's YAML config under the launch's dotlist overrides (ChatLearn's template, a NeMo RL recipe): `get`
    gives a Value for a dotted key, the override's, else the config's, else `fallback` as the framework's default;
    `number` and `flag` ask that it be a whole number or a boolean. An unknown word among the overrides could set any
    key, and a `${...}` interpolation is not resolved."""

    def __init__(self, config: dict, source: str, words: list[Word], framework: str, missing: str = ""):
        self.config, self.source, self.framework = config, source, framework
        self.missing = missing  # what else the config was looked for in (" or its defaults")
        self.found = Overrides(words)

    def get(self, key: str, fallback=None) -> Value:
        overridden = override_of(self.found, key)
        if overridden is not None:
            return overridden
        value: object = self.config
        for part in key.split("."):
            if not isinstance(value, dict) or part not in value:
                if fallback is not None:
                    return Value(
                        fallback, None, "default", f"{key} is not in {self.source}: {self.framework}'s default"
                    )
                return unresolved(f"{key} is not in {self.source}{self.missing}")
            value = value[part]
        if isinstance(value, str) and "${" in value:
            return unresolved(f"{key} is {value} in {self.source}, an interpolation plint does not resolve")
        return Value(value, None, "derived", f"{key}: {shown(value)} in {self.source}")

    def number(self, key: str, fallback: int | None = None) -> Value:
        value = self.get(key, fallback)
        if value.value is None or (isinstance(value.value, int) and not isinstance(value.value, bool)):
            return value
        return Value(None, value.span, "unresolved", f"{value.note}: not a whole number")

    def flag(self, key: str, fallback: bool | None = None) -> Value:
        value = self.get(key, fallback)
        if value.value is None or isinstance(value.value, bool):
            return value
        return Value(None, value.span, "unresolved", f"{value.note}: not a boolean")
