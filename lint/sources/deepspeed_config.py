"""The facts of a DeepSpeed config as DeepSpeed 0.19 reads them (shared/reference/deepspeed.md §1-§2).

Top-level keys are read with dict.get, so a misspelt section is silently ignored; the batch triple is
derived as `DeepSpeedConfig._set_batch_related_parameters` does (floor division, then the equality
check); `"auto"` stays the string "auto" (an integration such as the HF Trainer fills it in).
"""

from __future__ import annotations

from plint.record import field, record

from plint.shell.model import MappedText, Problem
from plint.sources.jsonpos import JNode, JObject, JScalar, JsonDocument, JUnknown, parse_json
from plint.values import Value, default, unresolved


@record
class DeepSpeedConfig:
    path: str
    document: JsonDocument
    train_batch_size: Value
    train_micro_batch_size_per_gpu: Value
    gradient_accumulation_steps: Value
    zero_stage: Value
    fp16_enabled: Value
    bf16_enabled: Value
    gradient_clipping: Value
    offload_optimizer: Value
    offload_param: Value
    sequence_parallel_size: Value | None = None


@record
class DerivedBatch:
    micro: Value
    global_: Value
    grad_accum: Value
    problems: list[Problem] = field(default_factory=list)


def _value(node: JNode | None, what: str) -> Value | None:
    if node is None:
        return None
    if isinstance(node, JUnknown):
        return Value(None, node.span, "unresolved", f"{what}: {node.piece.reason or 'unknown'}")
    if isinstance(node, JScalar):
        return Value(node.value, node.span, node.piece_origin if hasattr(node, "piece_origin") else "literal")
    return Value(None, node.span, "derived", f"{what} is not a scalar")


def _section(root: JObject, *names: str) -> JObject | None:
    for n in names:
        node = root.get(n)
        if isinstance(node, JObject):
            return node
    return None


def _enabled(section: JObject | None, what: str) -> Value:
    if section is None:
        return default(False, f"no {what} section")
    v = _value(section.get("enabled"), f"{what}.enabled")
    return v if v is not None else default(False, f"{what}.enabled absent")


def _offload(zero: JObject | None, key: str) -> Value:
    if zero is None or not isinstance(zero.get(key), JObject):
        return default(None, f"no zero_optimization.{key}")
    v = _value(zero.get(key).get("device"), f"zero_optimization.{key}.device")  # type: ignore[union-attr]
    return v if v is not None else default("none")


def read_deepspeed_config(text: MappedText, path: str) -> DeepSpeedConfig:
    doc = parse_json(text, path)
    root = doc.root if isinstance(doc.root, JObject) else JObject([], None)
    if doc.root is not None and not isinstance(doc.root, JObject):
        doc.problems.append(Problem("syntax", f"{path}: a DeepSpeed config must be a JSON object", doc.root.span))

    def top(key: str) -> Value:
        v = _value(root.get(key), key)
        return v if v is not None else default(None, f"{key} absent")

    zero = _section(root, "zero_optimization")
    stage = _value(zero.get("stage"), "zero_optimization.stage") if zero is not None else None
    if stage is not None and stage.known and isinstance(stage.value, float) and stage.value.is_integer():
        stage = Value(int(stage.value), stage.span, stage.origin)
    clip = top("gradient_clipping")
    if clip.origin == "default":
        clip = default(1.0, "gradient_clipping absent: 1.0 since DeepSpeed 0.19.3 (0.0 before)")
    sp = _value(root.get("sequence_parallel_size"), "sequence_parallel_size")
    return DeepSpeedConfig(
        path, doc, top("train_batch_size"), top("train_micro_batch_size_per_gpu"),
        top("gradient_accumulation_steps"),
        stage if stage is not None else default(0, "zero_optimization.stage absent: ZeRO stage 0"),
        _enabled(_section(root, "fp16"), "fp16"), _enabled(_section(root, "bf16", "bfloat16"), "bf16"),
        clip, _offload(zero, "offload_optimizer"), _offload(zero, "offload_param"), sp,
    )


def _int(v: Value) -> int | None:
    if not v.known or isinstance(v.value, bool):
        return None
    if isinstance(v.value, float) and v.value.is_integer():
        return int(v.value)
    return v.value if isinstance(v.value, int) else None


def derive_batch(cfg: DeepSpeedConfig, dp: Value | None) -> DerivedBatch:
    """The triple (micro, global, grad_accum) as DeepSpeed derives it for data-parallel size dp."""
    tbs, mbs, gas = cfg.train_batch_size, cfg.train_micro_batch_size_per_gpu, cfg.gradient_accumulation_steps
    given = {k: v for k, v in (("train_batch_size", tbs), ("train_micro_batch_size_per_gpu", mbs),
                               ("gradient_accumulation_steps", gas)) if v.origin != "default"}
    autos = [k for k, v in given.items() if v.value == "auto"]
    unknown = [k for k, v in given.items() if not v.known]
    if autos or unknown:
        why = (f"{', '.join(autos)} is \"auto\": filled in by an integration (HF Trainer, Accelerate)"
               if autos else "; ".join(given[k].note or k for k in unknown))
        keep = {k: v for k, v in given.items() if k not in autos and k not in unknown}
        return DerivedBatch(keep.get("train_micro_batch_size_per_gpu", unresolved(why, mbs.span)),
                            keep.get("train_batch_size", unresolved(why, tbs.span)),
                            keep.get("gradient_accumulation_steps", unresolved(why, gas.span)))
    if dp is None or not dp.known:
        why = f"needs the data-parallel size ({dp.note if dp is not None else 'unknown'})"
        return DerivedBatch(mbs if "train_micro_batch_size_per_gpu" in given else unresolved(why),
                            tbs if "train_batch_size" in given else unresolved(why),
                            gas if "gradient_accumulation_steps" in given else unresolved(why))
    w = int(dp.value)
    t, m, g = _int(tbs), _int(mbs), _int(gas)
    problems: list[Problem] = []
    note = "{} = {} (as DeepSpeed derives it, dp {})"
    if t is not None and m is not None and g is not None:
        out = DerivedBatch(mbs, tbs, gas)
    elif t is not None and m is not None:
        g = t // m // w if m and w else 0
        out = DerivedBatch(mbs, tbs, Value(g, tbs.span, "derived", note.format("gradient_accumulation_steps",
                                                                                f"{t} // {m} // {w}", w)))
    elif t is not None and g is not None:
        m = t // w // g if w and g else 0
        out = DerivedBatch(Value(m, tbs.span, "derived", note.format("train_micro_batch_size_per_gpu",
                                                                     f"{t} // {w} // {g}", w)), tbs, gas)
    elif m is not None and g is not None:
        t = m * g * w
        out = DerivedBatch(mbs, Value(t, mbs.span, "derived", note.format("train_batch_size", f"{m} * {g} * {w}", w)),
                           gas)
    elif t is not None:
        g, m = 1, t // w if w else 0
        out = DerivedBatch(Value(m, tbs.span, "derived", note.format("train_micro_batch_size_per_gpu",
                                                                     f"{t} // {w}", w)), tbs,
                           Value(1, tbs.span, "derived", "gradient_accumulation_steps defaults to 1"))
    elif m is not None:
        g, t = 1, m * w
        out = DerivedBatch(mbs, Value(t, mbs.span, "derived", note.format("train_batch_size", f"{m} * {w}", w)),
                           Value(1, mbs.span, "derived", "gradient_accumulation_steps defaults to 1"))
    else:
        problems.append(Problem("unresolved", "Either train_batch_size or train_micro_batch_size_per_gpu needs "
                                              "to be provided", None))
        why = "the config gives neither train_batch_size nor train_micro_batch_size_per_gpu"
        return DerivedBatch(unresolved(why), unresolved(why), gas if g is not None else unresolved(why), problems)
    out.problems = problems
    return out
