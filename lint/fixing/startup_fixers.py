"""Unsafe fixers for the trainers' start-up checks (they change the batch or the optimizer the run gets):

- PL102 (ramp): --rampup-batch-size START INCREMENT moved onto multiples of micro-batch x dp.
- PL113: the flag Megatron refuses beside --step-batch-size-schedule is removed.
- PL106 (plain DeepSpeed): train_batch_size set to what the launch's dp makes of the other two.
- PL508: an optimizer parameter the built optimizer refuses is removed from optimizer.params.
"""

from __future__ import annotations

from plint.fixing.fix_registry import FixContext, ds_configs, trainer_args_of, fixer, replace_in_span
from plint.fixing.layout_fixers import layout_context
from plint.rules.base import Edit, Fix

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.diagnostics import Diagnostic


@fixer("PL102")
def fix_ramp(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    if diag.key != "batch.rampup":
        return None
    rctx = layout_context(diag, ctx)
    args = trainer_args_of(rctx) if rctx is not None else None
    use = args.get("--rampup-batch-size") if args is not None else None
    sizes = [rctx.layout.value(k) for k in ("batch.global", "batch.micro", "parallel.dp")] if use else []
    if use is None or len(use.values) != 3 or not all(isinstance(x, int) and x > 0 for x in sizes):
        return None
    glob, micro, dp = sizes
    unit = micro * dp
    try:
        start, step = int(use.values[0].text), int(use.values[1].text)
    except (TypeError, ValueError):
        return None
    new_start = max(unit, round(start / unit) * unit)
    new_step = max(unit, round(step / unit) * unit)
    if glob % unit or new_start >= glob:
        return None  # the global batch itself is PL102's other fix; a ramp that cannot start below it is the author's
    if (glob - new_start) % new_step:
        new_step = unit
    edits = []
    for word, old, new in ((use.values[0], start, new_start), (use.values[1], step, new_step)):
        if old != new:
            edit = replace_in_span(ctx, word.value_span, word.text, str(new))
            if edit is None:
                return None
            edits.append(edit)
    if len(edits) == 2 and edits[0].path == edits[1].path and edits[0].start == edits[1].start:
        return None  # both written by one character range: not ours to split
    return (
        Fix(
            f"ramp {start} +{step} -> {new_start} +{new_step}, multiples of micro-batch {micro} x dp {dp}",
            tuple(edits),
            "unsafe",
        )
        if edits
        else None
    )


def _drop_words(ctx: FixContext, first, last) -> Edit | None:
    """Remove the words from `first` to `last` (spans in one line), or their whole line when they
    stand alone on it."""
    if first is None or last is None or first.path != last.path or first.line != last.line:
        return None
    data = ctx.data(first.path)
    if data is None:
        return None
    line_start = data.rfind(b"\n", 0, first.start) + 1
    line_end = data.find(b"\n", last.end)
    line_end = len(data) if line_end == -1 else line_end
    rest = data[line_start : first.start] + data[last.end : line_end]
    if rest.strip(b" \t\\") == b"" and line_end < len(data):
        return Edit(first.path, line_start, line_end + 1, "")
    start = first.start - 1 if first.start > 0 and data[first.start - 1 : first.start] == b" " else first.start
    return Edit(first.path, start, last.end, "")


@fixer("PL113")
def fix_schedule_conflict(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    rctx = layout_context(diag, ctx)
    args = trainer_args_of(rctx) if rctx is not None else None
    if args is None:
        return None
    for flag in ("--global-batch-size", "--decrease-batch-size-if-needed"):
        use = args.get(flag)
        if use is None or f" with {flag}" not in diag.message or use.inline_value:
            continue
        first = use.flag_word.value_span
        data = ctx.data(first.path) if first is not None else None
        if data is None or data[first.start : first.end] != flag.encode():
            return None
        last = use.values[-1].value_span if use.values else first
        edit = _drop_words(ctx, first, last)
        return Fix(f"remove {flag}: the step schedule sets the batch", (edit,), "unsafe") if edit else None
    return None


@fixer("PL106")
def fix_deepspeed_triple(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    rctx = layout_context(diag, ctx)
    if rctx is None or rctx.layout.value("trainer") != "deepspeed":
        return None
    cfg = rctx.layout.extras.ds_config
    dp = rctx.layout.value("parallel.dp")
    t, m, g = cfg.train_batch_size, cfg.train_micro_batch_size_per_gpu, cfg.gradient_accumulation_steps
    if not isinstance(dp, int) or not all(isinstance(v.value, int) and v.origin == "literal" for v in (t, m)):
        return None
    accum = g.value if isinstance(g.value, int) and g.origin == "literal" else None
    if accum is None and g.value is not None:
        return None
    new = m.value * (accum or 1) * dp if accum else max(1, round(t.value / (m.value * dp))) * m.value * dp
    edit = replace_in_span(ctx, t.span, str(t.value), str(new))
    return Fix(f"train_batch_size {t.value} -> {new} for dp {dp}", (edit,), "unsafe") if edit else None


@fixer("PL508")
def fix_optimizer_param(diag: Diagnostic, ctx: FixContext) -> Fix | None:
    from plint.fixing.fix_registry import points_at

    key = (diag.key or "").rsplit(".", 1)[-1]
    if not (diag.key or "").startswith("optimizer.params."):
        return None
    for cfg in ds_configs(ctx):
        optimizer = cfg.document.root.get("optimizer") if hasattr(cfg.document.root, "get") else None
        params = optimizer.get("params") if optimizer is not None and hasattr(optimizer, "get") else None
        entries = getattr(params, "entries", [])
        entry = next((e for e in entries if e.key == key and points_at(e.key_span, diag)), None)
        if entry is None or entry.key_span is None or getattr(entry.value, "span", None) is None:
            continue
        edit = _drop_entry(ctx, entry.key_span, entry.value.span)
        return Fix(f"remove optimizer.params.{key}", (edit,), "unsafe") if edit else None
    return None


def _drop_entry(ctx: FixContext, key_span, value_span) -> Edit | None:
    """Remove one `"key": value` member of a JSON object with the comma that joins it to the next
    member, or to the previous one when it is the last."""
    data = ctx.data(key_span.path)
    if data is None or value_span.path != key_span.path:
        return None
    start, end = key_span.start, value_span.end
    after = end
    while after < len(data) and data[after : after + 1] in b" \t\r\n":
        after += 1
    if data[after : after + 1] == b",":
        after += 1
        while after < len(data) and data[after : after + 1] in b" \t\r\n":
            after += 1
        return Edit(key_span.path, start, after, "")
    before = start
    while before > 0 and data[before - 1 : before] in b" \t\r\n":
        before -= 1
    if data[before - 1 : before] == b",":
        return Edit(key_span.path, before - 1, end, "")
    return Edit(key_span.path, start, end, "")  # the only member
