"""What a published run's own publication states beyond benchmarks/data/published_runs_calibration.yaml:
the values of the scripts its authors published (micro-batch, layers per virtual pipeline stage) and the
trainer flags its recipe sets (dropout, gradient-reduction precision, recompute modules), each with its source.

The one place these facts live: benchmarks/calibrate.py predicts each run with them (with_publication) and
scripts/write_good_launches.py writes them into the run's launch under fixtures/good (with_script_values and
recipe_flags), so the cost model's calibration and plint's reading of the fixture see the same run
(tests/test_published_supplements.py holds the two to agree).
"""

from __future__ import annotations

import argparse
import shlex

from plint.cost import ModelInput, Options
from plint.cost.pipeline_stages import Partition, from_layout
from plint.reading.sources.megatron import layout_stages

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
    # torchtitan's Table 5 run (benchmarks/llama3_h100_202412_torchtitan.md: local batch 32, "Interleaved 1F1B",
    # torchtitan 9dec370) sets no split points or micro-batch count, so torchtitan's defaults hold
    # (torchtitan/parallelisms/pipelining_utils.py at 9dec370): build_pipeline_schedule runs
    # pipeline_parallel_degree micro-batches (8: 4 sequences each) and generate_split_points gives a
    # multi-stage schedule 2 stages per rank, 126 layers as 7 | 8 x 14 | 7 (PUBLISHED_RECIPE_FLAGS' layout)
    "torchtitan_llama31_405b_3d_512gpu_fp8": {"micro_batch": 4, "vpp": 2},
}
# Trainer flags a run's published recipe sets that the calibration data does not record, one line each.
PUBLISHED_RECIPE_FLAGS: dict[str, str] = {
    # NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py:
    # GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V2 (GBS 1280, EP 8) inherits recompute_modules
    # ["layernorm", "moe_act"] from B200_BF16_V1
    "bridge_gptoss_120b_b200_64gpu_bf16": "--recompute-granularity selective --recompute-modules layernorm moe_act",
    # NVIDIA-NeMo/Megatron-Bridge v0.1.0rc4 (the 25.09 container's scripts): scripts/performance/run_script.py for
    # DeepSeek-V3 on H100 passes layout "Et|(tt|)*30mL" and sets recompute_modules ["mla_up_proj", "mlp"] (selective,
    # the deepseek_v3 recipe's default granularity); src/megatron/bridge/recipes/deepseek/deepseek_v3.py builds the
    # model with mtp_num_layers 1, and src/megatron/bridge/models/deepseek/deepseek_provider.py's DeepSeek-V3
    # provider has multi-latent attention with q_lora_rank 1536, kv_lora_rank 512, qk_head_dim 128,
    # qk_pos_emb_head_dim 64 and v_head_dim 128
    "bridge_deepseek_v3_h100_1024gpu_fp8": "--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512"
    " --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 --mtp-num-layers 1"
    " --pipeline-model-parallel-layout Et|(tt|)*30mL --recompute-granularity selective --recompute-modules mla_up_proj mlp",
    # NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/llama/llama3_1_405b.yaml (the config
    # dgxc-benchmarking's llama3.1 405B recipe launches): hidden_dropout and attention_dropout 0.0;
    # NVIDIA/dgxc-benchmarking v25.01.1 (e6afea3) llama3.1/llama3.1_405b.yaml and _70b.yaml, and
    # nemo_megatron/gpt3_175b_hydra.yaml: optim distributed_fused_adam with grad_sync_dtype bf16, the
    # gradients kept and reduced in bf16 (Megatron-LM's --grad-reduce-in-bf16)
    "dgxc_llama31_405b_576gpu": "--hidden-dropout 0 --attention-dropout 0 --grad-reduce-in-bf16",
    "dgxc_llama31_70b_2048gpu": "--hidden-dropout 0 --attention-dropout 0 --grad-reduce-in-bf16",
    "dgxc_gpt3_175b_128gpu": "--grad-reduce-in-bf16",
    # NVIDIA/dgxc-benchmarking v25.05 (68eaf7e) llama4/launch.sh runs NeMo's
    # scripts/performance/llm/pretrain_llama4_e128.py at the NeMo commit llama4/setup.sh pins (7a8f1cc7bc):
    # nemo/collections/llm/recipes/llama4_e128.py pretrain_recipe builds the optimizer with
    # distributed_fused_adam_with_cosine_annealing (recipes/optim/adam.py: use_distributed_optimizer=True), its
    # trainer's DistributedDataParallelConfig sets overlap_grad_reduce and overlap_param_gather, and
    # pretrain_performance_optimizations adds MegatronCommOverlapCallback(tp_comm_overlap=True) (kept: tp 4 with
    # sequence_parallelism=True, megatron_comm_overlap.py _get_model_comm_overlap_cfgs) and sets
    # grad_reduce_in_fp32 False; scripts/performance/recommended_model_configs/model_configs_h100.csv's
    # llama4 e128 bf16 row recomputes and offloads nothing
    "dgxc_llama4_maverick_512gpu": "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"
    " --grad-reduce-in-bf16 --tp-comm-overlap",
    # mosaicml/llm-foundry llmfoundry/models/mpt/configuration_mpt.py: MPTConfig's resid_pdrop and emb_pdrop
    # default to 0.0, as attn_config's attn_pdrop (llmfoundry/models/layers/blocks.py attn_config_defaults),
    # and scripts/train/yamls/pretrain/mpt-7b.yaml sets none of them
    "llmfoundry_mpt_a100_7b_8gpu": "--hidden-dropout 0 --attention-dropout 0",
    "llmfoundry_mpt_h100_7b_512gpu": "--hidden-dropout 0 --attention-dropout 0",
    # torchtitan's generated split (PUBLISHED_SCRIPT_VALUES above) in Megatron's layout notation
    "torchtitan_llama31_405b_3d_512gpu_fp8": "--pipeline-model-parallel-layout Ettttttt|(tttttttt|)*14tttttttL",
}


def with_script_values(run_id: str, inp: ModelInput) -> ModelInput:
    """The run's input with the values of its authors' scripts (PUBLISHED_SCRIPT_VALUES)."""
    values = PUBLISHED_SCRIPT_VALUES.get(run_id)
    if not values:
        return inp
    changes = {"micro_batch": values["micro_batch"]} if "micro_batch" in values else {}
    if "layers_per_virtual_stage" in values:
        changes["vpp"] = inp.num_layers // (inp.pp * values["layers_per_virtual_stage"])
    if "vpp" in values:  # a chunk count stated outright (an uneven split has no layers per virtual stage)
        changes["vpp"] = values["vpp"]
    return inp.replace(**changes)


def recipe_flags(run_id: str) -> str | None:
    """The trainer flags the run's recipe sets that the calibration data does not record, or None."""
    return PUBLISHED_RECIPE_FLAGS.get(run_id)


def _recipe_parser() -> argparse.ArgumentParser:
    """Megatron-LM's spelling of the flags PUBLISHED_RECIPE_FLAGS uses (megatron/training/arguments.py)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--hidden-dropout", type=float)
    parser.add_argument("--attention-dropout", type=float)
    parser.add_argument("--grad-reduce-in-bf16", action="store_true")
    for flag in ("--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap"):
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--recompute-granularity", choices=("full", "selective"))
    parser.add_argument("--recompute-modules", nargs="+")
    parser.add_argument("--multi-latent-attention", action="store_true")
    for flag in ("--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim", "--v-head-dim"):
        parser.add_argument(flag, type=int)
    parser.add_argument("--mtp-num-layers", type=int)
    parser.add_argument("--pipeline-model-parallel-layout")
    return parser


def with_recipe_flags(run_id: str, inp: ModelInput) -> ModelInput:
    """The run's input with the flags its recipe sets (PUBLISHED_RECIPE_FLAGS); a flag not understood here
    is an error, so that no published fact is silently dropped from the calibration."""
    flags = recipe_flags(run_id)
    if not flags:
        return inp
    args, unknown = _recipe_parser().parse_known_args(shlex.split(flags))
    if unknown:
        raise ValueError(f"{run_id}: recipe flags not understood: {unknown}")
    changes: dict = {}
    if args.hidden_dropout is not None:
        changes["hidden_dropout"] = args.hidden_dropout
    if args.attention_dropout is not None:
        changes["attention_dropout"] = args.attention_dropout
    if args.recompute_granularity:
        changes["recompute"] = args.recompute_granularity
    if args.recompute_modules:
        changes["recompute_modules"] = tuple(args.recompute_modules)
    if args.multi_latent_attention:
        changes["multi_latent_attention"] = True
        for name in ("q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim"):
            if getattr(args, name) is not None:
                changes[name] = getattr(args, name)
    if args.mtp_num_layers:
        changes["mtp_num_layers"] = args.mtp_num_layers
    if args.pipeline_model_parallel_layout:
        changes["pipeline_stage_layers"] = _layout_ranks(run_id, inp, args.pipeline_model_parallel_layout)
    if args.use_distributed_optimizer:
        changes.update(distributed_optimizer=True, zero_stage=None)
    options = {name: True for name in ("overlap_grad_reduce", "overlap_param_gather") if getattr(args, name)}
    if args.tp_comm_overlap:  # Megatron-LM requires sequence parallelism with it (validate_args)
        options["tp_comm_overlap"] = inp.sequence_parallel
    if args.grad_reduce_in_bf16:  # gradients kept and reduced in bf16: 2 bytes per element
        options["grad_reduce_bytes"] = 2
    if options:
        fields = {name: getattr(inp.options, name) for name in inp.options.__record_fields__}
        changes["options"] = Options(**{**fields, **options})
    return inp.replace(**changes)


def _layout_ranks(run_id: str, inp: ModelInput, layout: str) -> tuple[int, ...]:
    """Transformer layers per pipeline rank of a --pipeline-model-parallel-layout, read as plint reads a launch's."""
    unrolled, why = layout_stages(layout)
    split = from_layout(unrolled, inp.pp, inp.num_layers, layout) if unrolled else why
    if not isinstance(split, Partition):
        raise ValueError(f"{run_id}: pipeline layout {layout!r}: {split}")
    return split.per_rank()


def with_publication(run_id: str, inp: ModelInput) -> ModelInput:
    """The run as its publication states it: its authors' script values and its recipe's flags."""
    return with_recipe_flags(run_id, with_script_values(run_id, inp))
