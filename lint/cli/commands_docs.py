"""`plint rules` and `plint explain`: the rule records as a table and as a page (the same page, in
markdown, is docs/rules/<CODE>.md and SARIF's help.markdown). Only click at module level: the rule
modules load when one of these commands runs."""

from __future__ import annotations

import json

import click

from plint.report.rule_page import page


def record_json(rule) -> dict:
    """Every field of a rule record, for `--format json`."""
    d = rule.docs
    return {
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity,
        "family": rule.family,
        "summary": rule.summary,
        "fix_availability": rule.fix.availability,
        "needs_layout": rule.needs_layout,
        "docs_url": rule.docs_url,
        "what": d.what,
        "why": d.why,
        "fix": rule.fix.text,
        "references": list(d.references),
        "bad_example": {"main": d.bad.main, "files": dict(d.bad.files)},
        "good_example": {"main": d.good.main, "files": dict(d.good.files)},
    }


def table(records) -> str:
    """One row per rule: code, name, severity, fix availability, summary."""
    rows = [("code", "name", "severity", "fix", "summary")]
    rows += [(r.code, r.name, r.severity, r.fix.availability, r.summary) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4] for row in rows)


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
