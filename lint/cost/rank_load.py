"""What each pipeline rank holds, by Megatron-LM's rules: its transformer layers (the partition of
plint.cost.pipeline_stages, or --decoder-first/last-pipeline-num-layers, or an even share) and its forwards in
flight (plint.cost.schedule.forwards_in_flight: each rank's own warm-up), and which ranks can hold the memory
peak (candidate_ranks) and how the estimate names and tabulates them (stage_name, stage_table). plint.cost.memory
turns these into bytes per rank."""

from __future__ import annotations

from plint.cost.model_input import ModelInput
from plint.cost.schedule import forwards_in_flight, schedule_name


def end_rank(inp: ModelInput, last: bool) -> int:
    """The pipeline rank of the first (last=False) or the last stage."""
    return max(1, inp.pp) - 1 if last else 0


def rank_layers(inp: ModelInput, rank: int) -> float:
    """Transformer layers of pipeline rank `rank`: the partition's (ModelInput.pipeline_stage_layers), else
    --decoder-first/last-pipeline-num-layers on the end ranks where the launch sets them (ModelInput.
    first_stage_layers / last_stage_layers) and the rest split evenly over the other ranks, as Megatron's
    get_num_layers_to_build (megatron/core/transformer/transformer_block.py) splits them; else an even share."""
    pp = max(1, inp.pp)
    ranks = inp.pipeline_stage_layers
    if pp > 1 and ranks and len(ranks) == pp:  # plint.cost.pipeline_stages: Megatron's own split
        return float(ranks[rank])
    first, last = (inp.first_stage_layers, inp.last_stage_layers) if pp > 1 else (None, None)
    if rank == 0 and first is not None:
        return float(first)
    if rank == pp - 1 and last is not None:
        return float(last)
    given = [n for n in (first, last) if n is not None]
    return (inp.num_layers - sum(given)) / max(1, pp - len(given))


def stage_layers(inp: ModelInput, last: bool) -> float:
    """Layers of the first or last pipeline stage (rank_layers)."""
    return rank_layers(inp, end_rank(inp, last))


def embedding_microbatches(inp: ModelInput, num_microbatches: int) -> int:
    """Micro-batches whose embedding output the first stage keeps at its peak.

    1F1B: the pp forwards of the warm-up. Interleaved (v > 1): the embedding runs in chunk 0 only;
    rank 0's warm-up is (pp-1)*2 + (v-1)*pp chunk-forwards, then one forward per backward, and the
    first chunk-0 backward is the ((v-1)*pp + 1)-th backward, so 2*pp*v - 1 forwards have run by then:
    all pp of the first group's chunk 0 and pp of the second group's (micro-batches go in groups of pp
    per chunk). Hence 2*pp, capped by m. Other schedules as in `_layers_in_flight`.
    """
    m = max(1, num_microbatches)
    pp = max(1, inp.pp)
    if pp == 1:
        return 1
    name = schedule_name(inp.options.pipeline_schedule, inp.vpp)
    peak = {"gpipe": m, "interleaved": 2 * pp, "zb-h2": 2 * pp - 1, "dualpipe": pp + 1, "dualpipev": pp + 1}
    return min(m, peak.get(name, pp))


def _layers_in_flight(inp: ModelInput, num_microbatches: int, last: bool) -> float:
    """Layer-activation sets the first or last stage keeps at its peak (rank_layers_in_flight)."""
    return rank_layers_in_flight(inp, num_microbatches, end_rank(inp, last))


def rank_layers_in_flight(inp: ModelInput, num_microbatches: int, rank: int) -> float:
    """Layer-activation sets (one layer, one micro-batch) pipeline rank `rank` keeps at its peak: the
    (chunk-)forwards it holds (schedule.forwards_in_flight: Megatron's warm-up of that rank, pp - rank - 1 for
    1F1B and (pp - rank - 1)*2 + (v-1)*g interleaved, g: --microbatch-group-size-per-virtual-pipeline-stage,
    default pp, and the one whose backward comes next; other schedules per Options.pipeline_schedule) times the
    layers of each."""
    pp = max(1, inp.pp)
    if pp == 1:
        return float(inp.num_layers)
    chunks = inp.pipeline_chunk_layers
    name = schedule_name(inp.options.pipeline_schedule, inp.vpp)
    if name == "interleaved" and chunks and len(chunks) == pp and len(chunks[0]) == (inp.vpp or 1):
        return _interleaved_chunk_layers_in_flight(inp, num_microbatches, chunks[rank], rank)
    # the schedule's micro-batches in flight times this rank's layers
    v = (inp.vpp or 1) if name == "interleaved" else 1
    group = inp.options.microbatch_group or pp
    forwards = forwards_in_flight(name, pp, rank, num_microbatches, v, group)
    return forwards * rank_layers(inp, rank) / v


def _interleaved_chunk_layers_in_flight(
    inp: ModelInput, num_microbatches: int, chunks: tuple[int, ...], rank: int
) -> float:
    """An uneven interleaved rank's layer-activation sets at its peak, chunk by chunk: its warm-up forwards
    and the one in progress (schedule.forwards_in_flight) run in Megatron's order, g
    micro-batches of chunk 0, then g of chunk 1, ... (get_pp_rank_microbatches, get_model_chunk_id in
    megatron/core/pipeline_parallel/schedules.py), each holding its own chunk's layers. Where the
    partition takes a layer from one chunk only (--account-for-embedding/loss-in-pipeline-split takes it from
    the first rank's first chunk and the last rank's last), scaling the even share by the rank's total
    would miss that the warm-up fills the other chunks."""
    pp, v, m = max(1, inp.pp), len(chunks), max(1, num_microbatches)
    group = inp.options.microbatch_group or pp
    forwards = forwards_in_flight("interleaved", pp, rank, m, v, group)
    order_group = max(1, min(group, m))  # a step of fewer micro-batches than g fills each chunk with all of them
    return float(sum(chunks[(k // order_group) % v] for k in range(forwards)))


def candidate_ranks(inp: ModelInput) -> tuple[int, ...]:
    """The pipeline ranks whose memory can be the largest: the first, the last, and each middle rank that holds
    more than those before it can. Between two middle ranks with the same layers (the same chunks, under the
    interleaved schedule) the earlier holds as much and at least as many forwards in flight (forwards_in_flight
    falls with the rank), and a middle rank with the first rank's layers holds less than the first (no
    embedding): only the earliest middle rank of each other shape is costed, one rank in all for uneven
    first/last stages, none for an even split."""
    pp = max(1, inp.pp)
    if pp == 1:
        return (0,)
    chunks = inp.pipeline_chunk_layers
    shapes: list[object] = (
        list(chunks) if chunks is not None and len(chunks) == pp else [rank_layers(inp, r) for r in range(pp)]
    )
    seen, middle = {shapes[0]}, []
    for rank in range(1, pp - 1):
        if shapes[rank] not in seen:
            seen.add(shapes[rank])
            middle.append(rank)
    return (0, *middle, pp - 1)


def stage_name(inp: ModelInput, rank: int) -> str:
    """How the estimate names a pipeline rank: "only" without a pipeline, "first", "last", else "middle"."""
    pp = max(1, inp.pp)
    if pp == 1:
        return "only"
    return "first" if rank == 0 else "last" if rank == pp - 1 else "middle"


def stage_table(inp: ModelInput, peaks: dict[int, float], steady: dict[int, float]) -> dict:
    """memory_gib.stages: the first and last ranks' allocator figures, and the busiest middle rank's with its rank
    where a middle rank can hold the peak (candidate_ranks)."""
    table: dict = {}
    middle = [rank for rank in peaks if stage_name(inp, rank) == "middle"]
    if middle:
        rank = max(middle, key=lambda r: (peaks[r], -r))
        table["middle"] = {"rank": rank, "allocator_peak": peaks[rank], "allocator_steady": steady[rank]}
    for rank in (0, max(1, inp.pp) - 1):
        table[stage_name(inp, rank)] = {"allocator_peak": peaks[rank], "allocator_steady": steady[rank]}
    return {name: table[name] for name in ("first", "middle", "last") if name in table}
