"""A YAML config a launch names (accelerate's --config_file, ChatLearn's template, ROLL's pipeline config, a NeMo RL
recipe), read within bounds: a stranger's small file must not make plint parse, print or walk without end."""

from __future__ import annotations

MAX_CONFIG_BYTES = 256 * 1024  # a launcher's or framework's YAML config: larger is no hand-written config


def load_mapping(text: str) -> dict | None:
    """The config as a mapping; None when it is too large, not YAML, nested deeper than the parser's recursion allows,
    holds a number Python refuses to build (past 4,300 digits), or is no mapping."""
    import yaml  # only for the launches whose configs are YAML: not on the path of every check

    if len(text) > MAX_CONFIG_BYTES:
        return None
    try:
        loaded = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def plain(value):
    """A config value if it is a scalar (text, number, boolean), else None. YAML aliases make a small file's list or
    mapping a tree of millions of nodes (`a: &a [x, x]`, `b: &b [*a, *a]`, ...), which str() or a walk never ends on,
    and no setting plint reads is one."""
    return value if isinstance(value, (str, int, float, bool)) else None


def shown(value) -> str:
    """A config value as a note shows it: a scalar as written (at most 80 characters), a mapping or a list by its
    kind."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."
