"""Megatron-LM's --yaml-cfg: the YAML replaces the whole argument namespace (megatron/training/arguments.py
parse_args -> yaml_arguments.load_yaml, "argparse arguments will be ignored")."""

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
