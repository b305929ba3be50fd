"""Efficiency advice names a better layout of the same launch or stays quiet (PL202, PL203; PL301 is in
test_cost_rules.py): each alternative is searched by plint.planning.alternatives, must fit, be predicted
faster by more than the cost model's margin, mostly through the communication the rule is about, and the
unsafe fix writes it."""

from plint.checking.check import check_paths
from plint.cost import estimate
from plint.cost.layout_estimate import cost_input, layout_estimate
from plint.fixing.fix import fix_paths
from plint.planning.alternatives import context_layouts, expert_layouts
from plint.rules.common import gpt, torchrun

TWO_NODES = "torchrun --nproc_per_node 8 --nnodes 2 --master_addr n0"
OPTIMIZER = "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"


def _check(tmp_path, extra: str, **shape):
    for name, text in torchrun(gpt(extra, **shape), launcher=TWO_NODES).files.items():
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / "launch.sh"])
    return result


def _findings(result, code):
    return [d for d in result.diagnostics if d.code == code]


def test_expert_all_to_all_across_nodes_names_a_smaller_ep(tmp_path):
    # 16 small experts (top-4, width 512) over ep 16 on two nodes: the all-to-all is most of the step; the
    # smaller sizes whose group fits in a node are 2, 4 and 8, and the message names the fastest
    result = _check(tmp_path, f"--expert-model-parallel-size 16 --num-experts 16 --moe-router-topk 4 "
                              f"--moe-ffn-hidden-size 512 {OPTIMIZER}", seq=8192, glob=64)
    (finding,) = _findings(result, "PL203")
    inp, est = cost_input(result.layouts[0]), layout_estimate(result.layouts[0])
    options = {c.ep: estimate(c) for c in expert_layouts(inp, 8)}
    assert sorted(options) == [2, 4, 8]
    best = min(options, key=lambda ep: options[ep].step_time_s)
    gain = 1 - options[best].step_time_s / est.step_time_s
    assert gain > 0.10  # MoE: the margin is 10%
    assert f"ep {best} instead keeps it inside a node: step predicted {100 * gain:.1f}% shorter" in finding.message


def test_expert_parallelism_across_nodes_is_quiet_when_the_experts_fit_nowhere_else(tmp_path):
    # Mixtral-sized experts (64 of width 14336): on a node's 8 GPUs each would hold 8 experts of every
    # layer, far over its memory; ep 16 across nodes is how this model trains, and nothing better fits
    result = _check(tmp_path, f"--expert-model-parallel-size 16 --num-experts 64 --moe-router-topk 2 "
                              f"--moe-ffn-hidden-size 14336 --swiglu {OPTIMIZER}", layers=32, hidden=4096, heads=32,
                    seq=4096, glob=64)
    inp = cost_input(result.layouts[0])
    limit = 0.9 * layout_estimate(result.layouts[0]).memory_gib["usable"]
    assert all(estimate(c).memory_gib["total"] > limit for c in expert_layouts(inp, 8))
    assert not _findings(result, "PL203")


def test_context_parallel_ring_hidden_under_attention_is_quiet(tmp_path):
    # tp 8 x cp 2 across two nodes with GQA at 8k (NVIDIA's Llama-3.1 405B shape): no smaller cp of at
    # least 2 fits in a node beside tp 8, so there is nothing to name
    result = _check(tmp_path, "--tensor-model-parallel-size 8 --context-parallel-size 2 --sequence-parallel "
                              "--group-query-attention --num-query-groups 8 " + OPTIMIZER,
                    layers=8, hidden=16384, heads=128, seq=8192, glob=32)
    assert list(context_layouts(cost_input(result.layouts[0]), 8)) == []
    assert not _findings(result, "PL202")


def test_fix_writes_the_named_expert_and_context_sizes(tmp_path):
    cases = {
        "PL203": (f"--expert-model-parallel-size 16 --num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size 512 "
                  f"{OPTIMIZER}", dict(seq=8192, glob=64), "ep"),
        "PL202": (f"--tensor-model-parallel-size 4 --context-parallel-size 4 --sequence-parallel {OPTIMIZER}",
                  dict(seq=32768, glob=32), "cp"),
        "PL307": (f"--context-parallel-size 2 {OPTIMIZER}", dict(seq=2048), "cp"),  # short chunks: cp 1 named
    }
    for code, (extra, shape, name) in cases.items():
        key = f"parallel.{name}"
        folder = tmp_path / code
        folder.mkdir()
        before = _check(folder, extra, **shape)
        (finding,) = _findings(before, code)
        named = int(finding.message.split(" instead")[0].rsplit(f"{name} ", 1)[1].split()[0])
        # PL302's fix drops the axis: its own test; PL310's larger micro-batch (these small layers wait on the
        # host's dispatch, Options.host_layer_s) edits the same lines: its own tests
        fix_paths([folder / "launch.sh"], unsafe=True, ignore=["PL302", "PL310"])
        (after,) = check_paths([folder / "launch.sh"])
        assert after.layouts[0].value(key) == named, code
        assert not _findings(after, code), code


def test_needless_axis_fix_sets_it_to_one_with_what_only_it_allows(tmp_path):
    # tp 2 with sequence parallelism and TP comm overlap on a 1.3B model: PL302 finds tp 1 faster; the fix
    # writes tp 1 and drops --sequence-parallel (PL304) and --tp-comm-overlap (PL111) with it
    result = _check(tmp_path, f"--tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap {OPTIMIZER}",
                    glob=256)
    (finding,) = _findings(result, "PL302")
    assert finding.message.startswith("tensor parallelism tp 2 is not needed")
    fix_paths([tmp_path / "launch.sh"], unsafe=True, select=["PL302"])
    text = (tmp_path / "launch.sh").read_text()
    assert "--tensor-model-parallel-size 1" in text and "--sequence-parallel" not in text
    assert "--tp-comm-overlap" not in text
    (after,) = check_paths([tmp_path / "launch.sh"])
    assert not {"PL302", "PL304", "PL111"} & {d.code for d in after.diagnostics}


def test_full_recompute_fix_writes_selective_recompute(tmp_path):
    result = _check(tmp_path, f"--recompute-granularity full --recompute-method uniform --recompute-num-layers 1\n"
                              f"{OPTIMIZER}", hidden=4096, heads=32)  # GPU-bound layers, as in test_cost_rules
    assert _findings(result, "PL308")
    fix_paths([tmp_path / "launch.sh"], unsafe=True, select=["PL308"])
    text = (tmp_path / "launch.sh").read_text()
    assert "--recompute-activations" in text and "--recompute-granularity" not in text
    assert "--recompute-method" not in text and "--recompute-num-layers" not in text
    (after,) = check_paths([tmp_path / "launch.sh"])
    assert after.layouts[0].value("recompute.granularity") == "selective"
    assert not _findings(after, "PL308") and not _findings(after, "PL112")


def test_low_mfu_fix_writes_the_larger_micro_batch(tmp_path):
    # GPT-2 small at micro-batch 1 of a 64-sequence per-rank batch: GEMMs too small to run near peak
    result = _check(tmp_path, "--use-distributed-optimizer", layers=12, hidden=768, heads=12, seq=1024, glob=512)
    (finding,) = _findings(result, "PL310")
    named = int(finding.message.split("--micro-batch-size ")[1].split()[0])
    assert named > 1 and 64 % named == 0
    fix_paths([tmp_path / "launch.sh"], unsafe=True, select=["PL310"])
    (after,) = check_paths([tmp_path / "launch.sh"])
    assert after.layouts[0].value("batch.micro") == named
    assert not _findings(after, "PL310")
