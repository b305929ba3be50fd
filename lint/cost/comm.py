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
    __slots__ = ("alpha_net", "alpha_nv", "domain", "net_bw", "nvlink_bw", "world")

    def __init__(self, domain: int, nvlink_bw: float, net_bw: float, alpha_nv: float, alpha_net: float, world: int):
        self.domain, self.nvlink_bw, self.net_bw = max(1, domain), nvlink_bw, net_bw
        self.alpha_nv, self.alpha_net, self.world = alpha_nv, alpha_net, world

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
    t = 0.0
    if local > 1:
        t += (local - 1) / local * full_bytes / links.nvlink_bw + (local - 1) * links.alpha_nv
    if domains > 1:
        # NCCL runs reduce-scatter and all-gather as rings only (no tree): one latency per ring step,
        # (n-1)*alpha (planners.md sec. 9; nccl-tests PERFORMANCE.md)
        t += (domains - 1) / domains * (full_bytes / local) / links.net_bw + (domains - 1) * links.alpha_net
    return t


all_gather = reduce_scatter


def all_reduce(links: Links, full_bytes: float, size: int, stride: int) -> float:
    return 2 * reduce_scatter(links, full_bytes, size, stride)


def all_to_all(links: Links, send_bytes: float, size: int, stride: int) -> float:
    """Each rank sends `send_bytes` spread evenly over the group; NVLink and NIC shares run concurrently."""
    if size <= 1 or send_bytes <= 0:
        return 0.0
    local, _ = links.span(size, stride)
    intra = send_bytes * (local - 1) / size / links.nvlink_bw
    inter = send_bytes * (size - local) / size / links.net_bw
    return max(intra, inter) + (local - 1) * links.alpha_nv + (links.alpha_net if size > local else 0.0)


def point_to_point(links: Links, nbytes: float, across_network: bool) -> float:
    if nbytes <= 0:
        return 0.0
    if across_network:
        return nbytes / links.net_bw + links.alpha_net
    return nbytes / links.nvlink_bw + links.alpha_nv
