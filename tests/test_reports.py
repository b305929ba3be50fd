"""Output formats: JSON additions, SARIF validated against the OASIS schema, GitHub escaping, markdown, text."""

import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from plint.checking.check import check_paths
from plint.cli.commands import cli
from plint.diagnostics import Diagnostic
from plint.report import github, markdown, text

ROOT = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = json.loads((ROOT / "schemas" / "sarif-schema-2.1.0.json").read_text())
BAD = ROOT / "fixtures" / "launches" / "wrong-global-batch" / "launch.sh"


def run_fmt(*args):
    return CliRunner().invoke(cli, ["check", *args])


def test_json_adds_docs_links_and_stable_fingerprints():
    doc = json.loads(run_fmt("--format", "json", str(BAD)).output)
    d = next(d for d in doc["files"][0]["diagnostics"] if d["code"] == "PL102")
    assert d["docs_url"].endswith("/PL102.md") and len(d["fingerprint"]) == 32 and d["key"] == "batch.global"
    moved = Diagnostic("PL102", "global-batch-indivisible", "error", d["message"], d["path"], 99, 1, key="batch.global")
    from plint.report.common import fingerprint

    assert fingerprint(moved) == d["fingerprint"]  # lines move, the fingerprint does not


def test_sarif_validates_against_the_schema(tmp_path):
    blob = tmp_path / "blob.sh"
    blob.write_bytes(b"\x00\x01")
    suppressed = tmp_path / "s.sh"
    suppressed.write_text(
        "# plint: disable=PL101 -- known\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3\n"
    )
    out = run_fmt("--format", "sarif", str(BAD), str(blob), str(suppressed)).output
    doc = json.loads(out)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(doc)
    run = doc["runs"][0]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} >= {"PL101", "PL102", "PL201"}
    result = next(r for r in run["results"] if r["ruleId"] == "PL102")
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {
        "uri": "fixtures/launches/wrong-global-batch/launch.sh",
        "uriBaseId": "%SRCROOT%",
    }
    assert loc["region"]["startLine"] == 9 and result["level"] == "error"
    assert any(r.get("suppressions") for r in run["results"] if r["ruleId"] == "PL101")
    assert run["invocations"][0]["executionSuccessful"] is False


def test_github_annotations_are_escaped(tmp_path, monkeypatch):
    d = Diagnostic("PL102", "global-batch-indivisible", "error", "50% done\nnext: a,b", "dir,1/a:b.sh", 3, 4, 3, 9)
    line = github.annotation(d)
    assert line == (
        "::error title=plint PL102 (global-batch-indivisible),file=dir%2C1/a%3Ab.sh,line=3,col=4,"
        "endLine=3,endColumn=9::50%25 done%0Anext: a,b"
    )
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = run_fmt("--format", "github", str(BAD)).output
    assert out.startswith("::error title=plint PL102") and "<!-- plint -->" in summary.read_text()


def test_markdown_comment_and_clean_run(tmp_path):
    results = check_paths([BAD]).results
    body = markdown.render(results)
    assert body.startswith("<!-- plint -->") and "| 1 | 1 |" in body and "<details>" in body
    good = tmp_path / "good.sh"
    good.write_text("echo nothing to launch\n")
    assert "No findings." in markdown.render(check_paths([good]).results)


def test_text_shows_the_source_line_and_a_caret_under_the_span():
    out = text.render(check_paths([BAD]).results)
    lines = out.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("9 | "))
    assert "--global-batch-size 1000" in lines[i]
    caret = lines[i + 1]
    assert caret.index("^") == lines[i].index("1000") and caret.count("^") == 4
    concise = text.render(check_paths([BAD]).results, concise=True)
    assert "fixtures/launches/wrong-global-batch/launch.sh:9:46: PL102 [error]" in concise


def test_the_step_legend_gives_each_part_its_own_glyph():
    # a Slurm launch with TP, CP, PP, recompute and DP: eight parts of the step under one bar
    job = ROOT / "fixtures" / "launches" / "slurm-srun-torchrun" / "job.sbatch"
    step = next(line for line in text.render(check_paths([job]).results).splitlines() if line.startswith("  step "))
    legend = step.split(": ", 1)[1].split("  ")
    glyphs = [part.split(" ", 1)[0] for part in legend]
    assert len(glyphs) >= 6 and len(set(glyphs)) == len(glyphs)
