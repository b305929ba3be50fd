"""benchmarks/plan_ranks.py: what counts as the published layout, and where it ranks, on hand-made entries."""

from __future__ import annotations

import copy

import pytest

from tests.test_corpus_script import _load

plan_ranks = _load("plan_ranks")


def entry(**layout) -> dict:
    """A calibration entry in the data file's shape: a 1.3B dense model on 2 x 8 H100."""
    base_layout = {
        "tp": 2,
        "pp": 2,
        "vpp": None,
        "dp": None,
        "cp": None,
        "ep": None,
        "expert_tp": None,
        "zero_stage": None,
        "distributed_optimizer": None,
        "fsdp": None,
        "sequence_parallel": None,
        "recompute": None,
        "micro_batch_size": None,
        "global_batch_seqs": 64,
        "global_batch_tokens": None,
    }
    return {
        "id": "hand_made",
        "year": 2024,
        "framework": "Megatron-LM",
        "precision": "bf16",
        "model": {
            "family": "Llama-style",
            "num_layers": 24,
            "hidden_size": 2048,
            "ffn_hidden_size": 5504,
            "num_attention_heads": 16,
            "num_kv_heads": 16,
            "vocab_size": 32000,
            "seq_length": 2048,
            "moe": None,
        },
        "cluster": {"gpu": "H100-SXM5-80GB", "total_gpus": 16, "gpus_per_node": 8, "inter_node_gbps_per_gpu": 400},
        "layout": {**base_layout, **layout},
    }


def stated(run: dict):
    inp, why = plan_ranks.to_input(run)
    assert inp is not None, why
    return plan_ranks.stated_layout(run, inp), inp


def test_unstated_axes_are_not_compared():
    s, inp = stated(entry())
    # neither cp nor dp stated: both free; vpp null with pp 2 may be interleaved or not
    assert (s.tp, s.pp, s.cp, s.dp, s.vpp, s.sharding, s.micro, s.recompute) == (
        2,
        2,
        None,
        None,
        None,
        None,
        None,
        None,
    )
    for vpp in (None, 2, 3):
        assert plan_ranks.mismatches(s, inp.replace(vpp=vpp, cp=2, dp=2)) == []
    assert plan_ranks.mismatches(s, inp.replace(tp=4)) == ["tp"]


def test_one_of_cp_and_dp_fixes_the_other():
    s, _ = stated(entry(dp=4))
    assert (s.cp, s.dp) == (1, 4)
    s, _ = stated(entry(cp=2))
    assert (s.cp, s.dp) == (2, 2)


def test_sharding_classes_no_sharding_and_the_distributed_optimizer_alike():
    s, inp = stated(entry(zero_stage=0, distributed_optimizer=False, cp=1))
    assert s.sharding == "optimizer at most"
    assert plan_ranks.mismatches(s, inp.replace(distributed_optimizer=True)) == []
    fsdp = inp.replace(distributed_optimizer=True, sharding="parameters", megatron_fsdp=True)
    assert plan_ranks.mismatches(s, fsdp) == ["sharding"]
    s3, _ = stated(entry(tp=1, pp=1, fsdp="FULL_SHARD (ZeRO-3)"))
    assert s3.sharding == "parameters"
    assert plan_ranks.mismatches(s3, fsdp.replace(tp=1, pp=1)) == []


def test_stated_no_interleaving_and_recompute_are_read():
    s, inp = stated(entry(vpp=1, recompute="none", micro_batch_size=2))
    assert (s.vpp, s.recompute, s.micro) == (1, "none", 2)
    assert plan_ranks.mismatches(s, inp.replace(vpp=3)) == ["vpp"]
    # micro-batch and recompute are outside "the same layout", compared only when asked for
    other = inp.replace(micro_batch=1, recompute="full")
    assert plan_ranks.mismatches(s, other) == []
    assert plan_ranks.mismatches(s, other, plan_ranks.AXES + ("micro", "recompute")) == ["micro", "recompute"]


def _planned(run: dict):
    inp, _ = plan_ranks.to_input(run)
    return plan_ranks.plan(plan_ranks.planning_base(inp)).candidates


@pytest.mark.parametrize("position", [1, 6])
def test_a_candidate_written_as_the_published_layout_ranks_at_its_first_occurrence(position):
    run = entry()
    chosen = _planned(run)[position - 1].inp
    run["layout"].update(
        tp=chosen.tp,
        pp=chosen.pp,
        cp=chosen.cp,
        dp=chosen.data_parallel(),
        vpp=chosen.vpp or 1,
        distributed_optimizer=True,
    )
    row, why = plan_ranks.rank_run(run)
    assert why is None
    assert 1 <= row.rank <= position
    same = _planned(run)[row.rank - 1].inp
    assert (same.tp, same.pp, same.cp, same.vpp) == (chosen.tp, chosen.pp, chosen.cp, chosen.vpp)
    assert row.first and row.candidates > position


def test_a_layout_outside_the_search_names_the_axis():
    row, _ = plan_ranks.rank_run(entry(tp=16, pp=1, dp=1))  # tp across the two nodes
    assert row.rank is None
    assert row.why.startswith("search space excludes tp 16") and "tp 1, 2, 4, 8" in row.why
    # ZeRO-3 beside a pipeline: outside a fresh plan's search (--free); holding the run's own sharding
    # (issue 24's default) plans with it, as torchtitan runs FSDP with PP
    row, _ = plan_ranks.rank_run(entry(pp=2, dp=4, zero_stage=3), free=True)
    assert row.rank is None and row.why.startswith("search space excludes sharding parameters")


def test_a_layout_that_cannot_fit_says_so():
    run = entry(tp=1, pp=1, dp=16, cp=1)
    run["model"].update(
        num_layers=96, hidden_size=12288, ffn_hidden_size=49152, num_attention_heads=96, num_kv_heads=96
    )  # 175B on one GPU's worth of model parallelism
    row, _ = plan_ranks.rank_run(run)
    assert row.rank is None and row.why.startswith("predicted not to fit")


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"layout": {"tp": None}}, "states no layout"),
        ({"cluster": {"total_gpus": None}}, "states no GPU count"),
        ({"layout": {"global_batch_seqs": None, "global_batch_tokens": 2_000_000}}, "not a whole number"),
        ({"layout": {"global_batch_seqs": None}}, "no global batch"),
        ({"layout": {"dp": 3, "cp": 1}}, "not the 16 GPUs"),
    ],
)
def test_runs_that_cannot_be_planned_say_why(change, reason):
    run = copy.deepcopy(entry())
    for section, values in change.items():
        run[section].update(values)
    row, why = plan_ranks.rank_run(run)
    assert row is None and reason in why


def test_summary_counts_top_k_per_kind():
    rows = [
        plan_ranks.Row("a", False, "", rank=1),
        plan_ranks.Row("b", False, "", rank=3),
        plan_ranks.Row("c", False, "", rank=11),
        plan_ranks.Row("d", True, "", rank=None),
        plan_ranks.Row("e", True, "", rank=2, rank_with_micro_recompute=2),
    ]
    s = plan_ranks.summary(rows)
    # issue 24: the count of runs whose first choice is claimed no more than CLAIM_MARGIN faster (none here)
    assert s["dense"] == {
        "runs": 3,
        "not_among_candidates": 0,
        "claim_within_margin": 0,
        "top": {"1": 1, "3": 2, "10": 2},
        "top_with_micro_recompute": {"1": 0, "3": 0, "10": 0},
    }
    assert s["moe"]["top"] == {"1": 0, "3": 1, "10": 1} and s["moe"]["not_among_candidates"] == 1


def test_the_runs_of_the_trainers_plint_reads_are_counted_apart():
    # issue 24's "Done when" holds plan to the calibration runs of the trainers plint reads
    ours, theirs = plan_ranks.rank_run(entry())[0], plan_ranks.rank_run({**entry(), "framework": "torchtitan"})[0]
    assert ours.read_by_plint and not theirs.read_by_plint
    theirs.rank = None
    s = plan_ranks.summary([ours, theirs])
    assert s["all"]["runs"] == 2 and s["plint's trainers"]["runs"] == 1
    assert s["plint's trainers"]["top"]["10"] == (ours.rank is not None and ours.rank <= 10)


def test_the_plan_starts_from_a_fresh_layout_or_from_the_runs_own_sharding():
    inp, _ = plan_ranks.to_input(entry(tp=4, pp=2, cp=1, zero_stage=0, micro_batch_size=4, recompute="full"))
    fresh = plan_ranks.planning_base(inp)
    assert (fresh.tp, fresh.pp, fresh.micro_batch, fresh.recompute, fresh.sharding_level()) == (1, 1, 1, None, 1)
    assert fresh.options.overlap_grad_reduce and fresh.seq_length == inp.seq_length
    assert plan_ranks.planning_base(inp, own_sharding=True).sharding_level() == 0


def test_the_plan_holds_the_runs_stated_micro_batch_recompute_and_overlaps():
    """Issue 24: a claim to beat the published layout is about the layout; the run's stated micro-batch and
    recompute, its sharding and its overlaps are held (fail before: the planner searched them all)."""
    run = entry(tp=2, pp=1, cp=1, micro_batch_size=2, recompute="full")
    inp, _ = plan_ranks.to_input(run)
    s = plan_ranks.stated_layout(run, inp)
    kwargs, words = plan_ranks.held_choices(s, inp, 2024)
    assert kwargs["micro_batches"] == (2,) and kwargs["recomputes"] == (("full", "uniform", 1),)
    assert "micro 2" in words and "recompute full" in words
    held = plan_ranks.planning_base(inp, hold=True)
    assert held.options == inp.options and held.sharding_level() == inp.sharding_level()
    row, _ = plan_ranks.rank_run({**run, "source": "README: overlap of DP grad-reduce"})
    assert row.held == words and row.claim is not None and row.rank is not None


def test_overlaps_an_entry_leaves_unstated_are_held_as_a_fresh_plan_has_them_where_its_trainer_had_them():
    """Issue 24: an entry silent on Megatron's overlaps leaves them as unknown as its micro-batch; the planner
    costs the published layout and its candidates with them on, not at the trainer's default (fail before: a
    2024 Megatron-LM run silent on them was planned with its gradient reduce in the open on both sides)."""
    run = entry(tp=2, pp=1, cp=1)
    assert plan_ranks.unstated_overlaps(run)
    assert not plan_ranks.unstated_overlaps({**run, "source": "overlap of DP grad-reduce/param-gather"})
    assert not plan_ranks.unstated_overlaps({**run, "year": 2021, "framework": "Megatron-LM (2021)"})
    assert not plan_ranks.unstated_overlaps({**run, "framework": "Megatron-DeepSpeed"})
    assert plan_ranks.unstated_overlaps({**run, "year": 2023, "framework": "NeMo / Megatron-Core r0.4.0"})
    silent, _ = plan_ranks.rank_run(run)
    stated_off, _ = plan_ranks.rank_run({**run, "source": "no overlap"})
    assert "Megatron's overlaps on (unstated" in silent.held and "its overlaps" in stated_off.held
    assert silent.first_tokens > stated_off.first_tokens


def test_a_run_of_2019_is_planned_without_what_its_trainer_lacked():
    keep, keep_member, withheld = plan_ranks.era_filter(2019)
    assert withheld == [
        "pp > 1",
        "virtual pipeline stages over pp 2",
        "cp > 1",
        "uneven pipeline splits",
        "expert tp apart from tp",
        "interleaving over micro-batches pp does not divide",
    ]
    row, _ = plan_ranks.rank_run({**entry(tp=2, pp=1, cp=1), "year": 2019})
    assert "no pp > 1" in row.held and " pp 1 " in f" {row.first} "
    assert plan_ranks.era_filter(2025)[2] == []


def test_the_runs_gradient_reduce_dtype_is_held():
    """A run that reduced gradients in fp32 is not planned with --grad-reduce-in-bf16, which buys memory (fail
    before: the planner added the bf16 reduce to every bf16 run's layouts)."""
    run = entry(tp=2, pp=1, cp=1, distributed_optimizer=True)
    inp, _ = plan_ranks.to_input(run)
    s = plan_ranks.stated_layout(run, inp)
    kwargs, words = plan_ranks.held_choices(s, inp, 2024)
    assert kwargs["bf16_reduce"] is False and "gradients reduced in fp32" in words
    base = plan_ranks.planning_base(inp, hold=True)
    reduces = {c.inp.options.grad_reduce_bytes for c in plan_ranks.plan(base, **kwargs).candidates}
    assert reduces == {inp.options.grad_reduce_bytes}
    assert 2 in {c.inp.options.grad_reduce_bytes for c in plan_ranks.plan(base).candidates}


def test_a_sharding_the_entry_does_not_state_is_searched_as_a_fresh_plan_does():
    """Like an unstated micro-batch, an unstated sharding is not held (fail before: a run that names no
    sharding was planned without the distributed optimizer)."""
    run = entry(tp=2, pp=1, cp=1)
    inp, _ = plan_ranks.to_input(run)
    s = plan_ranks.stated_layout(run, inp)
    assert s.sharding is None and not inp.distributed_optimizer
    kwargs, words = plan_ranks.held_choices(s, inp, 2024)
    assert kwargs["more_sharding"] is True and "sharding" not in words
    assert plan_ranks.planning_base(inp, hold=True, sharding_stated=False).distributed_optimizer
    stated_run = entry(tp=2, pp=1, cp=1, zero_stage=0)
    held, _ = plan_ranks.to_input(stated_run)
    kwargs, words = plan_ranks.held_choices(plan_ranks.stated_layout(stated_run, held), held, 2024)
    assert kwargs["more_sharding"] is False and "sharding optimizer at most" in words


def test_a_deepspeed_pipeline_run_is_planned_without_virtual_stages():
    """DeepSpeed's pipeline engine has no interleaved schedule (fail before: Megatron-DeepSpeed runs were
    planned with vpp > 1)."""
    none_in_deepspeed = "virtual pipeline stages (none in DeepSpeed's pipeline)"
    keep, keep_member, withheld = plan_ranks.era_filter(2022, "Megatron-DeepSpeed")
    assert none_in_deepspeed in withheld
    assert none_in_deepspeed not in plan_ranks.era_filter(2022, "Megatron-LM")[2]
    row, _ = plan_ranks.rank_run({**entry(tp=2, pp=2, cp=1), "framework": "Megatron-DeepSpeed"})
    assert "virtual pipeline stages" in row.held and " vpp " not in f" {row.first} "


def test_a_run_before_sequence_parallelism_is_planned_without_it():
    """Megatron-LM gained --sequence-parallel in May 2022, Megatron-DeepSpeed in July 2023: a 2021 run's
    candidates run tensor parallelism without it, as the run did (fail before: the planner turned it on with
    every tp > 1, and the published layout was costed at its best with a feature its trainer lacked)."""
    assert not plan_ranks.has_sequence_parallel(2021, "Megatron-LM (2021)")
    assert plan_ranks.has_sequence_parallel(2022, "Megatron-LM") and plan_ranks.has_sequence_parallel(2024, "NeMo")
    assert not plan_ranks.has_sequence_parallel(2022, "Megatron-DeepSpeed")
    run = {**entry(tp=2, pp=1, cp=1), "year": 2021}
    inp, _ = plan_ranks.to_input(run)
    kwargs, words = plan_ranks.held_choices(plan_ranks.stated_layout(run, inp), inp, 2021, run["framework"])
    assert kwargs["sequence_parallel"] is False and "no sequence parallelism" in words
    candidates = plan_ranks.plan(plan_ranks.planning_base(inp, hold=True), **kwargs).candidates
    assert any(c.inp.tp > 1 for c in candidates) and not any(c.inp.sequence_parallel for c in candidates)


def test_a_recipe_that_overlaps_tensor_parallel_communication_does_so_for_every_candidate():
    """A Megatron-Bridge run published at tp 1 has no TP overlap to convert, yet its recipe turns it on with any
    tp > 1: the planner's tp > 1 candidates are costed with it (fail before: they were costed without)."""
    bridge = {**entry(tp=1, pp=1, cp=1), "framework": "Megatron-Bridge"}
    inp, _ = plan_ranks.to_input(bridge)
    assert not inp.options.tp_comm_overlap and plan_ranks.framework_tp_overlap(bridge)
    assert not plan_ranks.framework_tp_overlap(entry(tp=1, pp=1, cp=1))


def test_the_published_layout_is_planned_as_its_publication_states_it(monkeypatch):
    """plan_ranks plans and costs the run its publication states (benchmarks/published_supplements.py), as
    calibrate.py predicts it: a recipe's bf16 gradient reduction is held, not fp32 (fail before: the planner
    held fp32, which cost the published layout memory and time it never spent)."""
    supplements = _load("published_supplements")
    monkeypatch.setitem(supplements.PUBLISHED_RECIPE_FLAGS, "hand_made", "--grad-reduce-in-bf16")
    monkeypatch.setattr(plan_ranks, "with_publication", supplements.with_publication)
    row, why = plan_ranks.rank_run(entry())
    assert row is not None, why
    assert "gradients reduced in bf16" in row.held, row.held


def test_an_moe_entry_without_an_expert_tp_is_described():
    """describe() names etp only where it is stated (an MoE entry of a trainer whose default is ETP = TP); fail
    before: a KeyError on the validation file's dgxc MoE rows."""
    assert plan_ranks.describe({"tp": 4, "pp": 8, "ep": 8, "dp": 8}) == "tp 4 pp 8 ep 8 dp 8"
    assert plan_ranks.describe({"tp": 4, "pp": 8, "ep": 8, "etp": 1, "dp": 8}) == "tp 4 pp 8 ep 8 etp 1 dp 8"


def test_gpt_oss_is_predicted_to_fit_with_its_recipes_recompute():
    """plan_ranks reads a run as calibrate.py predicts it, with what its publication states beyond the data
    (benchmarks/published_supplements.py). gpt-oss-120b on 64 B200 recomputes layernorm and moe_act (its Bridge
    workload config): without them it was predicted at 177.2 GiB of 167.4 usable, a run that ran said not to fit."""
    import yaml

    runs = {run["id"]: run for run in yaml.safe_load(plan_ranks.DEFAULT_DATA.read_text())}
    row, why = plan_ranks.rank_run(runs["bridge_gptoss_120b_b200_64gpu_bf16"])
    assert row is not None, why
    assert not row.over_headroom
    assert row.rank is not None and row.matched.endswith("recompute selective")


def test_overlapped_plans_the_run_and_its_candidates_with_the_overlaps_on():
    """--overlapped asks whether a claim is about the layout or about overlaps a run's sources leave unstated:
    the published layout and every candidate are costed with them on."""
    run = entry(tp=2, pp=1, cp=1)
    inp, _ = plan_ranks.to_input(run)
    assert not (inp.options.overlap_grad_reduce or inp.options.tp_comm_overlap)  # Megatron-LM's defaults: off
    on = plan_ranks.with_overlaps(inp).options
    assert on.overlap_grad_reduce and on.overlap_param_gather and on.tp_comm_overlap
    held, overlapped = plan_ranks.rank_run(run)[0], plan_ranks.rank_run(run, overlapped=True)[0]
    assert overlapped.published_tokens > held.published_tokens  # the published layout hides its traffic
    assert overlapped.rank is not None and overlapped.claim is not None


def test_the_megatron_core_release_a_framework_names_decides_what_it_lacks():
    """NeMo's release notes give each container's Megatron-Core; core 0.8 interleaves over pp 2 and core 0.10
    over micro-batches pp does not divide (plint.catalog.interleaving). Without a named release the year decides,
    a feature released late in a year counting from the next."""
    assert plan_ranks.core_release("NeMo (nvcr.io/nvidia/nemo:24.09) / Megatron-Core") == (0, 9)
    assert plan_ranks.core_release("Megatron-Core r0.8.0") == (0, 8)
    assert plan_ranks.core_release("Megatron-LM / NeMo") is None
    pp2, groups = "virtual pipeline stages over pp 2", "interleaving over micro-batches pp does not divide"
    assert plan_ranks.era_filter(2024, "NeMo (nvcr.io/nvidia/nemo:24.05) / Megatron-Core")[2][:2] == [
        pp2,
        "uneven pipeline splits",
    ]
    nemo_0_9 = plan_ranks.era_filter(2024, "NeMo (nvcr.io/nvidia/nemo:24.09) / Megatron-Core")[2]
    assert pp2 not in nemo_0_9 and groups in nemo_0_9
    assert {pp2, groups} <= set(plan_ranks.era_filter(2024, "Megatron-LM")[2])
    assert plan_ranks.era_filter(2025, "Megatron-Bridge")[2] == []


def test_a_run_before_core_0_10_is_planned_with_whole_micro_batch_groups():
    """Until core 0.9 the interleaved schedule raised unless pp divides the micro-batches of a step (fail before:
    the planner ranked such layouts for the 2021 runs, which their trainer refused at the first step)."""
    run = {**entry(tp=2, pp=4, cp=1), "year": 2021}
    inp, _ = plan_ranks.to_input(run)
    kwargs, _ = plan_ranks.held_choices(plan_ranks.stated_layout(run, inp), inp, 2021, "Megatron-LM")
    candidates = plan_ranks.plan(plan_ranks.planning_base(inp, hold=True), **kwargs).candidates
    interleaved = [c.inp for c in candidates if c.inp.vpp]
    assert interleaved and all(i.pp > 2 for i in interleaved)
    assert all((i.global_batch // (i.micro_batch * i.dp)) % i.pp == 0 for i in interleaved)
