"""--overlap-moe-expert-parallel-comm (the expert all-to-all hidden behind another micro-batch's compute) is
accepted by Megatron-Core only beside what TransformerConfig.__post_init__ asserts with it
(megatron/core/transformer/transformer_config.py, core_v0.14.0 to main): ep > 1, virtual pipeline stages with
pp > 1, the alltoall or flex dispatcher, bf16 or fp16, no full recompute, --recompute-method or
--recompute-num-layers, no --moe-shared-expert-overlap, at most one MTP layer. Before, PL111 passed such
launches, PL302 advised ep 1 under the flag (and its fix wrote it), and the planner ranked Qwen3-235B's
layouts with pp 4 without virtual stages under full recompute first: layouts that stop at start-up."""

import pytest

from plint.checking.check import check_paths
from launch_files import found, write_launch
from plint.fixing.fix import fix_paths

CONFIG = 'gpu = "h100-sxm"\nmegatron = "0.16"\n'
GOOD = (
    "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --expert-model-parallel-size 8 "
    "--moe-token-dispatcher-type alltoall --recompute-activations --bf16"
)


def _launch(tmp_path, flags: str, extra: str = "") -> object:
    text = f"""#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=32
torchrun --nnodes 4 --nproc_per_node 8 --node_rank 0 --master_addr node0 pretrain_gpt.py \\
    --num-layers 16 --hidden-size 2048 --num-attention-heads 16 --seq-length 4096 \\
    --max-position-embeddings 4096 --tokenizer-type NullTokenizer --vocab-size 32000 \\
    --num-experts 64 --moe-router-topk 8 --moe-ffn-hidden-size 1024 --disable-bias-linear --swiglu \\
    --micro-batch-size 1 --global-batch-size 256 --train-iters 100 --lr 1e-4 \\
    --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \\
    {flags} {extra}--overlap-moe-expert-parallel-comm
"""
    return write_launch(tmp_path, text, CONFIG)


def test_a_launch_with_what_the_overlap_needs_passes(tmp_path):
    assert not found(_launch(tmp_path, GOOD), "PL111")


@pytest.mark.parametrize(
    "change, needs",
    [
        (("--num-virtual-stages-per-pipeline-rank 2 ", ""), "virtual pipeline stages with pp 2"),
        (("--moe-token-dispatcher-type alltoall ", ""), "alltoall or flex (not allgather, the default)"),
        (("alltoall", "allgather"), "alltoall or flex (not allgather)"),
        (
            (
                "--recompute-activations",
                "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
            ),
            "no full recompute",
        ),
        (("--recompute-activations", "--recompute-activations --recompute-num-layers 1"), "no --recompute-num-layers"),
        (
            ("--recompute-activations", "--moe-shared-expert-intermediate-size 2048 --moe-shared-expert-overlap"),
            "no --moe-shared-expert-overlap",
        ),
        (("--bf16", "--mtp-num-layers 2 --bf16"), "at most one MTP layer"),
        (("--bf16", ""), "--bf16 or --fp16"),
    ],
)
def test_each_requirement_the_launch_lacks_is_named_at_the_flag(tmp_path, change, needs):
    (error,) = found(_launch(tmp_path, GOOD.replace(*change)), "PL111")
    assert error.severity == "error" and error.message.startswith("--overlap-moe-expert-parallel-comm requires ")
    assert needs in error.message, error.message
    assert error.line == 9 and error.end_col - error.col == len("--overlap-moe-expert-parallel-comm")


def test_delayed_weight_gradients_need_the_overlap(tmp_path):
    path = _launch(tmp_path, GOOD + " --delay-wgrad-compute")
    assert not found(path, "PL111")
    path.write_text(path.read_text().replace("--overlap-moe-expert-parallel-comm", ""))
    (error,) = found(path, "PL111")
    assert error.message == "--delay-wgrad-compute requires --overlap-moe-expert-parallel-comm"


def test_expert_parallelism_of_one_is_named(tmp_path):
    (error,) = found(_launch(tmp_path, GOOD.replace("--expert-model-parallel-size 8", "")), "PL111")
    assert "expert parallelism (ep > 1)" in error.message


def test_what_an_unknown_part_of_the_line_may_give_is_not_claimed_missing(tmp_path):
    """$MOE_ARGS may name the dispatcher and virtual stages: silent, as on every unknown."""
    flags = GOOD.replace("--num-virtual-stages-per-pipeline-rank 2 ", "").replace(
        "--moe-token-dispatcher-type alltoall ", ""
    )
    assert not found(_launch(tmp_path, flags, extra="$MOE_ARGS "), "PL111")


def test_dropping_expert_parallelism_drops_the_overlap(tmp_path):
    """PL302's ep 1 comes without the flag, and its unsafe fix removes it: a launch Megatron-Core starts."""
    path = _launch(tmp_path, GOOD.replace("--recompute-activations", ""))
    (advice,) = found(path, "PL302")
    assert "ep 1 (experts replicated), without --overlap-moe-expert-parallel-comm" in advice.message
    run = fix_paths([path], unsafe=True, select=["PL302"])
    assert not run.reverted
    text = path.read_text()
    assert "--expert-model-parallel-size 1" in text and "--overlap-moe-expert-parallel-comm" not in text
    (after,) = check_paths([path])
    assert not [d for d in after.diagnostics if d.severity == "error"]


def test_alternatives_skip_layouts_megatron_refuses_under_the_overlap():
    """The rules' alternatives (PL202, PL203, PL301, PL310) keep the launch's overlap: a layout Megatron then
    refuses (here ep 1, the cost model's fastest) is no advice beside it."""
    from plint.cost import estimate
    from plint.planning.alternatives import faster
    from plint.planning.plan import base_input

    model = {
        "num_layers": 16, "hidden_size": 2048, "num_attention_heads": 16, "seq_length": 4096,
        "vocab_size": 32000, "num_experts": 64, "moe_topk": 8, "moe_ffn_hidden_size": 1024,
    }  # fmt: skip
    base = base_input(model, 4, 8, "h100-sxm", None, 256).replace(pp=2, vpp=2, ep=8, dp=16)
    fields = {n: getattr(base.options, n) for n in base.options.__record_fields__}
    launch = base.replace(options=base.options.__class__(**{**fields, "moe_a2a_overlap": True}))
    replicated, halved = launch.replace(ep=1), launch.replace(ep=4)
    assert estimate(replicated).step_time_s < estimate(halved).step_time_s  # what makes ep 1 tempting
    est = estimate(launch)
    slower = est.__class__(**{**{n: getattr(est, n) for n in est.__record_fields__}, "step_time_s": 1e9})

    def fits(_):
        return True

    (chosen, _) = faster(launch, slower, [replicated, halved], None, fits, 0.0, estimate)
    assert chosen.ep == 4
