"""PL6xx: environment variables the launch sets, or fails to set, for the trainer and NCCL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plint.bounds import NumberTooLong, parse_int
from plint.rules.base import Example, Finding, LaunchContext, RuleContext, RuleDocs, no_fix, register, safe_fix
from plint.rules.common import gpt, known, span, torchrun, trainer, value

BLACKWELL = ("b200", "gb200", "b100", "gb300", "b300")
CRIPPLING = {"NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1", "NCCL_NET": "Socket"}

if TYPE_CHECKING:
    from plint.source import Span


def launch_env(ctx: RuleContext, name: str):
    """(value text or None when unknown, where it was set) for a variable the launch command sees, or None."""
    chain = ctx.layout.extras.chain if ctx.layout is not None else None
    if chain is None or chain.command is None:
        return None
    found: tuple[str | None, Span | None] | None = None
    commands = [chain.command]
    while (parent := commands[-1].parent) is not None:
        commands.append(parent)
    for command in reversed(commands):  # outermost first: inner settings win
        var = command.env.get(name)
        if var is not None and var.exported:
            found = _var_text(var)
        if name in command.assignments:
            found = _var_text(command.assignments[name])
        for w in command.words:  # `env NAME=v cmd`, `mpirun -x NAME=v`, `srun --export=ALL,NAME=v`
            text = w.text or ""
            if text.startswith("--export="):
                text = text[len("--export=") :]
            for item in text.split(","):
                key, eq, rest = item.partition("=")
                if eq and key == name:
                    found = (rest, w.value_span)
    return found


def _var_text(var) -> tuple[str | None, Span | None]:
    """A shell variable's text (None when a piece is unknown) and where it was set."""
    text = "".join(p.text or "" for p in var.value) if all(p.known for p in var.value) else None
    return text, var.span


@register(
    "PL601",
    "cuda-device-max-connections",
    "warning",
    "Tensor or context parallelism without CUDA_DEVICE_MAX_CONNECTIONS=1 (or set to 1 with FSDP).",
    RuleDocs(
        what="With tp > 1 or cp > 1 on GPUs before Blackwell, Megatron-LM needs CUDA_DEVICE_MAX_CONNECTIONS=1 "
        "in the workers' environment; with Megatron-FSDP or torch FSDP2 it must not be 1. A framework that builds "
        "Megatron-Core's configs itself, without Megatron-LM's parser (ROLL's mcore_adapter), is not checked.",
        why="validate_args asserts 'Using tensor model parallelism or context parallelism require setting "
        "the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1': with several hardware queues the "
        "communication kernels can be scheduled after the compute they should overlap.",
        bad=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel"), prefix=""),
        good=torchrun(gpt("--tensor-model-parallel-size 2 --sequence-parallel")),
        fix=safe_fix(
            "`plint fix` adds `export CUDA_DEVICE_MAX_CONNECTIONS=1` on its own line before the launch statement, at "
            "its indentation; where the launch shares its line with a case pattern or `then`/`do`, the export takes "
            "the launch's place and the launch moves to the next line, at the same column (safe)."
        ),
    ),
)
def cuda_device_max_connections(ctx: LaunchContext):
    if trainer(ctx) != "megatron":
        return
    checks = ctx.fact("trainer.validate_args")
    if checks is not None and checks.value is False:
        return  # a framework that builds Megatron-Core's configs itself: no validate_args asserts it
    from plint.rules.keys_and_flags import flag_catalog

    environment = flag_catalog(ctx).environment
    if environment is not None and "CUDA_DEVICE_MAX_CONNECTIONS" not in environment:
        return  # the parser in force (read from its source) checks no such thing
    gpu = value(ctx, "cluster.gpu")
    if gpu is not None and gpu.value and str(gpu.value).lower().startswith(BLACKWELL):
        return
    args = ctx.layout.extras.trainer_args
    # every release asserts CUDA_DEVICE_MAX_CONNECTIONS != "1" under torch FSDP2 and Megatron-FSDP
    # (--use-custom-fsdp in 0.12 and 0.13): megatron/training/arguments.py validate_args, 'FSDP always requires
    # CUDA_DEVICE_MAX_CONNECTIONS value large than one' / 'FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or
    # unset' (0.18 on); with tp or cp > 1 beside FSDP it only warns, so an unset variable is right there
    fsdp = args is not None and any(
        args.get(dest) for dest in ("use_megatron_fsdp", "use_custom_fsdp", "use_torch_fsdp2")
    )
    setting = launch_env(ctx, "CUDA_DEVICE_MAX_CONNECTIONS")
    if fsdp:
        if setting is not None and setting[0] == "1":
            yield Finding(
                "CUDA_DEVICE_MAX_CONNECTIONS=1 with FSDP: Megatron asserts it is not 1",
                setting[1],
                key="env.CUDA_DEVICE_MAX_CONNECTIONS",
            )
        return
    sizes = known(ctx, "parallel.tp", "parallel.cp")
    if not sizes or (sizes[0] <= 1 and sizes[1] <= 1):
        return
    if args is not None and args.get("--overlap-moe-expert-parallel-comm"):
        return
    if setting is None:
        yield Finding(
            f"tp {sizes[0]}"
            + (f" and cp {sizes[1]}" if sizes[1] > 1 else "")
            + " needs CUDA_DEVICE_MAX_CONNECTIONS=1 in the environment (Megatron asserts it on "
            "Ampere and Hopper); add `export CUDA_DEVICE_MAX_CONNECTIONS=1`",
            ctx.layout.site,
            key="env.CUDA_DEVICE_MAX_CONNECTIONS",
        )
    elif setting[0] is not None and setting[0] != "1":
        yield Finding(
            f"CUDA_DEVICE_MAX_CONNECTIONS={setting[0]} with tp {sizes[0]}: Megatron asserts it is 1",
            setting[1],
            key="env.CUDA_DEVICE_MAX_CONNECTIONS",
        )


@register(
    "PL602",
    "nccl-crippled",
    "warning",
    "NCCL transports switched off in a multi-node run.",
    RuleDocs(
        what="Checks multi-node launches that export NCCL_IB_DISABLE=1, NCCL_P2P_DISABLE=1 or NCCL_NET=Socket.",
        why="They send inter-node traffic over TCP sockets instead of InfiniBand/RoCE (a 400 Gb/s NIC "
        "drops to a few GB/s) or intra-node traffic through host memory instead of NVLink; data-parallel "
        "and pipeline communication then dominates the step. They are debugging switches that get left in.",
        bad=torchrun(
            gpt(""),
            prefix="export NCCL_IB_DISABLE=1\n",
            launcher="torchrun --nnodes 2 --nproc_per_node 8 --master_addr node001",
        ),
        good=torchrun(
            gpt(""),
            prefix="export NCCL_DEBUG=WARN\n",
            launcher="torchrun --nnodes 2 --nproc_per_node 8 --master_addr node001",
        ),
        fix=no_fix("remove the variable if it is not needed on this cluster."),
    ),
)
def nccl_crippled(ctx: LaunchContext):
    nodes = known(ctx, "cluster.nnodes")
    if not nodes or nodes[0] <= 1:
        return
    for name, bad in CRIPPLING.items():
        setting = launch_env(ctx, name)
        if setting is not None and setting[0] == bad:
            yield Finding(
                f"{name}={bad} in a {nodes[0]}-node run: NCCL falls back to slower transports",
                setting[1] or span(ctx),
                key=f"env.{name}",
            )


MAX_LISTED_GPUS = 64  # GPUs of --num_gpus PL603 lists by number (a node has 8 or 16)


@register(
    "PL603",
    "cuda-visible-devices-ignored",
    "warning",
    "CUDA_VISIBLE_DEVICES set for the deepspeed launcher, which ignores it beside --include/--exclude/--num_gpus.",
    RuleDocs(
        what="Checks a `deepspeed` launch on the local node (no --hostfile) that exports CUDA_VISIBLE_DEVICES and "
        "also selects GPUs with --num_gpus or --include localhost:..., when the two name different GPUs.",
        why="DeepSpeed's runner only turns CUDA_VISIBLE_DEVICES into `--include localhost:<devices>` when none of "
        "those options is given; otherwise it prints that it ignores it, deletes it from the environment, and "
        "starts the ranks on GPUs 0..n-1: the GPUs the script meant to leave free are used, the chosen ones "
        "may sit idle (deepspeed/launcher/runner.py main: 'Detected CUDA_VISIBLE_DEVICES=... but ignoring it "
        "because one or several of --include/--exclude/--num_gpus/--num_nodes cl args were used').",
        bad=Example(
            {
                "launch.sh": "export CUDA_VISIBLE_DEVICES=4,5,6,7\ndeepspeed --num_gpus 4 train.py "
                "--deepspeed_config ds.json\n",
                "ds.json": '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8}\n',
            }
        ),
        good=Example(
            {
                "launch.sh": "deepspeed --include localhost:4,5,6,7 train.py --deepspeed_config ds.json\n",
                "ds.json": '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8}\n',
            }
        ),
        fix=no_fix("write the devices as `--include localhost:<devices>` instead."),
        references=("deepspeed/launcher/runner.py main",),
    ),
)
def cuda_visible_devices_ignored(ctx: LaunchContext):
    chain = ctx.layout.extras.chain if ctx.layout is not None else None
    call = next((c for c in getattr(chain, "calls", []) if c.launcher == "deepspeed"), None)
    if call is None or call.option("--hostfile") is not None:
        return
    devices = launch_env(ctx, "CUDA_VISIBLE_DEVICES")
    if devices is None or not devices[0]:
        return  # unset, empty, or unknown: nothing to compare
    listed = [d.strip() for d in devices[0].split(",")]
    chosen = _launcher_devices(call)
    if chosen is None or chosen[1] == listed:
        return  # the launcher picks the very GPUs the variable lists (CUDA_VISIBLE_DEVICES=0,1,2,3 --num_gpus 4)
    option, picked = chosen
    yield Finding(
        f"CUDA_VISIBLE_DEVICES={devices[0]} is ignored by the deepspeed launcher because of {option}: it "
        f"deletes the variable and starts the ranks on GPUs {','.join(picked)}; give the devices as "
        f"--include localhost:{devices[0]} instead",
        devices[1] or call.command.words[0].value_span,
        key="CUDA_VISIBLE_DEVICES",
    )


def _launcher_devices(call) -> tuple[str, list[str]] | None:
    """(the option, the local GPUs it selects) for --num_gpus N (0..N-1) or --include localhost:a,b; None when
    neither, or not known."""
    include = call.option("--include")
    if include is not None:
        text = include.text or ""
        host, _, slots = text.partition(":")
        if host in ("localhost", "127.0.0.1") and slots and "@" not in text:
            return f"--include {text}", [s.strip() for s in slots.split(",")]
        return None
    gpus = call.option("--num_gpus")
    text = gpus.text if gpus is not None else None
    if text is None or not text.isdigit() or call.option("--exclude") is not None:
        return None
    try:
        count = parse_int(text)
    except NumberTooLong:  # more digits than Python converts: no node has that many GPUs, nothing to list
        return None
    if count > 0:
        # the runner's GPUs 0..N-1, listed up to MAX_LISTED_GPUS: a count from a stranger's file may be any
        # number of digits, and a list of it would take all the memory there is
        shown = [str(i) for i in range(min(count, MAX_LISTED_GPUS))]
        return f"--num_gpus {text}", shown if count <= MAX_LISTED_GPUS else [*shown, f"...{count - 1}"]
    return None
