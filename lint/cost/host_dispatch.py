"""The host's share of an iteration: the least time a micro-batch takes on a pipeline stage, however small
its layers, is the CPU's dispatch of their kernels (Options.host_*_s, fitted on Megatron-LM's functional tests
by benchmarks/fit_step_overhead.py, scaled by GPU.host_overhead_factor)."""

from __future__ import annotations

from plint.catalog.hardware import GPU
from plint.cost.model_input import ModelInput
from plint.cost.params import ParamCounts, hybrid_modelled


def host_microbatch_s(inp: ModelInput, c: ParamCounts, gpu: GPU) -> float:
    """The least time one micro-batch takes on a pipeline stage however small its layers: the host's
    dispatch of their forward and backward (Options.host_*_s, scaled by GPU.host_overhead_factor)."""
    o = inp.options
    # T5 dispatches an encoder and a decoder layer per layer of num_layers (t5_model.py T5Model: two TransformerBlocks)
    layers = inp.num_layers / max(1, inp.pp) * (2 if inp.encoder_decoder else 1) * hybrid_dispatch_share(inp)
    per_layer = o.host_layer_s + (o.host_cp_layer_s if inp.cp > 1 else 0.0)
    moe_share = c.num_moe / inp.num_layers if inp.num_layers else 0.0
    if inp.ep > 1:
        per_layer += moe_share * (o.host_moe_layer_s + grouped_local_experts(inp) * o.host_expert_s)
    return gpu.host_overhead_factor * (o.host_microbatch_s + layers * per_layer)


def grouped_local_experts(inp: ModelInput) -> float:
    """Local experts whose per-expert launches the host pays in each MoE layer (Options.host_expert_s): those of TE's
    GroupedLinear (--moe-grouped-gemm). transformer_engine/pytorch/module/grouped_linear.py (v2.9) _GroupedLinear.forward
    and .backward pass m_splits to general_grouped_gemm, whose C++ side (te_general_grouped_gemm) loops over the
    experts and sets up and launches one cuBLASLt GEMM each, round-robin on its side streams: fc1 and fc2 forward,
    dgrad and wgrad, 6 launches per local expert per micro-batch; under FP8 tex.split_quantize quantizes each expert's
    slice separately as well. SequentialMLP's Python loop over
    experts is left to host_moe_layer_s, as fitted."""
    if not inp.moe_grouped_gemm or not inp.num_experts:
        return 0.0
    return inp.num_experts / max(1, inp.ep)


# A hybrid layer's host dispatch, in transformer layers (host_layer_s is fitted on layers of two sub-layers,
# attention and MLP). megatron/core/models/hybrid/hybrid_layer_specs.py: an attention layer is a TransformerLayer
# whose MLP is IdentityOp and an MLP layer an MLPLayer, one sub-layer each; a Mamba layer's mixer (mamba_mixer.py
# MambaMixer.forward) launches the fused norm and in_proj, mamba_split_conv1d_scan_combined's conv1d and chunked
# scan kernels (chunk cumsum, chunk state, state passing, chunk scan; more backward) and out_proj: a whole layer's.
HYBRID_DISPATCH_LAYERS = {"M": 1.0, "*": 0.5, "-": 0.5}


def hybrid_dispatch_share(inp: ModelInput) -> float:
    """A hybrid stack's mean host dispatch per layer in transformer layers (HYBRID_DISPATCH_LAYERS); 1 otherwise."""
    if not hybrid_modelled(inp):
        return 1.0
    pattern = inp.hybrid_pattern or ""
    return sum(HYBRID_DISPATCH_LAYERS[x] for x in pattern) / max(1, len(pattern))
