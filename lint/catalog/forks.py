"""Which known Megatron forks define a flag: the shipped Megatron-DeepSpeed catalogs and the option lists
of other widely used forks (schemas/megatron_fork_flags.json, built by scripts/build_fork_flags.py from
their public parsers). Used to say, when plint only assumed the release, that a flag is some fork's own."""

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
