"""Every rule has a fixture that fires it and one that stays quiet: fixtures/rules/<CODE>/{bad,good}/,
written from the rule record's docs examples (so the docs show exactly what the tests run)."""

from pathlib import Path

import pytest

from plint.check import check_paths
from plint.rules.base import all_rules

RULES = list(all_rules().values())
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"


def _codes(rule, kind):
    example = rule.docs.bad if kind == "bad" else rule.docs.good
    path = FIXTURES / rule.code / kind / example.main
    assert path.exists(), f"{path} missing: run python scripts/generate_rule_docs.py"
    (result,) = check_paths([path])
    return [d.code for d in result.diagnostics]


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_bad_fixture_fires(rule):
    assert rule.code in _codes(rule, "bad")


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_good_fixture_stays_quiet(rule):
    assert rule.code not in _codes(rule, "good")


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_record_is_complete(rule):
    assert rule.name == rule.name.lower() and " " not in rule.name
    assert rule.summary and rule.docs.what and rule.docs.why and rule.docs.fix


def test_docs_pages_are_up_to_date(tmp_path):
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("gen", root / "scripts" / "generate_rule_docs.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for path in gen.generate(tmp_path / "docs"):
        committed = root / "docs" / "rules" / path.name
        assert committed.exists() and committed.read_text() == path.read_text(), \
            f"{committed} is stale: run python scripts/generate_rule_docs.py"
    for path in gen.generate_fixtures(tmp_path / "fixtures"):
        committed = root / "fixtures" / "rules" / path.relative_to(tmp_path / "fixtures")
        assert committed.exists() and committed.read_text() == path.read_text(), \
            f"{committed} is stale: run python scripts/generate_rule_docs.py"


def test_explain_and_rules_commands():
    import json

    from click.testing import CliRunner

    from plint.cli import cli

    runner = CliRunner()
    page = runner.invoke(cli, ["explain", "PL201"])
    assert page.exit_code == 0 and "Why it matters" in page.output and "Bad example" in page.output
    by_name = runner.invoke(cli, ["explain", "tp-spans-nodes", "--format", "json"])
    assert json.loads(by_name.output)["code"] == "PL201"
    unknown = runner.invoke(cli, ["explain", "tp-span-nodes"])
    assert unknown.exit_code == 2 and "did you mean tp-spans-nodes" in unknown.output
    listing = json.loads(runner.invoke(cli, ["rules", "--format", "json"]).output)
    assert {r["code"] for r in listing} >= {"PL001", "PL101", "PL201", "PL501", "PL601"}
