"""plint's compute model against kernel timings measured on one GPU, by shape.

Reads a kernel table (one JSON object a line, as ``tools/gpu_probe.py`` of the shared data writes it: GEMMs
``a @ b`` of transformer shapes, MoE expert GEMMs run one per expert and grouped, causal flash attention
forward and forward+backward) and prints, per kind, the median and 90th percentile of plint's predicted
time over the measured one, and its median signed error. The predictions are plint's own kernels
(``plint.cost.estimate._Kernels``: the GEMM-shape efficiency cap / (1 + R/M + R/N + R/K) at the GPU's
catalog cap, attention at its catalog efficiency), nothing fitted here: the table checks the model.

    python benchmarks/kernels_vs_model.py [KERNELS.jsonl] [--gpu h100-sxm] [--backend cudnn]

The default table is the shared H100 SXM measurement (../shared/data/gpu/h100_sxm_kernels.jsonl from the
repository root). benchmarks/data/gpu/ holds the same probe's table on an H200 (h200_kernels.jsonl) and
attention_probe.py's cuDNN and flash attention there (h200_attention.jsonl; benchmarks/gpu/README.md).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = HERE.parent.parent / "shared" / "data" / "gpu" / "h100_sxm_kernels.jsonl"


def _model(gpu_name: str, **shape):
    """plint's per-GPU kernels and one dense layer's times for a shape (bf16, flash attention, one GPU)."""
    from plint.catalog.hardware import lookup_gpu
    from plint.cost import ModelInput
    from plint.cost.estimate import _dense_layer, _kernels

    gpu = lookup_gpu(gpu_name)
    inp = ModelInput(
        num_layers=1,
        vocab_size=32000,
        gpu=gpu.name,
        precision="bf16",
        micro_batch=1,
        **{"hidden_size": 4096, "num_attention_heads": 32, "seq_length": 4096, **shape},
    )
    k = _kernels(inp, gpu)
    return k, _dense_layer(k)


def predictions(rows: list[dict], gpu: str) -> dict[str, list[tuple[float, float]]]:
    """(predicted, measured) seconds per kind of kernel."""
    k, _ = _model(gpu)
    out: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        kind = r.get("kind")
        if kind in ("gemm", "gemm-sustained"):
            out.setdefault(kind, []).append((k.gemm(r["m"], r["n"], r["k"]), r["s"]))
        elif kind == "moe-gemm":
            predicted = k.gemm(r["per_expert"], r["n"], r["k"], r["local"])
            out.setdefault("moe-gemm, grouped", []).append((predicted, r["s_grouped"]))
        elif kind == "attn":
            hq, hk, d = r["hq"], r["hk"], r["d"]
            _, layer = _model(
                gpu, hidden_size=hq * d, num_attention_heads=hq, num_query_groups=hk, kv_channels=d, seq_length=r["s"]
            )
            out.setdefault("attention, forward", []).append((layer.core, r["s_f"]))
            out.setdefault("attention, forward+backward", []).append((3 * layer.core, r["s_fb"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--gpu", default="h100-sxm", help="the catalog GPU the table was measured on")
    parser.add_argument(
        "--backend",
        default="cudnn",
        help="attention rows of this backend where the table has several (cudnn: Transformer Engine's fused "
        "attention on Hopper; flash)",
    )
    ns = parser.parse_args(argv)
    if not ns.table.is_file():
        print(f"{ns.table}: no such kernel table", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in ns.table.read_text().splitlines() if line.strip()]
    # an attention table of several backends (attention_probe.py): the one asked for
    rows = [r for r in rows if r.get("backend", ns.backend) == ns.backend and "error" not in r]
    print(f"{'kernels':30} {'rows':>5} {'|error| median':>15} {'p90':>7} {'signed median':>14}")
    for kind, pairs in predictions(rows, ns.gpu).items():
        errors = sorted(p / m - 1 for p, m in pairs)
        absolute = sorted(abs(e) for e in errors)
        p90 = absolute[min(len(absolute) - 1, int(0.9 * len(absolute)))]
        print(
            f"{kind:30} {len(pairs):5} {100 * statistics.median(absolute):14.1f}% {100 * p90:6.1f}% "
            f"{100 * statistics.median(errors):+13.1f}%"
        )
    return 0


if __name__ == "__main__":
    # a table piped into `head` ends quietly, as a Unix tool does, not with a BrokenPipeError
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
