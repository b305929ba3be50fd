"""PL504, PL505, PL507: DeepSpeed config keys, checked against schemas/deepspeed_config.schema.json
(built from the installed DeepSpeed by scripts/build_deepspeed_schema.py). Top-level keys are read
with dict.get, so a misspelt section is silently ignored; keys inside the pydantic sections are
rejected when unknown, and an "auto" value there is silently dropped (shared/reference/deepspeed.md
§1, §2.5)."""

from __future__ import annotations

from functools import lru_cache

from plint.rules.base import Example, Finding, RuleContext, RuleDocs, register
from plint.rules.common import closest

DS_MARKERS = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
              "zero_optimization", "fp16", "bf16", "optimizer", "zero_allow_untested_optimizer"}
STAGE3_ONLY = ("stage3_", "offload_param", "zero_hpz_partition_size", "zero_quantized_weights",
               "zero_quantized_nontrainable_weights", "sub_group_size", "prefetch_bucket_size",
               "param_persistence_threshold", "max_live_parameters", "max_reuse_distance",
               "gather_16bit_weights_on_model_save")


@lru_cache(maxsize=1)
def schema() -> dict:
    from plint.schemas import read_json

    return read_json("deepspeed_config.schema.json")


def _config(ctx: RuleContext):
    """The DeepSpeed config a launch uses, or a JSON file checked on its own when it looks like one."""
    if ctx.layout is not None:
        return ctx.layout.extras.get("ds_config")
    cfg = getattr(ctx.reading, "ds_config", None)
    root = getattr(cfg, "document", None) and cfg.document.root
    if cfg is None or root is None or not hasattr(root, "keys") or not (set(root.keys()) & DS_MARKERS):
        return None
    return cfg


def _integration(ctx: RuleContext) -> bool | None:
    """True when an integration (HF Trainer, Accelerate) fills "auto" values; None when unknown."""
    if ctx.layout is None:
        return None
    if ctx.layout.value("launcher") == "accelerate":
        return True
    facts = ctx.layout.extras.get("facts", {})
    return ctx.layout.value("trainer") == "deepspeed" and "batch.micro" in facts


def _walk_strict(node, section_schema: dict, path: str):
    """(entry, path, reason) for unknown keys and "auto" values inside a pydantic section."""
    from plint.sources.jsonpos import JObject, JScalar

    if not isinstance(node, JObject):
        return
    props = section_schema.get("properties", {})
    for e in node.entries:
        here = f"{path}.{e.key}"
        if e.key not in props:
            if section_schema.get("additionalProperties") is False:
                yield e, here, "unknown", closest(e.key, props)
            continue
        if isinstance(e.value, JScalar) and e.value.value == "auto":
            yield e, here, "auto", None
        sub = props[e.key]
        if sub.get("type") == "object" or "anyOf" in sub:
            nested = sub if sub.get("type") == "object" else next(
                (s for s in sub.get("anyOf", []) if s.get("type") == "object"), None)
            if nested is not None:
                yield from _walk_strict(e.value, nested, here)


def _validated_unknowns(cfg) -> set[str]:
    """Dotted paths of keys jsonschema rejects (additionalProperties) in the strict sections."""
    import jsonschema

    data = cfg.document.root.to_python()
    found = set()

    def errors(items):
        for error in items:
            yield error
            yield from errors(error.context or [])  # anyOf (an optional section) nests its errors

    for error in errors(jsonschema.Draft202012Validator(schema()).iter_errors(data)):
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties", {}))
            base = ".".join(str(p) for p in error.absolute_path)
            for key in error.instance:
                if key not in allowed:
                    found.add(f"{base}.{key}" if base else key)
    return found


# Keys DeepSpeed renamed, which older guides (the HF ZeRO-Infinity example among them) still write:
# aio.thread_count is read as aio.intra_op_parallelism now (deepspeed/runtime/swap_tensor/constants.py)
RENAMED_KEYS = {"aio.thread_count": "intra_op_parallelism"}


@register(
    "PL504", "deepspeed-unknown-key", "error",
    "A DeepSpeed config key that DeepSpeed silently ignores or rejects.",
    RuleDocs(
        what="Checks DeepSpeed config keys against the schema built from the installed DeepSpeed: an unknown "
             "top-level key (silently ignored), a removed block (rejected since 0.19.8), an unknown key inside "
             "a pydantic section such as zero_optimization (rejected), and \"auto\" inside a pydantic section "
             "when no integration fills it (silently dropped, so the field takes its default).",
        why="`\"zero_optimisation\": {\"stage\": 3}` is accepted and ZeRO stays at stage 0: the model that "
            "was meant to be sharded over every GPU is replicated on each, and runs out of memory or "
            "trains slower without any message.",
        bad=Example({"ds.json": '{"train_batch_size": 32, "zero_optimisation": {"stage": 3}}\n'}, main="ds.json"),
        good=Example({"ds.json": '{"train_batch_size": 32, "zero_optimization": {"stage": 3}}\n'}, main="ds.json"),
        fix="`plint fix` renames the key, in the JSON file or the heredoc that writes it, when one suggestion stands out and the object has no such key yet (safe).",
        references=("deepspeed/runtime/config.py (dict.get readers)", "deepspeed/runtime/config_utils.py"),
    ),
    needs_layout=False,
)
def deepspeed_unknown_key(ctx: RuleContext):
    cfg = _config(ctx)
    if cfg is None or not hasattr(cfg.document.root, "entries"):
        return
    s = schema()
    known, removed = s["properties"], set(s.get("x-removed", []))
    integration = _integration(ctx)
    rejected = _validated_unknowns(cfg)
    for e in cfg.document.root.entries:
        if e.key in removed:
            yield Finding(f"{cfg.path}: \"{e.key}\" was removed from DeepSpeed; {s['x-deepspeed-version']} "
                          "rejects the config (DeepSpeedConfigError)", e.key_span, key=e.key)
        elif e.key not in known:
            near = closest(e.key, known)
            yield Finding(f"{cfg.path}: DeepSpeed silently ignores the unknown key \"{e.key}\""
                          + (f"; did you mean \"{near}\"?" if near else ""), e.key_span, key=e.key)
        elif known[e.key].get("x-unknown-keys") == "ignored" and hasattr(e.value, "entries"):
            inner = known[e.key]["properties"]
            for entry in e.value.entries:
                if entry.key not in inner:
                    renamed = RENAMED_KEYS.get(f"{e.key}.{entry.key}")
                    if renamed in inner:
                        hint = f", which it renamed \"{renamed}\""
                    else:
                        near = closest(entry.key, inner)
                        hint = f"; did you mean \"{near}\"?" if near else ""
                    yield Finding(f"{cfg.path}: DeepSpeed silently ignores \"{e.key}.{entry.key}\"{hint}",
                                  entry.key_span, key=f"{e.key}.{entry.key}")
        elif known[e.key].get("type") == "object":
            for entry, path, kind, near in _walk_strict(e.value, known[e.key], e.key):
                if kind == "unknown" and path in rejected:
                    yield Finding(f"{cfg.path}: DeepSpeed rejects \"{path}\" (Extra inputs are not permitted)"
                                  + (f"; did you mean \"{near}\"?" if near else ""), entry.key_span, key=path)
                elif kind == "auto" and integration is False:
                    yield Finding(f"{cfg.path}: \"{path}\": \"auto\" is dropped inside {e.key} and the field "
                                  "takes its default: no integration fills it in this launch",
                                  entry.value.span, key=path)


@register(
    "PL505", "deepspeed-auto-unresolved", "warning",
    "\"auto\" values that no integration fills in.",
    RuleDocs(
        what="Checks \"auto\" values in a DeepSpeed config used by a launch with no HF Trainer or Accelerate "
             "integration (Megatron-DeepSpeed, a plain deepspeed script).",
        why="Only the HF Trainer and Accelerate replace \"auto\"; DeepSpeed itself fails on \"auto\" batch "
            "sizes ('>' not supported between instances of 'str' and 'int') and drops it in pydantic sections.",
        bad=Example({"launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n",
                     "ds.json": '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 4}\n'}),
        good=Example({"launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n",
                      "ds.json": '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4}\n'}),
        fix="Not fixed automatically.",
    ),
    fix_availability="sometimes",
)
def deepspeed_auto_unresolved(ctx: RuleContext):
    cfg = _config(ctx)
    if cfg is None or _integration(ctx) is not False or not hasattr(cfg.document.root, "entries"):
        return
    strict = {k for k, v in schema()["properties"].items() if v.get("type") == "object"}
    for e in cfg.document.root.entries:
        if e.key in strict:
            continue  # reported by PL504: dropped, not left unresolved
        if getattr(e.value, "value", None) == "auto":
            yield Finding(f"{cfg.path}: \"{e.key}\" is \"auto\" but nothing in this launch fills it in "
                          "(only the HF Trainer and Accelerate do)", e.value.span, key=e.key)


@register(
    "PL507", "deepspeed-key-no-effect", "info",
    "A ZeRO key that does nothing at the configured stage.",
    RuleDocs(
        what="Checks stage-3-only keys (stage3_*, offload_param, ZeRO++ hpZ and quantized weights) when "
             "zero_optimization.stage is below 3.",
        why="They are accepted and ignored: the parameter offload or prefetching the config seems to ask "
            "for does not happen.",
        bad=Example({"ds.json": '{"train_batch_size": 32, "zero_optimization": {"stage": 2, '
                                '"offload_param": {"device": "cpu"}}}\n'}, main="ds.json"),
        good=Example({"ds.json": '{"train_batch_size": 32, "zero_optimization": {"stage": 3, '
                                 '"offload_param": {"device": "cpu"}}}\n'}, main="ds.json"),
        fix="Not fixed automatically.",
    ),
    needs_layout=False,
)
def deepspeed_key_no_effect(ctx: RuleContext):
    cfg = _config(ctx)
    if cfg is None or not hasattr(cfg.document.root, "get"):
        return
    zero = cfg.document.root.get("zero_optimization")
    stage = cfg.zero_stage.value
    if zero is None or not hasattr(zero, "entries") or not isinstance(stage, int) or stage >= 3:
        return
    for e in zero.entries:
        if e.key.startswith(STAGE3_ONLY):
            yield Finding(f"{cfg.path}: zero_optimization.{e.key} has no effect at ZeRO stage {stage}",
                          e.key_span, key=f"zero_optimization.{e.key}")
