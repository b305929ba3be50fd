"""Which transformer layers each pipeline stage holds, by Megatron-LM's rules, and what that costs.

Megatron decides a stage's layers in one of four ways (megatron/core/transformer/transformer_block.py,
get_num_layers_to_build, core_v0.13 to core_v0.19):
  - evenly: num_layers / pp per rank, then / vpp per virtual stage;
  - --decoder-first/last-pipeline-num-layers: the first (last) rank holds the given count, the rest split
    evenly over the other ranks; each count is divided by vpp on its rank;
  - --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split: the embedding (the
    loss) counts as one layer, (num_layers + 1 or 2) / pp per rank and / vpp per virtual stage, and the
    first virtual stage of rank 0 (the last of rank pp-1) builds one transformer layer fewer;
  - --pipeline-model-parallel-layout: a string of stages separated by '|', 'E' the embedding, 't' a
    transformer layer, 'm' an MTP layer, 'L' the loss; stage k is virtual stage k // pp of rank k % pp
    (megatron/core/transformer/pipeline_parallel_layer_layout.py, PipelineParallelLayerLayout.__init__ and
    parse_str_to_list).
The checks the trainer makes at start-up (megatron/core/transformer/transformer_config.py,
TransformerConfig.__post_init__, 'Uneven PP' and 'PP layout'; megatron/training/arguments.py, validate_args)
are made here too: a split Megatron rejects is no partition.

The cost: the step waits for the slowest rank (its layers, plus the output layer and loss on the last), and
the most loaded rank decides memory. The cost model (estimate.py, memory.py) reads the per-rank counts from
ModelInput.pipeline_stage_layers.
"""

from __future__ import annotations

from plint.record import record

LAYOUT_CHARS = {"E": "embedding", "L": "loss", "t": "decoder", "m": "mtp"}  # parse_str_to_list's char2layer_type


@record(frozen=True)
class Partition:
    """Transformer layers per virtual stage of each pipeline rank: layers[rank][virtual stage]."""

    layers: tuple[tuple[int, ...], ...]
    how: str  # the flags that make it, for notes ("even", "--account-for-...", "layout Et|...")
    mtp: tuple[int, ...] = ()  # MTP layers per rank (a layout's 'm'); () when none

    @property
    def pp(self) -> int:
        return len(self.layers)

    @property
    def vpp(self) -> int:
        return len(self.layers[0]) if self.layers else 1

    def per_rank(self) -> tuple[int, ...]:
        return tuple(sum(stages) for stages in self.layers)

    def is_even(self) -> bool:
        return len(set(self.per_rank())) == 1 and len({n for row in self.layers for n in row}) == 1


def even(num_layers: int, pp: int, vpp: int | None = None) -> Partition | str:
    """num_layers split evenly (transformer_block.py get_num_layers_to_build's last branch)."""
    return account_for(num_layers, pp, vpp, embedding=False, loss=False)


def account_for(num_layers: int, pp: int, vpp: int | None, embedding: bool, loss: bool) -> Partition | str:
    """--account-for-embedding/loss-in-pipeline-split: the embedding and the loss count as a layer each.
    TransformerConfig.__post_init__ asks (num_layers + extras) % pp == 0 and, with vpp, the per-rank count
    divisible by vpp; get_num_layers_to_build takes one layer from rank 0's first virtual stage (embedding)
    and from rank pp-1's last (loss), asserting none goes below 0."""
    v = vpp or 1
    slots = num_layers + int(embedding) + int(loss)
    if pp < 1 or slots % pp:
        return f"{slots} layers (counting the embedding and loss as asked) do not divide over pp {pp}"
    per_rank = slots // pp
    if per_rank % v:
        return f"{per_rank} layers per pipeline rank do not divide over vpp {v}"
    rows = [[per_rank // v] * v for _ in range(pp)]
    if embedding:
        rows[0][0] -= 1
    if loss:
        rows[-1][-1] -= 1
    if any(n < 0 for row in rows for n in row):
        return "not enough layers in the first or last virtual stage for the embedding and loss"
    how = (
        " ".join(
            f
            for f, on in (
                ("--account-for-embedding-in-pipeline-split", embedding),
                ("--account-for-loss-in-pipeline-split", loss),
            )
            if on
        )
        or "even"
    )
    return Partition(tuple(tuple(r) for r in rows), how)


def first_last(num_layers: int, pp: int, vpp: int | None, first: int | None, last: int | None) -> Partition | str:
    """--decoder-first/last-pipeline-num-layers (TransformerConfig.__post_init__ 'Uneven PP': each > 0 and
    divisible by vpp, the middle layers divisible by the middle ranks and then by vpp; middle layers exist
    exactly when middle ranks do)."""
    v = vpp or 1
    if pp < 2:
        return "uneven first/last stages need pp >= 2"
    for name, n in (("first", first), ("last", last)):
        if n is not None and (n <= 0 or n % v):
            return f"the {name} stage's {n} layers must be > 0 and divisible by vpp {v}"
    middle_layers = num_layers - (first or 0) - (last or 0)
    middle_ranks = pp - (first is not None) - (last is not None)
    if bool(middle_layers) != bool(middle_ranks) or middle_layers < 0:
        return f"{middle_layers} middle layers for {middle_ranks} middle pipeline ranks"
    per_middle = middle_layers // middle_ranks if middle_ranks else 0
    if middle_ranks and (middle_layers % middle_ranks or per_middle % v):
        return f"{middle_layers} middle layers do not divide over {middle_ranks} ranks x vpp {v}"
    counts = [per_middle] * pp
    if first is not None:
        counts[0] = first
    if last is not None:
        counts[-1] = last
    how = " ".join(
        f"--decoder-{end}-pipeline-num-layers {n}" for end, n in (("first", first), ("last", last)) if n is not None
    )
    return Partition(tuple(tuple([c // v] * v) for c in counts), how)


def from_layout(stages: list[str], pp: int, num_layers: int | None = None, text: str = "") -> Partition | str:
    """--pipeline-model-parallel-layout, unrolled into its stages (plint.reading.sources.megatron.layout_stages
    reads the string as parse_str_to_list does): stage k is virtual stage k // pp of rank k % pp
    (PipelineParallelLayerLayout.__init__: the count of stages divisible by pp); validate_layer_layout asks
    for the embedding first, the loss last, each once, and num_layers 't's."""
    if pp < 1 or not stages or len(stages) % pp:
        return f"{len(stages)} stages do not divide over pp {pp}"
    bad = sorted(set("".join(stages)) - set(LAYOUT_CHARS))
    if bad:
        return f"unknown layer characters {''.join(bad)!r} (known: {', '.join(LAYOUT_CHARS)})"
    flat = "".join(stages)
    if not flat.startswith("E") or not flat.endswith("L") or flat.count("E") != 1 or flat.count("L") != 1:
        return "the layout must start with the embedding E and end with the loss L, each once"
    if num_layers is not None and flat.count("t") != num_layers:
        return f"the layout holds {flat.count('t')} transformer layers, the model {num_layers}"
    v = len(stages) // pp
    rows = tuple(tuple(stages[k * pp + rank].count("t") for k in range(v)) for rank in range(pp))
    mtp = tuple(sum(stages[k * pp + rank].count("m") for k in range(v)) for rank in range(pp))
    return Partition(rows, f"--pipeline-model-parallel-layout {text or '|'.join(stages)}", mtp if any(mtp) else ())


def balanced_layout(num_layers: int, pp: int, vpp: int | None) -> str | None:
    """A --pipeline-model-parallel-layout that spreads num_layers + the embedding + the loss as evenly as the
    pp*vpp virtual stages allow (what experts write when the layers do not divide, e.g. a 61-layer model on
    32 virtual stages), the stages with one slot fewer at the end of the model, where the last rank also runs
    the output layer and loss (a stage may hold the loss alone); None when the split is even anyway or there
    are more virtual stages than slots."""
    stages = pp * (vpp or 1)
    slots = num_layers + 2
    per, extra = divmod(slots, stages)
    if per < 1 or num_layers % stages == 0:
        return None
    sizes = [per + 1] * extra + [per] * (stages - extra)
    parts = ["t" * n for n in sizes]
    parts[0] = "E" + parts[0][1:]
    parts[-1] = parts[-1][1:] + "L"
    return "|".join(parts)


def compact(layout: str) -> str:
    """A layout written as Megatron's users write it: a run of n > 2 equal stages as '(stage|)*n'."""
    names: list[str] = []
    counts: list[int] = []
    for stage in layout.split("|"):
        if names and names[-1] == stage:
            counts[-1] += 1
        else:
            names.append(stage)
            counts.append(1)
    out = []
    for k, (stage, count) in enumerate(zip(names, counts)):
        final = k == len(names) - 1  # no separator after the last stage
        repeated = count - 1 if final else count
        if repeated > 2:
            out.append(f"({stage}|)*{repeated}" + (stage if final else ""))
        else:
            out.append("|".join([stage] * count) + ("" if final else "|"))
    return "".join(out)


def slowest_rank(
    stage_layers: tuple[int, ...] | None, even_layers: float, layers_time: float, head_time: float
) -> tuple[float, bool]:
    """The pipeline rank one micro-batch waits for, as (its transformer layers / the even share, whether it
    runs the output layer and loss): the time of its layers at the even stage's per-layer time
    (layers_time / even_layers), plus the head on the last rank. Without a partition: the even last rank."""
    if not stage_layers or even_layers <= 0:
        return 1.0, True
    per_layer = layers_time / even_layers
    last = len(stage_layers) - 1
    rank = max(
        range(len(stage_layers)), key=lambda r: (stage_layers[r] * per_layer + (head_time if r == last else 0.0), r)
    )
    return stage_layers[rank] / even_layers, rank == last
