"""What the interleaved pipeline schedule accepts by Megatron-LM release (plint.catalog.interleaving): pp 2 from
core 0.8, and micro-batches that are no multiple of pp from core 0.10. PL108 says so under an older release
named in [tool.plint], and PL301 advises no interleaved layout that release refuses. Each fails before."""

from __future__ import annotations

import pytest

from plint.catalog.interleaving import NEWEST, interleaving
from plint.checking.check import check_paths
from plint.cost import ModelInput
from plint.planning.alternatives import pipeline_layouts

SHAPE = (
    "--num-layers 32 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
    "--max-position-embeddings 2048 --micro-batch-size 1 --bf16"
)


def pl108(tmp_path, flags: str, release: str) -> list[str]:
    (tmp_path / "launch.sh").write_text(
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        f"torchrun --nproc_per_node 8 pretrain_gpt.py {flags} {SHAPE}\n"
    )
    (tmp_path / "pyproject.toml").write_text(f'[tool.plint]\nmegatron = "{release}"\n')
    (result,) = check_paths([tmp_path / "launch.sh"])
    return [d.message for d in result.diagnostics if d.code == "PL108"]


INTERLEAVED = "--num-layers-per-virtual-pipeline-stage 2 --pipeline-model-parallel-size"


@pytest.mark.parametrize("release, said", [("0.6", True), ("0.8", False), ("0.19", False)])
def test_pp_2_interleaves_from_core_0_8(tmp_path, release, said):
    found = pl108(tmp_path, f"{INTERLEAVED} 2 --global-batch-size 8", release)
    expected = [
        "virtual pipeline stages need pp >= 3 under Megatron-LM 0.6 as configured (pp 2 interleaves from core 0.8); "
        "pp is 2"
    ]
    assert found == (expected if said else [])


@pytest.mark.parametrize("release, said", [("0.8", True), ("0.10", False), ("0.19", False)])
def test_micro_batches_no_multiple_of_pp_interleave_from_core_0_10(tmp_path, release, said):
    found = pl108(tmp_path, f"{INTERLEAVED} 8 --global-batch-size 12", release)
    assert len(found) == int(said)
    if said:
        assert found[0].startswith(
            "12 micro-batches per step is not a multiple of pp 8: Megatron-LM 0.8 as configured raises 'number of "
            "microbatches (12) is not divisible by pipeline-model-parallel-size (8) when using interleaved schedule'"
        )
    assert pl108(tmp_path, f"{INTERLEAVED} 8 --global-batch-size 16", release) == []


def test_the_demands_of_each_release():
    assert NEWEST.accepts(2, 3) and NEWEST.accepts(8, 12) and not NEWEST.accepts(8, 4)
    old = interleaving(has_pp2=False, has_groups=False)
    assert (old.min_pp, old.multiple_of_pp) == (3, True)
    assert old.accepts(4, 12) and not old.accepts(8, 12) and not old.accepts(2, 4)
    assert interleaving(overlap_p2p=False).min_pp == 3  # --no-overlap-p2p-communication


def test_the_pipeline_alternatives_follow_the_release():
    """PL301's candidates (plint.planning.alternatives.pipeline_layouts) of 8 GPUs at micro-batch 1: pp p leaves
    12 * p / 8 micro-batches a step, a multiple of p only when 8 divides the global batch; so under core 0.8 a
    global batch of 12 interleaves nowhere, one of 16 everywhere but, under core 0.6, over pp 2."""

    def interleaved(global_batch, demands):
        inp = ModelInput(
            num_layers=32,
            hidden_size=2048,
            num_attention_heads=16,
            seq_length=2048,
            vocab_size=32000,
            global_batch=global_batch,
            nnodes=1,
            gpus_per_node=8,
            pp=8,
            dp=1,
        )
        return {c.pp for c in pipeline_layouts(inp, demands=demands) if c.vpp and c.micro_batch == 1}

    core_0_6, core_0_8 = interleaving(has_pp2=False, has_groups=False), interleaving(has_groups=False)
    assert interleaved(12, NEWEST) == {2, 4, 8} and interleaved(12, core_0_8) == set()
    assert interleaved(16, core_0_8) == {2, 4, 8} and interleaved(16, core_0_6) == {4, 8}
