"""Memory terms of model families beyond the GPT decoder (issue 23), each against a number worked out by hand:
T5's encoder-decoder (cross-attention parameters and activations, the decoder's own sequence) and the hybrid
stack's Mamba, attention and MLP layers; multi-latent attention; multi-token prediction layers; what
--recompute-modules frees."""

import pytest
from plint.cost import ModelInput, Options, count_params
from plint.cost.memory import (
    activation_bytes_per_token,
    encoder_decoder_layer_bytes,
    hybrid_layer_bytes,
    mamba_layer_bytes,
    mla_attention_bytes,
    mtp_layer_bytes,
    selective_module_savings,
    stage_memory,
)
from plint.cost.layout_estimate import cost_input, layout_estimate
from plint.cost.params import mamba_dims, mamba_layer_params, mla_params
from plint.reading.read import read_path


def _layout(tmp_path, launch: str):
    """The layout plint reads from a one-line launch."""
    script = tmp_path / "launch.sh"
    script.write_text(launch)
    return read_path(script, gpu="h100-sxm").layouts[0]


# h=64, 4 heads of d=16 (no GQA), f=256, two layers, encoder 32 tokens, decoder 8, V=1000 (padded to 1024)
T5_SMALL = ModelInput(
    num_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    seq_length=32,
    vocab_size=1000,
    ffn_hidden_size=256,
    max_position_embeddings=32,
    encoder_decoder=True,
    decoder_seq_length=8,
    gpus_per_node=1,
)


def test_t5_layer_pair_parameters():
    """A GPT layer here: attention 64x192 + 64x64 + 192 (QKV bias) = 16,576 sharded, 64 (proj bias) + 2 x 128
    (two LayerNorms) = 320 replicated; MLP 64x256 + 256x64 + 256 = 33,024 sharded, 64 replicated.
    The decoder's cross-attention: q 64x64, kv 64x128, proj 64x64, biases 64 + 128 = 16,576 sharded, proj bias
    64 + the pre-cross-attention LayerNorm 128 = 192 replicated. An encoder and a decoder layer:
    2 x 49,600 + 16,576 = 115,776 sharded, 2 x 384 + 192 = 960 replicated."""
    c = count_params(T5_SMALL)
    assert (c.dense_layer_tp, c.dense_layer_rep) == (115_776, 960)
    assert c.final_norm == 2 * 128  # the encoder's and the decoder's final LayerNorm
    assert c.output_bias == 1024  # T5LMHead's bias over the padded vocabulary (tied output layer)
    # embedding 1024 x 64, learned positions 32 x 64
    assert c.total == 2 * 116_736 + 65_536 + 2048 + 1024 + 256 == 302_336


def test_t5_activations_per_encoder_token_flash():
    """Per encoder token: the encoder layer 2,192 (10h + 8nd + 4n + 4f); the decoder's, a quarter as many tokens,
    2,192 + the cross-attention's 5h + 4nd + 4n = 592; K and V of every encoder token: 4gd = 256.
    2,192 + 0.25 x 2,784 + 256 = 3,144. Full recompute keeps each layer's inputs: 2h x (1 + 0.25) = 160."""
    full, ckpt = activation_bytes_per_token(T5_SMALL, False)
    assert full == 2192
    assert encoder_decoder_layer_bytes(T5_SMALL, full, ckpt) == (3144, 160)


def test_t5_activations_unfused_attention_scale_with_each_sequence():
    """Unfused attention keeps 5 B per score: the encoder's 32 keys (5 x 4 x 32 = 640 per token), the decoder's
    own 8 (160) and its cross-attention's 32 (640): 2,816 + 0.25 x (2,336 + 1,216) + 256 = 3,960."""
    unfused = T5_SMALL.replace(options=Options(flash_attention=False))
    full, ckpt = activation_bytes_per_token(unfused, False)
    assert full == 2816
    assert encoder_decoder_layer_bytes(unfused, full, ckpt)[0] == 3960


def test_t5_stage_activations_use_the_decoder_tokens_for_the_loss():
    """One micro-batch of 32 encoder and 8 decoder tokens: two layer pairs (2 x 3,144 x 32 = 201,216), the
    embedding's dropout mask over both sequences (40 x 64 = 2,560), the decoder's final norm and output-layer
    inputs (8 x 4 x 64 = 2,048), its logits at the loss (8 x 1,024 x 6 = 49,152) and the encoder's final norm's
    input and output (32 x 4 x 64 = 8,192): 263,168 bytes."""
    acts = stage_memory(T5_SMALL, count_params(T5_SMALL), 1, last=False)["activations"]
    assert acts == pytest.approx(201_216 + 2_560 + 2_048 + 49_152 + 8_192) == 263_168


def test_t5_launch_is_read_as_an_encoder_decoder(tmp_path):
    """examples/t5/pretrain_t5.py with --encoder-num-layers and no --num-layers: validate_args takes the encoder's
    count as num_layers; the decoder's sequence comes from --decoder-seq-length. Before: no estimate at all."""
    layout = _layout(
        tmp_path,
        "torchrun --nproc-per-node 8 examples/t5/pretrain_t5.py --encoder-num-layers 12 "
        "--decoder-num-layers 12 --hidden-size 768 --num-attention-heads 12 "
        "--encoder-seq-length 512 --decoder-seq-length 128 --max-position-embeddings 512 "
        "--micro-batch-size 4 --global-batch-size 32 --vocab-size 29184 --bf16\n",
    )
    assert layout.value("model.num_layers") == 12
    inp = cost_input(layout)
    assert inp is not None and inp.encoder_decoder and (inp.seq_length, inp.decoder_seq_length) == (512, 128)


# h=64, 4 heads of 16, f=256; a Mamba layer (head dim 16, 2 groups, state 8: d_inner 128, 8 heads), an attention
# layer and an MLP layer
HYBRID_SMALL = ModelInput(
    num_layers=3,
    hidden_size=64,
    num_attention_heads=4,
    seq_length=32,
    vocab_size=1000,
    ffn_hidden_size=256,
    hybrid_pattern="M*-",
    mamba_head_dim=16,
    mamba_num_groups=2,
    mamba_state_dim=8,
    gpus_per_node=1,
)


def test_mamba_layer_parameters():
    """in_proj 64 x (2 x 128 + 2 x 2 x 8 + 8) = 18,944; conv1d 160 channels x (4 + 1) = 800; dt_bias, A_log, D
    3 x 8 = 24; the gated norm 128; out_proj 128 x 64 = 8,192: 28,088 split over TP; the fused LayerNorm 128."""
    assert mamba_dims(HYBRID_SMALL) == (128, 8, 2, 8)
    assert mamba_layer_params(HYBRID_SMALL, 128) == (28_088, 128)


def test_hybrid_stack_parameters_average_the_pattern():
    """Mamba 28,088 + attention 16,576 + MLP 33,024 = 77,688 sharded over three layers; replicated: 128 + (64
    proj bias + 128 norm) + (64 fc2 bias + 128 norm) = 512."""
    c = count_params(HYBRID_SMALL)
    assert c.dense_layer_tp * 3 == pytest.approx(77_688)
    assert c.dense_layer_rep * 3 == pytest.approx(512)
    assert c.total == pytest.approx(77_688 + 512 + 1024 * 64 + 2 * 64)  # + embedding (V padded to 1024) + final norm


def test_hybrid_layer_activations():
    """Mamba per token: norm and in_proj inputs 4h + mask h = 320, zxBCdt 2 x 296 = 592, out_x, the norm's and
    out_proj's inputs 6 x 128 = 768: 1,680. Attention layer: the dense layer's 2,192 less the MLP half (5h + 4f =
    1,344): 848. Mean over M, *, -: (1,680 + 848 + 1,344) / 3 = 3,872 / 3."""
    assert mamba_layer_bytes(HYBRID_SMALL) == 1680
    dense, _ = activation_bytes_per_token(HYBRID_SMALL, False)
    assert dense == 2192
    assert hybrid_layer_bytes(HYBRID_SMALL, dense) == pytest.approx(3872 / 3)


def test_hybrid_launch_is_costed_when_its_pattern_is_known(tmp_path):
    """A pattern of Mamba, attention and MLP layers loses the 'not modelled' note, for memory and (issue 24) for
    the step time too; one with MoE layers ('E') keeps it. Before: every hybrid launch was 'not modelled'."""

    def notes(pattern: str) -> list[str]:
        layout = _layout(
            tmp_path,
            "torchrun --nproc-per-node 8 pretrain_hybrid.py --hidden-size 1024 "
            f"--num-attention-heads 16 --hybrid-layer-pattern '{pattern}' --seq-length 1024 "
            "--max-position-embeddings 1024 --micro-batch-size 4 --global-batch-size 32 "
            "--vocab-size 50304 --bf16\n",
        )
        est = layout_estimate(layout)
        assert est is not None
        return [n for n in est.notes if "not modelled" in n]

    assert notes("M-M*-M-") == []
    assert any(n.startswith("not modelled: Mamba layers") for n in notes("MEM*EM"))


# h=64, 4 heads, f=256; MLA with q rank 32, kv rank 16, qk head 8, rope head 4, v head 8
MLA_SMALL = ModelInput(
    num_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    seq_length=32,
    vocab_size=1000,
    ffn_hidden_size=256,
    multi_latent_attention=True,
    q_lora_rank=32,
    kv_lora_rank=16,
    qk_head_dim=8,
    qk_pos_emb_head_dim=4,
    v_head_dim=8,
    gpus_per_node=1,
)


def test_mla_parameters():
    """Split over TP: q_up 32 x 4 x (8 + 4) = 1,536, kv_up 16 x 4 x (8 + 8) = 1,024, linear_proj 4 x 8 x 64 = 2,048:
    4,608. On every TP rank: q_down 64 x 32 = 2,048, kv_down 64 x (16 + 4) = 1,280: 3,328; with --qk-layernorm the
    fused LayerNorms over the two latents, 2 x (32 + 16) = 96 more. The layer adds the projection's bias (64) and
    its two LayerNorms (256)."""
    assert mla_params(MLA_SMALL, 2) == (4608, 3328)
    assert mla_params(MLA_SMALL.replace(qk_layernorm=True), 2) == (4608, 3424)
    c = count_params(MLA_SMALL)
    assert (c.dense_layer_tp, c.dense_layer_rep) == (4608 + 33_024, 3328 + 64 + 256 + 64)


def test_mla_activations():
    """Per token: the latents 2 x (32 + 16) = 96, contiguous query and key 2 x 2 x 4 x 12 = 192, value and the
    output 2 x 2 x 4 x 8 = 128: 416 (with --qk-layernorm the latents twice: 512). The layer: 10h + 416 + 4n + 4f
    = 640 + 416 + 16 + 1,024 = 2,096."""
    assert mla_attention_bytes(MLA_SMALL) == 416
    assert mla_attention_bytes(MLA_SMALL.replace(qk_layernorm=True)) == 512
    assert activation_bytes_per_token(MLA_SMALL, False)[0] == 2096


def test_mla_launch_is_costed(tmp_path):
    """--multi-latent-attention and its ranks are read, and the launch no longer says 'not modelled'."""
    layout = _layout(
        tmp_path,
        "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 "
        "--num-attention-heads 8 --multi-latent-attention --q-lora-rank 192 --kv-lora-rank 64 "
        "--qk-head-dim 16 --qk-pos-emb-head-dim 8 --v-head-dim 16 --seq-length 1024 "
        "--max-position-embeddings 1024 --micro-batch-size 4 --global-batch-size 32 "
        "--vocab-size 50257 --bf16\n",
    )
    inp = cost_input(layout)
    assert inp.multi_latent_attention and (inp.q_lora_rank, inp.kv_lora_rank, inp.v_head_dim) == (192, 64, 16)
    assert not [n for n in layout_estimate(layout).notes if "not modelled" in n]


def test_mtp_layer_parameters_and_activations():
    """One MTP layer beside a dense model (h=64, 4 heads, f=256, V padded to 1,024): eh_proj 2 x 64 x 64 = 8,192 and
    the layer's 49,600 split over TP; enorm, hnorm and final_layernorm 3 x 128 and the layer's 384 replicated. Per
    token at the loss: enorm's input 2h, the embedding's mask h, eh_proj's input 4h, the final norm's and output
    layer's inputs 4h (11h = 704), the layer's 2,192, and the MTP loss's saved fp32 softmax 4 x 1,024: 6,992."""
    mtp = T5_SMALL.replace(encoder_decoder=False, decoder_seq_length=None, mtp_num_layers=1)
    c = count_params(mtp)
    assert c.mtp_dense == (8192 + 49_600, 3 * 128 + 384) and c.mtp_experts == 0
    assert c.total == count_params(mtp.replace(mtp_num_layers=0)).total + 57_792 + 768
    assert mtp_layer_bytes(mtp, c, 4.0) == 704 + 2192 + 4096 == 6992
    # the one stage holds it: 32 tokens more of it than without
    with_mtp = stage_memory(mtp, c, 1, last=False)["activations"]
    assert (
        with_mtp
        - stage_memory(mtp.replace(mtp_num_layers=0), count_params(mtp.replace(mtp_num_layers=0)), 1, last=False)[
            "activations"
        ]
        == 32 * 6992
    )


DENSE_SMALL = T5_SMALL.replace(encoder_decoder=False, decoder_seq_length=None)


def test_recompute_modules_of_a_dense_layer():
    """Selective recompute of "mlp" keeps the MLP's input only: fc1's input 2h = 128 and the MLP's 4f = 1,024 go,
    2,192 - 1,152 = 1,040. Without "core_attn" in the list the unfused scores stay (5 x 4 x 32 = 640 per token):
    2,816 - 1,152 = 1,664; with it 1,024."""
    mlp = DENSE_SMALL.replace(recompute="selective", recompute_modules=("core_attn", "mlp"))
    assert selective_module_savings(mlp, False, 4) == 1152
    assert activation_bytes_per_token(mlp, False)[0] == 1040
    unfused = mlp.replace(options=Options(flash_attention=False))
    assert activation_bytes_per_token(unfused.replace(recompute_modules=("mlp",)), False)[0] == 1664
    assert activation_bytes_per_token(unfused, False)[0] == 1024
    assert selective_module_savings(mlp.replace(recompute=None), False, 4) == 0.0  # only under selective granularity


def test_recompute_modules_of_moe_and_mla_layers():
    """MoE (4 experts of 128, top-2, GELU): "moe_act" drops the activation output and the probability product per
    routed copy, 2 x (2 + 2) x 128 = 1,024; "layernorm" the pre-MLP norm's output, 2h = 128; "moe" all the routed
    copies (2 x (2h + 6 x 128) = 1,792) and the router's fp32 logits (4 x 4 = 16). MLA (MLA_SMALL): "mla_up_proj"
    drops query and key, 2 x 2 x 4 x 12 = 192, and the value, 2 x 4 x 8 = 64; "layernorm" the input norm's output,
    128."""
    moe = DENSE_SMALL.replace(num_experts=4, moe_topk=2, moe_ffn_hidden_size=128, recompute="selective")
    assert selective_module_savings(moe.replace(recompute_modules=("moe_act",)), True, 4) == 1024
    assert selective_module_savings(moe.replace(recompute_modules=("moe_act", "layernorm")), True, 4) == 1152
    assert selective_module_savings(moe.replace(recompute_modules=("moe",)), True, 4) == 1792 + 16
    mla = MLA_SMALL.replace(recompute="selective")
    assert selective_module_savings(mla.replace(recompute_modules=("mla_up_proj",)), False, 4) == 256
    assert selective_module_savings(mla.replace(recompute_modules=("layernorm",)), False, 4) == 128


def test_recompute_modules_are_read_and_unknown_ones_stay_unmodelled(tmp_path):
    from plint.cost.layout_estimate import unmodelled_features

    def launch(modules: str):
        return _layout(
            tmp_path,
            "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 "
            "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
            "--micro-batch-size 4 --global-batch-size 32 --vocab-size 50257 --bf16 "
            f"--recompute-granularity selective --recompute-modules {modules}\n",
        )

    known = launch("mlp moe_act")
    assert cost_input(known).recompute_modules == ("mlp", "moe_act") and not unmodelled_features(known)
    assert unmodelled_features(launch("core_attn mhc")) == ["selective recompute of modules plint does not cost (mhc)"]


def test_moe_layer_recompute_adds_the_moe_module(tmp_path):
    """--moe-layer-recompute: selective recompute with "moe" beside the default core_attn (TransformerConfig from
    core 0.12), so the estimate frees the routed copies the switch drops."""
    layout = _layout(
        tmp_path,
        "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 "
        "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
        "--micro-batch-size 4 --global-batch-size 32 --vocab-size 50257 --bf16 "
        "--num-experts 8 --moe-layer-recompute\n",
    )
    inp = cost_input(layout)
    assert (inp.recompute, inp.recompute_modules) == ("selective", ("core_attn", "moe"))
