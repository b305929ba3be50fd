"""Files a script names, looked up the way the script would see them: what it wrote first, then disk.

The evaluator keys ShellResult.virtual_files with `path_key`: a path made absolute against the
directory of the script that names it and normalised, or, when part of the path is unknown
(`$OUT_DIR/ds_config.json`), the word as far as it is known (`${OUT_DIR}/ds_config.json`). Other
layers look files up through `resolve_path` / `lookup_file` so both sides agree on the key.
"""

from __future__ import annotations

import os
from pathlib import Path

from plint.reading.shell.model import MappedText, ShellResult, Word
from plint.source import SourceFile


def path_key(directory: str, text: str) -> str:
    """An absolute, normalised path for `text` as named by a script in `directory`."""
    return os.path.normpath(os.path.join(os.path.abspath(directory), text))


def resolve_path(where: ShellResult | SourceFile, word: Word | str) -> str | None:
    """The virtual_files key of a path named in `where`'s script (a ShellResult or its SourceFile).

    A known path resolves against the script's directory; a path with unknown parts keeps its known
    rendering (unknown parts as ${NAME}); an empty path is None.
    """
    source = where.source if isinstance(where, ShellResult) else where
    if isinstance(word, Word):
        if not word.known:
            return word.display() or None
        text = word.text
    else:
        text = word
    if not text:
        return None
    return path_key(os.path.dirname(os.path.abspath(source.path)), text)


def lookup_file(result: ShellResult, word: Word | str) -> MappedText | None:
    """The text of a file named in the script: written by the script (virtual) first, then read from
    disk; None when neither has it."""
    key = resolve_path(result, word)
    if key is None:
        return None
    virtual = result.virtual_files.get(key)
    if virtual is not None:
        return virtual.content
    path = Path(key)
    try:
        if not path.is_file():
            return None
        return MappedText.from_source(SourceFile.read(path))
    except OSError:
        return None
