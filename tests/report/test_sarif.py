"""SARIF 2.1.0: valid against the OASIS schema (vendored in schemas/), every rule record in
driver.rules, relative URIs under %SRCROOT%, full regions, fingerprints, fixes, suppressions and
tool notifications for PL001."""

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from plint.cli.commands import cli
from plint.report import sarif
from plint.rules.registry import all_rules
from report_helpers import diagnostic, result, write_launch

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "sarif-schema-2.1.0.json").read_text())


def _validated(text: str) -> dict:
    log = json.loads(text)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return log


@pytest.fixture
def synthetic(tmp_path, monkeypatch):
    """A launch with a fixable error, an inline-suppressed and a baselined finding, and a binary file."""
    monkeypatch.chdir(tmp_path)
    launch = write_launch(tmp_path, "#!/bin/bash\ntorchrun --tensor-model-parallel-size 16 x.py\n")
    start = launch.read_bytes().index(b"16")
    fix = {
        "description": "use tp 8",
        "applicability": "unsafe",
        "edits": [{"path": "launch.sh", "start": start, "end": start + 2, "text": "8"}],
    }
    fixable = diagnostic("PL201", "error", "tp 16 spans nodes", "launch.sh", 2, 39, 2, 41, fix=fix, key="parallel.tp")
    inline = diagnostic(
        "PL002",
        "info",
        "$X is unknown",
        "launch.sh",
        2,
        1,
        2,
        9,
        suppressed={"kind": "inSource", "justification": "set by the cluster"},
    )
    baselined = diagnostic(
        "PL305",
        "warning",
        "no distributed optimizer",
        "launch.sh",
        2,
        1,
        2,
        9,
        suppressed={"kind": "external", "justification": "baseline"},
    )
    unreadable = diagnostic("PL001", "error", "binary file (contains NUL bytes)", "blob.sh")
    return [
        result("launch.sh", fixable, inline, baselined),
        result("blob.sh", unreadable, unreadable="binary file (contains NUL bytes)"),
    ]


def test_valid_and_describes_every_rule(synthetic):
    log = _validated(sarif.render(synthetic))
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-schema-2.1.0.json")
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "plint" and driver["version"] == driver["semanticVersion"]
    assert [r["id"] for r in driver["rules"]] == list(all_rules())
    for descriptor, rule in zip(driver["rules"], all_rules().values()):
        assert descriptor["name"] == rule.name and descriptor["helpUri"] == rule.docs_url
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["help"]["markdown"].startswith(f"# {rule.code} {rule.name}")
        assert descriptor["defaultConfiguration"]["level"] == {"info": "note"}.get(rule.severity, rule.severity)
        assert descriptor["properties"]["tags"] == [rule.family]


def test_results_locations_fingerprints_and_fixes(synthetic, tmp_path):
    run = _validated(sarif.render(synthetic))["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    rules = run["tool"]["driver"]["rules"]
    first = run["results"][0]
    assert rules[first["ruleIndex"]]["id"] == first["ruleId"] == "PL201" and first["level"] == "error"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "launch.sh", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 2, "startColumn": 39, "endLine": 2, "endColumn": 41}
    assert set(first["partialFingerprints"]) == {"plint/v1"}
    (fix,) = first["fixes"]
    (change,) = fix["artifactChanges"]
    (replacement,) = change["replacements"]
    assert replacement == {
        "deletedRegion": {"startLine": 2, "startColumn": 39, "endLine": 2, "endColumn": 41},
        "insertedContent": {"text": "8"},
    }


def test_suppressions_and_notifications(synthetic):
    run = _validated(sarif.render(synthetic))["runs"][0]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert by_rule["PL002"]["suppressions"] == [
        {"kind": "inSource", "status": "accepted", "justification": "set by the cluster"}
    ]
    assert by_rule["PL305"]["suppressions"][0]["kind"] == "external"
    assert "suppressions" not in by_rule["PL201"]
    assert by_rule["PL002"]["level"] == "note"
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False  # blob.sh could not be read
    (note,) = invocation["toolExecutionNotifications"]
    assert note["associatedRule"]["id"] == "PL001"
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "blob.sh"


def test_a_syntax_error_is_a_notification_but_the_run_succeeded():
    d = diagnostic("PL001", "error", "syntax error near `fi'", "a.sh", 3, 1, 3, 3)
    invocation = json.loads(sarif.render([result("a.sh", d)]))["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is True and len(invocation["toolExecutionNotifications"]) == 1


def test_paths_outside_the_working_directory_are_absolute_uris(tmp_path):
    outside = tmp_path / "elsewhere" / "my launch.sh"  # the autouse fixture keeps cwd at the repository
    log = _validated(sarif.render([result(outside, diagnostic("PL002", "info", "m", outside, 1, 1, 1, 2))]))
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri == {"uri": outside.as_uri()}


def test_cli_end_to_end_on_an_unresolved_launch(tmp_path, monkeypatch):
    write_launch(tmp_path)
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(cli, ["check", "--format", "sarif", "launch.sh"])
    assert run.exit_code == 0
    sarif_run = _validated(run.output)["runs"][0]
    (finding,) = [r for r in sarif_run["results"] if r["ruleId"] == "PL002"]
    assert finding["level"] == "note"
    assert finding["locations"][0]["physicalLocation"]["region"]["startColumn"] == 19
    assert sarif_run["invocations"][0]["executionSuccessful"] is True
