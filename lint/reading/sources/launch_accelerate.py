"""`accelerate launch`: its options, the sizes they give, and its YAML config file."""

from __future__ import annotations

import re

from plint.reading.shell.model import Command, Problem
from plint.source import SourceFile, Span
from plint.values import Value, default, from_word, parse_int, unresolved
from plint.reading.sources.yaml_config import load_mapping, plain, shown
from plint.reading.sources.launch_calls import (
    LauncherCall,
    finish_call,
    grammar_of,
    hidden_by_unknown,
    product_of,
    quotient_of,
    scan_options,
)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from plint.reading.loading import Unread


ACCELERATE = grammar_of(
    """--config_file --mixed_precision --num_processes --num_machines --num_cpu_threads_per_process --dynamo_backend
    --dynamo_mode --gpu_ids --machine_rank --main_process_ip --main_process_port --tee|-t --log_dir --role
    --rdzv_backend --rdzv_conf --max_restarts --monitor_interval --vm --env --main_training_function
    --deepspeed_config_file --zero_stage --offload_optimizer_device --offload_param_device
    --offload_optimizer_nvme_path --offload_param_nvme_path --gradient_accumulation_steps --gradient_clipping
    --zero3_init_flag --zero3_save_16bit_model --deepspeed_hostfile --deepspeed_exclusion_filter
    --deepspeed_inclusion_filter --deepspeed_multinode_launcher --deepspeed_moe_layer_cls_names --fsdp_version
    --fsdp_offload_params --fsdp_min_num_params --fsdp_sharding_strategy --fsdp_reshard_after_forward
    --fsdp_auto_wrap_policy --fsdp_transformer_layer_cls_to_wrap --fsdp_backward_prefetch --fsdp_state_dict_type
    --fsdp_forward_prefetch --fsdp_use_orig_params --fsdp_cpu_ram_efficient_loading --fsdp_sync_module_states
    --fsdp_activation_checkpointing --fsdp_activation_checkpointing_offload --megatron_lm_tp_degree
    --megatron_lm_use_custom_fsdp --megatron_lm_no_load_optim --megatron_lm_eod_mask_loss
    --megatron_lm_overlap_cpu_optimizer_d2h_h2d --megatron_lm_no_save_optim --megatron_lm_optimizer_cpu_offload
    --megatron_lm_use_precision_aware_optimizer --megatron_lm_decoder_last_pipeline_num_layers
    --megatron_lm_pp_degree --megatron_lm_num_micro_batches --megatron_lm_sequence_parallelism
    --megatron_lm_recompute_activations --megatron_lm_use_distributed_optimizer --megatron_lm_gradient_clipping
    --megatron_lm_recompute_granularity --megatron_lm_recompute_method --megatron_lm_recompute_num_layers
    --megatron_lm_attention_backend --megatron_lm_expert_model_parallel_size --megatron_lm_context_parallel_size
    --megatron_lm_attention_dropout --megatron_lm_hidden_dropout --megatron_lm_attention_softmax_in_fp32
    --megatron_lm_expert_tensor_parallel_size --megatron_lm_calculate_per_token_loss
    --megatron_lm_use_rotary_position_embeddings --fp8_backend --fp8_margin --fp8_interval --fp8_format
    --fp8_amax_history_len --fp8_amax_compute_algo --fp8_override_linear_precision --fp8_opt_level
    --fp8_enable_fsdp_float8_all_gather --fp8_pad_inner_dim --aws_access_key_id --aws_secret_access_key
    --mpirun_hostfile --parallelism_config_dp_replicate_size --parallelism_config_dp_shard_size
    --parallelism_config_tp_size --parallelism_config_cp_size --parallelism_config_cp_backend
    --parallelism_config_cp_comm_strategy --parallelism_config_sp_size --parallelism_config_sp_backend
    --parallelism_config_sp_seq_length --parallelism_config_sp_seq_length_is_variable
    --parallelism_config_sp_attn_implementation""",
    """--quiet|-q --cpu --multi_gpu --tpu --enable_cpu_affinity --dynamo_use_fullgraph --dynamo_use_dynamic
    --dynamo_use_regional_compilation --use_deepspeed --use_fsdp --use_parallelism_config --use_megatron_lm
    --same_network --module|-m --no_python --tpu_cluster --no_tpu_cluster --tpu_use_sudo --downcast_bf16
    --fp8_use_autocast_during_eval --debug --help|-h""",
    abbrev=False,
    aliases="underscore",
)


def accelerate_call(command: Command, start: int) -> LauncherCall:
    scan = scan_options(command.words, start, ACCELERATE)
    call = finish_call(LauncherCall("accelerate", command, scan.options), scan)
    call.is_module = call.flag("--module")
    for attr, name in (
        ("tasks", "--num_processes"),
        ("nodes", "--num_machines"),
        ("node_rank", "--machine_rank"),
        ("master_port", "--main_process_port"),
    ):
        w = call.option(name)
        if w is not None:
            setattr(call, attr, from_word(w, parse_int, name))
    ip = call.option("--main_process_ip")
    call.master_addr = from_word(ip, str, "--main_process_ip") if ip is not None else None
    return call


def accelerate_sizes(s: LauncherCall) -> tuple[Value, Value, Value]:
    named = s.option("--config_file")
    nodes = (
        s.nodes
        or hidden_by_unknown(s, "--num_machines")
        or (
            # a config file named but not read may set num_machines (accelerate's config, else 1)
            unresolved("accelerate takes num_machines from its --config_file, which plint did not read")
            if named is not None and not s.config
            else default(1, "accelerate --num_machines defaults to 1")
        )
    )
    total = (
        s.tasks
        or hidden_by_unknown(s, "--num_processes")
        or unresolved(
            "accelerate launch without --num_processes takes it from its config file or counts the local GPUs at "
            "run time"
        )
    )
    per = quotient_of(
        total, nodes, "workers per node = {w} // {n} (accelerate --num_processes // --num_machines)", floor=True
    )
    world = product_of(nodes, per, "world size = {a} machines * {b} workers")
    return nodes, per, world


def read_accelerate_config(
    call: LauncherCall,
    read_config: Callable[[str], tuple[SourceFile | None, str | None]],
    why_unread: Callable[[str], Unread | None] | None = None,
    problems: list[Problem] | None = None,
) -> None:
    """Counts from `--config_file` (accelerate's YAML) that the command line does not give; origin
    "assumed" with the note when the file was found where the script is assumed to run from. A config
    that is there but not read (`why_unread`) is said in `problems`, at its name."""
    path = call.option("--config_file")
    if path is None or path.text is None:
        return
    source, assumed = read_config(path.text)
    why = why_unread(path.text) if source is None and why_unread is not None else None
    if why is not None and problems is not None:
        problems.append(
            Problem(
                why.kind, why.say(f"the accelerate config {path.text}", "values from it are unknown"), path.value_span
            )
        )
    if source is None:
        return
    origin = "assumed" if assumed else "literal"
    data = load_mapping(source.text)
    if data is None:  # a config plint cannot parse leaves the counts unresolved
        return
    span = source.span(0, len(source.data))
    call.config, call.config_source, call.config_note = data, source, assumed
    for attr, key in (("tasks", "num_processes"), ("nodes", "num_machines"), ("node_rank", "machine_rank")):
        if getattr(call, attr) is None and isinstance(data.get(key), int):
            setattr(call, attr, Value(data[key], _yaml_key_span(source, key) or span, origin, assumed))
    if call.master_addr is None and isinstance(data.get("main_process_ip"), str):
        call.master_addr = Value(
            data["main_process_ip"], _yaml_key_span(source, "main_process_ip") or span, origin, assumed
        )


def _yaml_key_span(source: SourceFile, key: str, nested: bool = False) -> Span | None:
    m = re.search(rf"(?m)^{'[ ]+' if nested else ''}{re.escape(key)}:\s*(\S+)", source.text)
    if not m:
        return None
    start = len(source.text[: m.start(1)].encode("utf-8", "surrogateescape"))
    return source.span(start, start + len(m.group(1).encode("utf-8", "surrogateescape")))


# accelerate's FSDP sharding strategies (accelerate/utils/constants.py FSDP_SHARDING_STRATEGY, also accepted as
# their 1-based numbers) -> parallel.sharding
_FSDP_STRATEGY = {
    "FULL_SHARD": "parameters",
    "SHARD_GRAD_OP": "gradients",
    "NO_SHARD": "none",
    "HYBRID_SHARD": "parameters",
    "HYBRID_SHARD_ZERO2": "gradients",
    "1": "parameters",
    "2": "gradients",
    "3": "none",
    "4": "parameters",
    "5": "gradients",
}
# --mixed_precision / mixed_precision: no | fp16 | bf16 | fp8
_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "no": "fp32"}


def accelerate_facts(call: LauncherCall) -> dict[str, Value]:
    """What `accelerate launch` sets for the run beyond its process counts, from its command line, else its
    --config_file: whether DeepSpeed runs and with which config file or ZeRO stage and offload (accelerate builds
    the DeepSpeed config from them: DeepSpeedPlugin), FSDP's sharding and offload, mixed precision, and the
    accumulation DeepSpeed uses (accelerate launch's options, accelerate 1.x commands/launch.py)."""
    out: dict[str, Value] = {}
    data, source = call.config, call.config_source
    ds = data.get("deepspeed_config")
    ds = ds if isinstance(ds, dict) else {}
    fsdp = data.get("fsdp_config")
    fsdp = fsdp if isinstance(fsdp, dict) else {}
    kind = str(plain(data.get("distributed_type")) or "").upper()

    note = call.config_note  # the YAML was found where the script is assumed to run from: its values are assumed

    def given(option: str, table: dict, key: str, top: bool = False) -> Value | None:
        word = call.option(option)
        if word is not None:
            return from_word(word, str, option)
        if key in table and table[key] is not None and source is not None:
            if plain(table[key]) is None:  # a list or mapping (an alias may make it millions of nodes): never printed
                return Value(
                    None, _yaml_key_span(source, key, nested=not top), "unresolved", f"{key} is {shown(table[key])}"
                )
            return Value(
                str(table[key]),
                _yaml_key_span(source, key, nested=not top),
                "assumed" if note else "literal",
                note or f"{source.path}: {key}",
            )
        return None

    model_parallel = [
        o
        for o in call.options
        if o.startswith(("--megatron_lm", "--use_megatron_lm", "--parallelism_config_tp", "--parallelism_config_cp"))
    ]
    if not model_parallel and kind != "MEGATRON_LM":
        # DDP, FSDP and DeepSpeed all replicate the model's data path over every process: dp is the world
        out["data_parallel"] = Value(
            True,
            None,
            "derived",
            "accelerate launch without Megatron-LM or tensor/"
            "context parallelism runs one data-parallel worker per process",
        )
    deepspeed = (
        call.flag("--use_deepspeed") or call.option("--deepspeed_config_file") is not None or kind == "DEEPSPEED"
    )
    if deepspeed:
        word = call.option("--use_deepspeed", "--deepspeed_config_file")
        out["deepspeed.enabled"] = Value(
            True,
            word.value_span if word is not None else None,
            "literal",
            "accelerate launch --use_deepspeed"
            if word is not None
            else "accelerate's config: distributed_type: DEEPSPEED",
        )
        path = given("--deepspeed_config_file", ds, "deepspeed_config_file")
        if path is not None:
            out["deepspeed.config_path"] = path
            out["deepspeed.config_word"] = Value(path.value, path.span)
        stage = given("--zero_stage", ds, "zero_stage")
        if stage is not None and path is None:
            out["parallel.zero_stage"] = _as_int(stage)
        for option, key in (
            ("--offload_optimizer_device", "offload_optimizer_device"),
            ("--offload_param_device", "offload_param_device"),
        ):
            device = given(option, ds, key)
            if device is not None and path is None and device.value not in (None, "none"):
                out[f"accelerate.{key}"] = device
        accum = given("--gradient_accumulation_steps", ds, "gradient_accumulation_steps")
        if accum is not None and path is None:
            out["batch.grad_accum"] = _as_int(accum)
    if call.flag("--use_fsdp") or kind == "FSDP":
        strategy = given("--fsdp_sharding_strategy", fsdp, "fsdp_sharding_strategy")
        if strategy is not None and str(strategy.value).upper() in _FSDP_STRATEGY:
            out["parallel.sharding"] = Value(
                _FSDP_STRATEGY[str(strategy.value).upper()],
                strategy.span,
                strategy.origin,
                f"accelerate FSDP {strategy.value}",
            )
        offload = given("--fsdp_offload_params", fsdp, "fsdp_offload_params")
        if offload is not None and str(offload.value).lower() == "true":
            out["fsdp.offload"] = offload
    precision = given("--mixed_precision", data, "mixed_precision", top=True)
    if precision is not None and str(precision.value).lower() in _PRECISION:
        out["precision"] = Value(
            _PRECISION[str(precision.value).lower()],
            precision.span,
            precision.origin,
            precision.note or "--mixed_precision",
        )
    return out


def _as_int(v: Value) -> Value:
    if v.value is None:
        return v
    try:
        return Value(int(str(v.value)), v.span, v.origin, v.note)
    except ValueError:
        return Value(None, v.span, "unresolved", f"{v.note or 'accelerate'}: {v.value!r} is not a number")
