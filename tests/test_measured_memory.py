"""benchmarks/measured_memory.py on a functional test written here (no Megatron-LM checkout): how a
case becomes a launch, what is measured from its golden values, and plint's estimate beside it; and the
launch flags the harness relies on plint reading (attention implementation, cross entropy, fp8 recipe)."""

from __future__ import annotations

import json

import pytest

from plint.cost.layout_estimate import cost_input, layout_estimate, unmodelled_features
from plint.reading.read import read_path
from tests.test_corpus_script import _load

harness = _load("measured_memory")

CONFIG = """\
ENV_VARS:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
TEST_TYPE: regular
MODEL_ARGS:
  --num-layers: 4
  --hidden-size: 1024
  --num-attention-heads: 16
  --seq-length: 1024
  --max-position-embeddings: 1024
  --micro-batch-size: 2
  --global-batch-size: 16
  --tensor-model-parallel-size: 2
  --pipeline-model-parallel-size: 2
  --transformer-impl: local
  --bf16: true
  --fp16: false
  --save: ${CHECKPOINT_SAVE_PATH}
  --data-path: ${DATA_PATH}/my_text_document
  --vocab-file: ${DATA_PATH}/bpe/vocab.json
  --merge-file: ${DATA_PATH}/bpe/merges.txt
  --log-interval: 1
  --tensorboard-dir: ${TENSORBOARD_PATH}
  --split: 949,50,1
  --data-parallel-sharding-strategy: optim
  --recompute-modules: [core_attn]
  --spec: "[megatron.core.models.gpt.gpt_layer_specs some_spec]"
"""
GOLDEN = {
    "mem-allocated-bytes": {
        "start_step": 1,
        "end_step": 3,
        "step_interval": 1,
        "values": {"1": 100.0, "2": 120.0, "3": 120.0},
    },
    "mem-max-allocated-bytes": {
        "start_step": 1,
        "end_step": 3,
        "step_interval": 1,
        "values": {"1": 900.0, "2": 1000.0, "3": "nan"},
    },
    "iteration-time": {"start_step": 1, "end_step": 3, "step_interval": 1, "values": {"1": 5.0, "2": 0.25, "3": 0.35}},
}


@pytest.fixture
def mirror(tmp_path):
    case = tmp_path / "tests/functional_tests/test_cases/gpt/my_case"
    case.mkdir(parents=True)
    (case / "model_config.yaml").write_text(CONFIG)
    (case / "golden_values_dev_dgx_h100.json").write_text(json.dumps(GOLDEN))
    (case / "golden_values_lts_dgx_a100.json").write_text("not json")  # a broken file is skipped
    release = tmp_path / "tests/functional_tests/test_cases/gpt/my_release"
    release.mkdir(parents=True)
    (release / "model_config.yaml").write_text(CONFIG.replace("TEST_TYPE: regular", 'TEST_TYPE: "release"'))
    (release / "golden_values_dev_dgx_a100.json").write_text(json.dumps(GOLDEN))
    return tmp_path


def test_a_case_becomes_rows_and_a_launch(mirror):
    rows = harness.rows_of(mirror)
    assert [(r.case, r.environment, r.gpu) for r, _ in rows] == [
        ("gpt/my_case", "dev", "h100-sxm"),
        ("gpt/my_release", "dev", "a100-80gb"),
    ]
    row, text = rows[0]
    # the peak is the largest logged (never reset), the steady the median, the time the median after step 1
    assert (row.measured_peak, row.measured_steady, row.iteration_time_s) == (1000.0, 120.0, 0.3)
    assert (row.nodes, row.gpus_per_node) == (1, 8)  # no recipe names it: one node of 8
    assert row.features == ["tp", "pp", "unfused attention"]
    # the case's ENV_VARS are exported before the launch (issue 23: PyTorch reads CUBLAS_WORKSPACE_CONFIG)
    assert text.startswith(
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py"
    )
    for kept in (
        "--transformer-impl local",
        "--data-parallel-sharding-strategy optim",
        "--recompute-modules core_attn",
        "--bf16",
        "--vocab-size 50257",
        # a string in brackets goes as its words, as the functional tests' _run_training.sh passes it
        "--spec megatron.core.models.gpt.gpt_layer_specs some_spec",
    ):
        assert kept in text
    for dropped in (
        "--fp16",
        "--save",
        "--data-path",
        "--vocab-file",
        "--log-interval",
        "--tensorboard-dir",
        "--split",
    ):
        assert dropped + " " not in text and not text.rstrip().endswith(dropped)
    # a release test's size is in no recipe: missed, and said why
    assert rows[1][0].missed == "release test: its node count is in no recipe"


def test_the_estimate_beside_the_measurement(mirror, tmp_path):
    row, text = harness.rows_of(mirror)[0]
    harness.estimate_row(row, text, tmp_path)
    assert row.missed is None and row.estimated_stage == "last"  # the last rank logs
    assert row.estimated_peak > row.estimated_steady > 0
    assert row.peak_error == pytest.approx(row.estimated_peak / 1000.0 - 1)
    summary = harness.summarise("all", [row])
    assert (summary.rows, summary.covered) == (1, 1) and summary.median_abs == pytest.approx(abs(row.peak_error))


def test_vocabularies_of_the_tokenizers():
    assert harness.tokenizer_vocab({"--tokenizer-type": "TikTokenizer"})[0] == 131072
    assert harness.tokenizer_vocab({"--tokenizer-type": "NullTokenizer", "--vocab-size": 8192})[0] == 8192
    assert harness.tokenizer_vocab({"--tokenizer-type": "BertWordPieceCase"})[0] == 29096
    assert harness.tokenizer_vocab({"--vocab-file": "x/vocab.json"})[0] == 50257
    # examples/bert/pretrain_bert.py defaults --tokenizer-type to BertWordPieceLowerCase (was read as GPT-2's)
    assert harness.tokenizer_vocab({"--vocab-file": "x/vocab.txt"}, harness.DEFAULT_TOKENIZERS["bert"])[0] == 30522
    assert (
        harness.tokenizer_vocab({"--tokenizer-type": "HuggingFaceTokenizer", "--tokenizer-model": "me/mine"})[0] is None
    )


def test_percentile_interpolates():
    assert harness.percentile([0.0, 1.0], 0.9) == pytest.approx(0.9)
    assert harness.percentile([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0], 0.9) == pytest.approx(1.0)


def _read(tmp_path, flags: str):
    script = tmp_path / "launch.sh"
    script.write_text(
        "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
        "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
        f"--micro-batch-size 2 --global-batch-size 16 --vocab-size 50257 --bf16 {flags}\n"
    )
    return read_path(script).layouts[0]


@pytest.mark.parametrize(
    "flags, flash, buffer, te, loss",
    [
        ("", True, False, True, "native"),
        ("--transformer-impl local", False, True, False, "native"),
        ("--attention-backend unfused", False, False, True, "native"),
        ("--attention-backend flash --cross-entropy-loss-fusion", True, False, True, "fused"),
        ("--cross-entropy-loss-fusion --cross-entropy-fusion-impl te", True, False, True, "te"),
        ("--cross-entropy-fusion-impl te", True, False, True, "native"),  # the impl alone fuses nothing
    ],
)
def test_attention_and_loss_are_read_from_the_launch(tmp_path, flags, flash, buffer, te, loss):
    opts = cost_input(_read(tmp_path, flags)).options
    assert (opts.flash_attention, opts.attention_score_buffer, opts.transformer_engine, opts.cross_entropy) == (
        flash,
        buffer,
        te,
        loss,
    )


def test_wgrad_deferral_is_read(tmp_path):
    assert cost_input(_read(tmp_path, "")).options.wgrad_deferral_limit is None
    deferred = _read(tmp_path, "--defer-embedding-wgrad-compute --wgrad-deferral-limit 2")
    assert cost_input(deferred).options.wgrad_deferral_limit == 2
    assert cost_input(_read(tmp_path, "--defer-embedding-wgrad-compute")).options.wgrad_deferral_limit == 0


def test_microbatch_group_and_uneven_end_stages_are_read(tmp_path):
    assert cost_input(_read(tmp_path, "")).options.microbatch_group is None
    grouped = _read(tmp_path, "--microbatch-group-size-per-virtual-pipeline-stage 5")
    assert cost_input(grouped).options.microbatch_group == 5
    script = tmp_path / "uneven.sh"
    script.write_text(
        "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 12 --hidden-size 1024 "
        "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 --vocab-size 50257 "
        "--micro-batch-size 2 --global-batch-size 16 --pipeline-model-parallel-size 4 "
        "--decoder-first-pipeline-num-layers 2 --decoder-last-pipeline-num-layers 2\n"
    )
    est = layout_estimate(read_path(script).layouts[0])
    # issue 24: costed rank by rank (the note names the split), no longer as 4 stages of the fullest's 4 layers
    assert any("layers per rank 2, 4, 4, 2" in note for note in est.notes)
    # the last stage holds 2 layers, the first 2 layers x 4 micro-batches in flight: the first is the peak
    assert est.memory_gib["allocator_peak_stage"] == "first"
    assert est.memory_gib["stages"]["last"]["allocator_steady"] < est.memory_gib["stages"]["first"]["allocator_steady"]


def test_swiglu_fusion_switch_is_read(tmp_path):
    assert cost_input(_read(tmp_path, "--swiglu")).options.bias_swiglu_fusion
    assert not cost_input(_read(tmp_path, "--swiglu --no-bias-swiglu-fusion")).options.bias_swiglu_fusion


def test_fp8_recipe_and_param_gather_are_read(tmp_path):
    opts = cost_input(_read(tmp_path, "--fp8-format hybrid --fp8-recipe mxfp8 --fp8-param-gather")).options
    assert (opts.fp8_recipe, opts.fp8_param_gather) == ("mxfp8", True)


def test_mamba_and_vision_entry_points_are_not_modelled(tmp_path):
    script = tmp_path / "mamba.sh"
    script.write_text(
        "torchrun --nproc-per-node 8 pretrain_mamba.py --num-layers 4 --hidden-size 1024 "
        "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 --vocab-size 50257\n"
    )
    layout = read_path(script).layouts[0]
    assert unmodelled_features(layout) == ["Mamba layers (a hybrid model)"]
    assert any("not modelled: Mamba layers" in note for note in layout_estimate(layout).notes)
    hybrid = _read(tmp_path, "--hybrid-override-pattern M*M*")
    assert unmodelled_features(hybrid) == ["Mamba layers (a hybrid model)"]


def test_release_cases_whose_memory_is_size_free_are_estimated():
    """(issue 23) A release case no recipe sizes is estimated at its smallest launch only when a GPU's memory does not
    depend on the node count: no data-parallel sharding, no experts (their groups follow the world size), no pipeline
    (its micro-batches in flight follow global batch / dp)."""
    t5 = {"--tensor-model-parallel-size": 4, "--pipeline-model-parallel-size": 1}
    assert harness.size_free_memory(t5) and harness.smallest_nodes(t5, 8) == 1
    assert harness.smallest_nodes({"--tensor-model-parallel-size": 8, "--context-parallel-size": 2}, 8) == 2
    assert not harness.size_free_memory({**t5, "--use-distributed-optimizer": True})
    assert not harness.size_free_memory({**t5, "--pipeline-model-parallel-size": 2})
    assert not harness.size_free_memory({**t5, "--num-experts": 8})


@pytest.mark.parametrize(
    "flags, graphs",
    [
        ("--cuda-graph-impl transformer_engine", True),
        ("--cuda-graph-impl none", False),
        ("--enable-cuda-graph", True),
        ("", False),
    ],
)
def test_cuda_graphs_are_not_modelled(tmp_path, flags, graphs):
    """(issue 23) Captured CUDA graphs keep static buffers and a private pool plint does not count."""
    assert ("CUDA graphs" in unmodelled_features(_read(tmp_path, flags))) == graphs
