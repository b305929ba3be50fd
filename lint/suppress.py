"""Inline suppression: `# plint: disable=CODE|name[,...] -- reason` comments in shell files.

A comment on its own line (anywhere in the comment block right above a statement, so it stacks with
`# shellcheck disable=...`) covers the whole statement: a 30-line `torchrun ... \\` command, an
`ARGS=( ... )` array, a heredoc with its body. A trailing comment covers its own line (a one-line
statement or an array element). `# plint: disable-file=...` anywhere covers the file. A directive
on a statement that names or writes a JSON file (`--deepspeed_config ds.json`, `cat <<EOF > ds.json`)
also covers findings in that JSON, which cannot hold comments. Directives that suppress nothing are
reported (PL004).
"""

from __future__ import annotations

import os
import re

from plint.record import field, record

DIRECTIVE = re.compile(r"#\s*plint:\s*(disable|disable-file)\s*=\s*([A-Za-z0-9_,\- ]+?)\s*(?:--\s*(.*))?$")


@record
class Directive:
    path: str
    line: int  # the comment's line
    col: int
    end_col: int
    selectors: tuple[str, ...]
    reason: str
    file_wide: bool
    first: int = 0  # covered lines
    last: int = 0
    names_files: tuple[str, ...] = ()  # basenames of JSON files the covered statement names
    used: bool = field(default=False, compare=False)

    def matches(self, code: str, name: str) -> bool:
        return any(s.upper() == code or s.lower() == name for s in self.selectors)


def _statement_ranges(data: bytes) -> list[tuple[int, int, int, int]]:
    """(start_line, end_line, start_byte, end_byte) of top-level and nested statements, 1-based lines."""
    from plint.shell.parse import parse

    tree = parse(data)
    out = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        for child in node.named_children:
            if child.type in ("comment", "heredoc_body"):
                continue
            if child.is_named and child.type not in ("word", "string", "number", "concatenation",
                                                     "simple_expansion", "expansion", "raw_string"):
                end = child.end_point[0] + 1
                if child.type == "redirected_statement" and child.end_byte and data[child.end_byte - 1:child.end_byte] == b"\n":
                    end -= 1
                out.append((child.start_point[0] + 1, end, child.start_byte, child.end_byte))
                if child.type in ("compound_statement", "if_statement", "for_statement", "while_statement",
                                  "case_statement", "case_item", "function_definition", "do_group",
                                  "subshell", "elif_clause", "else_clause", "list", "pipeline"):
                    stack.append(child)
    return out


def read_directives(path: str, text: str) -> list[Directive]:
    lines = text.splitlines()
    found: list[Directive] = []
    for i, line in enumerate(lines, 1):
        if "plint:" not in line:
            continue
        hash_at = line.find("#")
        while hash_at >= 0:
            m = DIRECTIVE.match(line[hash_at:])
            if m:
                break
            hash_at = line.find("#", hash_at + 1)
        if hash_at < 0 or not m:
            continue
        selectors = tuple(s.strip() for s in m.group(2).split(",") if s.strip())
        found.append(Directive(path, i, hash_at + 1, len(line) + 1, selectors, (m.group(3) or "").strip(),
                               m.group(1) == "disable-file"))
    if not found:
        return found
    data = text.encode("utf-8", "surrogateescape")
    ranges = None
    for d in found:
        if d.file_wide:
            d.first, d.last = 1, len(lines)
            continue
        own_line = lines[d.line - 1].lstrip().startswith("#")
        if not own_line:
            d.first = d.last = d.line
            continue
        # the statement after the contiguous comment block
        j = d.line
        while j < len(lines) and (lines[j].lstrip().startswith("#") or not lines[j].strip()):
            j += 1
        target = j + 1
        ranges = ranges if ranges is not None else _statement_ranges(data)
        best = None
        for start, end, sb, eb in ranges:
            if start == target and (best is None or end > best[1]):
                best = (start, end, sb, eb)
        if best is None:
            d.first = d.last = target
            continue
        d.first, d.last = best[0], best[1]
        body = data[best[2]:best[3]].decode("utf-8", "surrogateescape")
        d.names_files = tuple(sorted(set(os.path.basename(m) for m in re.findall(r"[\w./${}-]+\.json", body))))
    return found


def covers(d: Directive, path: str, line: int | None, code: str, name: str) -> bool:
    if not d.matches(code, name):
        return False
    if path == d.path:
        return line is None and d.file_wide or line is not None and d.first <= line <= d.last
    return path.endswith(".json") and os.path.basename(path) in d.names_files
