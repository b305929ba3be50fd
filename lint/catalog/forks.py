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


@lru_cache(maxsize=1)
def _fork_parsers() -> dict[str, dict]:
    """The whole parser documents shipped for forks that spell Megatron's flags their own way
    (schemas/megatron_fork_parsers.json, built by scripts/build_fork_parsers.py)."""
    from plint.schemas import read_json

    return read_json("megatron_fork_parsers.json")


def fork_by_spelling(options: set[str]) -> str | None:
    """The fork whose own spelling of Megatron's flags the launch is written in (epfLLM/Megatron-LLM's
    `--tensor_model_parallel_size` for `--tensor-model-parallel-size`): the fork whose parser accepts most of the
    launch's options, and more of them than any shipped Megatron-LM or Megatron-DeepSpeed release does, one of them
    at least its own. None otherwise: a Megatron-LM launch with an underscore typo (`--micro_batch_size`) or an old
    release's spelling (`--local_rank`) stays a Megatron-LM launch, and PL501 names the typo; another trainer's
    script sharing a few option names with the fork (`--tokenizer_type`) is not the fork's."""
    if not any("_" in o for o in options):
        return None
    # most of the options first: it needs no release catalog, and settles most launches (one --local_rank)
    accepted = {name: options & _fork_options(name) for name in _fork_parsers()}
    accepted = {name: theirs for name, theirs in accepted.items() if len(theirs) > len(options) // 2}
    if not accepted:
        return None
    stock = options & _release_options()
    best, most = None, len(stock)
    for name, theirs in accepted.items():
        if len(theirs) > most and theirs - stock:
            best, most = name, len(theirs)
    return best


@lru_cache(maxsize=4)
def _fork_options(name: str) -> frozenset[str]:
    """Every option string a shipped fork parser defines."""
    return frozenset(f for row in _fork_parsers()[name]["actions"] for f in row[0])


@lru_cache(maxsize=1)
def _release_options() -> frozenset[str]:
    """Every option string some shipped Megatron-LM or Megatron-DeepSpeed release's parser defines."""
    from plint.catalog.flags import load_flag_catalog, releases

    return frozenset(o for release in releases() for o in load_flag_catalog(release).options())


def fork_parser_catalog(name: str):
    """The FlagCatalog of a fork whose parser document is shipped (fork_by_spelling's answer)."""
    from plint.catalog.flags import FlagCatalog

    return FlagCatalog(_fork_parsers()[name])
