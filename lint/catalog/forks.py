"""Which known Megatron forks (and, for a flag's choices, Megatron-LM releases) define a flag: the shipped
Megatron-DeepSpeed catalogs and the option lists of other widely used forks (schemas/megatron_fork_flags.json,
built by scripts/build_fork_flags.py from their public parsers). Used to say, when plint only assumed the release,
that a flag, or a value among a flag's choices, is some fork's own or an earlier release's."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _fork_flags() -> dict[str, frozenset[str]]:
    from plint.catalog.flags import load_flag_catalog, release_label, releases, release_info
    from plint.schemas import read_json

    out = {name: frozenset(entry["flags"]) for name, entry in read_json("megatron_fork_flags.json").items()}
    for release in releases():
        if (release_info(release) or {}).get("flavour") == "megatron-deepspeed":
            out[release_label(release)] = frozenset(load_flag_catalog(release).options())
    return out


def forks_defining(option: str) -> list[str]:
    """The known forks whose parser accepts `option`, by name, sorted."""
    return sorted(name for name, flags in _fork_flags().items() if option in flags)


@lru_cache(maxsize=1)
def _fork_choices() -> dict[str, dict[str, frozenset[str]]]:
    from plint.catalog.flags import load_flag_catalog, release_label, releases, release_info
    from plint.schemas import read_json

    out = {
        name: {o: frozenset(c) for o, c in entry.get("choices", {}).items()}
        for name, entry in read_json("megatron_fork_flags.json").items()
    }
    # Megatron-LM's own releases too: a value an earlier release accepted (--moe-token-dispatcher-type
    # alltoall_seq, 0.10 to 0.12) is valid for a launch written against it
    for release in releases():
        if (release_info(release) or {}).get("flavour") in ("megatron-deepspeed", "megatron"):
            catalog = load_flag_catalog(release)
            out[release_label(release)] = {
                o: frozenset(spec.choices)
                for o in catalog.options()
                if (spec := catalog.lookup(o)) is not None and spec.choices
            }
    return out


def forks_accepting(option: str, value: str) -> list[str]:
    """The known forks and Megatron-LM releases whose parser lists `value` among the choices of `option`, by
    name, in the order they are known (the releases oldest first)."""
    return [name for name, choices in _fork_choices().items() if value in choices.get(option, ())]
