"""Files a launch names (a DeepSpeed config, a hostfile, a GPT-NeoX config), looked up the way the script would see
them: what the script had written first, then disk through the root, with the guesses plint makes about the folder a
script runs from (the folders above it, a checkout of the tree elsewhere) said in assumed_note."""

from __future__ import annotations

import os
import re
from pathlib import Path

from plint.reading.loading import Unread, load_named, outside_root
from plint.reading.shell.model import Command, MappedText, Problem, ShellResult
from plint.reading.shell.source_path import checked_root, outside_tail_note, tail_places
from plint.root import OUTSIDE_NOTE, WIDEN_HINT, folders_above, is_under
from plint.source import SourceFile, display_path, probe


# one folder known only at run time, then a known path of a folder and a file at least (`${HOME}/repo/configs/x.yml`)
_UNDER_UNKNOWN_FOLDER = re.compile(r"(\$\{\w+\})(/[^$]+/[^$/]+)")


class FileLookup:
    """Files a launch names, looked up the way the script would see them: virtual first, then disk."""

    def __init__(self, result: ShellResult | None, base: str | Path):
        self.result, self.base = result, base
        self.cache: dict[tuple[int, str], SourceFile | None] = {}  # by (the files written then, path)
        self.files_at: dict | None = None  # the files the script had written when the launch being read ran
        self.problems: list[Problem] = []  # about the DeepSpeed configs the launches name
        self.refused: dict[str, Unread] = {}  # name -> why: files named, there, but not read
        self.refusals: dict[str, Unread] = {}  # resolved path -> why the file there was not read (load_named)
        self.assumed: dict[str, str] = {}  # name -> the folder above the script it was found from (a guess)
        self.climbing: set[str] = set()  # config names also looked up above the script (see _run_from)
        self.tails: dict[str, str] = {}  # absolute name outside the tree -> the path read for it (_outside_tail)
        self.prefixed: dict[str, str] = {}  # `${DIR}/repo/x.yml` -> the path read for it (_under_unknown_folder)

    def at(self, command: Command | None) -> None:
        """Read files as they were when `command` ran (Command.files); None: as the script left them."""
        self.files_at = command.files if command is not None else None

    def written(self) -> dict:
        """The files the script had written, when the launch being read ran."""
        if self.files_at is not None:
            return self.files_at
        return self.result.virtual_files if self.result is not None else {}

    def unread(self, name: str) -> Unread | None:
        """Why a named file that is there is not read (a note for the value), else None: the root refuses
        it (a file the script wrote from one outside the root is refused the same way), or plint does not
        read it (too large, not a regular file, binary: loading.load_named; a file written from such a file
        too, without the hint of widening the root). A file not there is not unread."""

        resolved = self._resolve(name)
        if self.result is not None:
            vf = self.written().get(resolved) or self.written().get(name)
            if vf is not None:
                unknown = unknown_whole(vf.content)
                if unknown is None:
                    return None
                return Unread(unknown, hint=WIDEN_HINT if OUTSIDE_NOTE in unknown else None)
        outside = outside_root(resolved)
        if outside is not None:
            return outside
        if (id(self.written()), resolved) not in self.cache:
            self.source(name)
        return self.refusals.get(resolved)

    def _resolve(self, name: str) -> str:
        if name.startswith("${"):  # a path under a folder known only at run time, as the evaluator renders it
            return self._under_unknown_folder(name)
        base = os.path.abspath(str(self.base))
        if os.path.isabs(name) and name in self.climbing and is_under(os.path.normpath(name), base):
            # `$PWD/hostfile`: plint took the folder the script runs from to be its own; not there, the file is
            # looked for where a relative name is (the folders above: the script run from its repository's root)
            relative = os.path.relpath(os.path.normpath(name), base)
            if not self._written(os.path.normpath(name), name) and not probe(Path(name).exists):
                folder = self._run_from(relative)
                if folder is not None:
                    self.assumed[name] = folder
                    return os.path.normpath(os.path.join(folder, relative))
        if os.path.isabs(name):
            return self.tails[name] if name in self.tails else self._outside_tail(name)
        beside = os.path.normpath(os.path.join(base, name))
        if name not in self.climbing or self._written(beside, name) or probe(Path(beside).exists):
            return beside
        folder = self._run_from(name)
        return os.path.normpath(os.path.join(folder, name)) if folder is not None else beside

    def _under_unknown_folder(self, name: str) -> str:
        """`${DIR}/repo/configs/x.yml`: the file the script wrote under that name, else (a name looked up where the
        script is run from) the tail of its known part that is a file of the tree, as an absolute path outside the
        tree is read (a guess, said in assumed_note); else the name itself, which holds nothing."""
        if name in self.prefixed:
            return self.prefixed[name]
        match = _UNDER_UNKNOWN_FOLDER.fullmatch(name)
        if self._written(name, name) or match is None or name not in self.climbing:
            return name
        suffix = os.path.normpath(match.group(2))
        found = self._outside_tail(suffix)
        if found != suffix:
            self.prefixed[name] = found
            return found
        return name

    def _outside_tail(self, name: str) -> str:
        """An absolute path as the script sees it; one outside the checked tree that is not there nor written
        (`/home/alice/repo/configs/ds.json`, a checkout of this tree) is read from its longest tail that is a
        file of the tree, remembered in `tails` (a guess, said in assumed_note)."""
        resolved = os.path.normpath(name)
        script = os.path.join(os.path.abspath(str(self.base)), "-")
        if self._written(resolved, name) or probe(Path(resolved).exists) or is_under(resolved, checked_root(script)):
            return resolved
        for path, _ in tail_places(name, script):
            if probe(Path(path).is_file):
                self.tails[name] = path
                return path
        self.tails[name] = resolved
        return resolved

    def _written(self, resolved: str, name: str) -> bool:
        files = self.written() if self.result is not None else {}
        return resolved in files or name in files

    def _run_from(self, name: str) -> str | None:
        """The folder above the script a relative name is found from, nearest first, inside the checked
        tree: a script is often run from the repository root or a project folder (`bash scripts/x.sh`,
        as READMEs say), not from its own folder. Remembered in `assumed`: the values read through it are
        a guess about where the user runs the script."""
        if name in self.assumed:
            return self.assumed[name]

        for folder in folders_above(str(self.base)):
            if probe(Path(folder, name).is_file):
                self.assumed[name] = folder
                return folder
        return None

    def assumed_note(self, name: str) -> str | None:
        """How a name was found when not where the script names it (a relative one not beside the script, an
        absolute one outside the tree), else None."""
        if name in self.prefixed:
            prefix = name[: name.index("}") + 1]
            return outside_tail_note(name, f"starts with {prefix}, known only at run time", prefix, self.prefixed[name])
        tail = self.tails.get(name)
        if tail is not None and tail != os.path.normpath(name):
            return outside_tail_note(name, "is an absolute path outside the checked tree", "that folder", tail)
        folder = self.assumed.get(name)
        if folder is None:
            return None
        return (
            f"{name} is not beside the script; read from {display_path(folder) or '.'}, assumed to be where the "
            "script is run from (as its README or caller would run it)"
        )

    def config(self, name: str) -> tuple[SourceFile | None, str | None]:
        """A config file a launcher names (accelerate's --config_file), also looked up in the folders above
        the script, with the note saying so when it was found there."""
        self.climbing.add(name)
        return self.source(name), self.assumed_note(name)

    def mapped(self, name: str) -> tuple[str, MappedText | None]:
        resolved = self._resolve(name)
        if self.result is not None:
            vf = self.written().get(resolved) or self.written().get(name)
            if vf is not None:
                return resolved, vf.content
        source = self.source(name)
        return resolved, MappedText.from_source(source) if source is not None else None

    def source(self, name: str) -> SourceFile | None:
        resolved = self._resolve(name)
        key = (id(self.written()), resolved)
        if key in self.cache:
            return self.cache[key]
        found: SourceFile | None = None
        if self.result is not None and resolved in self.written():
            vf = self.written()[resolved]
            if unknown_whole(vf.content) is None:
                found = SourceFile(display_path(vf.path), vf.content.render())
        elif probe(Path(resolved).exists):  # a directory or a FIFO too: _load_named says why it is not read
            found, refusal = load_named(resolved, display_path(resolved))
            if refusal is not None:
                self.refusals[resolved] = refusal
        self.cache[key] = found
        why = self.unread(name) if found is None else None
        if why is not None:
            self.refused[name] = why
        return found


def unknown_whole(content: MappedText) -> str | None:
    """The reason a written file is unknown through and through (copied from a file plint does not
    read), else None."""
    pieces = content.pieces
    if pieces and all(not p.known for p in pieces):
        return pieces[0].reason or "its content is not known"
    return None
