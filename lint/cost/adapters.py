"""LoRA and QLoRA: what fine-tuning adapters alone changes in the memory of a step.

PEFT freezes the base model (requires_grad False on every base parameter) and trains, beside each adapted linear
layer W (in x out), two matrices A (in x r) and B (r x out): r*(in + out) parameters. Only those get gradients,
and the optimizer (the HF Trainer's and DeepSpeed's both take `filter(lambda p: p.requires_grad, ...)`:
transformers/integrations/deepspeed.py deepspeed_init) keeps states for them alone. The frozen weights stay
in memory at 16 bits, or quantized by bitsandbytes (QLoRA): 4-bit NF4 with one fp32 absmax per block of 64
weights (Linear4bit, blocksize 64: 0.5 + 4/64 bytes a weight; double quantization makes it slightly less, so
this is an upper bound), or 8-bit with a per-row scale (Linear8bitLt: 1 byte). Embeddings, norms and the output
layer are not quantized. The adapters sit on every linear layer of the transformer blocks (LLaVA's
find_all_linear_names, TRL's "all-linear"): PEFT's default for Llama (q_proj and v_proj) trains fewer, so this
is an upper bound on the trainable parameters. Activations are unchanged: the backward still runs through every
frozen layer to reach the adapters below it.
"""

from __future__ import annotations

from plint.cost.model_input import ModelInput
from plint.cost.params import ParamCounts

_FROZEN_BYTES = {4: 0.5 + 4.0 / 64, 8: 1.0}


def _layer_linears(inp: ModelInput) -> tuple[float, float]:
    """(weights, sum of in+out) of one transformer layer's linear layers: q, k, v, the attention projection and
    the MLP's (gate and up with a gated MLP, then down)."""
    h, n = inp.hidden_size, inp.num_attention_heads
    d = inp.kv_channels or h // n
    g = inp.num_query_groups or n
    f = inp.ffn_width()
    shapes = [(h, n * d), (h, g * d), (h, g * d), (n * d, h), (f, h)] + [(h, f)] * (2 if inp.swiglu else 1)
    return float(sum(a * b for a, b in shapes)), float(sum(a + b for a, b in shapes))


def trainable_params(inp: ModelInput) -> float:
    """LoRA parameters of the whole model: r*(in+out) for every linear layer of every transformer layer."""
    _, edges = _layer_linears(inp)
    return float(inp.lora_rank or 0) * edges * inp.num_layers


def adapter_memory(inp: ModelInput, c: ParamCounts, mem: dict[str, float]) -> dict[str, float]:
    """The memory of full fine-tuning (memory.memory_bytes) turned into that of training LoRA adapters only:
    gradients and optimizer states scale to the trainable share, the weights to the frozen model's bytes plus
    the adapters'. Sharding (ZeRO, FSDP) and the stage's share apply as before, so each part keeps its ratio."""
    if not inp.lora_rank or c.total <= 0:
        return mem
    trainable = trainable_params(inp)
    share = trainable / c.total
    linear, _ = _layer_linears(inp)
    quantized = linear * inp.num_layers if inp.frozen_weight_bits in _FROZEN_BYTES else 0.0
    w_b = 4.0 if inp.precision == "fp32" else 2.0
    frozen = quantized * _FROZEN_BYTES.get(inp.frozen_weight_bits or 0, w_b) + (c.total - quantized) * w_b
    weight_ratio = (frozen + trainable * w_b) / (c.total * w_b)
    return {
        **mem,
        "weights": mem["weights"] * weight_ratio,
        "grads": mem["grads"] * share,
        "optimizer": mem["optimizer"] * share,
    }


def adapter_note(inp: ModelInput) -> str | None:
    if not inp.lora_rank:
        return None
    bits = f"; frozen linear weights in {inp.frozen_weight_bits}-bit" if inp.frozen_weight_bits else ""
    return (
        f"LoRA rank {inp.lora_rank}: gradients and optimizer states for {trainable_params(inp) / 1e6:,.1f}M "
        f"adapter parameters only (every linear layer adapted: an upper bound){bits}; time costed as full "
        "fine-tuning"
    )
