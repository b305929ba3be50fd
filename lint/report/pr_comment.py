"""The sticky pull-request comment's body: a hidden marker (how plint finds its own comment again), a
summary line, per file its layout line and memory/step estimate, the findings linked to their lines at
the head commit, single-line fixes as ```suggestion blocks, details folded, and a link to the run; never
over GitHub's 65,536 characters (the rest is cut with a note).

File-derived text goes through the markdown report's escaping (`escape`, `code_span`): a launch file
cannot put a mention, a link or HTML into the comment."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import quote

from plint.report.common import counts, fix_of, printable, visible
from plint.report.markdown import ICON, _inline, code_span, escape, rule_details

MARKER = "<!-- plint:sticky-comment -->"  # first line of our comment; the markdown report's is `<!-- plint -->`
LIMIT = 65_536  # GitHub's limit on a comment body, in characters
RESERVE = 2_000  # kept for the closing lines and the truncation note


@dataclass
class Context:
    server: str = "https://github.com"
    repository: str = ""
    sha: str = ""
    run_id: str = ""
    workspace: str = ""  # paths in links are relative to it

    @classmethod
    def from_env(cls, env=None, sha: str = "") -> "Context":
        env = os.environ if env is None else env
        return cls(env.get("GITHUB_SERVER_URL", "https://github.com"), env.get("GITHUB_REPOSITORY", ""),
                   sha or env.get("GITHUB_SHA", ""), env.get("GITHUB_RUN_ID", ""),
                   env.get("GITHUB_WORKSPACE", "") or os.getcwd())

    def rel(self, path: str) -> str:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(self.workspace or os.getcwd()))
        return rel.replace(os.sep, "/")

    def line_url(self, path: str, line: int | None) -> str | None:
        rel = self.rel(path)
        if not (self.repository and self.sha) or rel.startswith("../"):
            return None
        return f"{self.server}/{self.repository}/blob/{self.sha}/{quote(rel)}" + (f"#L{line}" if line else "")

    def run_url(self) -> str | None:
        if not (self.repository and self.run_id):
            return None
        return f"{self.server}/{self.repository}/actions/runs/{self.run_id}"


def render(results, ctx: Context | None = None) -> str:
    ctx = ctx or Context.from_env()
    c = counts(results)
    pairs = visible(results, errors_first=False)
    head = [MARKER, "## plint", "",
            f"**{c['files']} file(s) checked: {c['error']} error(s), {c['warning']} warning(s), {c['info']} info**"
            + (f" ({c['suppressed']} suppressed)" if c["suppressed"] else ""), ""]
    tail = _footer(ctx)
    if not pairs:
        return "\n".join(head + ["✅ All clear: no findings.", ""] + tail) + "\n"
    budget = LIMIT - RESERVE - _size(head) - _size(tail)
    body: list[str] = []
    shown = 0
    for r in results:
        block = _file_block(r, ctx)
        if _size(body) + _size(block) > budget:
            body += [f"… {len(pairs) - shown} more finding(s) not shown (GitHub's comment limit): the job "
                     "summary and `plint check --format json` list them all.", ""]
            break
        body += block
        shown += sum(1 for d in r.diagnostics if d.suppressed is None)
    details = rule_details(sorted({d.code for _, d in pairs}))
    if _size(body) + _size(details) <= budget:
        body += details
    text = "\n".join(head + body + tail) + "\n"
    return text if len(text) <= LIMIT else text[:LIMIT - 200] + "\n\n… cut at GitHub's comment limit.\n"


def _file_block(r, ctx: Context) -> list[str]:
    from plint.report.text import estimate_lines, layout_line

    diagnostics = [d for d in sorted(r.diagnostics, key=lambda d: d.sort_key()) if d.suppressed is None]
    out = [f"### {code_span(ctx.rel(r.path))}", ""]
    for layout in r.layouts:
        out.append(f"- layout: {code_span(layout_line(layout))}")
        for line in estimate_lines(layout):
            out.append(f"  - {code_span(''.join(text for _, text in line).strip())}")
    if r.layouts:
        out.append("")
    if not diagnostics:
        return out + ["No findings.", ""]
    for d in diagnostics:
        where = code_span(f"{ctx.rel(d.path)}:{d.line}" if d.line else ctx.rel(d.path))
        url = ctx.line_url(d.path, d.line)
        out.append(f"- {ICON.get(d.severity, '')} **{d.code}** `{d.name}` at {f'[{where}]({url})' if url else where}: "
                   f"{_inline(d.message)}")
        out += _suggestion(d, ctx)
    return out + [""]


def _suggestion(d, ctx: Context) -> list[str]:
    """A fix that edits one line, as that line would read after it (```suggestion); longer fixes are
    left to `plint fix`. Only a file inside the workspace is read for it."""
    fix = fix_of(d)
    if not fix or len(fix["edits"]) != 1:
        return []
    edit = fix["edits"][0]
    from plint.root import Root

    try:
        data = Root((os.path.realpath(ctx.workspace or os.getcwd()),)).read(edit["path"])
    except OSError:
        return []
    start, end = edit["start"], edit["end"]
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    line_end = len(data) if line_end < 0 else line_end
    if b"\n" in data[start:end] or "\n" in edit["text"]:
        return []
    new = (data[line_start:start] + edit["text"].encode() + data[end:line_end]).decode("utf-8", "replace")
    new = printable(new)
    fence = "`" * max(3, max((len(run) for run in re.findall("`+", new)), default=0) + 1)
    return [f"  <details><summary>fix: {escape(fix['description'] or 'suggested edit')}</summary>", "",
            f"  {fence}suggestion", f"  {new}", f"  {fence}", "", "  </details>"]


def _footer(ctx: Context) -> list[str]:
    url = ctx.run_url()
    sha = f" at `{ctx.sha[:7]}`" if ctx.sha else ""
    return [f"<sub>plint{sha}{f' · [the run]({url})' if url else ''}</sub>"]


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)
