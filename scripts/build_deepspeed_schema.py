"""Build schemas/deepspeed_config.schema.json from the installed DeepSpeed.

    python scripts/build_deepspeed_schema.py [OUT]

The strict sections come from DeepSpeed's own pydantic models (extra="forbid": an unknown key is
rejected); the top-level keys DeepSpeed reads with dict.get (an unknown key is silently ignored) are
listed below, as found by instrumenting DeepSpeedConfig 0.19.8 (shared/reference/deepspeed.md §1.1),
and each is checked to occur in the installed package's source. Needs `pip install deepspeed`
(with torch's CPU build); tests/test_deepspeed_keys.py regenerates the file and fails on drift.
"""

from __future__ import annotations

import enum
import json
import sys
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "schemas" / "deepspeed_config.schema.json"

STRICT = {  # top-level key -> pydantic model (module, class)
    "zero_optimization": ("deepspeed.runtime.zero.config", "DeepSpeedZeroConfig"),
    "fp16": ("deepspeed.runtime.precision_config", "DeepSpeedFP16Config"),
    "bf16": ("deepspeed.runtime.precision_config", "DeepSpeedBF16Config"),
    "bfloat16": ("deepspeed.runtime.precision_config", "DeepSpeedBF16Config"),
    "tensorboard": ("deepspeed.monitor.config", "TensorBoardConfig"),
    "wandb": ("deepspeed.monitor.config", "WandbConfig"),
    "csv_monitor": ("deepspeed.monitor.config", "CSVConfig"),
    "comet": ("deepspeed.monitor.config", "CometConfig"),
    "comms_logger": ("deepspeed.comm.config", "CommsLoggerConfig"),
    "compile": ("deepspeed.compile.config", "CompileConfig"),
    "hybrid_engine": ("deepspeed.runtime.config", "HybridEngineConfig"),
    "tensor_parallel": ("deepspeed.runtime.tensor_parallel.config", "TPTrainingConfig"),
}
LENIENT = [  # read with dict.get: unknown keys inside are ignored
    "activation_checkpointing",
    "aio",
    "autotuning",
    "checkpoint",
    "communication_data_type",
    "data_efficiency",
    "data_types",
    "dataloader_drop_last",
    "datastates_ckpt",
    "disable_allgather",
    "disable_python_gc",
    "dump_state",
    "expert_parallel",
    "flops_profiler",
    "gradient_accumulation_steps",
    "gradient_allreduce_op",
    "gradient_clipping",
    "gradient_predivide_factor",
    "log_level",
    "managed_gradient_accumulation",
    "memory_breakdown",
    "optimizer",
    "pipeline",
    "prescale_gradients",
    "scheduler",
    "seq_parallel_communication_data_type",
    "sequence_parallel_size",
    "steps_per_print",
    "timers",
    "torch_autocast",
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "use_data_before_expert_parallelism",
    "vocabulary_size",
    "wall_clock_breakdown",
    "weight_quantization",
    "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer",
    "data_parallel_size",
]
# sections read key by key with dict.get: their known keys are the string constants DeepSpeed reads
# them with (module, constant-name prefix); any other key inside is silently ignored
LENIENT_SECTIONS = {
    "activation_checkpointing": ("deepspeed.runtime.activation_checkpointing.config", "ACT_CHKPT_"),
    "flops_profiler": ("deepspeed.profiling.constants", "FLOPS_PROFILER_"),
    "aio": ("deepspeed.runtime.swap_tensor.constants", "AIO_"),
}
REMOVED = [
    "amp",
    "compression_training",
    "curriculum_learning",
    "elasticity",
    "nebula",
    "quantize_training",
    "sparse_gradients",
    "eigenvalue",
    "sparse_attention",
    "graph_harvesting",
    "progressive_layer_drop",
]


def type_schema(annotation, seen: set) -> dict:
    from pydantic import BaseModel

    origin = typing.get_origin(annotation)
    if origin is typing.Union or str(origin) == "types.UnionType":
        parts = [type_schema(a, seen) for a in typing.get_args(annotation)]
        if any(p == {} for p in parts):
            return {}
        return {"anyOf": parts}
    if annotation is type(None):
        return {"type": "null"}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if annotation is str:
        return {"type": "string"}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [m.value for m in annotation]}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_schema(annotation, seen)
    return {}


def model_schema(model, seen: set) -> dict:
    if model in seen:
        return {"type": "object"}
    seen = seen | {model}
    properties = {}
    for name, info in model.model_fields.items():
        schema = type_schema(info.annotation, seen)
        for key in {name, info.alias} - {None}:
            properties[key] = schema
    strict = model.model_config.get("extra") == "forbid"
    return {
        "type": "object",
        "properties": dict(sorted(properties.items())),
        "additionalProperties": not strict,
        "x-model": f"{model.__module__}.{model.__name__}",
    }


def build() -> dict:
    import importlib
    import deepspeed

    package = Path(deepspeed.__file__).parent
    source = "".join(p.read_text(errors="replace") for p in sorted(package.rglob("*.py")))
    missing = [k for k in LENIENT if f'"{k}"' not in source and f"'{k}'" not in source]
    if missing:
        raise SystemExit(f"these keys are not in DeepSpeed {deepspeed.__version__}'s source: {missing}")
    properties = {k: {} for k in LENIENT}
    for key, (module, name) in STRICT.items():
        properties[key] = model_schema(getattr(importlib.import_module(module), name), set())
    for key, (module, prefix) in LENIENT_SECTIONS.items():
        constants = vars(importlib.import_module(module))
        keys = sorted(
            {
                v
                for k, v in constants.items()
                if k.startswith(prefix)
                and not k.endswith("_FORMAT")
                and isinstance(v, str)
                and v != key
                and "\n" not in v
            }
        )
        properties[key] = {
            "type": "object",
            "properties": {k: {} for k in keys},
            "additionalProperties": True,
            "x-unknown-keys": "ignored",
            "x-constants": f"{module}.{prefix}*",
        }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"DeepSpeed config as DeepSpeed {deepspeed.__version__} reads it",
        "x-deepspeed-version": deepspeed.__version__,
        "type": "object",
        "properties": dict(sorted(properties.items())),
        "additionalProperties": True,
        "x-unknown-top-level": "ignored",
        "x-removed": REMOVED,
    }


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    out.write_text(json.dumps(build(), indent=1) + "\n")
    print(out)


if __name__ == "__main__":
    main()
