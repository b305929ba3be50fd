"""The device grid: which GPU holds which rank and coordinates, and which groups leave NVLink.

Everything is arithmetic on plint.dryrun.ranks.Grid's strides (Megatron's rank order), so a cell costs O(1)
and a 16,384-GPU cluster allocates only the cells it draws: nodes beyond FULL_NODES fold into a count.
A group's ranks all lie between its lowest and highest rank, both members, so it crosses an NVLink
domain of D consecutive ranks exactly when those two fall in different domains (plint.dryrun.ranks.crosses
says the same of the listed group; tests compare the two).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

from plint.dryrun.ranks import DEFAULT_ORDER, Grid

FULL_NODES = 16  # clusters up to this many nodes are drawn whole
FOLD_HEAD = 4  # a folded cluster shows its first nodes, "...", and its last node

# The groups whose traffic belongs inside one NVLink domain (rules PL201-PL203): kind -> (grid, axes).
NVLINK_GROUPS = {
    "tp": ("dense", ("tp",)),
    "cp": ("dense", ("cp",)),
    "tp-cp": ("dense", ("tp", "cp")),
    "ep": ("expert", ("ep",)),
    "etp": ("expert", ("tp",)),
    "etp-ep": ("expert", ("tp", "ep")),
}


@dataclass(frozen=True)
class Cell:
    rank: int
    node: int
    local: int  # GPU index inside its node
    coords: dict  # tp, cp, ep, dp, pp
    crossing: tuple  # NVLINK_GROUPS kinds whose group of this rank leaves the NVLink domain
    tp_group_start: bool  # first GPU of its TP group inside this node (where an outline begins)


@dataclass(frozen=True)
class Crossing:
    kind: str
    size: int  # ranks per group
    crossing: int  # groups that leave the domain
    of: int  # groups of this kind


@dataclass
class DeviceGrid:
    nodes: int
    gpus_per_node: int
    domain: int  # GPUs sharing NVLink (consecutive ranks)
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int | None = None
    order: str = DEFAULT_ORDER
    dense: Grid = field(init=False)
    expert: Grid = field(init=False)

    def __post_init__(self) -> None:
        world = self.world
        etp = self.etp or self.tp
        self.dense = Grid(
            {"tp": self.tp, "cp": self.cp, "ep": 1, "dp": world // (self.tp * self.cp * self.pp), "pp": self.pp},
            self.order,
        )
        self.expert = Grid(
            {"tp": etp, "cp": 1, "ep": self.ep, "dp": world // (etp * self.ep * self.pp), "pp": self.pp}, self.order
        )

    @property
    def world(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def dp(self) -> int:
        return self.dense.sizes["dp"]

    @property
    def folded(self) -> bool:
        return self.nodes > FULL_NODES

    def shown_nodes(self) -> list[int | None]:
        """Node indices to draw in order; None marks the fold ("...")."""
        if not self.folded:
            return list(range(self.nodes))
        return [*range(FOLD_HEAD), None, self.nodes - 1]

    def folded_nodes(self) -> int:
        return self.nodes - FOLD_HEAD - 1 if self.folded else 0

    def coords(self, rank: int) -> dict:
        d, e = self.dense, self.expert
        c = {a: (rank // d.strides[a]) % d.sizes[a] for a in ("tp", "cp", "dp", "pp")}
        c["ep"] = (rank // e.strides["ep"]) % e.sizes["ep"]
        return {a: c[a] for a in ("tp", "cp", "ep", "dp", "pp")}

    def stage(self, rank: int) -> int:
        return (rank // self.dense.strides["pp"]) % self.pp

    def _bounds(self, kind: str, rank: int) -> tuple[int, int]:
        grid_name, axes = NVLINK_GROUPS[kind]
        g = self.dense if grid_name == "dense" else self.expert
        low = rank - sum(((rank // g.strides[a]) % g.sizes[a]) * g.strides[a] for a in axes)
        return low, low + sum((g.sizes[a] - 1) * g.strides[a] for a in axes)

    def tp_bounds(self, rank: int) -> tuple[int, int]:
        """The lowest and highest rank of the TP group holding `rank`."""
        return self._bounds("tp", rank)

    def group_size(self, kind: str) -> int:
        grid_name, axes = NVLINK_GROUPS[kind]
        g = self.dense if grid_name == "dense" else self.expert
        n = 1
        for a in axes:
            n *= g.sizes[a]
        return n

    def crosses(self, kind: str, rank: int) -> bool:
        low, high = self._bounds(kind, rank)
        return low // self.domain != high // self.domain

    def kinds(self) -> list[str]:
        """The NVLink-bound kinds with groups of more than one rank in this layout."""
        # the expert kinds repeat tp without experts, and tp-cp repeats one of its axes when the other is 1
        return [
            k
            for k in NVLINK_GROUPS
            if self.group_size(k) > 1
            and (self.ep > 1 or NVLINK_GROUPS[k][0] == "dense")
            and (k != "tp-cp" or min(self.tp, self.cp) > 1)
            and (k != "etp-ep" or min(self.etp or self.tp, self.ep) > 1)
        ]

    def cell(self, rank: int) -> Cell:
        low, _ = self._bounds("tp", rank)
        local = rank % self.gpus_per_node
        return Cell(
            rank,
            rank // self.gpus_per_node,
            local,
            self.coords(rank),
            tuple(k for k in self.kinds() if self.crosses(k, rank)),
            rank == low or local == 0,
        )

    def node_cells(self, node: int) -> list[Cell]:
        first = node * self.gpus_per_node
        return [self.cell(r) for r in range(first, first + self.gpus_per_node)]

    def crossings(self) -> list[Crossing]:
        """Per NVLink-bound kind, how many of its groups leave the domain (counted, never listed)."""
        out = []
        for kind in self.kinds():
            grid_name, axes = NVLINK_GROUPS[kind]
            g = self.dense if grid_name == "dense" else self.expert
            outside = [a for a in g.axes if a not in axes and g.sizes[a] > 1]
            span = sum((g.sizes[a] - 1) * g.strides[a] for a in axes)
            count = total = 0
            for idx in product(*(range(g.sizes[a]) for a in outside)):
                low = sum(i * g.strides[a] for i, a in zip(idx, outside))
                total += 1
                count += low // self.domain != (low + span) // self.domain
            if count:
                out.append(Crossing(kind, self.group_size(kind), count, total))
        return out

    def drawn_ranks(self) -> int:
        return sum(self.gpus_per_node for n in self.shown_nodes() if n is not None)
