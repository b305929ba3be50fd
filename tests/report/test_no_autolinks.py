"""plint's own words write no text that GitHub turns into a link to the reader's repository: in a
pull-request comment, the job summary or a rendered doc page, `#1304` links issue 1304 of whatever
repository shows it, not the Megatron-LM issue a rule means. Upstream issues are full https links.
PL103, PL111 and PL112 wrote `#1304`, `#468`, `#646` and `#1487` before."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from plint.checking.check import check_paths
from plint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parents[2]
# `#123` or `GH-123` as GitHub autolinks them (not `&#123;`, not a URL's fragment, not `##`)
AUTOLINK = re.compile(r"(?<![\w&/#])(?:#|GH-)\d+\b")


def _docs_texts(rule) -> list[str]:
    docs = rule.docs
    return [rule.summary, docs.what, docs.why, rule.fix.text, *docs.references]


@pytest.mark.parametrize("rule", list(all_rules().values()), ids=list(all_rules()))
def test_rule_records_write_no_issue_reference(rule):
    for text in _docs_texts(rule):
        assert not AUTOLINK.search(text), (rule.code, text)


def test_rule_sources_write_no_issue_reference_in_any_string():
    """Messages are built in the rule modules: no string literal there holds one (comments may)."""
    found = []
    for path in sorted((ROOT / "rules").glob("*.py")):
        for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if token.type == tokenize.STRING and AUTOLINK.search(token.string):
                found.append(f"{path.name}:{token.start[0]}: {token.string[:80]}")
    assert not found, found


def test_generated_rule_pages_write_no_issue_reference():
    for page in sorted((ROOT / "docs" / "rules").glob("*.md")):
        assert not AUTOLINK.search(page.read_text()), page.name


def test_no_finding_of_a_rule_example_writes_one(tmp_path):
    """Every rule fires on its bad example: the messages plint builds at run time, not only the records."""
    messages = []
    for rule in all_rules().values():
        folder = tmp_path / rule.code
        for name, text in rule.docs.bad.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        (result,) = check_paths([folder / rule.docs.bad.main])
        messages += [d.message for d in result.diagnostics]
    assert messages
    assert not [m for m in messages if AUTOLINK.search(m)]


def test_the_pattern_finds_what_github_links():
    assert AUTOLINK.search("issues #1304, #468") and AUTOLINK.search("see GH-12")
    assert not AUTOLINK.search("&#123; https://github.com/NVIDIA/Megatron-LM/issues/1304 x#1 ##2")
