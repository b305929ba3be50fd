"""Memory on every pipeline rank: each rank's own layers and forwards in flight, and the busiest reported.

Megatron-Core's schedules (megatron/core/pipeline_parallel/schedules.py, core_v0.12 to core_v0.19) give each rank
its own warm-up: forward_backward_pipelining_without_interleaving runs pp - rank - 1 forwards before the first
backward, get_pp_rank_microbatches (pp - rank - 1)*2 + (v-1)*g chunk-forwards under the interleaved schedule; the
peak holds those and the one whose backward comes next. Before, plint costed the first and last ranks only."""

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from fixture_paths import FIXTURES
from plint.catalog.hardware import lookup_gpu
from plint.checking.check import check_paths
from plint.cost import ModelInput, Options, count_params, estimate
from plint.cost import pipeline_stages as ps
from plint.cost.layout_estimate import layout_estimate
from plint.cost.memory import GIB, rank_memory, workspace_bytes
from plint.cost.rank_load import candidate_ranks
from plint.cost.schedule import forwards_in_flight
from plint.report.text import estimate_lines


def test_each_rank_holds_its_own_warm_up_forwards():
    # 1F1B, pp 4, 8 micro-batches: pp - rank - 1 warm-up forwards and the one in progress
    assert [forwards_in_flight("1f1b", 4, r, 8) for r in range(4)] == [4, 3, 2, 1]
    assert [forwards_in_flight("1f1b", 4, r, 2) for r in range(4)] == [2, 2, 2, 1]  # capped by m
    # interleaved, pp 4, v 2, g = pp: (3 - rank)*2 + 4 warm-up chunk-forwards, + 1
    assert [forwards_in_flight("interleaved", 4, r, 8, 2, 4) for r in range(4)] == [11, 9, 7, 5]
    assert [forwards_in_flight("interleaved", 4, r, 4, 2, 4) for r in range(4)] == [8, 8, 7, 5]  # m*v = 8
    # ZB-H2 fills each rank until micro-batch 0's backward reaches it: 2(pp - rank) - 1; GPipe all m
    assert [forwards_in_flight("zb-h2", 4, r, 16) for r in range(4)] == [7, 5, 3, 1]
    assert [forwards_in_flight("gpipe", 4, r, 8) for r in range(4)] == [8, 8, 8, 8]


FIXTURE = FIXTURES / "uneven-pipeline-middle-oom" / "job.sbatch"


def test_a_middle_rank_out_of_memory_is_found_and_named():
    """fixtures/launches/uneven-pipeline-middle-oom: a GPT of 32 layers (h 4096, 32 heads, f 16384, vocab 32000,
    LayerNorm, biases, learned positions, tied embeddings, dropout 0.1) on 8 H100 SXM: tp 1, pp 4, dp 2, micro-batch
    2 of 4,096 tokens, global batch 32 (m = 32 / (2 x 2) = 8), bf16 with the distributed optimizer, and
    --decoder-first-pipeline-num-layers 2 --decoder-last-pipeline-num-layers 2: Megatron's get_num_layers_to_build
    puts (32 - 2 - 2) / 2 = 14 layers on ranks 1 and 2.

    Rank 1 by hand:
      states      14 layers x (12h^2 + 13h = 201,379,840) = 2,819,317,760 parameters x (2 bf16 weights + 4 fp32 main
                  grads + 12 / dp 2 optimizer) = 12 B each: 33,831,813,120 B
      activations per token and layer, flash attention, no SP: norms' and QKV/MLP inputs 8h, two dropout masks 2h,
                  Q K V and the attention output 8h, softmax statistics 4n, MLP 4f = 16h: 34h + 4n = 139,392 B;
                  x 8,192 tokens x 14 layers x 3 micro-batches in flight (1F1B: pp - 1 - 1 warm-up + 1):
                  47,959,769,088 B
      workspaces  Transformer Engine's cuBLAS workspace 32 MiB + PyTorch's 2 x 32 MiB on Hopper: 100,663,296 B
      allocator peak 81,892,245,504 B = 76.27 GiB; with the 2 GiB runtime reserve 78.27 GiB of 80 x 0.93 = 74.4
      usable; the low end of the +-1.8% band (distributed optimizer's measured error) 76.90: PL401.
    Rank 0 holds 2 layers, the embedding and 4 micro-batches of 2 layers (16.9 GiB with the reserve), rank 3 2
    layers, the tied embedding's copy and the logits (11.8): plint reported rank 0 and stayed quiet before."""
    (result,) = check_paths([FIXTURE])
    (layout,) = result.layouts
    mem = layout_estimate(layout).memory_gib
    states = 14 * (12 * 4096**2 + 13 * 4096) * 12
    acts = 3 * 14 * 2 * 4096 * (34 * 4096 + 4 * 32)
    assert states == 33_831_813_120 and acts == 47_959_769_088
    peak = (states + acts + 3 * 32 * 2**20) / GIB
    assert mem["allocator_peak_rank"] == 1 and mem["allocator_peak_stage"] == "middle"
    assert mem["allocator_peak"] == pytest.approx(peak, abs=1e-9) == pytest.approx(76.27, abs=0.005)
    assert mem["total"] == pytest.approx(peak + 2.0, abs=1e-9)
    assert mem["stages"]["middle"]["rank"] == 1
    assert mem["stages"]["first"]["allocator_peak"] + 2.0 == pytest.approx(16.88, abs=0.005)
    assert mem["stages"]["last"]["allocator_peak"] + 2.0 == pytest.approx(11.78, abs=0.005)
    (oom,) = [d for d in result.diagnostics if d.code == "PL401"]
    assert oom.severity == "error"
    assert oom.message.startswith("predicted 78.3 GiB per GPU on pipeline rank 1 ")
    memory_line = "".join(text for _, text in estimate_lines(layout)[1])
    assert "78.3 of 74.4 GiB usable (OVER) on pipeline rank 1:" in memory_line


# a small GPT the split and schedule tests vary
GPT = ModelInput(num_layers=32, hidden_size=1024, num_attention_heads=16, seq_length=2048, vocab_size=32000)


def test_only_ranks_that_can_hold_the_peak_are_costed():
    """An even split: the first rank holds every middle rank's layers and more in flight, so none is costed. First
    and last stages of their own: one middle rank of the other shape. The embedding and loss counted as layers:
    rank 0's chunks (1, 2) against the others' (2, 2), so rank 1 is costed."""
    base = GPT.replace(pp=8)
    assert candidate_ranks(base) == (0, 7)
    assert candidate_ranks(base.replace(pp=1)) == (0,)
    split = ps.first_last(32, 8, None, 2, 6)
    uneven = base.replace(pipeline_stage_layers=split.per_rank(), pipeline_chunk_layers=split.layers)
    assert candidate_ranks(uneven) == (0, 1, 7)
    accounted = ps.account_for(30, 8, 2, embedding=True, loss=True)  # rank 0 (1, 2), the others (2, 2)
    assert candidate_ranks(base.replace(num_layers=30, vpp=2, pipeline_chunk_layers=accounted.layers)) == (0, 1, 7)


def _schedule_input(draw) -> ModelInput:
    pp = draw(st.integers(2, 8))
    vpp = draw(st.sampled_from([None, 2, 3]))
    v = vpp or 1
    how = draw(st.sampled_from(["even", "first_last", "account_for"]))
    chunk = draw(st.integers(1, 4))
    num_layers = pp * v * chunk
    split: ps.Partition | str
    if how == "first_last":
        first, last = draw(st.integers(1, 3)) * v, draw(st.integers(1, 3)) * v
        middle = pp - 2
        num_layers = first + last + middle * v * draw(st.integers(1, 4)) if middle else first + last
        split = ps.first_last(num_layers, pp, vpp, first, last)
    elif how == "account_for":
        split = ps.account_for(num_layers - 2, pp, vpp, embedding=True, loss=True)
        num_layers -= 2
    else:
        split = ps.even(num_layers, pp, vpp)
    inp = GPT.replace(
        num_layers=num_layers,
        pp=pp,
        vpp=vpp,
        tp=draw(st.sampled_from([1, 2])),
        micro_batch=draw(st.integers(1, 2)),
        distributed_optimizer=draw(st.booleans()),
        recompute=draw(st.sampled_from([None, "selective", "full"])),
    )
    inp = inp.replace(nnodes=1, gpus_per_node=inp.tp * pp * draw(st.sampled_from([1, 2])))
    inp = inp.replace(global_batch=inp.micro_batch * inp.data_parallel() * draw(st.integers(1, 12)))
    if isinstance(split, ps.Partition) and not split.is_even():
        inp = inp.replace(
            pipeline_stage_layers=split.per_rank(),
            pipeline_chunk_layers=split.layers,
            first_stage_layers=split.per_rank()[0],
            last_stage_layers=split.per_rank()[-1],
        )
    if vpp is None:
        schedule = draw(st.sampled_from([None, "gpipe", "zb-h1", "zb-h2", "dualpipe"]))
        inp = inp.replace(options=Options(pipeline_schedule=schedule))
    return inp


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_reported_peak_is_the_busiest_rank(data):
    """Whatever the split and schedule, the estimate's allocator peak is at least every rank's own (and is one of
    them: the pruning of candidate_ranks loses none)."""
    inp = _schedule_input(data.draw)
    est = estimate(inp)
    assert est is not None
    c = count_params(inp)
    gpu = lookup_gpu(inp.gpu)
    workspace = workspace_bytes(inp, bool(gpu.fp8_tflops))
    m = est.num_microbatches
    peaks = [(sum(rank_memory(inp, c, m, r).values()) + workspace) / GIB for r in range(inp.pp)]
    reported = est.memory_gib["allocator_peak"]
    assert all(reported >= p * (1 - 1e-12) for p in peaks)
    assert reported == pytest.approx(max(peaks), rel=1e-12)
    assert peaks[est.memory_gib["allocator_peak_rank"]] == pytest.approx(reported, rel=1e-12)
