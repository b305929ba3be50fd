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
from plint.cost import pipeline_stages as stages
from plint.cost.layout_estimate import split_fields
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
# DeepSeek-V3's node-limited routing as the providers build it: 8 expert groups, each token routed inside 4 of them
# (Megatron-Bridge v0.1.0rc4 src/megatron/bridge/models/deepseek/deepseek_provider.py DeepSeekV3Provider; NeMo
# 7a8f1cc7bc nemo/collections/llm/gpt/model/deepseek.py DeepSeekV3Config; the model's n_group / topk_group)
_DEEPSEEK_V3_ROUTING = "--moe-router-num-groups 8 --moe-router-group-topk 4"
_NO_DROPOUT = "--hidden-dropout 0 --attention-dropout 0"
# What every Megatron-Bridge performance recipe sets, read at the release whose docs/performance-summary.md first
# holds the run's table: v0.1.0rc4 for 25.09, v0.2.1 (1c43b3928, commit 97ad8cc6f "Added 25.11 starter pack") for
# 25.11 and v0.4.2 (2b82f6f17 "26.04.01_perf_summary") for 26.04.01. The model providers the perf configs build
# have hidden_dropout and attention_dropout 0.0 (src/megatron/bridge/models/{llama,qwen,gpt_oss,deepseek}: the
# *_provider.py classes, and from v0.4 the *_bridge.py provider_bridge with the Hugging Face configs' attention
# dropout 0.0), cross_entropy_loss_fusion True (GPTModelProvider; the v0.4.2 qwen3_moe.py and gpt_oss.py recipes
# set it again), and the perf scripts set cross_entropy_fusion_impl "te" (v0.1.0rc4 configs/*/*_llm_pretrain.yaml,
# v0.2.1 scripts/performance/utils/helpers.py and v0.4.2 utils/overrides.py _set_common_perf_overrides).
# Their fp8 precision configs set fp8_param_gather (src/megatron/bridge/training/mixed_precision.py
# bf16_with_fp8_delayed_scaling_mixed, bf16_with_fp8_current_scaling_mixed, bf16_with_mxfp8_mixed). The distributed
# optimizer with both overlaps and bf16 gradient reduction are read from the framework already
# (benchmarks/calibrate.py to_input), and the table's FSDP column as Megatron FSDP.
_BRIDGE = f"{_NO_DROPOUT} --cross-entropy-loss-fusion --cross-entropy-fusion-impl te"
_BRIDGE_FP8 = f"{_BRIDGE} --fp8-param-gather"
# Trainer flags a run's published recipe sets that the calibration data does not record, one line each.
PUBLISHED_RECIPE_FLAGS: dict[str, str] = {
    # NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py:
    # GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V2 (GBS 1280, EP 8) inherits recompute_modules
    # ["layernorm", "moe_act"] from B200_BF16_V1
    "bridge_gptoss_120b_b200_64gpu_bf16": f"{_BRIDGE} --recompute-granularity selective"
    " --recompute-modules layernorm moe_act",
    # NVIDIA-NeMo/Megatron-Bridge v0.1.0rc4 (the 25.09 container's scripts): scripts/performance/run_script.py for
    # DeepSeek-V3 on H100 passes layout "Et|(tt|)*30mL" and sets recompute_modules ["mla_up_proj", "mlp"] (selective,
    # the deepseek_v3 recipe's default granularity); src/megatron/bridge/recipes/deepseek/deepseek_v3.py builds the
    # model with mtp_num_layers 1, and src/megatron/bridge/models/deepseek/deepseek_provider.py's DeepSeek-V3
    # provider has multi-latent attention with q_lora_rank 1536, kv_lora_rank 512, qk_head_dim 128,
    # qk_pos_emb_head_dim 64 and v_head_dim 128, and node-limited routing: moe_router_num_groups 8,
    # moe_router_group_topk 4
    "bridge_deepseek_v3_h100_1024gpu_fp8": f"{_BRIDGE_FP8} --multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512"
    " --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 --mtp-num-layers 1"
    f" {_DEEPSEEK_V3_ROUTING}"
    " --pipeline-model-parallel-layout Et|(tt|)*30mL --recompute-granularity selective --recompute-modules mla_up_proj mlp",
    # Megatron-Bridge v0.4.2 scripts/performance/configs/qwen: QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V2 (GBS
    # 8192 on the V1 layout) through qwen3_llm_pretrain.py qwen3_235b_a22b_pretrain_config_h100, which builds
    # src/megatron/bridge/recipes/qwen/qwen3_moe.py qwen3_235b_a22b_pretrain_config: account_for_embedding_in_
    # pipeline_split and account_for_loss_in_pipeline_split True (94 layers + embedding + loss = 3 a virtual stage
    # of pp 8 x vpp 4); its all-to-all dispatcher and overlap are calibrate.py's BRIDGE_MOE_RECIPES
    "bridge_qwen3_235b_h100_256gpu_fp8": f"{_BRIDGE_FP8} --account-for-embedding-in-pipeline-split"
    " --account-for-loss-in-pipeline-split",
    # Megatron-Bridge v0.2.1 scripts/performance/configs/llama3/workload_base_configs.py
    # LLAMA3_8B_B200_FP8_CS_BASE_CONFIG: micro-batch 2 (in the table) and a full-iteration CUDA graph
    # (cuda_graph_impl "local", scope "full_iteration"), which takes the host's launches off the step and which
    # the cost model does not model (PUBLISHED_UNMODELLED)
    "bridge_llama3_8b_b200_8gpu_fp8": _BRIDGE_FP8,
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
# Calibration runs whose sources were read for the settings their error turns on (issue 24: micro-batches per
# step, gradient-reduce dtype, overlaps) and state nothing the calibration data does not already give, and why.
# A value these sources do not state stays calibrate.py's reading (micro-batch 1), not the one that fits best.
PUBLISHED_NOTHING_BEYOND_TABLE: dict[str, str] = {
    # NVIDIA/Megatron-LM README at core_r0.8.0 (the same text from commit 937571cfd4, July 2024, to core_r0.11.0):
    # "--overlap-grad-reduce --overlap-param-gather" and "--tp-comm-overlap", already in the entry and read;
    # the model table is an image of TP, PP, DP, GPUs and batch, no micro-batch. core_r0.8.0
    # megatron/training/arguments.py validate_args: --overlap-param-gather asserts --use-distributed-optimizer
    # (calibrate.py reads "param-gather" so), and bf16 sets accumulate_allreduce_grads_in_fp32 (fp32 gradient
    # reduction, calibrate.py's default). No launch script of the weak-scaling runs is in the repository's
    # history (git log -S on their hidden size 7168 and 56 heads, July-December 2024: only NVLM examples).
    "mcore_h100_weak_32b_384gpu": "README r0.8.0 states the overlaps (read); micro-batch and scripts unpublished",
    # Parmar et al. 2024 (arXiv 2402.16819) sec. 2.2, as the entry and the summaries of it found here give it (the
    # arXiv text itself was not reachable): 8-way tensor parallelism, data parallelism and a distributed optimizer
    # on 384 DGX H100, Table 2's batch ramp; no micro-batch, overlap, sequence parallelism, gradient dtype or
    # framework release. NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/nemotron/
    # nemotron_15b.yaml is a one-node recipe for the model (tp 4, global batch 32, micro-batch 2), not this run.
    "nemotron4_15b_2304gpu": "the report states tp 8, dp and the distributed optimizer only (read)",
}
# Calibration recipe settings with no cost-model input, named so a reader of the calibration error knows them.
PUBLISHED_UNMODELLED: dict[str, str] = {
    # Bridge v0.2.1 LLAMA3_8B_B200_FP8_CS_BASE_CONFIG: cuda_graph_impl "local", cuda_graph_scope "full_iteration"
    "bridge_llama3_8b_b200_8gpu_fp8": "the whole iteration captured as one CUDA graph",
}


# ---- the validation runs (benchmarks/data/published_runs_validation.yaml): nothing is fitted on them ----
# What each run's recipe states beyond the table row the validation data reads, read for EVERY run from its
# sources, not chosen by the prediction error; each run is in VALIDATION_RECIPE_FLAGS or, with the reason, in
# VALIDATION_NOTHING_BEYOND_TABLE (tests/test_validation_supplements.py holds both). Settings the recipes make
# that the cost model has no input for are in VALIDATION_UNMODELLED, named, not applied.
_NEMO_DATA_PARALLEL = "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --grad-reduce-in-bf16"
# NVIDIA/dgxc-benchmarking v25.01.1 (e6afea3), the NeMo 24.x YAMLs the README tables ran: optim
# distributed_fused_adam (mcore_distributed_optim for grok1) with overlap_grad_sync, overlap_param_sync and
# grad_sync_dtype bf16; ub_tp_comm_overlap (--tp-comm-overlap); defer_embedding_wgrad_compute with
# wgrad_deferral_limit; cross_entropy_loss_fusion (megatron-core of NeMo 24.09 has no fusion impl choice:
# Megatron's fused kernel); overlap_p2p_comm false; fp8_params (--fp8-param-gather); Nemotron-4's bias: false
# (--disable-bias-linear; calibrate.py gives the ungated families Megatron's default, with bias)
_DGXC_LLAMA31_8B = f"{_NO_DROPOUT} {_NEMO_DATA_PARALLEL} --cross-entropy-loss-fusion"  # llama3.1/llama3.1_8b.yaml
_DGXC_NEMOTRON4_15B = (  # nemotron/nemotron4-15b-synth.yaml
    f"--disable-bias-linear {_NO_DROPOUT} {_NEMO_DATA_PARALLEL} --tp-comm-overlap --cross-entropy-loss-fusion"
    " --no-overlap-p2p-communication"
)
_DGXC_NEMOTRON4_340B = (  # nemotron/nemotron4-340b-synth.yaml (its selective recompute is in the table row)
    f"--disable-bias-linear {_NO_DROPOUT} {_NEMO_DATA_PARALLEL} --defer-embedding-wgrad-compute"
    " --wgrad-deferral-limit 22 --cross-entropy-loss-fusion --no-overlap-p2p-communication"
)
_NEMO2_NEMOTRON4_340B = (
    f"--disable-bias-linear {_NO_DROPOUT} {_NEMO_DATA_PARALLEL} --tp-comm-overlap --defer-embedding-wgrad-compute"
    " --wgrad-deferral-limit 22"
)
# src/megatron/bridge/recipes/llama/llama3.py llama31_405b_pretrain_config (v0.2.1; benchmarks/heldout/
# launches.yaml reads the same at 067f987): account_for_embedding_in_pipeline_split and
# account_for_loss_in_pipeline_split True, CommOverlapConfig(tp_comm_overlap=True)
_BRIDGE_LLAMA31_405B = f"{_BRIDGE_FP8} --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
# DeepSeek-V3's multi-latent attention as the providers build it (Bridge src/megatron/bridge/models/deepseek/
# deepseek_provider.py DeepSeekModelProvider; NeMo nemo/collections/llm/gpt/model/deepseek.py DeepSeekConfig)
_DEEPSEEK_MLA = (
    "--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64"
    " --v-head-dim 128"
)
VALIDATION_RECIPE_FLAGS: dict[str, str] = {
    "dgxc_llama31_8b_bf16_8gpu": _DGXC_LLAMA31_8B,
    "dgxc_llama31_8b_fp8_128gpu": _DGXC_LLAMA31_8B,
    # llama3.1/llama3.1_70b.yaml: defer_embedding_wgrad_compute, wgrad_deferral_limit 22, ub_tp_comm_overlap
    "dgxc_llama31_70b_fp8_64gpu": f"{_DGXC_LLAMA31_8B} --tp-comm-overlap --defer-embedding-wgrad-compute"
    " --wgrad-deferral-limit 22",
    # llama3.1/llama3.1_405b.yaml: the same with wgrad_deferral_limit 50
    "dgxc_llama31_405b_fp8_1152gpu": f"{_DGXC_LLAMA31_8B} --tp-comm-overlap --defer-embedding-wgrad-compute"
    " --wgrad-deferral-limit 50",
    # nemo_megatron/gpt3_175b_hydra.yaml: dropout 0.1 (Megatron's default), ub_tp_comm_overlap, fp8_params
    "dgxc_gpt3_175b_fp8_512gpu": f"{_NEMO_DATA_PARALLEL} --tp-comm-overlap --fp8-param-gather",
    "dgxc_nemotron4_15b_bf16_64gpu": _DGXC_NEMOTRON4_15B,
    "dgxc_nemotron4_15b_fp8_512gpu": _DGXC_NEMOTRON4_15B,
    "dgxc_nemotron4_340b_bf16_256gpu": _DGXC_NEMOTRON4_340B,
    "dgxc_nemotron4_340b_fp8_1024gpu": _DGXC_NEMOTRON4_340B,
    # NVIDIA/dgxc-benchmarking v25.05 (68eaf7e) deepseek_v3/pretraining/launch.sh (H100: RM='mla_up_proj', AOL=0)
    # runs NeMo's scripts/performance/llm/pretrain_deepseek_v3.py at the commit setup.sh pins (7a8f1cc7bc):
    # selective recompute of the given modules, cross_entropy_fusion_impl "te", the first stage 64 // pp - 1 = 3
    # layers and the last 64 // pp - 2 = 2; nemo/collections/llm/recipes/deepseek_v3.py pretrain_recipe builds
    # model(use_mtp=True) (mtp_num_layers 1) and distributed_fused_adam (the distributed optimizer), its trainer
    # (recipes/deepseek.py) DistributedDataParallelConfig overlap_grad_reduce and overlap_param_gather with
    # grad_reduce_in_fp32 True (bf16 does not reset it: scripts/performance/utils.py set_primary_perf_configs);
    # gpt/model/deepseek.py DeepSeekConfig: dropout 0.0, the alltoall dispatcher
    "dgxc_deepseek_v3_bf16_1024gpu": f"{_DEEPSEEK_MLA} {_DEEPSEEK_V3_ROUTING} --mtp-num-layers 1 {_NO_DROPOUT}"
    " --decoder-first-pipeline-num-layers 3 --decoder-last-pipeline-num-layers 2"
    " --recompute-granularity selective --recompute-modules mla_up_proj"
    " --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"
    " --cross-entropy-loss-fusion --cross-entropy-fusion-impl te --moe-token-dispatcher-type alltoall",
    # dgxc-benchmarking v25.05 llama3.1/launch.sh runs NeMo's scripts/performance/llm/pretrain_llama31_405b.py
    # (7a8f1cc7bc): pretrain_recipe(performance_mode=True); nemo/collections/llm/recipes/llama31_405b.py: trainer
    # account_for_embedding/loss_in_pipeline_split True, distributed_fused_adam, DDP overlap_grad_reduce and
    # overlap_param_gather; pretrain_performance_optimizations: MegatronCommOverlapCallback tp_comm_overlap,
    # defer_embedding_wgrad_compute with wgrad_deferral_limit 50, plugins grad_reduce_in_fp32 False;
    # gpt/model/llama.py LlamaConfig dropout 0.0. model_configs_gb200.csv has no llama3 405b row: no recompute
    "dgxc_llama31_405b_gb200_bf16_128gpu": f"{_NO_DROPOUT} {_NEMO_DATA_PARALLEL} --tp-comm-overlap"
    " --defer-embedding-wgrad-compute --wgrad-deferral-limit 50"
    " --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split",
    # dgxc-benchmarking v25.05 nemotron/launch.sh runs NeMo's pretrain_nemotron4_340b.py at b4148d21 (setup.sh):
    # recipes/nemotron4_340b.py pretrain_recipe(performance_mode=True): distributed_fused_adam, tp_comm_overlap,
    # defer_embedding_wgrad_compute with wgrad_deferral_limit 22, grad_reduce_in_fp32 False; recipes/nemotron.py
    # nemotron_trainer: overlap_grad_reduce and overlap_param_gather; gpt/model/nemotron.py NemotronConfig dropout
    # 0.0 and add_bias_linear False
    "dgxc_nemotron4_340b_gb200_fp8_256gpu": _NEMO2_NEMOTRON4_340B,
    "dgxc_nemotron4_340b_gb200_bf16_512gpu_gbs512": _NEMO2_NEMOTRON4_340B,
    # Bridge v0.2.1 scripts/performance/configs/llama3/workload_base_configs.py LLAMA3_8B_H100_FP8_CS_BASE_CONFIG:
    # recompute_num_layers 5, which utils/helpers.py set_recompute_overrides makes full recompute, method block
    "bridge_llama3_8b_h100_8gpu_fp8cs_fsdp": f"{_BRIDGE_FP8} --recompute-granularity full --recompute-method block"
    " --recompute-num-layers 5",
    # LLAMA3_70B_H100_FP8_CS_BASE_CONFIG sets the layout alone; llama3_70b_h100_config overlaps TP communication
    "bridge_llama3_70b_h100_64gpu_fp8cs": f"{_BRIDGE_FP8} --tp-comm-overlap",
    # configs/llama31: the H100 and B200 FP8_CS bases set the layout alone; v0.2.1 has no 256-GPU GB200 config
    # (its GB200 FP8_CS base is 128 GPUs with FSDP): the GB200 row's recipe is benchmarks/heldout/launches.yaml's
    # bridge_llama31_405b_gb200_256gpu_fp8cs (the same model, GPUs, precision and batch, from 067f987)
    "bridge_llama31_405b_h100_1024gpu_fp8cs": f"{_BRIDGE_LLAMA31_405B} --tp-comm-overlap",
    "bridge_llama31_405b_b200_128gpu_fp8cs": f"{_BRIDGE_LLAMA31_405B} --tp-comm-overlap",
    "bridge_llama31_405b_gb200_256gpu_fp8cs": f"{_BRIDGE_LLAMA31_405B} --tp-comm-overlap",
    # LLAMA3_70B_GB200_FP8_CS_BASE_CONFIG: micro-batch 2 and Megatron FSDP (in the table), CPU offloading
    # (VALIDATION_UNMODELLED)
    "bridge_llama3_70b_gb200_64gpu_fp8cs_fsdp": _BRIDGE_FP8,
    # configs/gpt_oss GPT_OSS_120B_H100_BF16_BASE_CONFIG: recompute_modules layernorm, moe_act (selective);
    # GPTOSSProvider's alltoall dispatcher
    "bridge_gptoss_120b_h100_64gpu_bf16": f"{_BRIDGE} --recompute-granularity selective"
    " --recompute-modules layernorm moe_act --moe-token-dispatcher-type alltoall",
    # configs/qwen3 QWEN3_30B_A3B_H100_FP8_CS_BASE_CONFIG and QWEN3_235B_A22B_B200_FP8_CS_BASE_CONFIG (= FP8_MX):
    # moe_a2a_overlap (helpers.py set_moe_a2a_overlap_overrides: overlap_moe_expert_parallel_comm), no flex
    # backend: Qwen3MoEModelProvider's alltoall; qwen3_llm_pretrain.py set_qwen3_common_configs: no recompute
    "bridge_qwen3_30b_a3b_h100_16gpu_fp8cs": f"{_BRIDGE_FP8} --moe-token-dispatcher-type alltoall"
    " --overlap-moe-expert-parallel-comm",
    "bridge_qwen3_235b_b200_64gpu_mxfp8": f"{_BRIDGE_FP8} --moe-token-dispatcher-type alltoall"
    " --overlap-moe-expert-parallel-comm",
    # configs/deepseek DEEPSEEK_V3_GB200_BASE_CONFIG: moe_flex_dispatcher_backend "hybridep" (the flex
    # dispatcher) without the all-to-all overlap, recompute_modules ["mla_up_proj"] (deepseek_llm_pretrain.py:
    # selective); src/megatron/bridge/recipes/deepseek/deepseek_v3.py layout_map[(4, 4)]: the embedding and 4
    # layers | 4 layers x 14 | 1 layer, the MTP layer and the loss; the table's row is "w/o MTP", so without it
    "bridge_deepseek_v3_gb200_256gpu_bf16": f"{_BRIDGE} {_DEEPSEEK_MLA} {_DEEPSEEK_V3_ROUTING}"
    " --pipeline-model-parallel-layout Etttt|(tttt|)*14tL --recompute-granularity selective"
    " --recompute-modules mla_up_proj --moe-token-dispatcher-type flex",
}
# Validation runs whose recipe states nothing the cost model takes beyond the table row, and why.
VALIDATION_NOTHING_BEYOND_TABLE: dict[str, str] = {
    # bigscience-workshop/bigscience train/tr11-176B-ml/tr11-176B-ml.slurm (9e64edec2a): no dropout flags
    # (Megatron-DeepSpeed's 0.1, in the entry), --checkpoint-activations, ZeRO stage 0 with the BF16_Optimizer
    # and --pp-partition-method 'type:transformer|embedding', all in the entry already
    "bloom_176b_384gpu": "the slurm script's settings are in the entry (recompute, BF16_Optimizer, dropout 0.1)",
    # dgxc-benchmarking v25.01.1 grok1/grok1_314b.yaml: mcore_distributed_optim with overlap_grad_sync,
    # overlap_param_sync and grad_sync_dtype bf16, dropout 0.0, ub_tp_comm_overlap false, overlap_p2p_comm true,
    # no cross-entropy fusion, fp8_params false: the entry's notes quote all of it and calibrate.py reads them
    "dgxc_grok1_314b_bf16_1024gpu": "the entry's notes quote grok1_314b.yaml's settings",
    "dgxc_grok1_314b_fp8_512gpu": "the entry's notes quote grok1_314b.yaml's settings",
}
# Recipe settings with no cost-model input yet: named so a reader of the validation error knows them.
VALIDATION_UNMODELLED: dict[str, str] = {
    # Bridge v0.2.1 LLAMA3_70B_GB200_FP8_CS_BASE_CONFIG cpu_offloading_num_layers 40 (helpers.py
    # set_recompute_overrides: cpu_offloading True, cpu_offloading_weights False) and llama3_llm_pretrain.py
    # llama3_70b_gb200_config fsdp_double_buffer with Megatron FSDP
    "bridge_llama3_70b_gb200_64gpu_fp8cs_fsdp": "activations of 40 layers offloaded to the CPU; FSDP double buffer",
    # dgxc v25.01.1 grok1/grok1_314b.yaml: moe_pad_expert_input_to_capacity with moe_expert_capacity_factor 1.0
    "dgxc_grok1_314b_bf16_1024gpu": "experts' input padded to capacity factor 1.0",
    "dgxc_grok1_314b_fp8_512gpu": "experts' input padded to capacity factor 1.0",
    # NeMo 7a8f1cc7bc scripts/performance/llm/pretrain_deepseek_v3.py: USE_TOKEN_DROP adds MegatronTokenDropCallback
    "dgxc_deepseek_v3_bf16_1024gpu": "token dropping (MegatronTokenDropCallback)",
    # Bridge v0.2.1 qwen3_llm_pretrain.py qwen3_235b_a22b_b200_config: fp8_mx turns overlap_param_gather off
    # (Megatron-LM has no flag that turns it off; calibrate.py reads Bridge runs with it on)
    "bridge_qwen3_235b_b200_64gpu_mxfp8": "parameter all-gather not overlapped (fp8_mx)",
    # Bridge v0.2.1 DEEPSEEK_V3_GB200_BASE_CONFIG: cuda_graph_impl "transformer_engine", scope moe_router and
    # moe_preprocess
    "bridge_deepseek_v3_gb200_256gpu_bf16": "CUDA graphs of the MoE router and preprocessing",
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
    return PUBLISHED_RECIPE_FLAGS.get(run_id) or VALIDATION_RECIPE_FLAGS.get(run_id)


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
    parser.add_argument("--moe-router-num-groups", type=int)
    parser.add_argument("--moe-router-group-topk", type=int)
    parser.add_argument("--pipeline-model-parallel-layout")
    # the validation runs' recipes (VALIDATION_RECIPE_FLAGS), spelled as in Megatron-LM core_v0.15.0
    # megatron/training/arguments.py (_add_training_args, _add_distributed_args, _add_moe_args)
    parser.add_argument("--disable-bias-linear", action="store_true")
    parser.add_argument("--recompute-method", choices=("uniform", "block"))
    parser.add_argument("--recompute-num-layers", type=int)
    parser.add_argument("--defer-embedding-wgrad-compute", action="store_true")
    parser.add_argument("--wgrad-deferral-limit", type=int)
    for flag in ("--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"):
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--decoder-first-pipeline-num-layers", type=int)
    parser.add_argument("--decoder-last-pipeline-num-layers", type=int)
    parser.add_argument("--cross-entropy-loss-fusion", action="store_true")
    parser.add_argument("--cross-entropy-fusion-impl", choices=("native", "te"))
    parser.add_argument("--no-overlap-p2p-communication", action="store_true")
    parser.add_argument("--moe-token-dispatcher-type", choices=("allgather", "alltoall", "flex"))
    for flag in ("--overlap-moe-expert-parallel-comm", "--fp8-param-gather"):
        parser.add_argument(flag, action="store_true")
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
    if args.disable_bias_linear:
        changes["add_bias_linear"] = False
    if args.recompute_method:
        changes["recompute_method"] = args.recompute_method
    if args.recompute_num_layers is not None:
        changes["recompute_num_layers"] = args.recompute_num_layers
    if args.multi_latent_attention:
        changes["multi_latent_attention"] = True
        for name in ("q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim"):
            if getattr(args, name) is not None:
                changes[name] = getattr(args, name)
    if args.mtp_num_layers:
        changes["mtp_num_layers"] = args.mtp_num_layers
    if args.moe_router_num_groups and args.moe_router_group_topk:
        changes.update(moe_router_groups=args.moe_router_num_groups, moe_router_group_topk=args.moe_router_group_topk)
    if args.pipeline_model_parallel_layout:
        changes["pipeline_stage_layers"] = _layout_ranks(run_id, inp, args.pipeline_model_parallel_layout)
    changes.update(_uneven_stages(run_id, inp, args))
    if args.use_distributed_optimizer:
        changes.update(distributed_optimizer=True, zero_stage=None)
    options = {name: True for name in ("overlap_grad_reduce", "overlap_param_gather") if getattr(args, name)}
    if args.tp_comm_overlap:  # Megatron-LM requires sequence parallelism with it (validate_args)
        options["tp_comm_overlap"] = inp.sequence_parallel
    if args.grad_reduce_in_bf16:  # gradients kept and reduced in bf16: 2 bytes per element
        options["grad_reduce_bytes"] = 2
    options.update(_switches(args))
    if options:
        fields = {name: getattr(inp.options, name) for name in inp.options.__record_fields__}
        changes["options"] = Options(**{**fields, **options})
    return inp.replace(**changes)


def _switches(args: argparse.Namespace) -> dict:
    """Options the validation recipes' flags set, as plint reads them from a launch
    (plint.cost.layout_fields.attention_and_loss: the loss fusion, fp8 weights, the deferred output-layer
    weight gradient, 0 = no deferral limit)."""
    switches: dict = {}
    if args.cross_entropy_loss_fusion:
        switches["cross_entropy"] = "te" if args.cross_entropy_fusion_impl == "te" else "fused"
    if args.fp8_param_gather:
        switches["fp8_param_gather"] = True
    if args.defer_embedding_wgrad_compute:
        switches["wgrad_deferral_limit"] = args.wgrad_deferral_limit or 0
    if args.no_overlap_p2p_communication:
        switches["overlap_p2p_comm"] = False
    if args.moe_token_dispatcher_type:
        switches["moe_dispatcher"] = args.moe_token_dispatcher_type
    if args.overlap_moe_expert_parallel_comm:
        switches["moe_a2a_overlap"] = True
    return switches


def _uneven_stages(run_id: str, inp: ModelInput, args: argparse.Namespace) -> dict:
    """Layers per pipeline rank of --account-for-embedding/loss-in-pipeline-split or --decoder-first/last-
    pipeline-num-layers, split as plint splits a launch's (plint.cost.pipeline_stages)."""
    first, last = args.decoder_first_pipeline_num_layers, args.decoder_last_pipeline_num_layers
    embedding, loss = args.account_for_embedding_in_pipeline_split, args.account_for_loss_in_pipeline_split
    if first is not None or last is not None:
        split = stages.first_last(inp.num_layers, inp.pp, inp.vpp, first, last)
    elif embedding or loss:
        split = stages.account_for(inp.num_layers, inp.pp, inp.vpp, embedding, loss)
    else:
        return {}
    if not isinstance(split, Partition):
        raise ValueError(f"{run_id}: uneven pipeline stages: {split}")
    fields = split_fields(split)  # as plint.cost.layout_estimate.uneven_input costs a launch's
    del fields["pipeline_split"]  # the flags are the run's: they name nothing here
    return fields


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
