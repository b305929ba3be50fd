"""`plint --version`: plint's own version, then the trainer releases its shipped catalogs describe.

The first line keeps click's `plint, version X` form (scripts that parse it keep working); the catalog
lines are read from the catalogs themselves (schemas/megatron_flags/index.json, the DeepSpeed schema and
optimizer table), so a rebuilt catalog shows up here without an edit.
"""

from __future__ import annotations


def _pinned(info: dict) -> str:
    """`core_v0.16.0`, or `main at d98e8a6 (2026-08-22)` for a branch snapshot."""
    if info["ref"] != "main":
        return info["ref"]
    return f"{info['ref']} at {info['commit'][:7]} ({info['date'][:10]})"


def version_text(version: str) -> str:
    from plint.catalog.flags import release_info, releases
    from plint.schemas import read_json

    known = [info for r in releases() if (info := release_info(r)) is not None]  # Megatron-LM oldest first, then forks
    megatron = ", ".join(_pinned(info) for info in known if info["flavour"] == "megatron")
    forks = ", ".join(
        f"{info['repo'].rsplit('/', 2)[-2]} {_pinned(info)}"  # the fork's GitHub owner
        for info in known
        if info["flavour"] == "megatron-deepspeed"
    )
    schema = read_json("deepspeed_config.schema.json")["x-deepspeed-version"]
    optimizers = read_json("deepspeed_optimizers.json")["x-deepspeed-version"]
    deepspeed = (
        f"config keys and optimizer table of {schema}"
        if schema == optimizers
        else f"config keys of {schema}, optimizer table of {optimizers}"
    )
    return "\n".join(
        (
            f"plint, version {version}",
            f"Megatron-LM flag catalogs: {megatron}",
            f"Megatron-DeepSpeed flag catalogs: {forks}",
            f"DeepSpeed: {deepspeed}",
        )
    )
