"""A rule record as a page: `plint explain` prints it, docs/rules/<CODE>.md and SARIF's help.markdown are
it in markdown (scripts/generate_rule_docs.py)."""

from __future__ import annotations

import textwrap

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.rules.base import Example, Rule

WRAP = 88


def page(rule: Rule, markdown: bool = False) -> str:
    """A rule's documentation in ruff's order: title, what it checks, why, bad example, good example,
    fix, references, docs link. Whether plint fixes its findings (safe, unsafe, never) and how is the
    record's (rule.fix)."""
    d = rule.docs
    facts = f"Severity: {rule.severity}. Family: {rule.family}. Fix: {rule.fix.availability}."
    sections = [
        ("What it checks", [d.what]),
        ("Why it matters", [d.why]),
        ("Bad example", _example(d.bad, markdown)),
        ("Good example", _example(d.good, markdown)),
        ("Fix", [rule.fix.text]),
    ]
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


def _example(example: Example, markdown: bool) -> list[str]:
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
    return textwrap.fill(paragraph, WRAP, break_long_words=False, break_on_hyphens=False)
