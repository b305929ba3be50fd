"""tree-sitter-bash, loaded once and lazily, and the `bash -n` check that confirms a syntax error.

A tree-sitter ERROR node alone is not a syntax error (about 5% of valid scripts have one), so an
error is only reported when bash itself rejects the script.
"""

from __future__ import annotations

import os
import re

from plint.reading.shell.model import Problem
from plint.source import SourceFile
from plint.bounds import (
    MAX_HEREDOC_LINE_EXPANSIONS,
    MAX_SHELL_BLANKS,
    MAX_SHELL_DEPTH,
    MAX_SHELL_NODES,
    MAX_SHELL_OPENERS,
)

_PARSER = None
_OPENERS = (b"$", b"`", b"{", b"(", b"'", b'"')
_BLANKS = (b" ", b"\t", b"\n", b";")
_CHUNK = 1 << 16
_RECENT: dict[bytes, object] = {}  # the last trees parsed: a file is parsed by the evaluator, the launch scan
_KEPT = 2  # and the suppression comments in turn, once is enough
_KEPT_FROM = 4096  # bytes: smaller texts are not kept


class TooComplex(Exception):
    """A text past plint's syntax budget (plint.bounds): args are (why, byte offset where it went past)."""


def _binding(package: str):
    """A package's compiled `_binding` module, loaded without running the package's __init__:
    tree_sitter's imports typing and tree_sitter_bash's importlib.resources, together about as
    long as Python's own start-up, for nothing plint uses. None when it cannot be found."""

    try:  # what importlib.machinery re-exports, without importing importlib and warnings (~1 ms)
        from _frozen_importlib import ModuleSpec
        from _frozen_importlib_external import ExtensionFileLoader, PathFinder
    except ImportError:  # not CPython
        from importlib.machinery import ExtensionFileLoader, ModuleSpec, PathFinder

    spec = PathFinder.find_spec(package)
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith("_binding") and name.endswith((".so", ".pyd")):
                loader = ExtensionFileLoader(f"{package}._binding", os.path.join(folder, name))
                try:
                    module = loader.create_module(ModuleSpec(loader.name, loader, origin=loader.path))
                    loader.exec_module(module)
                except (ImportError, OSError):
                    return None
                return module
    return None


def parser():
    global _PARSER
    if _PARSER is None:
        core, bash = _binding("tree_sitter"), _binding("tree_sitter_bash")
        if core is None or bash is None:  # an unusual installation: the packages' own imports
            import tree_sitter as core
            import tree_sitter_bash as bash
        _PARSER = core.Parser(core.Language(bash.language()))
    return _PARSER


# tree-sitter-bash 0.25 can crash the process (SIGSEGV) on `{` followed by a four-byte UTF-8
# character (upstream issue tree-sitter/tree-sitter-bash#337). Such characters (emoji, rare CJK) are
# never shell syntax, so the parser gets same-length stand-ins; the script's own bytes are unchanged.
_FOUR_BYTE = rb"[\xf0-\xf7][\x80-\xbf]{0,3}"  # patterns compiled on use (re caches them): rarely needed
_STAND_IN = {1: b".", 2: "\u00e9".encode(), 3: "\u00e9.".encode(), 4: "\u00e9\u00e9".encode()}


def parse(data: bytes):
    """A tree-sitter-bash tree of `data`; byte offsets are those of `data`. Raises TooComplex past the
    syntax budget, before tree-sitter spends seconds on it or plint walks millions of nodes."""
    tree = _RECENT.get(data)
    if tree is not None:
        return tree
    _check_openers(data)
    text = data
    if not data.isascii() and max(data) >= 0xF0:  # any(b >= 0xF0 for b in data), without a loop
        text = re.sub(_FOUR_BYTE, lambda m: _STAND_IN[len(m.group())], data)
    tree = parser().parse(text)
    _check_nodes(tree)
    if len(data) >= _KEPT_FROM:  # a snippet (a heredoc's `$(...)`, an eval'd string) is cheap to parse again
        while len(_RECENT) >= _KEPT:  # and must not push a file's tree out
            del _RECENT[next(iter(_RECENT))]
        _RECENT[data] = tree
    return tree


def comments(root) -> list:
    """The comment nodes under `root`, in no order; a heredoc body's `#` lines are text, not comments."""
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            found.append(node)
        elif node.type != "heredoc_body":
            stack.extend(node.children)
    return found


def _check_openers(data: bytes) -> None:
    """TooComplex when `data` holds more than MAX_SHELL_OPENERS expansion, quote and bracket characters, or
    more than MAX_SHELL_BLANKS blanks, newlines and semicolons (about its words and statements: tree-sitter's
    tree costs ~250 bytes a node); counted at C speed, then only the chunk where a count goes past is searched."""

    _check_count(data, _OPENERS, rb"[$`{('\"]", MAX_SHELL_OPENERS, "`$`, quotes, braces and parentheses")
    _check_count(
        data, _BLANKS, rb"[ \t\n;]", MAX_SHELL_BLANKS, "blanks, newlines and semicolons (words and statements)"
    )
    _check_depth(data)
    _check_heredoc_lines(data)


def _check_heredoc_lines(data: bytes) -> None:
    """TooComplex where a file that may hold a heredoc (`<<`) has a line of more than MAX_HEREDOC_LINE_EXPANSIONS
    `$`; scanned only in a file with that many in all."""
    if data.count(b"$") <= MAX_HEREDOC_LINE_EXPANSIONS or b"<<" not in data:
        return
    start = 0
    for line in data.split(b"\n"):
        if line.count(b"$") > MAX_HEREDOC_LINE_EXPANSIONS:
            at = start + [m.start() for m in re.finditer(rb"\$", line)][MAX_HEREDOC_LINE_EXPANSIONS]
            raise TooComplex(f"a line has more than {MAX_HEREDOC_LINE_EXPANSIONS:,} `$` in a file with a heredoc", at)
        start += len(line) + 1


def _check_depth(data: bytes) -> None:
    """TooComplex where more than MAX_SHELL_DEPTH braces and parentheses are open at once (a closer with none
    open is not counted against the next ones). Scanned only in a file with that many openers, and over at most
    2 x MAX_SHELL_OPENERS brackets: more closers than that are too complex on their own."""

    if data.count(b"{") + data.count(b"(") <= MAX_SHELL_DEPTH:
        return
    _check_count(data, (b"}", b")"), rb"[})]", MAX_SHELL_OPENERS, "closing braces and parentheses")
    depth = 0
    for m in re.finditer(rb"[{}()]", data):
        depth = depth + 1 if m.group() in (b"{", b"(") else max(0, depth - 1)
        if depth > MAX_SHELL_DEPTH:
            raise TooComplex(f"more than {MAX_SHELL_DEPTH:,} braces and parentheses are open at once", m.start())


def _check_count(data: bytes, chars: tuple[bytes, ...], pattern: bytes, budget: int, what: str) -> None:
    if sum(data.count(c) for c in chars) <= budget:
        return
    seen = 0
    for start in range(0, len(data), _CHUNK):
        chunk = data[start : start + _CHUNK]
        here = sum(chunk.count(c) for c in chars)
        if seen + here > budget:
            at = [m.start() for m in re.finditer(pattern, chunk)][budget - seen]
            raise TooComplex(f"it has more than {budget:,} {what}", start + at)
        seen += here


def _check_nodes(tree) -> None:
    if tree.root_node.descendant_count <= MAX_SHELL_NODES:
        return
    cursor = tree.walk()
    cursor.goto_descendant(MAX_SHELL_NODES)  # in source order: where the budget ran out
    raise TooComplex(f"it parses into more than {MAX_SHELL_NODES:,} syntax nodes", cursor.node.start_byte)


def too_complex_message(why: str) -> str:
    """PL002's message for a text past the syntax budget."""
    return f"too complex: not evaluated ({why}, past plint's budget for one file; values it sets are unknown)"


def has_error(tree) -> bool:
    return tree.root_node.has_error


_BASH_LINE = r"line (\d+): (.*)"


def syntax_problems(source: SourceFile, tree, data: bytes | None = None) -> list[Problem]:
    """Problems for a script bash rejects; nothing when bash accepts it or is not installed. `data` is
    the text as plint parses it (template slots stood in for), line for line the source's."""
    if not has_error(tree):
        return []
    return _bash_check(source, source.data if data is None else data)


def recover(
    source: SourceFile, problems: list[Problem], data: bytes | None = None, rounds: int = 8
) -> tuple[bytes, list[Problem]]:
    """Blank each line bash rejects (keeping every byte offset of `data`, the source by default, whose
    lines are the source's) until bash accepts the rest."""
    blanked = bytearray(source.data if data is None else data)
    starts = [0] + [m.end() for m in re.finditer(rb"\n", blanked)]
    found = list(problems)
    for _ in range(rounds):
        lines = {p.span.line for p in problems if p.span is not None}
        if not lines:
            break
        for line in lines:
            if line > len(starts):
                continue
            start = starts[line - 1]
            end = starts[line] - 1 if line < len(starts) else len(blanked)
            blanked[start:end] = b" " * (end - start)
        problems = _bash_check(source, bytes(blanked))
        known = {p.span.line for p in found if p.span is not None}
        problems = [p for p in problems if p.span is not None and p.span.line not in known]
        found.extend(problems)
    return bytes(blanked), found


def _bash_check(source: SourceFile, data: bytes) -> list[Problem]:
    import shutil
    import subprocess

    bash = shutil.which("bash")
    if bash is None:
        return []
    try:
        proc = subprocess.run([bash, "-n"], input=data, capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    if proc.returncode <= 0:  # accepted, or bash itself crashed (it segfaults on ~100,000 nested `${`): no verdict
        return []
    problems = []
    messages: dict[int, list[str]] = {}
    for raw in proc.stderr.decode("utf-8", "replace").splitlines():
        m = re.search(_BASH_LINE, raw)
        if m:
            messages.setdefault(int(m.group(1)), []).append(m.group(2))
    # bash prints the error, then the offending text, both for the same line: one problem per line
    for line, parts in messages.items():
        text = source.line_text(line)
        start = source._line_starts[line - 1] if line <= len(source._line_starts) else len(source.data)
        indent = len(text) - len(text.lstrip())
        span = source.span(
            start + len(text[:indent].encode("utf-8", "surrogateescape")),
            start + len(text.encode("utf-8", "surrogateescape")),
        )  # undecodable bytes kept
        problems.append(Problem("syntax", "bash rejects this script: " + ": ".join(parts), span))
    if not problems:
        problems.append(
            Problem("syntax", "bash rejects this script: " + proc.stderr.decode("utf-8", "replace").strip()[:200])
        )
    return problems[:3]
