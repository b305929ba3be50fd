"""Memory per GPU against formula terms worked out by hand, and against Megatron's own formula."""

import pytest
from plint.cost import ModelInput, count_params
from plint.cost.memory import memory_bytes

# A small GPT: h=1024, 4 layers, 16 heads, f=4h, LayerNorm, biases, learned positions, tied embeddings.
SMALL = ModelInput(num_layers=4, hidden_size=1024, num_attention_heads=16, seq_length=1024, vocab_size=50304,
                   max_position_embeddings=1024, micro_batch=2, global_batch=16, nnodes=1, gpus_per_node=8)
P_SMALL = 4 * (12 * 1024**2 + 13 * 1024) + 50304 * 1024 + 1024 * 1024 + 2 * 1024


def test_small_gpt_model_states():
    assert count_params(SMALL).total == P_SMALL
    mem = memory_bytes(SMALL, count_params(SMALL), 1)
    # bf16 weights, fp32 main grads, fp32 params + Adam: 2 + 4 + 12 bytes per parameter
    assert (mem["weights"], mem["grads"], mem["optimizer"]) == (2 * P_SMALL, 4 * P_SMALL, 12 * P_SMALL)
    sharded = memory_bytes(SMALL.replace(distributed_optimizer=True), count_params(SMALL), 1)
    assert sharded["optimizer"] == pytest.approx(12 * P_SMALL / 8)  # dp = 8 GPUs
    assert sharded["weights"] == 2 * P_SMALL and sharded["grads"] == 4 * P_SMALL


def test_small_gpt_activations():
    h, heads, tokens = 1024, 16, 2 * 1024
    per_token_layer = 10 * h + (4 * h + 4 * h + 4 * heads) + 4 * (4 * h)  # 34h + flash statistics
    logits = 4 * 50304  # fp32 logits per token
    embedding_mask = h  # one byte per element of the embedding output's dropout mask
    expected = tokens * (4 * per_token_layer + logits + embedding_mask)
    assert memory_bytes(SMALL, count_params(SMALL), 8)["activations"] == expected


def test_full_recompute_keeps_layer_inputs_and_one_layer():
    full = SMALL.replace(recompute="full")
    h, tokens = 1024, 2048
    per_token_layer = 34 * h + 64
    expected = tokens * (4 * 2 * h + per_token_layer + 4 * 50304 + h)
    assert memory_bytes(full, count_params(full), 8)["activations"] == expected


def test_zero_stages_shard_more_and_more():
    c = count_params(SMALL)
    stages = [memory_bytes(SMALL.replace(zero_stage=z), c, 1) for z in (1, 2, 3)]
    assert stages[0]["optimizer"] == pytest.approx(16 * P_SMALL / 8)  # DeepSpeed: 2 + 2 + 16 bytes
    assert stages[0]["grads"] == 2 * P_SMALL and stages[1]["grads"] == pytest.approx(2 * P_SMALL / 8)
    assert stages[2]["weights"] < stages[1]["weights"]


def test_agrees_with_megatron_theoretical_formula_for_gpt3_175b():
    """megatron.md sec. 4.2, branch (a) (sequence parallel + selective recompute) and 18 bytes/param.

    Differences, all explained: (1) plint adds flash attention's fp32 softmax statistics (4n bytes per
    token and layer), which the formula ignores; (2) plint keeps LayerNorms and row-parallel biases
    whole on every TP rank (they are replicated), the formula divides everything by tp; (3) plint adds
    one embedding dropout mask per in-flight micro-batch, the formula sbh*pp (the same with m >= pp)
    plus 8sb*pp bytes for the input ids, which plint leaves out."""
    gpt = ModelInput(num_layers=96, hidden_size=12288, num_attention_heads=96, seq_length=2048, vocab_size=51200,
                     tp=8, pp=8, sequence_parallel=True, recompute="selective", micro_batch=1, global_batch=64,
                     nnodes=8, gpus_per_node=8, max_position_embeddings=2048)
    s, b, h, L, tp, pp = 2048, 1, 12288, 96, 8, 8
    megatron_acts = (s * b * h * (18 + 4 * 4) * L + 8 * s * b * pp + s * b * h * pp) / tp
    c = count_params(gpt)
    mem = memory_bytes(gpt, c, 8)
    first = mem  # pp > 1: the first stage has the larger activations here
    assert first["activations"] == pytest.approx(megatron_acts, rel=0.005)
    layer = 12 * h * h + 13 * h
    megatron_states = 18 * (L / pp * layer + 51200 * h) / tp
    plint_states = mem["weights"] + mem["grads"] + mem["optimizer"]
    assert plint_states == pytest.approx(megatron_states, rel=0.01)
