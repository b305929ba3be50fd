"""Write the published production runs of the calibration data as Megatron-LM launches, under fixtures/good/.

    python scripts/write_good_launches.py [path/to/published_runs_calibration.yaml]

Each run that states a layout becomes fixtures/good/<id>/launch.sh (a multi-node torchrun launch of
pretrain_gpt.py with the run's model shape, layout, batch, precision and recompute, read the way
benchmarks/calibrate.py reads them for the cost model) and a .plint.toml naming its GPU and network, as a
team would configure plint for its cluster; a Megatron-DeepSpeed run is written as one, with its ds_config.json.
The values are the published ones; the files are ours. A run
the calibration reader cannot turn into a layout (no GPU count, no TP/PP, no batch) is left out and listed.
These launches ran: tests/test_good_launches.py holds that none draws a warning or an error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from calibrate import DEFAULT_DATA, to_input  # noqa: E402

OUT = ROOT / "fixtures" / "good"
DS_CONFIG = "ds_config.json"

# What a run's own publication states beyond the table the calibration data reads: the
# micro-batch and the layers per virtual pipeline stage of the SC21 Table 1 rows are in NVIDIA/Megatron-LM
# examples/sc21/run_table_1.sh (MBS, and --num-layers-per-virtual-pipeline-stage in MEGATRON_EXTRA_PARAMS;
# present up to core_v0.5.0), the scripts the paper's authors published to reproduce the table. Without
# them the launch would run micro-batch 1 and no interleaving, which is not the run.
PUBLISHED_SCRIPT_VALUES: dict[str, dict[str, int]] = {
    "megatron_sc21_gpt_3p6b_64gpu": {"micro_batch": 16},
    "megatron_sc21_gpt_7p5b_128gpu": {"micro_batch": 16},
    "megatron_sc21_gpt_39p1b_512gpu": {"micro_batch": 4},
    "megatron_sc21_gpt_76p1b_1024gpu": {"micro_batch": 2, "layers_per_virtual_stage": 5},
    "megatron_sc21_gpt_310p1b_1920gpu": {"micro_batch": 1, "layers_per_virtual_stage": 3},
    # Megatron-LM as the 2019 paper ran it (NVIDIA/Megatron-LM abe36e2e5f, 2019-07, arguments.py) has a
    # per-rank --batch-size and no gradient accumulation: the 512-sequence batch over dp 64 is 8 per step
    "megatron2019_8p3b_512v100": {"micro_batch": 8},
    # SC21 Table 2 states the model-parallel size and micro-batch 1, not the schedule; the authors' scripts
    # for the same model at the same tp x pp interleave it: the 530B row of run_table_1.sh (tp 8, pp 35) with
    # 1 layer per virtual stage, and run_figure_12.sh's interleaved 175B (tp 8, pp 12) with 2
    "megatron_sc21_t2_ptd_530b_2240gpu": {"micro_batch": 1, "layers_per_virtual_stage": 1},
    "megatron_sc21_t2_ptd_175b_1536gpu": {"micro_batch": 1, "layers_per_virtual_stage": 2},
    # The Megatron-Core r0.8.0 README's weak-scaling runs overlap "pipeline-parallel communication (enabled by
    # default)" with computation, which that release does only with the interleaved schedule (validate_args
    # in megatron/training/arguments.py sets overlap_p2p_comm False without virtual stages). The chunk count
    # is not published: one layer per virtual stage, the convention benchmarks/calibrate.py applies to "PP
    # with interleaving" without a count (NeMo's Nemotron-4 340B recipe interleaves so).
    "mcore_h100_weak_119b_1536gpu": {"layers_per_virtual_stage": 1},
    "mcore_h100_weak_314b_3072gpu": {"layers_per_virtual_stage": 1},
}
# Trainer flags a run's published recipe sets that the calibration data does not record, one line each.
PUBLISHED_RECIPE_FLAGS: dict[str, str] = {
    # NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py:
    # GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V2 (GBS 1280, EP 8) inherits recompute_modules
    # ["layernorm", "moe_act"] from B200_BF16_V1
    "bridge_gptoss_120b_b200_64gpu_bf16": "--recompute-granularity selective --recompute-modules layernorm moe_act",
    # NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/llama/llama3_1_405b.yaml (the config
    # dgxc-benchmarking's llama3.1 405B recipe launches): hidden_dropout and attention_dropout 0.0
    "dgxc_llama31_405b_576gpu": "--hidden-dropout 0 --attention-dropout 0",
    # mosaicml/llm-foundry llmfoundry/models/mpt/configuration_mpt.py: MPTConfig's resid_pdrop and emb_pdrop
    # default to 0.0, as attn_config's attn_pdrop (llmfoundry/models/layers/blocks.py attn_config_defaults),
    # and scripts/train/yamls/pretrain/mpt-7b.yaml sets none of them
    "llmfoundry_mpt_a100_7b_8gpu": "--hidden-dropout 0 --attention-dropout 0",
    "llmfoundry_mpt_h100_7b_512gpu": "--hidden-dropout 0 --attention-dropout 0",
}


def with_published_script(run_id: str, inp):
    """The run's input with what its publication states beyond the table (PUBLISHED_SCRIPT_VALUES)."""
    values = PUBLISHED_SCRIPT_VALUES.get(run_id)
    if not values:
        return inp
    changes = {"micro_batch": values["micro_batch"]} if "micro_batch" in values else {}
    if "layers_per_virtual_stage" in values:
        changes["vpp"] = inp.num_layers // (inp.pp * values["layers_per_virtual_stage"])
    return inp.replace(**changes)


def _flags(inp, deepspeed: bool = False) -> list[str]:
    """The trainer flags of one run, a line each; `deepspeed`: a Megatron-DeepSpeed launch (megatron_deepspeed)."""
    model = [f"--num-layers {inp.num_layers} --hidden-size {inp.hidden_size} "
             f"--num-attention-heads {inp.num_attention_heads}"]
    if inp.ffn_hidden_size:
        model.append(f"--ffn-hidden-size {inp.ffn_hidden_size}")
    if inp.num_query_groups and inp.num_query_groups != inp.num_attention_heads:
        model.append(f"--group-query-attention --num-query-groups {inp.num_query_groups}")
    if inp.kv_channels:
        model.append(f"--kv-channels {inp.kv_channels}")
    if inp.swiglu:
        model.append("--swiglu --normalization RMSNorm --disable-bias-linear")
    rope = inp.options.position_embedding == "rope"
    model.append(f"--seq-length {inp.seq_length} --max-position-embeddings {inp.seq_length}"
                 + (" --position-embedding-type rope" if rope else ""))
    model.append(f"--tokenizer-type NullTokenizer --vocab-size {inp.vocab_size}")
    if inp.num_experts:
        moe = f"--num-experts {inp.num_experts} --moe-router-topk {inp.moe_topk}"
        if inp.moe_ffn_hidden_size:
            moe += f" --moe-ffn-hidden-size {inp.moe_ffn_hidden_size}"
        if inp.moe_shared_expert_size:
            moe += f" --moe-shared-expert-intermediate-size {inp.moe_shared_expert_size}"
        if isinstance(inp.moe_layer_freq, tuple):
            moe += f" --moe-layer-freq \"[{','.join(map(str, inp.moe_layer_freq))}]\""
        model.append(moe + " --moe-grouped-gemm --moe-token-dispatcher-type alltoall")
    layout = [f"--tensor-model-parallel-size {inp.tp} --pipeline-model-parallel-size {inp.pp}"]
    if inp.vpp:
        layout.append(f"--num-layers-per-virtual-pipeline-stage {inp.num_layers // (inp.pp * inp.vpp)}")
    if inp.cp > 1:
        layout.append(f"--context-parallel-size {inp.cp}")
    if inp.ep > 1:
        layout.append(f"--expert-model-parallel-size {inp.ep}"
                      + (f" --expert-tensor-parallel-size {inp.etp}" if inp.etp else ""))
    if inp.tp > 1 and not deepspeed:  # Megatron-LM pairs sequence parallelism with tensor parallelism since 2022
        layout.append("--sequence-parallel" + (" --tp-comm-overlap" if inp.options.tp_comm_overlap else ""))
    if deepspeed:  # DeepSpeed runs the optimizer, at the run's ZeRO stage (ds_config.json, deepspeed_config)
        layout.append(f"--deepspeed --deepspeed_config {DS_CONFIG} --zero-stage {inp.zero_stage or 0}")
    elif _fully_sharded(inp):  # ZeRO-3 / FSDP full sharding: Megatron-FSDP's optim_grads_params
        layout.append("--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params "
                      "--ckpt-format fsdp_dtensor --overlap-grad-reduce --overlap-param-gather")
    else:
        layout.append("--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather")
    if inp.options.grad_reduce_bytes == 2:
        layout.append("--grad-reduce-in-bf16")
    batch = [f"--micro-batch-size {inp.micro_batch} --global-batch-size {inp.global_batch}"]
    precision = {"bf16": "--bf16", "fp16": "--fp16", "fp8": "--bf16 --fp8-format hybrid"}[inp.precision]
    if inp.precision == "fp8":
        precision += f" --fp8-recipe {inp.options.fp8_recipe}"
    batch.append(precision)
    if inp.recompute == "selective":
        batch.append("--recompute-activations")
    elif inp.recompute == "full":
        batch.append("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1")
    return model + layout + batch


def megatron_deepspeed(run: dict) -> bool:
    """A run of Megatron-DeepSpeed (MT-NLG), written as one: DeepSpeed's pipeline engine has only the 1F1B
    schedule, so a Megatron-LM launch of it would claim virtual stages the run could not use."""
    return run.get("framework") == "Megatron-DeepSpeed"


def deepspeed_config(inp) -> str:
    """The DeepSpeed JSON of a Megatron-DeepSpeed run: its batch, ZeRO stage and precision."""
    precision = {"bf16": "bf16", "fp16": "fp16"}[inp.precision]
    return json.dumps({"train_batch_size": inp.global_batch, "train_micro_batch_size_per_gpu": inp.micro_batch,
                       "gradient_clipping": 1.0, "zero_optimization": {"stage": inp.zero_stage or 0},
                       precision: {"enabled": True}}, indent=2) + "\n"


def _fully_sharded(inp) -> bool:
    return inp.zero_stage == 3 or inp.sharding == "parameters"


def unwritable(run: dict, inp) -> str | None:
    """Why a run cannot be written as a launch that states only published facts, or None."""
    if inp.num_layers % inp.pp:
        return f"{inp.num_layers} layers over pp {inp.pp}: the uneven split the run used is not published"
    tokens, seq = run["layout"].get("global_batch_tokens"), inp.seq_length
    if not run["layout"].get("global_batch_seqs") and tokens and tokens % seq:
        return f"a global batch of {tokens:,} tokens is no whole number of {seq}-token sequences"
    return None


def launch(run: dict, inp) -> str:
    recipe = [PUBLISHED_RECIPE_FLAGS[run["id"]]] if run["id"] in PUBLISHED_RECIPE_FLAGS else []
    lines = "\n".join(f"    {line} \\" for line in _flags(inp, megatron_deepspeed(run)) + recipe)
    source = " ".join(str(run.get("source", "")).split())
    return (f"#!/bin/bash\n# {run['name']}\n# Published layout: {source[:200]}\n"
            f"# Written as a Megatron-LM launch by scripts/write_good_launches.py (values from the publication).\n"
            "set -euo pipefail\n"
            # Megatron-FSDP asserts the variable is not 1; tensor and context parallelism want it at 1
            + ("" if _fully_sharded(inp) else "export CUDA_DEVICE_MAX_CONNECTIONS=1\n") + "\n"
            f"torchrun --nnodes {inp.nnodes} --nproc_per_node {inp.gpus_per_node} --node_rank \"$SLURM_NODEID\" "
            "--rdzv_backend c10d --rdzv_endpoint \"$MASTER_ADDR:29500\" \\\n"
            f"    pretrain_gpt.py \\\n{lines}\n    --train-iters 100000 --lr 1.0e-4\n")


def config(inp) -> str:
    out = f'gpu = "{inp.gpu}"\nassume = {{ SLURM_NODEID = 0, MASTER_ADDR = "node0" }}\n'
    if inp.nic_gbps:
        out += f"inter-node-bandwidth-gbps = {inp.nic_gbps:g}\n"
    return out


def main(argv: list[str]) -> int:
    data = Path(argv[0]) if argv else DEFAULT_DATA
    runs = yaml.safe_load(data.read_text())
    OUT.mkdir(parents=True, exist_ok=True)
    skipped = []
    for run in runs:
        inp, why = to_input(run)
        inp = with_published_script(run["id"], inp) if inp is not None else None
        why = why if inp is None else unwritable(run, inp)
        if why:
            skipped.append(f"{run['id']}: {why}")
            continue
        folder = OUT / run["id"]
        folder.mkdir(exist_ok=True)
        (folder / "launch.sh").write_text(launch(run, inp))
        (folder / ".plint.toml").write_text(config(inp))
        if megatron_deepspeed(run):
            (folder / DS_CONFIG).write_text(deepspeed_config(inp))
    print(f"wrote {len(runs) - len(skipped)} launches to {OUT.relative_to(ROOT)}; left out:")
    print("\n".join(f"  {s}" for s in skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
