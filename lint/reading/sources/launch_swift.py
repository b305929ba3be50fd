"""ms-swift's command line, `swift sft ARGS` (and pt, rlhf, infer; Megatron-SWIFT's `megatron sft|pt|rlhf ARGS`
alike): with NPROC_PER_NODE or NNODES in its environment it runs `python -m torch.distributed.run` with
--nproc_per_node, --master_port, --nnodes, --node_rank and --master_addr taken from NPROC_PER_NODE, MASTER_PORT,
NNODES, NODE_RANK and MASTER_ADDR (those set), then swift/cli/<route>.py ARGS (swift/cli/_megatron/<route>.py);
without either, `python swift/cli/<route>.py ARGS`, one process (modelscope/ms-swift 3602360, swift/cli/main.py:
use_torchrun, get_torchrun_args, cli_main; the `swift` and `megatron` console scripts, setup.py).

The call is read as the torchrun (or python) command it becomes: a command whose words are the options those variables
give, placed where the variables were set, then the route's script and the command's own arguments.
"""

from __future__ import annotations

import copy

from plint.reading.shell.model import Command, Piece, Word
from plint.reading.sources.launch_calls import LauncherCall

# the routes cli_main runs under torchrun (any other runs as one python process), and where their scripts are: `swift`
# (swift.cli.main) and Megatron-SWIFT's `megatron` (swift.cli._megatron.main, whose every route may run under torchrun;
# its export converts checkpoints and trains nothing)
ROUTES = {"swift": ("pt", "sft", "rlhf", "infer"), "megatron": ("pt", "sft", "rlhf")}
SCRIPTS = {"swift": "swift/cli/{route}.py", "megatron": "swift/cli/_megatron/{route}.py"}
TORCHRUN_VARIABLES = ("NPROC_PER_NODE", "MASTER_PORT", "NNODES", "NODE_RANK", "MASTER_ADDR")


def swift_call(command: Command, start: int, tool: str = "swift") -> LauncherCall | None:
    """`swift ROUTE ARGS` (or `megatron ROUTE ARGS`) with words[start] the route; None for a route ms-swift does not
    train with."""
    from plint.reading.sources.launch_torchrun import torchrun_call

    words = command.words
    route = (words[start].text or "").replace("_", "-") if start < len(words) else ""
    if route not in ROUTES[tool]:
        return None
    at = words[start].site
    script = Word((Piece(SCRIPTS[tool].format(route=route), at, "derived"),), at)
    env = {**command.env, **command.assignments}
    options: list[Word] = []
    for name in TORCHRUN_VARIABLES:
        var = env.get(name)
        if var is None or var.is_array:
            continue
        options += [Word((Piece(f"--{name.lower()}", var.span, "derived"),), var.span), Word(var.value, var.span)]
    launched = copy.copy(command)  # the same command, its words those of the torchrun it becomes
    launched.words = [words[start - 1], *options, script, *words[start + 1 :]]
    if not options:
        return LauncherCall("python", launched, program=script, program_index=1)
    return torchrun_call(launched, 1, "torchrun")
