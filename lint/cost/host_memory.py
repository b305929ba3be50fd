"""Host (CPU) memory per node that ZeRO-Offload and ZeRO-Infinity's CPU offload need, as DeepSpeed estimates it.

DeepSpeed's own estimators, used as they are (their 1.5 `additional_buffer_factor` included):

- ZeRO-1/2 with offload_optimizer to the CPU: `estimate_zero2_model_states_mem_needs` in
  deepspeed/runtime/zero/stage_1_and_2.py: params * max(4 * total_gpus, 16) * 1.5 per node (the fp32 master
  weights, Adam's moments and the fp32 gradients on the CPU, plus pinned 16-bit buffers per GPU).
- ZeRO-3: `estimate_zero3_model_states_mem_needs` in deepspeed/runtime/zero/stage3.py: with offload_param and
  offload_optimizer params * 18 / nodes * 1.5 under zero.Init (the parameters are created partitioned), else
  params * max(4 * gpus_per_node, 18 / nodes) * 1.5 (every rank first builds the whole model on the CPU); with
  offload_optimizer alone 16 in place of 18.

The HF Trainer builds ZeRO-3 models under zero.Init (transformers' from_pretrained when
is_deepspeed_zero3_enabled()), as accelerate does with zero3_init_flag: the smaller figure is the one checked,
so a launch that may fit is never called short. NVMe offload (ZeRO-Infinity to disk) is not estimated here.
"""

from __future__ import annotations

BUFFER_FACTOR = 1.5  # DeepSpeed's additional_buffer_factor default in both estimators
GIB = float(1 << 30)


def offload_host_bytes(
    total_params: float,
    zero_stage: int,
    offload_optimizer: bool,
    offload_param: bool,
    gpus_per_node: int,
    nnodes: int,
    zero_init: bool = True,
) -> float | None:
    """CPU bytes per node for the model states DeepSpeed offloads; None when nothing is offloaded to the CPU
    or the stage has no estimator."""
    if not offload_optimizer or zero_stage not in (1, 2, 3):
        return None  # offload_param needs offload_optimizer in DeepSpeed's estimators (stage 3 only)
    nodes, per_node = max(1, nnodes), max(1, gpus_per_node)
    if zero_stage in (1, 2):
        return total_params * max(4 * nodes * per_node, 16) * BUFFER_FACTOR
    bytes_per_param = 18 if offload_param else 16
    if zero_init:
        return total_params * bytes_per_param / nodes * BUFFER_FACTOR
    return total_params * max(4 * per_node, bytes_per_param / nodes) * BUFFER_FACTOR


def slurm_mem_gib(text: str) -> float | None:
    """sbatch --mem (per node): a number in MB unless suffixed K, M, G or T; 0 (all of the node's memory) and
    anything else unreadable give None."""
    text = text.strip().upper()
    units = {"K": 1 / (1024 * 1024), "M": 1 / 1024, "G": 1.0, "T": 1024.0}
    scale = units.get(text[-1:], None)
    number = text[:-1] if scale is not None else text
    try:
        value = float(number)
    except ValueError:
        return None
    gib = value * (scale if scale is not None else 1 / 1024)
    return gib if gib > 0 else None
