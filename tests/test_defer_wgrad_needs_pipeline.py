"""--defer-embedding-wgrad-compute needs a pipeline: Megatron-LM's ModelParallelConfig.__post_init__
(megatron/core/model_parallel_config.py) raises "Cannot defer embedding wgrad compute when pipeline model
parallel is not used". Found on NeMo 2's Nemotron-3 22B recipe (fixtures/advised, benchmarks/heldout): PL302
named pp 1 for a launch that defers, costed the deferral's buffers at pp 1 (70.4 GiB instead of 63.4) and its
unsafe fix wrote pp 1 beside the flag, a launch that stops at start-up; and PL111 let such a launch pass."""

from plint.checking.check import check_paths
from launch_files import found, write_launch
from plint.fixing.fix import fix_paths

CONFIG = 'gpu = "h100-sxm"\nassume = { SLURM_NODEID = 0, MASTER_ADDR = "node0" }\ninter-node-bandwidth-gbps = 400\n'


def _launch(tmp_path, pp: int):
    text = f"""#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nnodes 8 --nproc_per_node 8 --node_rank "$SLURM_NODEID" --rdzv_backend c10d --rdzv_endpoint "$MASTER_ADDR:29500" \\
    pretrain_gpt.py \\
    --num-layers 40 --hidden-size 6144 --ffn-hidden-size 24576 --num-attention-heads 48 \\
    --squared-relu --normalization LayerNorm --apply-layernorm-1p --disable-bias-linear \\
    --untie-embeddings-and-output-weights --position-embedding-type rope --rotary-percent 0.5 \\
    --tokenizer-type NullTokenizer --vocab-size 256000 --hidden-dropout 0 --attention-dropout 0 \\
    --seq-length 4096 --max-position-embeddings 4096 \\
    --tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap --pipeline-model-parallel-size {pp} \\
    --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --grad-reduce-in-bf16 \\
    --defer-embedding-wgrad-compute \\
    --micro-batch-size 1 --global-batch-size 256 --bf16 \\
    --train-iters 100 --lr 1.0e-4
"""
    return write_launch(tmp_path, text, CONFIG)


def test_deferral_without_a_pipeline_is_a_start_up_error(tmp_path):
    (error,) = found(_launch(tmp_path, 1), "PL111")
    assert (
        error.severity == "error" and "--defer-embedding-wgrad-compute requires pipeline parallelism" in error.message
    )


def test_deferral_with_a_pipeline_passes(tmp_path):
    assert not found(_launch(tmp_path, 4), "PL111")


def test_dropping_the_pipeline_drops_the_deferral(tmp_path):
    """PL302 names pp 1 without the deferral, costed without its buffers (63.4 GiB, as the same launch without
    the flag at pp 1), and its unsafe fix removes the flag with the pipeline: a launch Megatron-LM starts."""
    path = _launch(tmp_path, 4)
    (advice,) = found(path, "PL302")
    assert "pp 1 and dp 32, without --defer-embedding-wgrad-compute" in advice.message
    assert "63.4 of 74.4 GiB" in advice.message
    run = fix_paths([path], unsafe=True, select=["PL302"])
    assert not run.reverted
    text = path.read_text()
    assert "--pipeline-model-parallel-size 1" in text and "--defer-embedding-wgrad-compute" not in text
    (after,) = check_paths([path])
    assert not [d for d in after.diagnostics if d.severity == "error"]
