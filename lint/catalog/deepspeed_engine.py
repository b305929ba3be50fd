"""What DeepSpeed builds for a Megatron-DeepSpeed launch, read from its layout: the pipeline engine and
the BF16_Optimizer. The cost model sizes memory and p2p by them, and PL305 exempts what the
BF16_Optimizer shards; kept here, outside plint.cost, so a rule can ask without importing the cost model."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.layout import Layout


def _given(layout: Layout, option: str) -> bool:
    args = layout.extras.trainer_args
    return args is not None and args.get(option) is not None


def runs_pipeline_engine(layout: Layout) -> bool:
    """Megatron-DeepSpeed with --deepspeed builds a PipelineModule (GPTModelPipe) unless
    --no-pipeline-parallel: DeepSpeed's PipelineEngine runs the schedule, whatever the ZeRO stage."""
    return (
        layout.value("trainer") == "megatron-deepspeed"
        and _given(layout, "--deepspeed")
        and not _given(layout, "--no-pipeline-parallel")
    )


def bf16_optimizer_accum_bytes(layout: Layout, precision: str | None = None) -> float | None:
    """Accumulation-buffer bytes per parameter when DeepSpeed gives a Megatron-DeepSpeed launch its
    BF16_Optimizer (engine._do_optimizer_sanity_check): bf16 at ZeRO stage 0 with the pipeline engine
    (BLOOM's recipe: "bf16 must use z0! it implements its own zero stage 1 equivalent"), or bf16 at
    ZeRO stage 1 with data_types.grad_accum_dtype fp32 and no optimizer offload; None otherwise.
    `precision` is the layout's unless the caller settled it otherwise."""
    precision = precision if precision is not None else layout.value("precision")
    if layout.value("trainer") != "megatron-deepspeed" or precision != "bf16" or not _given(layout, "--deepspeed"):
        return None
    zero = layout.value("parallel.zero_stage")
    ds = layout.extras.ds_config
    accum = ds.value("data_types", "grad_accum_dtype").value if ds is not None else None
    fp32 = str(accum).lower() in ("fp32", "float32", "float", "torch.float32")
    if zero == 1:  # ZeRO-1 with fp32 accumulation and no offload is routed to BF16_Optimizer too
        offload = ds.offload_optimizer.value if ds is not None else None
        return 4.0 if fp32 and offload in (None, "none") else None
    if zero not in (0, None) or not runs_pipeline_engine(layout):
        return None
    return 4.0 if fp32 else 2.0
