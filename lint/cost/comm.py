"""Alpha-beta cost of the collectives each parallel axis issues, on the link the group lands on.

Placement follows Megatron's rank order tp-cp-ep-dp-pp (megatron.md sec. 3): the leftmost axis has
stride 1, so a group of `size` ranks spaced `stride` apart has min(size, domain // stride) members
inside one NVLink domain (the GPUs of a node, or 72 on GB200 NVL72) and spans the rest of them
across the network. Hierarchical collectives (planners.md sec. 9): the NVLink part moves the whole
buffer over NVLink, the network part moves 1/local of it over each GPU's own NIC.

Bandwidths are one direction per GPU in bytes/s: NVLink = vendor bidirectional figure / 2, NIC =
Gb/s / 8, each times its efficiency setting. Times are in seconds; sizes in bytes.
"""

from __future__ import annotations


class Links:
    __slots__ = ("alpha_net", "alpha_nv", "domain", "net_bw", "nvlink_bw", "nvlink_curve", "nvlink_spec", "world")

    def __init__(
        self,
        domain: int,
        nvlink_bw: float,
        net_bw: float,
        alpha_nv: float,
        alpha_net: float,
        world: int,
        measured: tuple | None = None,
    ):
        """`measured`: (NVLink one-way vendor rate in bytes/s, its plint.cost.collectives Curve) where the GPU
        has measured collectives: ring collectives and all-to-all inside an NVLink domain then take their
        efficiency and per-step latency from the curve instead of nvlink_bw's fixed efficiency and alpha_nv."""
        self.domain, self.nvlink_bw, self.net_bw = max(1, domain), nvlink_bw, net_bw
        self.alpha_nv, self.alpha_net, self.world = alpha_nv, alpha_net, world
        self.nvlink_spec, self.nvlink_curve = measured or (None, None)

    def span(self, size: int, stride: int) -> tuple[int, int]:
        """(members per NVLink domain, domains spanned) of a group; one domain when the job fits in one."""
        if size <= 1:
            return 1, 1
        if self.world <= self.domain:
            return size, 1
        local = 1 if stride >= self.domain else max(1, min(size, self.domain // stride))
        return local, -(-size // local)

    def on_nvlink(self, size: int, stride: int) -> bool:
        return self.span(size, stride)[1] == 1


def reduce_scatter(links: Links, full_bytes: float, size: int, stride: int) -> float:
    """Reduce-scatter (or all-gather) of a buffer of `full_bytes` over a group; ring within and across domains."""
    if size <= 1 or full_bytes <= 0:
        return 0.0
    local, domains = links.span(size, stride)
    if links.nvlink_curve is not None:
        return _measured_ring(links, full_bytes, local, domains)
    t = 0.0
    if local > 1:
        t += (local - 1) / local * full_bytes / links.nvlink_bw + (local - 1) * links.alpha_nv
    if domains > 1:
        # NCCL runs reduce-scatter and all-gather as rings only (no tree): one latency per ring step,
        # (n-1)*alpha (planners.md sec. 9; nccl-tests PERFORMANCE.md)
        t += (domains - 1) / domains * (full_bytes / local) / links.net_bw + (domains - 1) * links.alpha_net
    return t


def _measured_ring(links: Links, full_bytes: float, local: int, domains: int) -> float:
    """Ring reduce-scatter with its NVLink part from measured busbw (plint.cost.collectives): the efficiency
    a message of this size reaches and the curve's per-step latency; the network part as in reduce_scatter
    (no size-resolved InfiniBand sweep with a citable source: see plint.cost.collectives)."""
    curve = links.nvlink_curve
    t_nv = (
        (local - 1) / local * full_bytes / (links.nvlink_spec * curve(full_bytes)) + (local - 1) * curve.alpha
        if local > 1
        else 0.0
    )
    if domains == 1:
        return t_nv
    return t_nv + (domains - 1) / domains * (full_bytes / local) / links.net_bw + (domains - 1) * links.alpha_net


all_gather = reduce_scatter


def all_reduce(links: Links, full_bytes: float, size: int, stride: int) -> float:
    return 2 * reduce_scatter(links, full_bytes, size, stride)


def all_to_all(links: Links, send_bytes: float, size: int, stride: int, network_bytes: float | None = None) -> float:
    """Each rank sends `send_bytes` spread evenly over the group; NVLink and NIC shares run concurrently.
    `network_bytes`: what crosses the NIC when the dispatcher sends less than the even share over it
    (DeepEP/HybridEP send a token once per remote node and forward it over NVLink there)."""
    if size <= 1 or send_bytes <= 0:
        return 0.0
    local, _ = links.span(size, stride)
    across = send_bytes * (size - local) / size if network_bytes is None else network_bytes
    inter = across / links.net_bw if size > local else 0.0
    if links.nvlink_curve is not None:  # NCCL's all-to-all over NVSwitch: the measured efficiency at its size
        intra = send_bytes * (local - 1) / size / (links.nvlink_spec * links.nvlink_curve(send_bytes))
        return max(intra, inter) + (local - 1) * links.nvlink_curve.alpha + (links.alpha_net if size > local else 0.0)
    intra = send_bytes * (local - 1) / size / links.nvlink_bw
    return max(intra, inter) + (local - 1) * links.alpha_nv + (links.alpha_net if size > local else 0.0)


def point_to_point(links: Links, nbytes: float, across_network: bool) -> float:
    if nbytes <= 0:
        return 0.0
    if across_network:
        return nbytes / links.net_bw + links.alpha_net
    return nbytes / links.nvlink_bw + links.alpha_nv
