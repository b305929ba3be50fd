"""Sharded data parallelism (parallel.sharding): model states per GPU worked out by hand, and DeepSpeed's own
ZeRO-3 estimator (estimate_zero3_model_states_mem_needs in deepspeed/runtime/zero/stage3.py; deepspeed.md
sec. 4.1: no offload, GPU = 4L + 18P/N, L the largest module's parameters)."""

import pytest
from plint.cost import ModelInput, count_params
from plint.cost.estimate import estimate
from plint.cost.memory import memory_bytes

GIB = 1 << 30

# Llama-3 8B as Megatron builds it: 32 layers, h 4096, GQA 8 groups of 128, SwiGLU f 14336, RMSNorm, no
# biases, rope, untied output layer, vocabulary 128,256 (a multiple of 128: no padding).
LLAMA3_8B = ModelInput(num_layers=32, hidden_size=4096, num_attention_heads=32, num_query_groups=8,
                       kv_channels=128, ffn_hidden_size=14336, swiglu=True, normalization="RMSNorm",
                       add_bias_linear=False, untie_embeddings=True, seq_length=8192, vocab_size=128256,
                       hidden_dropout=0.0, attention_dropout=0.0, micro_batch=1, global_batch=128,
                       nnodes=2, gpus_per_node=8, gpu="h100-sxm")
# per layer: QKV 4096 x (4096 + 2 x 1024), projection 4096^2, fc1 4096 x 2 x 14336, fc2 14336 x 4096, 2 norms
LAYER = 4096 * 6144 + 4096**2 + 4096 * 28672 + 14336 * 4096 + 2 * 4096
EMBEDDING = 128256 * 4096
P_8B = 32 * LAYER + 2 * EMBEDDING + 4096  # + the final norm
assert (LAYER, EMBEDDING, P_8B) == (218_112_000, 525_336_576, 8_030_261_248)


def test_megatron_fsdp_full_shard_llama3_8b_on_16_gpus():
    fsdp = LLAMA3_8B.replace(distributed_optimizer=True, megatron_fsdp=True, sharding="parameters")
    assert count_params(fsdp).total == P_8B
    mem = memory_bytes(fsdp, count_params(fsdp), 8)
    # bf16 weights, fp32 main grads, fp32 master + Adam (2 + 4 + 12 bytes) over dp 16, plus two un-sharded
    # units (docs/user-guide/features/megatron_fsdp.md, double buffering): the output layer (the largest
    # unit) and a transformer layer, weights (2 B) and gradients (4 B)
    units = EMBEDDING + LAYER
    assert mem["weights"] == pytest.approx(2 * P_8B / 16 + 2 * units)  # 2.32 GiB
    assert mem["grads"] == pytest.approx(4 * P_8B / 16 + 4 * units)  # 4.64 GiB
    assert mem["optimizer"] == pytest.approx(12 * P_8B / 16)  # 5.61 GiB
    assert round(mem["weights"] / GIB, 2) == 2.32 and round(mem["grads"] / GIB, 2) == 4.64
    # the distributed optimizer alone keeps whole weights and grads: the 90 GiB of the false PL401
    dist_opt = memory_bytes(LLAMA3_8B.replace(distributed_optimizer=True), count_params(fsdp), 8)
    assert (dist_opt["weights"], dist_opt["grads"]) == (2 * P_8B, 4 * P_8B)
    saved = 6 * P_8B - 6 * P_8B / 16 - 6 * (EMBEDDING + LAYER)  # 37.9 GiB
    assert sum(dist_opt.values()) - sum(mem.values()) == pytest.approx(saved)


@pytest.mark.parametrize(("strategy", "weights", "grads"), [("optimizer", 2 * P_8B, 4 * P_8B),
                                                              ("gradients", 2 * P_8B, 4 * P_8B / 16 + 4 * (EMBEDDING + LAYER))])
def test_megatron_fsdp_lesser_strategies(strategy, weights, grads):
    # optim: the distributed optimizer's shard alone; optim_grads: and the fp32 gradients, with the two
    # un-sharded units' gradient buffers; the weights stay whole
    inp = LLAMA3_8B.replace(distributed_optimizer=True, megatron_fsdp=True, sharding=strategy)
    mem = memory_bytes(inp, count_params(inp), 8)
    assert (mem["weights"], mem["grads"]) == (pytest.approx(weights), pytest.approx(grads))
    assert mem["optimizer"] == pytest.approx(12 * P_8B / 16)


# Llama-2 7B, DeepSpeed's worked example (deepspeed.md sec. 4.1: 6.74 B params, L = 32000 x 4096, one node of 8)
LLAMA2_7B = ModelInput(num_layers=32, hidden_size=4096, num_attention_heads=32, ffn_hidden_size=11008,
                       swiglu=True, normalization="RMSNorm", add_bias_linear=False, untie_embeddings=True,
                       seq_length=4096, vocab_size=32000, hidden_dropout=0.0, attention_dropout=0.0,
                       micro_batch=1, global_batch=64, nnodes=1, gpus_per_node=8, gpu="a100-sxm-80gb",
                       zero_stage=3)
P_7B = 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
L_7B = 32000 * 4096  # the embedding (and the output layer): larger than fc1, 2 x 11008 x 4096


def test_deepspeed_zero3_against_deepspeeds_estimator():
    c = count_params(LLAMA2_7B)
    assert c.total == P_7B == 6_738_415_616
    ds_estimate = 4 * L_7B + 18 * P_7B / 8  # estimate_zero3_model_states_mem_needs, no offload
    assert round(ds_estimate / GIB, 2) == 14.61  # the output deepspeed.md records
    # plint: 16-bit weights and gradients and fp32 master + Adam over dp 8, the largest module's gathered
    # weights and gradients (4L) ...
    mem = memory_bytes(LLAMA2_7B, c, 4)
    assert mem["weights"] == pytest.approx(2 * P_7B / 8 + 2 * L_7B)
    assert mem["grads"] == pytest.approx(2 * P_7B / 8 + 2 * L_7B)
    states = mem["weights"] + mem["grads"] + 12 * P_7B / 8
    # ... which is DeepSpeed's 4L + 18P/N less its 4 B of fp32 gradients plus the 2 B of 16-bit gradients
    # plint keeps through the backward; the fp32 copy (4P/N) exists only in the step, where plint adds
    # what it exceeds the freed activations by
    assert states == pytest.approx(ds_estimate - 2 * P_7B / 8)
    assert mem["optimizer"] == pytest.approx(12 * P_7B / 8 + max(0.0, 4 * P_7B / 8 - mem["activations"]))


def test_sharding_field_overrides_the_zero_stage_for_fsdp():
    # HF --fsdp full_shard: no ZeRO stage, parallel.sharding "parameters": sharded as ZeRO-3
    hf = LLAMA2_7B.replace(zero_stage=None, sharding="parameters")
    assert memory_bytes(hf, count_params(hf), 4)["weights"] == pytest.approx(2 * P_7B / 8 + 2 * L_7B)


def test_full_shard_all_gathers_every_micro_batch():
    # ZeRO-3 / FSDP gathers the weights forward and backward for every micro-batch: more DP traffic per
    # step than the distributed optimizer's one reduce-scatter and all-gather
    fsdp = LLAMA3_8B.replace(distributed_optimizer=True, megatron_fsdp=True, sharding="parameters")
    dist_opt = LLAMA3_8B.replace(distributed_optimizer=True)
    assert estimate(fsdp).time_s["dp"] > estimate(dist_opt).time_s["dp"]
