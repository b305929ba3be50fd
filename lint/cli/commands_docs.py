"""`plint rules` and `plint explain`: the rule records as a table and as a page (the same page, in
markdown, is docs/rules/<CODE>.md and SARIF's help.markdown). Only click at module level: the rule
modules load when one of these commands runs."""

from __future__ import annotations

import json

import click

WRAP = 88


def record_json(rule) -> dict:
    """Every field of a rule record, for `--format json`."""
    from plint.fixing.fixers import availability

    d = rule.docs
    return {"code": rule.code, "name": rule.name, "severity": rule.severity, "family": rule.family,
            "summary": rule.summary, "fix_availability": availability(rule.code),
            "needs_layout": rule.needs_layout, "docs_url": rule.docs_url,
            "what": d.what, "why": d.why, "fix": d.fix, "references": list(d.references),
            "bad_example": {"main": d.bad.main, "files": dict(d.bad.files)},
            "good_example": {"main": d.good.main, "files": dict(d.good.files)}}


def page(rule, markdown: bool = False) -> str:
    """A rule's documentation in ruff's order: title, what it checks, why, bad example, good example,
    fix, references, docs link."""
    from plint.fixing.fixers import availability

    d = rule.docs
    facts = f"Severity: {rule.severity}. Family: {rule.family}. Fix: {availability(rule.code)}."
    sections = [("What it checks", [d.what]), ("Why it matters", [d.why]),
                ("Bad example", _example(d.bad, markdown)), ("Good example", _example(d.good, markdown)),
                ("Fix", [d.fix])]
    if d.references:
        sections.append(("References", ["\n".join(f"- {r}" for r in d.references)]))
    if markdown:
        out = [f"# {rule.code} {rule.name}", "", rule.summary, "", facts, ""]
        for title, blocks in sections:
            out += [f"## {title}", ""] + [line for block in blocks for line in (block, "")]
        return "\n".join(out).rstrip() + "\n"
    title = f"{rule.code} {rule.name}"
    out = [title, "=" * len(title), "", _wrap(rule.summary), "", facts, ""]
    for heading, blocks in sections:
        out += [heading, "-" * len(heading), ""]
        for block in blocks:
            out += [block if block.startswith(("  ", "- ")) else _wrap(block), ""]
    out.append(f"Docs: {rule.docs_url}")
    return "\n".join(out) + "\n"


def _example(example, markdown: bool) -> list[str]:
    blocks = []
    for name, text in example.files.items():
        label = f"`{name}`" if markdown else name
        if len(example.files) > 1 and name == example.main:
            label += " (the file plint checks)"
        body = text.rstrip("\n")
        if markdown:
            fence = "json" if name.endswith(".json") else "toml" if name.endswith(".toml") else "bash"
            blocks += [f"{label}:", f"```{fence}\n{body}\n```"]
        else:
            blocks.append(f"  {label}:\n" + "\n".join(f"    {line}" for line in body.splitlines()))
    return blocks


def _wrap(paragraph: str) -> str:
    import textwrap

    return textwrap.fill(paragraph, WRAP, break_long_words=False, break_on_hyphens=False)


def table(records) -> str:
    """One row per rule: code, name, severity, fix availability, summary."""
    from plint.fixing.fixers import availability

    rows = [("code", "name", "severity", "fix", "summary")]
    rows += [(r.code, r.name, r.severity, availability(r.code), r.summary) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4]
                     for row in rows)


@click.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules(fmt: str) -> None:
    """List every rule: code, name, severity, fix availability, summary."""
    from plint.rules.registry import all_rules

    records = list(all_rules().values())
    if fmt == "json":
        click.echo(json.dumps([record_json(r) for r in records], indent=2))
    else:
        click.echo(table(records))


@click.command()
@click.argument("rule")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def explain(rule: str, fmt: str) -> None:
    """Explain a rule, by code (PL201) or name (tp-spans-nodes)."""
    from plint.rules.registry import all_rules, find_rule

    found = find_rule(rule)
    if found is None:
        raise click.UsageError(f"no rule {rule!r}{did_you_mean(rule, all_rules())}; `plint rules` lists them")
    if fmt == "json":
        click.echo(json.dumps(record_json(found), indent=2))
    else:
        click.echo(page(found), nl=False)


def did_you_mean(word: str, rules: dict) -> str:
    from difflib import get_close_matches

    names = {r.name: r.name for r in rules.values()}
    names.update({code.lower(): code for code in rules})  # codes compare case-insensitively
    near = get_close_matches(word.lower(), list(names), n=1, cutoff=0.6)
    return f" (did you mean {names[near[0]]}?)" if near else ""
