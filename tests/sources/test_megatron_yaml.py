"""Megatron-LM's --yaml-cfg: the YAML replaces the whole argument namespace (megatron/training/arguments.py
parse_args -> yaml_arguments.load_yaml, "argparse arguments will be ignored")."""

import json
import subprocess
import sys

from plint.reading.read import read_path

LAUNCH = (
    "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --yaml-cfg {cfg} --tensor-model-parallel-size 8 --fp16\n"
)
CONFIG = (
    "language_model:\n  num_layers: 4\n  hidden_size: 256\n  num_attention_heads: 4\n  activation_func: swiglu\n"
    "model_parallel:\n  tensor_model_parallel_size: 2\n  bf16: True\n  fp16: False\n"
    "micro_batch_size: 2\nglobal_batch_size: 32\nseq_length: 1024\n"
)


def _layout(tmp_path, cfg: str, files: dict[str, str] | None = None):
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    (tmp_path / "launch.sh").write_text(LAUNCH.format(cfg=cfg))
    (layout,) = read_path(tmp_path / "launch.sh").layouts
    return layout


def test_the_yaml_is_the_namespace_and_the_command_line_is_ignored(tmp_path):
    # fail before: tp 8 and fp16 from the command line, and every other field Megatron's default
    layout = _layout(tmp_path, "cfg.yaml", {"cfg.yaml": CONFIG})
    assert (layout.value("parallel.tp"), layout.value("precision"), layout.value("batch.micro")) == (2, "bf16", 2)
    assert (layout.value("model.num_layers"), layout.value("model.seq_length"), layout.value("batch.global")) == (
        4,
        1024,
        32,
    )
    tp = layout.get("parallel.tp")
    assert tp.span.path.endswith("cfg.yaml") and tp.span.line == 7 and "--yaml-cfg" in tp.note
    assert layout.value("model.ffn_hidden_size") == 640  # activation_func swiglu: int(4 * 256 * 2 / 3 / 64) * 64


def test_a_yaml_plint_cannot_read_leaves_every_trainer_value_unknown(tmp_path):
    for cfg, files in (("$CFG", {}), ("missing.yaml", {}), ("bad.yaml", {"bad.yaml": "- a list\n- not a mapping\n"})):
        layout = _layout(tmp_path, cfg, files)
        for key in ("parallel.tp", "precision", "batch.micro", "model.num_layers"):
            value = layout.get(key)
            assert value.value is None and value.origin == "unresolved", (cfg, key, value)
        assert "--yaml-cfg" in layout.get("parallel.tp").note, cfg


def test_a_yaml_whose_aliases_fan_out_is_read_at_once_and_never_rendered(tmp_path):
    # nine levels of ten aliases: a billion items if rendered as text (fail before: str() of the value ran for minutes)
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 10)}]")
    lines += ["micro_batch_size: *i", "num_layers: 4"]
    layout = _layout(tmp_path, "cfg.yaml", {"cfg.yaml": "\n".join(lines) + "\n"})
    micro = layout.get("batch.micro")
    assert micro.value is None and "not a value or list of values plint reads" in micro.note
    assert layout.value("model.num_layers") == 4


def test_a_yaml_outside_the_checked_tree_is_not_read(tmp_path):
    # the root of a check is the file's folder here (no git work tree): ../outside.yaml is not opened
    (tmp_path / "outside.yaml").write_text(CONFIG)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "launch.sh").write_text(LAUNCH.format(cfg="../outside.yaml"))
    done = subprocess.run(
        [sys.executable, "-m", "plint", "check", "--format", "json", "launch.sh"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    provenance = json.loads(done.stdout)["files"][0]["layout"]["provenance"]
    assert provenance["parallel.tp"]["origin"] == "unresolved" and "--yaml-cfg" in provenance["parallel.tp"]["note"]
    assert provenance["precision"]["origin"] == "unresolved"  # neither the YAML's bf16 nor the ignored --fp16
