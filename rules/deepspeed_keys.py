"""PL504, PL505, PL507-PL510: DeepSpeed config keys, checked against schemas/deepspeed_config.schema.json (built
from the installed DeepSpeed by scripts/build_deepspeed_schema.py), and its syntax as the program that loads it
reads it. Top-level keys are read with dict.get, so a misspelt section is silently ignored; keys inside the
pydantic sections are rejected when unknown, and an "auto" value there is silently dropped
(shared/reference/deepspeed.md §1, §2.5)."""

from __future__ import annotations

from functools import lru_cache

from plint.rules.base import (
    Example,
    Finding,
    LaunchContext,
    RuleContext,
    RuleDocs,
    no_fix,
    planned_fix,
    register,
    safe_fix,
    unsafe_fix,
)
from plint.rules.common import closest
from plint.keytree import JObject, JScalar

STAGE3_ONLY = (
    "stage3_",
    "offload_param",
    "zero_hpz_partition_size",
    "zero_quantized_weights",
    "zero_quantized_nontrainable_weights",
    "sub_group_size",
    "prefetch_bucket_size",
    "param_persistence_threshold",
    "max_live_parameters",
    "max_reuse_distance",
    "gather_16bit_weights_on_model_save",
)


@lru_cache(maxsize=1)
def schema() -> dict:
    from plint.schemas import read_json

    return read_json("deepspeed_config.schema.json")


def _config(ctx: RuleContext):
    """The DeepSpeed config a launch uses, or a JSON file checked on its own when it looks like one."""
    if ctx.layout is not None:
        return ctx.layout.extras.ds_config
    cfg = getattr(ctx.reading, "ds_config", None)
    if cfg is None:
        return None
    return cfg if cfg.has_deepspeed_marker else None


def _integration(ctx: RuleContext) -> bool | None:
    """True when an integration (HF Trainer, Accelerate) fills "auto" values; None when unknown."""
    if ctx.layout is None or ctx.layout.extras.config_alone:
        return None  # a config checked on its own: whatever runs it may fill "auto", or not
    if ctx.layout.value("launcher") == "accelerate":
        return True
    facts = ctx.layout.extras.facts
    return ctx.layout.value("trainer") == "deepspeed" and "batch.micro" in facts


# The "auto" values the HF Trainer replaces, by dotted path: HfTrainerDeepSpeedConfig.trainer_config_process and
# trainer_config_finalize (transformers/integrations/deepspeed.py) call fill_match / fill_only on exactly these;
# any other "auto" reaches DeepSpeed as the string "auto".
HF_TRAINER_FILLS = frozenset(
    {
        "train_micro_batch_size_per_gpu",
        "gradient_accumulation_steps",
        "train_batch_size",
        "gradient_clipping",
        "optimizer.params.lr",
        "optimizer.params.betas",
        "optimizer.params.eps",
        "optimizer.params.weight_decay",
        "scheduler.params.warmup_min_lr",
        "scheduler.params.warmup_max_lr",
        "scheduler.params.total_num_steps",
        "scheduler.params.warmup_num_steps",
        "fp16.enabled",
        "amp.enabled",
        "amp.opt_level",
        "bf16.enabled",
        "zero_optimization.reduce_bucket_size",
        "zero_optimization.stage3_prefetch_bucket_size",
        "zero_optimization.stage3_param_persistence_threshold",
    }
)


def _hf_trainer(ctx: RuleContext) -> bool:
    """Whether the launch passes the HF Trainer's own arguments (the integration that fills "auto")."""
    facts = ctx.layout.extras.facts if ctx.layout is not None else {}
    return "batch.micro" in facts or "batch.grad_accum" in facts


def _auto_the_trainer_leaves(cfg):
    def walk(node, prefix: str):
        for e in node.entries:
            path = f"{prefix}{e.key}"
            if isinstance(e.value, JObject):
                yield from walk(e.value, path + ".")
            elif isinstance(e.value, JScalar) and e.value.value == "auto" and path not in HF_TRAINER_FILLS:
                yield Finding(
                    f'{cfg.path}: "{path}" is "auto", which the HF Trainer does not fill (it fills '
                    "the batch sizes, clipping, the optimizer's and scheduler's parameters, fp16/bf16 and "
                    'the hidden-size-based bucket sizes): DeepSpeed receives the string "auto"',
                    e.value.span,
                    key=path,
                )

    yield from walk(cfg.document.root, "")


def _walk_strict(node, section_schema: dict, path: str):
    """(entry, path, reason) for unknown keys and "auto" values inside a pydantic section."""

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
            nested = (
                sub
                if sub.get("type") == "object"
                else next((s for s in sub.get("anyOf", []) if s.get("type") == "object"), None)
            )
            if nested is not None:
                yield from _walk_strict(e.value, nested, here)


# The few keywords schemas/deepspeed_config.schema.json uses (type, enum, properties,
# additionalProperties, anyOf), validated as jsonschema's Draft 2020-12 validator does, without
# importing jsonschema (~65 ms of start-up); tests/test_deepspeed_keys.py holds the two in step.
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}
SCHEMA_KEYWORDS = {"type", "enum", "properties", "additionalProperties", "anyOf"}


def _same(a, b) -> bool:
    """JSON equality as jsonschema's enum compares: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def schema_errors(value, schema: dict, path: tuple = ()):
    """(path, unknown keys or None) per error that `value` has under `schema`; the errors inside a
    failing anyOf follow it, as jsonschema's error.context does."""
    kinds = schema.get("type")
    if kinds is not None and not any(_TYPES[k](value) for k in ([kinds] if isinstance(kinds, str) else kinds)):
        yield path, None
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        yield path, None
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key, sub in props.items():
            if key in value:
                yield from schema_errors(value[key], sub, (*path, key))
        extra = [key for key in value if key not in props]
        if schema.get("additionalProperties") is False and extra:
            yield path, extra
    if "anyOf" in schema:
        branches = [list(schema_errors(value, branch, path)) for branch in schema["anyOf"]]
        if all(branches):
            yield path, None
            for errors in branches:
                yield from errors


def _validated_unknowns(cfg) -> set[str]:
    """Dotted paths of keys the schema rejects (additionalProperties) in the strict sections."""
    data = cfg.document.root.to_python()
    found: set[str] = set()
    for path, unknown in schema_errors(data, schema()):
        base = ".".join(str(p) for p in path)
        found.update(f"{base}.{key}" if base else key for key in unknown or ())
    return found


def _comment_key(key: str) -> bool:
    """A key written as a comment (JSON has none): "comment", "_comment", "//", "#note", "_notes"... Only at
    the top level, which DeepSpeed reads with dict.get; inside a pydantic section (zero_optimization) it is
    still rejected (extra="forbid")."""
    bare = key.strip().lower()
    return bare.startswith(("_", "//", "#")) or bare.rstrip("s") in ("comment", "note", "description", "remark")


def _section_of(key: str, known: dict) -> str | None:
    """The top-level section whose own keys include `key` (`reduce_bucket_size` of zero_optimization)."""
    return next((name for name, spec in known.items() if key in (spec.get("properties") or {})), None)


# Keys DeepSpeed renamed, which older guides (the HF ZeRO-Infinity example among them) still write:
# aio.thread_count is read as aio.intra_op_parallelism now (deepspeed/runtime/swap_tensor/constants.py)
RENAMED_KEYS = {"aio.thread_count": "intra_op_parallelism"}


@register(
    "PL504",
    "deepspeed-unknown-key",
    "error",
    "A DeepSpeed config key that DeepSpeed silently ignores or rejects.",
    RuleDocs(
        what="Checks DeepSpeed config keys against the schema built from the installed DeepSpeed, judged for the "
        "DeepSpeed release in force (configured, else pinned by the checked tree's requirements*.txt or "
        "pyproject.toml, else installed): an unknown "
        "top-level key (silently ignored: an error when it is near a DeepSpeed key or belongs in a section, a warning "
        "when neither, "
        'as a key the project\'s own trainer reads may be; a comment key such as "_comment" or "//" is left alone), '
        "a removed block (rejected since 0.19.8), an unknown key inside "
        "a pydantic section such as zero_optimization (rejected; a warning that it is ignored under a release "
        "before the section became strict, such as bf16 and fp16 before 0.17.1, and when the release that rejects it is "
        'only assumed), and "auto" inside a pydantic '
        "section when no integration fills it (silently dropped, so the field takes its default).",
        why='`"zero_optimisation": {"stage": 3}` is accepted and ZeRO stays at stage 0: the model that '
        "was meant to be sharded over every GPU is replicated on each, and runs out of memory or "
        "trains slower without any message.",
        bad=Example({"ds.json": '{"train_batch_size": 32, "zero_optimisation": {"stage": 3}}\n'}, main="ds.json"),
        good=Example({"ds.json": '{"train_batch_size": 32, "zero_optimization": {"stage": 3}}\n'}, main="ds.json"),
        fix=safe_fix(
            "`plint fix` renames the key, in the JSON file or the heredoc that writes it, when one suggestion stands out and the object has no such key yet (safe)."
        ),
        references=("deepspeed/runtime/config.py (dict.get readers)", "deepspeed/runtime/config_utils.py"),
    ),
    needs_layout=False,
)
def deepspeed_unknown_key(ctx: RuleContext):
    cfg = _config(ctx)
    if cfg is None or not hasattr(cfg.document.root, "entries"):
        return
    from plint.catalog.deepspeed_release import (
        REMOVED_BLOCKS_REJECTED_FROM,
        RENAMED_IN,
        deepspeed_in_force,
    )

    s = schema()
    known, removed = s["properties"], set(s.get("x-removed", []))
    integration = _integration(ctx)
    rejected = _validated_unknowns(cfg)
    releases = getattr(ctx.settings, "releases", None) or {}
    pinned = (getattr(ctx.reading, "pins", None) or {}).get("deepspeed")
    in_force = deepspeed_in_force(releases.get("deepspeed"), s["x-deepspeed-version"], pinned)
    for e in cfg.document.root.entries:
        if e.key in removed:
            if not in_force.at_least(REMOVED_BLOCKS_REJECTED_FROM):
                continue  # the release in force still accepts the block
            why = (
                ' (set deepspeed = "<release>" in [tool.plint]: releases up to 0.19.5 accept it)'
                if in_force.assumed
                else ""
            )
            yield Finding(
                f'{cfg.path}: "{e.key}" was removed from DeepSpeed; {in_force.label} '
                f"rejects the config (DeepSpeedConfigError){why}",
                e.key_span,
                key=e.key,
                severity="warning" if in_force.assumed else None,
            )
        elif e.key not in known and _comment_key(e.key):
            continue  # a note for readers: DeepSpeed reads the top level with dict.get, so it is ignored by design
        elif e.key not in known:
            near = closest(e.key, known)
            home = _section_of(e.key, known)
            hint = (
                f'; did you mean "{near}"?'
                if near
                else f'; it is a key of "{home}", where DeepSpeed reads it'
                if home
                else " (no DeepSpeed key is near it)"
            )
            # a misspelt or misplaced DeepSpeed key loses its setting (an error); one near none may be the
            # project's own, read from the same file by its trainer (fmengine's "lora", "warmup"): a warning
            yield Finding(
                f'{cfg.path}: DeepSpeed silently ignores the unknown key "{e.key}"{hint}',
                e.key_span,
                key=e.key,
                severity=None if near or home else "warning",
            )
        elif known[e.key].get("x-unknown-keys") == "ignored" and hasattr(e.value, "entries"):
            inner = known[e.key]["properties"]
            for entry in e.value.entries:
                if entry.key not in inner:
                    since = RENAMED_IN.get(f"{e.key}.{entry.key}")
                    if since is not None and not in_force.at_least(since):
                        continue  # still the key's name in the release in force
                    renamed = RENAMED_KEYS.get(f"{e.key}.{entry.key}")
                    if renamed in inner:
                        hint = f', which it renamed "{renamed}"'
                    else:
                        near = closest(entry.key, inner)
                        hint = f'; did you mean "{near}"?' if near else ""
                    yield Finding(
                        f'{cfg.path}: DeepSpeed silently ignores "{e.key}.{entry.key}"{hint}',
                        entry.key_span,
                        key=f"{e.key}.{entry.key}",
                    )
        elif known[e.key].get("type") == "object":
            yield from _strict_section_findings(cfg.path, e, known[e.key], rejected, in_force, integration)


def _strict_section_findings(path_of_config: str, e, section: dict, rejected: set, in_force, integration):
    """PL504 inside a pydantic section: an unknown key, rejected from the release that made the section strict
    (STRICT_SINCE) and passed over before it, and an "auto" nothing fills."""
    from plint.catalog.deepspeed_release import STRICT_FROM_THE_START, STRICT_SINCE

    strict_since = STRICT_SINCE.get(e.key)
    # a section strict only from a later release: which release rejects it, and a warning when that release is
    # only assumed (the removed blocks' rule)
    later = strict_since is not None and strict_since > STRICT_FROM_THE_START
    since = ".".join(map(str, strict_since or ()))
    for entry, path, kind, near in _walk_strict(e.value, section, e.key):
        hint = f'; did you mean "{near}"?' if near else ""
        if kind == "unknown" and path in rejected and strict_since and not in_force.at_least(strict_since):
            # the release in force reads the section with dict.get: the key is passed over, not refused
            yield Finding(
                f'{path_of_config}: {in_force.label} silently ignores "{path}"{hint} (DeepSpeed {since} and later '
                "reject it)",
                entry.key_span,
                key=path,
                severity="warning",
            )
        elif kind == "unknown" and path in rejected:
            yield Finding(
                f'{path_of_config}: {in_force.label if later else "DeepSpeed"} rejects "{path}" (Extra inputs are '
                f"not permitted{f'; releases before {since} ignore it' if later else ''}){hint}",
                entry.key_span,
                key=path,
                severity="warning" if later and in_force.assumed else None,
            )
        elif kind == "auto" and integration is False:
            yield Finding(
                f'{path_of_config}: "{path}": "auto" is dropped inside {e.key} and the field '
                "takes its default: no integration fills it in this launch",
                entry.value.span,
                key=path,
            )


@register(
    "PL505",
    "deepspeed-auto-unresolved",
    "warning",
    '"auto" values that no integration fills in.',
    RuleDocs(
        what='Checks "auto" values in a DeepSpeed config used by a launch with no HF Trainer or Accelerate '
        'integration (Megatron-DeepSpeed, a plain deepspeed script), and, with the HF Trainer, "auto" values '
        "outside the keys it fills (batch sizes, clipping, the optimizer's and scheduler's parameters, "
        "fp16/bf16, the hidden-size-based ZeRO bucket sizes: HfTrainerDeepSpeedConfig in "
        "transformers/integrations/deepspeed.py).",
        why='Only the HF Trainer and Accelerate replace "auto"; DeepSpeed itself fails on "auto" batch '
        "sizes ('>' not supported between instances of 'str' and 'int') and drops it in pydantic sections.",
        bad=Example(
            {
                "launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n",
                "ds.json": '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 4}\n',
            }
        ),
        good=Example(
            {
                "launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n",
                "ds.json": '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4}\n',
            }
        ),
        fix=no_fix(),
    ),
)
def deepspeed_auto_unresolved(ctx: LaunchContext):
    cfg = _config(ctx)
    if cfg is None or not hasattr(cfg.document.root, "entries"):
        return
    if _integration(ctx) is True:
        if _hf_trainer(ctx):
            yield from _auto_the_trainer_leaves(cfg)
        return
    if _integration(ctx) is not False:
        return
    strict = {k for k, v in schema()["properties"].items() if v.get("type") == "object"}
    for e in cfg.document.root.entries:
        if e.key in strict:
            continue  # reported by PL504: dropped, not left unresolved
        if getattr(e.value, "value", None) == "auto":
            yield Finding(
                f'{cfg.path}: "{e.key}" is "auto" but nothing in this launch fills it in '
                "(only the HF Trainer and Accelerate do)",
                e.value.span,
                key=e.key,
            )


@register(
    "PL507",
    "deepspeed-key-no-effect",
    "info",
    "A ZeRO key that does nothing at the configured stage.",
    RuleDocs(
        what="Checks stage-3-only keys (stage3_*, offload_param, ZeRO++ hpZ and quantized weights) when "
        "zero_optimization.stage is below 3.",
        why="They are accepted and ignored: the parameter offload or prefetching the config seems to ask "
        "for does not happen.",
        bad=Example(
            {
                "ds.json": '{"train_batch_size": 32, "zero_optimization": {"stage": 2, '
                '"offload_param": {"device": "cpu"}}}\n'
            },
            main="ds.json",
        ),
        good=Example(
            {
                "ds.json": '{"train_batch_size": 32, "zero_optimization": {"stage": 3, '
                '"offload_param": {"device": "cpu"}}}\n'
            },
            main="ds.json",
        ),
        fix=no_fix(),
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
            yield Finding(
                f"{cfg.path}: zero_optimization.{e.key} has no effect at ZeRO stage {stage}",
                e.key_span,
                key=f"zero_optimization.{e.key}",
            )


@lru_cache(maxsize=1)
def optimizer_table() -> dict:
    from plint.schemas import read_json

    return read_json("deepspeed_optimizers.json")


def _optimizer_candidates(cfg, kind: str, params, table: dict) -> list[str]:
    """The classes DeepSpeed may build for a built-in `kind`: one when the config decides it, both when
    the optimizer offload or params.torch_adam is unknown (engine.py _configure_basic_optimizer)."""

    builds = table["types"][kind]["builds"]
    torch_adam = params.get("torch_adam")
    flag = torch_adam.value if isinstance(torch_adam, JScalar) else (None if torch_adam is not None else False)
    if flag is True and "torch_adam" in builds:
        return [builds["torch_adam"]]
    device = cfg.offload_optimizer
    offload = (device.value in ("cpu", "nvme")) if device.known and device.value != "auto" else None
    out = (
        [builds["offload"]]
        if offload and "offload" in builds
        else [builds["default"]]
        if offload is False or "offload" not in builds
        else [builds["default"], builds["offload"]]
    )
    if flag is not False and flag is not True and "torch_adam" in builds:  # unknown (a variable, "auto")
        out.append(builds["torch_adam"])
    return out


@register(
    "PL508",
    "deepspeed-optimizer-param",
    "error",
    "An optimizer parameter the optimizer DeepSpeed builds does not accept.",
    RuleDocs(
        what="Checks the keys under optimizer.params against the constructor of the class DeepSpeed builds for "
        "optimizer.type (FusedAdam, DeepSpeedCPUAdam with optimizer offload, torch.optim.Adam/AdamW with "
        "torch_adam, FusedLamb, FusedLion, torch.optim.Adagrad, or torch.optim.<type> for any other name), "
        "the keys DeepSpeed takes out first (adam_w_mode, torch_adam, fp32_optimizer_states) excepted; "
        "max_grad_norm under any type; and a type that is neither built in nor in torch.optim. The table "
        "is schemas/deepspeed_optimizers.json, generated from the constructors' source by "
        "scripts/build_optimizer_table.py.",
        why="DeepSpeed calls Class(params, **optimizer.params): a key the constructor does not take is a TypeError "
        "('unexpected keyword argument') in deepspeed.initialize, after the job has waited in the queue and "
        "loaded the model. max_grad_norm (an HF Trainer argument, often copied into the JSON) is refused "
        "with a ValueError: clipping is the top-level gradient_clipping.",
        bad=Example(
            {
                "ds.json": '{"train_batch_size": 32, "optimizer": {"type": "Adam", "params": {"lr": 1e-4, '
                '"max_grad_norm": 1.0, "momentum": 0.9}}}\n'
            },
            main="ds.json",
        ),
        good=Example(
            {
                "ds.json": '{"train_batch_size": 32, "gradient_clipping": 1.0, "optimizer": {"type": "Adam", '
                '"params": {"lr": 1e-4, "betas": [0.9, 0.95]}}}\n'
            },
            main="ds.json",
        ),
        fix=unsafe_fix(
            "`plint fix --unsafe-fixes` removes the refused key from optimizer.params (clipping then follows the "
            "top-level gradient_clipping, 1.0 by default since DeepSpeed 0.19.3); an unknown type is not fixed."
        ),
        references=(
            "deepspeed/runtime/engine.py _configure_basic_optimizer, _do_sanity_check",
            "deepspeed/ops/adam/fused_adam.py, cpu_adam.py; torch/optim/*.py",
        ),
    ),
    needs_layout=False,
)
def deepspeed_optimizer_param(ctx: RuleContext):
    cfg = _config(ctx)
    if cfg is None or ctx.layout is not None and ctx.layout.value("trainer") == "megatron-deepspeed":
        # Megatron-DeepSpeed hands deepspeed.initialize its own optimizer (optimizer=get_megatron_optimizer(...),
        # megatron/training.py setup_model_and_optimizer), so DeepSpeed builds nothing from the JSON's section
        return
    root = cfg.document.root
    optimizer = root.get("optimizer") if isinstance(root, JObject) else None
    if not isinstance(optimizer, JObject):
        return
    kind = optimizer.get("type")
    params = optimizer.get("params")
    if not isinstance(kind, JScalar) or not isinstance(kind.value, str):
        return
    table = optimizer_table()
    name = kind.value.lower() if kind.value.lower() in set(table["types"]) | set(table["unchecked"]) else kind.value
    if isinstance(params, JObject):
        for e in params.entries:
            if e.key in table["refused"]:
                yield Finding(
                    f"{cfg.path}: optimizer.params.{e.key}: DeepSpeed stops at start-up with {table['refused'][e.key]}",
                    e.key_span,
                    key=f"optimizer.params.{e.key}",
                )
    if name in table["unchecked"]:
        return
    if name in table["types"]:
        if not isinstance(params, JObject):
            return
        popped = set(table["types"][name]["popped"])
        classes = _optimizer_candidates(cfg, name, params, table)
        if classes == [table["types"][name]["builds"].get("torch_adam")]:
            popped |= set(table["types"][name].get("popped_with_torch_adam", ()))
        signatures = [table["classes"][c] for c in classes]
    elif name in table["torch_optim"]:
        if not isinstance(params, JObject):
            return
        popped, classes, signatures = set(), [f"torch.optim.{name}"], [table["torch_optim"][name]]
    else:
        options = list(table["types"]) + list(table["torch_optim"])
        near = next((o for o in options if o.lower() == kind.value.lower()), None) or closest(kind.value, options)
        yield Finding(
            f'{cfg.path}: optimizer.type "{kind.value}" is neither a DeepSpeed optimizer nor a class of '
            f"torch.optim (DeepSpeed {table['x-deepspeed-version']}, torch {table['x-torch-version']}): "
            "DeepSpeed stops at start-up ('not a supported DeepSpeed Optimizer') unless the script passes "
            "its own optimizer" + (f'; did you mean "{near}"?' if near else ""),
            kind.span,
            key="optimizer.type",
        )
        return
    shown = " or ".join(c.rsplit(".", 1)[-1] for c in classes)
    for e in params.entries:
        if e.key in popped or e.key in table["refused"]:
            continue
        if all(e.key not in s["params"] and not s["var_keyword"] for s in signatures):
            accepted = sorted(
                ({p for s in signatures for p in s["params"]} - {p for s in signatures for p in s["supplied"]}) | popped
            )
            near = closest(e.key, accepted)
            yield Finding(
                f'{cfg.path}: optimizer.params.{e.key}: "{kind.value}" builds {shown}, whose constructor '
                f"takes no {e.key} (TypeError: unexpected keyword argument at start-up); it takes "
                f"{', '.join(accepted)}" + (f'; did you mean "{near}"?' if near else ""),
                e.key_span,
                key=f"optimizer.params.{e.key}",
            )
        elif all(e.key in s["supplied"] for s in signatures):
            yield Finding(
                f"{cfg.path}: optimizer.params.{e.key}: DeepSpeed passes {e.key} to {shown} itself "
                f"(TypeError: got multiple values for keyword argument '{e.key}' at start-up)",
                e.key_span,
                key=f"optimizer.params.{e.key}",
            )


@register(
    "PL509",
    "deepspeed-trainer-sized-steps",
    "warning",
    "A scheduler step count written in the DeepSpeed config where the HF Trainer computes it.",
    RuleDocs(
        what="With the HF Trainer, checks scheduler.params.total_num_steps and warmup_num_steps written as numbers: "
        "the Trainer sizes them itself (num_training_steps, get_warmup_steps) and requires a written value to "
        "equal its own. An error when --max_steps (or --warmup_steps) says the value differs, a warning when "
        "the Trainer's count depends on the dataset.",
        why="transformers' HfTrainerDeepSpeedConfig.trainer_config_finalize fills these keys with fill_match: a "
        'value that is not "auto" and differs is a mismatch, and the Trainer raises \'Please correct the '
        "following DeepSpeed config values that mismatch TrainingArguments values' once the model is loaded.",
        bad=Example(
            {
                "launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed ds.json --per_device_train_batch_size 4 "
                "--max_steps 2000\n",
                "ds.json": '{"train_micro_batch_size_per_gpu": "auto", "scheduler": {"type": "WarmupDecayLR", '
                '"params": {"total_num_steps": 1000, "warmup_num_steps": "auto"}}}\n',
            }
        ),
        good=Example(
            {
                "launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed ds.json --per_device_train_batch_size 4 "
                "--max_steps 2000\n",
                "ds.json": '{"train_micro_batch_size_per_gpu": "auto", "scheduler": {"type": "WarmupDecayLR", '
                '"params": {"total_num_steps": "auto", "warmup_num_steps": "auto"}}}\n',
            }
        ),
        fix=no_fix('write "auto".'),
        references=("transformers/integrations/deepspeed.py HfTrainerDeepSpeedConfig.trainer_config_finalize",),
    ),
)
def deepspeed_trainer_sized_steps(ctx: LaunchContext):
    cfg = _config(ctx)
    if cfg is None or _integration(ctx) is not True or not _hf_trainer(ctx):
        return
    facts = ctx.layout.extras.facts
    for key, fact, flag in (
        ("total_num_steps", "train_iters", "--max_steps"),
        ("warmup_num_steps", "train_warmup_steps", "--warmup_steps"),
    ):
        written = cfg.value("scheduler", "params", key)
        if written is None or isinstance(written.value, bool) or not isinstance(written.value, (int, float)):
            continue
        trainer_value = facts.get(fact)
        given = trainer_value.value if trainer_value is not None else None
        if isinstance(given, int) and given > 0:
            if given == written.value:
                continue
            yield Finding(
                f"{cfg.path}: scheduler.params.{key} is {written.value:g} but the HF Trainer computes "
                f'{given} ({flag} {given}) and raises on the mismatch; write "auto"',
                written.span,
                key=f"scheduler.params.{key}",
                severity="error",
            )
        else:
            yield Finding(
                f"{cfg.path}: scheduler.params.{key} is {written.value:g}, a count the HF Trainer computes "
                f"from the dataset (no {flag}) and requires to match: it raises unless they are equal; "
                'write "auto"',
                written.span,
                key=f"scheduler.params.{key}",
            )


# The integrations open a config given by path themselves and hand DeepSpeed a dict (accelerate/utils/deepspeed.py
# HfDeepSpeedConfig.__init__: `json.load(f)`, huggingface/accelerate 0a65ca4; transformers' HfTrainerDeepSpeedConfig
# subclasses it): DeepSpeed's own hjson reader and its duplicate-key check (deepspeed/runtime/config.py
# DeepSpeedConfig, dict_raise_error_on_duplicate_keys) never see the file.
@register(
    "PL510",
    "deepspeed-config-not-json",
    "error",
    "hjson syntax in a DeepSpeed config that the HF Trainer or Accelerate reads with json.load.",
    RuleDocs(
        what="Where the HF Trainer (its --deepspeed PATH) or Accelerate reads the DeepSpeed config, checks it as "
        "json.load reads it: what DeepSpeed's "
        "own hjson reader accepts and json.load refuses (a comment, a trailing comma, a key without quotes, single "
        "quotes, a string without quotes, a line break for a comma) is an error; a key given twice, of which "
        "json.load keeps the last, a warning.",
        why="The integrations open the file with json.load and hand DeepSpeed a dict: a comment DeepSpeed alone "
        "would skip stops the job with a JSONDecodeError once it starts, after its wait in the queue; of a key "
        "given twice only the last counts, without a word.",
        bad=Example(
            {
                "launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed ds.json --per_device_train_batch_size 4\n",
                "ds.json": '{\n  "train_micro_batch_size_per_gpu": "auto",\n  // ZeRO-2 for the 7B runs\n'
                '  "zero_optimization": {"stage": 2}\n}\n',
            }
        ),
        good=Example(
            {
                "launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed ds.json --per_device_train_batch_size 4\n",
                "ds.json": '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "zero_optimization": {"stage": 2}\n}\n',
            }
        ),
        fix=planned_fix("remove the comment or the trailing comma, quote the key or the string."),
        references=(
            "accelerate/utils/deepspeed.py HfDeepSpeedConfig.__init__ (json.load)",
            "deepspeed/runtime/config.py DeepSpeedConfig (hjson)",
        ),
    ),
)
def deepspeed_config_not_json(ctx: LaunchContext):
    cfg = _config(ctx)
    if cfg is None or _integration(ctx) is not True:
        return
    accelerate = ctx.layout.value("launcher") == "accelerate"
    option = ctx.fact("deepspeed.config_option")
    if not accelerate and (option is None or option.value != "--deepspeed"):
        return  # DeepSpeed's own --deepspeed_config (or a script's field) goes to deepspeed.initialize: hjson
    reader = "Accelerate" if accelerate else "the HF Trainer"
    for what, span in cfg.document.leniencies:
        yield Finding(
            f"{cfg.path}: {what.split(' (')[0]}: {reader} reads this config with json.load, which refuses it "
            "(JSONDecodeError at start-up; DeepSpeed alone would accept it)",
            span,
        )
    for key, span in cfg.document.duplicates:
        yield Finding(
            f'{cfg.path}: "{key}" is given twice: {reader} reads this config with json.load, which keeps the last '
            "value without a word",
            span,
            key=key,
            severity="warning",
        )
