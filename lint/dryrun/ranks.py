"""plint's own rank layout: which global ranks form each of Megatron's process groups.

Pure Python and standard library only, so rules, pictures and the dry run can use it without torch.

How Megatron numbers ranks (megatron/core/parallel_state.py, `RankGenerator` and
`generate_masked_orthogonal_rank_groups`, checked against megatron-core 0.7 to main):

* The order string ("tp-cp-ep-dp-pp" by default, "tp-cp-ep-pp-dp" with --use-tp-pp-dp-mapping)
  lists the axes from fastest to slowest: a rank is sum(coordinate[i] * stride[i]), with the first
  axis having stride 1 and each next stride the product of the sizes before it. Axes of size 1 that
  the order leaves out are appended; a left-out axis of size > 1 is an error.
* A group of kind "a-b" fixes every other coordinate and runs over a and b; inside a group the
  first named axis varies fastest, and groups are listed with the first unnamed axis varying fastest.
* Two grids share the order string: the dense one (tp, cp, dp, pp; ep = 1) and the expert one
  (tp = etp, ep, dp = world / (etp * ep * pp), pp; cp = 1). etp defaults to tp.
* The embedding group of a pipeline is its first and last stage (one rank when pp == 1); the
  position-embedding group is its first stage.

GPUs of one node are consecutive ranks under torchrun, srun and the deepspeed launcher, so an NVLink
domain of D GPUs holds ranks [k*D, (k+1)*D).
"""

from __future__ import annotations

DEFAULT_ORDER = "tp-cp-ep-dp-pp"
TP_PP_DP_ORDER = "tp-cp-ep-pp-dp"  # Megatron-LM's --use-tp-pp-dp-mapping
AXES = ("tp", "cp", "ep", "dp", "pp")

# Dense grid kinds: plint's name -> Megatron's token on the dense generator.
DENSE_KINDS = {
    "tp": "tp",
    "pp": "pp",
    "dp": "dp",
    "cp": "cp",
    "dp-cp": "dp-cp",  # data parallel with context parallel (gradients are reduced over it)
    "tp-pp": "tp-pp",  # the model-parallel group
    "tp-cp": "tp-cp",
    "tp-dp": "tp-dp",
    "tp-dp-cp": "tp-dp-cp",
}
# Expert grid kinds: plint's name -> token on the expert generator (whose "tp" is etp, "dp" is edp).
EXPERT_KINDS = {
    "ep": "ep",
    "etp": "tp",
    "etp-ep": "tp-ep",
    "etp-ep-pp": "tp-ep-pp",
    "edp": "dp",
}
KINDS = (*DENSE_KINDS, "embedding", "position-embedding", *EXPERT_KINDS)
# The groups whose traffic belongs inside one NVLink domain (PL201, PL202, PL203).
NVLINK_KINDS = ("tp", "cp", "tp-cp", "etp", "ep", "etp-ep")


class LayoutError(ValueError):
    """The sizes cannot form Megatron's grids (Megatron raises at start-up for the same reason)."""


def _order_axes(order: str, sizes: dict[str, int]) -> list[str]:
    axes = [a for a in order.lower().split("-") if a]
    unknown = [a for a in axes if a not in sizes]
    if unknown or len(set(axes)) != len(axes):
        raise LayoutError(f"order {order!r} must name each of {', '.join(AXES)} at most once")
    for name in AXES:
        if name not in axes:
            if sizes[name] != 1:
                raise LayoutError(f"order {order!r} leaves out {name}, whose size is {sizes[name]}")
            axes.append(name)
    return axes


def _span(axes: list[str], sizes: dict[str, int], strides: dict[str, int]) -> list[int]:
    """Offsets reached by running over `axes`, the first one fastest."""
    out = [0]
    for a in axes:
        step, n = strides[a], sizes[a]
        if n > 1:
            out = [o + i * step for i in range(n) for o in out]
    return out


class Grid:
    """One of Megatron's rank generators: axis sizes laid out in an order string."""

    __slots__ = ("axes", "sizes", "strides", "world_size")

    def __init__(self, sizes: dict[str, int], order: str = DEFAULT_ORDER):
        for name, n in sizes.items():
            if not isinstance(n, int) or n < 1:
                raise LayoutError(f"{name} must be a positive whole number, not {n!r}")
        self.sizes = {a: sizes.get(a, 1) for a in AXES}
        self.axes = _order_axes(order, self.sizes)
        self.strides: dict[str, int] = {}
        stride = 1
        for a in self.axes:
            self.strides[a] = stride
            stride *= self.sizes[a]
        self.world_size = stride

    def groups(self, token: str) -> list[list[int]]:
        """Every group of kind `token` ("tp", "dp-cp", ...), in Megatron's order."""
        named = [a for a in token.split("-") if a]
        for a in named:
            if a not in self.sizes:
                raise LayoutError(f"unknown axis {a!r} in {token!r}")
        inside = [a for a in self.axes if a in named]
        outside = [a for a in self.axes if a not in named]
        offsets = _span(inside, self.sizes, self.strides)
        return [[b + o for o in offsets] for b in _span(outside, self.sizes, self.strides)]


class RankLayout:
    """Megatron's process groups for one layout, computed without torch.

    `dp` is derived (world / (tp*pp*cp)), `edp` likewise (world / (etp*ep*pp)); etp defaults to tp.
    Raises LayoutError where megatron-core's initialize_model_parallel would refuse the sizes.
    """

    def __init__(
        self,
        world_size: int,
        tp: int = 1,
        pp: int = 1,
        cp: int = 1,
        ep: int = 1,
        etp: int | None = None,
        order: str = DEFAULT_ORDER,
    ):
        etp = tp if etp is None else etp
        for name, n in (("world_size", world_size), ("tp", tp), ("pp", pp), ("cp", cp), ("ep", ep), ("etp", etp)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise LayoutError(f"{name} must be a positive whole number, not {n!r}")
        model = tp * pp * cp
        if world_size % model:
            raise LayoutError(f"world size {world_size} is not divisible by tp*pp*cp = {tp}*{pp}*{cp} = {model}")
        expert = etp * ep * pp
        if world_size % expert:
            raise LayoutError(f"world size {world_size} is not divisible by etp*ep*pp = {etp}*{ep}*{pp} = {expert}")
        self.world_size, self.tp, self.pp, self.cp, self.ep, self.etp = world_size, tp, pp, cp, ep, etp
        self.dp = world_size // model
        self.edp = world_size // expert
        self.order = order
        self.dense = Grid({"tp": tp, "cp": cp, "ep": 1, "dp": self.dp, "pp": pp}, order)
        self.expert = Grid({"tp": etp, "cp": 1, "ep": ep, "dp": self.edp, "pp": pp}, order)
        if not (order.lower().endswith("pp") or pp == 1 or self.edp == self.dp):
            raise LayoutError(
                f"with order {order!r} (pp not last) the expert data-parallel size {self.edp} "
                f"must equal the data-parallel size {self.dp}"
            )
        if self.dense.groups("pp") != self.expert.groups("pp"):
            raise LayoutError(
                "the pipeline groups of the dense and the expert layers differ "
                f"(order {order!r}, tp*cp = {tp * cp}, etp*ep = {etp * ep})"
            )
        self._cache: dict[str, list[list[int]]] = {}

    def groups(self, kind: str) -> list[list[int]]:
        """The groups of one kind (see KINDS)."""
        found = self._cache.get(kind)
        if found is not None:
            return found
        if kind in DENSE_KINDS:
            found = self.dense.groups(DENSE_KINDS[kind])
        elif kind in EXPERT_KINDS:
            found = self.expert.groups(EXPERT_KINDS[kind])
        elif kind == "embedding":
            found = [[g[0], g[-1]] if len(g) > 1 else [g[0]] for g in self.groups("pp")]
        elif kind == "position-embedding":
            found = [[g[0]] for g in self.groups("pp")]
        else:
            raise KeyError(f"unknown group kind {kind!r}; known: {', '.join(KINDS)}")
        self._cache[kind] = found
        return found

    def all_groups(self, kinds=KINDS) -> dict[str, list[list[int]]]:
        return {k: self.groups(k) for k in kinds}

    def groups_of(self, rank: int, kinds=KINDS) -> dict[str, list[int] | None]:
        """The group of each kind that `rank` belongs to (None: in no group of that kind)."""
        if not 0 <= rank < self.world_size:
            raise ValueError(f"rank {rank} outside a world of {self.world_size}")
        out: dict[str, list[int] | None] = {}
        for k in kinds:
            out[k] = (
                next((g for g in self.groups(k) if rank in g), None)
                if k in ("embedding", "position-embedding")
                else self._member(k, rank)
            )
        return out

    def _member(self, kind: str, rank: int) -> list[int]:
        # Groups of one grid kind partition the world: index them once per kind.
        index = self._cache.get("#" + kind)
        if index is None:
            slots: list[list[int] | None] = [None] * self.world_size
            for g in self.groups(kind):
                for r in g:
                    slots[r] = g
            index = [g if g is not None else [] for g in slots]  # a grid kind's groups cover every rank
            self._cache["#" + kind] = index
        return index[rank]


def rank_groups(
    world_size: int,
    tp: int = 1,
    pp: int = 1,
    cp: int = 1,
    ep: int = 1,
    etp: int | None = None,
    order: str = DEFAULT_ORDER,
    kinds=KINDS,
) -> dict[str, list[list[int]]]:
    """Every group of each kind, as megatron-core's initialize_model_parallel builds them."""
    return RankLayout(world_size, tp, pp, cp, ep, etp, order).all_groups(kinds)


def crosses(group: list[int], domain: int) -> bool:
    """Does the group hold ranks of more than one NVLink domain of `domain` consecutive ranks?"""
    first = group[0] // domain
    return any(r // domain != first for r in group)


def crossing(groups: dict[str, list[list[int]]], domain: int, kinds=None) -> list[dict]:
    """Per kind, the groups that leave an NVLink domain of `domain` consecutive ranks.

    Returns one entry per kind with at least one crossing group:
    {"group": kind, "size": ranks per group, "crossing": how many groups cross, "of": how many
    groups, "domain": domain, "example": the first crossing group}.
    """
    if not isinstance(domain, int) or domain < 1:
        raise ValueError(f"NVLink domain must be a positive whole number, not {domain!r}")
    out = []
    for kind in kinds if kinds is not None else groups:
        gs = groups.get(kind)
        if not gs:
            continue
        bad = [g for g in gs if crosses(g, domain)]
        if bad:
            out.append(
                {
                    "group": kind,
                    "size": len(gs[0]),
                    "crossing": len(bad),
                    "of": len(gs),
                    "domain": domain,
                    "example": bad[0],
                }
            )
    return out
