"""The rule records drive the docs, so the docs are tested: every record's bad example fires its rule
and its good example does not (run from a temporary folder, exactly as written in the record), the
generated pages and fixtures in the repository are up to date, and `plint rules` / `plint explain`
show every record. Rules are read from all_rules() each time: new rules are covered as they land."""

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from plint.checking.check import check_paths
from plint.cli.commands import cli
from plint.rules.base import FAMILIES, FIX_AVAILABILITY, SEVERITIES
from plint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
RULES = list(all_rules().values())
IDS = [r.code for r in RULES]


def _codes_fired(example, folder: Path) -> list[str]:
    for name, text in example.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    (result,) = check_paths([folder / example.main])
    return [d.code for d in result.diagnostics]


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_bad_example_fires_the_rule(rule, tmp_path):
    assert rule.code in _codes_fired(rule.docs.bad, tmp_path), f"{rule.code}: its bad example is quiet"


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_good_example_does_not_fire_the_rule(rule, tmp_path):
    assert rule.code not in _codes_fired(rule.docs.good, tmp_path), f"{rule.code}: its good example fires"


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_record_is_complete(rule):
    assert rule.code[:2] == "PL" and rule.code[2:].isdigit() and len(rule.code) == 5
    assert rule.family in FAMILIES.values() and rule.severity in SEVERITIES
    assert rule.name == rule.name.lower() and " " not in rule.name and "_" not in rule.name
    # safe/unsafe/never is declared in the record beside the check (issue 28 item 5); that it agrees with
    # the registered fixers is test_fix_availability_is_the_records_and_matches_the_fixers's
    assert rule.fix.availability in FIX_AVAILABILITY
    assert rule.summary and rule.docs.what and rule.docs.why and rule.fix.text
    for example in (rule.docs.bad, rule.docs.good):
        assert example.main in example.files


def test_names_are_unique():
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))


def _generator():
    spec = importlib.util.spec_from_file_location("generate_rule_docs", ROOT / "scripts" / "generate_rule_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assert_same_tree(generated: Path, committed: Path, pattern: str):
    stale = "run python scripts/generate_rule_docs.py"
    fresh = {p.relative_to(generated): p.read_text() for p in generated.glob(pattern) if p.is_file()}
    kept = {p.relative_to(committed): p.read_text() for p in committed.glob(pattern) if p.is_file()}
    assert sorted(fresh) == sorted(kept), f"{committed}: files missing or left over: {stale}"
    for name, text in fresh.items():
        assert kept[name] == text, f"{committed / name} is stale: {stale}"


def test_docs_pages_are_up_to_date(tmp_path):
    gen = _generator()
    gen.generate(tmp_path / "docs")
    _assert_same_tree(tmp_path / "docs", ROOT / "docs" / "rules", "*.md")
    index = (tmp_path / "docs" / "README.md").read_text()
    assert all(f"[{r.code}]({r.code}.md)" in index for r in RULES)


def test_rule_fixtures_are_up_to_date(tmp_path):
    gen = _generator()
    gen.generate_fixtures(tmp_path / "fixtures")
    _assert_same_tree(tmp_path / "fixtures", ROOT / "fixtures" / "rules", "**/*")


def test_rules_lists_every_record():
    runner = CliRunner()
    listing = runner.invoke(cli, ["rules"])
    assert listing.exit_code == 0
    lines = listing.output.splitlines()
    assert lines[0].split() == ["code", "name", "severity", "fix", "summary"]
    assert [line.split()[:4] for line in lines[1:]] == [[r.code, r.name, r.severity, r.fix.availability] for r in RULES]
    records = json.loads(runner.invoke(cli, ["rules", "--format", "json"]).output)
    assert [r["code"] for r in records] == IDS


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_explain_shows_the_page_in_order(rule):
    page = CliRunner().invoke(cli, ["explain", rule.code])
    assert page.exit_code == 0
    headings = ["What it checks", "Why it matters", "Bad example", "Good example", "Fix"]
    positions = [page.output.index(f"\n{h}\n") for h in headings]
    assert page.output.startswith(f"{rule.code} {rule.name}\n") and positions == sorted(positions)
    assert page.output.rstrip().endswith(rule.docs_url)
    for text in (*rule.docs.bad.files.values(), *rule.docs.good.files.values()):
        assert all(line in page.output for line in text.splitlines())


def test_explain_by_name_as_json_has_every_field():
    rule = RULES[0]
    out = CliRunner().invoke(cli, ["explain", rule.name.upper(), "--format", "json"])
    record = json.loads(out.output)
    assert record["code"] == rule.code and record["bad_example"]["files"] == rule.docs.bad.files
    assert set(record) >= {
        "code",
        "name",
        "severity",
        "family",
        "summary",
        "fix_availability",
        "needs_layout",
        "docs_url",
        "what",
        "why",
        "fix",
        "references",
        "bad_example",
        "good_example",
    }


@pytest.mark.parametrize("typo, suggestion", [("tp-span-nodes", "tp-spans-nodes"), ("pl2o1", "PL201")])
def test_explain_unknown_rule_is_a_usage_error_with_a_suggestion(typo, suggestion):
    out = CliRunner().invoke(cli, ["explain", typo])
    assert out.exit_code == 2 and f"did you mean {suggestion}?" in out.output


def test_explain_nothing_like_any_rule():
    out = CliRunner().invoke(cli, ["explain", "zzzzzz"])
    assert out.exit_code == 2 and "did you mean" not in out.output and "plint rules" in out.output


def test_fix_availability_is_the_records_and_matches_the_fixers():
    """`plint rules` once said "never" for rules plint fixes (issue 15): the column is the record's
    declaration (issue 28), and a rule declares a fix exactly when a fixer is registered for its code."""
    from plint.fixing.fixers import FIXERS, fixable_codes

    records = {r["code"]: r for r in json.loads(CliRunner().invoke(cli, ["rules", "--format", "json"]).output)}
    assert {code: r["fix_availability"] for code, r in records.items()} == {r.code: r.fix.availability for r in RULES}
    declared = {r.code for r in RULES if r.fix.availability != "never"}
    assert declared == set(FIXERS), "a rule declares a fix no fixer writes, or a fixer's rule declares none"
    assert fixable_codes(unsafe=False) == {r.code for r in RULES if r.fix.availability == "safe"}
    assert {"PL303", "PL501", "PL502", "PL504", "PL601"} <= fixable_codes(unsafe=False)
    assert {"PL101", "PL102", "PL103", "PL104", "PL107", "PL201"} <= fixable_codes() - fixable_codes(unsafe=False)


def test_a_rule_without_a_fix_says_why_in_its_record():
    """The docs' "Not fixed automatically." is written from the record (no_fix), not copied by hand."""
    from plint.rules.base import no_fix, planned_fix, unfixable, unsafe_fix

    assert no_fix().text == "Not fixed automatically."
    assert planned_fix("`plint fix` adds it.").text == "Not fixed automatically yet; planned: `plint fix` adds it."
    assert unfixable("supply it.").text == "Not fixable: supply it."
    assert planned_fix("x").availability == unfixable("x").availability == "never"
    assert no_fix('write "auto".').text == 'Not fixed automatically: write "auto".'
    assert unsafe_fix("`plint fix --unsafe-fixes` sets it.").text == "`plint fix --unsafe-fixes` sets it."
    hand_written = [r.code for r in RULES if r.fix.how.lower().startswith(("not fixed", "not fixable"))]
    assert not hand_written, hand_written
    with pytest.raises(AssertionError):
        type(no_fix())("sometimes")
