"""Causal attention kernel times on this GPU: torch's scaled_dot_product_attention with the cuDNN backend (the
fused attention Transformer Engine runs on Hopper) and with the flash backend, forward and forward+backward,
for the head shapes of Llama 3 70B/405B, GPT-3 175B and gpt-oss at tp 1 and 8, sequence 2,048-8,192, batch 1.

Grouped-query shapes are given their key/value heads expanded to the query heads: the kernels do the same
arithmetic either way, and the flash backend takes no grouped heads. One JSON object a line:
kind "attn", name, backend, tp, s, hq, hk, d, s_f, s_fb (median seconds of timed repetitions, CUDA events),
tflops_f (causal forward FLOPs 4*s*s*d*hq/2 over s_f) and tflops_fb_3x (three times those over s_fb).
"""

import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DTYPE = torch.bfloat16
SHAPES = (("llama-128", 64, 8, 128), ("gpt3", 96, 96, 128), ("gptoss-64", 64, 8, 64), ("l405", 128, 8, 128))
BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def median_seconds(fn, reps: int = 10, warm: int = 3) -> float:
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    return times[len(times) // 2]


def measure(name: str, heads: int, groups: int, dim: int, tp: int, seq: int, backend: str) -> dict:
    hq, hk = heads // tp, max(1, groups // tp)
    q, k, v = (torch.randn(1, hq, seq, dim, device="cuda", dtype=DTYPE, requires_grad=True) for _ in range(3))
    grad_out = torch.randn(1, hq, seq, dim, device="cuda", dtype=DTYPE)

    def forward_backward() -> None:
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(grad_out)

    def forward() -> None:
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=True)

    with sdpa_kernel([BACKENDS[backend]]):
        s_fb, s_f = median_seconds(forward_backward), median_seconds(forward)
    flops_f = 4 * seq * seq * dim * hq * 0.5
    return dict(
        kind="attn",
        name=name,
        backend=backend,
        tp=tp,
        s=seq,
        hq=hq,
        hk=hk,
        d=dim,
        s_f=s_f,
        s_fb=s_fb,
        tflops_f=flops_f / s_f / 1e12,
        tflops_fb_3x=3 * flops_f / s_fb / 1e12,
    )


def main() -> None:
    for name, heads, groups, dim in SHAPES:
        for tp in (1, 8):
            for seq in (2048, 4096, 8192):
                for backend in BACKENDS:
                    try:
                        row = measure(name, heads, groups, dim, tp, seq, backend)
                    except Exception as ex:  # a backend that refuses a shape: recorded, not fatal
                        row = dict(kind="attn", name=name, backend=backend, tp=tp, s=seq, error=repr(ex)[:300])
                    print(json.dumps(row), flush=True)
    print(
        json.dumps(
            {
                "kind": "done",
                "gpu": torch.cuda.get_device_name(),
                "torch": torch.__version__,
                "cudnn": torch.backends.cudnn.version(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
