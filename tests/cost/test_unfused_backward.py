"""The unfused attention core's backward (memory.unfused_core_backward_bytes): the score-sized gradients it holds
beside the saved activations, worked out by hand, read from the launch, and held against the Megatron-LM runs
measured on an H200 (benchmarks/data/gpu/h200_megatron_runs.json)."""

import json
from pathlib import Path

import pytest
from plint.cost import Options, count_params
from plint.cost.layout_estimate import cost_input, layout_estimate
from plint.cost.memory import fused_softmax_runs, stage_memory, unfused_core_backward_bytes
from plint.reading.read import read_path
from tests.cost.test_memory import SMALL  # h=1024, 4 layers, 16 heads, V=50304, b=2, s=1024, 8 GPUs, bf16

ROOT = Path(__file__).resolve().parents[2]
MEASURED = ROOT / "benchmarks" / "data" / "gpu" / "h200_megatron_runs.json"
GIB = float(1 << 30)
MIB = float(1 << 20)
SCORES = 2 * 16 * 1024 * 1024  # one micro-batch's scores on a GPU: b x n x s x s


def unfused(**options) -> Options:
    return Options(flash_attention=False, **options)


def test_flash_attention_holds_no_score_gradients():
    assert unfused_core_backward_bytes(SMALL) == 0.0


def test_dropout_backward_adds_a_second_gradient():
    """bmm's backward returns the probabilities' gradient (2 B a score); attention dropout's backward another."""
    inp = SMALL.replace(options=unfused())
    assert inp.attention_dropout > 0
    assert unfused_core_backward_bytes(inp) == 4 * SCORES


def test_fused_softmax_backward_is_in_place():
    """At attention dropout 0 the fused kernel writes the gradient into its input: 2 B a score; torch's softmax
    (--no-masked-softmax-fusion, or a shape the kernel refuses) returns a new tensor: 4 B."""
    no_dropout = SMALL.replace(attention_dropout=0.0, options=unfused())
    assert fused_softmax_runs(no_dropout)
    assert unfused_core_backward_bytes(no_dropout) == 2 * SCORES
    torch_softmax = no_dropout.replace(options=unfused(masked_softmax_fusion=False))
    assert not fused_softmax_runs(torch_softmax)
    assert unfused_core_backward_bytes(torch_softmax) == 4 * SCORES


@pytest.mark.parametrize("change", [{"seq_length": 8192}, {"precision": "fp32"}, {"micro_batch": 1, "tp": 8}])
def test_shapes_the_fused_kernel_refuses(change):
    """FusedScaleMaskSoftmax.is_kernel_available (core_v0.16.1): sk at most 4,096, a 16-bit input, the batch x
    heads on the GPU a multiple of 4 (1 x 16/8 = 2 is not)."""
    inp = SMALL.replace(attention_dropout=0.0, options=unfused(), **change)
    assert not fused_softmax_runs(inp)


def test_selective_recompute_rebuilds_the_core_for_its_backward():
    """core_attn recomputed: its softmax output, dropout mask and dropout output (5 B a score) come back for the
    backward, beside the two gradients."""
    inp = SMALL.replace(recompute="selective", recompute_modules=("core_attn",), options=unfused())
    assert unfused_core_backward_bytes(inp) == (4 + 5) * SCORES


def test_the_peak_moves_to_the_backward_where_the_gradients_outweigh_the_loss():
    """The stage's peak is the larger of the forward's end (activations and what the loss holds) and the last layer's
    backward (the loss's share gone, the score gradients held). With a vocabulary of 1,024 the loss holds
    2,048 tokens x (4h + 6 B x 1,024 logits) = 20 MiB, the gradients 4 B x 2 x 16 x 1,024^2 = 128 MiB.
    Forward's end per token: 4 layers x 116,736 (test_measured_terms.test_unfused_attention_keeps_the_scores)
    + the embedding's dropout mask h + 4h + 6 x 1,024 = 478,208."""
    inp = SMALL.replace(vocab_size=1024, options=unfused())
    at_the_loss = 2048 * (4 * 1024 + 6 * 1024)
    assert at_the_loss == 20 * MIB
    forward_end = 2048 * 478_208
    acts = stage_memory(inp, count_params(inp), 8, last=False)["activations"]
    assert acts == forward_end - at_the_loss + 4 * SCORES == 1_092_616_192
    # the usual vocabulary keeps the peak at the loss: 2,048 x 6 x 50,304 B = 590 MiB outweighs 128 MiB
    big_vocab = SMALL.replace(options=unfused())
    assert stage_memory(big_vocab, count_params(big_vocab), 8, last=False)["activations"] == 2048 * (
        4 * 116_736 + 1024 + 4096 + 6 * 50304
    )


def test_no_masked_softmax_fusion_is_read(tmp_path):
    script = tmp_path / "launch.sh"
    script.write_text(
        "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16"
        " --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 2 --global-batch-size 16 --bf16"
        " --transformer-impl local --no-masked-softmax-fusion\n"
    )
    inp = cost_input(read_path(script, gpu="h100-sxm").layouts[0])
    assert inp is not None
    assert inp.options.masked_softmax_fusion is False
    assert inp.options.flash_attention is False
    unflagged = cost_input(read_path(_rewrite(script, " --no-masked-softmax-fusion", ""), gpu="h100-sxm").layouts[0])
    assert unflagged is not None and unflagged.options.masked_softmax_fusion is True


def _rewrite(script: Path, old: str, new: str) -> Path:
    script.write_text(script.read_text().replace(old, new))
    return script


def _measured_runs() -> list[dict]:
    return [run for run in json.loads(MEASURED.read_text())["runs"] if "error" not in run]


@pytest.mark.parametrize("run", _measured_runs(), ids=lambda run: Path(run["launch"]).stem)
def test_memory_against_megatron_runs_measured_on_an_h200(run):
    """Megatron-LM core_v0.16.1's pretrain_gpt.py on one H200 (benchmarks/gpu/README.md): plint's allocator peak
    within 3% of the max allocated after two iterations, its steady figure within 0.5% of what stayed allocated."""
    est = layout_estimate(read_path(ROOT / run["launch"], gpu="h200").layouts[0])
    assert est is not None
    peak = est.memory_gib["allocator_peak"] * GIB
    steady = est.memory_gib["allocator_steady"] * GIB
    assert peak == pytest.approx(run["max_allocated_mib"] * MIB, rel=0.03)
    assert steady == pytest.approx(run["allocated_mib"] * MIB, rel=0.005)
