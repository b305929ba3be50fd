"""Terminal output, shaped like ruff's full format: per finding a `PL201 [error] tp-spans-nodes` header,
`--> path:line:col`, the numbered source lines of the span with `^` under exactly its characters, the
message (it carries the numbers), `help:` with the fix and its diff, and the docs link; a summary line
closes, with what `plint fix` would fix. A fixable finding carries ruff's `[*]` after its severity.
`--concise` gives one `path:line:col: CODE [severity] [*] message` line per finding (problem matchers).

Suppressed findings are only counted. Colour (rich, imported only then) as plint.report.color decides:
a terminal by default, so pre-commit and CI logs stay plain and deterministic unless FORCE_COLOR."""

from __future__ import annotations

from plint.report.common import counts, docs_url, fix_of, printable, visible, where
from plint.escape import log
from plint.source import read_through

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Callable

MAX_SNIPPET_LINES = 3  # a longer span (a whole command) shows its first and last lines around an ellipsis
TAB_WIDTH = 4
HEADER_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}

# A rendered line is a list of (style, text) segments; style "" is plain.
Line = list


def render(
    results, concise: bool = False, color: bool | None = None, detail: str = "default", statistics: bool = False
) -> str:
    """The report for `plint check --format text`; `color=None` decides from the terminal. `detail`:
    "quiet" (the findings alone: nothing for a clean run), "default" (the layout and estimate of a file
    when a finding concerns them or when only one file is checked) or "verbose" (every file's)."""
    quiet = detail == "quiet"
    closing = [] if quiet else closing_lines(results)
    pairs = visible(results, errors_first=False)
    if statistics:
        return "\n".join(statistics_lines(pairs) + closing)
    if concise:
        return "\n".join([concise_line(d) for _, d in pairs] + closing)
    sources = SourceLines()
    blocks: list[list[Line]] = []
    for r in results:
        if not shows_layout(r, detail, len(results)):
            continue
        for layout in r.layouts:
            block = [[("dim", f"{r.path}: {layout_line(layout)}")], *estimate_lines(layout)]
            if layout.extras.dry_run is not None:  # `check --dry-run`
                block += [[("", line)] for line in dry_run_lines(layout.extras.dry_run)]
            blocks.append(block)
    for r, d in pairs:  # snippets are read back only from where the check read (plint.root)
        sources.root = getattr(r.reading, "root", None)
        blocks.append(finding_lines(d, sources))
    if closing:
        blocks.append([[("bold", closing[0])]] + [[("green", line)] for line in closing[1:]])
    if color is None:
        from plint.report.color import use_color

        color = bool(pairs) and use_color("auto")
    blocks = [[[(style, log(text)) for style, text in line] for line in block] for block in blocks]
    return (
        _coloured(blocks)
        if color
        else "\n\n".join("\n".join("".join(text for _, text in line) for line in block) for block in blocks)
    )


# Families whose findings are about the layout and its estimate (arithmetic, topology, efficiency,
# memory): with several files, a file's layout block is shown only beside one of these.
LAYOUT_FAMILIES = ("PL1", "PL2", "PL3", "PL4")


def shows_layout(result, detail: str, files: int) -> bool:
    if detail != "default":
        return detail == "verbose"
    return files == 1 or any(d.suppressed is None and d.code.startswith(LAYOUT_FAMILIES) for d in result.diagnostics)


FIXABLE_MARK = "[*]"


def fix_mark(d) -> str:
    """` [*]` after the severity of a finding `plint fix` fixes (ruff's mark); unsafe fixes are named in
    the help line and counted in the closing line, as ruff does."""
    fix = fix_of(d)
    return f" {FIXABLE_MARK}" if fix is not None and fix["applicability"] == "safe" else ""


def concise_line(d) -> str:
    """One line per finding; control characters from the files shown as escapes, never sent to the
    terminal (report.common.printable)."""
    return log(f"{where(d)}: {d.code} [{d.severity}]{fix_mark(d)} {d.message}")


def summary_line(results) -> str:
    c = counts(results)
    text = f"{c['files']} file(s) checked: {c['error']} error(s), {c['warning']} warning(s), {c['info']} info"
    return text + (f", {c['suppressed']} suppressed" if c["suppressed"] else "")


def fixable_counts(results) -> tuple[int, int]:
    """Visible findings with a safe fix, and those whose only fix is unsafe."""
    safe = unsafe = 0
    for _, d in visible(results, errors_first=False):
        fix = fix_of(d)
        if fix is not None:
            if fix["applicability"] == "safe":
                safe += 1
            else:
                unsafe += 1
    return safe, unsafe


def fixable_line(safe: int, unsafe: int) -> str | None:
    """ruff's closing hint, in plint's commands: what `plint fix` would fix, and what more
    `--unsafe-fixes` would."""
    if safe and unsafe:
        return f"{FIXABLE_MARK} {safe} fixable with `plint fix`, {unsafe} more with `plint fix --unsafe-fixes`"
    if safe:
        return f"{FIXABLE_MARK} {safe} fixable with `plint fix`"
    if unsafe:
        return f"{unsafe} fixable with `plint fix --unsafe-fixes`"
    return None


def closing_lines(results) -> list[str]:
    hint = fixable_line(*fixable_counts(results))
    return [summary_line(results)] + ([hint] if hint else [])


def statistics_lines(pairs) -> list[str]:
    """`--statistics`: per rule, how many findings, whether `plint fix` fixes them, and the rule's name;
    most frequent first (ruff's table)."""
    rows: dict[str, list] = {}
    for _, d in pairs:
        row = rows.setdefault(d.code, [0, d.name, d.severity, False])
        row[0] += 1
        row[3] = row[3] or bool(fix_mark(d))
    ordered = sorted(rows.items(), key=lambda item: (-item[1][0], item[0]))
    width = max((len(str(row[0])) for _, row in ordered), default=1)
    return [
        f"{count:>{width}}\t{code}\t{FIXABLE_MARK if fixed else '   '} [{severity}] {name}"
        for code, (count, name, severity, fixed) in ordered
    ]


def layout_line(layout) -> str:
    """One short line per launch: who launches what on how many GPUs, split how."""
    v = layout.value
    parts = [
        f"launcher={v('launcher') or '-'}",
        f"trainer={v('trainer')}",
        f"nodes={_q(v('cluster.nnodes'))}",
        f"gpus/node={_q(v('cluster.gpus_per_node'))}{_assumed_mark(layout)}",
        f"world={_q(v('cluster.world_size'))}",
    ]
    for axis in ("tp", "pp", "vpp", "cp", "ep", "dp"):
        value = v(f"parallel.{axis}")
        if value is not None:
            parts.append(f"{axis}={value}")
    for key, label in (("batch.micro", "micro"), ("batch.global", "global")):
        if v(key) is not None:
            parts.append(f"{label}={v(key)}")
    return " ".join(parts)


BAR_WIDTH = 32
MEMORY_PARTS = ("weights", "grads", "optimizer", "activations", "other")
TIME_PARTS = ("compute", "recompute", "tp", "cp", "ep", "pp", "bubble", "dp", "optimizer")
_SHADES = "█▓▒░▚▞▄▀·"  # one glyph per part: a legend never names two parts with the same one
TIME_LABELS = {"tp": "TP comm", "cp": "CP comm", "ep": "EP all-to-all", "pp": "PP sends", "dp": "DP comm"}


def estimate_lines(layout) -> list[Line]:
    """The cost model's breakdown under the layout line: memory per GPU and the step by part, each
    as a stacked bar (memory against usable HBM, time against the whole step) and its numbers."""
    cached = layout.extras.estimate
    est = cached[1] if cached else None
    if est is None:
        from plint.cost.layout_estimate import estimate_gaps

        gaps = estimate_gaps(layout)
        return [[("dim", f"  no memory or step estimate: {'; '.join(gaps)}")]] if gaps else []
    mem = est.memory_gib
    memory_parts = [(k, mem[k]) for k in MEMORY_PARTS if mem.get(k, 0) > 0.05]
    time_parts = [(k, v) for k, v in ((k, est.time_s.get(k, 0.0)) for k in TIME_PARTS) if v > 0.0005 * est.step_time_s]
    over = mem["total"] > mem["usable"]
    # a middle pipeline rank is the busiest where an uneven split puts more there: say which
    rank = f" on pipeline rank {mem['allocator_peak_rank']}" if mem.get("allocator_peak_stage") == "middle" else ""
    memory = (
        f"  memory/GPU {_bar(memory_parts, max(mem['usable'], mem['total']))} {mem['total']:.1f} of "
        f"{mem['usable']:.1f} GiB usable{' (OVER)' if over else ''}{rank}: " + _legend(memory_parts, "{:.1f}".format)
    )
    # the step's +- is the cost model's measured error on published runs (cost.error_band.MEASURED_STEP_ERROR);
    # MFU is over the bf16 peak whatever the precision (Megatron's convention): say so where fp8 doubles it
    peak = " of the bf16 peak" if layout.value("precision") == "fp8" else ""
    time = (
        f"  step       {_bar(time_parts, est.step_time_s)} {_secs(est.step_time_s)} s +-{100 * est.step_error:.0f}%, "
        f"MFU {100 * est.mfu:.1f}%{peak}, "
        f"{est.tokens_per_s_per_gpu:,.0f} tokens/s per GPU: " + _legend(time_parts, _secs)
    )
    lines = [[("dim", gpu_line(layout))], [("red" if over else "dim", memory)], [("dim", time)]]
    if _assumed_mark(layout):  # the estimate rests on a node size plint assumed: say so beside the GPU's
        lines.insert(
            1,
            [
                (
                    "dim",
                    f"  GPUs/node  {layout.value('cluster.gpus_per_node')}: assumed, "
                    f"{layout.get('cluster.gpus_per_node').note}",
                )
            ],
        )
    lines += [[("dim", f"  ({note})")] for note in est.notes]
    return lines


def gpu_line(layout) -> str:
    """The GPU whose memory and peak the estimate assumes, and where that GPU came from: read from the
    launch, given (--gpu or the config), or plint's assumption with why."""
    from plint.catalog.hardware import lookup_gpu

    gpu = layout.get("cluster.gpu")
    spec = lookup_gpu(gpu.value) if gpu is not None else None
    if spec is None:
        return "  GPU        unknown"
    figures = f"{spec.name}, {spec.hbm_gib:g} GiB, {spec.peak_tflops('bf16'):g} TFLOP/s dense bf16"
    memory = layout.get("cluster.gpu_memory_gib")
    note = f" ({gpu.note})" if gpu.note else ""
    if memory is not None and memory.origin == "assumed":  # no GPU named anywhere: plint's default
        return f"  GPU        {figures}: assumed, {gpu.note}"
    if gpu.span is not None:
        return f"  GPU        {figures}: {gpu.span.path}:{gpu.span.line}{note}"
    if gpu.origin == "assumed":
        return f"  GPU        {figures}: given by --gpu or [tool.plint] gpu{note}"
    return f"  GPU        {figures}{note}"


def _bar(parts, full: float) -> str:
    text, used = "", 0.0
    for i, (_, value) in enumerate(parts):
        used += value
        end = round(BAR_WIDTH * used / full) if full > 0 else 0
        text += _SHADES[i % len(_SHADES)] * max(0, end - len(text))
    return f"[{text:<{BAR_WIDTH}}]"


def _secs(x: float) -> str:
    return f"{x:.2f}" if x >= 1 else f"{x:.3g}"


def _legend(parts, fmt: Callable[[float], str]) -> str:
    return "  ".join(
        f"{_SHADES[i % len(_SHADES)]} {TIME_LABELS.get(name, name)} {fmt(value)}"
        for i, (name, value) in enumerate(parts)
    )


def _assumed_mark(layout) -> str:
    """Marks a node size plint assumed (a launch on every GPU of its node, the count unstated) in the header."""
    per_node = layout.get("cluster.gpus_per_node")
    return " (assumed)" if per_node is not None and per_node.known and per_node.origin == "assumed" else ""


def _q(value) -> str:
    return "?" if value is None else str(value)


def finding_lines(d, sources: SourceLines) -> list[Line]:
    out: list[Line] = [
        [(HEADER_STYLE.get(d.severity, "bold"), f"{d.code} [{d.severity}]{fix_mark(d)} {d.name}")],
        [("blue", "  --> "), ("", where(d))],
    ]
    if d.line:
        out += snippet(
            sources.lines(d.path),
            d.line,
            d.col or 1,
            d.end_line or d.line,
            d.end_col if d.end_line else None,
            HEADER_STYLE.get(d.severity, "bold"),
        )
    out.append([("", f"  = {d.message}")])
    fix = fix_of(d)
    if fix is not None:
        unsafe = " (unsafe fix: `plint fix --unsafe-fixes`)" if fix["applicability"] != "safe" else ""
        out.append([("green", f"  help: {fix['description']}{unsafe}")])
        out += [[(style, f"    {text}")] for style, text in fix_diff(fix["edits"], sources)]
    out.append([("dim", f"  docs: {docs_url(d.code)}")])
    return out


def snippet(
    lines: list[str] | None, line: int, col: int, end_line: int, end_col: int | None, caret_style: str = "bold red"
) -> list[Line]:
    """Numbered source lines of a span with carets under its characters; nothing when the file cannot
    be read back (a virtual file, a deleted file)."""
    if not lines or not 0 < line <= len(lines):
        return []
    if end_line > line and end_col == 1:  # the span ends at the start of a line: that line is not in it
        end_line -= 1
        end_col = None
    end_line = max(line, min(end_line, len(lines)))
    numbers: list[int | None] = list(range(line, end_line + 1))
    if len(numbers) > MAX_SNIPPET_LINES:
        numbers = [numbers[0], None, numbers[-1]]
    gutter = len(str(end_line))
    bar = " " * gutter + " |"
    out: list[Line] = [[("blue", bar)]]
    for n in numbers:
        if n is None:
            out.append([("blue", "...")])
            continue
        text = lines[n - 1]
        first = col - 1 if n == line else _indent(text)
        last = (end_col - 1 if end_col else len(text)) if n == end_line else len(text)
        first = max(0, min(first, len(text)))
        last = max(first, min(last, len(text)))
        text, first, last = _window(text, first, last)
        display, offsets = _display(text)
        start, stop = offsets[first], offsets[last]
        out.append([("blue", f"{n:>{gutter}} | "), ("", display)])
        out.append([("blue", bar + " "), (caret_style, " " * start + "^" * max(1, stop - start))])
    return out


def _window(text: str, first: int, last: int, width: int = 240) -> tuple[str, int, int]:
    """A long line cut to `width` characters around the span [first, last) (a 4 MiB one-line file
    prints no megabytes), with the span's offsets in the cut text."""
    if len(text) <= width:
        return text, first, last
    lo = max(0, first - width // 3)
    hi = min(len(text), max(last, first + 1, lo + width // 2), lo + width)
    head, tail = ("..." if lo else ""), ("..." if hi < len(text) else "")
    shift = lo - len(head)
    return head + text[lo:hi] + tail, first - shift, min(last, hi) - shift


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _display(text: str) -> tuple[str, list[int]]:
    """The line as a terminal shows it (tabs expanded, wide characters two cells) and, for each
    character index (and the end), its display column: spans count characters, carets count cells."""
    cells, offsets, pos = [], [], 0
    wide = None if text.isascii() else __import__("unicodedata")
    for ch in text:
        offsets.append(pos)
        if ch == "\t":
            width = TAB_WIDTH - pos % TAB_WIDTH
            cells.append(" " * width)
        elif not ch.isprintable() and printable(ch) != ch:  # a control character: its escape, as wide
            cells.append(printable(ch))
            width = len(cells[-1])
        else:
            width = 1
            if wide is not None:
                if wide.combining(ch):
                    width = 0
                elif wide.east_asian_width(ch) in ("W", "F"):
                    width = 2
            cells.append(ch)
        pos += width
    offsets.append(pos)
    return "".join(cells), offsets


def fix_diff(edits: list[dict], sources: SourceLines) -> list[tuple[str, str]]:
    """`- old` / `+ new` lines for each edit (edits are byte ranges of the file they name)."""
    out: list[tuple[str, str]] = []
    for edit in edits:
        data = sources.data(edit["path"])
        if data is None:
            continue
        start, end = max(0, edit["start"]), min(len(data), edit["end"])
        line_start = data.rfind(b"\n", 0, start) + 1
        line_end = data.find(b"\n", end)
        line_end = len(data) if line_end < 0 else line_end
        old = data[line_start:line_end].decode("utf-8", "replace")
        new = (data[line_start:start] + edit["text"].encode("utf-8", "surrogateescape") + data[end:line_end]).decode(
            "utf-8", "replace"
        )
        removed, added = _changed_lines(old.split("\n"), new.split("\n") if new else [])
        out += [("red", f"- {text}") for text in removed]
        out += [("green", f"+ {text}") for text in added]
    return out


def _changed_lines(old: list[str], new: list[str]) -> tuple[list[str], list[str]]:
    """The lines an edit changes, without the whole lines it leaves as they were at either end (an edit that
    deletes a line through its newline spans the next line too, which it keeps)."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return old[head : len(old) - tail], new[head : len(new) - tail]


class SourceLines:
    """Files read back from disk once each, for snippets and diffs: through the root of the check
    that reported them (`root`, plint.root), so nothing outside it is ever shown."""

    def __init__(self) -> None:
        self._data: dict[tuple, bytes | None] = {}
        self.root = None

    def data(self, path: str) -> bytes | None:
        key = (self.root, path)
        if key not in self._data:
            try:  # standard input checked as this file (`plint check -`) reads as its bytes
                self._data[key] = read_through(self.root, path)
            except (OSError, ValueError):
                self._data[key] = None
        return self._data[key]

    def lines(self, path: str) -> list[str] | None:
        """Lines split on newlines only, as bash and the span line numbers count them."""
        data = self.data(path)
        if data is None or b"\0" in data:
            return None
        # "replace" keeps one character per undecodable byte (as the spans count) and stays printable
        return [line.removesuffix("\r") for line in data.decode("utf-8", "replace").split("\n")]


def _coloured(blocks: list[list[Line]]) -> str:
    from plint.report.color import paint

    lines: list[Line] = []
    for i, block in enumerate(blocks):
        lines += ([[]] if i else []) + block  # a blank line between blocks
    return paint(lines).rstrip("\n")


def dry_run_lines(result: dict) -> list[str]:
    """The finished dry run (plint.dryrun.groups.dry_run's result) in `plint check --dry-run`'s text
    report: a summary line, then one per problem."""
    counts = result.get("group_counts") or {}
    shown = ", ".join(
        f"{k} {n}x{size}" for k, (n, size) in counts.items() if k in ("tp", "pp", "dp", "cp", "ep") and size > 1
    )
    cover = result.get("coverage")
    checked = f", {cover['ranks']} of {cover['of']} ranks built" if cover else ""
    verdict = "ok" if result.get("ok") else f"{len(result.get('problems') or [])} problem(s)"
    lines = [
        f"dry run ({result.get('backend')}, world {result.get('world_size')}{checked}): {verdict}"
        + (f"; groups {shown}" if shown else "")
    ]
    lines += [f"  {p['kind']} ({p['source']}): {p['message']}" for p in result.get("problems") or []]
    lines += [f"  note: {n}" for n in result.get("notes") or [] if "analytic rank layout only" in n]
    return lines
