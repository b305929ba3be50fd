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

shellcheck's `# shellcheck source=FILE` (plint's `# plint: source=FILE`) names the file one `source` command
reads, where its path is known only at run time (`. "$(locate_config)"`, https://www.shellcheck.net/wiki/SC1090):
the directive holds for the command it stands above, for every command inside a compound command it stands
above, and for the whole script right after the shebang (https://www.shellcheck.net/wiki/Directive).
FILE is looked for in the places above (SCRIPTDIR/...: under the script's folder); `source=/dev/null` says
not to follow the file.
"""

from __future__ import annotations

import os
import re
from contextvars import ContextVar
from typing import TYPE_CHECKING

from plint.reading.scoped import scoped
from plint.reading.shell.parse import TooComplex, comments, parse
from plint.record import record
from plint.root import folders_above, tree_root
from plint.source import display_path

if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextlib import AbstractContextManager

    from plint.reading.shell.model import Word

SCRIPT_DIR = "SCRIPTDIR"
# `# plint: source-path=DIR` and shellcheck's `# shellcheck source-path=DIR` (where other shellcheck directives
# may come first: `# shellcheck disable=SC1091 source-path=SCRIPTDIR`), each on a comment line of its own
DIRECTIVE = re.compile(
    r"^[ \t]*#[ \t]*(?:plint[ \t]*:[ \t]*|shellcheck[ \t](?:[^\n]*?[ \t])?)source-path[ \t]*=[ \t]*(\S+)", re.M
)
# `# plint: source=FILE` and shellcheck's `# shellcheck source=FILE`, matched on one comment's text
NAMED_FILE = re.compile(r"^#[ \t]*(?:plint[ \t]*:[ \t]*|shellcheck[ \t](?:[^\n]*?[ \t])?)source[ \t]*=[ \t]*(\S+)")
NOT_FOLLOWED = "/dev/null"  # `# shellcheck source=/dev/null`: the file is not to be followed

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


def places(sourcing_file: str, text: str, directives: tuple[str, ...], moved_to: str | None = None) -> list[Place]:
    """The folders a relative sourced path `text` is looked for in, first to last, each once: where the script
    moved with `cd` (`moved_to`, the folder bash opens it from) before plint's guesses. An absolute path has
    the one place it names."""
    script_dir = os.path.dirname(os.path.abspath(sourcing_file))
    if os.path.isabs(text):
        return [Place(os.sep, "as written", True)]
    root = checked_root(sourcing_file)
    found = [Place(_folder(d, script_dir, root), "named by a source-path comment", True) for d in directives]
    found += [Place(_folder(d, script_dir, root), "[tool.plint] source-path", True) for d in _CONFIGURED.get()]
    if moved_to is not None:
        found.append(Place(moved_to, "where the script's `cd` moved", False))
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
    """The folders of the source-path comments of a file's text, each a comment on a line of its own (a
    heredoc's lines are text, not comments); cheap: most files name none."""
    if "source-path" not in text:
        return ()
    data = text.encode("utf-8", "surrogateescape")
    try:
        found = sorted(comments(parse(data).root_node), key=lambda n: n.start_byte)
    except TooComplex:
        return ()
    matches = (DIRECTIVE.match(_own_line_text(node, data) or "") for node in found)
    return tuple(m.group(1).strip("'\"") for m in matches if m)


def named_file(node, data: bytes) -> str | None:
    """The file a `source=FILE` directive names for the `source` command `node` of the tree of `data`: in the
    comments directly above it or above a compound command holding it (nearest first), else right after the
    shebang; None where no directive names one."""
    inner = node
    while inner is not None and inner.type != "program":
        above = inner.prev_sibling
        while above is not None and above.type == "comment":
            found = _named_in(above, data)
            if found is not None:
                return found
            above = above.prev_sibling
        inner = inner.parent
    return _named_after_shebang(inner, data) if inner is not None else None


def named_path(named: str, sourcing_file: str) -> str:
    """A directive's FILE as a path to look for: SCRIPTDIR/... under the sourcing file's folder, else as written."""
    if not is_script_dir(named):
        return named
    return os.path.join(os.path.dirname(os.path.abspath(sourcing_file)), named[len(SCRIPT_DIR) :].lstrip("/"))


def _named_after_shebang(program, data: bytes) -> str | None:
    """A `source=FILE` directive in the comment lines that open the script right after its shebang."""
    header = program.children[:1]
    if not header or header[0].type != "comment" or not data[header[0].start_byte :].startswith(b"#!"):
        return None
    for node in program.children[1:]:
        if node.type != "comment":
            break
        found = _named_in(node, data)
        if found is not None:
            return found
    return None


def _named_in(comment, data: bytes) -> str | None:
    match = NAMED_FILE.match(_own_line_text(comment, data) or "")
    return match.group(1).strip("'\"") if match else None


def _own_line_text(comment, data: bytes) -> str | None:
    """A comment's text when it stands on a line of its own (a directive does); None after a command."""
    line_start = data.rfind(b"\n", 0, comment.start_byte) + 1
    if data[line_start : comment.start_byte].strip(b" \t"):
        return None
    return data[comment.start_byte : comment.end_byte].decode("utf-8", "surrogateescape")


def _folder(place: str, script_dir: str, root: str) -> str:
    """A named place as a folder: SCRIPTDIR[/...] under the script's folder, else as given against `root`
    (an absolute one, from the config, stays as it is)."""
    if is_script_dir(place):
        return os.path.normpath(os.path.join(script_dir, place[len(SCRIPT_DIR) :].lstrip("/")))
    return os.path.normpath(os.path.join(root, os.path.expanduser(place)))


def checked_root(sourcing_file: str) -> str:
    """The folder scripts of this tree are usually run from: the place of the root in force that holds the
    file, else its git work tree, else its folder (plint.root.tree_root)."""
    return tree_root(sourcing_file)


def not_found(word: Word, looked: tuple[tuple[str, Place], ...] = (), verb: str = "sources") -> str:
    """Why a sourced file the script names is not there to read, with every place plint looked in."""
    if not word.known:
        reasons = "; ".join(dict.fromkeys(p.reason for p in word.unknowns if p.reason))
        return f"its path is not known statically ({reasons})" if reasons else "its path is not known statically"
    if (word.text or "").startswith("~"):  # bash expands it to $HOME, which plint does not know
        tails = " and no tail of it is a file of the checked tree" if looked else ""
        return f"its path starts with ~, the home folder of whoever runs the script (not known statically){tails}"
    if os.path.isabs(word.text or "") and len(looked) <= 1:  # as written only: no tail of it is in the tree
        return "no such file, and no tail of its path is a file of the checked tree"
    if len(looked) <= 1:
        return f"no such file beside the script that {verb} it"
    places = ", ".join(f"{display_path(path)} ({place.why})" for path, place in looked)
    return f"no such file in any place plint looked ({places})"


def assumed_note(named: str, taken: tuple[str, Place], other: tuple[str, Place]) -> str:
    """What plint says when two guessed places hold different files of the name a script gives."""
    return (
        f"{named} could be {display_path(taken[0])} ({taken[1].why}) or {display_path(other[0])} "
        f"({other[1].why}), which differ, depending on the folder the script is run from; plint read the first, "
        f"so the values it sets are assumed ({SOURCE_PATH_HINT})"
    )


SOURCE_PATH_HINT = "name the folder with [tool.plint] source-path or a `# plint: source-path=DIR` comment"


MAX_TAIL_PARTS = 32  # parts of a `~/...` or outside absolute path matched inside the checked tree


def tail_places(text: str, script_path: str) -> Iterator[tuple[str, Place]]:
    """Where a path plint cannot follow (`~/repo/run.sh`, `/home/alice/repo/ds.json`: a checkout of this tree
    elsewhere) may be inside the checked tree: each tail of it (a folder and a file at least, no `..`, the longest
    first) under the folders above the script, nearest first, then the checked root (a vendored project inside
    the tree is one too), as (the path, its place); a tail whose folder is named as one of those folders is also
    looked for in that folder itself (a checkout cloned under the name the author's path gives it). At most MAX_TAIL_PARTS parts: deeper than any tree, and a
    path of 50,000 parts stays cheap."""
    parts = text.lstrip("/").split("/")
    root = checked_root(script_path)
    script_dir = os.path.dirname(os.path.abspath(script_path))
    bases = [*(f for f in folders_above(script_dir) if os.path.realpath(f) != os.path.realpath(root)), root]
    for start in range(max(0, len(parts) - MAX_TAIL_PARTS), len(parts) - 1):
        tail = parts[start:]
        if "" in tail or ".." in tail or "." in tail:
            continue
        for base in bases:
            path = os.path.normpath(os.path.join(os.path.abspath(base), "/".join(tail)))
            yield path, Place(base, "a tail of the path inside the checked tree", False)
            # `~/src/Megatron-DeepSpeed/run.sh` checked in a checkout named Megatron-DeepSpeed: its run.sh
            if tail[0] == os.path.basename(os.path.realpath(base)):
                inside = os.path.normpath(os.path.join(os.path.abspath(base), "/".join(tail[1:])))
                yield inside, Place(base, "a tail of the path inside the checked tree", False)


def outside_tail_note(shown: str, why: str, holder: str, path: str) -> str:
    """What plint says when it read a tail of a path it cannot follow (tail_places) instead of the path."""
    return (
        f"{shown} {why}; plint read {display_path(path)}, the same path inside the checked tree, as if {holder} "
        "held a checkout of it, so the values it sets are assumed"
    )
