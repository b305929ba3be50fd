"""benchmarks/published_supplements.py for the held-out validation runs (issue 24): every run is read with what its
recipe states beyond the table, as the calibration runs are, and where benchmarks/heldout/launches.yaml wrote a
launch of the same run (fixtures/good-heldout, fixtures/advised), plint reading that launch and the validation's
prediction see the same run."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from fixture_paths import ROOT
from plint.checking.check import check_paths
from plint.cost import ModelInput
from plint.cost.layout_estimate import cost_input, uneven_stages
from tests.test_corpus_script import _load
from tests.test_published_supplements import facts as calibration_facts

calibrate = _load("calibrate")
supplements = _load("published_supplements")

VALIDATION_DATA = ROOT / "benchmarks" / "data" / "published_runs_validation.yaml"
RUNS = {run["id"]: run for run in yaml.safe_load(VALIDATION_DATA.read_text())}
HELDOUT = yaml.safe_load((ROOT / "benchmarks" / "heldout" / "launches.yaml").read_text())


def _flag(text: str, name: str) -> str | None:
    words = shlex.split(text)
    return words[words.index(name) + 1] if name in words else None


def _heldout_key(entry: dict) -> tuple:
    """(layers, hidden, GPU, GPUs, global batch, micro-batch, tp, pp, precision) of a held-out launch, from its
    manifest entry: the same model on the same GPUs with the same batch and layout."""
    model = HELDOUT["models"][entry["model"]]
    precision = "fp8" if "--fp8-format" in entry["precision"] else "bf16"
    return (
        int(_flag(model, "--num-layers")),
        int(_flag(model, "--hidden-size")),
        entry["gpu"],
        entry["nodes"] * entry["gpus_per_node"],
        int(_flag(entry["batch"], "--global-batch-size")),
        int(_flag(entry["batch"], "--micro-batch-size")),
        int(_flag(entry["layout"], "--tensor-model-parallel-size")),
        int(_flag(entry["layout"], "--pipeline-model-parallel-size")),
        precision,
    )


def _validation_key(inp: ModelInput) -> tuple:
    layout = (inp.global_batch, inp.micro_batch, inp.tp, inp.pp)
    return (inp.num_layers, inp.hidden_size, inp.gpu, inp.world_size, *layout, inp.precision)


def _launch(heldout_id: str) -> Path:
    for folder in ("good-heldout", "advised"):
        path = ROOT / "fixtures" / folder / heldout_id / "launch.sh"
        if path.exists():
            return path
    raise FileNotFoundError(heldout_id)


def _same_runs() -> dict[str, str]:
    """Validation run id -> held-out launch id of the same model, GPUs, batch, layout and precision, published
    by the same repository (a Bridge recipe and a NeMo 1 YAML of one layout are two recipes)."""
    heldout = HELDOUT["launches"] + HELDOUT.get("advised", [])
    pairs = {}
    for run_id, run in RUNS.items():
        inp, _ = calibrate.to_input(run)
        if inp is None:
            continue
        key = _validation_key(supplements.with_script_values(run_id, inp))
        for entry in heldout:
            publisher = entry["source"]["repo"].split("/")[-1].lower()
            if _heldout_key(entry) == key and publisher in str(run["source"]).lower():
                pairs[run_id] = entry["id"]
    return pairs


SAME_RUNS = _same_runs()


def facts(inp: ModelInput, stage_layers: tuple[int, ...] | None) -> dict:
    """The fields the calibration's supplements are held to (tests/test_published_supplements.py) and those the
    validation recipes' flags set besides, which a launch states too."""
    o = inp.options
    return {
        **calibration_facts(inp),
        "distributed_optimizer": inp.distributed_optimizer,
        "pipeline_stage_layers": stage_layers,
        "tp_comm_overlap": o.tp_comm_overlap,
        "overlap_grad_reduce": o.overlap_grad_reduce,
        "fp8_param_gather": o.fp8_param_gather,
    }


def test_every_validation_run_has_its_recipe_read_or_says_why_not():
    flagged, nothing = set(supplements.VALIDATION_RECIPE_FLAGS), set(supplements.VALIDATION_NOTHING_BEYOND_TABLE)
    assert flagged | nothing == set(RUNS)
    assert not flagged & nothing
    assert set(supplements.VALIDATION_UNMODELLED) <= set(RUNS)
    assert all(supplements.VALIDATION_NOTHING_BEYOND_TABLE.values())


def test_validation_supplements_are_apart_from_the_calibrations():
    calibration = set(supplements.PUBLISHED_RECIPE_FLAGS) | set(supplements.PUBLISHED_SCRIPT_VALUES)
    assert not calibration & set(RUNS)


@pytest.mark.parametrize("run_id", sorted(supplements.VALIDATION_RECIPE_FLAGS))
def test_every_recipe_flag_of_a_validation_run_is_understood_and_counts(run_id):
    inp, why = calibrate.to_input(RUNS[run_id])
    assert inp is not None, why
    published = supplements.with_publication(run_id, inp)  # raises on a flag it does not understand
    assert published != inp


def test_the_same_runs_are_found_in_the_heldout_launches():
    assert SAME_RUNS == {
        "dgxc_nemotron4_15b_bf16_64gpu": "dgxc_nemotron4_15b_h100_64gpu_bf16",
        "dgxc_nemotron4_340b_bf16_256gpu": "dgxc_nemotron4_340b_h100_256gpu_bf16",
        "bridge_llama31_405b_gb200_256gpu_fp8cs": "bridge_llama31_405b_gb200_256gpu_fp8cs",
        "bloom_176b_384gpu": "bloom_176b_tr11_384gpu",
    }


@pytest.mark.parametrize("run_id", sorted(SAME_RUNS))
def test_the_validation_and_the_heldout_launch_state_the_same_run(run_id):
    inp, why = calibrate.to_input(RUNS[run_id])
    assert inp is not None, why
    predicted = supplements.with_publication(run_id, inp)
    (result,) = check_paths([_launch(SAME_RUNS[run_id])])
    (layout,) = result.layouts
    read = cost_input(layout)
    assert read is not None
    uneven = uneven_stages(layout, read)
    assert facts(read, uneven[0].per_rank() if uneven else None) == facts(predicted, predicted.pipeline_stage_layers)
    assert predicted.pipeline_chunk_layers == (uneven[0].layers if uneven else None)  # layers per virtual stage


def test_recipe_flags_of_the_validation_runs_reach_the_cost_model():
    """Before: the table's reading alone. dgxc's DeepSeek-V3 ran NeMo's recipe: multi-latent attention, one MTP layer,
    3 and 2 layers on the end stages of 16, recompute of mla_up_proj, the distributed optimizer."""
    run_id = "dgxc_deepseek_v3_bf16_1024gpu"
    out = supplements.with_publication(run_id, calibrate.to_input(RUNS[run_id])[0])
    assert out.multi_latent_attention and (out.q_lora_rank, out.kv_lora_rank, out.mtp_num_layers) == (1536, 512, 1)
    assert (out.first_stage_layers, out.last_stage_layers) == (3, 2)
    assert out.pipeline_stage_layers == (3, *[4] * 14, 2)
    assert (out.recompute, out.recompute_modules) == ("selective", ("mla_up_proj",))
    assert out.distributed_optimizer and out.options.overlap_grad_reduce and out.options.grad_reduce_bytes is None
    assert out.options.cross_entropy == "te"
    bridge_8b = "bridge_llama3_8b_h100_8gpu_fp8cs_fsdp"
    out = supplements.with_publication(bridge_8b, calibrate.to_input(RUNS[bridge_8b])[0])
    assert (out.recompute, out.recompute_method, out.recompute_num_layers) == ("full", "block", 5)


def test_nemo_recipes_defer_the_output_layers_weight_gradient():
    run_id = "dgxc_llama31_405b_gb200_bf16_128gpu"
    out = supplements.with_publication(run_id, calibrate.to_input(RUNS[run_id])[0])
    assert out.options.wgrad_deferral_limit == 50
    # 126 layers + embedding + loss over pp 8 x vpp 8: 2 per chunk, one fewer on the first and last
    assert out.pipeline_stage_layers == (15, *[16] * 6, 15)
    assert out.distributed_optimizer and out.options.grad_reduce_bytes == 2


def test_the_validation_prediction_reads_the_recipe():
    """calibrate.py predicts each validation run as its recipe states it (with_publication on every run)."""
    rows = {row["id"]: row for row in calibrate.calibrate(VALIDATION_DATA)["rows"]}
    run_id = "dgxc_nemotron4_340b_gb200_fp8_256gpu"
    inp, _ = calibrate.to_input(RUNS[run_id])
    assert rows[run_id]["predicted"] != pytest.approx(calibrate.estimate(inp).tokens_per_s_per_gpu, rel=1e-6)


def test_plan_ranks_names_what_a_runs_recipe_sets_that_is_not_modelled():
    """Bridge's Llama 3 70B on 64 GB200 offloads 40 layers' activations to the CPU (no cost-model input): plan_ranks
    says so beside its memory verdict (fail before: the row said only that it would not fit)."""
    plan_ranks = _load("plan_ranks")
    row, why = plan_ranks.rank_run(RUNS["bridge_llama3_70b_gb200_64gpu_fp8cs_fsdp"])
    assert row is not None, why
    assert "offloaded to the CPU" in row.unmodelled
    row, why = plan_ranks.rank_run(RUNS["dgxc_llama31_8b_bf16_8gpu"])
    assert row is not None and not row.unmodelled
