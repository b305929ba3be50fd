"""bcprun, NVIDIA Base Command Platform's multi-node launcher (NGC `ngc batch run` jobs, DGX Cloud).

`bcprun [--nnodes N] [--npernode P] [--env E] [--workdir W] --cmd COMMAND` starts COMMAND on N nodes of the job,
P processes on each, and gives the processes their rank in the environment as torchrun would; COMMAND is one
string a shell runs (`bcprun -c "cd /workspace && python pretrain.py ..."`), read by the shell layer with this
command as its parent. Option names: bcprun 1.2's own usage text (`--nnodes`, `--npernode`, `--env`,
`--workdir`, `--cmd`, `--binding`; `--async`, `--debug`, `--version`, `--help`; `-c` for `--cmd`); the short
forms `-n`, `-p` and `-e` and the flag `-no_redirect` as public launch scripts use them (`bcprun -n 2 -c ...`,
`bcprun -p 8 -c ...`, `bcprun ... -e KEY=VALUE`). Neither count has a default written in the script: without
--nnodes the job's replica count (`ngc batch run --replicas`, given outside the script) decides, and plint does
not assume a processes-per-node default it cannot see.
"""

from __future__ import annotations

from plint.reading.shell.model import Command
from plint.values import Value, from_word, parse_int, unresolved
from plint.reading.sources.launch_calls import (
    LauncherCall,
    finish_call,
    grammar_of,
    hidden_by_unknown,
    product_of,
    scan_options,
)

BCPRUN = grammar_of(
    "--nnodes|-n --npernode|-p --env|-e --workdir --cmd|-c --binding",
    "--async --debug --version --help|-h -no_redirect|--no_redirect",
    abbrev=False,
)


def bcprun_call(command: Command, start: int) -> LauncherCall:
    """bcprun's options; it names no program of its own (its --cmd string is read as a nested shell)."""
    scan = scan_options(command.words, start, BCPRUN)
    call = finish_call(LauncherCall("bcprun", command, scan.options), scan)
    for attr, name in (("nodes", "--nnodes"), ("tasks_per_node", "--npernode")):
        w = call.option(name)
        if w is not None:
            setattr(call, attr, from_word(w, parse_int, f"bcprun {name}"))
    return call


def bcprun_sizes(s: LauncherCall) -> tuple[Value, Value, Value]:
    """(nodes, processes per node, processes in all) of a bcprun launch."""
    site = s.command.words[0].site  # the bcprun word, not its whole (often many-line) command
    nodes = (
        s.nodes
        or hidden_by_unknown(s, "--nnodes")
        or unresolved(
            "bcprun without --nnodes runs on every node of the job: its replica count is given to `ngc batch run`, "
            "outside the script",
            site,
        )
    )
    per = (
        s.tasks_per_node
        or hidden_by_unknown(s, "--npernode")
        or unresolved("bcprun without --npernode: the processes it starts a node are not written", site)
    )
    return nodes, per, product_of(nodes, per, "world = bcprun --nnodes x --npernode")
