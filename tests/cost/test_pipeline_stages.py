"""plint.cost.pipeline_stages: Megatron's split of the layers over pipeline ranks, and its cost.

Hand-worked numbers, each against Megatron-LM core_v0.19's get_num_layers_to_build
(megatron/core/transformer/transformer_block.py) and TransformerConfig.__post_init__'s checks."""

from plint.cost import estimate
from plint.cost import pipeline_stages as ps
from plint.cost.rank_load import stage_layers
from plint.reading.sources.megatron import layout_stages
from plint.planning.plan import base_input


def test_account_for_embedding_and_loss_takes_a_layer_from_each_end():
    # Qwen3-235B's 94 layers on pp 8, vpp 4: (94 + 2) / 8 = 12 per rank, 3 per virtual stage; rank 0's
    # first virtual stage builds 2 (the embedding is the third), rank 7's last builds 2 (the loss)
    split = ps.account_for(94, 8, 4, embedding=True, loss=True)
    assert split.per_rank() == (11, 12, 12, 12, 12, 12, 12, 11)
    assert split.layers[0] == (2, 3, 3, 3) and split.layers[-1] == (3, 3, 3, 2)


def test_account_for_rejects_what_megatron_rejects():
    assert isinstance(ps.account_for(94, 8, None, embedding=True, loss=False), str)  # 95 % 8
    assert isinstance(ps.account_for(94, 8, 8, embedding=True, loss=True), str)  # 12 % 8


def test_first_last_stages():
    split = ps.first_last(61, 8, None, 7, 6)
    assert split.per_rank() == (7, 8, 8, 8, 8, 8, 8, 6)
    assert isinstance(ps.first_last(61, 8, 2, 7, 6), str)  # 7 layers on rank 0 do not divide over vpp 2
    assert ps.first_last(62, 8, 2, 6, 8).layers[0] == (3, 3)  # 48 middle layers: 8 per rank, 4 per vstage


def test_layout_string_stages_go_round_robin_over_ranks():
    # 'Et|(tt|)*30mL' on pp 16: 32 stages, vpp 2; rank 0 holds stage 0 (E t) and stage 16 (t t): 3 layers;
    # rank 15 holds stage 15 (t t) and stage 31 (m L): 2 layers and the MTP layer
    stages, _ = layout_stages("Et|(tt|)*30mL")
    split = ps.from_layout(stages, 16, 61)
    assert split.vpp == 2 and split.per_rank()[0] == 3 and split.per_rank()[-1] == 2
    assert split.mtp[-1] == 1 and sum(split.per_rank()) == 61
    assert isinstance(ps.from_layout(stages, 16, 60), str)  # 61 't' for a 60-layer model
    assert isinstance(ps.from_layout(stages, 5, 61), str)  # 32 stages over pp 5
    assert isinstance(ps.from_layout(["tE", "L"], 2, 1), str)  # the embedding must come first


def test_balanced_layout_for_61_layers_on_32_virtual_stages():
    text = ps.balanced_layout(61, 8, 4)
    assert ps.compact(text) == "Et|(tt|)*30L"
    stages, _ = layout_stages(ps.compact(text))
    assert stages == text.split("|")
    assert ps.from_layout(stages, 8, 61).per_rank() == (7, 8, 8, 8, 8, 8, 8, 6)
    assert ps.balanced_layout(64, 8, 4) is None  # even already


def test_the_slowest_rank_decides_the_micro_batch():
    # an even stage of 4 layers costs 4 s of layers (1 s a layer), the head 2 s. Ranks (3, 5, 4, 4): the
    # last's 4 + 2 = 6 s beats the second's 5 s, so the last decides at the even scale with the head;
    # (3, 5, 4, 2): the second rank's 5 layers (5/4 of the even stage), no head
    assert ps.slowest_rank((3, 5, 4, 4), 4, 4.0, 2.0) == (1.0, True)
    assert ps.slowest_rank((3, 5, 4, 2), 4, 4.0, 2.0) == (1.25, False)
    assert ps.slowest_rank(None, 4, 4.0, 2.0) == (1.0, True)


LLAMA_LIKE = {
    "num_layers": 30,
    "hidden_size": 4096,
    "ffn_hidden_size": 11008,
    "num_attention_heads": 32,
    "seq_length": 4096,
    "vocab_size": 32000,
    "swiglu": True,
    "normalization": "RMSNorm",
    "untie_embeddings": True,
    "add_bias_linear": False,
}


def test_an_uneven_pipeline_is_costed_by_its_own_ranks():
    """30 layers on pp 4 with the embedding and loss counted: 32 / 4 = 8 per rank, the ends 7. The memory of
    the first rank is that of 7 layers, and the step is no slower than 8 even layers per rank (32 layers)."""
    base = base_input(LLAMA_LIKE, 1, 8, "h100-sxm", None, 64).replace(tp=2, pp=4, micro_batch=1)
    split = ps.account_for(30, 4, None, embedding=True, loss=True)
    uneven = base.replace(pipeline_stage_layers=split.per_rank())
    assert stage_layers(uneven, last=False) == 7 and stage_layers(uneven, last=True) == 7
    as_if_32 = estimate(base.replace(num_layers=32))
    own = estimate(uneven)
    assert own.step_time_s < as_if_32.step_time_s  # the last rank runs 7 layers and the head, not 8
    # the middle ranks' 8 layers: at least the 8-layer even stage without the head
    assert own.step_time_s > estimate(base.replace(num_layers=28)).step_time_s


def test_expert_tensor_parallelism_pays_the_dispatchers_gather():
    """Issue 24 (the planner now searches etp): with etp > 1 the all-to-all dispatcher all-gathers the tokens
    it received over the expert-TP group and reduce-scatters them in the combine (Megatron core_v0.19
    token_dispatcher.py); with ep 1 there is no all-to-all, so before this the expert communication was 0."""
    moe = {**LLAMA_LIKE, "num_experts": 8, "moe_topk": 2, "moe_ffn_hidden_size": 2048}
    base = base_input(moe, 1, 8, "h100-sxm", None, 64).replace(tp=2, ep=1, micro_batch=1, sequence_parallel=True)
    assert estimate(base.replace(etp=1)).time_s["ep"] == 0.0
    assert estimate(base.replace(etp=2)).time_s["ep"] > 0.0


def test_an_interleaved_rank_holds_its_warm_up_chunks_own_layers():
    """Megatron's functional test gpt3_mcore_te_tp1_pp4_vp2_account_for_embedding_loss_in_pipeline_split: 6
    layers, pp 4, vpp 2, both flags: (6 + 2) / 4 = 2 per rank, 1 per virtual stage; rank 0 is (0, 1), rank 3
    (1, 0). Micro-batches go to chunks in groups of pp = 4. The last rank's peak is its (v-1)*4 = 4 warm-up
    forwards, all of chunk 0 (1 layer each), and the forward of chunk 1 in progress (0 layers): 4 layer
    sets. Scaling the even share (5 forwards of 6/8 layers) by the rank's 1 of 1.5 layers gave 2.5, and the
    measured peak was 13.5% over the estimate. Rank 0 (m = 4: 8 chunk-forwards a step, under its 11 of warm-up):
    4 of chunk 0 (the embedding alone) and 4 of chunk 1, 4 layer sets, as the even share gives."""
    from plint.cost.rank_load import _layers_in_flight
    from plint.cost.model_input import ModelInput

    split = ps.account_for(6, 4, 2, embedding=True, loss=True)
    assert split.layers == ((0, 1), (1, 1), (1, 1), (1, 0))
    inp = ModelInput(
        num_layers=6,
        hidden_size=512,
        num_attention_heads=8,
        seq_length=1024,
        vocab_size=32000,
        pp=4,
        vpp=2,
        pipeline_stage_layers=split.per_rank(),
        pipeline_chunk_layers=split.layers,
    )
    assert _layers_in_flight(inp, 4, last=True) == 4.0
    assert _layers_in_flight(inp, 4, last=False) == 4.0
    assert _layers_in_flight(inp.replace(pipeline_chunk_layers=None), 4, last=True) == 2.5  # the old scaling
