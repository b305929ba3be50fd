"""A file a command reads (sed's template, cat's input) named relative to the project's root, by a script in a
sub-folder run from that root: found where a sourced file would be, a folder above the script or the checked
root, as plint finds the DeepSpeed config itself."""

import json
import subprocess
import sys

TEMPLATE = '{"train_batch_size": GLOBAL, "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": STAGE}}\n'
SCRIPT = """#!/bin/bash
sed "s/GLOBAL/256/" examples/ds_TEMPLATE.json | sed "s/STAGE/2/" > examples/ds_run.json
deepspeed pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 512 \\
    --max-position-embeddings 512 --micro-batch-size 4 --global-batch-size 256 --fp16 \\
    --deepspeed --deepspeed_config examples/ds_run.json
"""


def _zero_stage(repo, script: str = "examples/run.sh") -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "plint", "check", "--format", "json", "--root", ".", script],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    layout = json.loads(done.stdout)["files"][0]["layout"]
    return {"value": layout["parallel"]["zero_stage"], **layout["provenance"]["parallel.zero_stage"]}


def test_a_template_named_from_the_root_is_read_from_the_root(tmp_path):
    # fail before: "sed reads examples/ds_TEMPLATE.json, which plint cannot find" (looked for beside the script)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples/ds_TEMPLATE.json").write_text(TEMPLATE)
    (tmp_path / "examples/run.sh").write_text(SCRIPT)
    got = _zero_stage(tmp_path)
    assert got["value"] == 2 and got["origin"] == "literal"


def test_a_template_found_nowhere_stays_unknown(tmp_path):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples/run.sh").write_text(SCRIPT)
    got = _zero_stage(tmp_path)
    assert got["value"] is None and "cannot find" in got["note"]


def test_two_different_templates_in_guessed_places_leave_the_content_unknown(tmp_path):
    # a/b/run.sh names x/t.json: a/x/t.json (a folder above the script) and x/t.json (the root) differ, and plint
    # does not know which folder the script runs from
    (tmp_path / "a/b").mkdir(parents=True)
    for folder, stage in (("a/x", 1), ("x", 3)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "t.json").write_text(TEMPLATE.replace("STAGE", str(stage)))
    (tmp_path / "a/b/run.sh").write_text(
        SCRIPT.replace("examples/ds_TEMPLATE.json", "x/t.json").replace('| sed "s/STAGE/2/" ', "")
    )
    got = _zero_stage(tmp_path, "a/b/run.sh")
    assert got["value"] is None
    assert "x/t.json" in got["note"]
