"""The sticky pull-request comment's body: a hidden marker (how plint finds its own comment again), a
summary line, per file its layout line and memory/step estimate, the findings linked to their lines at
the head commit, single-line fixes as a folded diff (the one-click ```suggestion is the review's,
plint.github.review), details folded, and a link to the run; never
over GitHub's 65,536 characters (the rest is cut with a note).

File-derived text goes through the markdown report's escaping (`escape`, `code_span`): a launch file
cannot put a mention, a link or HTML into the comment."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import quote

from plint.report.common import counts, fix_of, printable, visible
from plint.report.markdown import ICON, inline_markdown, code_span, in_html, inert, rule_details, size_of
from plint.root import Root

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
        return cls(
            env.get("GITHUB_SERVER_URL", "https://github.com"),
            env.get("GITHUB_REPOSITORY", ""),
            sha or env.get("GITHUB_SHA", ""),
            env.get("GITHUB_RUN_ID", ""),
            env.get("GITHUB_WORKSPACE", "") or os.getcwd(),
        )

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
    head = [
        MARKER,
        "## plint",
        "",
        f"**{c['files']} file(s) checked: {c['error']} error(s), {c['warning']} warning(s), {c['info']} info**"
        + (f" ({c['suppressed']} suppressed)" if c["suppressed"] else ""),
        "",
    ]
    tail = _footer(ctx)
    if not pairs:
        return inert("\n".join(head + ["✅ All clear: no findings.", ""] + tail) + "\n")
    budget = LIMIT - RESERVE - size_of(head) - size_of(tail)
    body: list[str] = []
    shown = 0
    for r in results:
        block = _file_block(r, ctx)
        if size_of(body) + size_of(block) > budget:
            body += [
                f"… {len(pairs) - shown} more finding(s) not shown (GitHub's comment limit): the job "
                "summary and `plint check --format json` list them all.",
                "",
            ]
            break
        body += block
        shown += sum(1 for d in r.diagnostics if d.suppressed is None)
    details = rule_details(sorted({d.code for _, d in pairs}))
    if size_of(body) + size_of(details) <= budget:
        body += details
    text = inert("\n".join(head + body + tail) + "\n")
    return text if len(text) <= LIMIT else text[: LIMIT - 200] + "\n\n… cut at GitHub's comment limit.\n"


def _file_block(r, ctx: Context) -> list[str]:
    from plint.report.text import estimate_lines, layout_line

    diagnostics = [d for d in sorted(r.diagnostics, key=lambda d: d.sort_key()) if d.suppressed is None]
    out = [f"### {code_span(ctx.rel(r.path))}", ""]
    for layout in r.layouts:
        out.append(f"- layout: {code_span(layout_line(layout))}")
        out += _estimate_block(estimate_lines(layout))
    if r.layouts:
        out.append("")
    if not diagnostics:
        return out + ["No findings.", ""]
    for d in diagnostics:
        where = code_span(f"{ctx.rel(d.path)}:{d.line}" if d.line else ctx.rel(d.path))
        url = ctx.line_url(d.path, d.line)
        out.append(
            f"- {ICON.get(d.severity, '')} **{d.code}** `{d.name}` at {f'[{where}]({url})' if url else where}: "
            f"{inline_markdown(d.message)}"
        )
        out += _suggestion(d, ctx)
    return out + [""]


def _estimate_block(lines) -> list[str]:
    """The memory and step bars in a code block: a code span collapses the spaces that pad a bar to its
    width (and the page wraps it), a block keeps each bar's proportions."""
    if not lines:
        return []
    text = [printable("".join(t for _, t in line).rstrip()) for line in lines]
    fence = "`" * max(3, max((len(run) for t in text for run in re.findall("`+", t)), default=0) + 1)
    return ["", f"  {fence}text", *(f"  {t}" for t in text), f"  {fence}"]


@dataclass(frozen=True)
class LineFix:
    """A fix that edits one line: that line's number, its text now and after the fix."""

    line: int
    old: str
    new: str
    description: str

    def fence(self) -> str:
        """A code fence longer than any run of backticks in either line (the file's text cannot close it)."""
        runs = [len(run) for text in (self.old, self.new) for run in re.findall("`+", text)]
        return "`" * max(3, max(runs, default=0) + 1)


def line_fix(d, ctx: Context) -> LineFix | None:
    """The diagnostic's fix when it edits a single line of a file inside the workspace (the only files
    read for it); longer fixes are left to `plint fix`."""
    fix = fix_of(d)
    if not fix or len(fix["edits"]) != 1:
        return None
    edit = fix["edits"][0]

    try:
        data = Root((os.path.realpath(ctx.workspace or os.getcwd()),)).read(edit["path"])
    except OSError:
        return None
    start, end = edit["start"], edit["end"]
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    line_end = len(data) if line_end < 0 else line_end
    if b"\n" in data[start:end] or "\n" in edit["text"]:
        return None
    old = data[line_start:line_end].decode("utf-8", "replace")
    new = (data[line_start:start] + edit["text"].encode() + data[end:line_end]).decode("utf-8", "replace")
    if printable(old) != old or printable(new) != new:  # control characters: shown escaped, never committed so
        return None
    return LineFix(data.count(b"\n", 0, line_start) + 1, old, new, fix["description"] or "suggested edit")


def _suggestion(d, ctx: Context) -> list[str]:
    """A one-line fix as a diff of that line, folded. An issue comment cannot carry a one-click
    `suggestion` (GitHub offers "Commit suggestion" on review comments only): those are in the review
    (plint.github.review)."""
    fix = line_fix(d, ctx)
    if fix is None:
        return []
    fence = fix.fence()
    return [
        f"  <details><summary>fix: {in_html(fix.description)}</summary>",
        "",
        f"  {fence}diff",
        f"  -{fix.old}",
        f"  +{fix.new}",
        f"  {fence}",
        "",
        "  </details>",
    ]


def _footer(ctx: Context) -> list[str]:
    url = ctx.run_url()
    sha = f" at `{ctx.sha[:7]}`" if ctx.sha else ""
    return [f"<sub>plint{sha}{f' · [the run]({url})' if url else ''}</sub>"]
