"""Memory per GPU against formula terms worked out by hand (the arithmetic is in each test).

The comparison with Megatron's own theoretical formula is tests/cost/test_megatron_memory_parity.py.
"""

import pytest
from plint.cost import ModelInput, Options, count_params
from plint.cost.memory import (
    activation_bytes_per_token,
    embedding_microbatches,
    memory_bytes,
    stage_memory,
)

# A small GPT: h=1024, 4 layers, 16 heads, f=4h, LayerNorm, biases, learned positions, tied embeddings.
SMALL = ModelInput(
    num_layers=4,
    hidden_size=1024,
    num_attention_heads=16,
    seq_length=1024,
    vocab_size=50304,
    max_position_embeddings=1024,
    micro_batch=2,
    global_batch=16,
    nnodes=1,
    gpus_per_node=8,
)
# per layer 12h^2 + 13h: QKV 3h^2+3h, projection h^2+h, fc1 4h^2+4h, fc2 4h^2+h, two LayerNorms 4h
P_SMALL = 4 * (12 * 1024**2 + 13 * 1024) + 50304 * 1024 + 1024 * 1024 + 2 * 1024
assert P_SMALL == 4 * 12_596_224 + 51_511_296 + 1_048_576 + 2048 == 102_946_816


def test_small_gpt_model_states():
    assert count_params(SMALL).total == P_SMALL
    mem = memory_bytes(SMALL, count_params(SMALL), 1)
    # bf16 weights, fp32 main grads, fp32 params + Adam: 2 + 4 + 12 bytes per parameter
    assert (mem["weights"], mem["grads"], mem["optimizer"]) == (2 * P_SMALL, 4 * P_SMALL, 12 * P_SMALL)
    assert mem["weights"] + mem["grads"] + mem["optimizer"] == 1_853_042_688  # 18 x 102,946,816
    sharded = memory_bytes(SMALL.replace(distributed_optimizer=True), count_params(SMALL), 1)
    assert sharded["optimizer"] == pytest.approx(12 * P_SMALL / 8)  # dp = 8 GPUs: 6 + 12/8 bytes
    assert sharded["weights"] == 2 * P_SMALL and sharded["grads"] == 4 * P_SMALL


def test_distributed_optimizer_shards_over_dp_times_cp():
    # 8 GPUs, cp=2: dp = 4, and DDP's buffers (hence the optimizer shard) span the dp x cp group of 8
    inp = SMALL.replace(cp=2, distributed_optimizer=True)
    assert memory_bytes(inp, count_params(inp), 1)["optimizer"] == pytest.approx(12 * P_SMALL / 8)


def test_bytes_per_parameter_by_precision():
    c = count_params(SMALL)

    def per_param(**kw):
        m = memory_bytes(SMALL.replace(**kw), c, 1)
        return m["weights"] / P_SMALL, m["grads"] / P_SMALL, m["optimizer"] / P_SMALL

    # fp16: 2 + 2 + 12 through forward and backward. The step's fp32 copy of the gradients (4 bytes,
    # 411.8 MB here) comes after the backward freed the activations (708.3 MB, test below): hidden
    assert per_param(precision="fp16") == (2, 2, 12)
    assert per_param(precision="fp32") == (4, 4, 8)  # 16 bytes
    assert per_param(options=Options(grad_reduce_bytes=2)) == (2, 2, 12)  # --grad-reduce-in-bf16
    assert per_param(precision="fp16", distributed_optimizer=True) == (2, 2, 1.5)  # 4 + 12/8
    assert per_param(zero_stage=1) == (2, 2, 1.5)  # DeepSpeed ZeRO-1 over dp 8: 2 + 2 + 12/8


def test_the_step_gradient_copy_counts_where_it_outgrows_the_activations():
    """64 tokens per micro-batch: activations 64 x 446,464 = 28,573,696 bytes (per token as in
    test_small_gpt_activations), less than the fp16 step's fp32 gradient copy, 4 x 102,946,816 =
    411,787,264: the peak is the step, states + copy."""
    short = SMALL.replace(seq_length=64, max_position_embeddings=64, micro_batch=1, precision="fp16")
    c = count_params(short)
    assert c.total == P_SMALL - 960 * 1024  # 64 learned positions instead of 1024
    mem = memory_bytes(short, c, 1)
    assert mem["activations"] == 64 * 446_464 == 28_573_696
    assert mem["optimizer"] + mem["activations"] == 12 * c.total + 4 * c.total
    # bf16 with fp32 gradient buffers makes no copy (.float() of an fp32 tensor is the tensor itself)
    bf16 = memory_bytes(short.replace(precision="bf16"), c, 1)
    assert bf16["optimizer"] == 12 * c.total
    # nor do DeepSpeed's BF16_Optimizer (.grad is its accumulation buffer, counted with the gradients)
    # and Megatron's precision-aware optimizer (decoupled_grad is the gradient buffer's shard)
    bf16_opt = memory_bytes(short.replace(precision="bf16", zero_stage=0, ds_bf16_optimizer_accum_bytes=4.0), c, 1)
    assert (bf16_opt["grads"], bf16_opt["optimizer"]) == (6 * c.total, 12 * c.total / 8)  # sharded over dp 8
    aware = memory_bytes(
        short.replace(precision="bf16", optimizer_bytes=10.0, options=Options(grad_reduce_bytes=2)), c, 1
    )
    assert aware["optimizer"] == 10 * c.total


def test_small_gpt_activations():
    # per token and layer (tp=1, no SP, flash): 10h + Q,K,V,O 4nd+4gd = 8h + lse 4n + MLP 4f
    per_token_layer = 10 * 1024 + 8 * 1024 + 4 * 16 + 4 * 4096
    assert per_token_layer == 34_880
    # + embedding dropout mask h, final-norm and output-layer inputs 2h + 2h, and at the loss the 16-bit
    # logits 2V beside the cross-entropy's fp32 copy 4V (issue 23: the 16-bit logits were not counted)
    per_token = 4 * per_token_layer + 1024 + 4 * 1024 + 6 * 50304
    assert per_token == 139_520 + 1024 + 4096 + 301_824 == 446_464
    assert memory_bytes(SMALL, count_params(SMALL), 8)["activations"] == 2048 * per_token == 914_358_272


def test_no_dropout_masks_at_dropout_zero():
    """--hidden-dropout 0 (every Llama recipe): F.dropout(x, p=0) returns x, so neither the two
    residual dropouts nor the embedding dropout keep a 1-byte mask: 34,880 - 2 x 1024 per token and
    layer, and the embedding's h per token goes."""
    no_dropout = SMALL.replace(hidden_dropout=0.0)
    per_token = 4 * (34_880 - 2 * 1024) + 4 * 1024 + 6 * 50304
    assert memory_bytes(no_dropout, count_params(SMALL), 8)["activations"] == 2048 * per_token
    # without flash attention the core keeps 5 bytes per score, 2 at attention dropout 0
    unfused = SMALL.replace(options=Options(flash_attention=False))
    scores = 16 * 1024  # n * s per token
    full, _ = activation_bytes_per_token(unfused, False)
    none, _ = activation_bytes_per_token(unfused.replace(attention_dropout=0.0), False)
    assert full - none == (5 - 2) * scores


def test_full_recompute_keeps_layer_inputs_and_one_layer():
    full = SMALL.replace(recompute="full", recompute_method="uniform", recompute_num_layers=1)
    # 4 layer inputs of 2h + one layer rebuilt (34,880) + the same embedding/output terms as above
    per_token = 4 * 2 * 1024 + 34_880 + 1024 + 4096 + 6 * 50304
    assert per_token == 350_016
    assert memory_bytes(full, count_params(full), 8)["activations"] == 2048 * per_token == 716_832_768


def test_gqa_swiglu_sequence_parallel_layer_by_hand():
    # Llama-3-8B shapes, tp=8 with SP: h=4096, n=32, g=8, d=128, f=14336
    llama = ModelInput(
        num_layers=32,
        hidden_size=4096,
        num_attention_heads=32,
        num_query_groups=8,
        seq_length=8192,
        vocab_size=128256,
        ffn_hidden_size=14336,
        swiglu=True,
        tp=8,
        sequence_parallel=True,
    )
    # 10h/8 = 5120; (4*32*128 + 4*8*128 + 4*32)/8 = (16384 + 4096 + 128)/8 = 2576; 6f/8 = 10752
    keep, ckpt = activation_bytes_per_token(llama, moe=False)
    assert keep == 5120 + 2576 + 10752 == 18_448
    assert ckpt == 2 * 4096 / 8 == 1024


def test_selective_recompute_drops_the_s_squared_term_without_flash():
    old = SMALL.replace(options=Options(flash_attention=False))
    keep, _ = activation_bytes_per_token(old, moe=False)
    assert keep == 10 * 1024 + 8 * 1024 + 5 * 16 * 1024 + 4 * 4096  # 5*n*s = 81,920 per token
    selective, _ = activation_bytes_per_token(old.replace(recompute="selective"), moe=False)
    assert selective == 10 * 1024 + 8 * 1024 + 4 * 4096 == 34_816


def test_embedding_micro_batches_by_schedule():
    base = SMALL.replace(num_layers=16, pp=4, nnodes=2)
    assert embedding_microbatches(base, 16) == 4  # 1F1B: pp warm-up forwards
    assert embedding_microbatches(base, 2) == 2  # fewer micro-batches than stages
    assert embedding_microbatches(base.replace(vpp=2), 16) == 8  # interleaved: two groups of pp in chunk 0
    assert embedding_microbatches(base.replace(vpp=2), 5) == 5


def test_first_and_last_stage_and_interleaving():
    # 16 layers, pp=4 on 16 GPUs (dp=4), tied embeddings: the last stage holds a copy of the embedding
    inp = SMALL.replace(num_layers=16, pp=4, nnodes=2)
    c = count_params(inp)
    first, last = stage_memory(inp, c, 8, last=False), stage_memory(inp, c, 8, last=True)
    layer = 12 * 1024**2 + 13 * 1024
    assert first["weights"] == 2 * (4 * layer + 50304 * 1024 + 1024 * 1024)  # 4 layers, embedding, positions
    assert last["weights"] == 2 * (4 * layer + 2 * 1024 + 50304 * 1024)  # 4 layers, final norm, output copy
    per_layer = 34_880
    # first: 1F1B keeps pp=4 micro-batches of 4 layers = 16 layer-sets, + 4 embedding masks
    assert first["activations"] == 2048 * (16 * per_layer + 4 * 1024)
    # last: one micro-batch of 4 layers + the output terms
    assert last["activations"] == 2048 * (4 * per_layer + 4 * 1024 + 6 * 50304)
    inter = inp.replace(vpp=2)
    # interleaved rank 0: (pp-1)*2 + (v-1)*pp + 1 = 6 + 4 + 1 = 11 chunks of 2 layers = 22, 8 masks
    assert stage_memory(inter, c, 8, last=False)["activations"] == 2048 * (22 * per_layer + 8 * 1024)
    # interleaved last rank: (v-1)*pp + 1 = 5 chunks of 2 layers
    assert stage_memory(inter, c, 8, last=True)["activations"] == 2048 * (10 * per_layer + 4 * 1024 + 6 * 50304)


def test_experts_shard_over_ep_times_etp_and_expert_data_parallel():
    moe = ModelInput(
        num_layers=2,
        hidden_size=256,
        num_attention_heads=4,
        seq_length=256,
        vocab_size=1024,
        ffn_hidden_size=512,
        swiglu=True,
        normalization="RMSNorm",
        add_bias_linear=False,
        num_experts=8,
        moe_topk=2,
        moe_ffn_hidden_size=128,
        tp=2,
        ep=4,
        etp=1,
        sequence_parallel=True,
        distributed_optimizer=True,
        nnodes=1,
        gpus_per_node=8,
        options=Options(position_embedding="rope"),
    )
    c = count_params(moe)
    expert = 3 * 256 * 128  # gate, up, down
    # 8 experts x 2 layers over ep*etp = 4 GPUs; expert data parallel = 8 / (pp*ep*etp) = 2
    local_experts = 2 * 8 * expert / 4
    attention = 256 * 3 * 256 + 256 * 256  # MHA QKV + projection, halved by tp below
    replicated = 2 * (2 * 256 + 256 * 8) + 256  # per layer two RMSNorms and the router; final norm
    dense = 2 * attention / 2 + replicated + 1024 * 256 / 2  # + embedding / tp (tied, pp = 1)
    mem = memory_bytes(moe, c, 1)
    assert mem["weights"] == 2 * (dense + local_experts)
    # dense optimizer over dp*cp = 8/2 = 4, experts over 2
    assert mem["optimizer"] == pytest.approx(12 * dense / 4 + 12 * local_experts / 2)


def test_zero_stages_shard_more_and_more():
    c = count_params(SMALL)
    stages = [memory_bytes(SMALL.replace(zero_stage=z), c, 1) for z in (1, 2, 3)]
    # fp32 master and Adam, 12 bytes, over dp 8; the step's fp32 gradient partition (4/8 bytes) is
    # created after the backward freed the activations and dropped after the step (stage_1_and_2.py)
    assert stages[0]["optimizer"] == pytest.approx(12 * P_SMALL / 8)
    assert stages[0]["grads"] == 2 * P_SMALL and stages[1]["grads"] == pytest.approx(2 * P_SMALL / 8)
    assert stages[2]["weights"] < stages[1]["weights"]


def test_deepspeed_bf16_optimizer_shards_like_zero_1_and_keeps_an_accumulation_buffer():
    """BF16_Optimizer (bf16, ZeRO 0, pipeline engine): bf16 weights and gradients, a gradient
    accumulation buffer of the accumulation dtype beside them, fp32 master and Adam over dp 8."""
    c = count_params(SMALL)
    for accum in (2.0, 4.0):
        mem = memory_bytes(SMALL.replace(zero_stage=0, ds_bf16_optimizer_accum_bytes=accum), c, 1)
        assert (mem["weights"], mem["grads"]) == (2 * P_SMALL, (2 + accum) * P_SMALL)
        assert mem["optimizer"] == pytest.approx(12 * P_SMALL / 8)


def test_zero_shards_over_the_sequence_data_parallel_group():
    # DeepSpeed-Ulysses sp 4 (costed as cp) on 8 GPUs: dp = 2, and ZeRO partitions over dp x sp = 8
    c = count_params(SMALL)
    ulysses = memory_bytes(SMALL.replace(cp=4, zero_stage=3), c, 1)
    assert ulysses["optimizer"] == pytest.approx(12 * P_SMALL / 8)
    # the shard over dp x sp, plus the largest module's gathered 16-bit gradient (the word embedding,
    # 50304 x 1024): DeepSpeed's estimator counts 4L for that module's weights and gradients (the
    # expectation was 2P/8 alone before the gathered buffers were costed)
    assert ulysses["grads"] == pytest.approx(2 * P_SMALL / 8 + 2 * 50304 * 1024)


@pytest.mark.parametrize(
    ("schedule", "micro_batches"), [("gpipe", 8), ("1f1b", 4), ("zb-h1", 4), ("zb-h2", 7), ("dualpipe", 5)]
)
def test_first_stage_micro_batches_in_flight_by_schedule(schedule, micro_batches):
    # 16 layers, pp = 4, m = 8: GPipe keeps all 8, 1F1B and ZB-H1 pp = 4, ZB-H2 2pp-1 = 7, DualPipe pp+1 = 5
    inp = SMALL.replace(num_layers=16, pp=4, nnodes=2, options=Options(pipeline_schedule=schedule))
    first = stage_memory(inp, count_params(inp), 8, last=False)
    assert first["activations"] == 2048 * micro_batches * (4 * 34_880 + 1024)


def test_gpipe_last_stage_keeps_every_micro_batch():
    inp = SMALL.replace(num_layers=16, pp=4, nnodes=2, options=Options(pipeline_schedule="gpipe"))
    last = stage_memory(inp, count_params(inp), 8, last=True)
    # all 8 forwards before the first backward: 8 x (4 layers + final-norm/output inputs), the fp32 softmax
    # (4V) the loss saved for the 7 earlier ones and the 8th's loss peak (6V: its 16-bit logits + fp32 copy)
    assert last["activations"] == 2048 * (8 * (4 * 34_880 + 4 * 1024) + (7 * 4 + 6) * 50304)
