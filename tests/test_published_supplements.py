"""benchmarks/published_supplements.py: what a run's publication states beyond the calibration data is one set of
facts, which the calibration predicts with and the run's launch under fixtures/good states, so plint reading the
launch and the calibration see the same run."""

from __future__ import annotations

import pytest
import yaml

from fixture_paths import ROOT
from plint.checking.check import check_paths
from plint.cost import ModelInput
from tests.test_corpus_script import _load

calibrate = _load("calibrate")
supplements = _load("published_supplements")

RUNS = {run["id"]: run for run in yaml.safe_load(calibrate.DEFAULT_DATA.read_text())}
SUPPLEMENTED = sorted(set(supplements.PUBLISHED_SCRIPT_VALUES) | set(supplements.PUBLISHED_RECIPE_FLAGS))
# a run's launch: fixtures/good, or fixtures/advised for a run whose layout plint rightly advises against today
LAUNCHES = {
    run_id: folder / run_id / "launch.sh"
    for folder in (ROOT / "fixtures" / "good", ROOT / "fixtures" / "advised")
    for run_id in SUPPLEMENTED
    if (folder / run_id / "launch.sh").exists()
}
WRITTEN = sorted(LAUNCHES)


def facts(inp: ModelInput) -> dict:
    """The fields the supplements set."""
    return {
        "micro_batch": inp.micro_batch,
        "vpp": inp.vpp,
        "hidden_dropout": inp.hidden_dropout,
        "attention_dropout": inp.attention_dropout,
        "recompute": inp.recompute,
        "recompute_modules": inp.recompute_modules if inp.recompute == "selective" else None,
        "grad_reduce_bytes": inp.options.grad_reduce_bytes,
        "moe_layer_freq": inp.moe_layer_freq,  # Llama 4 Maverick's alternating MoE layers
        "add_bias_linear": inp.add_bias_linear,  # gpt-oss keeps its biases; the other gated models have none
        "gated": inp.swiglu,
        "activation_clamp": inp.activation_clamp,  # gpt-oss's clamped quick-GeGLU
    }


def test_every_supplemented_run_is_in_the_calibration_data():
    assert set(SUPPLEMENTED) <= set(RUNS)
    assert len(WRITTEN) >= 12


@pytest.mark.parametrize("run_id", WRITTEN)
def test_the_calibration_and_the_fixture_launch_state_the_same_run(run_id):
    inp, why = calibrate.to_input(RUNS[run_id])
    assert inp is not None, why
    predicted = supplements.with_publication(run_id, inp)
    (result,) = check_paths([LAUNCHES[run_id]])
    (layout,) = result.layouts
    read = ModelInput.from_layout(layout)
    assert read is not None
    assert facts(read) == facts(predicted)


def test_recipe_flags_change_the_calibration_input():
    """Before the shared module the calibration ignored the recipes: dropout 0.1, fp32 gradients, no recompute."""
    inp, _ = calibrate.to_input(RUNS["dgxc_llama31_405b_576gpu"])
    assert (inp.hidden_dropout, inp.options.grad_reduce_bytes) == (0.1, None)
    out = supplements.with_publication("dgxc_llama31_405b_576gpu", inp)
    assert (out.hidden_dropout, out.attention_dropout, out.options.grad_reduce_bytes) == (0.0, 0.0, 2)
    gptoss = supplements.with_publication(
        "bridge_gptoss_120b_b200_64gpu_bf16", calibrate.to_input(RUNS["bridge_gptoss_120b_b200_64gpu_bf16"])[0]
    )
    assert (gptoss.recompute, gptoss.recompute_modules) == ("selective", ("layernorm", "moe_act"))


def test_deepseek_v3_runs_as_its_bridge_recipe_built_it():
    """Megatron-Bridge v0.1.0rc3/rc4 (the 25.09 container's scripts) on H100: DeepEP (flex) with the 1F1B all-to-all
    overlap, multi-latent attention, one MTP layer, layout Et|(tt|)*30mL, recompute mla_up_proj and mlp. Before:
    the 26.04 recipe's HybridEP without overlap, and neither MLA, MTP nor the layout."""
    run = RUNS["bridge_deepseek_v3_h100_1024gpu_fp8"]
    inp, _ = calibrate.to_input(run)
    assert (inp.options.moe_dispatcher, inp.options.moe_a2a_overlap) == ("flex", True)
    out = supplements.with_publication(run["id"], inp)
    assert out.multi_latent_attention and (out.q_lora_rank, out.kv_lora_rank, out.mtp_num_layers) == (1536, 512, 1)
    # 32 virtual stages over pp 8: rank 0 the embedding + 1 + 2 x 3 layers, the last 2 x 3 + MTP + loss
    assert out.pipeline_stage_layers == (7, 8, 8, 8, 8, 8, 8, 6)
    assert (out.recompute, out.recompute_modules) == ("selective", ("mla_up_proj", "mlp"))


def test_script_values_set_micro_batch_and_virtual_stages():
    inp, _ = calibrate.to_input(RUNS["megatron_sc21_gpt_76p1b_1024gpu"])
    out = supplements.with_publication("megatron_sc21_gpt_76p1b_1024gpu", inp)
    # 60 layers over pp 4 at 5 layers per virtual stage: 3 chunks per stage
    assert (out.micro_batch, out.vpp) == (2, inp.num_layers // (inp.pp * 5))


def test_a_recipe_flag_not_understood_is_an_error(monkeypatch):
    monkeypatch.setitem(supplements.PUBLISHED_RECIPE_FLAGS, "x", "--hidden-dropout 0 --no-such-flag")
    inp, _ = calibrate.to_input(RUNS["dgxc_gpt3_175b_128gpu"])
    with pytest.raises(ValueError, match="no-such-flag"):
        supplements.with_recipe_flags("x", inp)


def test_the_calibration_predicts_the_runs_as_published():
    rows = {row["id"]: row for row in calibrate.calibrate(calibrate.DEFAULT_DATA)["rows"]}
    run_id = "megatron_sc21_gpt_7p5b_128gpu"
    inp, _ = calibrate.to_input(RUNS[run_id])
    assert rows[run_id]["predicted"] != pytest.approx(
        calibrate.estimate(inp).tokens_per_s_per_gpu, rel=1e-6
    )  # micro-batch 16 of run_table_1.sh, not 1


def test_torchtitans_interleaved_run_is_costed_with_torchtitans_default_split_and_micro_batches():
    """torchtitan's Table 5 405B run ("Interleaved 1F1B", local batch 32) sets neither split points nor a
    micro-batch count: torchtitan's defaults (2 stages per rank, pp micro-batches) are the run as measured."""
    run_id = "torchtitan_llama31_405b_3d_512gpu_fp8"
    inp, why = calibrate.to_input(RUNS[run_id])
    assert inp is not None, why
    published = supplements.with_publication(run_id, inp)
    assert (published.micro_batch, published.vpp) == (4, 2)
    assert published.pipeline_stage_layers == (15, 16, 16, 16, 16, 16, 16, 15)


def test_llama4_maverick_runs_as_its_nemo_recipe_built_it():
    """NeMo's llama4_e128 pretrain recipe (the commit dgxc-benchmarking v25.05 pins): the distributed optimizer,
    overlapped gradient reduce and parameter gather, gradients reduced in bf16 and TP communication overlap.
    Before: none of them, so each GPU held the whole fp32 optimizer state and the run was predicted at 90.2 GiB,
    over the H100's usable 74.4, though it ran."""
    run_id = "dgxc_llama4_maverick_512gpu"
    out = supplements.with_publication(run_id, calibrate.to_input(RUNS[run_id])[0])
    o = out.options
    assert out.distributed_optimizer and out.zero_stage is None
    assert (o.overlap_grad_reduce, o.overlap_param_gather, o.tp_comm_overlap, o.grad_reduce_bytes) == (
        True,
        True,
        True,
        2,
    )
    memory = calibrate.estimate(out).memory_gib
    assert memory["total"] <= memory["usable"]


def test_tp_comm_overlap_needs_sequence_parallelism():
    """Megatron-LM rejects --tp-comm-overlap without --sequence-parallel: a recipe flag cannot turn it on alone."""
    run_id = "dgxc_llama4_maverick_512gpu"
    inp, _ = calibrate.to_input(RUNS[run_id])
    out = supplements.with_recipe_flags(run_id, inp.replace(sequence_parallel=False))
    assert out.distributed_optimizer and not out.options.tp_comm_overlap


def test_gpt_oss_on_b200_runs_the_alltoall_dispatcher_of_the_26_04_01_table():
    """The 26.04.01 table's B200 row (13,568 tokens/s) ran after Megatron-Bridge#3614 dropped v0.4.1's HybridEP
    from the B200 V2 config (#3387: alltoall recovers 26.04's 5% regression, 13,045): the alltoall dispatcher
    without overlap, and Bridge's provider settings (no dropout, TE's fused cross-entropy). Before: HybridEP,
    dropout 0.1 and the unfused loss."""
    run = RUNS["bridge_gptoss_120b_b200_64gpu_bf16"]
    inp, _ = calibrate.to_input(run)
    assert (inp.options.moe_dispatcher, inp.options.moe_a2a_overlap) == ("alltoall", False)
    out = supplements.with_publication(run["id"], inp)
    assert (out.hidden_dropout, out.attention_dropout, out.options.cross_entropy) == (0.0, 0.0, "te")
    on_h100 = {
        **run,
        "model": {**run["model"], "family": "Qwen3-235B-A22B MoE"},
        "cluster": {**run["cluster"], "gpu": "H100-SXM5-80GB"},
    }
    assert calibrate.to_input(on_h100)[0].options.moe_dispatcher == "alltoall"


def test_every_bridge_calibration_run_is_read_with_its_recipe():
    """Every Megatron-Bridge run of the calibration gets what its perf recipe sets (dropout 0, TE's fused loss; fp8
    parameter gather under fp8), as the validation's Bridge runs do. Before: four runs at Megatron's dropout 0.1
    and the unfused loss, two of them with nothing read at all."""
    bridge = sorted(run_id for run_id, run in RUNS.items() if "bridge" in (run.get("framework") or "").lower())
    assert len(bridge) == 4
    for run_id in bridge:
        inp, why = calibrate.to_input(RUNS[run_id])
        assert inp is not None, why
        out = supplements.with_publication(run_id, inp)
        assert (out.hidden_dropout, out.attention_dropout, out.options.cross_entropy) == (0.0, 0.0, "te"), run_id
        assert out.options.fp8_param_gather == (out.precision == "fp8"), run_id


def test_qwen3_235b_splits_its_pipeline_with_the_embedding_and_loss():
    """94 layers over pp 8 x vpp 4 split evenly only with the embedding and the loss counted as layers (the
    v0.4.2 recipe's account_for_*_in_pipeline_split): 3 a virtual stage, the first and last holding 2 layers."""
    run_id = "bridge_qwen3_235b_h100_256gpu_fp8"
    out = supplements.with_publication(run_id, calibrate.to_input(RUNS[run_id])[0])
    assert out.pipeline_stage_layers == (11, 12, 12, 12, 12, 12, 12, 11)


def test_runs_read_with_nothing_beyond_the_table_are_predicted_as_the_table_reads_them():
    """(issue 24) The two worst dense runs' sources were read and state nothing beyond the calibration data:
    they stay unsupplemented, predicted at the micro-batch and overlaps the entries give (the 32B README's
    DP and TP overlaps with the distributed optimizer and fp32 gradient reduction that core_r0.8.0 implies;
    Nemotron-4 15B's report none), not at values picked to shrink their error."""
    recorded = set(supplements.PUBLISHED_NOTHING_BEYOND_TABLE)
    assert recorded <= set(RUNS) and all(supplements.PUBLISHED_NOTHING_BEYOND_TABLE.values())
    assert not recorded & set(SUPPLEMENTED)
    read = {}
    for run_id in recorded:
        inp, why = calibrate.to_input(RUNS[run_id])
        assert inp is not None, why
        assert supplements.with_publication(run_id, inp) == inp
        o = inp.options
        read[run_id] = (inp.micro_batch, inp.distributed_optimizer, o.overlap_grad_reduce, o.tp_comm_overlap)
        assert o.grad_reduce_bytes is None  # fp32: Megatron sets it for bf16 (validate_args)
    assert read == {
        "mcore_h100_weak_32b_384gpu": (1, True, True, True),
        "nemotron4_15b_2304gpu": (1, True, False, False),
    }
