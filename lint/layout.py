"""The normalised layout (a contract: DESIGN.md "The normalised layout").

A Layout is a flat map from dotted field paths ("parallel.tp") to Values. `to_json()` nests it into
the documented JSON shape, adds the provenance map and the list of unresolved fields. Rules read
Values with `layout.get("parallel.tp")` and point at `value.span`.
"""

from __future__ import annotations

from plint.record import field, record
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from typing import Any, Mapping, Protocol, Sequence

    from plint.keytree import DeepSpeedSettings
    from plint.source import Piece, Span, Word

from plint.values import Value
from plint.bounds import clip, over_limit
from plint.source import Problem

# Field order of the JSON contract; every field appears (null when unknown).
# layout.architecture keys a launch may set beyond the shape -> the dests of the flags that set them
# (megatron/training/arguments.py: --rotary-base, --norm-epsilon, --attention-dropout, --hidden-dropout;
# Megatron-DeepSpeed: --rotary-position-embeddings-theta, dest rope_theta, and --layernorm-epsilon)
LAUNCH_SHAPE_DESTS = {
    "rotary_base": ("rotary_base", "rope_theta"),
    "norm_epsilon": ("layernorm_epsilon",),
    "attention_dropout": ("attention_dropout",),
    "hidden_dropout": ("hidden_dropout",),
}


def _number(text: str | None) -> int | float | None:
    """A flag's literal number as the trainer's parser reads it (int when integral), or None."""
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number


SECTIONS: dict[str, tuple[str, ...]] = {
    "cluster": ("nnodes", "gpus_per_node", "world_size", "gpu", "gpu_memory_gib", "nvlink_domain"),
    "parallel": (
        "tp",
        "pp",
        "vpp",
        "cp",
        "ep",
        "etp",
        "dp",
        "sequence_parallel",
        "distributed_optimizer",
        "zero_stage",
        "sharding",
        "dp_outer",
    ),
    "batch": ("micro", "global", "grad_accum", "num_microbatches"),
    "model": (
        "num_layers",
        "hidden_size",
        "ffn_hidden_size",
        "num_attention_heads",
        "num_query_groups",
        "seq_length",
        "vocab_size",
        "num_experts",
        "moe_topk",
        "params",
    ),
    "recompute": ("granularity", "method", "num_layers"),
}
TOP_LEVEL = ("launcher", "scheduler", "trainer", "entrypoint")
CONTRACT_FIELDS: tuple[str, ...] = (
    TOP_LEVEL
    + tuple(f"{s}.{f}" for s in ("cluster", "parallel", "batch", "model") for f in SECTIONS[s])
    + ("precision",)
    + tuple(f"recompute.{f}" for f in SECTIONS["recompute"])
)


# The layout's field paths: Layout.get/value/set and the rules' readers take one, so that a misspelt path is a
# type error (it read None, and a rule said nothing). tests/test_layout_paths.py keeps ContractPath equal to
# CONTRACT_FIELDS (SECTIONS) and every path a reader sets among FieldPath.
ContractPath = Literal[
    "launcher",
    "scheduler",
    "trainer",
    "entrypoint",
    "cluster.nnodes",
    "cluster.gpus_per_node",
    "cluster.world_size",
    "cluster.gpu",
    "cluster.gpu_memory_gib",
    "cluster.nvlink_domain",
    "parallel.tp",
    "parallel.pp",
    "parallel.vpp",
    "parallel.cp",
    "parallel.ep",
    "parallel.etp",
    "parallel.dp",
    "parallel.sequence_parallel",
    "parallel.distributed_optimizer",
    "parallel.zero_stage",
    "parallel.sharding",
    "parallel.dp_outer",
    "batch.micro",
    "batch.global",
    "batch.grad_accum",
    "batch.num_microbatches",
    "model.num_layers",
    "model.hidden_size",
    "model.ffn_hidden_size",
    "model.num_attention_heads",
    "model.num_query_groups",
    "model.seq_length",
    "model.vocab_size",
    "model.num_experts",
    "model.moe_topk",
    "model.params",
    "precision",
    "recompute.granularity",
    "recompute.method",
    "recompute.num_layers",
]
# Fields beyond the JSON contract's (they appear in its provenance map): the launcher's workers per node, the
# trainer facts plint.reading.normalise copies in (a Megatron launch's parallel.* and model.*), and the model
# catalog's shape keys (plint.reading.sources.model_shape: model.<key of plint.catalog.models.shape_from_config>)
ExtraPath = Literal[
    "cluster.workers_per_node",
    "parallel.pipeline_layout",
    "parallel.uneven_first",
    "parallel.uneven_last",
    "parallel.use_tp_pp_dp_mapping",
    "parallel.vpp_spellings",
    "model.add_bias_linear",
    "model.add_qkv_bias",
    "model.attention_dropout",
    "model.encoder_decoder",
    "model.group_query_attention",
    "model.hidden_dropout",
    "model.hybrid_layer_pattern",
    "model.kv_channels",
    "model.make_vocab_size_divisible_by",
    "model.max_position_embeddings",
    "model.moe_ffn_hidden_size",
    "model.moe_first_dense_layers",
    "model.moe_shared_expert_size",
    "model.mtp_num_layers",
    "model.multi_latent_attention",
    "model.name",
    "model.normalization",
    "model.position_embedding",
    "model.swiglu",
    "model.untie_embeddings",
]
FieldPath = Literal[ContractPath, ExtraPath]
# The trainer facts (LaunchExtras.facts) that rules and the cost model read by name beyond the FieldPaths
FactKey = Literal[
    "clamped_model_parallel",
    "clip_grad",
    "deepspeed.config_option",
    "deepspeed.pipeline_module",
    "defer_embedding_wgrad_compute",
    "delay_wgrad_compute",
    "ds_sequence_parallel_size",
    "finetune.bits",
    "finetune.lora",
    "finetune.lora_rank",
    "megatron_deepspeed.no_pipeline_parallel",
    "megatron_fsdp",
    "megatron_fsdp.strategy",
    "moe.token_dispatcher",
    "moe_a2a_overlap",
    "moe_shared_expert_overlap",
    "neox.config_files",
    "neox.deepy_runs_runner",
    "overlap_grad_reduce",
    "overlap_param_gather",
    "pipeline.account_for_embedding",
    "pipeline.account_for_loss",
    "sequence_parallel_flag",
    "torch_fsdp2",
    "tp_comm_overlap",
    "trainer.option_names",
    "trainer.validate_args",
]
# What a rule's reader takes (plint.rules.common.value): a field, else the trainer fact of that name
LayoutKey = Literal[FieldPath, FactKey]
# The field of each parallel axis, for code that holds the axis's name ("tp")
AXIS_PATHS: dict[str, FieldPath] = {
    "tp": "parallel.tp",
    "pp": "parallel.pp",
    "vpp": "parallel.vpp",
    "cp": "parallel.cp",
    "ep": "parallel.ep",
    "etp": "parallel.etp",
    "dp": "parallel.dp",
}


# ---- what the readers hand over, as rules and the cost model read it (the contract imports no stage: each
# reader's own record satisfies its protocol, which mypy checks where the reader fills LaunchExtras)
# (typing only: no code asks an object whether it is one, so the classes cost plint check nothing at start-up)
if TYPE_CHECKING:

    class FlagUseView(Protocol):
        """One option on the trainer's command line (plint.reading.sources.megatron_args.FlagUse)."""

        @property
        def option(self) -> str: ...  # as written, before any `=`

        @property
        def flag_word(self) -> Word: ...

        @property
        def values(self) -> Sequence[Word]: ...

        @property
        def spec(self) -> Any: ...  # plint.catalog.flags.FlagSpec; None: the release's parser has no such option

        @property
        def inline_value(self) -> bool: ...  # written `--x=v`

        @property
        def value(self) -> Word | None: ...

    class TrainerFlags(Protocol):
        """The trainer's command line, each use judged by the release's parser
        (plint.reading.sources.megatron_args.TrainerArgs)."""

        @property
        def uses(self) -> Sequence[FlagUseView]: ...

        def all(self, key: str) -> Sequence[FlagUseView]: ...  # every use of an option string or dest, in order

        def get(self, key: str) -> FlagUseView | None: ...  # the use that wins (the last)

        def text(self, key: str) -> str | None: ...  # the known text of the winning use's value

        def get_any(self, *keys: str) -> FlagUseView | None: ...  # the last use among several spellings

    class ShellVariable(Protocol):
        """A variable as the shell left it for a command (plint.reading.shell.model.Var)."""

        @property
        def value(self) -> tuple[Piece, ...]: ...

        @property
        def exported(self) -> bool: ...

        @property
        def span(self) -> Span | None: ...  # the assignment that gave the current value

    class ShellCommand(Protocol):
        """A command the script would run, after expansion (plint.reading.shell.model.Command)."""

        @property
        def words(self) -> Sequence[Word]: ...

        @property
        def site(self) -> Span: ...

        @property
        def env(self) -> Mapping[str, ShellVariable]: ...  # the environment it runs in

        @property
        def assignments(self) -> Mapping[str, ShellVariable]: ...  # its `NAME=v cmd` prefixes

        @property
        def parent(self) -> ShellCommand | None: ...  # the command whose string it was parsed from

    class LauncherCallView(Protocol):
        """One launcher on the way to the trainer (plint.reading.sources.launch_calls.LauncherCall)."""

        @property
        def launcher(self) -> str: ...

        @property
        def command(self) -> ShellCommand: ...

        @property
        def options(self) -> dict[str, list[Word]]: ...  # canonical option -> values (a flag: [])

        def option(self, *names: str) -> Word | None: ...  # the last value of the first option given

    class LaunchCalls(Protocol):
        """The chain of launchers that starts the trainer, outermost first
        (plint.reading.sources.launch_calls.LaunchChain)."""

        @property
        def calls(self) -> Sequence[LauncherCallView]: ...

        @property
        def launcher(self) -> str | None: ...  # the innermost process-spawning launcher

        @property
        def entrypoint(self) -> Word | None: ...

        @property
        def master_addr(self) -> Value | None: ...

        @property
        def command(self) -> ShellCommand | None: ...  # the command that starts the entrypoint

    class SlurmSettings(Protocol):
        """The Slurm job the launch runs in (plint.reading.sources.slurm.SlurmJob)."""

        @property
        def ntasks_per_node(self) -> Value | None: ...

        @property
        def gpus_per_node(self) -> Value | None: ...

        @property
        def options(self) -> dict[str, Value]: ...  # long name with `-` as `_` -> the last value as written

    class ParserInForce(Protocol):
        """The trainer's argument parser that judged the launch's flags (plint.catalog.in_force.CatalogInForce)."""

        @property
        def catalog(self) -> Any: ...  # plint.catalog.flags.FlagCatalog: the release's options

        @property
        def assumed(self) -> bool: ...  # no parser found and no release configured: the newest release assumed

        @property
        def label(self) -> str: ...  # how messages name it

        @property
        def note(self) -> str | None: ...  # a parser found but unreadable, and what was used instead

        @property
        def entry_read(self) -> bool: ...  # the entry script's own flags are in the catalog


@record
class LaunchExtras:
    """What a launch says beyond the layout's fields, handed from reading to rules, the cost model and the
    reports: one attribute per fact, so that a misspelt name is a type error (a dict key read None, and a
    rule said nothing). The objects the readers and the cost model build keep their own types (the contract
    imports no stage); the comment names each."""

    # the reader's (plint.reading.normalise.build_layout, build_config_layout; plint.reading.read)
    facts: dict[str, Value] = field(default_factory=dict)  # trainer flags and settings by layout-style key
    chain: LaunchCalls | None = None  # the launcher calls; None for a DeepSpeed config checked alone
    trainer_args: TrainerFlags | None = None  # a Megatron trainer's flags; None for other trainers
    ds_config: DeepSpeedSettings | None = None  # the DeepSpeed config the launch passes (its key tree), or None
    slurm: SlurmSettings | None = None  # None outside Slurm
    gpu_ambiguity: str | None = None  # a GPU name sold in two memory sizes: which plint took, and how to say
    config_alone: bool = False  # a DeepSpeed config checked on its own: no launch says who fills "auto"
    release: tuple[str, bool] | None = None  # the trainer release the flags were checked against, and if assumed
    catalog: ParserInForce | None = None  # the parser that judged the flags; None for other trainers
    problems: list[Problem] = field(default_factory=list)  # for plint.reading.read to report, then emptied
    # the cost model's (plint.cost.layout_estimate), once per layout
    estimate: tuple[Any, Any] | None = None  # (plint.cost.ModelInput | None, plint.cost.Estimate | None)
    host_memory: dict[str, Any] | None = None  # CPU memory per node for ZeRO offload, and the node's RAM
    estimate_unmodelled: list[str] = field(default_factory=list)  # features no estimate models: rules silent
    memory_unmodelled: list[str] = field(default_factory=list)  # what the memory model does not count
    time_unmodelled: list[str] = field(default_factory=list)  # what the step-time model does not count
    # what rules and fixers compute once per layout (plint.rules.keys_and_flags, plint.fixing.fixers)
    unknown_flags: tuple[Any, list[Any]] | None = None  # (the TrainerArgs, [(FlagUse, suggestion)])
    unknown_flags_by_option: tuple[Any, dict[str, list[Any]]] | None = None  # (unknown_flags, by option)
    # `plint check --dry-run` (plint.dryrun.groups.dry_run): the "dry_run" object of the JSON report
    dry_run: dict[str, Any] | None = None


@record
class Layout:
    fields: dict[str, Value] = field(default_factory=dict)
    # Facts beyond the contract that rules may use (trainer flags, DeepSpeed config, launcher calls).
    extras: LaunchExtras = field(default_factory=LaunchExtras)
    # Where the launch command stands (for diagnostics about the launch as a whole).
    site: Any = None
    conditions: tuple[str, ...] = ()

    def get(self, key: FieldPath) -> Value | None:
        return self.fields.get(key)

    def value(self, key: FieldPath) -> Any:
        return self._value(key)

    def _value(self, key: str) -> Any:
        """A field's value by any key: to_json walks SECTIONS, whose keys are ContractPaths (a test checks)."""
        v = self.fields.get(key)
        return None if v is None else v.value

    def set(self, key: FieldPath, value: Value | None) -> None:
        if value is None:
            return
        if value.value is not None:
            why = over_limit(key, value.value)
            if why is not None:  # a count no launch has: unresolved (PL002) and invalid (PL506), never used
                self.extras.problems.append(Problem("invalid-value", why, value.span))
                value = Value(None, value.span, "unresolved", why)
        self.fields[key] = value

    def unresolved(self) -> list[str]:
        out = []
        for key, v in self.fields.items():
            if v.origin in ("unresolved", "missing") and v.value is None:
                out.append(clip(f"{key}: {v.note or 'cannot be known statically'}"))
        return out

    def _launch_shape(self, args: Any) -> dict[str, Any]:
        """What the launch sets beyond the model's shape, when it sets it (so that `plint generate --layout`
        writes the same model): the flags' dests in Megatron-LM and Megatron-DeepSpeed (rope_theta)."""
        out: dict[str, Any] = {}
        for key, dests in LAUNCH_SHAPE_DESTS.items():
            text = next((t for t in (args.text(d) for d in dests) if t is not None), None) if args else None
            number = _number(text)
            if number is not None:
                out[key] = number
        if args is not None and args.get("use_rope_scaling") is not None:
            factor = _number(args.text("rope_scaling_factor"))  # absent: the flag's default applies
            out["rope_scaling"] = {"type": "llama3", **({"factor": factor} if factor is not None else {})}
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: self._value(k) for k in TOP_LEVEL}
        for section in ("cluster", "parallel", "batch", "model"):
            out[section] = {f: self._value(f"{section}.{f}") for f in SECTIONS[section]}
        out["precision"] = self.value("precision")
        out["recompute"] = {f: self._value(f"recompute.{f}") for f in SECTIONS["recompute"]}
        estimated = self.extras.estimate  # (input, Estimate) from plint.cost.layout_estimate
        out["estimate"] = estimated[1].to_json() if estimated and estimated[1] is not None else None
        if estimated and estimated[0] is not None:  # the switches layout.model does not carry (generate needs them)
            shape = estimated[0].shape()
            arch = {k: v for k, v in shape.items() if k not in SECTIONS["model"]}
            args = self.extras.trainer_args
            arch["tokenizer"] = args.text("--tokenizer-model") if args is not None else None
            arch.update(self._launch_shape(args))
            out["architecture"] = arch
        out["provenance"] = {k: v.provenance() for k, v in self.fields.items()}
        out["unresolved"] = self.unresolved()
        if self.conditions:
            out["conditions"] = list(self.conditions)
        return out
