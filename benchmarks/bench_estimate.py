"""How long one cost-model estimate takes (the planner calls it for every candidate layout).

python benchmarks/bench_estimate.py [repeats]
"""

from __future__ import annotations

import sys
import time

from plint.cost import ModelInput, Options, estimate

LLAMA3_70B = ModelInput(
    num_layers=80,
    hidden_size=8192,
    num_attention_heads=64,
    num_query_groups=8,
    seq_length=8192,
    vocab_size=128256,
    ffn_hidden_size=28672,
    swiglu=True,
    untie_embeddings=True,
    normalization="RMSNorm",
    add_bias_linear=False,
    tp=4,
    pp=4,
    vpp=5,
    cp=2,
    sequence_parallel=True,
    distributed_optimizer=True,
    micro_batch=1,
    global_batch=4096,
    gpu="h100-sxm",
    nnodes=256,
    gpus_per_node=8,
)
MIXTRAL_LIKE = ModelInput(
    num_layers=32,
    hidden_size=4096,
    num_attention_heads=32,
    num_query_groups=8,
    seq_length=4096,
    vocab_size=32000,
    ffn_hidden_size=14336,
    swiglu=True,
    num_experts=8,
    moe_topk=2,
    tp=2,
    pp=4,
    ep=8,
    etp=1,
    sequence_parallel=True,
    distributed_optimizer=True,
    micro_batch=1,
    global_batch=1024,
    gpu="h100-sxm",
    nnodes=16,
    gpus_per_node=8,
)


def main(repeats: int = 20000) -> None:
    dualpipe = MIXTRAL_LIKE.replace(options=Options(pipeline_schedule="dualpipe", tp_comm_overlap=True))
    for name, inp in (
        ("llama3-70b 2048 GPUs", LLAMA3_70B),
        ("mixtral-like MoE 128 GPUs", MIXTRAL_LIKE),
        ("mixtral-like, DualPipe", dualpipe),
    ):
        estimate(inp)  # warm the hardware catalog
        start = time.perf_counter()
        for _ in range(repeats):
            estimate(inp)
        per = (time.perf_counter() - start) / repeats
        print(f"{name:28} {per * 1e6:8.1f} us per estimate ({repeats} runs)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
