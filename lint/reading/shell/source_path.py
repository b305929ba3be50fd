"""Where `source FILE` / `. FILE` with a relative FILE is looked for: the places, in order, and why each.

bash resolves a relative path holding a slash against the working directory the script runs from, and a
bare name first on PATH (when `shopt sourcepath` is on, the default) and then in the working directory
(bash manual, Bourne Shell Builtins, `.`). plint does not know the working directory, so it does what
shellcheck does for the same problem: look in folders it is told of first, then in the usual guesses.
shellcheck resolves against the working directory of its own run, `-P DIR` / `# shellcheck source-path=DIR`
add folders (SCRIPTDIR: the folder of the script; https://www.shellcheck.net/wiki/Directive), and SC1091
says a file it could not follow (https://www.shellcheck.net/wiki/SC1091).

The places, first to last (documented in docs/reading.md, Sourced files):
1. the folders of `# plint: source-path=DIR` (or `# shellcheck source-path=DIR`) comments in the sourcing
   file, DIR relative to the checked root (where scripts are usually run from), SCRIPTDIR the file's folder;
2. the folders of `[tool.plint] source-path` (relative to the config file's folder, or SCRIPTDIR);
3. the folder of the sourcing file (SCRIPTDIR: plint's reading before the root was added);
4. the folders above the sourcing file, nearest first, inside the checked tree: a project kept in a folder of
   the checked repository runs its scripts from that folder;
5. the checked root: `bash scripts/train.sh` run from the repository root, as READMEs say.
Places 1 and 2 are what the user said; 3 to 5 are guesses, and when both hold a file and the two differ
the sourcing Shell reads the first and says that it assumed so (plint.reading.shell.sourcing).
"""

from __future__ import annotations

import os
import re
from contextvars import ContextVar
from typing import TYPE_CHECKING

from plint.reading.scoped import scoped
from plint.record import record
from plint.root import folders_above

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

SCRIPT_DIR = "SCRIPTDIR"
# `# plint: source-path=DIR` and shellcheck's `# shellcheck source-path=DIR` (where other shellcheck directives
# may come first: `# shellcheck disable=SC1091 source-path=SCRIPTDIR`), each on a comment line of its own
DIRECTIVE = re.compile(
    r"^[ \t]*#[ \t]*(?:plint[ \t]*:[ \t]*|shellcheck[ \t](?:[^\n]*?[ \t])?)source-path[ \t]*=[ \t]*(\S+)", re.M
)

# [tool.plint] source-path of the check under way (plint.checking.check sets it around each file's reading)
_CONFIGURED: ContextVar[tuple[str, ...]] = ContextVar("plint_source_path", default=())


def configured_source_path(places: list[str] | tuple[str, ...]) -> AbstractContextManager[None]:
    return scoped(_CONFIGURED, tuple(places))


def is_script_dir(place: str) -> bool:
    """Whether a source-path entry is SCRIPTDIR or a folder under it (`SCRIPTDIR/../lib`)."""
    return place == SCRIPT_DIR or place.startswith(SCRIPT_DIR + "/")


@record(frozen=True)
class Place:
    folder: str  # absolute
    why: str  # said after the path in a message: "beside the script", "the checked root", ...
    named: bool  # the user named it (a directive or the config), so finding the file there is no guess


def places(sourcing_file: str, text: str, directives: tuple[str, ...]) -> list[Place]:
    """The folders a relative sourced path `text` is looked for in, first to last, each once. An absolute
    path has the one place it names."""
    script_dir = os.path.dirname(os.path.abspath(sourcing_file))
    if os.path.isabs(text):
        return [Place(os.sep, "as written", True)]
    root = _checked_root(sourcing_file)
    found = [Place(_folder(d, script_dir, root), "named by a source-path comment", True) for d in directives]
    found += [Place(_folder(d, script_dir, root), "[tool.plint] source-path", True) for d in _CONFIGURED.get()]
    found.append(Place(script_dir, "beside the script", False))
    # a project inside the checked tree runs its scripts from its own folder: the folders above the script,
    # nearest first, up to the checked root (plint.root.folders_above)
    above = [f for f in folders_above(script_dir) if os.path.realpath(f) != os.path.realpath(root)]
    found += [Place(folder, "a folder above the script", False) for folder in above]
    found.append(Place(root, "the checked root", False))
    unique: dict[str, Place] = {}
    for place in found:
        unique.setdefault(os.path.realpath(place.folder), place)
    return list(unique.values())


def comment_places(text: str) -> tuple[str, ...]:
    """The folders of the source-path comments of a file's text (cheap: most files name none)."""
    if "source-path" not in text:
        return ()
    return tuple(m.group(1).strip("'\"") for m in DIRECTIVE.finditer(text))


def _folder(place: str, script_dir: str, root: str) -> str:
    """A named place as a folder: SCRIPTDIR[/...] under the script's folder, else as given against `root`
    (an absolute one, from the config, stays as it is)."""
    if is_script_dir(place):
        return os.path.normpath(os.path.join(script_dir, place[len(SCRIPT_DIR) :].lstrip("/")))
    return os.path.normpath(os.path.join(root, os.path.expanduser(place)))


def _checked_root(sourcing_file: str) -> str:
    """The folder scripts of this tree are usually run from: the place of the root in force that holds the
    file, else its git work tree, else its folder (plint.reading.sources.entry_script.tree_root)."""
    from plint.reading.sources.entry_script import tree_root

    return tree_root(sourcing_file)
