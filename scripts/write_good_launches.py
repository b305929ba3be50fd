"""Write the published production runs of the calibration data as Megatron-LM launches, under fixtures/good/.

    python scripts/write_good_launches.py [path/to/published_runs_calibration.yaml]

Each run that states a layout becomes fixtures/good/<id>/launch.sh (a multi-node torchrun launch of
pretrain_gpt.py with the run's model shape, layout, batch, precision and recompute, read the way
benchmarks/calibrate.py reads them for the cost model, with what the run's own publication states beyond the
data: benchmarks/published_supplements.py) and a .plint.toml naming its GPU and network, as a
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
from published_supplements import recipe_flags, with_script_values  # noqa: E402  what the runs' publications state

OUT = ROOT / "fixtures" / "good"
ADVISED = ROOT / "fixtures" / "advised"
# Runs whose layout, written as today's Megatron-LM launch, plint rightly advises against: the reason its
# authors chose it is gone. Each is written under fixtures/advised/<id>/ twice: as today's launch (launch.sh),
# and as the run was (as-run/launch.sh); tests/test_good_launches.py holds what plint says of each.
ADVISED_TODAY = {
    # 39.1B over tp 8: 4.9B parameters a GPU. Without a distributed optimizer (the 2021 run) every rank keeps
    # the fp16 weights and gradients and the fp32 main weights and Adam moments of all of them: 93.4 GiB at
    # pp 1 by plint's estimate, over the A100's 74.4 usable, so pp 2 was forced. Today's launch shards the
    # optimizer over dp: pp 1 needs 22.5 GiB and drops the pipeline bubble, (pp - 1) / m = 1/12 of the
    # pipelined step at 12 micro-batches, for twice the data-parallel traffic, overlapped with the backward.
    "megatron_sc21_gpt_39p1b_512gpu": "pp 2 was forced by the 2021 replicated optimizer state; with the "
    "distributed optimizer pp 1 fits and is faster (PL302)",
}
DS_CONFIG = "ds_config.json"


def _flags(inp, deepspeed: bool = False, as_run: bool = False) -> list[str]:
    """The trainer flags of one run, a line each; `deepspeed`: a Megatron-DeepSpeed launch (megatron_deepspeed);
    `as_run`: the data and sequence parallelism the run had (the calibration data's sequence parallelism; no
    distributed optimizer before Megatron-LM had one, predates_distributed_optimizer), not today's."""
    model = [
        f"--num-layers {inp.num_layers} --hidden-size {inp.hidden_size} --num-attention-heads {inp.num_attention_heads}"
    ]
    if inp.ffn_hidden_size:
        model.append(f"--ffn-hidden-size {inp.ffn_hidden_size}")
    if inp.num_query_groups and inp.num_query_groups != inp.num_attention_heads:
        model.append(f"--group-query-attention --num-query-groups {inp.num_query_groups}")
    if inp.kv_channels:
        model.append(f"--kv-channels {inp.kv_channels}")
    if inp.swiglu:
        # a clamped gated activation is gpt-oss's quick-GeGLU (the clamp counts only there: layout_fields)
        gated = (
            f"--quick-geglu --activation-func-clamp-value {inp.activation_clamp}"
            if inp.activation_clamp
            else "--swiglu"
        )
        model.append(f"{gated} --normalization RMSNorm" + ("" if inp.add_bias_linear else " --disable-bias-linear"))
    rope = inp.options.position_embedding == "rope"
    model.append(
        f"--seq-length {inp.seq_length} --max-position-embeddings {inp.seq_length}"
        + (" --position-embedding-type rope" if rope else "")
    )
    model.append(f"--tokenizer-type NullTokenizer --vocab-size {inp.vocab_size}")
    if inp.num_experts:
        moe = f"--num-experts {inp.num_experts} --moe-router-topk {inp.moe_topk}"
        if inp.moe_ffn_hidden_size:
            moe += f" --moe-ffn-hidden-size {inp.moe_ffn_hidden_size}"
        if inp.moe_shared_expert_size:
            moe += f" --moe-shared-expert-intermediate-size {inp.moe_shared_expert_size}"
        if isinstance(inp.moe_layer_freq, tuple):
            moe += f' --moe-layer-freq "[{",".join(map(str, inp.moe_layer_freq))}]"'
        elif inp.moe_layer_freq > 1:  # every n-th layer MoE (Llama 4 Maverick: alternating); Megatron's default 1
            moe += f" --moe-layer-freq {inp.moe_layer_freq}"
        model.append(moe + " --moe-grouped-gemm --moe-token-dispatcher-type alltoall")
    layout = [f"--tensor-model-parallel-size {inp.tp} --pipeline-model-parallel-size {inp.pp}"]
    if inp.vpp:
        layout.append(f"--num-layers-per-virtual-pipeline-stage {inp.num_layers // (inp.pp * inp.vpp)}")
    if inp.cp > 1:
        layout.append(f"--context-parallel-size {inp.cp}")
    if inp.ep > 1:
        layout.append(
            f"--expert-model-parallel-size {inp.ep}" + (f" --expert-tensor-parallel-size {inp.etp}" if inp.etp else "")
        )
    sequence_parallel = inp.sequence_parallel if as_run else inp.tp > 1
    if sequence_parallel and not deepspeed:  # Megatron-LM pairs sequence parallelism with tensor parallelism since 2022
        layout.append("--sequence-parallel" + (" --tp-comm-overlap" if inp.options.tp_comm_overlap else ""))
    if deepspeed:  # DeepSpeed runs the optimizer, at the run's ZeRO stage (ds_config.json, deepspeed_config)
        layout.append(f"--deepspeed --deepspeed_config {DS_CONFIG} --zero-stage {inp.zero_stage or 0}")
    elif _fully_sharded(inp):  # ZeRO-3 / FSDP full sharding: Megatron-FSDP's optim_grads_params
        layout.append(
            "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params "
            "--ckpt-format fsdp_dtensor --overlap-grad-reduce --overlap-param-gather"
        )
    elif not (as_run and predates_distributed_optimizer(inp)):
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
    return (
        json.dumps(
            {
                "train_batch_size": inp.global_batch,
                "train_micro_batch_size_per_gpu": inp.micro_batch,
                "gradient_clipping": 1.0,
                "zero_optimization": {"stage": inp.zero_stage or 0},
                precision: {"enabled": True},
            },
            indent=2,
        )
        + "\n"
    )


def predates_distributed_optimizer(inp) -> bool:
    """A run of Megatron-LM before its distributed optimizer (added 2022-02: NVIDIA/Megatron-LM 329fe5820f,
    "working on Float16DistributedOptimizer"), as the calibration data states the 2019 and SC21 runs: ZeRO stage
    0 and no distributed optimizer. Every rank held the whole optimizer state, reduced after the backward."""
    return inp.zero_stage == 0 and not inp.distributed_optimizer


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


def _not_yet_written(recipe: str, written: list[str]) -> list[str]:
    """The recipe's flags, less the switches (flags without a value) the launch already states."""
    stated = {word for line in written for word in line.split()}
    words = recipe.split()
    switch = [
        w.startswith("--") and (i + 1 == len(words) or words[i + 1].startswith("--")) for i, w in enumerate(words)
    ]
    kept = " ".join(w for w, is_switch in zip(words, switch) if not (is_switch and w in stated))
    return [kept] if kept else []


def launch(run: dict, inp, as_run: bool = False) -> str:
    flags = _flags(inp, megatron_deepspeed(run), as_run)
    recipe = _not_yet_written(recipe_flags(run["id"]), flags) if recipe_flags(run["id"]) else []
    lines = "\n".join(f"    {line} \\" for line in flags + recipe)
    source = " ".join(str(run.get("source", "")).split())
    return (
        f"#!/bin/bash\n# {run['name']}\n# Published layout: {source[:200]}\n"
        f"# Written as a Megatron-LM launch by scripts/write_good_launches.py (values from the publication"
        + ("; data and sequence parallelism as the run had them" if as_run else "")
        + ").\n"
        "set -euo pipefail\n" + ("" if _fully_sharded(inp) else "export CUDA_DEVICE_MAX_CONNECTIONS=1\n") + "\n"
        # Megatron-FSDP asserts the variable is not 1; tensor and context parallelism want it at 1
        f'torchrun --nnodes {inp.nnodes} --nproc_per_node {inp.gpus_per_node} --node_rank "$SLURM_NODEID" '
        '--rdzv_backend c10d --rdzv_endpoint "$MASTER_ADDR:29500" \\\n'
        f"    pretrain_gpt.py \\\n{lines}\n    --train-iters 100000 --lr 1.0e-4\n"
    )


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
        inp = with_script_values(run["id"], inp) if inp is not None else None
        why = why if inp is None else unwritable(run, inp)
        if why:
            skipped.append(f"{run['id']}: {why}")
            continue
        folder = (ADVISED if run["id"] in ADVISED_TODAY else OUT) / run["id"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "launch.sh").write_text(launch(run, inp))
        (folder / ".plint.toml").write_text(config(inp))
        if run["id"] in ADVISED_TODAY:
            (folder / "as-run").mkdir(exist_ok=True)
            (folder / "as-run" / "launch.sh").write_text(launch(run, inp, as_run=True))
            (folder / "as-run" / ".plint.toml").write_text(config(inp))
        if megatron_deepspeed(run):
            (folder / DS_CONFIG).write_text(deepspeed_config(inp))
    advised = ", ".join(f"{run_id} ({why})" for run_id, why in ADVISED_TODAY.items())
    print(
        f"wrote {len(runs) - len(skipped)} launches to {OUT.relative_to(ROOT)}, to {ADVISED.relative_to(ROOT)}: {advised}"
    )
    print("left out:")
    print("\n".join(f"  {s}" for s in skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
