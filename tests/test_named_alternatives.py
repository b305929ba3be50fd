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
                              f"--moe-ffn-hidden-size 512 {OPTIMIZER}", seq=4096, glob=64)
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
        "ep": (f"--expert-model-parallel-size 16 --num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size 512 "
               f"{OPTIMIZER}", dict(seq=4096, glob=64), "PL203", "parallel.ep"),
        "cp": (f"--tensor-model-parallel-size 4 --context-parallel-size 4 --sequence-parallel {OPTIMIZER}",
               dict(seq=32768, glob=32), "PL202", "parallel.cp"),
    }
    for name, (extra, shape, code, key) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        before = _check(folder, extra, **shape)
        (finding,) = _findings(before, code)
        named = int(finding.message.split(" instead")[0].rsplit(f"{name} ", 1)[1].split()[0])
        fix_paths([folder / "launch.sh"], unsafe=True)
        (after,) = check_paths([folder / "launch.sh"])
        assert after.layouts[0].value(key) == named, name
        assert not _findings(after, code), name
