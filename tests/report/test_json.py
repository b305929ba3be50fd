"""The JSON report keeps the contract fields and adds docs_url, a line-free fingerprint,
fix.applicability and suppressed."""

import json

from click.testing import CliRunner
from plint.cli.commands import cli
from plint.report import json_report
from plint.report.common import fingerprint
from report_helpers import diagnostic, result, write_launch

CONTRACT = {"code", "name", "severity", "message", "path", "line", "col", "end_line", "end_col", "fix"}


def _doc(results):
    return json.loads(json_report.render(results))


def test_contract_fields_and_additions(tmp_path):
    fix = {"description": "set tp to 8", "edits": [{"path": "a.sh", "start": 3, "end": 5, "text": "8"}]}
    d = diagnostic("PL201", "error", "tp 16 spans nodes", "a.sh", 2, 3, 2, 5, fix=fix, key="parallel.tp")
    doc = _doc([result("a.sh", d)])
    assert set(doc) == {"plint_version", "files", "summary"}
    (entry,) = doc["files"]
    assert entry["path"] == "a.sh" and entry["layout"] is None and "layouts" not in entry
    (out,) = entry["diagnostics"]
    assert CONTRACT <= set(out)
    assert out["docs_url"].endswith("/docs/rules/PL201.md")
    assert out["fix"]["applicability"] == "safe" and out["fix"]["edits"][0]["text"] == "8"
    assert out["suppressed"] is None and out["key"] == "parallel.tp"


def test_fingerprint_ignores_lines_and_numbers_without_a_key():
    a = diagnostic("PL102", "error", "global batch 1000 is not divisible by 48", "a.sh", 9, 46)
    moved = diagnostic("PL102", "error", "global batch 1000 is not divisible by 48", "a.sh", 30, 1)
    renumbered = diagnostic("PL102", "error", "global batch 1002 is not divisible by 48", "a.sh", 9, 46)
    other_file = diagnostic("PL102", "error", "global batch 1000 is not divisible by 48", "b.sh", 9, 46)
    other_rule = diagnostic("PL101", "error", "global batch 1000 is not divisible by 48", "a.sh", 9, 46)
    assert fingerprint(a) == fingerprint(moved) == fingerprint(renumbered)
    assert len({fingerprint(a), fingerprint(other_file), fingerprint(other_rule)}) == 3


def test_fingerprint_uses_the_key_when_there_is_one():
    a = diagnostic("PL201", "error", "tp 16 spans nodes", "a.sh", 1, 1, key="parallel.tp")
    reworded = diagnostic("PL201", "error", "tensor parallelism crosses nodes", "a.sh", 5, 1, key="parallel.tp")
    other_key = diagnostic("PL201", "error", "tp 16 spans nodes", "a.sh", 1, 1, key="parallel.pp")
    assert fingerprint(a) == fingerprint(reworded) != fingerprint(other_key)


def test_suppressed_findings_stay_in_the_report_counted_apart():
    kept = diagnostic("PL002", "info", "unknown", "a.sh", 1, 1)
    hidden = diagnostic(
        "PL201", "error", "spans", "a.sh", 2, 1, suppressed={"kind": "external", "justification": "baseline"}
    )
    doc = _doc([result("a.sh", kept, hidden), result("b.sh")])
    assert doc["summary"] == {"files": 2, "error": 0, "warning": 0, "info": 1, "suppressed": 1}
    codes = {d["code"]: d["suppressed"] for d in doc["files"][0]["diagnostics"]}
    assert codes == {"PL002": None, "PL201": {"kind": "external", "justification": "baseline"}}


def test_cli_end_to_end_on_an_unresolved_launch(tmp_path, monkeypatch):
    write_launch(tmp_path)
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(cli, ["check", "--format", "json", "launch.sh"])
    assert run.exit_code == 0
    doc = json.loads(run.output)
    (entry,) = doc["files"]
    assert entry["path"] == "launch.sh" and entry["layout"]["cluster"]["nnodes"] is None
    (d,) = [d for d in entry["diagnostics"] if d["code"] == "PL002"]
    assert (d["line"], d["col"], d["end_col"], d["key"]) == (3, 19, 26, "cluster.nnodes")
    assert len(d["fingerprint"]) == 32 and d["docs_url"].endswith("/PL002.md")
    assert doc["summary"]["info"] == len(entry["diagnostics"])
