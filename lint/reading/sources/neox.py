"""GPT-NeoX launches: `python ./deepy.py train.py -d configs 20B.yml local_setup.yml`.

deepy.py (EleutherAI/gpt-neox, deepy.py `main`) parses its own command line
(megatron/neox_arguments/arguments.py `NeoXArgs.consume_deepy_args`), loads the YAML config files it names
and hands DeepSpeed's runner (`deepspeed.launcher.runner.main`) the runner keys of the merged config
(`get_deepspeed_main_args`): the launch is a `deepspeed` launch of the user script, and every layout value
comes from the YAML files. What this module follows, each from that file:

- `consume_deepy_args`: argparse with allow_abbrev=False; positional `user_script`, then `conf_file`
  (nargs="+"); `--conf_dir/-d` is joined in front of every config path; a name without `.yml`/`.json` gets
  `.yml`; `--hostfile/-H` (and the wandb/eval/generation options) overwrite the config's keys.
- `from_ymls`: each file is `yaml.load(..., Loader=yaml.FullLoader)` (YAML: the JSON-looking files with
  `#` comments NeoX ships are YAML flow mappings); files are merged in order; a key is stored with `-`
  replaced by `_`; a key already loaded (compared as written with the keys stored so far) raises
  ValueError: "Conf file ... has the following duplicate keys with previously loaded file".
- `calculate_derived`: dp = GPUs / pipe_parallel_size / model_parallel_size (each at least 1); the batch
  triple by `calculate_batch_parameters` and `check_batch_parameters`; precision from `precision`,
  `fp16.enabled`, `bf16.enabled` (else fp32); the ZeRO stage from `zero_optimization.stage` (ZERO_DEFAULTS'
  stage 0 when there is no `zero_optimization`); `is_pipe_parallel = pipe_parallel_size >= 1`.
- defaults: megatron/neox_arguments/neox_args.py and deepspeed_args.py (the dataclass fields).
- the MLP size: megatron/model/transformer.py `ParallelMLP.__init__`, gated activations from
  megatron/model/activations.py `get_activation`.
- deepy.py itself: upstream's `main` runs `deepspeed.launcher.runner.main`, so one deepy.py starts every rank
  of the job; every upstream deepy.py imports `deepspeed.launcher.runner` (until 2022 as `from
  deepspeed.launcher.runner import main`). A fork's deepy.py that does not (ZhiYuanZeng/gpt-moe's calls
  train.main) is one rank itself. The deepy.py the launch runs is read when it is in the checked tree.

The reader returns facts (Values with the YAML file, line and column of the value: pyyaml's composed
nodes carry marks); it knows nothing of rules.
"""

from __future__ import annotations

import posixpath
import reprlib
from typing import TYPE_CHECKING, Any

from plint.reading.shell.model import Problem, Word
from plint.reading.sources.wrappers import base
from plint.record import field, record
from plint.source import SourceFile, Span, parse_python
from plint.values import Value, default, derived, unresolved

if TYPE_CHECKING:
    from collections.abc import Callable

    from plint.reading.loading import Unread
    from plint.reading.sources.launch_calls import LauncherCall

NEOX_PROGRAM = "deepy.py"

# consume_deepy_args's options: those taking one value, and --eval_tasks (nargs="+")
_VALUE_OPTIONS = {
    "--conf_dir": "conf_dir",
    "-d": "conf_dir",
    "--wandb_group": "wandb_group",
    "--wandb_run_name": "wandb_run_name",
    "--wandb_team": "wandb_team",
    "--iteration": "iteration",
    "--eval_results_prefix": "eval_results_prefix",
    "-H": "hostfile",
    "--hostfile": "hostfile",
    "-i": "sample_input_file",
    "--sample_input_file": "sample_input_file",
    "-o": "sample_output_file",
    "--sample_output_file": "sample_output_file",
    "--autotuning": "autotuning",
}
_MANY_OPTIONS = {"--eval_tasks": "eval_tasks"}
_SHOWN = reprlib.Repr()  # how a message quotes a config value (see _shown)
_SHOWN.maxlevel = 2

# NeoXArgsDeepspeedRunner keys that get_deepspeed_main_args passes to DeepSpeed's runner as options
_RUNNER_KEYS = ("hostfile", "include", "exclude", "num_nodes", "num_gpus", "master_port", "master_addr", "launcher")
# the runner's defaults there (deepspeed_args.py): a key at its default is not passed
_RUNNER_DEFAULTS: dict[str, Any] = {"num_nodes": -1, "master_port": 29500, "launcher": "pdsh"}

# the keys get_deepspeed_main_args turns into the runner's --force_multi (force_multi itself, or either
# deepspeed_slurm / deepspeed_mpi: "if self.deepspeed_slurm or self.deepspeed_mpi: configured_value = True")
_FORCE_MULTI_KEYS = ("force_multi", "deepspeed_slurm", "deepspeed_mpi")
# the module upstream deepy.py `main` hands its arguments to
_RUNNER_MODULE = "deepspeed.launcher.runner"
_DEEPY_MAX_CHARS = 256 * 1024  # a deepy.py is some 40 lines; a larger file is not parsed (bounded work)

# get_activation: the gated activations (their first linear layer is split in two halves)
_GATED = ("geglu", "reglu", "bilinear", "swiglu", "glu")


def is_neox(call: LauncherCall) -> bool:
    """Whether a python call runs GPT-NeoX's deepy.py (`python ./deepy.py`, `./deepy.py`)."""
    # `${NEOX_DIR}/deepy.py`: the file name is known though its folder is not
    return call.launcher == "python" and not call.is_module and base(call.program) == NEOX_PROGRAM


@record
class DeepyArgs:
    """deepy.py's command line as consume_deepy_args parses it."""

    user_script: Word | None = None
    conf_dir: Word | None = None
    conf_files: list[Word] = field(default_factory=list)
    overrides: dict[str, Word] = field(default_factory=dict)  # option dest -> its word (overwrite_values)
    problems: list[Problem] = field(default_factory=list)


def parse_deepy_args(words: list[Word]) -> DeepyArgs:
    """The words after deepy.py: options anywhere, the first positional the user script, the rest config files."""
    out = DeepyArgs()
    positionals: list[Word] = []
    i = 0
    while i < len(words):
        word = words[i]
        text = word.text
        if text is None or not text.startswith("-") or text == "-":
            positionals.append(word)
            i += 1
            continue
        name, eq, inline = text.partition("=")
        if not text.startswith("--") and len(text) > 2 and text[:2] in _VALUE_OPTIONS:  # `-dconfigs`, as argparse
            name, eq, inline = text[:2], "=", text[2:]
        if name in _VALUE_OPTIONS:
            dest = _VALUE_OPTIONS[name]
            if eq:
                value = Word.of(inline, word.value_span, word.origin)
                i += 1
            elif i + 1 < len(words):
                value = words[i + 1]
                i += 2
            else:
                out.problems.append(Problem("unresolved", f"deepy.py {name} has no value", word.site))
                break
            if dest == "conf_dir":
                out.conf_dir = value
            else:
                out.overrides[dest] = value
            continue
        if name in _MANY_OPTIONS:
            i += 1
            while i < len(words) and not (words[i].text or "").startswith("-"):
                i += 1
            continue
        # argparse exits on an option it does not know (allow_abbrev=False): deepy.py would not start
        out.problems.append(
            Problem(
                "unresolved",
                f"deepy.py does not know the option {text!r} (megatron/neox_arguments/arguments.py "
                "consume_deepy_args): argparse stops the launch",
                word.site,
            )
        )
        i += 1
    if positionals:
        out.user_script = positionals[0]
        out.conf_files = positionals[1:]
    return out


def config_names(args: DeepyArgs) -> list[tuple[Word, str | None]]:
    """Each config file word and the path deepy.py opens (None when a part of it is unknown)."""
    out: list[tuple[Word, str | None]] = []
    conf_dir = args.conf_dir
    for word in args.conf_files:
        text = word.text
        if text is None or (conf_dir is not None and conf_dir.text is None):
            out.append((word, None))
            continue
        path = posixpath.join(conf_dir.text, text) if conf_dir is not None and conf_dir.text else text
        if not (path.endswith(".yml") or path.endswith(".json")):  # `125M` stands for `125M.yml`
            path += ".yml"
        out.append((word, path))
    return out


# ---- the YAML files, with positions ----------------------------------------------------------------


@record
class Entry:
    """One key of a NeoX config: its value and where the value is written."""

    key: str  # as written
    value: Any
    span: Span | None
    path: str
    node: Any = None  # the composed yaml node (nested keys are looked up in it)
    source: SourceFile | None = None
    assumed: str | None = None  # why the file's values are a guess (found above the script), else None


def _span(source: SourceFile, node) -> Span:
    """The span of a composed yaml node. pyyaml's marks count characters; a SourceFile spans bytes."""
    text = source.text
    start = len(text[: node.start_mark.index].encode("utf-8", "surrogateescape"))
    end = start + len(text[node.start_mark.index : node.end_mark.index].encode("utf-8", "surrogateescape"))
    return source.span(start, end)


def _construct(node) -> tuple[Any, bool]:
    """A node's python value as yaml's loader builds it, and whether it could be built (a python tag that
    FullLoader builds and the safe loader refuses is left unknown)."""
    import yaml

    try:
        return yaml.SafeLoader("").construct_object(node, deep=True), True
    except (yaml.YAMLError, TypeError, ValueError, RecursionError):
        return None, False


def read_config_file(source: SourceFile) -> tuple[dict[str, Entry], Problem | None]:
    """The top-level keys of one config file, last one winning where a key repeats (as yaml.load builds a
    dict); a Problem (PL001) when NeoX could not load it (from_ymls: not YAML, or not a mapping)."""
    import yaml

    try:
        node = yaml.compose(source.text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        span = None
        if mark is not None:
            start = len(source.text[: mark.index].encode("utf-8", "surrogateescape"))
            span = source.span(start, start)
        return {}, Problem(
            "syntax", f"{source.path}: GPT-NeoX cannot load this config (YAML: {exc.problem or exc})", span
        )
    except (yaml.YAMLError, RecursionError) as exc:
        return {}, Problem("syntax", f"{source.path}: GPT-NeoX cannot load this config (YAML: {exc})", None)
    if not isinstance(node, yaml.MappingNode):
        span = _span(source, node) if node is not None else source.span(0, 0)
        return {}, Problem(
            "syntax",
            f"{source.path}: GPT-NeoX cannot load this config: it is not a mapping of keys to values "
            "(from_ymls iterates conf.items())",
            span,
        )
    entries: dict[str, Entry] = {}
    for key_node, value_node in node.value:
        key, ok = _construct(key_node)
        if not ok or not isinstance(key, str):
            continue
        value, ok = _construct(value_node)
        entry = Entry(key, value if ok else _UNBUILT, _span(source, value_node), source.path, value_node, source)
        entries.pop(key, None)  # a repeated key: yaml keeps the last value
        entries[key] = entry
    return entries, None


_UNBUILT = object()  # a value the safe loader cannot build


def nested(entry: Entry, key: str) -> Entry | None:
    """A key of a mapping value (`zero_optimization: {stage: 1}`), with its own position."""
    import yaml

    if not isinstance(entry.node, yaml.MappingNode) or entry.source is None:
        return None
    found = None
    for key_node, value_node in entry.node.value:
        name, ok = _construct(key_node)
        if ok and name == key:
            value, built = _construct(value_node)
            found = Entry(
                key, value if built else _UNBUILT, _span(entry.source, value_node), entry.path, value_node, entry.source
            )
            found.assumed = entry.assumed
    return found


@record
class NeoXConfig:
    """The merged config: key (with `_`) -> its entry, and what could not be read."""

    entries: dict[str, Entry] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # why a file's keys are unknown (then absent keys are too)
    files: list[str] = field(default_factory=list)  # the files read, in order
    unread_words: list[Word] = field(default_factory=list)  # the config words whose files were not read


def merge_configs(
    names: list[tuple[Word, str | None]],
    read_config: Callable[[str], tuple[SourceFile | None, str | None]],
    why_unread: Callable[[str], Unread | None],
) -> NeoXConfig:
    """The files merged as from_ymls merges them; a repeated key is its ValueError (PL001)."""
    merged = NeoXConfig()
    for word, name in names:
        if name is None:
            note = f"the GPT-NeoX config {word.display()} cannot be known statically: its keys are unknown"
            merged.unread.append(note)
            merged.unread_words.append(word)
            merged.problems.append(Problem("unresolved", note, word.site))
            continue
        source, assumed = read_config(name)
        if source is None:
            why = why_unread(name)  # a file that is there but not read is not said to be missing
            note = (
                why.say(f"the GPT-NeoX config {name}", "its keys are unknown")
                if why is not None
                else f"the GPT-NeoX config {name} is not in the repository (beside the script or in a folder "
                "above it): its keys are unknown (deepy.py stops with FileNotFoundError if nothing writes it first)"
            )
            merged.unread.append(note)
            merged.unread_words.append(word)
            merged.problems.append(Problem(why.kind if why is not None else "unresolved", note, word.site))
            continue
        entries, problem = read_config_file(source)
        if problem is not None:
            merged.unread.append(f"the GPT-NeoX config {name} cannot be loaded (PL001): its keys are unknown")
            merged.unread_words.append(word)
            merged.problems.append(problem)
            continue
        merged.files.append(source.path)
        for key, entry in entries.items():
            if key in merged.entries:  # compared as written: `train-iters` after `train_iters` replaces it
                merged.problems.append(
                    Problem(
                        "syntax",
                        f"{source.path}: the key {key!r} was already loaded from "
                        f'{merged.entries[key].path}: GPT-NeoX stops with "Conf file ... has the following '
                        'duplicate keys with previously loaded file" (arguments.py from_ymls)',
                        entry.span,
                    )
                )
            entry.assumed = assumed  # found where the script is assumed to run from: its values are assumed
            merged.entries[key.replace("-", "_")] = entry
    return merged


# ---- values ----------------------------------------------------------------------------------------


class _Values:
    """Typed reads of the merged config, each a Value pointing at where the file writes it."""

    def __init__(self, config: NeoXConfig):
        self.config = config

    def entry(self, key: str) -> Entry | None:
        return self.config.entries.get(key)

    def read(self, key: str, kind: type | tuple[type, ...], fallback: Any, why: str) -> Value:
        """The key's value, NeoX's default when absent from fully read files, unresolved otherwise."""
        entry = self.entry(key)
        if entry is not None:
            return self.of(entry, kind)
        return self.absent(key, fallback, why)

    def of(self, entry: Entry, kind: type | tuple[type, ...]) -> Value:
        value = entry.value
        origin = "assumed" if entry.assumed else "literal"
        note = f"{entry.path}: {entry.key}" + (f" ({entry.assumed})" if entry.assumed else "")
        if value is _UNBUILT:
            return unresolved(f"{note}: a value plint does not build (a python tag)", entry.span)
        # validate_types accepts an int where a float is declared, never a float where an int is (2.0 is refused)
        if value is not None and not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return unresolved(f"{note}: {_shown(value)} is not {_kind_name(kind)}", entry.span)
        return Value(value, entry.span, origin, note)

    def absent(self, key: str, fallback: Any, why: str) -> Value:
        if self.config.unread:  # one note for every key the unread file may set: said once (PL002)
            return unresolved(self.config.unread[0])
        return default(fallback, f"{key} not set: GPT-NeoX's default {fallback!r} ({why})")


def _shown(value: Any) -> str:
    """A config value as a message quotes it, bounded: yaml aliases can nest one list in another so that its
    full repr is exponentially long; reprlib elides past a few items and levels, and fewer levels than its default
    (6 levels of 6 items is 300 KB) keep it to a line."""
    return _SHOWN.repr(value)


def _kind_name(kind) -> str:
    names = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(
        {"int": "an integer", "bool": "true/false", "str": "a string", "dict": "a mapping"}.get(k.__name__, k.__name__)
        for k in names
    )


def _at_least_one(size: Value, name: str) -> Value:
    """calculate_derived: a size below 1 counts as 1 (pipe_parallel_size 0 runs without a pipeline)."""
    if size.known and isinstance(size.value, int) and size.value < 1:
        return derived(1, f"{name} {size.value}: counted as 1 (arguments.py calculate_derived)", size.span)
    return size


def neox_facts(config: NeoXConfig, read_file=None, why_unread=None) -> dict[str, Value]:
    """What the merged config says, as layout field paths and trainer facts; `read_file` reads a tokenizer
    file the config names (where the script is run from, inside the checked tree), `why_unread` says why one
    that is there is not read."""
    v = _Values(config)
    out: dict[str, Value] = {}
    tp = _at_least_one(v.read("model_parallel_size", int, 1, "neox_args.py NeoXArgsParallelism"), "model_parallel_size")
    pipe = v.read("pipe_parallel_size", int, 0, "neox_args.py NeoXArgsParallelism")
    out["parallel.tp"] = tp
    out["parallel.pp"] = _at_least_one(pipe, "pipe_parallel_size")
    if pipe.known and isinstance(pipe.value, int):
        # is_pipe_parallel = pipe_parallel_size >= 1: the model stays a DeepSpeed PipelineModule (training.py
        # get_model: to_sequential() only without it), which DeepSpeed refuses beside ZeRO-2/3
        out["megatron_deepspeed.no_pipeline_parallel"] = Value(
            pipe.value < 1,
            pipe.span,
            pipe.origin,
            f"pipe_parallel_size {pipe.value}: "
            + (
                "the model runs without PipelineModule" if pipe.value < 1 else "the model is a DeepSpeed PipelineModule"
            ),
        )
    out["parallel.cp"] = default(1, "GPT-NeoX has no context parallelism")
    out["parallel.sequence_parallel"] = v.read("sequence_parallel", bool, False, "neox_args.py")
    out["parallel.distributed_optimizer"] = default(False, "GPT-NeoX shards optimizer states with ZeRO only")
    out["parallel.zero_stage"] = _zero_stage(v)
    _batch(v, out)
    out["precision"] = _precision(v)
    _recompute(v, out)
    _shape(v, out)
    _vocab(v, out, read_file or (lambda name: (None, None)), why_unread or (lambda name: None))
    return out


def _zero_stage(v: _Values) -> Value:
    zero = v.entry("zero_optimization")
    if zero is None:
        return v.absent("zero_optimization", 0, "ZERO_DEFAULTS stage 0 in arguments.py")
    stage = nested(zero, "stage")
    if stage is None:
        return unresolved(
            f"{zero.path}: zero_optimization has no 'stage': NeoX stops with a KeyError (calculate_derived)",
            zero.span,
        )
    return v.of(stage, int)


def _batch(v: _Values, out: dict[str, Value]) -> None:
    """The batch keys as written; normalise derives the rest once dp is known (calculate_batch_parameters)."""
    for key, path in (("train_micro_batch_size_per_gpu", "batch.micro"), ("train_batch_size", "batch.global")):
        entry = v.entry(key)
        if entry is not None:
            out[path] = v.of(entry, int)
        elif v.config.unread:
            out[path] = v.absent(key, None, "")
    out["batch.grad_accum"] = v.read("gradient_accumulation_steps", int, 1, "deepspeed_args.py")


def _precision(v: _Values) -> Value:
    """calculate_derived: fp16.enabled, then bf16.enabled, then `precision`, else fp32."""
    written = v.entry("precision")
    for key, name in (("fp16", "fp16"), ("bf16", "bf16")):
        entry = v.entry(key)
        enabled = nested(entry, "enabled") if entry is not None else None
        if enabled is not None and enabled.value is True:
            if written is not None and written.value not in (name, "bfloat16" if name == "bf16" else name):
                return unresolved(
                    f"{enabled.path}: {key}.enabled with precision {_shown(written.value)}: NeoX stops "
                    f'("DeepSpeed {key} field was set but precision conflicts")',
                    enabled.span,
                )
            origin = "assumed" if enabled.assumed else "literal"  # found above the script: a guess
            return Value(name, enabled.span, origin, f"{enabled.path}: {key}.enabled")
    if written is not None:
        value = v.of(written, str)
        if value.known:
            accepted = {"bfloat16": "bf16", "fp16": "fp16", "fp32": "fp32"}.get(str(value.value).lower())
            if accepted is None:
                return unresolved(f"{written.path}: precision {value.value!r} is not one NeoX accepts", written.span)
            return Value(accepted, value.span, value.origin, value.note)
        return value
    return v.absent("precision", "fp32", "no fp16/bf16 section enabled: calculate_derived sets fp32")


def _recompute(v: _Values, out: dict[str, Value]) -> None:
    """checkpoint_activations: every chunk of checkpoint_num_layers layers is recomputed (Megatron's full,
    uniform recompute)."""
    on = v.read("checkpoint_activations", bool, False, "neox_args.py NeoXArgsTraining")
    if on.known and on.value is True:
        out["recompute.granularity"] = Value("full", on.span, on.origin, on.note)
        out["recompute.method"] = Value("uniform", on.span, "derived", "checkpoint_activations: chunks of layers")
        out["recompute.num_layers"] = v.read("checkpoint_num_layers", int, 1, "neox_args.py NeoXArgsTraining")
    elif on.known:
        out["recompute.granularity"] = Value(None, on.span, on.origin, "checkpoint_activations off: no recompute")
    else:
        out["recompute.granularity"] = on


def _shape(v: _Values, out: dict[str, Value]) -> None:
    for key, path in (
        ("num_layers", "model.num_layers"),
        ("hidden_size", "model.hidden_size"),
        ("num_attention_heads", "model.num_attention_heads"),
        ("seq_length", "model.seq_length"),
        ("max_position_embeddings", "model.max_position_embeddings"),
    ):
        out[path] = v.read(key, int, None, "required: validate_values stops without it")
    heads = out["model.num_attention_heads"]
    kv = v.entry("num_kv_heads")
    if kv is not None and kv.value is not None:
        groups = v.of(kv, int)
        out["model.num_query_groups"] = groups
        if groups.known and heads.known and groups.value < heads.value:
            out["model.group_query_attention"] = Value(True, groups.span, groups.origin, groups.note)
    elif heads.known:
        out["model.num_query_groups"] = derived(heads.value, "no num_kv_heads: every head is its own group", heads.span)
    out["model.make_vocab_size_divisible_by"] = v.read("make_vocab_size_divisible_by", int, 128, "neox_args.py")
    experts = v.read("moe_num_experts", int, 1, "neox_args.py NeoXArgsMoE")
    if experts.known and isinstance(experts.value, int) and experts.value > 1:
        out["model.num_experts"] = experts
        out["model.moe_topk"] = v.read("moe_top_k", int, 1, "neox_args.py NeoXArgsMoE")
    elif experts.known:
        out["model.num_experts"] = derived(None, "moe_num_experts 1: a dense model", experts.span)
        out["parallel.ep"] = default(1, "a dense model: no expert parallelism")
    untied = v.entry("no_weight_tying")
    if untied is not None:
        out["model.untie_embeddings"] = v.of(untied, bool)
    _ffn(v, out)


def _vocab(v: _Values, out: dict[str, Value], read_config, why_unread) -> None:
    """The padded vocabulary train.py builds: tokenizer.py build_tokenizer sets padded_vocab_size to the
    tokenizer's vocab_size padded to a multiple of make_vocab_size_divisible_by * model_parallel_size
    (_vocab_size_with_padding), whatever the config says (train.py calls build_tokenizer before the model).
    The tokenizer's size is read where the tree holds its file: CharLevelTokenizer has 512 (build_tokenizer),
    GPT2BPETokenizer the entries of its vocab JSON (len(encoder)), HFTokenizer its tokenizer.json
    (Tokenizer.get_vocab_size(), added tokens included); any other is left unknown."""
    kind = v.read("tokenizer_type", str, "GPT2BPETokenizer", "neox_args.py NeoXArgsTokenizer")
    divisible = out["model.make_vocab_size_divisible_by"]
    tp = out["parallel.tp"]
    if not kind.known:
        out["model.vocab_size"] = kind
        return
    if not tp.known:
        out["model.vocab_size"] = unresolved(str(tp.note), tp.span)
        return
    if not divisible.known:
        out["model.vocab_size"] = unresolved(
            "needs tokenizer_type, make_vocab_size_divisible_by and model_parallel_size"
        )
        return
    name = str(kind.value).lower()
    size, where, how = None, kind, f"tokenizer_type {kind.value}"
    if name == "charleveltokenizer":
        size = 512
    elif name in ("gpt2bpetokenizer", "hftokenizer"):
        vocab_file = v.entry("vocab_file")
        if vocab_file is None or not isinstance(vocab_file.value, str):
            out["model.vocab_size"] = unresolved(f"{kind.value} without a vocab_file: build_tokenizer stops", kind.span)
            return
        source, _ = read_config(vocab_file.value)
        size = _tokenizer_size(source, name == "hftokenizer") if source is not None else None
        where, how = v.of(vocab_file, str), f"{vocab_file.value} ({kind.value})"
        if size is None:
            why = why_unread(vocab_file.value) if source is None else None  # there, but not read: say why
            out["model.vocab_size"] = unresolved(
                f"the tokenizer's vocabulary: {vocab_file.value} is "
                + (
                    "not a tokenizer file plint reads"
                    if source is not None
                    else f"not read ({why.why})"
                    if why is not None
                    else "not read (not in the checked tree)"
                ),
                vocab_file.span,
            )
            return
    else:
        out["model.vocab_size"] = unresolved(f"{kind.value}: plint does not read its vocabulary", kind.span)
        return
    multiple = int(divisible.value) * max(1, int(tp.value))
    padded = _round_up(size, multiple)
    note = f"{how}: {size} tokens, padded to a multiple of {multiple} (tokenizer.py _vocab_size_with_padding)"
    out["model.vocab_size"] = Value(padded, where.span, "assumed" if where.origin == "assumed" else "derived", note)


def _tokenizer_size(source: SourceFile, hf: bool) -> int | None:
    """Entries of a GPT-2 vocab JSON (a token -> id object), or of a tokenizers JSON (its model's vocab plus the
    added tokens it does not hold); None for anything else."""
    import json

    try:
        data = json.loads(source.text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    if not hf:
        return len(data) if data and all(isinstance(i, int) for i in data.values()) else None
    model = data.get("model")
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocab, dict):
        tokens = set(vocab)
    elif isinstance(vocab, list):  # Unigram: [token, score] pairs
        tokens = {t[0] for t in vocab if isinstance(t, list) and t}
    else:
        return None
    added = data.get("added_tokens") or []
    extra = {t.get("content") for t in added if isinstance(t, dict)} - tokens
    return len(tokens) + len(extra)


def _round_up(n: int, multiple: int) -> int:
    return multiple * ((n + multiple - 1) // multiple)


def _ffn(v: _Values, out: dict[str, Value]) -> None:
    """ParallelMLP's sizes: intermediate_size, else expansion_factor * hidden, else 4 * hidden; a gated
    activation takes 2/3 of it split in two halves; the input of the second linear layer (Megatron's
    ffn_hidden_size) rounded up to mlp_multiple_of."""
    hidden = out["model.hidden_size"]
    activation = v.read("activation", str, "gelu", "neox_args.py NeoXArgsModel")
    mlp_type = v.entry("mlp_type")
    if mlp_type is not None:
        out["model.ffn_hidden_size"] = unresolved(
            "mlp_type is a key of older GPT-NeoX releases, whose MLP sizes differ from ParallelMLP's", mlp_type.span
        )
        return
    size = v.entry("intermediate_size")
    factor = v.entry("expansion_factor")
    multiple = v.read("mlp_multiple_of", int, 1, "neox_args.py NeoXArgsModel")
    if not hidden.known or not activation.known:  # the reason they are unknown (an unread config), said once
        out["model.ffn_hidden_size"] = unresolved(str((hidden if not hidden.known else activation).note))
        return
    if not multiple.known or not isinstance(hidden.value, int):
        out["model.ffn_hidden_size"] = unresolved("needs model.hidden_size, activation and mlp_multiple_of")
        return
    where: Value
    if size is not None and size.value is not None:
        where = v.of(size, int)
        if not where.known:
            out["model.ffn_hidden_size"] = where
            return
        ffn = int(where.value)
        how = f"intermediate_size {ffn}"
    elif factor is not None and factor.value is not None:
        where = v.of(factor, (int, float))
        if not where.known:
            out["model.ffn_hidden_size"] = where
            return
        ffn = int(where.value * hidden.value)
        how = f"expansion_factor {where.value} * hidden {hidden.value}"
    else:
        where, ffn, how = hidden, 4 * hidden.value, f"4 * hidden {hidden.value} (no intermediate_size)"
    gated = str(activation.value).lower() in _GATED
    ffn_in = int(ffn * 2 / 3) // 2 if gated else ffn
    m = max(1, int(multiple.value))
    size_in = _round_up(ffn_in, m)
    note = (
        f"{how}"
        + (f", {activation.value} gated: 2/3 of it in two halves" if gated else "")
        + (f", rounded up to a multiple of {m}" if m > 1 else "")
        + " (transformer.py ParallelMLP)"
    )
    out["model.ffn_hidden_size"] = derived(size_in, note, where.span)
    gating = f"activation {activation.value}" + (": gated" if gated else "")
    out["model.swiglu"] = derived(gated, gating, activation.span)


# ---- the launch ------------------------------------------------------------------------------------


def runner_words(config: NeoXConfig, args: DeepyArgs) -> dict[str, list[Word]]:
    """The options get_deepspeed_main_args passes to DeepSpeed's runner (a key at its default is not), as
    words pointing into the YAML, so the deepspeed launcher's reader computes the resources."""
    options: dict[str, list[Word]] = {}
    for key in _RUNNER_KEYS:
        entry = config.entries.get(key)
        word = args.overrides.get(key)
        if word is not None:
            options["--" + key] = [word]
            continue
        if entry is None or entry.value is None or entry.value is _UNBUILT:
            continue
        if key in _RUNNER_DEFAULTS and entry.value == _RUNNER_DEFAULTS[key]:
            continue
        options["--" + key] = [Word.of(str(entry.value), entry.span, "literal")]
    if "--force_multi" not in options and any(
        (entry := config.entries.get(key)) is not None and entry.value is True for key in _FORCE_MULTI_KEYS
    ):
        options["--force_multi"] = []  # a flag: convert_key_value_to_command_line_arg writes True as `--force_multi`
    return options


def imports_runner(source: SourceFile) -> bool | None:
    """Whether a deepy.py imports DeepSpeed's runner (`import deepspeed.launcher.runner`, `from
    deepspeed.launcher.runner import main`, `from deepspeed.launcher import runner`); None when it cannot be
    parsed."""
    import ast

    if len(source.text) > _DEEPY_MAX_CHARS:
        return None
    try:
        tree = parse_python(source.text, source.path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(alias.name == _RUNNER_MODULE for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module == _RUNNER_MODULE:
                return True
            if node.module == "deepspeed.launcher" and any(alias.name == "runner" for alias in node.names):
                return True
    return False


def deepy_runs_runner(call: LauncherCall, read_config: Callable[[str], tuple[SourceFile | None, str | None]]) -> Value:
    """Whether the deepy.py this call runs starts DeepSpeed's runner (so the whole job) or is one rank itself,
    from the file when plint can read it, else upstream's deepy.py assumed."""
    program = call.program
    span = program.value_span if program is not None else None
    source = read_config(program.text)[0] if program is not None and program.known and program.text else None
    runs = imports_runner(source) if source is not None else None
    if source is None or runs is None:
        why = "is not in the checked tree" if source is None else "cannot be parsed"
        return Value(
            True,
            span,
            "assumed",
            f"the deepy.py run {why}: GPT-NeoX's own is assumed, which starts every rank through DeepSpeed's "
            "runner (deepy.py main: deepspeed.launcher.runner.main)",
        )
    if runs:
        return derived(
            True, f"{source.path} imports {_RUNNER_MODULE}: deepy.py starts every rank through DeepSpeed's runner", span
        )
    return derived(
        False,
        f"{source.path} imports no {_RUNNER_MODULE}: a fork whose deepy.py runs the trainer itself, one rank per process",
        span,
    )


def neox_runner_call(call: LauncherCall, config: NeoXConfig, args: DeepyArgs) -> LauncherCall:
    """The DeepSpeed runner deepy.py runs (deepy.py main: deepspeed.launcher.runner.main), with the options
    the merged config gives it, starting the user script."""
    from plint.reading.sources.launch_calls import LauncherCall as Call

    script_index = -1
    if args.user_script is not None:
        script_index = next((i for i, w in enumerate(call.command.words) if w is args.user_script), -1)
    options = runner_words(config, args)
    dlts = call.command.assignments.get("DLTS_HOSTFILE") or call.command.env.get("DLTS_HOSTFILE")
    exported = dlts is not None and (dlts.exported or "DLTS_HOSTFILE" in call.command.assignments)
    if dlts is not None and exported and "hostfile" not in args.overrides:
        # arguments.py get_deepspeed_main_args appends --hostfile $DLTS_HOSTFILE after the config's runner keys:
        # the runner's argparse keeps the last, so the environment's hostfile wins over the config's
        options["--hostfile"] = [Word(dlts.value, dlts.span)]
    runner = Call("deepspeed", call.command, options)
    runner.program = args.user_script
    runner.program_index = script_index
    runner.wrapped_by = call.wrapped_by
    runner.opaque = list(config.unread_words)  # a config plint cannot read may set the runner's keys too
    hostfile = runner.option("--hostfile")
    if hostfile is not None:
        given = (
            "deepy.py --hostfile"
            if "hostfile" in args.overrides
            else "$DLTS_HOSTFILE"
            if dlts is not None and exported
            else "the NeoX config's hostfile"
        )
        runner.hostfile = Value(hostfile.text, hostfile.value_span, "literal", given)
    addr = runner.option("--master_addr")
    if addr is not None:
        runner.master_addr = Value(addr.text, addr.value_span, "literal", "the NeoX config's master_addr")
    return runner


@record
class NeoXLaunch:
    runner: Any  # the LauncherCall of DeepSpeed's runner that deepy.py runs
    facts: dict[str, Value]
    problems: list[Problem]


def read_neox(
    call: LauncherCall,
    read_config: Callable[[str], tuple[SourceFile | None, str | None]],
    why_unread: Callable[[str], Unread | None],
) -> NeoXLaunch:
    """A deepy.py command: its arguments, its config files merged, the runner it starts and the facts."""
    words = call.command.words[call.program_index + 1 :] if call.program_index >= 0 else []
    args = parse_deepy_args(words)
    problems = list(args.problems)
    if args.user_script is None or not args.conf_files:
        problems.append(
            Problem(
                "unresolved",
                "deepy.py needs a user script and at least one config file (consume_deepy_args): argparse "
                "stops the launch",
                call.program.site if call.program is not None else None,
            )
        )
    config = merge_configs(config_names(args), read_config, why_unread)
    problems.extend(config.problems)
    facts = neox_facts(config, read_config, why_unread)
    facts["neox.config_files"] = derived(
        ", ".join(config.files), "the GPT-NeoX config files deepy.py merges, in order", None
    )
    facts["neox.deepy_runs_runner"] = deepy_runs_runner(call, read_config)
    return NeoXLaunch(neox_runner_call(call, config, args), facts, problems)
