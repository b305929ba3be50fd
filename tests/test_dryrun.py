"""plint.dryrun.groups: the `"dry_run"` object of `plint check --dry-run` (DESIGN.md, "Command line").

The analytic backend is tested everywhere; the megatron-core and DeepSpeed checks run where the
optional `dryrun` extra (torch, megatron-core, deepspeed) is importable.
"""

import importlib.util
import subprocess
import sys

import pytest
from fixture_paths import ROOT
from plint.dryrun.groups import dry_run, ranks_to_visit, read_sizes
from plint.report.text import dry_run_lines

HAVE_MEGATRON = all(importlib.util.find_spec(m) is not None for m in ("torch", "megatron"))
HAVE_DEEPSPEED = HAVE_MEGATRON and importlib.util.find_spec("deepspeed") is not None
needs_megatron = pytest.mark.skipif(
    not HAVE_MEGATRON, reason="megatron-core (and torch) not importable: pip install 'plint[dryrun]'"
)
needs_deepspeed = pytest.mark.skipif(
    not HAVE_DEEPSPEED, reason="deepspeed, megatron-core or torch not importable: pip install 'plint[dryrun]'"
)

CONTRACT = {"backend", "world_size", "groups", "ok", "problems"}


def test_analytic_contract_fields():
    out = dry_run({"world_size": 16, "tp": 2, "pp": 2, "cp": 2, "gpus_per_node": 8}, backend="analytic")
    assert CONTRACT <= set(out)
    assert out["backend"] == "analytic" and out["world_size"] == 16 and out["ok"] is True
    assert out["problems"] == [] and out["crossing"] == []
    assert out["groups"]["tp"] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]]
    assert out["groups"]["pp"][0] == [0, 8]
    assert {"tp", "pp", "dp", "cp", "ep"} <= set(out["groups"])
    assert out["group_counts"]["dp"] == [8, 2]


def test_nested_json_layout_is_read():
    layout = {
        "cluster": {"world_size": 32, "gpus_per_node": 8, "nvlink_domain": None},
        "parallel": {"tp": 4, "pp": 2, "cp": 1, "ep": 1, "etp": None},
        "trainer": "megatron",
    }
    facts = read_sizes(layout)
    assert (facts["world_size"], facts["tp"], facts["gpus_per_node"]) == (32, 4, 8)
    out = dry_run(layout, backend="analytic")
    assert out["ok"] and out["groups"]["tp"][1] == [4, 5, 6, 7]


def test_tensor_parallel_across_nodes_is_a_problem():
    out = dry_run({"world_size": 32, "tp": 16, "gpus_per_node": 8}, backend="analytic")
    assert out["ok"] is False
    (problem,) = [p for p in out["problems"] if p["kind"] == "crosses-nvlink"]
    assert "2 of 2 tensor-parallel groups of 16 ranks" in problem["message"]
    assert out["crossing"][0]["group"] == "tp"


def test_nvlink_domain_overrides_gpus_per_node():
    out = dry_run({"world_size": 16, "tp": 4, "gpus_per_node": 8, "nvlink_domain": 2}, backend="analytic")
    assert out["nvlink_domain"] == 2 and not out["ok"]
    assert dry_run({"world_size": 16, "tp": 4, "gpus_per_node": 8}, backend="analytic", nvlink_domain=4)["ok"]


def test_indivisible_world_is_rejected():
    out = dry_run({"world_size": 12, "tp": 8, "gpus_per_node": 8}, backend="analytic")
    assert not out["ok"] and out["groups"] == {}
    assert out["problems"][0]["kind"] == "rejected"
    assert "not divisible by tp*pp*cp" in out["problems"][0]["message"]


def test_unknown_world_size():
    out = dry_run({"tp": 2}, backend="analytic")
    assert out["world_size"] is None and not out["ok"]
    assert "world size unknown" in out["problems"][0]["message"]


def test_large_world_lists_a_sample():
    out = dry_run({"world_size": 4096, "tp": 8, "pp": 8, "ep": 8, "etp": 1, "gpus_per_node": 8}, backend="analytic")
    assert out["ok"]
    assert len(out["groups"]["tp"]) == 16 and out["group_counts"]["tp"] == [512, 8]
    assert out["group_counts"]["ep"] == [512, 8]


def test_layout_from_a_launch_file():
    from plint.reading.read import read_path

    reading = read_path(ROOT / "fixtures" / "launches" / "mixtral-moe-ep" / "launch.sh")
    out = dry_run(reading.layouts[0], backend="analytic")
    assert out["world_size"] == 32 and out["ok"], out["problems"]
    assert out["group_counts"]["ep"] == [4, 8] and out["group_counts"]["pp"] == [8, 4]
    assert dry_run_lines(out)[0].startswith("dry run (analytic, world 32): ok")


def test_text_lines_name_each_problem():
    lines = dry_run_lines(dry_run({"world_size": 12, "tp": 8, "gpus_per_node": 8}, backend="analytic"))
    assert lines[0] == "dry run (analytic, world 12): 1 problem(s)"
    assert lines[1].startswith("  rejected (plint): ")


def test_ranks_to_visit():
    assert ranks_to_visit(64) == list(range(64))
    sample = ranks_to_visit(4096)
    assert sample[0] == 0 and sample[-1] == 4095 and len(sample) == 16
    assert ranks_to_visit(100, max_ranks=5) == [0, 25, 50, 74, 99]


def test_analytic_dry_run_imports_no_torch():
    code = (
        "import sys; from plint.dryrun.groups import dry_run; "
        "dry_run({'world_size': 64, 'tp': 8, 'gpus_per_node': 8}, backend='analytic'); "
        "print(sorted(m for m in ('torch', 'megatron', 'deepspeed') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(HAVE_MEGATRON, reason="megatron-core is importable here")
def test_without_the_extra_the_analytic_backend_says_so():
    out = dry_run({"world_size": 16, "tp": 2, "gpus_per_node": 8})
    assert out["backend"] == "analytic" and out["ok"]
    assert any("analytic rank layout only" in n for n in out["notes"])
    with pytest.raises(RuntimeError, match="megatron-core not importable"):
        dry_run({"world_size": 16, "tp": 2}, backend="megatron-core")


@needs_megatron
def test_megatron_core_groups_agree():
    out = dry_run({"world_size": 32, "tp": 2, "pp": 2, "cp": 2, "ep": 2, "etp": 1, "gpus_per_node": 8})
    assert out["backend"].startswith("megatron-core ")
    assert out["coverage"] == {"ranks": 32, "of": 32}
    assert out["ok"], out["problems"]
    analytic = dry_run(
        {"world_size": 32, "tp": 2, "pp": 2, "cp": 2, "ep": 2, "etp": 1, "gpus_per_node": 8}, backend="analytic"
    )
    assert out["groups"] == analytic["groups"]


@needs_megatron
def test_megatron_core_sampled_ranks():
    out = dry_run({"world_size": 256, "tp": 4, "pp": 4, "ep": 4, "gpus_per_node": 8}, max_ranks=6)
    assert out["coverage"] == {"ranks": 6, "of": 256} and out["ok"], out["problems"]


@needs_megatron
def test_megatron_core_rejects_expert_dp_mismatch_with_pp_before_dp():
    out = dry_run(
        {"world_size": 16, "tp": 2, "pp": 2, "ep": 4, "etp": 1, "gpus_per_node": 8, "order": "tp-cp-ep-pp-dp"}
    )
    sources = {(p["kind"], p["source"]) for p in out["problems"]}
    assert ("rejected", "megatron-core") in sources
    assert not any(p["kind"] == "mismatch" for p in out["problems"])  # plint refuses it too


@needs_megatron
def test_megatron_core_transformer_config_checks():
    out = dry_run(
        {
            "world_size": 16,
            "tp": 2,
            "pp": 2,
            "gpus_per_node": 8,
            "trainer": "megatron",
            "num_layers": 4,
            "hidden_size": 96,
            "num_attention_heads": 3,
            "precision": "bf16",
        }
    )
    (problem,) = out["problems"]
    assert problem["source"] == "megatron-core" and "TransformerConfig" in problem["message"]
    assert "num_attention_heads (3)" in problem["message"]
    fine = dry_run(
        {
            "world_size": 16,
            "tp": 2,
            "pp": 2,
            "gpus_per_node": 8,
            "trainer": "megatron",
            "num_layers": 4,
            "hidden_size": 128,
            "num_attention_heads": 4,
            "precision": "bf16",
        }
    )
    assert fine["ok"], fine["problems"]


@needs_deepspeed
def test_deepspeed_config_rejections():
    base = {"world_size": 16, "tp": 1, "gpus_per_node": 8, "trainer": "deepspeed"}
    good = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2}
    assert dry_run({**base, "ds_config": good})["ok"]
    bad = dry_run({**base, "ds_config": {**good, "train_batch_size": 63}})
    (problem,) = bad["problems"]
    assert problem["source"] == "deepspeed" and "63 != 2 * 2 * 16" in problem["message"]
    both = dry_run({**base, "ds_config": {**good, "fp16": {"enabled": True}, "bf16": {"enabled": True}}})
    assert "cannot be simultaneously enabled" in both["problems"][0]["message"]


@needs_deepspeed
def test_megatron_deepspeed_config_uses_the_data_parallel_size():
    # Megatron-DeepSpeed hands DeepSpeed its mpu: the batch is checked against dp = 16 / (tp*pp) = 4
    base = {"world_size": 16, "tp": 2, "pp": 2, "gpus_per_node": 8, "trainer": "megatron-deepspeed"}
    cfg = {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2}
    assert dry_run({**base, "ds_config": cfg})["ok"]
    bad = dry_run({**base, "ds_config": {**cfg, "train_batch_size": 64}})
    assert "64 != 2 * 2 * 4" in bad["problems"][0]["message"]


@needs_deepspeed
def test_deepspeed_config_with_auto_values_is_not_run():
    cfg = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"}
    out = dry_run({"world_size": 16, "gpus_per_node": 8, "trainer": "deepspeed", "ds_config": cfg})
    assert out["ok"], out["problems"]
    assert any("DeepSpeedConfig not run" in n for n in out["notes"])
