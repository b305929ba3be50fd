"""The alternatives PL301 and PL302 name for an uneven pipeline are layouts Megatron accepts, costed as they
would run: at a pipeline size that does not divide the layers the alternative carries its own uneven split
(and the message names its flags), at one that does it says to drop the launch's uneven flags, and the gain
compares the launch's split with the alternative's own (plint.planning.alternatives.pipeline_splits)."""

import re
import shutil

import pytest
from hypothesis import given, settings, strategies as st

from fixture_paths import FIXTURES
from plint.checking.check import check_paths
from plint.cost import estimate
from plint.cost import pipeline_stages as stages
from plint.cost.layout_estimate import costed_input, layout_estimate
from plint.fixing.fix import fix_paths
from plint.planning.alternatives import pipeline_layouts

UNEVEN_FIXTURE = FIXTURES / "uneven-pipeline-alternative-pp"
FIRST_LAST = "--decoder-first-pipeline-num-layers 15 --decoder-last-pipeline-num-layers 14"


def _copy(tmp_path, folder=UNEVEN_FIXTURE):
    for name in ("launch.sh", ".plint.toml"):
        if (folder / name).exists():
            shutil.copy(folder / name, tmp_path / name)
    return tmp_path / "launch.sh"


def _findings(result, code):
    return [d for d in result.diagnostics if d.code == code]


def _named_step(message: str) -> float:
    return float(re.search(r"shorter \+- \d+% \(([\d.]+) s vs", message)[1])


def _megatron_errors(result):
    return [d for d in result.diagnostics if d.code.startswith("PL1") and d.severity == "error"]


def test_pl301_alternative_at_another_pp_carries_its_uneven_split():
    """59 layers (prime) on pp 8 with first/last stages 6/5, Megatron-Core 0.12: the alternative at pp 4
    cannot split 59 evenly either; it is named with the first/last stages Megatron accepts there (15 + 15 +
    15 + 14) in place of the launch's, and its step is the cost model's for that split (the slowest rank 15
    layers), not an even 14.75 per rank that Megatron would reject. Failed before: no pp that does not divide
    the layers was tried, and an alternative kept the launch's own per-rank counts whatever its pp."""
    (result,) = check_paths([UNEVEN_FIXTURE / "launch.sh"])
    (finding,) = _findings(result, "PL301")
    assert f"pp 4, with {FIRST_LAST} in place of --decoder-first-pipeline-num-layers 6 " in finding.message
    inp = costed_input(result.layouts[0])
    split = stages.first_last(59, 4, None, 15, 14)
    assert isinstance(split, stages.Partition) and split.per_rank() == (15, 15, 15, 14)
    alternative = inp.replace(
        pp=4,
        dp=2,
        pipeline_stage_layers=split.per_rank(),
        pipeline_chunk_layers=split.layers,
        first_stage_layers=15,
        last_stage_layers=14,
    )
    assert _named_step(finding.message) == pytest.approx(estimate(alternative).step_time_s, abs=0.006)
    even = estimate(
        alternative.replace(
            pipeline_stage_layers=None, pipeline_chunk_layers=None, first_stage_layers=None, last_stage_layers=None
        )
    )
    # the split is what the gain is costed on: an even 14.75 per rank would wait on the last rank's head
    assert abs(even.step_time_s - _named_step(finding.message)) > 0.01


def test_pl301_alternative_written_back_passes_megatrons_checks(tmp_path):
    """`plint fix --unsafe-fixes` writes the alternative PL301 names, uneven flags included, and the launch it
    writes passes plint's Megatron checks (no PL1xx error), reads back to the named split, and is predicted
    at the named step. Failed before: the fix refused a launch with uneven flags."""
    launch = _copy(tmp_path)
    (before,) = check_paths([launch])
    (finding,) = _findings(before, "PL301")
    run = fix_paths([launch], unsafe=True, select=["PL301"])
    assert not run.reverted
    (after,) = check_paths([launch])
    layout = after.layouts[0]
    assert not _megatron_errors(after), after.diagnostics
    assert not _findings(after, "PL301")
    assert (
        layout.value("parallel.pp"),
        layout.value("parallel.uneven_first"),
        layout.value("parallel.uneven_last"),
    ) == (
        4,
        15,
        14,
    )
    assert costed_input(layout).pipeline_stage_layers == (15, 15, 15, 14)
    assert layout_estimate(layout).step_time_s == pytest.approx(_named_step(finding.message), abs=0.006)


LAYOUT_LAUNCH = """#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nnodes 4 --nproc_per_node 8 --node_rank 0 --master_addr n0 --master_port 29500 pretrain_gpt.py \\
    --tensor-model-parallel-size 4 --sequence-parallel \\
    --pipeline-model-parallel-size 8 \\
    --decoder-first-pipeline-num-layers 7 \\
    --decoder-last-pipeline-num-layers 6 \\
    --num-layers 61 --hidden-size 8192 --num-attention-heads 64 \\
    --seq-length 4096 --max-position-embeddings 4096 \\
    --position-embedding-type rope --normalization RMSNorm --swiglu --disable-bias-linear \\
    --vocab-size 128256 --micro-batch-size 1 --global-batch-size 64 \\
    --bf16 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather
"""


def test_pl301_layout_alternative_is_quoted_and_written_back(tmp_path):
    """On the default release (with --pipeline-model-parallel-layout, core 0.13+) a 61-layer launch on pp 8 is
    better interleaved at pp 4 with a balanced layout; the message quotes the string for the shell, and the
    fix writes it in place of the first/last flags, which Megatron rejects beside a layout
    (TransformerConfig.__post_init__). Failed before: pp 4 was never tried, 61 not dividing by it."""
    launch = tmp_path / "launch.sh"
    launch.write_text(LAYOUT_LAUNCH)
    (before,) = check_paths([launch])
    (finding,) = _findings(before, "PL301")
    text = re.search(r"--pipeline-model-parallel-layout '([^']+)' in place of", finding.message)
    assert text and "pp 4" in finding.message, finding.message
    fix_paths([launch], unsafe=True, select=["PL301"])
    written = launch.read_text()
    assert "--decoder-first-pipeline-num-layers" not in written and f"'{text[1]}'" in written
    (after,) = check_paths([launch])
    assert not _megatron_errors(after), after.diagnostics
    assert after.layouts[0].value("parallel.pp") == 4
    assert layout_estimate(after.layouts[0]).step_time_s == pytest.approx(_named_step(finding.message), abs=0.006)


def test_pl302_drops_the_uneven_flags_with_the_pipeline(tmp_path):
    """PL302's pp 1 on an uneven launch says the first/last flags go too (at pp 1 Megatron would still build
    only the last stage's count on the one rank: get_num_layers_to_build), and its fix removes them. Failed
    before: the message did not say so and the fix left them."""
    launch = _copy(tmp_path)
    text = (
        launch.read_text()
        .replace("--hidden-size 8192", "--hidden-size 6144")
        .replace("--ffn-hidden-size 28672", "--ffn-hidden-size 16384")
    )
    launch.write_text(
        text.replace("--num-attention-heads 64", "--num-attention-heads 48").replace("MICRO_BATCH=1", "MICRO_BATCH=2")
    )
    (before,) = check_paths([launch])
    (finding,) = _findings(before, "PL302")
    assert (
        "pp 1 and dp 8, without --decoder-first-pipeline-num-layers 6 --decoder-last-pipeline-num-layers 5 instead"
        in finding.message
    )
    fix_paths([launch], unsafe=True, select=["PL302"])
    assert "--decoder-first-pipeline-num-layers" not in launch.read_text()
    (after,) = check_paths([launch])
    assert after.layouts[0].value("parallel.pp") == 1 and not _megatron_errors(after)


def test_pl302_compares_like_with_like_on_an_uneven_pipeline():
    """PL302's tp 1 keeps the launch's uneven split (10, 12, 12, 12 of fixtures/launches/uneven-pipeline-stages)
    and is costed on it as the launch is. Failed before: the simpler layout was costed on an even 11.5 layers
    per rank against the launch's 12 on its slowest rank."""
    (result,) = check_paths([FIXTURES / "uneven-pipeline-stages" / "launch.sh"])
    (finding,) = _findings(result, "PL302")
    inp = costed_input(result.layouts[0])
    assert inp.pipeline_stage_layers == (10, 12, 12, 12)
    simpler = estimate(inp.replace(tp=1, dp=8, sequence_parallel=False))
    assert f"({simpler.step_time_s:.2f} s vs" in finding.message


@settings(max_examples=60, deadline=None)
@given(
    layers=st.integers(8, 97),
    nodes=st.sampled_from([1, 2, 4, 8]),
    tp=st.sampled_from([1, 2, 4, 8]),
    layout_flag=st.booleans(),
)
def test_every_pipeline_alternative_is_a_split_megatron_accepts(layers, nodes, tp, layout_flag):
    """Each (pp, vpp) pipeline_layouts proposes either divides the layers evenly (over pp x vpp) or carries an
    uneven split that passes Megatron's start-up checks (plint.cost.pipeline_stages re-validates it from its
    flags) and that its per-rank counts are costed on; flags the release lacks are never needed."""
    from plint.planning.plan import base_input

    inp = base_input(
        {"num_layers": layers, "hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000},
        nodes,
        8,
        "h100-sxm",
        4096,
        64,
    ).replace(tp=tp, pp=1, dp=nodes * 8 // tp)
    known = {"--decoder-first-pipeline-num-layers", "--num-virtual-stages-per-pipeline-rank"}
    if layout_flag:
        known.add("--pipeline-model-parallel-layout")
    for c in pipeline_layouts(inp, True, known.__contains__):
        v = c.vpp or 1
        if c.pipeline_split is None:
            assert layers % (c.pp * v) == 0 and c.pipeline_stage_layers is None
            continue
        flags = c.pipeline_split.split()
        assert flags[0] in known
        if flags[0] == "--pipeline-model-parallel-layout":
            from plint.reading.sources.megatron import layout_stages

            unrolled, _ = layout_stages(flags[1])
            again = stages.from_layout(unrolled, c.pp, layers)
        else:
            again = stages.first_last(layers, c.pp, c.vpp, int(flags[1]), int(flags[3]))
        assert isinstance(again, stages.Partition), (c.pipeline_split, again)
        assert again.per_rank() == c.pipeline_stage_layers and again.vpp == v
