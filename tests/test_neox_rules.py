"""Rules on GPT-NeoX launches (deepy.py): NeoX takes YAML keys, not Megatron's flags, so advice names its
config keys or stays quiet (each fails before: PL308 advised --recompute-activations, PL305 a DeepSpeed
config, PL310 --micro-batch-size, PL309 --no-pipeline-parallel, none of which a NeoX launch has)."""

from __future__ import annotations

from pathlib import Path

from fixture_paths import ROOT
from plint.checking.check import check_paths

LAUNCHES = ROOT / "fixtures" / "launches"


def _messages(folder: str, code: str) -> list[str]:
    (result,) = check_paths([LAUNCHES / folder / "launch.sh"])
    return [d.message for d in result.diagnostics if d.code == code]


def test_no_selective_recompute_is_advised_to_gpt_neox():
    # GPT-NeoX has full activation checkpointing only (checkpoint_activations)
    assert _messages("neox-conf-dir-merged", "PL308") == []


def test_zero_1_is_advised_in_the_gpt_neox_config():
    (message,) = _messages("neox-duplicate-key", "PL305")
    assert '"zero_optimization": {"stage": 1} in the GPT-NeoX config' in message
    assert "--use-distributed-optimizer" not in message


def test_a_larger_micro_batch_is_named_by_neoxs_key():
    (message,) = _messages("neox-heads-indivisible", "PL310")
    assert '"train_micro_batch_size_per_gpu": ' in message and "--micro-batch-size" not in message


def test_zero_2_with_neoxs_pipeline_module_names_pipe_parallel_size_0(tmp_path: Path):
    source = LAUNCHES / "neox-heads-indivisible"
    for path in source.rglob("*"):
        if path.is_file() and path.name not in ("golden.json", "expected.yaml"):
            target = tmp_path / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())
    config = next(p for p in (tmp_path / "configs").iterdir() if "zero_optimization" in p.read_text())
    config.write_text(config.read_text().replace('"stage": 1', '"stage": 2'))
    (result,) = check_paths([tmp_path / "launch.sh"], root=str(tmp_path))
    (message,) = [d.message for d in result.diagnostics if d.code == "PL309"]
    assert "without pipe_parallel_size 0 (even at pp 1)" in message
