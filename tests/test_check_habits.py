"""ruff's and shellcheck's habits that `plint check` now keeps (issue 29): --fix, no path meaning `.`,
--exit-zero, --output-format, -S/--severity, --show-settings, `# noqa` answered with plint's directive,
standard input read as JSON when it is JSON, the exit codes in --help; and the report formats other CI
systems read (GitLab code quality, JUnit XML, reviewdog's rdjson), each checked against its format.
Run through the installed console script, so the click-free fast path (plint.entry) is what is tested."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from test_cli_habits import BROKEN, PLINT, plint, text as out  # the installed console script, colour-neutral

pytestmark = pytest.mark.skipif(not PLINT.exists(), reason="the plint console script is not installed")

# BROKEN: tp 2 without CUDA_DEVICE_MAX_CONNECTIONS (PL601, safe fix) or --sequence-parallel (PL303, safe
# fix), and tp*pp = 6 not dividing the 8 GPUs (PL101, error, an unsafe layout fix)
# warnings only: PL601 and PL303 (tp 2 on 8 GPUs divides)
WARNS = BROKEN.replace("--pipeline-model-parallel-size 3", "--pipeline-model-parallel-size 2")
DS_JSON = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2, "overlap_com": true},\n  "bf16": {"enabled": true}\n}\n'


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "broken.sh").write_text(BROKEN)
    (tmp_path / "warns.sh").write_text(WARNS)
    return tmp_path


# ---- --fix and --unsafe-fixes ----------------------------------------------------------------------


def test_check_fix_applies_the_safe_fixes_then_reports_what_is_left(tree):
    proc = plint(["check", "--fix", "--concise", "broken.sh"], tree)
    fixed = (tree / "broken.sh").read_text()
    assert "export CUDA_DEVICE_MAX_CONNECTIONS=1" in fixed and "--sequence-parallel" in fixed
    assert "--pipeline-model-parallel-size 3" in fixed  # the layout change is unsafe: left alone
    assert proc.returncode == 1 and "PL101" in out(proc) and "PL601" not in out(proc) and "PL303" not in out(proc)
    assert "plint: fixed 2 finding(s) in 1 file(s)" in proc.stderr.decode()


def test_check_fix_with_unsafe_fixes_changes_the_layout_too(tree):
    proc = plint(["check", "--fix", "--unsafe-fixes", "--concise", "broken.sh"], tree)
    assert "--pipeline-model-parallel-size 3" not in (tree / "broken.sh").read_text()
    assert proc.returncode == 0, out(proc) + proc.stderr.decode()


def test_unsafe_fixes_without_fix_and_fix_on_standard_input_are_usage_errors(tree):
    alone = plint(["check", "--unsafe-fixes", "broken.sh"], tree)
    assert alone.returncode == 2 and "only with --fix" in alone.stderr.decode()
    assert (tree / "broken.sh").read_text() == BROKEN
    piped = plint(["check", "--fix", "-"], tree, stdin=BROKEN.encode())
    assert piped.returncode == 2 and "standard input" in piped.stderr.decode()


# ---- no path, --exit-zero, --output-format ---------------------------------------------------------


def test_no_path_checks_the_working_directory(tree):
    proc = plint(["check", "--concise"], tree)
    assert proc.returncode == 1 and "broken.sh:2:" in out(proc) and "warns.sh:2:" in out(proc)
    assert "2 file(s) checked" in out(proc)


def test_exit_zero_keeps_the_report_and_exits_0(tree):
    proc = plint(["check", "--exit-zero", "--concise", "broken.sh"], tree)
    assert proc.returncode == 0 and "PL101 [error]" in out(proc)
    assert plint(["check", "--exit-zero", "--gpu", "h100sxm", "broken.sh"], tree).returncode == 2


def test_output_format_is_another_name_for_format(tree):
    a = plint(["check", "--output-format", "json", "broken.sh"], tree)
    b = plint(["check", "--format=json", "broken.sh"], tree)
    assert a.returncode == b.returncode == 1
    assert json.loads(out(a))["files"][0]["diagnostics"] == json.loads(out(b))["files"][0]["diagnostics"]
    assert plint(["check", "--output-format=concise", "broken.sh"], tree).returncode == 2


# ---- -S / --severity: a display filter whose hidden findings do not count, as shellcheck's -S ---------


def test_severity_hides_findings_below_the_level(tree):
    errors = out(plint(["check", "-S", "error", "--concise", "broken.sh"], tree))
    assert "PL101 [error]" in errors and "[warning]" not in errors and "[info]" not in errors
    assert (
        errors.rstrip()
        .splitlines()[-2 if "fixable" in errors else -1]
        .startswith("1 file(s) checked: 1 error(s), 0 warning(s), 0 info")
    )
    warnings = out(plint(["check", "--severity=warning", "--concise", "broken.sh"], tree))
    assert "[warning]" in warnings and "[info]" not in warnings


def test_findings_hidden_by_severity_do_not_fail_the_run(tree):
    assert plint(["check", "--fail-on", "warning", "-q", "warns.sh"], tree).returncode == 1
    hidden = plint(["check", "--fail-on", "warning", "-S", "error", "warns.sh"], tree)
    assert hidden.returncode == 0 and "PL601" not in out(hidden)


# ---- --show-settings --------------------------------------------------------------------------------


def test_show_settings_names_the_config_found_and_the_settings(tree):
    (tree / ".plint.toml").write_text('ignore = ["PL3"]\ngpu = "h200"\n')
    proc = plint(["check", "--show-settings", "--select", "PL1", "broken.sh"], tree)
    text = out(proc)
    assert proc.returncode == 0 and text.startswith("Settings for broken.sh")
    assert 'config file = ".plint.toml" # found from the path' in text
    assert 'ignore = ["PL3"]' in text and 'gpu = "h200"' in text and 'fail-on = "error"' in text
    assert '--select = ["PL1"]' in text and '"PL101"' in text and '"PL601"' not in text
    assert "PL101 [error]" not in text  # settings only: nothing was checked


def test_show_settings_says_when_no_config_is_read(tree):
    assert "none found" in out(plint(["check", "--show-settings"], tree))
    assert "--isolated" in out(plint(["check", "--show-settings", "--isolated", "broken.sh"], tree))


# ---- `# noqa`: not plint's directive, and PL004 says which is -----------------------------------------


def noqa_findings(tree: Path, script: str) -> list[str]:
    (tree / "noqa.sh").write_text(script)
    return [line for line in out(plint(["check", "--concise", "noqa.sh"], tree)).splitlines() if "PL" in line]


def test_a_noqa_naming_a_plint_code_gets_plints_directive(tree):
    lines = noqa_findings(tree, WARNS.rstrip("\n") + "  # noqa: PL303\n")
    assert any("PL303 [warning]" in line for line in lines)  # still reported: noqa suppresses nothing
    (hint,) = [line for line in lines if "PL004" in line]
    assert "`# noqa: PL303`" in hint and "`# plint: disable=PL303 -- reason`" in hint


def test_a_bare_noqa_on_findings_names_their_codes(tree):
    (hint,) = [line for line in noqa_findings(tree, WARNS.rstrip("\n") + "  # noqa\n") if "PL004" in line]
    codes = re.search(r"# plint: disable=([A-Z0-9,]+) -- reason", hint).group(1).split(",")
    assert {"PL303", "PL601"} <= set(codes) and codes == sorted(codes)


def test_a_noqa_for_other_tools_or_on_no_finding_is_left_alone(tree):
    script = "#!/bin/bash\necho start  # noqa\nls  # noqa: E501\n" + WARNS.split("\n", 1)[1]
    assert not [line for line in noqa_findings(tree, script) if "PL004" in line]


# ---- standard input: JSON or shell by what it holds ----------------------------------------------------


def test_a_deepspeed_json_piped_to_check_is_read_as_json(tree):
    proc = plint(["check", "--concise", "-"], tree, stdin=DS_JSON.encode())
    assert proc.returncode == 1 and "-:3:" in out(proc) and "PL504" in out(proc) and "overlap_comm" in out(proc)


def test_a_script_opening_with_a_brace_group_is_still_shell(tree):
    script = "{ echo starting; } > log\n" + BROKEN.split("\n", 1)[1]
    proc = plint(["check", "--concise", "-"], tree, stdin=script.encode())
    assert proc.returncode == 1 and "PL101" in out(proc)


# ---- exit codes in --help ----------------------------------------------------------------------------


def test_check_help_documents_the_exit_codes(tree):
    text = " ".join(out(plint(["check", "--help"], tree)).split())
    assert "Exit codes: 0 nothing at or above the failing severity" in text
    assert "1 findings at or above it" in text and "2 a usage error" in text
    for option in ("--output-format", "--fix", "--unsafe-fixes", "-S, --severity", "--exit-zero", "--show-settings"):
        assert option in text
    top = " ".join(out(plint(["--help"], tree)).split())
    assert "Exit codes: 0 clean" in top and "1 findings" in top and "2 a usage error" in top


# ---- GitLab code quality -------------------------------------------------------------------------------

# The fields docs.gitlab.com (ci/testing/code_quality, "Code Quality report format") requires of each issue
GITLAB_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string"},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {"begin": {"type": "integer", "minimum": 1}},
                    },
                },
            },
        },
    },
}


def test_gitlab_code_quality_report(tree):
    # two identical unknown flags on two lines: two issues, two fingerprints (GitLab keeps one per fingerprint)
    (tree / "twice.sh").write_text(
        "#!/bin/bash\ntorchrun --nproc_per_node 1 pretrain_gpt.py --foo-bar 1\n"
        "torchrun --nproc_per_node 1 pretrain_gpt.py --foo-bar 1\n"
    )
    proc = plint(["check", "--format", "gitlab", "broken.sh", "twice.sh"], tree)
    issues = json.loads(out(proc))
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert proc.returncode == 1
    pl101 = next(i for i in issues if i["check_name"].startswith("PL101"))
    assert pl101["severity"] == "major" and pl101["location"] == {"path": "broken.sh", "lines": {"begin": 2}}
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    assert (
        json.loads(out(plint(["check", "--format", "gitlab", "--isolated", "--select", "PL1", "warns.sh"], tree))) == []
    )


# ---- JUnit XML -------------------------------------------------------------------------------------------


def test_junit_xml_has_a_suite_per_file_and_a_failing_case_per_finding(tree):
    (tree / "clean.sh").write_text("#!/bin/bash\necho nothing to train\n")
    proc = plint(["check", "--format", "junit", "broken.sh", "clean.sh"], tree)
    root = ET.fromstring(proc.stdout)
    assert root.tag == "testsuites" and proc.returncode == 1
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"broken.sh", "clean.sh"}
    broken = suites["broken.sh"]
    cases = broken.findall("testcase")
    assert int(broken.get("tests")) == len(cases) == int(broken.get("failures")) >= 3
    pl101 = next(c for c in cases if c.get("name").startswith("PL101"))
    failure = pl101.find("failure")
    assert failure.get("type") == "error" and pl101.get("classname") == "broken.sh"
    assert "broken.sh:2:" in failure.text and failure.get("message")
    (passing,) = suites["clean.sh"].findall("testcase")
    assert passing.find("failure") is None and suites["clean.sh"].get("failures") == "0"
    assert int(root.get("failures")) == sum(int(s.get("failures")) for s in suites.values())


def test_junit_escapes_file_derived_text(tree):
    (tree / "odd.sh").write_text('#!/bin/bash\ntorchrun --nproc_per_node 1 pretrain_gpt.py "--a<b>&\x1b[31m" 1\n')
    proc = plint(["check", "--format", "junit", "odd.sh"], tree)
    ET.fromstring(proc.stdout)  # well-formed XML: no raw control byte, markup escaped
    assert b"\x1b" not in proc.stdout


# ---- reviewdog rdjson ---------------------------------------------------------------------------------

POSITION = {
    "type": "object",
    "required": ["line"],
    "additionalProperties": False,
    "properties": {"line": {"type": "integer", "minimum": 1}, "column": {"type": "integer", "minimum": 1}},
}
RANGE = {
    "type": "object",
    "required": ["start"],
    "additionalProperties": False,
    "properties": {"start": POSITION, "end": POSITION},
}
# reviewdog's DiagnosticResult (proto/rdf/reviewdog.proto), with what reviewdog needs made required
RDJSON_SCHEMA = {
    "type": "object",
    "required": ["diagnostics"],
    "properties": {
        "source": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "url": {"type": "string"}},
        },
        "diagnostics": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["message", "location", "severity"],
                "additionalProperties": False,
                "properties": {
                    "message": {"type": "string"},
                    "location": {
                        "type": "object",
                        "required": ["path"],
                        "additionalProperties": False,
                        "properties": {"path": {"type": "string"}, "range": RANGE},
                    },
                    "severity": {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"]},
                    "source": {"type": "object", "required": ["name"]},
                    "code": {
                        "type": "object",
                        "required": ["value"],
                        "properties": {"value": {"type": "string"}, "url": {"type": "string"}},
                    },
                    "suggestions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["range", "text"],
                            "additionalProperties": False,
                            "properties": {"range": RANGE, "text": {"type": "string"}},
                        },
                    },
                },
            },
        },
    },
}


def test_rdjson_report_with_byte_columns_and_suggestions(tree):
    # "é" is two UTF-8 bytes: the flag after it starts one byte further right than its character column
    script = "#!/bin/bash\n# é\nRUN=é; torchrun --nproc_per_node 1 pretrain_gpt.py --seq-lenght 4096\n"
    (tree / "typo.sh").write_text(script, encoding="utf-8")
    proc = plint(["check", "--format", "rdjson", "--isolated", "--select", "PL501", "typo.sh"], tree)
    doc = json.loads(out(proc))
    jsonschema.validate(doc, RDJSON_SCHEMA)
    (d,) = doc["diagnostics"]
    line = script.split("\n")[2].encode()
    start = line.index(b"--seq-lenght") + 1
    assert d["location"]["range"]["start"] == {"line": 3, "column": start}
    assert d["location"]["range"]["end"] == {"line": 3, "column": start + len("--seq-lenght")}
    assert d["severity"] in ("ERROR", "WARNING") and d["code"]["value"] == "PL501"
    (suggestion,) = d["suggestions"]
    assert suggestion["text"] == "--seq-length" and suggestion["range"]["start"] == {"line": 3, "column": start}
