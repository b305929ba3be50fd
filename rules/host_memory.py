"""PL403: the host memory ZeRO's CPU offload needs per node, as DeepSpeed's own estimators give it
(plint.cost.host_memory), against the node's RAM. The rules on the step estimate are in plint.rules.cost.
"""

from __future__ import annotations

from plint.rules.base import Example, Finding, RuleContext, RuleDocs, no_fix, register
from plint.rules.common import on_assumed_node, span


def _offload_job(mem: str) -> Example:
    """LLaMA-33B under ZeRO-3 with optimizer and parameters offloaded to the CPU, on one node of `mem`."""
    return Example(
        {
            "job.slurm": f"#!/bin/bash\n#SBATCH --nodes=1 --gpus-per-node=8 --mem={mem}\n"
            "deepspeed --num_gpus 8 train.py --model_name_or_path huggyllama/llama-30b "
            "--deepspeed ds.json --per_device_train_batch_size 1 --bf16 --model_max_length 2048\n",
            "ds.json": '{"train_micro_batch_size_per_gpu": "auto", "bf16": {"enabled": "auto"}, '
            '"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, '
            '"offload_param": {"device": "cpu"}}}\n',
        },
        main="job.slurm",
    )


@register(
    "PL403",
    "predicted-host-oom",
    "error",
    "ZeRO's CPU offload needs more host memory per node than the node has.",
    RuleDocs(
        what="With zero_optimization.offload_optimizer (and offload_param) on the CPU, estimates the host memory "
        "per node as DeepSpeed's own estimators do (estimate_zero2_model_states_mem_needs, "
        "estimate_zero3_model_states_mem_needs, with their 1.5 buffer factor; ZeRO-3 built under zero.Init, "
        "the smaller figure) and compares it with the node's RAM when the launch or the config says it "
        "(sbatch --mem, [tool.plint] host-memory). An error when the need exceeds the RAM even without "
        "DeepSpeed's 1.5 buffer, a warning when only the buffered figure does.",
        why="The fp32 master weights, Adam's moments and gradients of every parameter move to the CPU: a 33B "
        "model needs about 18 bytes a parameter there. The job is killed by the kernel's OOM killer, or "
        "swaps, after the model has loaded.",
        bad=_offload_job("600G"),
        good=_offload_job("1500G"),
        fix=no_fix(),
        references=(
            "deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs",
            "deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs",
        ),
    ),
)
def predicted_host_oom(ctx: RuleContext):
    yield from on_assumed_node(ctx, _predicted_host_oom(ctx))


def _predicted_host_oom(ctx: RuleContext):
    if ctx.layout is None:
        return
    from plint.cost.host_memory import BUFFER_FACTOR
    from plint.cost.layout_estimate import layout_estimate

    layout_estimate(ctx.layout, ctx.settings)
    host = ctx.layout.extras.host_memory
    if host is None or host["ram"] is None or host["gib"] <= host["ram"].value:
        return
    unbuffered = host["gib"] / BUFFER_FACTOR
    severity = "error" if unbuffered > host["ram"].value else "warning"
    yield Finding(
        f"{host['what']} needs about {host['gib']:,.0f} GiB of host memory per node (DeepSpeed's "
        f"estimator; {unbuffered:,.0f} GiB without its 1.5 buffer) but the node has "
        f"{host['ram'].value:,.0f} GiB ({host['ram'].note})",
        host["ram"].span or span(ctx, "parallel.zero_stage"),
        key="estimate.host_memory_gib",
        severity=severity,
    )
