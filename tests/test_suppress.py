"""`# plint: disable=...` directives: whole statements, trailing comments, file-wide, JSON via the script."""

import json

from plint.check import check_paths

BAD_TP = "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n    --tensor-model-parallel-size 2 \\\n    --bf16\n"


def diagnostics(tmp_path, text, files=None):
    for name, body in (files or {}).items():
        (tmp_path / name).write_text(body)
    path = tmp_path / "launch.sh"
    path.write_text(text)
    (result,) = check_paths([path])
    return [(d.code, d.line, d.suppressed) for d in result.diagnostics]


def active(diags):
    return sorted({code for code, _, suppressed in diags if suppressed is None})


def test_directive_before_a_multiline_command_covers_it_all(tmp_path):
    text = "# shellcheck disable=SC2086\n# plint: disable=PL303,cuda-device-max-connections -- tuned later\n" + BAD_TP
    diags = diagnostics(tmp_path, text)
    assert "PL303" not in active(diags) and "PL601" not in active(diags)
    suppressed = [d for d in diags if d[2] is not None]
    assert suppressed and all(s["justification"] == "tuned later" for _, _, s in suppressed)
    assert "PL004" not in active(diags)


def test_without_directive_the_findings_show(tmp_path):
    assert {"PL303", "PL601"} <= set(active(diagnostics(tmp_path, BAD_TP)))


def test_trailing_directive_covers_its_line_only(tmp_path):
    text = ("export CUDA_DEVICE_MAX_CONNECTIONS=1\nARGS=(\n  --tensor-model-parallel-size 2  # plint: disable=PL303\n"
            "  --bf16\n)\ntorchrun --nproc_per_node 8 pretrain_gpt.py ${ARGS[@]}\n")
    assert "PL303" not in active(diagnostics(tmp_path, text))


def test_file_wide_directive(tmp_path):
    text = BAD_TP + "# plint: disable-file=sequence-parallel-off\n"
    assert "PL303" not in active(diagnostics(tmp_path, text))


def test_directive_on_the_statement_writing_a_json_covers_the_json(tmp_path):
    text = ("# plint: disable=PL106 -- the trainer overrides the batch\n"
            "cat > ds.json <<'EOF'\n{\"train_batch_size\": 60, \"train_micro_batch_size_per_gpu\": 2}\nEOF\n"
            "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n")
    diags = diagnostics(tmp_path, text)
    assert "PL106" not in active(diags) and any(c == "PL106" for c, _, s in diags if s is not None)


def test_unused_directive_is_reported(tmp_path):
    text = "# plint: disable=PL201\ntorchrun --nproc_per_node 8 pretrain_gpt.py --bf16 --use-distributed-optimizer\n"
    assert ("PL004", 1, None) in diagnostics(tmp_path, text)


def test_suppressed_findings_stay_in_json_and_do_not_fail(tmp_path):
    from click.testing import CliRunner

    from plint.cli import cli

    path = tmp_path / "launch.sh"
    path.write_text("# plint: disable=PL101\n" + BAD_TP.replace("2", "3"))
    result = CliRunner().invoke(cli, ["check", "--format", "json", str(path)])
    doc = json.loads(result.output)
    pl101 = [d for d in doc["files"][0]["diagnostics"] if d["code"] == "PL101"]
    assert pl101 and pl101[0]["suppressed"]["kind"] == "inSource"
    assert result.exit_code == 0 and doc["summary"]["error"] == 0
