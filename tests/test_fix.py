"""`plint fix`: byte-range edits of the original text, safe fixers, revert, --diff, atomic writes."""

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from fixture_paths import ROOT
from plint.checking.check import check_paths
from plint.cli.fix_command import run_fix
from plint.fixing.fix import attach_fixes, fix_paths

BASH = shutil.which("bash")
LAUNCHES = sorted(p for p in (ROOT / "fixtures" / "launches").iterdir() if p.is_dir())


def launch(tp="1", extra="", prefix="export CUDA_DEVICE_MAX_CONNECTIONS=1\n", sp=" --sequence-parallel"):
    return (
        "#!/bin/bash\n"
        "# GPT 1.3B on one node (comment kept)\n"
        "set -euo pipefail\n"
        f"{prefix}"
        "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
        f"    --tensor-model-parallel-size {tp}{sp if tp != '1' else ''} \\\n"
        "    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\\n"
        "    --seq-length 2048 --max-position-embeddings 2048 \\\n"
        f"    --micro-batch-size 1 --global-batch-size 64 --bf16{extra}\n"
    )


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def bash_ok(path: Path) -> bool:
    return subprocess.run([BASH, "-n", str(path)], capture_output=True, check=False).returncode == 0


def codes(path, **options):
    return [d.code for r in check_paths([path], **options) for d in r.diagnostics if d.suppressed is None]


def snapshot(paths) -> dict:
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*")))]
    return {f: f.read_bytes() for f in files if f.is_file()}


def assert_idempotent(*paths, **options):
    before = snapshot(paths)
    again = fix_paths(list(paths), **options)
    assert again.changes == [] and again.fixed == []
    assert snapshot(paths) == before


# ---- PL501: a misspelled flag ---------------------------------------------------------------------


def test_misspelled_flag_is_replaced_in_place(tmp_path):
    script = write(tmp_path / "launch.sh", launch(extra=" --lr-decay-styl cosine  # schedule"))
    result = fix_paths([script])
    assert [f.code for f in result.fixed] == ["PL501"]
    text = script.read_text()
    assert text == launch(extra=" --lr-decay-style cosine  # schedule")
    assert "PL501" not in codes(script)
    assert_idempotent(script)


def test_misspelled_flag_through_a_variable_is_edited_at_the_assignment(tmp_path):
    text = launch(extra=" $SCHEDULE").replace(
        "set -euo pipefail\n", 'set -euo pipefail\nSCHEDULE="--lr 3e-4 --lr-decay-styl cosine"   # from the old run\n'
    )
    script = write(tmp_path / "launch.sh", text)
    fix_paths([script])
    fixed = script.read_text()
    assert 'SCHEDULE="--lr 3e-4 --lr-decay-style cosine"   # from the old run\n' in fixed
    assert fixed.endswith("--bf16 $SCHEDULE\n")  # the use of the variable is untouched
    assert "PL501" not in codes(script)


def test_misspelled_flag_in_an_array(tmp_path):
    text = (
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\nMODEL_ARGS=(\n"
        "    --num-layers 24\n    --hiden-size 2048   # typo\n    --num-attention-heads 16\n"
        "    --seq-length 2048 --max-position-embeddings 2048\n)\n"
        'torchrun --nproc_per_node 8 pretrain_gpt.py "${MODEL_ARGS[@]}" --micro-batch-size 1 '
        "--global-batch-size 64 --bf16\n"
    )
    script = write(tmp_path / "launch.sh", text)
    fix_paths([script])
    assert script.read_text() == text.replace("--hiden-size", "--hidden-size")


def _configured_release(folder):
    """An unknown flag is an error only where the release is known (issue 14): name it, as a user would."""
    write(folder / ".plint.toml", 'megatron = "0.19"\n')


def test_fix_that_adds_an_error_is_reverted(tmp_path, capsys):
    # the typo hides tp 3, which 8 GPUs cannot hold: fixing it would turn one error into another
    _configured_release(tmp_path)
    script = write(tmp_path / "launch.sh", launch(extra=" --tensor-model-paralel-size 3"))
    original = script.read_text()
    result = fix_paths([script], select=["PL1", "PL501"])
    assert result.fixed == [] and result.changes == []
    assert len(result.reverted) == 1 and "PL501" in result.reverted[0] and "PL101" in result.reverted[0]
    assert script.read_text() == original
    assert run_fix([script], select="PL1,PL501") == 1
    err = capsys.readouterr().err
    assert "reverted" in err


# ---- PL502: a renamed flag -------------------------------------------------------------------------


def test_renamed_flag_takes_the_same_value(tmp_path):
    script = write(tmp_path / "launch.sh", launch(extra=" \\\n    --layernorm-epsilon 1e-5"))
    result = fix_paths([script], select=["PL502"])
    assert [f.code for f in result.fixed] == ["PL502"]
    assert script.read_text().endswith("--bf16 \\\n    --norm-epsilon 1e-5\n")
    assert "PL502" not in codes(script)


def test_renamed_flag_already_given_is_left_alone(tmp_path):
    script = write(tmp_path / "launch.sh", launch(extra=" --batch-size 2"))
    result = fix_paths([script], select=["PL502"])
    assert result.changes == []  # --micro-batch-size is given too: which one was meant is the author's call


# ---- PL303 and PL601 -------------------------------------------------------------------------------


def test_sequence_parallel_added_after_tp_set_through_a_variable(tmp_path):
    text = launch(tp="$TP", sp="").replace("set -euo pipefail\n", "set -euo pipefail\nTP=2  # tensor parallel\n")
    script = write(tmp_path / "launch.sh", text)
    result = fix_paths([script], select=["PL303"])
    assert [f.code for f in result.fixed] == ["PL303"]
    fixed = script.read_text()
    assert "TP=2  # tensor parallel\n" in fixed
    assert "    --tensor-model-parallel-size $TP --sequence-parallel \\\n" in fixed
    assert "PL303" not in codes(script)
    assert_idempotent(script, select=["PL303"])


def test_sequence_parallel_not_added_for_megatron_deepspeed(tmp_path):
    (tmp_path / "ds.json").write_text('{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1}\n')
    text = launch(tp="2", sp="").replace("--bf16", "--bf16 --deepspeed --deepspeed_config ds.json")
    script = write(tmp_path / "launch.sh", text)
    fix_paths([script])
    assert "--sequence-parallel" not in script.read_text()


def test_cuda_max_connections_exported_at_the_statement_indentation(tmp_path):
    body = launch(tp="2", prefix="").replace("torchrun", "if true; then\n    # the run\n    torchrun")
    script = write(tmp_path / "launch.sh", body + "fi\n")
    result = fix_paths([script])
    assert [f.code for f in result.fixed] == ["PL601"]
    fixed = script.read_text()
    assert "if true; then\n    # the run\n    export CUDA_DEVICE_MAX_CONNECTIONS=1\n    torchrun --nproc" in fixed
    assert "PL601" not in codes(script)
    if BASH:
        assert bash_ok(script)
    assert_idempotent(script)


@pytest.mark.parametrize(
    "opening, closing",
    [
        ('case "${1:-train}" in\n  train) ', " ;;\nesac\n"),
        ("if true; then ", "\nfi\n"),
    ],
)
def test_cuda_max_connections_where_the_launch_shares_its_line(tmp_path, opening, closing):
    # the line opens with a case pattern or `then`, not with the launch: a line above it would land
    # inside the pattern list; the export takes the launch's place and the launch moves down, aligned
    body = launch(tp="2", prefix="").rstrip("\n").replace("torchrun", opening + "torchrun")
    script = write(tmp_path / "launch.sh", body + closing)
    result = fix_paths([script])
    assert [f.code for f in result.fixed] == ["PL601"]
    fixed = script.read_text()
    column = " " * len(opening.split("\n")[-1])
    assert f"{opening}export CUDA_DEVICE_MAX_CONNECTIONS=1\n{column}torchrun --nproc" in fixed
    assert "PL601" not in codes(script)
    if BASH:
        assert bash_ok(script)
    assert_idempotent(script)


def test_all_safe_fixes_together(tmp_path):
    text = (
        "#!/bin/bash\n# nightly run\nTP=4\n\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
        "    --tensor-model-parallel-size ${TP} \\\n"
        "    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\\n"
        "    --seq-length 2048 --max-position-embeddings 2048 \\\n"
        "    --micro-batch-size 1 --global-batch-size 64 --bf16 --lr-decay-styl cosine\n"
    )
    script = write(tmp_path / "train.sh", text)
    result = fix_paths([script])
    assert sorted(f.code for f in result.fixed) == ["PL303", "PL501", "PL601"]
    assert script.read_text() == (
        "#!/bin/bash\n# nightly run\nTP=4\n\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
        "    --tensor-model-parallel-size ${TP} --sequence-parallel \\\n"
        "    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\\n"
        "    --seq-length 2048 --max-position-embeddings 2048 \\\n"
        "    --micro-batch-size 1 --global-batch-size 64 --bf16 --lr-decay-style cosine\n"
    )
    if BASH:
        assert bash_ok(script)
    assert_idempotent(script)


# ---- PL504: DeepSpeed keys -------------------------------------------------------------------------

MDS = (
    "deepspeed --num_gpus 8 pretrain_gpt.py \\\n"
    "    --tensor-model-parallel-size 1 --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\\n"
    "    --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 \\\n"
    "    --bf16 --deepspeed --deepspeed_config {config}\n"
)


def test_deepspeed_key_fixed_inside_a_heredoc(tmp_path):
    text = (
        "#!/bin/bash\nZERO=1\ncat <<EOT > ds_config.json\n{\n"
        '  "train_batch_size": 64,\n  "train_micro_batch_size_per_gpu": 1,\n'
        '  "zero_optimisation":   {"stage": $ZERO},\n  "bf16": {"enabled": true}\n}\nEOT\n\n'
        + MDS.format(config="ds_config.json")
    )
    script = write(tmp_path / "launch.sh", text)
    result = fix_paths([script])
    assert [f.code for f in result.fixed] == ["PL504"]
    assert script.read_text() == text.replace('"zero_optimisation":   {', '"zero_optimization":   {')
    assert "PL504" not in codes(script)
    assert_idempotent(script)


def test_deepspeed_key_fixed_in_a_separate_json_file(tmp_path):
    config = tmp_path / "ds.json"
    text = (
        '{\n    "train_batch_size": 64,\n    "train_micro_batch_size_per_gpu": 1,\n'
        '    "zero_optimization": {"stage": 1,   "overlap_com": true},\n'
        '    "gradient_clippin": 1.0,\n    "bf16": {"enabled": true}\n}\n'
    )
    config.write_text(text)
    script = write(tmp_path / "launch.sh", "#!/bin/bash\n" + MDS.format(config="ds.json"))
    script_text = script.read_text()
    result = fix_paths([script])
    assert sorted(f.code for f in result.fixed) == ["PL504", "PL504"]
    assert [c.real for c in result.changes] == [os.path.realpath(config)]
    assert config.read_text() == text.replace('"overlap_com"', '"overlap_comm"').replace(
        '"gradient_clippin"', '"gradient_clipping"'
    )
    assert script.read_text() == script_text
    assert_idempotent(script, config)


def test_renamed_deepspeed_key_gets_its_new_name(tmp_path):
    """aio.thread_count is nothing like intra_op_parallelism in spelling; the rename table gives it."""
    config = tmp_path / "ds.json"
    text = '{"train_batch_size": 64, "aio": {"block_size": 1048576, "thread_count": 2}}\n'
    config.write_text(text)
    result = fix_paths([config])
    assert [f.code for f in result.fixed] == ["PL504"]
    assert config.read_text() == text.replace('"thread_count"', '"intra_op_parallelism"')
    assert_idempotent(config)


def test_deepspeed_json_checked_alone_and_with_its_launch(tmp_path):
    # a folder: the JSON is checked on its own and through the launch; the edit is made once
    (tmp_path / "ds.json").write_text('{"train_batch_size": 64, "zero_optimisation": {"stage": 1}}\n')
    write(tmp_path / "launch.sh", "#!/bin/bash\n" + MDS.format(config="ds.json"))
    fix_paths([tmp_path])
    assert (tmp_path / "ds.json").read_text() == '{"train_batch_size": 64, "zero_optimization": {"stage": 1}}\n'


def test_deepspeed_key_not_renamed_onto_an_existing_key(tmp_path):
    text = '{"train_batch_size": 64, "zero_optimization": {"stage": 2}, "zero_optimisation": {"stage": 3}}\n'
    config = tmp_path / "ds.json"
    config.write_text(text)
    fix_paths([config])
    assert config.read_text() == text


# ---- --diff, atomic writes, the command, the fix field ---------------------------------------------


def test_diff_writes_nothing(tmp_path, capsys):
    script = write(tmp_path / "launch.sh", launch(extra=" --lr-decay-styl cosine"))
    before = script.read_bytes()
    mtime = script.stat().st_mtime_ns
    assert run_fix([script], diff=True) == 1
    out = capsys.readouterr()
    assert "-    --micro-batch-size 1 --global-batch-size 64 --bf16 --lr-decay-styl cosine" in out.out
    assert "+    --micro-batch-size 1 --global-batch-size 64 --bf16 --lr-decay-style cosine" in out.out
    assert out.out.startswith(f"--- {script}\n+++ {script}\n@@ ")
    assert "would fix 1 finding(s) in 1 file(s)" in out.err
    assert script.read_bytes() == before and script.stat().st_mtime_ns == mtime
    assert list(tmp_path.iterdir()) == [script]
    run_fix([script])
    capsys.readouterr()
    assert run_fix([script], diff=True) == 0
    assert capsys.readouterr().out == ""


def test_atomic_write_keeps_the_mode(tmp_path):
    script = write(tmp_path / "launch.sh", launch(extra=" --lr-decay-styl cosine"))
    script.chmod(0o750)
    fix_paths([script])
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert "--lr-decay-style" in script.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["launch.sh"]  # no temporary file left


def test_run_fix_summary_and_exit_code(tmp_path, capsys):
    _configured_release(tmp_path)
    script = write(tmp_path / "launch.sh", launch(extra=" --lr-decay-styl cosine"))
    assert run_fix([script], select="PL501") == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("fixed 1 finding(s) in 1 file(s), 0 remaining")
    bad = write(tmp_path / "bad.sh", launch(extra=" --no-such-flag-at-all 3"))
    assert run_fix([bad], select="PL501") == 1
    out = capsys.readouterr().out
    assert "PL501 [error]" in out and "fixed 0 finding(s) in 0 file(s), 1 remaining" in out
    (tmp_path / ".plint.toml").unlink()  # no release named and no parser beside it: only a warning
    assert run_fix([bad], select="PL501") == 0
    assert "PL501 [warning]" in capsys.readouterr().out


def test_attach_fixes_fills_the_fix_field(tmp_path):
    script = write(tmp_path / "launch.sh", launch(extra=" --lr-decay-styl cosine"))
    run = check_paths([script])
    attach_fixes(run)
    (d,) = [d for r in run for d in r.diagnostics if d.code == "PL501"]
    data = script.read_bytes()
    assert d.fix["description"] == "replace --lr-decay-styl with --lr-decay-style"
    (edit,) = d.fix["edits"]
    assert data[edit["start"] : edit["end"]] == b"--lr-decay-styl" and edit["text"] == "--lr-decay-style"
    assert d.to_json()["fix"] == d.fix


# ---- every fixture launch --------------------------------------------------------------------------


@pytest.mark.parametrize("folder", LAUNCHES, ids=[p.name for p in LAUNCHES])
def test_fix_on_fixture_launches(folder, tmp_path):
    from plint.fixing.fix import _errors

    work = tmp_path / folder.name
    shutil.copytree(folder, work)  # never fix the fixtures themselves
    errors_before = _errors(check_paths([work]))
    result = fix_paths([work])
    errors_after = _errors(check_paths([work]))
    assert not [k for k, n in errors_after.items() if n > errors_before.get(k, 0)], result.reverted
    if BASH:
        for f in work.rglob("*"):
            if f.suffix in (".sh", ".bash", ".slurm", ".sbatch") and bash_ok(folder / f.relative_to(work)):
                assert bash_ok(f), f
    assert_idempotent(work)


def test_fix_command_and_json_fix_field(tmp_path):
    """`plint fix` on the command line, and the `fix` object of `plint check --format json` (DESIGN.md)."""
    from click.testing import CliRunner
    from plint.cli.commands import cli

    launch = tmp_path / "launch.sh"
    launch.write_text(
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py --hiden-size 2048 --num-layers 24 "
        "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --bf16\n"
    )
    doc = json.loads(CliRunner().invoke(cli, ["check", "--format", "json", str(launch)]).output)
    (d,) = [d for d in doc["files"][0]["diagnostics"] if d["code"] == "PL501"]
    assert d["fix"]["edits"][0]["text"] == "--hidden-size"
    shown = CliRunner().invoke(cli, ["fix", "--diff", str(launch)])
    assert shown.exit_code == 1 and "+torchrun --nproc_per_node 8 pretrain_gpt.py --hidden-size 2048" in shown.output
    assert "--hiden-size" in launch.read_text()  # --diff writes nothing
    fixed = CliRunner().invoke(cli, ["fix", str(launch)])
    assert fixed.exit_code == 0, fixed.output
    assert "--hidden-size 2048" in launch.read_text() and "--hiden-size" not in launch.read_text()
    assert CliRunner().invoke(cli, ["fix", "--format", "json", str(launch)]).exit_code == 2  # not an option of fix


def test_misspelt_sequence_parallel_is_corrected_not_doubled(tmp_path):
    path = tmp_path / "launch.sh"
    path.write_text(
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parralel "
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        "--max-position-embeddings 2048 --bf16\n"
    )
    fix_paths([path])
    assert path.read_text().count("--sequence-parallel") == 1 and "--sequence-parralel" not in path.read_text()
    assert_idempotent(path)
