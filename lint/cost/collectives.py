"""Measured collective efficiency by message size (schemas/collectives.json), for cost.comm.

A curve is a published busbw sweep (nccl-tests' bus bandwidth, or a benchmark that reports it the same way)
over a message-size range. The cost model reads busbw / (the link's one-way vendor rate) as the efficiency
a collective of that size reaches, interpolated linearly in log(size) and held flat past either end: the
small-message end carries the collective's latency, the large end its sustained bandwidth.

  NVLink (ring reduce-scatter / all-gather, all-to-all): the GPU's all-reduce curve, capped at the ring
      plateau measured for reduce-scatter on NVSwitch (NVLS, the in-switch reduction that lifts all-reduce
      above it, runs all-reduce only; Megatron's TP with SP and the distributed optimizer reduce-scatter
      and all-gather). An all-reduce of S is a reduce-scatter and an all-gather of S, each half its time,
      so their busbw is the all-reduce's.
  Network: not read. The one size-resolved multi-node sweep with a citable source found is AWS EFA v4
      (4 x 8 B200, in the file): converted to what each GPU's NIC moves (busbw x (k-1)/(n-1) over the
      NIC's rate) it plateaus at 0.74 of 400 Gb/s and falls to a few percent below 1 MiB. Applied to the
      InfiniBand NDR runs of the calibration set it slows their data-parallel traffic by 15% and more,
      against runs plint already predicts too slow (Megatron-Core's 32B weak-scaling point, Nemotron-4
      15B), so EFA's curve does not stand for InfiniBand; across nodes plint keeps Options.network_efficiency
      (0.85 of line rate) and the per-step latency of schemas/hardware.json until an InfiniBand sweep is in
      (the sweeps posted in nccl-tests / NCCL issues come from clusters reported as faulty; the maintainers'
      figure, nccl-tests #267: ConnectX-7 at NDR reaches 48-49 GB/s per NIC, 0.96-0.98 of line rate, and an
      all-to-all gets one NIC's bandwidth; docs/cost-model.md lists what was searched).
  Send/receive: not read either (no sweep); the alpha-beta cost of comm.point_to_point.
"""

from __future__ import annotations

import math
from functools import lru_cache


class Curve:
    """Efficiency (a share of the one-way vendor rate) by message size in bytes."""

    __slots__ = ("alpha", "points", "source")

    def __init__(self, points: list[tuple[float, float]], source: str, alpha: float = 0.0):
        self.points = sorted(points)
        self.source = source
        self.alpha = alpha  # seconds per ring step, outside the efficiency

    def __call__(self, nbytes: float) -> float:
        pts = self.points
        if nbytes <= pts[0][0]:
            return pts[0][1]
        if nbytes >= pts[-1][0]:
            return pts[-1][1]
        for (s0, e0), (s1, e1) in zip(pts, pts[1:]):
            if s0 <= nbytes <= s1:
                w = (math.log(nbytes) - math.log(s0)) / (math.log(s1) - math.log(s0))
                return e0 + w * (e1 - e0)
        return pts[-1][1]  # not reached: the points cover the range


@lru_cache(maxsize=1)
def _curves() -> list[dict]:
    from plint.schemas import read_json

    return read_json("collectives.json")["curves"]


@lru_cache(maxsize=16)
def nvlink_curve(gpu: str) -> Curve | None:
    """The NVLink efficiency curve of a catalog GPU, or None (V100, H100 PCIe, MI300X: none measured).
    Its `alpha` is the per-step latency the sweep's smallest message shows (the time of an all-reduce of
    32 KiB over 2(n-1) ring steps); the efficiency at each size is then that of the bandwidth term alone
    (what is left of the measured time after n's steps of latency), so a smaller group, with fewer steps,
    is not charged an 8-GPU ring's latency."""
    curves = [c for c in _curves() if c["link"] == "nvlink" and gpu in c["gpus"]]
    sweep = next((c for c in curves if c["collective"] == "all_reduce" and len(c["points"]) > 2), None)
    if sweep is None:
        return None
    spec, n = sweep["one_way_spec_gbps"] * 1e9, sweep["ranks"]
    # the ring plateau: the GPU's own reduce-scatter measurement, else Hopper's share of its spec
    plateau = next((c for c in curves if c["collective"] == "reduce_scatter"), None) or next(
        c for c in _curves() if c["id"] == "h200-nvlink4-ring-plateau-8"
    )
    cap = plateau["points"][-1][1] / plateau["one_way_spec_gbps"]
    factor = 2 * (n - 1) / n  # busbw = factor x size / time for an all-reduce
    smallest, busbw = min(sweep["points"])
    alpha = factor * smallest / (busbw * 1e9) / (2 * (n - 1)) * LATENCY_SHARE
    points = []
    for size, busbw in sweep["points"]:
        bandwidth_time = factor * size / (busbw * 1e9) - 2 * (n - 1) * alpha
        points.append((size, min(cap, factor * size / spec / bandwidth_time)))
    return Curve(points, f"{sweep['source']}; ring plateau: {plateau['source']}", alpha)


# the share of the smallest message's time that is latency (the rest moves its 32 KiB): nearly all of it
LATENCY_SHARE = 0.9
