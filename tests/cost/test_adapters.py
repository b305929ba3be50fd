"""LoRA / QLoRA memory (plint.cost.adapters): hand-worked numbers."""

from plint.cost import ModelInput, count_params
from plint.cost.adapters import adapter_memory, trainable_params

LLAMA2_13B = dict(
    num_layers=40,
    hidden_size=5120,
    num_attention_heads=40,
    seq_length=2048,
    vocab_size=32000,
    ffn_hidden_size=13824,
    swiglu=True,
    normalization="RMSNorm",
    add_bias_linear=False,
    untie_embeddings=True,
    make_vocab_size_divisible_by=1,
)


def test_trainable_parameters_of_rank_128_on_every_linear_layer():
    # per layer: q, k, v, o each (5120 + 5120), gate and up (5120 + 13824), down (13824 + 5120)
    per_layer = 4 * 10240 + 3 * 18944
    assert trainable_params(ModelInput(**LLAMA2_13B, lora_rank=128)) == 128 * per_layer * 40  # 500.7M


def test_only_the_adapters_have_gradients_and_optimizer_states():
    inp = ModelInput(**LLAMA2_13B, lora_rank=128)
    c = count_params(inp)
    full = {"weights": 2.0 * c.total, "grads": 2.0 * c.total, "optimizer": 12.0 * c.total, "activations": 1.0}
    lora = adapter_memory(inp, c, full)
    share = trainable_params(inp) / c.total
    assert lora["grads"] == full["grads"] * share and lora["optimizer"] == full["optimizer"] * share
    assert lora["activations"] == 1.0  # the backward still runs through every frozen layer
    assert lora["weights"] == 2.0 * (c.total + trainable_params(inp))  # frozen 16-bit weights plus the adapters


def test_qlora_quantizes_the_frozen_linear_weights_only():
    inp = ModelInput(**LLAMA2_13B, lora_rank=64, frozen_weight_bits=4)
    c = count_params(inp)
    full = {"weights": 2.0 * c.total, "grads": 0.0, "optimizer": 0.0, "activations": 0.0}
    linear = 40 * (4 * 5120 * 5120 + 3 * 5120 * 13824)  # the layers' linear weights: 4-bit NF4 + absmax
    expected = linear * (0.5 + 4 / 64) + (c.total - linear) * 2.0 + trainable_params(inp) * 2.0
    assert abs(adapter_memory(inp, c, full)["weights"] - expected) < 1.0


def test_full_fine_tuning_is_unchanged():
    inp = ModelInput(**LLAMA2_13B)
    mem = {"weights": 1.0, "grads": 2.0, "optimizer": 3.0, "activations": 4.0}
    assert adapter_memory(inp, count_params(inp), mem) == mem
