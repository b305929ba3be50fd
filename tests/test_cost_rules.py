"""The cost-model rules (PL301, PL302, PL308, PL310, PL401, PL402) and the estimate in the outputs.

The numbers in the messages must be the cost model's: each test recomputes them through plint.cost for
the same input and compares, and the behaviours a user relies on (silence on what the model leaves
out, the 5% margin of PL302, the trainer release's flags) are pinned on small launches.
"""

import json
import re

import pytest
from plint.checking.check import check_paths
from plint.cost import estimate
from plint.cost.error_band import MEASURED_PEAK_ERROR, MEASURED_STEP_ERROR
from plint.cost.layout_estimate import FALLBACK_VOCAB, cost_input, layout_estimate
from plint.planning.plan import fits_in_memory
from plint.report.json_report import file_json
from plint.report.text import render
from plint.rules.common import gpt, torchrun

LLAMA_7B = dict(layers=32, hidden=4096, heads=32, seq=4096)


def _check(tmp_path, files: dict[str, str], main="launch.sh", **kwargs):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / main], **kwargs)
    return result


def _launch(tmp_path, extra: str, nproc: int = 8, **shape):
    return _check(tmp_path, torchrun(gpt(extra, **shape), nproc=nproc).files)


def _findings(result, code):
    return [d for d in result.diagnostics if d.code == code]


def test_estimate_is_in_the_layout_json_with_the_contract_fields(tmp_path):
    result = _launch(tmp_path, "--use-distributed-optimizer", **LLAMA_7B)
    est = file_json(result)["layout"]["estimate"]
    assert set(est["memory_gib"]) >= {"weights", "grads", "optimizer", "activations", "other", "total", "usable"}
    for key in ("bubble_fraction", "step_time_s", "mfu", "tokens_per_s_per_gpu"):
        assert isinstance(est[key], float) and est[key] >= 0
    # (issue 23: the workspaces allocated through PyTorch are a part of their own, inside the allocator peak)
    parts = sum(est["memory_gib"][k] for k in ("weights", "grads", "optimizer", "activations", "workspace", "other"))
    assert parts == pytest.approx(est["memory_gib"]["total"], abs=0.05)
    # tokens/s per GPU is the global batch's tokens over the step and the GPUs: 64 * 4096 / (step * 8)
    assert est["tokens_per_s_per_gpu"] == pytest.approx(64 * 4096 / (est["step_time_s"] * 8), rel=1e-3)
    # no --vocab-size and no tokenizer with a known vocabulary: the estimate says what it assumed
    assert any(f"{FALLBACK_VOCAB:,} assumed" in note for note in est["notes"])


def test_gpt2_tokenizer_vocabulary_is_known(tmp_path):
    result = _launch(tmp_path, "--tokenizer-type GPT2BPETokenizer --vocab-file v.json --merge-file m.txt", **LLAMA_7B)
    (layout,) = result.layouts
    assert cost_input(layout).vocab_size == 50257
    assert any("GPT2BPETokenizer" in note for note in layout_estimate(layout).notes)


def test_no_estimate_without_a_model_shape(tmp_path):
    result = _check(tmp_path, {"launch.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --bf16\n"})
    assert file_json(result)["layout"]["estimate"] is None
    assert not [d for d in result.diagnostics if d.code in ("PL301", "PL302", "PL308", "PL310", "PL401", "PL402")]


def test_text_output_shows_the_breakdown_under_the_layout(tmp_path):
    result = _launch(tmp_path, "--use-distributed-optimizer", **LLAMA_7B)
    text = render([result], color=False)
    est = layout_estimate(result.layouts[0])
    memory_line = next(line for line in text.splitlines() if line.startswith("  memory/GPU"))
    assert f"{est.memory_gib['total']:.1f} of {est.memory_gib['usable']:.1f} GiB usable" in memory_line
    assert "activations" in memory_line and "optimizer" in memory_line
    step_line = next(line for line in text.splitlines() if line.startswith("  step"))
    assert f"MFU {100 * est.mfu:.1f}%" in step_line
    # the step carries the cost model's measured error on published dense runs (7.4% at this writing)
    assert f" s +-{100 * MEASURED_STEP_ERROR['dense']:.0f}%, " in step_line
    assert file_json(result)["layout"]["estimate"]["step_error"] == MEASURED_STEP_ERROR["dense"]


def test_a_moe_step_carries_the_moe_error(tmp_path):
    result = _launch(tmp_path, "--num-experts 8 --expert-model-parallel-size 8 --moe-router-topk 2", **LLAMA_7B)
    assert layout_estimate(result.layouts[0]).step_error == MEASURED_STEP_ERROR["moe"] > MEASURED_STEP_ERROR["dense"]


def test_predicted_oom_message_carries_the_estimate(tmp_path):
    result = _launch(tmp_path, "--tensor-model-parallel-size 1", micro=4, **LLAMA_7B)
    (finding,) = _findings(result, "PL401")
    est = layout_estimate(result.layouts[0])
    assert est.memory_gib["total"] > est.memory_gib["usable"]
    assert finding.message.startswith(
        f"predicted {est.memory_gib['total']:.1f} GiB per GPU of {est.memory_gib['usable']:.1f} GiB usable (h100-sxm)"
    )
    for part in ("weights", "grads", "optimizer", "activations"):
        assert f"{part} {est.memory_gib[part]:.1f}" in finding.message
    # the line and column of the micro-batch size, the knob most often turned
    assert (finding.line, finding.col) == (7, 24)  # "    --micro-batch-size 4": 4 + 18 + 1 characters before it
    assert (tmp_path / "launch.sh").read_text().splitlines()[6][23] == "4"


def test_oom_remedy_is_one_that_fits(tmp_path):
    result = _launch(
        tmp_path,
        "--tensor-model-parallel-size 2 --sequence-parallel",
        micro=2,
        layers=36,
        hidden=4096,
        heads=32,
        seq=4096,
    )
    (finding,) = _findings(result, "PL401")
    assert "; with --use-distributed-optimizer it would need" in finding.message
    inp = cost_input(result.layouts[0]).replace(distributed_optimizer=True)
    fixed = estimate(inp)
    mem = fixed.memory_gib
    assert f"would need {mem['total']:.1f} GiB" in finding.message
    assert mem["total"] <= 0.9 * mem["usable"]
    # (issue 23) and the high end of the remedy's own error band fits
    assert mem["total"] + mem["error_band"] * mem["allocator_peak"] <= mem["usable"]


@pytest.mark.parametrize("layers, code", [(32, "PL402"), (33, "PL401")])
def test_predicted_oom_needs_the_low_end_of_the_band_over(tmp_path, layers, code):
    """(issue 23) Over usable memory, but is the low end of the measured error band too? 32 layers: 75.3 GiB
    predicted of 74.4, 73.5 at the low end of tp's +-2.5% (the harness's median for tp, after the memory terms of
    issue 23's second round; 33 and 34 layers when the band was +-6.5%): a warning, PL402. 33 layers: 77.5, 75.7 at
    the low end: PL401. Both messages give the band."""
    result = _launch(
        tmp_path,
        "--tensor-model-parallel-size 2 --sequence-parallel",
        micro=2,
        layers=layers,
        hidden=4096,
        heads=32,
        seq=4096,
    )
    mem = layout_estimate(result.layouts[0]).memory_gib
    low = mem["total"] - mem["error_band"] * mem["allocator_peak"]
    high = mem["total"] + mem["error_band"] * mem["allocator_peak"]
    assert mem["error_band"] == MEASURED_PEAK_ERROR["tp"] and mem["total"] > mem["usable"]
    assert (low > mem["usable"]) == (code == "PL401")
    (finding,) = [d for d in result.diagnostics if d.code in ("PL401", "PL402")]
    assert finding.code == code
    assert f"{low:.1f} to {high:.1f} GiB within the +-{100 * mem['error_band']:.0f}%" in finding.message


@pytest.mark.parametrize("layers, warned", [(35, False), (36, True)])
def test_memory_headroom_band(tmp_path, layers, warned):
    """(issue 25) PL402 speaks only where the measured error band reaches usable memory: 35 layers, 72.3 GiB
    of 74.4 (97%) and 74.0 at the high end of tp's +-2.5% band, is not warned about (it was, above the old
    default headroom of 90%); 36 layers, 74.2 GiB and 76.0 at the high end, is. (34 and 35 layers when the
    band was +-6.5%, before issue 23's second round of memory terms.)"""
    result = _launch(
        tmp_path, "--tensor-model-parallel-size 2 --sequence-parallel", layers=layers, hidden=4096, heads=32, seq=4096
    )
    mem = layout_estimate(result.layouts[0]).memory_gib
    high = mem["total"] + mem["error_band"] * mem["allocator_peak"]
    assert 0.9 * mem["usable"] < mem["total"] <= mem["usable"]
    assert (high > mem["usable"]) == warned
    assert bool(_findings(result, "PL402")) == warned and not _findings(result, "PL401")


def test_headroom_threshold_comes_from_the_configuration(tmp_path):
    """20 layers: 42.9 GiB predicted, about 49 at the high end of its band: no warning by default; a headroom
    threshold of 50% (42.9 > 37.2) from the configuration makes one. (issue 23: at 0.99 the high end of
    the band now warns by itself, so the threshold is tested where only it decides.)"""
    quiet = _launch(
        tmp_path, "--tensor-model-parallel-size 2 --sequence-parallel", layers=20, hidden=4096, heads=32, seq=4096
    )
    est = layout_estimate(quiet.layouts[0])
    mem = est.memory_gib
    assert (
        0.5 * mem["usable"] < mem["total"]
        and mem["total"] + mem["error_band"] * mem["allocator_peak"] < 0.9 * mem["usable"]
    )
    assert not _findings(quiet, "PL402")
    (tmp_path / "tight").mkdir()
    (tmp_path / "tight" / ".plint.toml").write_text("[thresholds]\nmemory-headroom = 0.5\n")
    tight = _launch(
        tmp_path / "tight",
        "--tensor-model-parallel-size 2 --sequence-parallel",
        layers=20,
        hidden=4096,
        heads=32,
        seq=4096,
    )
    (finding,) = _findings(tight, "PL402")
    assert "above 50% of usable" in finding.message


def _bubble_alternative(layout):
    """The alternative PL301 must name, found independently through plint.planning.alternatives."""
    from plint.planning.alternatives import faster_pipeline

    inp, est = cost_input(layout), layout_estimate(layout)
    fits = lambda e: e.memory_gib["total"] <= 0.9 * e.memory_gib["usable"]  # noqa: E731 (the default headroom)
    return faster_pipeline(inp, est, fits, 0.05, estimate)


def test_pipeline_bubble_names_a_faster_layout_of_the_same_launch(tmp_path):
    # (layers whose GPU time outlasts the host's dispatch, so the iteration's fixed costs stay small)
    result = _launch(tmp_path, "--pipeline-model-parallel-size 8", layers=32, glob=16, hidden=4096, heads=32)
    (finding,) = _findings(result, "PL301")
    (layout,) = result.layouts
    est = layout_estimate(layout)
    share = est.time_s["bubble"] / est.step_time_s
    # 1F1B with pp 8 and 16 micro-batches: (8-1) idle stage-times of (16 + 8 - 1), 30.4% of the pipelined part;
    # the optimizer and the fixed per-iteration costs, outside it, make the share of the step smaller
    pipelined = sum(est.time_s[k] for k in ("compute", "recompute", "tp", "cp", "ep", "pp", "bubble"))
    assert est.time_s["bubble"] / pipelined == pytest.approx(7 / 23, rel=1e-6)
    assert 0.8 * 7 / 23 < share < 7 / 23
    assert f"pipeline bubble {100 * share:.1f}% of the step" in finding.message
    assert "pp 8, 16 micro-batches per step" in finding.message
    new, variant = _bubble_alternative(layout)
    # the same GPUs, batch, model and tensor parallelism; interleaved, so at least pp micro-batches per step
    assert (new.tp, new.world_size, new.global_batch) == (1, 8, 16) and new.pp >= 2
    assert new.num_layers % (new.pp * (new.vpp or 1)) == 0 and 16 // (new.micro_batch * new.data_parallel()) >= new.pp
    named = f"pp {new.pp}" if new.pp != 8 else ""
    assert named in finding.message and (f"vpp {new.vpp}" in finding.message) == bool(new.vpp)
    gain = 1 - variant.step_time_s / est.step_time_s
    assert gain > 0.05 and f"step predicted {100 * gain:.1f}% shorter" in finding.message
    assert (
        f"bubble {100 * share:.1f}% -> {100 * variant.time_s['bubble'] / variant.step_time_s:.1f}%" in finding.message
    )
    assert "shorter +- 5% (" in finding.message  # (issue 25) the gain with its uncertainty


def test_pipeline_bubble_advises_no_virtual_stages_pl108_rejects(tmp_path):
    # pp 8 with 4 micro-batches per step (global 4, dp 1): the interleaved schedule needs at least pp
    # micro-batches (PL108), so the alternative PL301 names has none; a smaller pipeline is what is left
    result = _launch(tmp_path, "--pipeline-model-parallel-size 8", layers=32, glob=4)
    (finding,) = _findings(result, "PL301")
    assert "4 micro-batches per step" in finding.message and "vpp" not in finding.message
    new, _ = _bubble_alternative(result.layouts[0])
    assert new.vpp is None and f"pp {new.pp} instead" in finding.message
    assert not _findings(result, "PL108")


def test_pipeline_bubble_quiet_with_many_microbatches(tmp_path):
    result = _launch(tmp_path, "--pipeline-model-parallel-size 8", layers=32, glob=512)
    assert not _findings(result, "PL301")


def test_pipeline_bubble_quiet_when_no_layout_of_the_launch_does_better(tmp_path):
    # 35 layers on pp 5 over 5 GPUs, 2 micro-batches of 1 per step: no smaller micro-batch, no other pipeline
    # size of at least 2 dividing both the layers and the GPUs, no virtual stages (2 micro-batches < pp 5):
    # nothing better to name, so PL301 stays quiet about a bubble of over half the step
    result = _launch(tmp_path, "--pipeline-model-parallel-size 5", nproc=5, layers=35, glob=2)
    (layout,) = result.layouts
    assert _bubble_alternative(layout) is None
    est = layout_estimate(layout)
    assert est.time_s["bubble"] / est.step_time_s > 0.5  # a large bubble, and nothing better: quiet
    assert not _findings(result, "PL301")


def test_pipeline_bubble_absolute_threshold_is_an_option(tmp_path):
    (tmp_path / ".plint.toml").write_text("[thresholds]\nbubble = 0.10\n")
    result = _launch(tmp_path, "--pipeline-model-parallel-size 5", nproc=5, layers=35, glob=2)
    (finding,) = _findings(result, "PL301")
    assert "above the configured 10%" in finding.message and "no layout of the same launch" in finding.message


def test_pipeline_bubble_fix_writes_the_alternative(tmp_path):
    from plint.fixing.fix import fix_paths

    # layers wide enough that their GPU time exceeds the host's dispatch of them (Options.host_layer_s):
    # on narrower ones a larger micro-batch (PL310) also shortens the step and the fix pass applies it too
    result = _launch(tmp_path, "--pipeline-model-parallel-size 8", layers=32, glob=16, hidden=4096, heads=32)
    new, _ = _bubble_alternative(result.layouts[0])
    fix_paths([tmp_path / "launch.sh"], unsafe=True)
    (fixed,) = check_paths([tmp_path / "launch.sh"])
    (layout,) = fixed.layouts
    assert (layout.value("parallel.pp"), layout.value("parallel.vpp"), layout.value("batch.micro")) == (
        new.pp,
        new.vpp,
        new.micro_batch,
    )
    assert not _findings(fixed, "PL301")


def test_needless_tensor_parallelism(tmp_path):
    result = _launch(
        tmp_path, "--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer", glob=256
    )
    (finding,) = _findings(result, "PL302")
    inp = cost_input(result.layouts[0])
    simpler = estimate(inp.replace(tp=1, dp=8, sequence_parallel=False, etp=None))
    current = layout_estimate(result.layouts[0])
    assert simpler.step_time_s <= 0.95 * current.step_time_s
    gain = 100 * (1 - simpler.step_time_s / current.step_time_s)
    assert finding.message.startswith("tensor parallelism tp 2 is not needed: tp 1 and dp 8 instead: ")
    assert f"predicted {gain:.1f}% shorter +- 5%" in finding.message
    assert (finding.line, finding.col) == (4, 34)  # the 2 of "    --tensor-model-parallel-size 2" (4 + 28 + 1)


def test_needless_parallelism_quiet_when_the_simpler_layout_does_not_fit(tmp_path):
    # 7B at tp 2 on 8 GPUs without the distributed optimizer: tp 1 would need 18 bytes per parameter
    result = _launch(tmp_path, "--tensor-model-parallel-size 2 --sequence-parallel", **LLAMA_7B)
    inp = cost_input(result.layouts[0])
    simpler = estimate(inp.replace(tp=1, dp=8, sequence_parallel=False, etp=None))
    assert simpler.memory_gib["total"] > 0.9 * simpler.memory_gib["usable"]
    assert not _findings(result, "PL302")


def test_full_recompute_where_selective_fits(tmp_path):
    # layers wide enough that their GPU time, not the host's dispatch of them (Options.host_layer_s), is the step
    result = _launch(
        tmp_path,
        "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1\n--use-distributed-optimizer",
        hidden=4096,
        heads=32,
    )
    (finding,) = _findings(result, "PL308")
    inp = cost_input(result.layouts[0])
    selective = estimate(inp.replace(recompute="selective", recompute_method=None, recompute_num_layers=None))
    assert "--recompute-activations instead: step predicted" in finding.message
    assert f"{selective.memory_gib['total']:.1f} of {selective.memory_gib['usable']:.1f} GiB (" in finding.message
    assert selective.step_time_s < layout_estimate(result.layouts[0]).step_time_s


def test_full_recompute_advice_needs_the_flag_in_the_release(tmp_path):
    """The bigscience fork has only --checkpoint-activations: no selective recompute to advise."""
    ds = '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}, "bf16": {"enabled": true}}'
    launch = (
        "deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json "
        "--zero-stage 1 --tokenizer-name-or-path bigscience/tokenizer --checkpoint-activations "
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --bf16\n"
    )
    result = _check(tmp_path, {"launch.sh": launch, "ds.json": ds})
    (layout,) = result.layouts
    assert layout.extras.release[0] == "bigscience"
    assert layout.value("recompute.granularity") == "full"
    assert not _findings(result, "PL308")


def test_bigscience_pad_vocab_size_to_is_the_vocabulary(tmp_path):
    """BLOOM's launches give --pad-vocab-size-to (250880): the fork pads the tokenizer's vocabulary to
    exactly that (megatron/tokenizer/tokenizer.py, _vocab_size_with_padding), no further. 251008 is a
    multiple of 128 but not of 128 x tp = 512, where Megatron's own padding would have gone on."""
    ds = '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 0}, "bf16": {"enabled": true}}'
    launch = (
        "deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json "
        "--tensor-model-parallel-size 4 --tokenizer-type PretrainedFromHF "
        "--tokenizer-name-or-path bigscience/tokenizer --pad-vocab-size-to 251008 --embed-layernorm "
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --bf16\n"
    )
    result = _check(tmp_path, {"launch.sh": launch, "ds.json": ds})
    (layout,) = result.layouts
    inp = cost_input(layout)
    from plint.cost import count_params

    assert count_params(inp).vocab_padded == 251008
    assert "vocabulary padded to 251,008 (--pad-vocab-size-to)" in layout_estimate(layout).notes


@pytest.mark.parametrize(
    ("ds_extra", "flags", "accum"),
    [
        ("", "", 2.0),  # grad_accum_dtype unset: the model's dtype
        (', "data_types": {"grad_accum_dtype": "fp32"}', "", 4.0),
        ("", " --no-pipeline-parallel", None),  # no pipeline engine: DeepSpeed's plain bf16 wrapper
        ('@1, "data_types": {"grad_accum_dtype": "fp32"}', "", 4.0),  # ZeRO-1 with fp32 accumulation
        ("@1", "", None),  # ZeRO-1 with bf16 accumulation: DeepSpeed's ZeRO optimizer
    ],
)
def test_megatron_deepspeed_bf16_at_zero_0_runs_the_bf16_optimizer(tmp_path, ds_extra, flags, accum):
    ds = '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 0}, "bf16": {"enabled": true}%s}'
    launch = (
        "deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json --zero-stage 0 "
        "--pipeline-model-parallel-size 2 --tokenizer-type GPT2BPETokenizer --vocab-file v.json "
        "--merge-file m.txt --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        f"--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --bf16{flags}\n"
    )
    if flags:
        launch = launch.replace("--pipeline-model-parallel-size 2 ", "")
    if ds_extra.startswith("@1"):  # ZeRO stage 1
        ds, ds_extra = ds.replace('"stage": 0', '"stage": 1'), ds_extra[2:]
        launch = launch.replace("--zero-stage 0", "--zero-stage 1")
    result = _check(tmp_path, {"launch.sh": launch, "ds.json": ds % ds_extra})
    (layout,) = result.layouts
    assert layout.value("trainer") == "megatron-deepspeed"
    assert cost_input(layout).ds_bf16_optimizer_accum_bytes == accum


@pytest.mark.parametrize(
    ("flags", "state_bytes"),
    [
        ("", None),  # 12: fp32 master params and moments
        ("--use-precision-aware-optimizer", 2 + 4 + 4),  # bf16 params: fp32 masters kept as 16-bit remainders
        ("--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16", 2 + 2 + 2),
        (
            "--use-precision-aware-optimizer --main-params-dtype fp16 --exp-avg-dtype fp8 --exp-avg-sq-dtype fp16",
            2 + 1 + 2,
        ),
    ],
)
def test_precision_aware_optimizer_state_bytes(tmp_path, flags, state_bytes):
    result = _launch(tmp_path, f"--use-distributed-optimizer {flags}", **LLAMA_7B)
    inp = cost_input(result.layouts[0])
    assert inp.optimizer_bytes == state_bytes
    from plint.cost import count_params
    from plint.cost.memory import memory_bytes

    mem = memory_bytes(inp, count_params(inp), 1)
    assert mem["optimizer"] == pytest.approx(count_params(inp).total * (state_bytes or 12) / 8)  # dp 8


def test_megatron_deepspeed_pipelines_run_deepspeeds_engine_at_zero_0_too(tmp_path):
    """fp16 at ZeRO 0 with pp 2: Megatron-DeepSpeed builds GPTModelPipe, so DeepSpeed's PipelineEngine
    sends and receives as four blocking transfers per micro-batch, twice Megatron's paired p2p."""
    ds = '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 0}, "fp16": {"enabled": true}}'
    launch = (
        "deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json --zero-stage 0 "
        "--pipeline-model-parallel-size 2 --num-layers 24 --hidden-size 2048 --num-attention-heads 16 "
        "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 "
        "--fp16\n"
    )
    inp = cost_input(_check(tmp_path, {"launch.sh": launch, "ds.json": ds}).layouts[0])
    assert inp.deepspeed_pipeline_engine and inp.zero_stage == 0 and inp.ds_bf16_optimizer_accum_bytes is None
    engine, megatron = estimate(inp), estimate(inp.replace(deepspeed_pipeline_engine=False))
    assert engine.time_s["pp"] == pytest.approx(2 * megatron.time_s["pp"])


@pytest.mark.parametrize(
    ("interval", "moe_layers"), [("", 12), ("--expert-interval 1 ", 24), ("--expert-interval 3 ", 8)]
)
def test_megatron_deepspeed_moe_layers_follow_expert_interval(tmp_path, interval, moe_layers):
    """The deepspeedai fork puts experts where the 1-based layer number is a multiple of
    --expert-interval, 2 by default: the DeepSpeed-MoE 1.3B+MoE-128 recipe has 12 MoE layers of 24."""
    ds = '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 0}, "fp16": {"enabled": true}}'
    launch = (
        "deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json --no-pipeline-parallel "
        f"--num-experts 128 {interval}--moe-expert-parallel-size 8 --num-layers 24 --hidden-size 2048 "
        "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 4 "
        "--global-batch-size 256 --fp16\n"
    )
    inp = cost_input(_check(tmp_path, {"launch.sh": launch, "ds.json": ds}).layouts[0])
    from plint.cost import count_params

    assert count_params(inp).num_moe == moe_layers
    assert inp.moe_layer_freq[:3] == ((0, 1, 0) if not interval else (1, 1, 1) if "1 " in interval else (0, 0, 1))


def test_pl305_under_deepspeed_names_zero_stage_1(tmp_path):
    """Megatron-DeepSpeed with --deepspeed in fp16 at ZeRO 0: DeepSpeed runs the optimizer, so the remedy
    is ZeRO-1 in its config (not --use-distributed-optimizer), with the ZeRO paper's bytes: 16 vs 4 + 12/8."""
    ds = '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 0}, "fp16": {"enabled": true}}'
    launch = (
        "deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json --no-pipeline-parallel "
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --fp16\n"
    )
    (finding,) = _findings(_check(tmp_path, {"launch.sh": launch, "ds.json": ds}), "PL305")
    assert finding.message == (
        "dp 8 at ZeRO stage 0: every rank keeps the full fp32 master weights and Adam moments "
        '(16 bytes per parameter instead of 4 + 12/8 = 5.5 with "zero_optimization": '
        '{"stage": 1} in the DeepSpeed config)'
    )
    assert finding.path.endswith("ds.json") and finding.key == "parallel.zero_stage"


@pytest.mark.parametrize(
    ("precision", "extra", "expected"),
    [
        ("--bf16", "--pipeline-model-parallel-size 2", None),  # BF16_Optimizer shards it: exempt
        (
            "--bf16",
            "--no-pipeline-parallel",
            "fp32 master weights and Adam moments (16 bytes per parameter instead of 4 + 12/8 = 5.5",
        ),  # DeepSpeed's plain bf16 wrapper
        ("", "--no-pipeline-parallel", "Adam moments (16 bytes per parameter instead of 8 + 8/8 = 9.0"),  # fp32
    ],
)
def test_pl305_under_deepspeed_follows_the_optimizer_deepspeed_builds(tmp_path, precision, extra, expected):
    dtype = {"--bf16": ', "bf16": {"enabled": true}', "": ""}[precision]
    ds = '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 0}%s}' % dtype
    launch = (
        f"deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json {extra} "
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        f"--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 {precision}\n"
    )
    found = _findings(_check(tmp_path, {"launch.sh": launch, "ds.json": ds}), "PL305")
    if expected is None:
        assert found == []
    else:
        (finding,) = found
        assert expected in finding.message


def test_low_mfu_from_communication_is_left_to_the_rule_that_names_a_layout(tmp_path):
    # GPT-2 small at tp 8: the MFU is low because tensor-parallel communication takes the step, which PL310
    # no longer only describes: PL302 names the layout without it, and PL310 speaks only of a micro-batch
    # (4 x 4,096-token micro-batches: enough for the collectives to outlast the host's dispatch of the layers)
    result = _launch(
        tmp_path,
        "--tensor-model-parallel-size 8 --sequence-parallel --use-distributed-optimizer",
        layers=12,
        hidden=768,
        heads=12,
        seq=4096,
        micro=4,
        glob=256,
    )
    est = layout_estimate(result.layouts[0])
    assert est.mfu < 0.35 and est.time_s["tp"] > 0.1 * est.step_time_s
    (needless,) = _findings(result, "PL302")
    assert needless.message.startswith("tensor parallelism tp 8 is not needed")
    assert all("--micro-batch-size" in f.message for f in _findings(result, "PL310"))


SMALL_GPT = dict(layers=12, hidden=768, heads=12)  # GPT-2 small: GEMMs far below peak at any layout
WIDE_FEW_LAYERS = dict(layers=4, hidden=8192, heads=64)  # 512-row GEMMs below peak, yet longer than the host's dispatch
OVERLAPPED_DP = "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"


def test_dropout_probabilities_reach_the_cost_model(tmp_path):
    result = _launch(tmp_path, "--hidden-dropout 0.0 --attention-dropout 0", **LLAMA_7B)
    inp = cost_input(result.layouts[0])
    assert (inp.hidden_dropout, inp.attention_dropout) == (0.0, 0.0)
    (tmp_path / "default").mkdir()
    default = cost_input(_launch(tmp_path / "default", "", **LLAMA_7B).layouts[0])
    assert (default.hidden_dropout, default.attention_dropout) == (0.1, 0.1)  # Megatron's defaults


def test_low_mfu_stays_quiet_when_model_compute_is_the_step(tmp_path):
    """A GPT-2-small data-parallel launch with 32k-row GEMMs: its MFU is low by the model's shape alone,
    and neither the layout nor a larger micro-batch buys back enough to say anything. (Four micro-batches
    per step, each outlasting the host's dispatch of it: the iteration's fixed costs stay a small part.)"""
    result = _launch(tmp_path, OVERLAPPED_DP, seq=4096, micro=8, glob=1024, **SMALL_GPT)
    est = layout_estimate(result.layouts[0])
    assert est.mfu < 0.35  # below the threshold: the rule looked
    assert est.time_s["compute"] > 0.9 * est.step_time_s
    assert not _findings(result, "PL310")


def test_low_mfu_names_the_larger_micro_batch_when_compute_is_the_step(tmp_path):
    """512-row GEMMs (micro-batch 1, seq 512): the fastest micro-batch that divides the 32 sequences per
    rank and fits is named, with the cost model's numbers for it. Layers of h = 8192, so that even 512 rows
    outlast the host's dispatch of the layer (Options.host_layer_s; GPT-2 small's would wait on the host);
    their MFU (42%) is below a threshold of 50%. A global batch of 512, so that the iteration's fixed costs
    (Options.host_step_s) stay under a tenth of the step."""
    (tmp_path / ".plint.toml").write_text("[thresholds]\nmfu = 0.5\n")
    result = _launch(tmp_path, OVERLAPPED_DP, seq=512, micro=1, glob=512, **WIDE_FEW_LAYERS)
    (finding,) = _findings(result, "PL310")
    inp = cost_input(result.layouts[0])
    est = estimate(inp)
    assert est.time_s["compute"] > 0.9 * est.step_time_s
    # every micro-batch that divides 512 / dp 8 = 64 sequences, re-estimated here
    variants = {m: estimate(inp.replace(micro_batch=m)) for m in (2, 4, 8, 16, 32, 64)}
    # the rule's own memory test: the high end of the estimate's error band within usable memory
    fitting = {m: v for m, v in variants.items() if fits_in_memory(v)}
    best = min(fitting, key=lambda m: fitting[m].step_time_s)
    gain = 1 - fitting[best].step_time_s / est.step_time_s
    assert gain >= 0.05
    assert f"--micro-batch-size {best} (larger GEMMs)" in finding.message
    assert f"predicted {100 * gain:.1f}% shorter" in finding.message
    assert (finding.line, finding.col) == (7, 24)  # the 1 of "    --micro-batch-size 1" (4 + 18 + 1)


def test_low_mfu_micro_batch_advice_names_the_deepspeed_config_too(tmp_path):
    """Megatron-DeepSpeed checks --micro-batch-size against train_micro_batch_size_per_gpu (PL106): the
    advice changes both, or following it would trade an info for an error."""
    ds = '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}, "bf16": {"enabled": true}}'
    launch = (
        "deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json --no-pipeline-parallel "
        "--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 512 "
        "--max-position-embeddings 512 --micro-batch-size 1 --global-batch-size 256 --bf16\n"
    )
    (finding,) = _findings(_check(tmp_path, {"launch.sh": launch, "ds.json": ds}), "PL310")
    micro = re.search(r"--micro-batch-size (\d+)", finding.message).group(1)
    assert f'--micro-batch-size {micro} and "train_micro_batch_size_per_gpu": {micro} in ' in finding.message
    # GPT-2 small's 512-row micro-batches wait on the host's dispatch of their layers: fewer of them is the gain
    assert "ds.json (fewer micro-batches for the host to dispatch)" in finding.message


def test_low_mfu_micro_batch_advice_divides_the_batch(tmp_path):
    """Global 96 on dp 8: 12 sequences per rank, so Megatron accepts micro-batches 2, 3, 4, 6 and 12.
    One of 11 would process 11 of the 12 sequences per step, so its estimate is shorter still: advice
    that did not check divisibility would name it."""
    (tmp_path / ".plint.toml").write_text("[thresholds]\nmfu = 0.5\n")  # GPU-bound layers, as above
    result = _launch(tmp_path, OVERLAPPED_DP, seq=512, micro=1, glob=96, **WIDE_FEW_LAYERS)
    (finding,) = _findings(result, "PL310")
    inp = cost_input(result.layouts[0])
    steps = {m: estimate(inp.replace(micro_batch=m)).step_time_s for m in (2, 3, 4, 6, 11, 12)}
    assert steps[11] < steps[12] == min(steps[m] for m in (2, 3, 4, 6, 12))
    assert "--micro-batch-size 12 (larger GEMMs)" in finding.message


TWO_NODES = "torchrun --nproc_per_node 8 --nnodes 2 --master_addr n0"


def test_cp_across_nodes_names_the_smaller_cp_that_does_better(tmp_path):
    """tp 4 x cp 4 on two 8-GPU nodes, MHA at 32k: the ring's K/V blocks outweigh the attention they
    feed; tp 4 x cp 2 (dp 2) stays in a node, fits, and is predicted faster: the message names it, with
    the estimate's share of the step and the gain."""
    from plint.planning.alternatives import context_layouts

    files = torchrun(
        gpt("--tensor-model-parallel-size 4 --context-parallel-size 4 --sequence-parallel", seq=32768, glob=32),
        launcher=TWO_NODES,
    ).files
    result = _check(tmp_path, files)
    (finding,) = _findings(result, "PL202")
    inp, est = cost_input(result.layouts[0]), layout_estimate(result.layouts[0])
    share = est.time_s["cp"] / est.step_time_s
    (smaller,) = context_layouts(inp, 8)  # cp 2 is the only size of at least 2 that fits with tp 4 in a node
    variant = estimate(smaller)
    gain = 1 - variant.step_time_s / est.step_time_s
    assert (smaller.cp, smaller.data_parallel()) == (2, 2) and gain > 0.05
    assert f"the context-parallel ring crosses nodes ({100 * share:.1f}% of the step)" in finding.message
    assert f"cp 2 and dp 2 instead keep it inside a node: step predicted {100 * gain:.1f}% shorter" in finding.message


def test_cp_across_nodes_is_quiet_when_the_ring_hides_under_attention(tmp_path):
    """NVIDIA's Llama-3.1 405B layout crosses nodes with tp 8 x cp 2: with 8 KV groups a GPU's K/V block
    is small next to the attention over a 4k chunk, so the estimate puts CP traffic far under 5%."""
    files = torchrun(
        gpt(
            "--tensor-model-parallel-size 8 --context-parallel-size 2 --sequence-parallel "
            "--group-query-attention --num-query-groups 8 --swiglu --ffn-hidden-size 53248 "
            "--use-distributed-optimizer --recompute-activations",
            layers=8,
            hidden=16384,
            heads=128,
            seq=8192,
            glob=32,
        ),
        launcher=TWO_NODES,
    ).files
    result = _check(tmp_path, files)
    est = layout_estimate(result.layouts[0])
    assert est.time_s["cp"] / est.step_time_s < 0.05
    assert result.layouts[0].value("parallel.tp") * result.layouts[0].value("parallel.cp") == 16  # crosses
    assert not _findings(result, "PL202")


def test_fp8_launches_get_a_memory_verdict(tmp_path):
    """(issue 23: fp8 was 'memory not modelled' and silent) The 7B launch that PL401 flags in bf16 gets a
    verdict in fp8 too: Transformer Engine's cached fp8 weights and transposes (2 B per GEMM weight) are
    counted, and with --fp8-param-gather, where the fp8 weight replaces the 16-bit one, they are not."""
    bf16 = _launch(tmp_path, "--tensor-model-parallel-size 1", micro=4, **LLAMA_7B)
    assert _findings(bf16, "PL401")
    (tmp_path / "fp8").mkdir()
    fp8 = _launch(tmp_path / "fp8", "--tensor-model-parallel-size 1 --fp8-format hybrid", micro=4, **LLAMA_7B)
    est = file_json(fp8)["layout"]["estimate"]
    assert not any("not modelled" in note for note in est["notes"])
    assert _findings(fp8, "PL401")
    # 32 layers x (12h^2 + 7h) GEMM weights and column-parallel biases of 2 B each beside the 16-bit weights
    gemm = 32 * (12 * 4096 * 4096 + 7 * 4096)
    bf16_mem, fp8_mem = layout_estimate(bf16.layouts[0]).memory_gib, layout_estimate(fp8.layouts[0]).memory_gib
    assert (fp8_mem["weights"] - bf16_mem["weights"]) * 2**30 == pytest.approx(2 * gemm, rel=1e-3)
    (tmp_path / "gather").mkdir()
    gather = _launch(
        tmp_path / "gather",
        "--tensor-model-parallel-size 1 --fp8-format hybrid --fp8-param-gather --use-distributed-optimizer",
        micro=4,
        **LLAMA_7B,
    )
    plain = _launch(
        tmp_path / "gather", "--tensor-model-parallel-size 1 --use-distributed-optimizer", micro=4, **LLAMA_7B
    )
    assert (
        layout_estimate(gather.layouts[0]).memory_gib["weights"]
        == layout_estimate(plain.layouts[0]).memory_gib["weights"]
    )


def test_advice_on_fp8_leaves_room_for_te_weight_copies(tmp_path):
    """Llama-3-8B-like with 31 layers, tp 2: in bf16, PL302 says tp 1 fits (61.3 of 74.4 GiB, 62.4 at the high
    end of its band). In fp8, Transformer Engine's cached fp8 weights and transposes (2 B per GEMM weight)
    make tp 1 73.9 GiB, 75.2 at the high end of its +-1.8% band: the advice must not claim tp 1 fits. (issue 25:
    fitting is judged by the band, no longer by a 90% headroom; at 28 layers tp 1 in fp8, 67.9 GiB and
    71.2 at the band's high end, now fits, so the case moved to 30 layers; issue 23's measured fp8 band,
    +-1.8% instead of +-4.8%, lets 30 layers fit too (71.9, 73.2 at the high end), so it moved to 31.)"""
    shape = (
        "--sequence-parallel --use-distributed-optimizer --ffn-hidden-size 14336 --group-query-attention "
        "--num-query-groups 8 --swiglu --untie-embeddings-and-output-weights --vocab-size 128256 "
        "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
    )
    model = dict(LLAMA_7B, layers=31)
    bf16 = _launch(tmp_path, f"--tensor-model-parallel-size 2 {shape}", glob=256, **model)
    (advice,) = _findings(bf16, "PL302")
    assert "tp 1 and dp 8 instead" in advice.message
    (tmp_path / "fp8").mkdir()
    fp8 = _launch(tmp_path / "fp8", f"--tensor-model-parallel-size 2 {shape} --fp8-format hybrid", glob=256, **model)
    inp = cost_input(fp8.layouts[0])
    tp1 = estimate(inp.replace(tp=1, dp=8, sequence_parallel=False)).memory_gib
    assert tp1["total"] <= tp1["usable"] < tp1["total"] + tp1["error_band"] * tp1["allocator_peak"]
    assert not _findings(fp8, "PL302")


def test_rules_stay_silent_on_what_the_model_leaves_out(tmp_path):
    """Activation offloading: the estimate is reported, with the reason no rule uses it. (Multi-latent attention was
    this example until issue 23 costed it, then multi-token prediction, costed too.)"""
    result = _launch(tmp_path, "--cpu-offloading --tensor-model-parallel-size 1", micro=4, **LLAMA_7B)
    est = file_json(result)["layout"]["estimate"]
    assert est is not None and est["memory_gib"]["total"] > est["memory_gib"]["usable"]
    assert any("not modelled: activation offloading" in note for note in est["notes"])
    assert not [d for d in result.diagnostics if d.code in ("PL301", "PL302", "PL308", "PL310", "PL401", "PL402")]


@pytest.mark.parametrize(
    "flag, why",
    [
        ("--freeze-LM --freeze-ViT", "frozen parameters"),  # examples/multimodal: only the projector trains
        ("--model-provider llava_vlm", "own model provider"),  # examples/mimo: encoders around the language model
    ],
)
def test_rules_stay_silent_on_a_model_the_flags_do_not_describe(tmp_path, flag, why):
    result = _launch(tmp_path, f"{flag} --tensor-model-parallel-size 1", micro=4, **LLAMA_7B)
    est = file_json(result)["layout"]["estimate"]
    assert est is not None and est["memory_gib"]["total"] > est["memory_gib"]["usable"]
    assert any(why in note for note in est["notes"])
    assert not [d for d in result.diagnostics if d.code in ("PL301", "PL302", "PL308", "PL310", "PL401", "PL402")]


def test_cluster_bandwidth_from_the_configuration_changes_the_estimate(tmp_path):
    files = torchrun(gpt("--use-distributed-optimizer", **LLAMA_7B), nproc=8).files
    files["launch.sh"] = files["launch.sh"].replace(
        "torchrun --nproc_per_node 8", "torchrun --nnodes 4 --nproc_per_node 8"
    )
    base = layout_estimate(_check(tmp_path, files, isolated=True).layouts[0])
    (tmp_path / ".plint.toml").write_text("inter-node-bandwidth-gbps = 25\n")
    slow = _check(tmp_path, files)
    est = layout_estimate(slow.layouts[0])
    assert cost_input(slow.layouts[0]).nic_gbps == 25
    assert est.time_s["dp"] > base.time_s["dp"]


def test_json_estimate_round_trips(tmp_path):
    result = _launch(tmp_path, "--use-distributed-optimizer", **LLAMA_7B)
    doc = json.loads(json.dumps(file_json(result)))
    assert re.fullmatch(r"h100-sxm", doc["layout"]["cluster"]["gpu"])
    assert doc["layout"]["estimate"]["params"] == layout_estimate(result.layouts[0]).params


def test_vocabulary_from_the_tokenizer_name(tmp_path):
    # Meta-Llama-3's config.json: vocab_size 128256
    result = _launch(
        tmp_path, "--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Meta-Llama-3-8B", **LLAMA_7B
    )
    (layout,) = result.layouts
    assert cost_input(layout).vocab_size == 128256
    assert any("Meta-Llama-3-8B" in note for note in layout_estimate(layout).notes)


@pytest.mark.parametrize("release, honoured", [("0.6", True), ("0.16", False)])
def test_no_async_tp_flag_costs_time_only_where_the_release_reads_it(tmp_path, release, honoured):
    # --no-async-tensor-model-parallel-allreduce makes the backward's all-reduce wait in megatron-core
    # up to 0.6 (tensor_parallel/layers.py reads config.async_tensor_model_parallel_allreduce); from 0.7
    # the flag is parsed and ignored, the all-reduce always runs under the weight-gradient GEMM
    (tmp_path / ".plint.toml").write_text(f'megatron = "{release}"\n')

    def tp_time(extra):
        est = file_json(_launch(tmp_path, "--tensor-model-parallel-size 2" + extra, **LLAMA_7B))["layout"]["estimate"]
        return est["time_s"]["tp"]

    plain, flagged = tp_time(""), tp_time(" --no-async-tensor-model-parallel-allreduce")
    assert plain > 0
    assert (flagged > 1.5 * plain) if honoured else (flagged == plain)


@pytest.mark.parametrize(
    ("flags", "grad_bytes"),
    [
        ("", 4),  # bf16: validate_args turns on fp32 accumulation, so the DDP buffer is fp32
        ("--grad-reduce-in-bf16", 2),
        ("--use-precision-aware-optimizer --main-grads-dtype bf16", 2),  # fp32 accumulation stays off
        ("--use-precision-aware-optimizer --main-grads-dtype fp32", 4),
    ],
)
def test_gradient_buffer_bytes_follow_the_main_grads_dtype(tmp_path, flags, grad_bytes):
    from plint.cost import count_params
    from plint.cost.memory import memory_bytes

    result = _launch(tmp_path, f"--use-distributed-optimizer {flags}", **LLAMA_7B)
    inp = cost_input(result.layouts[0])
    mem = memory_bytes(inp, count_params(inp), 1)
    assert mem["grads"] == pytest.approx(count_params(inp).total * grad_bytes)


@pytest.mark.parametrize(
    ("flags", "grad_bytes", "dtype"),
    [
        ("", 2, "fp16"),  # fp16: DDP's buffer takes the fp16 parameters' dtype
        ("--accumulate-allreduce-grads-in-fp32", 4, "fp32"),  # grad_reduce_in_fp32: a torch.float buffer
    ],
)
def test_fp16_gradient_buffer_is_fp32_only_when_accumulated_in_fp32(tmp_path, flags, grad_bytes, dtype):
    from plint.cost import count_params
    from plint.cost.memory import memory_bytes
    from plint.planning.plan import reduce_dtype

    launch = torchrun(gpt(f"--use-distributed-optimizer {flags}", **LLAMA_7B).replace("--bf16", "--fp16"))
    inp = cost_input(_check(tmp_path, launch.files).layouts[0])
    assert inp.precision == "fp16"
    mem = memory_bytes(inp, count_params(inp), 1)
    assert mem["grads"] == pytest.approx(count_params(inp).total * grad_bytes)
    assert reduce_dtype(inp) == dtype  # what `plint plan` prints in its reduce column


def test_cpu_offload_gets_a_memory_verdict_and_host_memory_but_no_time_rules(tmp_path):
    """(issue 23) ZeRO-2 with the optimizer on the CPU: the GPU keeps the 16-bit weights (DeepSpeed's estimator:
    2P), the host memory per node is P x max(4 x 8, 16) x 1.5; the step's time (a CPU optimizer step, host
    transfers) is not modelled, so the time rules stay silent and the estimate says so."""
    ds = (
        '{"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, '
        '"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}'
    )
    launch = (
        "deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json --zero-stage 2 "
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --vocab-size 50304 "
        "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --bf16\n"
    )
    result = _check(tmp_path, {"launch.sh": launch, "ds.json": ds})
    est = layout_estimate(result.layouts[0])
    p = est.params
    assert est.memory_gib["optimizer"] == 0.0
    assert est.memory_gib["weights"] + est.memory_gib["grads"] == pytest.approx(2 * p / 2**30)
    assert est.host_memory_gib == pytest.approx(p * 32 * 1.5 / 2**30)
    assert file_json(result)["layout"]["estimate"]["host_memory_gib"] == round(est.host_memory_gib, 2)
    assert any(n.startswith("time not modelled: ZeRO optimizer offload to cpu") for n in est.notes)
    assert not [d for d in result.diagnostics if d.code in ("PL301", "PL302", "PL308", "PL310")]


@pytest.mark.parametrize(("named", "severity"), [(None, "warning"), ("h100-sxm", "error")])
def test_predicted_oom_is_an_error_once_the_gpu_is_named(tmp_path, named, severity):
    """A GPU named by --gpu or [tool.plint] gpu is not one plint assumed: PL401 is an error on it and does not
    ask for the GPU to be named (it did, calling the named GPU assumed)."""
    kwargs = {"gpu": named} if named else {}
    result = _check(tmp_path, torchrun(gpt("--tensor-model-parallel-size 1", micro=4, **LLAMA_7B)).files, **kwargs)
    (finding,) = _findings(result, "PL401")
    assert finding.severity == severity
    assert ("the GPU is assumed" in finding.message) == (named is None)


def test_no_distributed_optimizer_advice_where_the_release_has_none(tmp_path):
    """bigscience's Megatron-DeepSpeed run without --deepspeed: Megatron's own optimizer, no ZeRO stage whatever
    --zero-stage says (the fork's training.py builds DeepSpeed only under args.deepspeed), and no
    --use-distributed-optimizer in its parser to advise."""
    launch = (
        "torchrun --nproc_per_node 8 pretrain_gpt.py --zero-stage 1 --tokenizer-name-or-path bigscience/tokenizer "
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --bf16\n"
    )
    result = _check(tmp_path, {"launch.sh": launch})
    (layout,) = result.layouts
    assert layout.extras.release[0] == "bigscience"
    assert layout.value("parallel.zero_stage") is None and layout.value("parallel.sharding") == "none"
    assert not _findings(result, "PL305")


@pytest.mark.parametrize("extra, severity", [("", "error"), (" --attention-head-type multiquery", "warning")])
def test_full_recompute_without_a_layer_count_rests_on_the_parser(tmp_path, extra, severity):
    """Every Megatron-LM plint ships (core 0.4 on) leaves --recompute-num-layers without a default and its
    TransformerConfig refuses full recompute without one: an error. A launch with a flag the assumed parser lacks
    (BigCode's fork, spyysalo/lumi-llm-scaling) runs another parser, older ones defaulting it to 1: a warning."""
    launch = (
        "torchrun --nproc_per_node 8 pretrain_gpt.py --recompute-granularity full --recompute-method uniform "
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
        f"--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --bf16{extra}\n"
    )
    (finding,) = _findings(_check(tmp_path, {"launch.sh": launch}), "PL112")
    assert finding.severity == severity and "needs --recompute-num-layers" in finding.message
