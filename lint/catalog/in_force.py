"""Which argument parser judges a launch's trainer flags (DESIGN.md "The trainer in force"):

1. the parser in the launch's own work tree (`megatron/training/arguments.py` or `megatron/arguments.py` at
   or above the launch file, not above the checked tree's root), read statically;
2. else the checkout named by `--trainer-source` / `[tool.plint] trainer-source`;
3. else the release the configuration names (`megatron = "0.16"`);
4. else the newest release plint ships, assumed (unknown flags are then warnings, naming the forks that
   define them).
"""

from __future__ import annotations

import os

import posixpath
from plint.record import record
from pathlib import Path
from typing import TYPE_CHECKING

from plint.root import current, default_place, note_for

if TYPE_CHECKING:
    from plint.catalog.flags import FlagCatalog


@record
class CatalogInForce:
    catalog: FlagCatalog
    assumed: bool  # no parser found and no release configured: the newest shipped release was assumed
    label: str  # how messages name it: "the parser in megatron/arguments.py of this repository", ...
    note: str | None = None  # a parser that was found but could not be read, and what was used instead
    entry_read: bool = False  # the entry script's own flags (its extra_args_provider) are in the catalog
    # functions from outside the tree the parser hands itself to (parser_source.ParserSource.outside): flags plint
    # cannot list, so a flag missing from the catalog may still be accepted
    outside: tuple[str, ...] = ()
    # the entry script the launch names by a known path that holds no file in the tree: the flags its
    # extra_args_provider would add are unknown
    entry_absent: str | None = None


def _tree_root(start: Path) -> Path | None:
    """The checked tree holding `start`: the place of the root in force (plint.root) that contains it,
    else the git work tree or current folder a root would have."""
    root = current()
    if root is not None:
        return next((Path(p) for p in root.places if start == Path(p) or Path(p) in start.parents), None)
    return Path(default_place(start / "."))


def _entry_script(entry_text: str | None, launch_dir: Path, tree: Path) -> Path | None:
    """The entry script on disk, when its name can be placed: beside the launch, at the tree's top, or at
    the path written (`${MEGATRON}/pretrain_gpt.py`: its known tail, under the tree)."""
    if not entry_text:
        return None
    tail = entry_text.rsplit("}", 1)[-1].lstrip("/") if "$" in entry_text else entry_text
    if "$" in tail or not tail.endswith(".py"):
        return None
    candidates = [launch_dir / tail, tree / tail, tree / posixpath.basename(tail)]
    return next((c for c in candidates if c.is_file()), None)


def _shown_in_tree(path: str | None, tree: Path) -> str | None:
    """A path as messages show it: relative to the tree when it lies inside."""
    if path is None or not os.path.isabs(path):
        return path
    where = Path(os.path.normpath(path))
    return where.relative_to(tree).as_posix() if tree in where.parents else path


def _climbs_out(entry_text: str | None, launch_dir: Path, tree: Path) -> bool:
    """Whether the entry point, written as a known relative path, lies above the checked tree (another checkout)."""
    if not entry_text or "$" in entry_text or entry_text.startswith(("/", "~")):
        return False
    where = Path(os.path.normpath(launch_dir / entry_text))
    return where != tree and tree not in where.parents


def catalog_in_force(
    flavour: str,
    launch_path: str,
    entry_text: str | None,
    configured: str | None,
    trainer_source: str | None = None,
    root: str | None = None,
    recognised: str | None = None,
    spelled_by: str | None = None,
    entry_absent: str | None = None,
) -> CatalogInForce:
    """`configured`: the release the configuration names; `recognised`: a fork recognised by its flags;
    `spelled_by`: a fork whose shipped parser spells the launch's flags (catalog.forks.fork_by_spelling);
    `entry_absent`: the entry script named by a known path that the tree does not hold."""
    from plint.catalog.flags import default_release, load_flag_catalog, release_label
    from plint.catalog.parser_source import find_parser, load_source_catalog, with_entry_script

    launch_dir = Path(launch_path).resolve().parent
    stop = Path(root).resolve() if root else _tree_root(launch_dir)
    note = None
    places = []
    found = find_parser(launch_dir, stop) if stop is not None else None
    if found is not None and stop is not None and _climbs_out(entry_text, launch_dir, stop):
        # `python3 ../../../Megatron-LM-Jan-1-2024/pretrain_gpt.py`: another checkout's parser, not this one's
        note = f"the entry point {entry_text} lies outside this repository: the parser there is not read"
        found = None
    if found is not None:
        places.append((found, "of this repository"))
    if trainer_source:
        elsewhere = Path(trainer_source)
        if elsewhere.is_file():  # the arguments.py itself
            elsewhere = elsewhere.parent.parent if elsewhere.parent.name == "training" else elsewhere.parent
            elsewhere = elsewhere.parent if elsewhere.name == "megatron" else elsewhere
        theirs = find_parser(elsewhere, elsewhere)
        if theirs is not None:
            places.append((theirs, f"of {trainer_source}"))
        else:
            note = f"--trainer-source {trainer_source} holds no megatron/arguments.py or megatron/training/arguments.py"
    for parser, where in places:
        outside = note_for(parser.path)
        if outside is not None:  # a link out of the tree: nothing of it is read
            note = f"the parser in {parser.path.relative_to(parser.tree).as_posix()}: {outside}"
            continue
        if entry_absent is None:  # no other script of the tree stands in for one the launch names exactly
            parser = with_entry_script(parser, _entry_script(entry_text, launch_dir, parser.tree))
        try:
            catalog = load_source_catalog(parser)
        except ValueError as exc:
            note = f"the parser in {parser.path.relative_to(parser.tree).as_posix()} could not be read ({exc})"
            continue
        label = f"the parser in {catalog.source} {where}"
        catalog.origin = label
        return CatalogInForce(
            catalog,
            False,
            label,
            note,
            entry_read=bool(parser.extra),
            outside=parser.outside,
            entry_absent=_shown_in_tree(entry_absent, parser.tree),
        )
    if configured:
        catalog = load_flag_catalog(configured)
        return CatalogInForce(catalog, False, f"{release_label(catalog.release)} as configured", note)
    if recognised:
        catalog = load_flag_catalog(recognised)
        return CatalogInForce(catalog, False, f"{release_label(catalog.release)}, recognised by its flags", note)
    if spelled_by:
        from plint.catalog.forks import fork_parser_catalog

        catalog = fork_parser_catalog(spelled_by)
        label = f"the parser of {spelled_by}, recognised by its flags' spelling (not in this tree)"
        catalog.origin = label
        return CatalogInForce(catalog, False, label, note)
    catalog = load_flag_catalog(default_release(flavour))
    return CatalogInForce(catalog, True, f"{release_label(catalog.release)}, assumed", note)
