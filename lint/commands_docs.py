"""`plint rules` and `plint explain`: the rule records as a table and as a page."""

from __future__ import annotations

import json

import click


def _record(rule) -> dict:
    d = rule.docs
    return {"code": rule.code, "name": rule.name, "severity": rule.severity, "family": rule.family,
            "summary": rule.summary, "fix_availability": rule.fix_availability, "docs_url": rule.docs_url,
            "what": d.what, "why": d.why, "fix": d.fix, "references": list(d.references),
            "bad_example": d.bad.files, "good_example": d.good.files}


def page(rule, markdown: bool = False) -> str:
    """A rule's documentation, in ruff's order: what, why, bad, good, fix, references."""
    d = rule.docs
    h = "## " if markdown else ""
    out = [f"{'# ' if markdown else ''}{rule.code} {rule.name}", "",
           f"Default severity: {rule.severity}. Fix: {rule.fix_availability}.", "",
           f"{h}What it checks", "", d.what, "", f"{h}Why it matters", "", d.why, ""]
    for title, example in (("Bad example", d.bad), ("Good example", d.good)):
        out += [f"{h}{title}", ""]
        for name, text in example.files.items():
            fence = "json" if name.endswith(".json") else "bash"
            out += [f"`{name}`:", "", f"```{fence}", text.rstrip("\n"), "```", ""] if markdown else \
                [f"  {name}:"] + [f"    {line}" for line in text.rstrip("\n").splitlines()] + [""]
    out += [f"{h}Fix", "", d.fix, ""]
    if d.references:
        out += [f"{h}References", ""] + [f"- {r}" for r in d.references] + [""]
    out += [f"Docs: {rule.docs_url}" if not markdown else ""]
    return "\n".join(out).rstrip() + "\n"


@click.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules(fmt: str) -> None:
    """List every rule."""
    from plint.rules.base import all_rules

    records = list(all_rules().values())
    if fmt == "json":
        click.echo(json.dumps([_record(r) for r in records], indent=2))
        return
    for r in records:
        click.echo(f"{r.code}  {r.name:34s} {r.severity:8s} fix:{r.fix_availability:9s} {r.summary}")


@click.command()
@click.argument("rule")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def explain(rule: str, fmt: str) -> None:
    """Explain a rule, by code (PL201) or name (tp-spans-nodes)."""
    from difflib import get_close_matches

    from plint.rules.base import all_rules, find_rule

    found = find_rule(rule)
    if found is None:
        names = [*all_rules(), *(r.name for r in all_rules().values())]
        near = get_close_matches(rule, names, n=1)
        raise click.UsageError(f"no rule {rule!r}" + (f"; did you mean {near[0]}?" if near else ""))
    click.echo(json.dumps(_record(found), indent=2) if fmt == "json" else page(found), nl=fmt == "json")
