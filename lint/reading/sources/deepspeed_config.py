"""The facts of a DeepSpeed config as DeepSpeed 0.19 reads them (shared/reference/deepspeed.md §1-§2).

Top-level keys are read with dict.get, so a misspelt section is silently ignored and JSON null is
the same as absent; `bf16` falls back to its old name `bfloat16`; `zero_optimization: true|false`
is the legacy form of stage 1|0. DeepSpeed loads the file with hjson, which turns an integral number
such as `64.0` into the int 64. `"auto"` stays the string "auto": an integration (HF Trainer,
Accelerate) fills it in, and whether one does is for the rules to say.

`derive_batch` computes the batch triple as `DeepSpeedConfig._set_batch_related_parameters` and
`_batch_assertion` do (deepspeed/runtime/config.py, checked against the installed 0.19.8): the same
Python operations on the same values, so floor division, the order of the checks and the wording of
DeepSpeed's refusals come out as DeepSpeed's own.
"""

from __future__ import annotations

import re

from plint.record import field, record
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from plint.reading.shell.model import MappedText, Problem
from plint.keytree import JObject, JScalar, JsonDocument, JUnknown
from plint.reading.sources.jsonpos import parse_json
from plint.values import Value, default, unresolved
from plint.bounds import MAX_VALUE_CHARS

TRAIN_BATCH = "train_batch_size"
MICRO_BATCH = "train_micro_batch_size_per_gpu"
GRAD_ACCUM = "gradient_accumulation_steps"
AUTO_NOTE = (
    '"auto": an integration (HF Trainer, Accelerate) fills it in from its own arguments; plain DeepSpeed does not'
)
# Top-level keys that make a JSON file a DeepSpeed config when it is read on its own (named on the
# command line, or found by a folder walk): the batch keys and the sections nearly every config sets.
DS_MARKERS = frozenset(
    {
        TRAIN_BATCH,
        MICRO_BATCH,
        GRAD_ACCUM,
        "zero_optimization",
        "fp16",
        "bf16",
        "optimizer",
        "zero_allow_untested_optimizer",
    }
)


# Top-level keys of a GPT-NeoX config (megatron/neox_arguments/neox_args.py, NeoXArgsParallelism and
# NeoXArgsModel, at EleutherAI/gpt-neox ea7aefd8), which NeoX reads with '-' as '_' (arguments.py
# from_ymls): a JSON file with one of them is NeoX's own config, which carries DeepSpeed's sections beside
# NeoX's keys and hands only those to DeepSpeed. Judged as a DeepSpeed config, every NeoX key would be an
# "unknown key" (PL504) that DeepSpeed never sees.
NEOX_MARKERS = frozenset(
    {"pipe_parallel_size", "model_parallel_size", "num_layers", "hidden_size", "num_attention_heads"}
)


NEOX_MARKERS_NEEDED = 2  # one alone is too common a name: Aceso's flexpipe JSON has "num_layers" beside its own keys


def is_neox_config(keys) -> bool:
    """Whether top-level keys are a GPT-NeoX config's (NEOX_MARKERS_NEEDED of NEOX_MARKERS, spelt with '-' or
    '_')."""
    return len(NEOX_MARKERS.intersection(str(k).replace("-", "_") for k in keys)) >= NEOX_MARKERS_NEEDED


def is_deepspeed_document(root: Any) -> bool:
    """Whether a parsed JSON document (plint.reading.sources.jsonpos) has a DeepSpeed marker at top level and
    is no GPT-NeoX config."""
    return isinstance(root, JObject) and not DS_MARKERS.isdisjoint(root.keys()) and not is_neox_config(root.keys())


def looks_like_deepspeed(text: str) -> bool:
    """Whether JSON text is a DeepSpeed config, decided cheaply (the stdlib parser, no positions): a marker
    among its top-level keys and no GPT-NeoX model key (NEOX_MARKERS); for text json cannot parse (a template
    a script fills, hjson's comments or trailing commas, a broken file), a marker written as a key anywhere and
    no NeoX key, so that the reader reports it."""
    import json

    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        keys = re.findall(r'"([A-Za-z0-9_-]+)"\s*:', text)
        return not DS_MARKERS.isdisjoint(keys) and not is_neox_config(keys)
    return isinstance(doc, dict) and not DS_MARKERS.isdisjoint(doc) and not is_neox_config(doc)


@record
class DeepSpeedConfig:
    path: str
    document: JsonDocument
    train_batch_size: Value  # origin "default", value None when absent (or null)
    train_micro_batch_size_per_gpu: Value
    gradient_accumulation_steps: Value
    zero_stage: Value  # zero_optimization.stage; default 0
    fp16_enabled: Value  # fp16.enabled as written (True, False, "auto"); default False
    bf16_enabled: Value  # bf16.enabled, or bfloat16.enabled when bf16 is absent; default False
    gradient_clipping: Value  # default 1.0 (0.19.3 on; 0.0 before)
    offload_optimizer: Value  # zero_optimization.offload_optimizer.device; None when no such section
    offload_param: Value  # zero_optimization.offload_param.device; None when no such section
    sequence_parallel_size: Value  # top level; DeepSpeed divides the world by it for dp
    autotp_size: Value  # tensor_parallel.autotp_size: AutoTP training's tp; default 0 (off)
    pipeline_stages: Value  # pipeline.stages; default "auto"
    optimizer_type: Value  # optimizer.type; None when DeepSpeed builds none (a client optimizer is used)
    overlap_comm: Value  # zero_optimization.overlap_comm; default: on at stage 3 only

    @property
    def has_deepspeed_marker(self) -> bool:
        """Whether a DeepSpeed marker is among its top-level keys (a JSON file checked on its own is one)."""
        return is_deepspeed_document(self.document.root)

    @property
    def problems(self) -> list[Problem]:
        return self.document.problems

    def value(self, *keys: str, absent: Any = None) -> Value:
        """Any setting by its path of keys (`cfg.value("zero_optimization", "reduce_bucket_size")`),
        as written; `absent` (origin "default") when the config does not set it."""
        node: Any = self.document.root
        for key in keys[:-1]:
            node = node.get(key) if isinstance(node, JObject) else None
        entry = node.entry(keys[-1]) if isinstance(node, JObject) and keys else None
        return _fact(entry.value if entry else None, ".".join(keys), absent)


@record
class DerivedBatch:
    """The batch triple after DeepSpeed's derivation for a data-parallel size, and its refusal."""

    micro: Value
    global_: Value
    grad_accum: Value
    # DeepSpeed stops at start-up (kind "deepspeed"), worded as DeepSpeed words it
    problems: list[Problem] = field(default_factory=list)


# ---- reading --------------------------------------------------------------------------------------
def _fact(node: Any, where: str, absent: Any = None, whole_number: bool = False) -> Value:
    """A Value for the node at `where`; absent and JSON null (dict.get's None) give `absent`."""
    if node is None or isinstance(node, JScalar) and node.value is None:
        note: str | None = (
            f"{where} is null, which DeepSpeed reads as not set" if node is not None else f"{where} is not set"
        )
        return Value(absent, node.span if node is not None else None, "default", note)
    if isinstance(node, JUnknown):
        piece = node.piece
        note = f"{where} in the DeepSpeed config: {piece.reason or 'unknown'}"
        if piece.alternatives:
            note += " (could be " + ", ".join(dict.fromkeys(piece.alternatives)) + ")"
        return unresolved(note, node.span)
    if isinstance(node, JScalar):
        value = node.value
        if whole_number and isinstance(value, float) and value.is_integer():
            value = int(value)  # hjson reads 64.0 as 64
        note = None
        if node.default_of:
            note = f"the default in ${{{node.default_of}:-...}}: the environment may set another"
        return Value(value, node.span, node.origin, note)
    shape = "an object" if isinstance(node, JObject) else "an array"
    return Value(node.to_python(), node.span, "literal", f"{where} is {shape}")


def _enabled(root: JObject, names: tuple[str, ...]) -> Value:
    section, name = None, names[0]
    for candidate in names:  # get_bfloat16_config: "bf16", and "bfloat16" only when that is None
        node = root.get(candidate)
        if node is not None and not (isinstance(node, JScalar) and node.value is None):
            section, name = node, candidate
            break
    if section is None:
        return default(False, f"no {name} section: {name} is off")
    if not isinstance(section, JObject):
        return _fact(section, name)
    value = _fact(section.get("enabled"), f"{name}.enabled", False)
    if value.value == "auto":
        return Value(
            "auto", value.span, value.origin, f"{name}.enabled is {AUTO_NOTE} (DeepSpeed 0.17.1 on drops it: off)"
        )
    return value


def _zero_stage(root: JObject) -> Value:
    entry = root.entry("zero_optimization")
    if entry is None:
        return default(0, "no zero_optimization: ZeRO stage 0")
    zero = entry.value
    if isinstance(zero, JScalar) and isinstance(zero.value, bool):  # read_zero_config_deprecated
        return Value(
            int(zero.value),
            zero.span,
            zero.origin,
            f'the legacy form "zero_optimization": {str(zero.value).lower()} is stage {int(zero.value)}',
        )
    if isinstance(zero, JScalar) and zero.value is None:
        return unresolved("zero_optimization is null: DeepSpeed stops (argument after ** must be a mapping)", zero.span)
    if not isinstance(zero, JObject):
        return _fact(zero, "zero_optimization")
    stage = _fact(zero.get("stage"), "zero_optimization.stage", 0, whole_number=True)
    if stage.origin == "default":
        return Value(0, stage.span, "default", "zero_optimization.stage is not set: ZeRO stage 0")
    if isinstance(stage.value, bool):  # pydantic's lax int: true is 1
        return Value(
            int(stage.value), stage.span, stage.origin, f"{str(stage.value).lower()} reads as stage {int(stage.value)}"
        )
    if isinstance(stage.value, str) and stage.value.strip().isdigit():
        return Value(
            int(stage.value), stage.span, stage.origin, f'the string "{stage.value}", which DeepSpeed reads as a number'
        )
    if stage.value == "auto":
        return Value("auto", stage.span, stage.origin, f"zero_optimization.stage is {AUTO_NOTE} (it drops it: stage 0)")
    return stage


def _offload(root: JObject, key: str, legacy: str) -> Value:
    zero = root.get("zero_optimization")
    if not isinstance(zero, JObject):
        return default(None, f"no zero_optimization.{key}")
    entry = zero.entry(key)
    if entry is None or isinstance(entry.value, JScalar) and entry.value.value is None:
        old = zero.get(legacy)  # the deprecated boolean DeepSpeed still maps
        if isinstance(old, JScalar) and old.value is True:
            return Value("cpu", old.span, old.origin, f"the deprecated {legacy}: true is {key}.device cpu")
        return default(None, f"no zero_optimization.{key}")
    if not isinstance(entry.value, JObject):
        return _fact(entry.value, f"zero_optimization.{key}")
    device = _fact(entry.value.get("device"), f"zero_optimization.{key}.device", "none")
    if device.value == "auto":
        return Value(
            "auto", device.span, device.origin, f"zero_optimization.{key}.device is {AUTO_NOTE} (it drops it: none)"
        )
    return device


def read_deepspeed_config(text: MappedText, path: str) -> DeepSpeedConfig:
    doc = parse_json(text, path)
    root = doc.root if isinstance(doc.root, JObject) else JObject([], None)
    if doc.root is not None and not isinstance(doc.root, JObject) and not doc.problems:
        doc.problems.append(Problem("syntax", f"{path}: a DeepSpeed config must be a JSON object", doc.root.span))

    def top(key: str, absent: Any = None, whole_number: bool = False) -> Value:
        return _fact(root.get(key), key, absent, whole_number)

    clip = top("gradient_clipping")
    if root.entry("gradient_clipping") is None:
        clip = default(1.0, "gradient_clipping is not set: DeepSpeed 0.19.3 on clips at 1.0 (before: 0.0, no clipping)")
    elif clip.origin == "default":  # dict.get gives the null itself, not the default
        clip = unresolved("gradient_clipping is null: DeepSpeed keeps None, not a number to clip at", clip.span)
    stage = _zero_stage(root)
    overlap = _fact(root.find("zero_optimization", "overlap_comm"), "zero_optimization.overlap_comm")
    if overlap.origin == "default" and overlap.value is None:  # None resolves to `stage == 3`
        overlap = (
            default(stage.value == 3, "zero_optimization.overlap_comm is not set: on at ZeRO stage 3 only")
            if isinstance(stage.value, int)
            else unresolved(f"overlap_comm follows the ZeRO stage: {stage.note}", stage.span)
        )
    pipeline = root.get("pipeline")
    stages = _fact(pipeline.get("stages") if isinstance(pipeline, JObject) else None, "pipeline.stages", "auto")
    optimizer = root.get("optimizer")
    return DeepSpeedConfig(
        path,
        doc,
        train_batch_size=top(TRAIN_BATCH, whole_number=True),
        train_micro_batch_size_per_gpu=top(MICRO_BATCH, whole_number=True),
        gradient_accumulation_steps=top(GRAD_ACCUM, whole_number=True),
        zero_stage=stage,
        fp16_enabled=_enabled(root, ("fp16",)),
        bf16_enabled=_enabled(root, ("bf16", "bfloat16")),
        gradient_clipping=clip,
        offload_optimizer=_offload(root, "offload_optimizer", "cpu_offload"),
        offload_param=_offload(root, "offload_param", "cpu_offload_param"),
        sequence_parallel_size=top("sequence_parallel_size", whole_number=True),
        # deepspeed/runtime/tensor_parallel/config.py (0.19.8): TPTrainingConfig.autotp_size, 0 = AutoTP off
        autotp_size=_fact(root.find("tensor_parallel", "autotp_size"), "tensor_parallel.autotp_size", 0, True),
        pipeline_stages=stages,
        optimizer_type=_fact(optimizer.get("type") if isinstance(optimizer, JObject) else None, "optimizer.type"),
        overlap_comm=overlap,
    )


# ---- the batch triple -----------------------------------------------------------------------------
class _NeedsDp(Exception):
    """The next step needs the data-parallel size, which is unknown."""


class _OverBudget(Exception):
    """A product plint will not build: a list or string in the config repeated a huge number of times."""


def _times(a: Any, b: Any) -> Any:
    """a * b as DeepSpeed computes it, short of repeating a list or string past plint's value budget
    (`[1] * 2755933772` was a MemoryError the fuzzer found)."""

    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * abs(n) > MAX_VALUE_CHARS:
            raise _OverBudget(f"{type(seq).__name__} times {n}")
    return a * b


def _derive(t: Any, m: Any, g: Any, w: Any) -> tuple[Any, Any, Any]:
    """DeepSpeed's derivation of the missing members of (train, micro, accum) (None = absent) for
    data-parallel size w, with the same operations in the same order."""

    def times_dp(x: Any) -> Any:
        if w is None:
            raise _NeedsDp()
        return _times(x, w)

    def over_dp(x: Any) -> Any:
        if w is None:
            raise _NeedsDp()
        return x // w

    if t is not None and m is not None and g is not None:
        return t, m, g
    if t is not None and m is not None:
        return t, m, over_dp(t // m)
    if t is not None and g is not None:
        return t, over_dp(t) // g, g
    if m is not None and g is not None:
        return times_dp(_times(m, g)), m, g
    if t is not None:
        return t, over_dp(t), 1
    if m is not None:
        return times_dp(m), m, 1
    raise AssertionError("Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided")


def _check(t: Any, m: Any, g: Any, w: Any) -> None:
    """DeepSpeed's start-up assertions on the derived triple, in its order and words."""
    assert t > 0, f"Train batch size: {t} has to be greater than 0"
    assert m > 0, f"Micro batch size per gpu: {m} has to be greater than 0"
    assert g > 0, f"Gradient accumulation steps: {g} has to be greater than 0"
    if w is None:
        raise _NeedsDp()
    assert t == m * g * w, (
        "Check batch related parameters. train_batch_size is not equal to "
        f"micro_batch_per_gpu * gradient_acc_step * world_size {t} != {m} * {g} * {w}"
    )


_FORMULAS = {  # (what is given) -> {derived key: (formula on values, formula in words)}
    (True, True, False): {GRAD_ACCUM: ("{t} // {m} // {w}", "train_batch_size // micro // dp")},
    (True, False, True): {MICRO_BATCH: ("{t} // {w} // {g}", "train_batch_size // dp // grad_accum")},
    (False, True, True): {TRAIN_BATCH: ("{m} * {g} * {w}", "micro * grad_accum * dp")},
    (True, False, False): {
        MICRO_BATCH: ("{t} // {w}", "train_batch_size // dp"),
        GRAD_ACCUM: ("1", "DeepSpeed's default when only train_batch_size is given"),
    },
    (False, True, False): {
        TRAIN_BATCH: ("{m} * {w}", "micro * dp"),
        GRAD_ACCUM: ("1", "DeepSpeed's default when only the micro batch is given"),
    },
}


def _derived_values(
    given: dict[str, Value], formulas: dict, numbers: dict, dp: Value | None, anchor: Any
) -> dict[str, Value]:
    """The triple with each member DeepSpeed derives set to its number, the formula it came from in its note."""
    w = dp.value if dp is not None and dp.known else None
    values = {}
    for key, v in given.items():
        if key in formulas:
            on_values, in_words = formulas[key]
            shown = on_values.format(
                t=given[TRAIN_BATCH].value, m=given[MICRO_BATCH].value, g=given[GRAD_ACCUM].value, w=w
            )
            guessed = "{w}" in on_values and dp is not None and dp.origin == "assumed"  # from an assumed dp
            values[key] = Value(
                numbers[key],
                anchor,
                "assumed" if guessed else "derived",
                f"{key} = {shown} ({in_words}, as DeepSpeed derives it)" + (f"; dp {w} assumed" if guessed else ""),
            )
        else:
            values[key] = v
    return values


def derive_batch(cfg: DeepSpeedConfig, dp: Value | None) -> DerivedBatch:
    """The triple (micro, global, grad_accum) as DeepSpeed derives it for data-parallel size dp."""
    given = {
        TRAIN_BATCH: cfg.train_batch_size,
        MICRO_BATCH: cfg.train_micro_batch_size_per_gpu,
        GRAD_ACCUM: cfg.gradient_accumulation_steps,
    }
    present = {k: not (v.origin == "default" and v.value is None) for k, v in given.items()}
    anchor = next((v.span for v in given.values() if v.span is not None), None)
    if cfg.document.root is not None and anchor is None:
        anchor = cfg.document.root.span

    def result(values: dict[str, Value], problems: list[Problem] | None = None) -> DerivedBatch:
        for key, v in values.items():  # the batch is numbers: "64", "auto" or a list stay in the config's fields
            if v.known and (isinstance(v.value, bool) or not isinstance(v.value, (int, float))):
                values[key] = unresolved(f"{key} is {v.value!r} in {cfg.path}, not a number", v.span)
        return DerivedBatch(values[MICRO_BATCH], values[TRAIN_BATCH], values[GRAD_ACCUM], problems or [])

    def stop(message: str, span: Any = None) -> Problem:
        return Problem("deepspeed", f"{cfg.path}: DeepSpeed stops at start-up: {message}", span or anchor)

    if not present[TRAIN_BATCH] and not present[MICRO_BATCH]:
        why = "the config gives neither train_batch_size nor train_micro_batch_size_per_gpu: DeepSpeed stops"
        values = {k: v if present[k] else unresolved(why) for k, v in given.items()}
        return result(
            values,
            [stop("AssertionError: Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided")],
        )

    formulas = _FORMULAS.get((present[TRAIN_BATCH], present[MICRO_BATCH], present[GRAD_ACCUM]), {})
    autos = [k for k, v in given.items() if v.value == "auto"]
    if autos:
        values = {}
        for key, v in given.items():
            if key in autos:
                values[key] = unresolved(f"{key} is {AUTO_NOTE}", v.span)
            elif key in formulas:
                values[key] = unresolved(
                    f'{key} is derived from {", ".join(autos)}, which is "auto" '
                    "(an integration such as the HF Trainer fills it in)",
                    anchor,
                )
            else:
                values[key] = v
        return result(values)

    unknown = [k for k, v in given.items() if present[k] and not v.known]
    if unknown:
        why = "; ".join(dict.fromkeys(given[k].note or k for k in unknown))
        values = {
            k: unresolved(f"{k} = {formulas[k][1]} needs {', '.join(unknown)}: {why}", anchor) if k in formulas else v
            for k, v in given.items()
        }
        return result(values)

    w = dp.value if dp is not None and dp.known else None
    t, m, g = (given[k].value if present[k] else None for k in (TRAIN_BATCH, MICRO_BATCH, GRAD_ACCUM))
    try:
        t, m, g = _derive(t, m, g, w)
    except _NeedsDp:
        why = dp.note if dp is not None and dp.note else "it is unknown"
        # what DeepSpeed sets whatever dp is (gradient_accumulation_steps 1 beside one batch size) stands
        fixed = {k: formula for k, formula in formulas.items() if "{w}" not in formula[0]}
        settled = _derived_values(given, fixed, {k: int(formula[0]) for k, formula in fixed.items()}, dp, anchor)
        return result(
            {
                k: settled[k]
                if k in fixed
                else unresolved(f"{k} = {formulas[k][1]} needs the data-parallel size dp: {why}", anchor)
                if k in formulas
                else v
                for k, v in given.items()
            }
        )
    except _OverBudget as exc:
        why = f"not derived: a list or string in the batch would be repeated ({exc}), over plint's value budget"
        return result({k: unresolved(why, anchor) if k in formulas else v for k, v in given.items()})
    except (TypeError, ZeroDivisionError, AssertionError) as exc:  # DeepSpeed stops before deriving
        why = f"DeepSpeed stops before deriving it: {type(exc).__name__}: {exc}"
        return result(
            {k: unresolved(why, anchor) if k in formulas else v for k, v in given.items()},
            [stop(f"{type(exc).__name__}: {exc}")],
        )
    values = _derived_values(given, formulas, {TRAIN_BATCH: t, MICRO_BATCH: m, GRAD_ACCUM: g}, dp, anchor)
    problems = []
    try:
        _check(t, m, g, w)
    except _NeedsDp:
        pass  # the equality needs dp; the rest holds
    except (TypeError, AssertionError) as exc:
        problems.append(stop(f"{type(exc).__name__}: {exc}"))
    return result(values, problems)
