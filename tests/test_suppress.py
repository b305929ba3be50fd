"""`# plint: disable=...` directives: whole statements, trailing comments, file-wide, JSON via the script."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from plint.checking.check import check_paths
from plint.checking.suppress import read_directives

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
    text = (
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\nARGS=(\n  --tensor-model-parallel-size 2  # plint: disable=PL303\n"
        "  --bf16\n)\ntorchrun --nproc_per_node 8 pretrain_gpt.py ${ARGS[@]}\n"
    )
    assert "PL303" not in active(diagnostics(tmp_path, text))


def test_file_wide_directive(tmp_path):
    text = BAD_TP + "# plint: disable-file=sequence-parallel-off\n"
    assert "PL303" not in active(diagnostics(tmp_path, text))


def test_directive_on_the_statement_writing_a_json_covers_the_json(tmp_path):
    text = (
        "# plint: disable=PL106 -- the trainer overrides the batch\n"
        'cat > ds.json <<\'EOF\'\n{"train_batch_size": 60, "train_micro_batch_size_per_gpu": 2}\nEOF\n'
        "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n"
    )
    diags = diagnostics(tmp_path, text)
    assert "PL106" not in active(diags) and any(c == "PL106" for c, _, s in diags if s is not None)


def test_unused_directive_is_reported(tmp_path):
    text = "# plint: disable=PL201\ntorchrun --nproc_per_node 8 pretrain_gpt.py --bf16 --use-distributed-optimizer\n"
    assert ("PL004", 1, None) in diagnostics(tmp_path, text)


def test_suppressed_findings_stay_in_json_and_do_not_fail(tmp_path):
    from click.testing import CliRunner

    from plint.cli.commands import cli

    path = tmp_path / "launch.sh"
    path.write_text("# plint: disable=PL101\n" + BAD_TP.replace("2", "3"))
    result = CliRunner().invoke(cli, ["check", "--format", "json", str(path)])
    doc = json.loads(result.output)
    pl101 = [d for d in doc["files"][0]["diagnostics"] if d["code"] == "PL101"]
    assert pl101 and pl101[0]["suppressed"]["kind"] == "inSource"
    assert result.exit_code == 0 and doc["summary"]["error"] == 0


def test_directive_before_an_array_covers_every_element(tmp_path):
    text = (
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\n# plint: disable=sequence-parallel-off -- measured\nARGS=(\n"
        "  --bf16\n  --tensor-model-parallel-size 2\n)\ntorchrun --nproc_per_node 8 pretrain_gpt.py ${ARGS[@]}\n"
    )
    diags = diagnostics(tmp_path, text)
    assert ("PL303", 5, {"kind": "inSource", "justification": "measured"}) in diags
    assert "PL004" not in active(diags)


def test_directive_inside_an_array_covers_the_next_element_only(tmp_path):
    text = (
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\nARGS=(\n  # plint: disable=PL303\n  --bf16\n"
        "  --tensor-model-parallel-size 2\n)\ntorchrun --nproc_per_node 8 pretrain_gpt.py ${ARGS[@]}\n"
    )
    diags = diagnostics(tmp_path, text)
    assert "PL303" in active(diags) and "PL004" in active(diags)  # it covered `--bf16`, not the tp line


def test_trailing_directive_on_the_last_line_covers_the_whole_command(tmp_path):
    text = BAD_TP.replace("--bf16\n", "--bf16  # plint: disable=PL303,PL601\n")
    diags = diagnostics(tmp_path, text)
    assert "PL303" not in active(diags) and "PL601" not in active(diags) and "PL004" not in active(diags)


def test_directive_after_the_statement_or_in_a_heredoc_body_covers_nothing(tmp_path):
    text = BAD_TP + "# plint: disable=PL303\ncat > notes.txt <<'EOF'\n# plint: disable=PL601\nEOF\n"
    diags = diagnostics(tmp_path, text)
    assert {"PL303", "PL601"} <= set(active(diags))
    assert [line for code, line, _ in diags if code == "PL004"] == [4]  # the heredoc line is no directive


def test_directive_in_a_sourced_file_covers_findings_there(tmp_path):
    common = '# plint: disable=PL303 -- tuned in common.sh\nTP_ARGS="--tensor-model-parallel-size 2"\n'
    text = (
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\nsource ./common.sh\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py $TP_ARGS --bf16\n"
    )
    diags = diagnostics(tmp_path, text, {"common.sh": common})
    assert ("PL303", 2, {"kind": "inSource", "justification": "tuned in common.sh"}) in diags
    assert "PL004" not in active(diags)


def test_sourced_file_directive_counts_uses_across_the_run(tmp_path):
    (tmp_path / "common.sh").write_text('# plint: disable=PL303\nTP_ARGS="--tensor-model-parallel-size 2"\n')
    (tmp_path / "uses.sh").write_text("source ./common.sh\ntorchrun --nproc_per_node 8 pretrain_gpt.py $TP_ARGS\n")
    (tmp_path / "ignores.sh").write_text("source ./common.sh\ntorchrun --nproc_per_node 8 pretrain_gpt.py --bf16\n")
    run = check_paths([tmp_path / "ignores.sh", tmp_path / "uses.sh"])
    assert not [d for r in run for d in r.diagnostics if d.code == "PL004"]  # used by one of the two


def test_typos_and_unknown_rules_in_directives_are_reported(tmp_path):
    text = "# plint: disable=PL303,sequnce-parallel-off\n" + BAD_TP + "# plint: disabled=PL601\necho done\n"
    pl004 = {
        line: message
        for code, line, message in ((d.code, d.line, d.message) for d in _result(tmp_path, text).diagnostics)
        if code == "PL004"
    }
    assert "did you mean `sequence-parallel-off`" in pl004[1] and "not a plint directive" in pl004[5]


def test_reason_without_dashes_and_names_in_any_case(tmp_path):
    text = "# plint: disable=Sequence-Parallel-Off, pl601 because we measured\n" + BAD_TP
    diags = diagnostics(tmp_path, text)
    assert {"PL303", "PL601"}.isdisjoint(active(diags))
    assert {s["justification"] for _, _, s in diags if s} == {"because we measured"}


def test_unused_directive_can_itself_be_silenced_and_follows_the_configuration(tmp_path):
    text = "# plint: disable-file=unused-directive\n# plint: disable=PL201\n" + BAD_TP
    assert "PL004" not in active(diagnostics(tmp_path, text))
    (tmp_path / ".git").mkdir()
    (tmp_path / ".plint.toml").write_text('ignore = ["unused-directive"]\n')
    assert "PL004" not in active(diagnostics(tmp_path, "# plint: disable=PL201\n" + BAD_TP))


def test_file_wide_directive_covers_the_json_the_script_names(tmp_path):
    ds = '{"train_batch_size": 60, "train_micro_batch_size_per_gpu": 2}\n'
    text = (
        "deepspeed --num_gpus 8 train.py --deepspeed_config conf/ds.json\n"
        "# plint: disable-file=PL106 -- overridden by the trainer\n"
    )
    (tmp_path / "conf").mkdir()
    diags = diagnostics(tmp_path, text, {"conf/ds.json": ds})
    assert "PL106" not in active(diags) and any(c == "PL106" and s for c, _, s in diags)


def _result(tmp_path, text):
    path = tmp_path / "launch.sh"
    path.write_text(text)
    (result,) = check_paths([path])
    return result


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "# plint: disable=PL303 -- why\n",
                "# plint: disable-file=PL601\n",
                "# plint: disable=\n",
                "#plint:disable=,\n",
                "torchrun a \\\n",
                "  --tp 2  # plint: disable=PL303\n",
                "ARGS=(\n",
                ")\n",
                "cat <<EOF > ds.json\n",
                "EOF\n",
                "if true; then\n",
                "fi  # plint: disable=x\n",
                "'\n",
                '"\n',
                "\r\n",
                "\udcff\n",
                "# plint: enable=PL1\n",
            ]
        ),
        max_size=12,
    ).map("".join)
)
def test_any_text_yields_directives_without_raising(text):
    for d in read_directives("launch.sh", text):
        assert 1 <= d.line <= text.count("\n") + 1
        assert d.problem is not None or d.first <= d.last
