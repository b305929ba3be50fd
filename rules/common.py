"""Small readers rules share: known integer values of the layout, where to point, example launches."""

from __future__ import annotations

from functools import lru_cache

from typing import TYPE_CHECKING, Iterable, Iterator

from plint.rules.base import Example, Finding, RuleContext
from plint.values import Value

if TYPE_CHECKING:
    from plint.layout import LayoutKey

MEGATRON_ASSERT = "Megatron asserts this at start-up, after the job has waited in the queue"  # PL1xx
CP_USEFUL_FROM = 8192  # Megatron MoE guide, guideline 5: context parallelism for sequences of 8K and more
# How an efficiency rule's message gives the figures of the alternative it names (plint.rules.cost.gain_text)
FIGURES = (
    "each figure with its uncertainty: 'step predicted 12.6% shorter +- 5% (3.17 s vs 3.62 s)', the "
    "step time of the same global batch with the margin the gain had to pass, and the memory it needs "
    "with its measured error band, '39.9 of 74.4 GiB (37.8 to 42.0 within its +-6% band)'"
)


def value(ctx: RuleContext, key: LayoutKey) -> Value | None:
    """A layout field, or a trainer fact when the layout has no such field."""
    if ctx.layout is None:
        return None
    v = ctx.layout.fields.get(key)
    return v if v is not None else ctx.fact(key)


def known(ctx: RuleContext, *keys: LayoutKey) -> list | None:
    """The values of all keys when every one is known, else None (rules stay silent on unknowns)."""
    out = []
    for k in keys:
        v = value(ctx, k)
        if v is None or v.value is None:
            return None
        out.append(v.value)
    return out


def span(ctx: RuleContext, *keys: LayoutKey):
    """The first written (non-default) span among keys, else the launch command."""
    for k in keys:
        v = value(ctx, k)
        if v is not None and v.span is not None and v.origin != "default":
            return v.span
    return ctx.layout.site if ctx.layout is not None else None


def assumed_node_size(ctx: RuleContext) -> str | None:
    """The words a finding adds when it rests on GPUs per node plint assumed (a launch on every GPU of its node
    that states no count: reading/normalise.py takes the catalog's node size, origin assumed); None otherwise."""
    per_node = value(ctx, "cluster.gpus_per_node")
    if per_node is None or per_node.value is None or per_node.origin != "assumed":
        return None
    return (
        f"; the GPUs per node are assumed ({per_node.value}): state them with [tool.plint] gpus-per-node or "
        "the launcher's count for a verdict"
    )


def on_assumed_node(ctx: RuleContext, findings: Iterable[Finding]) -> Iterator[Finding]:
    """A rule's findings, each a warning with the assumption named when the GPUs per node are plint's
    assumption: a count guessed from the GPU's usual node never makes an error, the real node may differ; and
    no fix is offered, since it would be computed from the guess."""
    suffix = assumed_node_size(ctx)
    for finding in findings:
        yield (
            finding if suffix is None else Finding(finding.message + suffix, finding.span, finding.key, None, "warning")
        )


def trainer(ctx: RuleContext) -> str | None:
    return ctx.layout.value("trainer") if ctx.layout is not None else None


def is_megatron(ctx: RuleContext) -> bool:
    return trainer(ctx) in ("megatron", "megatron-deepspeed")


def is_gpt_neox(ctx: RuleContext) -> bool:
    """A GPT-NeoX launch (deepy.py): Megatron's model run by DeepSpeed, set by YAML keys, not by flags."""
    return ctx.fact("neox.config_files") is not None


def torchrun(
    args: str, nproc: int = 8, prefix: str = "export CUDA_DEVICE_MAX_CONNECTIONS=1\n", launcher: str = ""
) -> Example:
    """A one-file Megatron launch for rule docs."""
    launch = launcher or f"torchrun --nproc_per_node {nproc}"
    return Example(
        {
            "launch.sh": "#!/bin/bash\n"
            + prefix
            + f"{launch} pretrain_gpt.py \\\n    "
            + " \\\n    ".join(args.split("\n"))
            + "\n"
        }
    )


def gpt(
    extra: str = "",
    layers: int = 24,
    hidden: int = 2048,
    heads: int = 16,
    seq: int = 2048,
    micro: int = 1,
    glob: int = 64,
) -> str:
    shape = (
        f"--num-layers {layers} --hidden-size {hidden} --num-attention-heads {heads}\n"
        f"--seq-length {seq} --max-position-embeddings {seq}\n"
        f"--micro-batch-size {micro} --global-batch-size {glob} --bf16"
    )
    return (extra + "\n" + shape) if extra else shape


def closest(word: str, options, cutoff: float = 0.6) -> str | None:
    """The did-you-mean suggestion, computed once per distinct word and option list: a file with N
    unknown flags asks for each in every report and fix pass."""
    return _closest(word, tuple(options), cutoff)


@lru_cache(maxsize=4096)
def _closest(word: str, options: tuple[str, ...], cutoff: float) -> str | None:
    from difflib import get_close_matches  # imported only when a finding needs a suggestion

    near = get_close_matches(word, options, n=1, cutoff=cutoff)
    return near[0] if near else None


def spelled(ctx: RuleContext, flag: str) -> str:
    """How the launch's trainer takes a Megatron-LM flag: the key of a framework that drives Megatron-Core with keys of
    its own (its reader's trainer.option_names: `policy.megatron_cfg.sequence_parallel=true` for --sequence-parallel),
    else the flag."""
    names = ctx.fact("trainer.option_names")
    if names is not None and isinstance(names.value, dict):
        return names.value.get(flag, flag)
    return flag
