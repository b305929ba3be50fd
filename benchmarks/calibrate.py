"""Calibrate plint's cost model against published training runs.

Runs the estimator over benchmarks/data/published_runs_calibration.yaml (or the file given) and prints,
per run, predicted vs published tokens/s per GPU and the error, then the mean absolute percentage
error (MAPE) for dense and MoE runs apart. There are no per-run constants: every run uses the same
physical settings (Options defaults and the hardware catalog). What each run states is read as a fact:
model shape, GPUs, layout, batch, precision, recompute, network per GPU; its era decides flash
attention (none before 2023), its framework the overlaps it turns on by default (DeepSpeed ZeRO-3
of 2021 overlapped no parameter gathers). Facts stated in notes are read too: a head size other
than h/heads ("heads of dim 64"), "PP with interleaving"
without a chunk count (one layer per virtual stage when the layers divide evenly, as NeMo's
Nemotron-4 340B recipe does), fp8 with current scaling (Bridge "current scaling", torchao Float8);
Megatron-Bridge runs get what all of its performance recipes set: ETP = 1 for MoE when no expert TP
is stated, gradients reduced in bf16. What a run's own publication states beyond the data (its authors'
scripts' micro-batch and virtual stages, its recipe's flags) comes from benchmarks/published_supplements.py,
the same facts scripts/write_good_launches.py writes into the run's launch under fixtures/good.

Published throughput is the entry's tokens/s per GPU, else tokens per step / step time / GPUs, else
its TFLOP/s per GPU divided by the FLOPs per token of the definition the entry states (SC21 and
GLM count the recompute forward; the Megatron-Core r0.8 README and Korthikanti count full
attention without recompute). Runs without a layout, batch or stated FLOP definition are listed as
skipped with the reason.

The figure issue 24 holds the step time to is the last line: the dense runs of the trainers plint reads
(PLINT_TRAINERS: Megatron-LM, Megatron-Core/NeMo, Megatron-Bridge, Megatron-DeepSpeed, GPT-NeoX), listed by
name above it with the dense runs of the other trainers. The one coefficient fitted on these runs,
GPU.scale_out_rate_factor, is fitted and left out run by run by benchmarks/fit_scale_out_rate.py.

    python benchmarks/calibrate.py [path/to/published_runs_calibration.yaml] [--json] [--fit-moe-imbalance]
"""

from __future__ import annotations

import json
import re
import signal
import sys
from pathlib import Path

import yaml
from plint.catalog.hardware import GPU, lookup_gpu
from plint.cost import ModelInput, Options, estimate, flops_per_token

sys.path.insert(0, str(Path(__file__).resolve().parent))
from published_supplements import with_publication  # noqa: E402  what the runs' publications state beyond the data

# the published runs, one entry per run with its source (facts only: shape, cluster, layout, throughput)
DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "published_runs_calibration.yaml"


def _gpu(text: str) -> str | None:
    if lookup_gpu(text):
        return lookup_gpu(text).name
    first = re.split(r"[\s(]", text.strip())[0]
    gpu = lookup_gpu(first)
    return gpu.name if gpu else None


def _precision(text: str | None, gpu: str) -> str:
    t = (text or "").lower()
    if "fp8" in t:
        return "fp8"
    if "bf16" in t:
        return "bf16"
    if "fp16" in t or gpu.startswith("v100"):
        return "fp16"
    return "bf16"


def _recompute(text) -> str | None:
    t = str(text or "").lower()
    if t.startswith("full"):
        return "full"
    if t.startswith(("selective", "some")):
        return "selective"
    return None


def _gated(family: str, ffn: int | None, h: int) -> bool:
    f = family.lower()
    return any(w in f for w in ("llama", "swiglu", "geglu", "qwen", "deepseek", "gpt-oss"))


def _biased(family: str, gated: bool) -> bool:
    """Whether the model's linear layers carry biases (Megatron's add_bias_linear). The gated families leave them
    out (their providers and the launches under fixtures/good: --disable-bias-linear with --swiglu), but gpt-oss
    keeps them (NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/gpt_oss/gpt_oss_bridge.py provider_bridge:
    add_bias_linear True); the others take Megatron's default, with bias."""
    return not gated or "gpt-oss" in family.lower()


# The clamp of a gated activation a family's provider sets (Megatron's activation_func_clamp_value): gpt-oss's
# quick-GeGLU clamps at 7.0 (NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/gpt_oss/gpt_oss_bridge.py
# provider_bridge: activation_func quick_gelu, gated_linear_unit, activation_func_clamp_value 7.0, and
# bias_activation_fusion, the fused kernel path)
ACTIVATION_CLAMPS = {"gpt-oss": 7.0}


def _activation_clamp(family: str) -> float | None:
    return next((clamp for word, clamp in ACTIVATION_CLAMPS.items() if word in family.lower()), None)


# The MoE families whose NeMo and Megatron-Bridge configs run TE's GroupedLinear experts (moe_grouped_gemm True):
# NeMo nemo/collections/llm/gpt/model/deepseek.py DeepSeekConfig, llama.py Llama4Config, gpt_oss.py GPTOSSConfig,
# qwen3.py Qwen3Config; Megatron-Bridge src/megatron/bridge/models/qwen/qwen_provider.py Qwen3MoEModelProvider.
# Grok-1's NeMo config is not in NeMo's tree: left SequentialMLP, Megatron's default.
GROUPED_EXPERT_FAMILIES = ("deepseek", "llama 4", "llama4", "gpt-oss", "qwen3")


def _grouped_experts(framework: str, family: str) -> bool:
    """Whether an NVIDIA recipe ran the family's experts as TE GroupedLinear (--moe-grouped-gemm)."""
    family = family.lower()
    nvidia = "nemo" in framework or "bridge" in framework
    return nvidia and any(word in family for word in GROUPED_EXPERT_FAMILIES)


def _moe_pattern(text: str | None, layers: int) -> int | tuple[int, ...]:
    t = (text or "").lower()
    m = re.search(r"first (\d+|one)? ?layers? dense", t)
    if m:
        dense = 1 if m.group(1) in (None, "one") else int(m.group(1))
        return tuple([0] * dense + [1] * (layers - dense))
    if "alternating" in t:
        return 2
    return 1


def to_input(run: dict) -> tuple[ModelInput | None, str]:
    """A ModelInput from a calibration entry, or None and why not."""
    model, cluster, layout = run["model"], run["cluster"], run["layout"]
    if not model.get("num_layers") or not model.get("hidden_size"):
        return None, "no model shape"
    gpu = _gpu(cluster.get("gpu") or "")
    if gpu is None:
        return None, f"GPU {cluster.get('gpu')!r} not in the catalog"
    world = cluster.get("total_gpus")
    tp, pp = layout.get("tp"), layout.get("pp")
    if not world or tp is None or pp is None:
        return None, "no GPU count or no TP/PP"
    cp = layout.get("cp") or 1
    per_node = cluster.get("gpus_per_node") or 8
    seq = model["seq_length"]
    global_batch = layout.get("global_batch_seqs") or (
        round(layout["global_batch_tokens"] / seq) if layout.get("global_batch_tokens") else None
    )
    if not global_batch:
        return None, "no global batch"
    dp = layout.get("dp") or world // (tp * pp * cp)
    framework = (run.get("framework") or "").lower()
    text = " ".join(str(x) for x in (run.get("source"), layout.get("notes"), run.get("framework")))
    modern = any(w in framework for w in ("nemo", "bridge", "megatron-core", "torchtitan"))
    tp_overlap = "tp comm overlap" in text.lower() or "async tp" in text.lower() or ("bridge" in framework and tp > 1)
    dp_overlap = "overlap" in text.lower() and "grad" in text.lower() or "bridge" in framework
    sp = layout.get("sequence_parallel")
    if sp is None:
        sp = modern and tp > 1  # NeMo / Bridge / MCore recipes pair SP with TP
    zero = layout.get("zero_stage")
    fsdp = str(layout.get("fsdp") or "").lower()
    if zero is None and ("full_shard" in fsdp or "fsdp" in fsdp and "no" not in fsdp):
        zero = 3
    # a parameter all-gather ("param-gather", "param_sync") only exists with the distributed optimizer;
    # a stated fully sharded run (Bridge's Megatron FSDP) shards parameters too, read as ZeRO-3
    dist_opt = zero != 3 and (
        bool(layout.get("distributed_optimizer"))
        or "bridge" in framework
        or bool(re.search(r"param[-_ ](gather|sync)", text))
    )
    moe = model.get("moe") or {}
    h = model["hidden_size"]
    # a head size the entry states that differs from h/heads (gpt-oss: 64 heads of dim 64 at h = 2880)
    head_dim = re.search(r"heads? of dim (\d+)", str(model.get("notes") or ""))
    kv_channels = int(head_dim.group(1)) if head_dim else None
    # "PP with interleaving" and no chunk count: one layer per virtual stage when the layers divide
    # evenly (Nemotron-4 340B: 96 layers / PP 12 -> 8, the NeMo nemotron4_340b recipe's
    # virtual_pipeline_parallelism=8); otherwise the count is unknown and 1F1B is assumed
    vpp = layout.get("vpp")
    if (
        not vpp
        and pp > 1
        and "with interleaving" in str(layout.get("notes") or "").lower()
        and model["num_layers"] % pp == 0
        and model["num_layers"] // pp > 1
    ):
        vpp = model["num_layers"] // pp
    # Megatron-Bridge's MoE recipes set expert_tensor_parallel_size=1 (scripts/performance/configs:
    # the Qwen3, GPT-OSS and DeepSeek-V3 workload bases); Megatron's own default is ETP = TP
    etp = layout.get("expert_tp") or (1 if "bridge" in framework and moe.get("num_experts") else None)
    dispatcher, a2a_overlap = _bridge_moe_recipe(framework, model, cluster)
    # fp8 with current (per-tensor dynamic) scaling: Bridge "fp8 (current scaling)", torchao Float8
    prec_text = f"{run.get('precision')} {run.get('framework')}".lower()
    # and MXFP8 (Blackwell block scaling: Bridge "MXFP8" / "FP8-MX")
    if "current scaling" in prec_text or "torchao" in prec_text:
        fp8_recipe = "tensorwise"
    elif "mxfp8" in prec_text or "fp8-mx" in prec_text:
        fp8_recipe = "mxfp8"
    else:
        fp8_recipe = "delayed"
    # what a recipe the entry quotes states: its dropout ("hidden_dropout 0.0") and bf16 gradient reduction
    # (NeMo's "grad_sync_dtype bf16", Megatron-LM's --grad-reduce-in-bf16)
    recipe = str(layout.get("notes") or "").lower()
    dropout = {
        name: float(found.group(1))
        for name in ("hidden_dropout", "attention_dropout")
        if (found := re.search(rf"{name}:? (\d+(?:\.\d+)?)", recipe))
    }
    # DeepSpeed ZeRO-3 before its mid-2021 rework (prefetch and coalesced all-gathers, DeepSpeed#1170,
    # v0.5) gathered each module's parameters on demand, serialised with compute: on DeepSpeed 0.3.16
    # a 5B BERT's forward took 480 ms against 60 ms with ZeRO-2 on 8 x A100 (DeepSpeed#1174, June 2021)
    zero_overlap = False if zero == 3 and "deepspeed" in framework and run.get("year", 2024) <= 2021 else None
    options = Options(
        flash_attention=run.get("year", 2024) >= 2023,
        zero_overlap_comm=zero_overlap,
        # DeepSpeed's per-sub-module hooks gather again for a recompute; FSDP (and, not
        # knowing better, other sharders such as SageMaker SMP) unshard a block once
        zero3_engine="deepspeed" if "deepspeed" in framework else "fsdp",
        tp_comm_overlap=bool(tp_overlap and sp),
        # Megatron-LM made the backward's TP collectives asynchronous in Sept 2021, after
        # the SC21 runs; the 2021-22 DeepSpeed-era codes (MT-NLG, GLM) are read as without it
        tp_async_backward=run.get("year", 2024) >= 2023,
        # Megatron-LM's interleaved schedule first overlapped its p2p sends with compute in 23.06
        # (--overlap-p2p-communication, opt-in; megatron/arguments.py, absent from 23.04): runs
        # before 2023 sent each chunk's activations as a blocking batched p2p
        overlap_p2p_comm=False if run.get("year", 2024) < 2023 else None,
        # and until its p2p moved into megatron/core (2023-03-23) split each send over the TP ranks
        # (--no-scatter-gather-tensors-in-pipeline to turn off; Options.pp_scatter_gather)
        pp_scatter_gather=run.get("year", 2024) < 2023 and framework.startswith("megatron-lm"),
        overlap_grad_reduce=bool(dp_overlap),
        overlap_param_gather=bool(dp_overlap),
        fp8_recipe=fp8_recipe,
        # Megatron-Bridge's performance configs reduce gradients in bf16
        # (mixed_precision.grad_reduce_in_fp32: false); Megatron-LM forces fp32 with bf16
        grad_reduce_bytes=2 if "bridge" in framework or "grad_sync_dtype bf16" in recipe else None,
        moe_dispatcher=dispatcher,
        moe_a2a_overlap=a2a_overlap,
        position_embedding="rope" if "gpt-3" not in (model.get("family") or "").lower() else None,
    )
    inp = ModelInput(
        num_layers=model["num_layers"],
        hidden_size=h,
        **dropout,
        num_attention_heads=model["num_attention_heads"],
        num_query_groups=model.get("num_kv_heads"),
        kv_channels=kv_channels,
        seq_length=seq,
        vocab_size=model["vocab_size"],
        ffn_hidden_size=model.get("ffn_hidden_size") or moe.get("expert_ffn_hidden_size"),
        swiglu=_gated(model.get("family") or "", model.get("ffn_hidden_size"), h),
        add_bias_linear=_biased(model.get("family") or "", _gated(model.get("family") or "", None, h)),
        activation_clamp=_activation_clamp(model.get("family") or ""),
        num_experts=moe.get("num_experts"),
        moe_topk=moe.get("top_k") or 2,
        moe_ffn_hidden_size=moe.get("expert_ffn_hidden_size"),
        moe_shared_expert_size=(moe.get("shared_experts") or 0) * (moe.get("expert_ffn_hidden_size") or 0),
        moe_layer_freq=_moe_pattern(moe.get("moe_layer_pattern"), model["num_layers"]),
        moe_grouped_gemm=_grouped_experts(framework, model.get("family") or ""),
        tp=tp,
        pp=pp,
        vpp=vpp if (vpp or 1) > 1 and pp > 1 else None,
        cp=cp,
        ep=layout.get("ep") or 1,
        etp=etp,
        dp=dp,
        sequence_parallel=bool(sp),
        distributed_optimizer=dist_opt,
        zero_stage=None if dist_opt else zero,
        micro_batch=layout.get("micro_batch_size") or 1,
        global_batch=global_batch,
        precision=_precision(run.get("precision"), gpu),
        recompute=_recompute(layout.get("recompute")),
        gpu=gpu,
        nnodes=max(1, world // per_node),
        gpus_per_node=per_node,
        # a stated NVLink domain wider than a node (GB200 NVL72: 72 GPUs, 4 a node), else the node
        nvlink_domain=cluster.get("nvlink_domain_gpus") or per_node,
        nic_gbps=cluster.get("inter_node_gbps_per_gpu"),
        options=options,
    )
    return inp, ""


# Megatron-Bridge's H100 MoE recipes as the published runs ran them: DeepSeek-V3 (the 25.09 container's scripts,
# Megatron-Bridge v0.1.0rc4 scripts/performance/run_script.py: enable_deepep on H100, i.e. the flex dispatcher with
# DeepEP, and A2A_1F1B: overlap_moe_expert_parallel_comm and delay_wgrad_compute on; v0.2.0's workload_base_configs.py
# DEEPSEEK_V3_H100_BASE_CONFIG keeps moe_flex_dispatcher_backend="deepep", moe_a2a_overlap=True; only the 26.04
# recipes switch H100 to HybridEP without the overlap); Qwen3-235B (26.04.01: v0.4.2 qwen/qwen3_workload_base_configs.py
# QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_*_V1 and _V2, moe_a2a_overlap=True; qwen3_llm_pretrain.py "alltoall"). gpt-oss-120b
# on B200 keeps the default, alltoall without overlap: the 26.04 table's 13,045 tokens/s ran v0.4.1's
# GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V2 with moe_flex_dispatcher_backend="hybridep", which
# NVIDIA-NeMo/Megatron-Bridge#3387 (labelled 26.04.01, "5% regression") found slower ("changing back to
# moe_token_dispatcher_type=alltoall recovers the regression"); #3614 removed it (v0.4.2 78934c150, 2026-05-11) and
# the 26.04.01 table the calibration reads (cab6db381, 2026-05-26) has 13,568 for the same row.
# (model family word, catalog GPU name's start) -> (dispatcher, all-to-all overlap)
BRIDGE_MOE_RECIPES = {
    ("deepseek", "h100"): ("flex", True),
    ("qwen3", "h100"): ("alltoall", True),
}


def _bridge_moe_recipe(framework: str, model: dict, cluster: dict) -> tuple[str, bool]:
    """The token dispatcher and all-to-all overlap a Megatron-Bridge MoE run's recipe sets; alltoall without
    overlap (the dispatcher Bridge's and NeMo's MoE recipes name) otherwise."""
    family, gpu = (model.get("family") or "").lower(), _gpu(cluster.get("gpu") or "") or ""
    if "bridge" in framework and (model.get("moe") or {}).get("num_experts"):
        for (word, part), recipe in BRIDGE_MOE_RECIPES.items():
            if word in family and gpu.startswith(part):  # h100, not gh100
                return recipe
    return "alltoall", False


def published_tokens_per_s(run: dict, inp: ModelInput) -> tuple[float | None, str]:
    """(tokens/s per GPU, how it was obtained), None when the entry does not allow it."""
    r, world = run["result"], run["cluster"]["total_gpus"]
    if r.get("tokens_per_sec_per_gpu"):
        return float(r["tokens_per_sec_per_gpu"]), "published"
    if r.get("step_time_s"):
        return inp.global_batch * inp.seq_length / r["step_time_s"] / world, "step time"
    tflops, definition = r.get("tflops_per_gpu"), (r.get("tflops_definition") or "").lower()
    if not tflops or not definition or "not given" in definition:
        return None, "TFLOP/s without a FLOP definition"
    old = inp.replace(recompute=None)
    if "recompute" in definition and "no recompute" not in definition:
        per_token = flops_per_token(old, "megatron_old", recompute="full")
    elif "no recompute" in definition or "model" in definition:
        per_token = flops_per_token(old, "megatron_old")
    else:
        return None, f"unknown FLOP definition {definition!r}"
    return tflops * 1e12 / per_token, "TFLOP/s / definition"


def calibrate(path: Path, options: dict | None = None, gpu_fields: dict[str, dict] | None = None) -> dict:
    """Every run's prediction and error; `options` replaces those Options fields in every run, `gpu_fields`
    those catalog fields of the GPUs it names ({"h100-sxm": {"scale_out_rate_factor": 0.9}}): a fit."""
    runs = yaml.safe_load(path.read_text())
    rows, skipped = [], []
    for run in runs:
        inp, why = to_input(run)
        if inp is None:
            skipped.append((run["id"], why))
            continue
        inp = with_publication(run["id"], inp)  # as published: its scripts' values, its recipe's flags
        published, how = published_tokens_per_s(run, inp)
        if published is None:
            skipped.append((run["id"], how))
            continue
        if options:
            inp = inp.replace(
                options=Options(**{**{n: getattr(inp.options, n) for n in inp.options.__record_fields__}, **options})
            )
        est = estimate(inp, _gpu_with(inp.gpu, (gpu_fields or {}).get(inp.gpu)))
        err = (est.tokens_per_s_per_gpu - published) / published
        rows.append(
            {
                "id": run["id"],
                "moe": bool(inp.num_experts),
                "gpu": inp.gpu,
                "published": published,
                "how": how,
                "predicted": est.tokens_per_s_per_gpu,
                "error": err,
                "mfu": est.mfu,
                "confidence": run.get("confidence", {}).get("level"),
                "memory_gib": est.memory_gib["total"],
                "read_by_plint": _read_by_plint(run),
                "framework": run.get("framework"),
                "multi_node": inp.world_size > inp.gpus_per_node,
                "catalog_part": _catalog_part(run, inp.gpu),
            }
        )

    def mape(sel):
        return 100 * sum(abs(r["error"]) for r in sel) / len(sel) if sel else None

    dense = [r for r in rows if not r["moe"]]
    moe = [r for r in rows if r["moe"]]
    return {
        "rows": rows,
        "skipped": skipped,
        "mape_dense": mape(dense),
        "mape_moe": mape(moe),
        "mape_dense_high": mape([r for r in dense if r["confidence"] == "high"]),
        "mape_dense_plint_trainers": mape([r for r in dense if r["read_by_plint"]]),
    }


# The trainers issue 24 holds the step time to ("the calibration runs of the trainers plint reads"): Megatron-LM,
# Megatron-Core and NeMo, Megatron-Bridge, Megatron-DeepSpeed, GPT-NeoX, by the words of a run's `framework`
PLINT_TRAINERS = ("megatron", "nemo", "bridge", "gpt-neox")


def _read_by_plint(run: dict) -> bool:
    """Whether the run's trainer is one of PLINT_TRAINERS. Composer, torchtitan, SageMaker's SMP and
    SwissArmyTransformer (GLM-130B: its own trainer and argument parser, on DeepSpeed's engine) are not."""
    framework = (run.get("framework") or "").lower()
    return any(name in framework for name in PLINT_TRAINERS)


def _catalog_part(run: dict, gpu: str) -> bool:
    """Whether the run's GPU is the part the catalog entry describes: the memory it states is the entry's.
    torchtitan's Grand Teton H100 (96 GB HBM2e held at 500 W, a peak "between SXM and NVL" by its own
    benchmark notes) maps to h100-sxm for want of an entry, but is another part."""
    stated = (run.get("cluster") or {}).get("gpu_memory_gb")
    spec = lookup_gpu(gpu)
    return stated is None or spec is None or abs(stated - spec.hbm_gib) <= 0.5


def _gpu_with(name: str, fields: dict | None) -> GPU | None:
    """The catalog GPU `name` with `fields` replaced (a fit's trial values); None: the catalog's own."""
    if not fields:
        return None
    gpu = lookup_gpu(name)
    return GPU(**{**{field: getattr(gpu, field) for field in gpu.__record_fields__}, **fields})


def fit_moe_imbalance(path: Path) -> tuple[float, float]:
    """(Options.moe_load_imbalance, MoE MAPE): the busiest EP rank's routed-token share over the mean, 1.00 to
    1.50 by 0.01, that minimises the MoE runs' mean absolute error (its only effect is on MoE runs with EP > 1)."""
    scored = [(calibrate(path, {"moe_load_imbalance": 1 + i / 100})["mape_moe"], 1 + i / 100) for i in range(51)]
    mape, factor = min(scored)
    return factor, mape


def main(argv: list[str]) -> int:
    path = Path(next((a for a in argv if not a.startswith("--")), DEFAULT_DATA))
    if "--fit-moe-imbalance" in argv:
        factor, mape = fit_moe_imbalance(path)
        print(f"moe_load_imbalance {factor:.2f}: MAPE MoE {mape:.1f}%")
        return 0
    result = calibrate(path)
    if "--json" in argv:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{'run':40} {'gpu':10} {'published':>10} {'predicted':>10} {'error':>8} {'MFU':>6}  source")
    for r in sorted(result["rows"], key=lambda r: (r["moe"], r["id"])):
        print(
            f"{r['id']:40} {r['gpu']:10} {r['published']:10.1f} {r['predicted']:10.1f} "
            f"{100 * r['error']:+7.1f}% {100 * r['mfu']:5.1f}%  {r['how']} ({r['confidence']})"
        )
    for run_id, why in result["skipped"]:
        print(f"skipped {run_id}: {why}")
    subset = sorted(r["id"] for r in result["rows"] if r["read_by_plint"] and not r["moe"])
    others = sorted((r["id"], r["framework"]) for r in result["rows"] if not r["read_by_plint"] and not r["moe"])
    print(f"\nissue 24's dense subset, the runs of the trainers plint reads ({len(subset)}): {', '.join(subset)}")
    print(f"dense runs of other trainers ({len(others)}): {'; '.join(f'{i} ({framework})' for i, framework in others)}")
    for key, label in (
        ("mape_dense", "dense, all runs"),
        ("mape_dense_high", "dense, high confidence"),
        ("mape_moe", "MoE"),
        (
            "mape_dense_plint_trainers",
            "dense, trainers plint reads (Megatron-LM, Megatron-Core/NeMo, Bridge, Megatron-DeepSpeed, GPT-NeoX)",
        ),
    ):
        value = result[key]
        print(f"MAPE {label}: {'n/a' if value is None else f'{value:.1f}%'}")
    return 0


if __name__ == "__main__":
    # a table piped into `head` ends quietly, as a Unix tool does, not with a BrokenPipeError
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
