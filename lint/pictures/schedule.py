"""The pipeline schedule as blocks: per stage, which micro-batch's forward (F), backward (B) and
weight-gradient (W) runs when, in the order the trainer issues them.

Orders (megatron/core/pipeline_parallel/schedules.py, megatron-core 0.7 to main):
  1F1B         stage s runs min(pp-s-1, m) warm-up forwards, then one forward per backward, then the
               remaining backwards (forward_backward_pipelining_without_interleaving).
  interleaved  v model chunks per stage; virtual micro-batch k runs chunk (k mod pp*v) // pp of
               micro-batch (k // (pp*v))*pp + k mod pp forward, chunk v-1 minus that backward; stage s
               warms up with (pp-s-1)*2 + (v-1)*pp chunk-forwards, all of them when m == pp
               (forward_backward_pipelining_with_interleaving, get_model_chunk_id).
  gpipe        every forward, then every backward (Huang et al. 2019).
  zb-h1        1F1B with B split into the input gradient (B) and the weight gradient (W); a stage runs
               a deferred W wherever it would otherwise wait, and the rest at the end (Qi et al. 2024, ZB-H1).
Blocks are placed by a dependency walk in unit times F = 1, B = 2 (ZB: B = W = 1): a block starts when
its stage is free and the block it waits for on the neighbouring stage has finished. DualPipe's
bidirectional schedule is not drawn as blocks (its bubble is printed from the cost model).

The step's bubble that plint prints is always the cost model's bubble_fraction for the whole step;
the drawing shows at most MAX_DRAWN micro-batches (interleaved: two groups of pp, the trainer's unit),
with the warm-up of the whole step.
"""

from __future__ import annotations

from dataclasses import dataclass

from plint.cost.schedule import bubble_fraction, schedule_name

MAX_DRAWN = 16
DRAWN = ("gpipe", "1f1b", "interleaved", "zb-h1")
WHAT_IF = ("zb-h1", "dualpipe", "gpipe")  # `plint show --schedule`


@dataclass(frozen=True)
class Block:
    stage: int
    kind: str  # "F", "B" or "W"
    microbatch: int
    chunk: int
    start: float
    end: float


@dataclass
class Schedule:
    name: str  # canonical schedule (plint.cost.schedule)
    pp: int
    vpp: int
    num_microbatches: int  # of the step
    drawn_microbatches: int
    bubble: float  # the cost model's bubble fraction (of the ideal step)
    blocks: list  # Block, empty when the schedule is not drawn
    what_if: bool = False  # another schedule than the launch's trainer runs
    not_drawn: str = ""  # why there are no blocks

    @property
    def span(self) -> float:
        return max((b.end for b in self.blocks), default=0.0)

    def rows(self) -> list[list[Block]]:
        out: list[list[Block]] = [[] for _ in range(self.pp)]
        for b in self.blocks:
            out[b.stage].append(b)
        return out

    def drawn_idle_share(self) -> float:
        """Idle share of the drawn rows (of the drawn span); for the drawing only."""
        span = self.span
        if not span:
            return 0.0
        busy = sum(b.end - b.start for b in self.blocks)
        return 1 - busy / (span * self.pp)


def build(
    pp: int, num_microbatches: int, vpp: int | None = None, schedule: str | None = None, what_if: bool = False
) -> Schedule:
    name = schedule_name(schedule, vpp)
    v = (vpp or 1) if name == "interleaved" else 1
    m = max(1, num_microbatches)
    bubble = bubble_fraction(pp, m, vpp, schedule)
    drawn = min(m, MAX_DRAWN)
    if name == "interleaved":  # Megatron runs micro-batches in groups of pp per chunk: draw two groups
        drawn = min(m, max(MAX_DRAWN, 2 * pp))
        drawn = max(pp, drawn - drawn % pp) if m >= pp else drawn
    blocks, why = [], ""
    if name not in DRAWN:
        why = f"{name} is priced, not drawn block by block (its schedule: deepseek-ai/DualPipe)"
    elif name == "interleaved" and m < pp:
        # Megatron's interleaved schedule runs micro-batches in groups of pp per chunk
        why = f"the interleaved schedule needs at least pp = {pp} micro-batches, the step has {m}"
    else:
        blocks = _place(pp, drawn, v, name, all_warmup=m == pp)
    return Schedule(name, pp, v, m, drawn, bubble, blocks, what_if, why)


def _orders(pp: int, m: int, v: int, name: str, all_warmup: bool) -> list[list[tuple[str, int, int]]]:
    """Per stage, the (kind, micro-batch, chunk) ops in issue order."""
    out = []
    for s in range(pp):
        if name == "gpipe":
            out.append([("F", i, 0) for i in range(m)] + [("B", i, 0) for i in range(m)])
        elif name == "interleaved":
            out.append(_interleaved_order(pp, m, v, s, all_warmup))
        else:
            warm = min(pp - s - 1, m)
            ops = [("F", i, 0) for i in range(warm)]
            for k in range(m - warm):
                ops += [("F", warm + k, 0), ("B", k, 0)]
            ops += [("B", i, 0) for i in range(m - warm, m)]
            out.append(ops)
    return out


def _interleaved_order(pp: int, m: int, v: int, s: int, all_warmup: bool) -> list[tuple[str, int, int]]:
    total = m * v

    def fwd(k: int) -> tuple[str, int, int]:
        return ("F", (k // (pp * v)) * pp + k % pp, (k % (pp * v)) // pp)

    def bwd(k: int) -> tuple[str, int, int]:
        return ("B", (k // (pp * v)) * pp + k % pp, v - 1 - (k % (pp * v)) // pp)

    warm = total if all_warmup else min((pp - s - 1) * 2 + (v - 1) * pp, total)
    ops = [fwd(k) for k in range(warm)]
    for k in range(total - warm):
        ops += [fwd(warm + k), bwd(k)]
    ops += [bwd(k) for k in range(total - warm, total)]
    return ops


def _place(pp: int, m: int, v: int, name: str, all_warmup: bool = False) -> list[Block]:
    zero_bubble = name == "zb-h1"
    cost = {"F": 1.0 / v, "B": (1.0 if zero_bubble else 2.0) / v, "W": 1.0 / v}
    orders = _orders(pp, m, v, name, all_warmup)
    done: dict[tuple, float] = {}  # (kind, stage, micro-batch, chunk) -> end time
    free = [0.0] * pp
    cursor = [0] * pp
    blocks: list[Block] = []
    pending: list[list[tuple[int, int]]] = [[] for _ in range(pp)]  # ZB: W's not yet run, per stage

    def put(s: int, kind: str, mb: int, chunk: int, ready: float) -> None:
        start = max(free[s], ready)
        done[(kind, s, mb, chunk)] = free[s] = start + cost[kind]
        blocks.append(Block(s, kind, mb, chunk, start, free[s]))
        if zero_bubble and kind == "B":
            pending[s].append((mb, chunk))

    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for s in range(pp):
            while cursor[s] < len(orders[s]):
                kind, mb, chunk = orders[s][cursor[s]]
                dep = _dependency(kind, s, mb, chunk, pp, v)
                waits = dep is not None and (dep not in done or done[dep] >= free[s] + cost["W"])
                if waits and pending[s]:  # ZB-H1 runs a deferred weight gradient in the gap
                    put(s, "W", *pending[s].pop(0), 0.0)
                    progressed = True
                    continue
                if dep is not None and dep not in done:
                    break
                put(s, kind, mb, chunk, done[dep] if dep is not None else 0.0)
                cursor[s] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # an order that waits on itself: a bug here, never a hang
            raise RuntimeError(f"{name} schedule of pp={pp}, m={m}, v={v} deadlocks")
    for s in range(pp):  # the cool-down: the weight gradients still owed
        for mb, chunk in pending[s]:
            put(s, "W", mb, chunk, 0.0)
    return blocks


def _dependency(kind: str, s: int, mb: int, chunk: int, pp: int, v: int) -> tuple | None:
    """The block that must finish before this one may start (the stage's own order aside)."""
    if kind == "F":
        if s > 0:
            return ("F", s - 1, mb, chunk)
        return ("F", pp - 1, mb, chunk - 1) if chunk > 0 else None
    if kind == "B":
        if s < pp - 1:
            return ("B", s + 1, mb, chunk)
        return ("B", 0, mb, chunk + 1) if chunk < v - 1 else ("F", s, mb, chunk)
    return ("B", s, mb, chunk)  # W after its own stage's input gradient
