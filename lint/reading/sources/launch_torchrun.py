"""torchrun and `python -m torch.distributed.run|launch`: their options, the node count (a range
min:max), the rendezvous host."""

from __future__ import annotations

from plint.reading.shell.model import Command
from plint.values import Value, default, derived, from_word, unresolved
from plint.reading.sources.launch_calls import (
    LauncherCall,
    as_int,
    finish_call,
    given_text,
    grammar_of,
    hidden_by_unknown,
    min_max_nodes,
    product_of,
    scan_options,
)


_TORCHRUN_VALUES = """--nnodes --nproc-per-node --rdzv-backend --rdzv-endpoint --rdzv-id --rdzv-conf --max-restarts
    --monitor-interval --start-method --event-log-handler --role --log-dir --redirects|-r --tee|-t
    --local-ranks-filter --duplicate-stdout-filters --duplicate-stderr-filters --node-rank --master-addr
    --master-port --local-addr --logs-specs --numa-binding --signals-to-handle --shutdown-timeout"""


_TORCHRUN_FLAGS = "--standalone --module|-m --no-python --run-path --virtual-local-rank"


# the words that mark `--nproc-per-node gpu|auto`: one worker per device the node has (normalise may assume its size)
COUNTS_NODE_DEVICES = "counts the node's devices at run time"

TORCHRUN = grammar_of(_TORCHRUN_VALUES, _TORCHRUN_FLAGS + " --help|-h", aliases="dash")


TORCH_LAUNCH = grammar_of(_TORCHRUN_VALUES, _TORCHRUN_FLAGS + " --use-env --help|-h", aliases="dash")


def torchrun_call(command: Command, start: int, kind: str) -> LauncherCall:
    scan = scan_options(command.words, start, TORCHRUN if kind == "torchrun" else TORCH_LAUNCH)
    call = finish_call(LauncherCall(kind, command, scan.options), scan)
    call.is_module = call.flag("--module")
    where = command.words[start - 1].site if start >= 1 else None

    nnodes = given_text(call, "--nnodes", "nnodes")
    if nnodes is not None:
        call.nnodes = min_max_nodes(nnodes)
    elif call.flag("--standalone"):
        call.nnodes = derived(1, "--standalone: a single-node rendezvous on localhost", where)
    else:
        call.nnodes = hidden_by_unknown(call, "--nnodes") or default(1, f"{kind} --nnodes defaults to 1:1")
    nproc = given_text(call, "--nproc-per-node", "nproc_per_node")
    if nproc is None:
        call.nproc_per_node = hidden_by_unknown(call, "--nproc-per-node") or default(
            1, f"{kind} --nproc-per-node defaults to 1"
        )
    elif nproc.known and nproc.value in ("gpu", "auto", "cpu", "xpu"):
        call.nproc_per_node = unresolved(f"--nproc-per-node {nproc.value} {COUNTS_NODE_DEVICES}", nproc.span)
    else:
        call.nproc_per_node = as_int(nproc, "--nproc-per-node")
    call.world_size = product_of(
        call.nnodes,
        call.nproc_per_node,
        f"world size = {{a}} nodes * {{b}} workers ({kind} --nnodes * --nproc-per-node)",
    )
    rank = given_text(call, "--node-rank", "node_rank")
    call.node_rank = as_int(rank, "--node-rank") if rank is not None else None
    port = given_text(call, "--master-port", "master_port")
    call.master_port = as_int(port, "--master-port") if port is not None else None
    call.master_addr = _rendezvous_host(call)
    return call


def _rendezvous_host(call: LauncherCall) -> Value | None:
    """Where the workers meet: the --rdzv-endpoint host for a dynamic backend, else --master-addr."""
    backend = call.option("--rdzv-backend")
    endpoint = call.option("--rdzv-endpoint")
    addr = call.option("--master-addr")
    dynamic = backend is not None and backend.text != "static"
    if endpoint is not None and (dynamic or addr is None):
        text = endpoint.text
        if text is None:
            return from_word(endpoint, str, "--rdzv-endpoint")
        host = (
            text[1 : text.index("]")]
            if text.startswith("[") and "]" in text
            else text.rsplit(":", 1)[0]
            if text.count(":") == 1
            else text
        )
        return Value(host, endpoint.slice(0, len(host)).value_span if host else endpoint.value_span, endpoint.origin)
    if addr is not None:
        return from_word(addr, str, "--master-addr")
    return None
