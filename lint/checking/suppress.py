"""Inline suppression: `# plint: disable=CODE|name[,...] -- reason` comments in shell files.

bash allows no comment on a continued line, so a launch command of 30 physical lines can carry a
trailing comment only on its last line. Hence shellcheck's rule: a directive on its own line
(anywhere in the comment block right above a statement, so it stacks with `# shellcheck
disable=...`) covers the whole statement that follows: a `torchrun ... \\` command, an
`ARGS=( ... )` array, a heredoc with its body, an if block. Inside an array it covers the next
element. A trailing directive covers its line, and the whole statement when it ends that statement
(the last line of a multi-line command, the `)` of an array, the opening line of a heredoc).
`# plint: disable-file=...` anywhere covers the file. JSON holds no comments, so a directive also
covers findings in the JSON files its statement names or writes (`--deepspeed_config ds.json`,
`cat <<EOF > ds.json`), matched by file name. Comments are found with tree-sitter, so text inside a
heredoc body or a string is never taken for a directive.

Each directive records which of its selectors suppressed something; the engine reports the rest
(PL004), and directives it cannot read at all. A `# noqa` or `# noqa: PL201` comment (flake8's and ruff's
habit) is read too, never to suppress: PL004 says that plint's directive is `# plint: disable=PL201`,
when it names a plint code or sits on a finding. A `# plint: source-path=DIR` comment is no suppression: the
reader takes it (plint.reading.shell.source_path).
"""

from __future__ import annotations

import os
import re

from plint.reading.shell.source_path import DIRECTIVE as SOURCE_PATH, NAMED_FILE
from plint.record import field, record

MARK = re.compile(r"#\s*plint\s*:")
DIRECTIVE = re.compile(r"#\s*plint\s*:\s*(?P<kind>[A-Za-z-]+)\s*(?:=\s*(?P<rest>.*))?$")
# selectors, comma-separated; a name's single hyphens are part of it, ` -- ` starts the reason
SELECTORS = re.compile(
    r"\s*(?P<list>[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*(?:\s*,\s*[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*)*)"
    r"\s*,?\s*(?:--)?\s*(?P<reason>.*)$"
)
KINDS = ("disable", "disable-file")
# flake8's and ruff's `# noqa` / `# noqa: E501,PL201`: the codes it names, of which plint's are PL + digits
NOQA = re.compile(r"#\s*noqa\b(?:\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
PLINT_CODE = re.compile(r"PL[0-9]{3}\Z", re.IGNORECASE)
# a file name, whatever folder precedes it; matched only from the start of a run of name characters, so a
# 100,000-digit word is scanned once, not once per character (quadratic: a minute; found by issue 30's fuzzer)
JSON_NAME = re.compile(r"(?<![\w.@+-])([\w.@+-]+\.json)\b")
# statements a trailing directive on their last line covers whole; anything else: the line alone
_STATEMENTS = {
    "command",
    "redirected_statement",
    "variable_assignment",
    "declaration_command",
    "pipeline",
    "list",
    "if_statement",
    "for_statement",
    "c_style_for_statement",
    "while_statement",
    "case_statement",
    "function_definition",
    "compound_statement",
    "subshell",
    "negated_command",
    "test_command",
    "unset_command",
    "variable_assignments",
}


@record
class Directive:
    path: str
    line: int  # the comment's line
    col: int
    end_col: int
    selectors: tuple[str, ...]
    reason: str
    file_wide: bool
    first: int = 0  # covered lines; 0..0 covers none
    last: int = 0
    names_files: tuple[str, ...] = ()  # basenames of the JSON files the covered text names
    problem: str | None = None  # why the comment is no directive plint can apply
    used: set = field(default_factory=set, compare=False)  # selectors that suppressed something
    noqa: bool = False  # another linter's `# noqa`: it suppresses nothing, PL004 names plint's directive
    under: set = field(default_factory=set, compare=False)  # codes of findings a bare `# noqa` sits on

    def matching_selector(self, code: str, name: str) -> str | None:
        return next((s for s in self.selectors if s.upper() == code or s.lower() == name), None)


def covers(d: Directive, path: str, line: int | None, code: str, name: str) -> str | None:
    """The selector of d that covers a finding of rule code/name at path:line, or None."""
    if d.problem is not None or d.noqa:
        return None
    selector = d.matching_selector(code, name)
    if selector is None:
        return None
    if path == d.path:
        covered = d.file_wide or (line is not None and d.first <= line <= d.last)
    else:
        covered = path.lower().endswith(".json") and os.path.basename(path) in d.names_files
    return selector if covered else None


def parse_comment(text: str) -> tuple[str | None, tuple[str, ...], str, str | None]:
    """(kind, selectors, reason, problem) of a comment that mentions `plint:`."""
    start = MARK.search(text)
    m = DIRECTIVE.match(text[start.start() :]) if start else None
    if m is None or m.group("kind") not in KINDS:
        return None, (), "", "not a plint directive (expected `# plint: disable=CODES -- reason` or `disable-file=`)"
    rest = SELECTORS.match(m.group("rest") or "")
    if rest is None:
        return m.group("kind"), (), "", f"`{m.group('kind')}=` names no rule (codes or names, comma-separated)"
    selectors = tuple(s.strip() for s in rest.group("list").split(","))
    return m.group("kind"), selectors, rest.group("reason").strip(), None


def _lines(node) -> tuple[int, int]:
    """1-based first and last line of a node; a node ending at column 0 ends on the line before."""
    first, last = node.start_point[0] + 1, node.end_point[0] + 1
    if node.end_point[1] == 0 and last > first:
        last -= 1
    return first, last


def _next_statement(comment):
    node = comment.next_named_sibling
    while node is not None and node.type == "comment":
        node = node.next_named_sibling
    return node


def _trailing_target(comment, line: int):
    """What a trailing directive covers: the statement it ends, or its line alone (None)."""
    parent = comment.parent
    while parent is not None and parent.type in ("heredoc_redirect", "file_redirect"):
        parent = parent.parent  # `cat > f <<EOF  # plint: ...`: the heredoc statement with its body
    if parent is not None and parent.type == "redirected_statement":
        return parent
    if parent is not None and parent.type == "array":
        return None  # an array element's line
    prev = comment.prev_named_sibling
    if prev is not None and prev.type in _STATEMENTS and _lines(prev)[1] == line:
        return prev
    return None


def _noqa_codes(body: str) -> tuple[str, ...] | None:
    """The plint codes a `# noqa` comment names (() for a bare `# noqa`); None when it is no `# noqa`
    or names only other tools' codes (`# noqa: E501` is for them)."""
    m = NOQA.search(body)
    if m is None:
        return None
    named = re.split(r"[\s,]+", m.group("codes") or "")
    ours = tuple(c.upper() for c in named if PLINT_CODE.match(c))
    return ours if ours or not m.group("codes") else None


def read_directives(path: str, text: str) -> list[Directive]:
    """The directives of one shell file, each with the lines it covers (the engine calls it only for a
    file that may hold one: plint.checking.engine.may_hold_directives)."""
    from plint.reading.shell.parse import TooComplex, comments, parse

    data = text.encode("utf-8", "surrogateescape")
    try:
        found_comments = comments(parse(data).root_node)
    except TooComplex:  # not evaluated (PL002), so nothing of it to suppress
        return []
    lines = text.split("\n")  # as tree-sitter counts lines (splitlines would also split at \r, \f, ...)
    found: list[Directive] = []
    for node in sorted(found_comments, key=lambda n: n.start_byte):
        body = data[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")
        start = MARK.search(body)
        noqa = _noqa_codes(body) if start is None else None
        if (start is None and noqa is None) or (
            start is not None and (SOURCE_PATH.match(body) or NAMED_FILE.match(body))
        ):
            continue  # a source-path or source= comment tells the reader where sourced files are: no suppression
        line = node.start_point[0] + 1
        source_line = lines[line - 1] if line <= len(lines) else body
        col = len(data[data.rfind(b"\n", 0, node.start_byte) + 1 : node.start_byte].decode("utf-8", "surrogateescape"))
        kind: str | None
        problem: str | None
        if noqa is not None:
            kind, selectors, reason, problem = "disable", noqa, "", None
            start = NOQA.search(body)
        else:
            kind, selectors, reason, problem = parse_comment(body)
        assert start is not None  # MARK found plint's directive, or NOQA the `# noqa` _noqa_codes read
        d = Directive(
            path,
            line,
            col + start.start() + 1,
            len(source_line) + 1,
            selectors,
            reason,
            kind == "disable-file",
            problem=problem,
            noqa=noqa is not None,
        )
        found.append(d)
        if problem is not None:
            continue
        if d.file_wide:
            d.first, d.last = 1, max(len(lines), 1)
            target = None
            covered_text = text
        else:
            own_line = not source_line[:col].strip()
            target = _next_statement(node) if own_line else _trailing_target(node, line)
            if target is not None:
                d.first, d.last = _lines(target)
                if not own_line:
                    d.last = max(d.last, line)
                covered_text = data[target.start_byte : target.end_byte].decode("utf-8", "surrogateescape")
            elif own_line:
                d.problem = "no statement follows this directive"
                continue
            else:
                d.first = d.last = line
                covered_text = source_line
        d.names_files = tuple(sorted(set(JSON_NAME.findall(covered_text))))
    return found
