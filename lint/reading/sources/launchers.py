"""What launcher commands mean: torchrun, the legacy torch.distributed.launch, the deepspeed launcher, srun,
mpirun/mpiexec and `accelerate launch`, the wrappers in front of them (their grammars in
`plint.reading.sources.wrappers`), and chains of them (`srun ... torchrun ...`, `srun ... bash -c "python ..."`).

Option grammars come from the launchers' own parsers:
- torchrun: torch 2.13 `torch/distributed/run.py::get_args_parser` (argparse; every dashed multi-word option
  also has an underscore spelling; options with `action=env` default to `PET_<DEST>` from the environment,
  `torch/distributed/argparse_util.py`); `torch/distributed/launch.py::parse_args` adds `--use-env`;
- deepspeed: DeepSpeed 0.19.8 `deepspeed/launcher/runner.py::parse_args` (argparse; options end at the user
  script, everything after it belongs to the script), resources in `plint.reading.sources.hostfile`;
- srun: Slurm's option table, in `plint.reading.sources.slurm` (getopt_long, stops at the program);
- mpirun: Open MPI 4.1 `orte/mca/schizo/ompi/schizo_ompi.c` (long names with one or two dashes, `--mca K V`)
  and MPICH/Intel Hydra `ui/mpich/utils.c` (`-ppn`, `-genv K V`);
- accelerate: accelerate 1.15 `commands/launch.py::launch_command_parser` (argparse, allow_abbrev=False;
  `commands/utils.py` accepts `-` for `_` in every option); `utils/launch.py::prepare_multi_gpu_env` starts
  num_processes // num_machines workers per machine.
Each chain yields nodes, workers per node and world size as Values whose note says how they were found.
"""

from __future__ import annotations

import posixpath
import re

from plint.record import field, record

TYPE_CHECKING = False  # typing is imported by type checkers only: it costs start-up time
if TYPE_CHECKING:
    from collections.abc import Callable

from plint.reading.shell.model import Command, Problem, ShellResult, Var, Word
from plint.source import SourceFile, Span
from plint.reading.sources.trainer import MEGATRON_OWN_FLAGS, MEGATRON_SHAPE_FLAGS, TRAINING_LENGTH_FLAGS
from plint.reading.sources.wrappers import base as _base
from plint.reading.sources.wrappers import python_program as _python_program
from plint.reading.sources.wrappers import unwrap_words
from plint.values import Value, default, derived, from_word, parse_int, unresolved


# ---- option grammars ----------------------------------------------------------------------------
@record
class Grammar:
    values: dict[str, str]  # every accepted spelling of an option with one value -> canonical name
    flags: dict[str, str]
    pairs: dict[str, str]  # options with two values (`--mca btl ^openib`)
    abbrev: bool  # argparse's allow_abbrev: a unique prefix of a long option is accepted


def _grammar(values: str, flags: str, pairs: str = "", abbrev: bool = True, aliases: str = "") -> Grammar:
    """Spec strings: space-separated options, `|` between spellings of one (the first is canonical).
    `aliases` "dash" adds `--a_b` for each `--a-b`; "underscore" adds `--a-b` for each `--a_b`."""
    def table(spec: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for group in spec.split():
            names = group.split("|")
            for name in names:
                out[name] = names[0]
                if aliases and name.startswith("--"):  # built at import: tests in the cheap order
                    if aliases == "dash":
                        out.setdefault("--" + name[2:].replace("-", "_"), names[0])
                    if aliases == "underscore":
                        out.setdefault("--" + name[2:].replace("_", "-"), names[0])
        return out
    return Grammar(table(values), table(flags), table(pairs), abbrev)


_TORCHRUN_VALUES = """--nnodes --nproc-per-node --rdzv-backend --rdzv-endpoint --rdzv-id --rdzv-conf --max-restarts
    --monitor-interval --start-method --event-log-handler --role --log-dir --redirects|-r --tee|-t
    --local-ranks-filter --duplicate-stdout-filters --duplicate-stderr-filters --node-rank --master-addr
    --master-port --local-addr --logs-specs --numa-binding --signals-to-handle --shutdown-timeout"""
_TORCHRUN_FLAGS = "--standalone --module|-m --no-python --run-path --virtual-local-rank"
TORCHRUN = _grammar(_TORCHRUN_VALUES, _TORCHRUN_FLAGS + " --help|-h", aliases="dash")
TORCH_LAUNCH = _grammar(_TORCHRUN_VALUES, _TORCHRUN_FLAGS + " --use-env --help|-h", aliases="dash")
DEEPSPEED = _grammar(
    """--hostfile|-H --include|-i --exclude|-e --num_nodes --num_gpus|--num_accelerators --master_port --master_addr
    --node_rank --launcher --launcher_args --enable_each_rank_log --autotuning --bind_core_list --ssh_port
    --venv_script --log_level""",
    """--module --no_python --no_local_rank --no_ssh --no_ssh_check --force_multi --save_pid --bind_cores_to_rank
    --quiet|-q --help|-h""")
ACCELERATE = _grammar(
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
    abbrev=False, aliases="underscore")
# Open MPI names work with one dash or two; Hydra (MPICH, Intel MPI) names take one
MPIRUN = _grammar(
    """--np|-np|-n|--n|-c --npernode|-npernode|-N|-ppn|--ppn --npersocket|-npersocket --map-by|-map-by
    --rank-by|-rank-by --bind-to|-bind-to --host|-host|-H|-hosts|--hosts|-hostlist
    --hostfile|-hostfile|--machinefile|-machinefile|-f --default-hostfile --rankfile|-rankfile|-rf --x|-x --wdir|-wdir|--wd|-wd --path|-path
    --prefix|-prefix --cpus-per-proc|-cpus-per-proc --cpus-per-rank|-cpus-per-rank --cpu-list|-cpu-list
    --cpu-set|-cpu-set --ppr --timeout|-timeout --output-filename|-output-filename --stdin|-stdin --personality
    --launch-agent|-launch-agent --am|-am --tune|-tune --xml-file --report-pid --report-uri --hnp --xterm
    --max-vm-size --ompi-server --debugger --report-events --max-restarts --genvlist|-genvlist --envlist|-envlist
    --launcher|-launcher --bootstrap|-bootstrap --iface|-iface --profile|-profile""",
    """--verbose|-v --quiet|-q --version|-V --tag-output|-tag-output --timestamp-output|-timestamp-output
    --merge-stderr-to-stdout --display-map|-display-map --display-allocation --report-bindings|-report-bindings
    --oversubscribe|-oversubscribe --nooversubscribe|-nooversubscribe --nolocal|-nolocal --pernode|-pernode
    --bynode|-bynode --byslot|-byslot --bycore|-bycore --bind-to-core|-bind-to-core --bind-to-socket
    --use-hwthread-cpus|-use-hwthread-cpus --allow-run-as-root|-allow-run-as-root --noprefix --novm
    --do-not-resolve --show-progress --enable-recovery --disable-recovery --continuous --debug --tv
    --genvall|-genvall --genvnone|-genvnone --envall|-envall --envnone|-envnone --prepend-rank|-prepend-rank|-l
    --ordered-output|-ordered-output --rr|-rr --help|-h""",
    "--mca|-mca --gmca|-gmca --genv|-genv --env|-env", abbrev=False)

# Cray ALPS `aprun [options] executable [args]` (also the PALS aprun of HPE Cray EX): -n PEs in all, -N PEs per
# node, -d CPUs per PE, -cc binding; the option list of "Run Applications Using the aprun Command" (HPE
# a00114008en_us) and Cray S-2496 "Using the aprun Command"; `--cc` is the spelling the PALS aprun accepts too
APRUN = _grammar(
    """--pes|-n --pes-per-node|-N --cpus-per-pe|-d --cpu-binding|-cc|--cc --environment-override|-e
    --memory-per-pe|-m -a -cp -D -L -l -j -F -p -r -R -S -sl -sn -t""",
    "-b -B -C -q -ss -T --help --version", abbrev=False)

SPAWNERS = ("torchrun", "torch.distributed.launch", "deepspeed", "accelerate")
SCHEDULERS = ("srun", "mpirun", "aprun")
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?$")
# python -m MODULE that is a launcher
_LAUNCHER_MODULES = {"torch.distributed.run": "torchrun", "torch.distributed.launch": "torch.distributed.launch",
                     "deepspeed.launcher.runner": "deepspeed", "accelerate.commands.launch": "accelerate"}
TRAINING_FLAGS = frozenset({"--deepspeed", "--deepspeed_config", "--deepspeed-config", "--per_device_train_batch_size",
                            "--gradient_accumulation_steps", "--zero-stage", "--zero_stage"}
                           | MEGATRON_OWN_FLAGS | MEGATRON_SHAPE_FLAGS)
_DRIVER_FLAGS = frozenset({"--deepspeed", "--deepspeed_config", "--deepspeed-config", "--per_device_train_batch_size",
                           "--gradient_accumulation_steps"})
TRAINING_NAMES = ("pretrain", "train", "finetune", "run_clm", "run_mlm", "run_pretrain", "sft")


# ---- what one command says ----------------------------------------------------------------------
@record
class LauncherCall:
    launcher: str  # torchrun | torch.distributed.launch | deepspeed | srun | mpirun | aprun | accelerate | python
    command: Command
    options: dict[str, list[Word]] = field(default_factory=dict)  # canonical option -> values (flag: [])
    nnodes: Value | None = None
    nproc_per_node: Value | None = None
    world_size: Value | None = None
    node_rank: Value | None = None
    master_addr: Value | None = None
    master_port: Value | None = None
    hostfile: Value | None = None  # deepspeed -H/--hostfile: the path as written
    program: Word | None = None  # the script/module/executable it starts (or an inner launcher)
    program_index: int = -1  # index into command.words where the program starts
    is_module: bool = False
    tasks: Value | None = None  # srun / mpirun / accelerate: processes it starts in all
    tasks_per_node: Value | None = None
    nodes: Value | None = None
    opaque: list[Word] = field(default_factory=list)  # unknown words read as options: they may set anything
    unknown_options: list[Word] = field(default_factory=list)  # options the launcher's parser does not know
    problems: list[Problem] = field(default_factory=list)
    wrapped_by: list[Word] = field(default_factory=list)  # unknown words (or unread scripts) before it: wrappers

    def option(self, *names: str) -> Word | None:
        for n in names:
            if self.options.get(n):
                return self.options[n][-1]
        return None

    def flag(self, *names: str) -> bool:
        return any(n in self.options for n in names)


@record
class LaunchChain:
    calls: list[LauncherCall]  # outermost first
    launcher: str | None  # the innermost process-spawning launcher; None for a bare `python x.py`
    entrypoint: Word | None
    trainer_args: list[Word]
    nnodes: Value
    workers_per_node: Value
    world_size: Value
    node_rank: Value | None = None
    master_addr: Value | None = None
    problems: list[Problem] = field(default_factory=list)
    command: Command | None = None  # the command that starts the entrypoint


def is_python(name: str | None) -> bool:
    return bool(name) and _PYTHON.match(name) is not None


def _looks_like_program(word: Word) -> bool:
    name = _base(word)
    if not name or name.startswith("-"):
        return False
    return (name.endswith((".py", ".sh")) or is_python(name) or name in ("torchrun", "deepspeed", "accelerate",
                                                                          "bash", "sh"))


# ---- argparse-like scanning ---------------------------------------------------------------------
@record
class _Scan:
    options: dict[str, list[Word]]
    stop: int  # the program's index (len(words) if none)
    opaque: list[Word]
    unknown: list[Word]


def _lookup(name: str, grammar: Grammar) -> tuple[str, str] | None:
    """(canonical name, "value" | "flag" | "pair") of an option spelling, abbreviations included."""
    for kind, table in (("value", grammar.values), ("flag", grammar.flags), ("pair", grammar.pairs)):
        if name in table:
            return table[name], kind
    if grammar.abbrev and name.startswith("--") and len(name) > 2:
        hits = {(table[s], kind) for kind, table in (("value", grammar.values), ("flag", grammar.flags))
                for s in table if s.startswith(name)}
        if len(hits) == 1:
            return hits.pop()
    return None


def _scan(words: list[Word], start: int, grammar: Grammar) -> _Scan:
    """Options from words[start:] up to the first word that is not one: the program."""
    out = _Scan({}, len(words), [], [])
    i = start
    while i < len(words):
        w = words[i]
        t = w.text
        if t is None:
            head = w.pieces[0].text if w.pieces and w.pieces[0].known else ""
            hit = _lookup(head.partition("=")[0], grammar) if head.startswith("-") and "=" in head else None
            if hit is not None:  # `--nnodes=$N`: a known option whose value is unknown
                out.options.setdefault(hit[0], []).append(w.after(head.index("=") + 1))
            elif any(_looks_like_program(later) for later in words[i + 1:]):
                out.opaque.append(w)  # `$DISTRIBUTED_ARGS train.py`: options plint cannot see
            else:
                out.stop = i  # could be the program itself
                return out
            i += 1
            continue
        if t == "--":
            out.stop = i + 1
            return out
        if not t.startswith("-") or t == "-" or re.fullmatch(r"-\d+(\.\d*)?", t):
            out.stop = i
            return out
        name, eq, _ = t.partition("=")
        hit = _lookup(name if eq else t, grammar)
        if hit is None and not name.startswith("--") and len(t) > 2:
            short = _lookup(t[:2], grammar)  # argparse `-r3`: a short option with its value attached
            if short is not None and short[1] == "value":
                out.options.setdefault(short[0], []).append(w.slice(2))
                i += 1
                continue
        if hit is None:
            out.unknown.append(w)
            out.options.setdefault(t, [])
            i += 1
            continue
        canon, kind = hit
        if kind == "value" and eq:
            out.options.setdefault(canon, []).append(w.slice(len(name) + 1))
            i += 1
        elif kind == "value":
            if i + 1 < len(words):
                out.options.setdefault(canon, []).append(words[i + 1])
            i += 2
        elif kind == "pair":
            out.options.setdefault(canon, []).extend(words[i + 1:i + 3])
            i += 3
        else:
            out.options.setdefault(canon, [])
            i += 1
    return out


# ---- parsing one launcher -----------------------------------------------------------------------
_LAUNCHER_NAMES = frozenset({"torchrun", "deepspeed", "ds", "srun", "mpirun", "mpiexec", "orterun", "mpiexec.hydra", "aprun",
                             "accelerate-launch"})


def _starts_launcher(words: list[Word], i: int) -> bool:
    """words[i] starts a launcher or a python interpreter: what an unknown word before it may wrap."""
    name = _base(words[i])
    if name in _LAUNCHER_NAMES or is_python(name):
        return True
    if name == "accelerate":
        return i + 1 < len(words) and words[i + 1].text == "launch"
    return not words[i].known and _interpreter_of_launcher(words, i)


def unwrap(words: list[Word], i: int = 0) -> int:
    """Index of the launcher after the wrappers (nohup, env A=1, numactl, containers, `uv run`, `nsys profile`)
    and the unknown words standing before it, or of the first word that is neither."""
    return unwrap_words(words, i, _starts_launcher).index


def _interpreter_of_launcher(words: list[Word], i: int) -> bool:
    """`$PYTHON -m torch.distributed.run`: an unknown word that python options and a launcher module follow."""
    if i + 1 >= len(words) or not (words[i + 1].text or "").startswith("-"):
        return False
    program, _, is_module, _ = _python_program(words, i + 1)
    return is_module and program is not None and program.text in _LAUNCHER_MODULES


def _python(command: Command, program: Word | None, index: int, is_module: bool, code: bool = False,
            skip: int = 0) -> LauncherCall:
    """A python program, or the launcher it runs as a module (`python -m torch.distributed.run`); `skip` words
    after the module never reach it."""
    kind = _LAUNCHER_MODULES.get(program.text or "") if is_module and program is not None else None
    if kind == "deepspeed":
        return _deepspeed(command, index + 1 + skip)
    if kind == "accelerate":
        return _accelerate(command, index + 1 + skip)
    if kind is not None:
        return _torchrun(command, index + 1 + skip, kind)
    call = LauncherCall("python", command, program=program, program_index=index, is_module=is_module)
    if code:
        call.options["-c"] = []
    skipped = [w for w in command.words[:max(index, 0)][-1:] if not w.known and program is not None and not is_module]
    if skipped and skipped[0] is not program:  # python_program stepped over it to the script after it
        call.problems.append(Problem(
            "unresolved", f"`{skipped[0].display()}` between python and {program.display()} is unknown: read as "
                          "interpreter options (or nothing, when it is empty)", skipped[0].site))
    return call


def parse_launcher(command: Command, start: int = 0) -> LauncherCall | None:
    """The launcher at command.words[start:] after wrappers, or a python program; None for anything else."""
    words = command.words
    unwrapped = unwrap_words(words, start, _starts_launcher)
    call = _launcher_at(command, unwrapped.index, unwrapped.runs_python)
    if call is None and unwrapped.index + 1 < len(words) and not words[unwrapped.index].known \
            and (words[unwrapped.index + 1].text or "").endswith(".py"):
        # `$LAUNCHER pretrain_gpt.py ...`: a python script started by something plint cannot know
        call = LauncherCall("python", command, program=words[unwrapped.index + 1],
                            program_index=unwrapped.index + 1, wrapped_by=[words[unwrapped.index]])
        return _wrapped(call, unwrapped.index)
    if call is not None and unwrapped.unknown:
        call.wrapped_by = unwrapped.unknown
        return _wrapped(call, unwrapped.index)
    return call


def _wrapped(call: LauncherCall, at: int) -> LauncherCall:
    """Say that unknown words (or a script plint does not follow) stand before the launcher, and what plint
    made of them."""
    scripts = [w for w in call.wrapped_by if w.known]
    unknown_words = [w for w in call.wrapped_by if not w.known]
    what = call.launcher if call.launcher != "python" else f"python {call.program.display() if call.program else ''}"
    for w in scripts:  # `aprun -n 8 ./local_rank.sh python3 train.py`: the script is handed the command
        if (w.text or "").endswith(".sh"):
            what_it_is = ("a script plint does not follow: read as a wrapper that runs the command after it (what "
                          "such a script usually does: set per-rank variables, then run its arguments)")
        else:  # `launch python3 train.py` after `source <(curl ...)`
            what_it_is = ("a command plint does not know (no function or program of that name is read; a file it "
                          "could not read may define it): read as a wrapper that runs the command after it")
        call.problems.append(Problem("unresolved", f"`{w.display()}` before {what.strip()} is {what_it_is}", w.site))
    if not unknown_words:
        return call
    shown = " ".join(f"`{w.display()}`" for w in unknown_words)
    why = "; ".join(dict.fromkeys(p.reason for w in unknown_words for p in w.unknowns if p.reason))
    if call.launcher == "python":
        effect = ("it may be a launcher (srun, mpirun, torchrun) that decides how many processes run, so the node "
                  "and process counts are unknown")
    else:
        effect = f"read as a wrapper in front of {call.launcher}, whose own options give the process counts"
    call.problems.append(Problem(
        "unresolved", f"{shown} before {what.strip()} is unknown" + (f" ({why})" if why else "") + f": {effect}",
        unknown_words[0].site))
    return call


def _launcher_at(command: Command, i: int, runs_python: str | None = None) -> LauncherCall | None:
    words = command.words
    if i >= len(words):
        return None
    if runs_python is not None:  # `uv run -m torch.distributed.run ...`, `uv run train.py`
        dropped = runs_python == "module, -- dropped" and i + 1 < len(words) and words[i + 1].text == "--"
        return _python(command, words[i], i, runs_python != "script", skip=1 if dropped else 0)
    name = _base(words[i])
    if name == "torchrun":
        return _torchrun(command, i + 1, "torchrun")
    if name in ("deepspeed", "ds"):
        return _deepspeed(command, i + 1)
    if name == "srun":
        return _srun(command, i + 1)
    if name in ("mpirun", "mpiexec", "orterun", "mpiexec.hydra"):
        return _mpirun(command, i + 1)
    if name == "aprun":
        return _aprun(command, i + 1)
    if name == "accelerate" and i + 1 < len(words) and words[i + 1].text == "launch":
        return _accelerate(command, i + 2)
    if name == "accelerate-launch":
        return _accelerate(command, i + 1)
    if is_python(name) or (not words[i].known and _interpreter_of_launcher(words, i)):
        program, index, is_module, code = _python_program(words, i + 1)
        return _python(command, program, index, is_module, code)
    return None


def _finish(call: LauncherCall, scan: _Scan) -> LauncherCall:
    words = call.command.words
    call.opaque, call.unknown_options = scan.opaque, scan.unknown
    if scan.stop < len(words):
        call.program, call.program_index = words[scan.stop], scan.stop
    if call.program is not None and not call.program.known and not scan.opaque:
        call.problems.append(Problem(
            "unresolved", f"{call.launcher}: the word `{call.program.display()}` is unknown; plint reads it as "
                          "the program, but it may hold launcher options", call.program.site))
    elif scan.opaque:
        shown = ", ".join(f"`{w.display()}`" for w in scan.opaque)
        call.problems.append(Problem(
            "unresolved", f"{call.launcher}: {shown} unknown, read as launcher options before "
                          f"`{call.program.display() if call.program else '?'}`", scan.opaque[0].site))
    return call


def _hidden(call: LauncherCall, option: str) -> Value | None:
    """Unresolved when unknown option words could be setting `option`."""
    if not call.opaque:
        return None
    names = ", ".join(w.display() for w in call.opaque)
    return unresolved(f"{call.launcher} {option} is not written out: it may be inside {names}, which plint cannot "
                      "read", call.opaque[0].site)


def _env_option(call: LauncherCall, dest: str) -> Value | None:
    """torchrun's `PET_<DEST>` environment default for an option that is not given."""
    name = f"PET_{dest.upper()}"
    var = call.command.assignments.get(name) or call.command.env.get(name)
    if var is None or (name not in call.command.assignments and not var.exported):
        return None
    return _var_value(var, str, name)


def _var_value(var: Var, convert, what: str) -> Value:
    return from_word(Word(var.value, var.span), convert, what)


def _given(call: LauncherCall, option: str, dest: str) -> Value | None:
    """An option's value as text: from the command line, else (torchrun) from `PET_<DEST>`."""
    w = call.option(option)
    if w is not None:
        return from_word(w, str, option)
    return _env_option(call, dest)


def _torchrun(command: Command, start: int, kind: str) -> LauncherCall:
    scan = _scan(command.words, start, TORCHRUN if kind == "torchrun" else TORCH_LAUNCH)
    call = _finish(LauncherCall(kind, command, scan.options), scan)
    call.is_module = call.flag("--module")
    where = command.words[start - 1].site if start >= 1 else None

    nnodes = _given(call, "--nnodes", "nnodes")
    if nnodes is not None:
        call.nnodes = _min_max_nodes(nnodes)
    elif call.flag("--standalone"):
        call.nnodes = derived(1, "--standalone: a single-node rendezvous on localhost", where)
    else:
        call.nnodes = _hidden(call, "--nnodes") or default(1, f"{kind} --nnodes defaults to 1:1")
    nproc = _given(call, "--nproc-per-node", "nproc_per_node")
    if nproc is None:
        call.nproc_per_node = _hidden(call, "--nproc-per-node") or default(1, f"{kind} --nproc-per-node defaults to 1")
    elif nproc.known and nproc.value in ("gpu", "auto", "cpu", "xpu"):
        call.nproc_per_node = unresolved(f"--nproc-per-node {nproc.value} counts the node's devices at run time",
                                         nproc.span)
    else:
        call.nproc_per_node = _as_int(nproc, "--nproc-per-node")
    call.world_size = _product(call.nnodes, call.nproc_per_node,
                               f"world size = {{a}} nodes * {{b}} workers ({kind} --nnodes * --nproc-per-node)")
    rank = _given(call, "--node-rank", "node_rank")
    call.node_rank = _as_int(rank, "--node-rank") if rank is not None else None
    port = _given(call, "--master-port", "master_port")
    call.master_port = _as_int(port, "--master-port") if port is not None else None
    call.master_addr = _rendezvous_host(call)
    return call


def _as_int(value: Value, what: str) -> Value:
    if not value.known:
        return value
    try:
        return Value(parse_int(value.value), value.span, value.origin)
    except ValueError:
        return unresolved(f"{what} {value.value!r} is not a number", value.span)


def _min_max_nodes(value: Value) -> Value:
    """run.py parse_min_max_nnodes: `N` or `MIN:MAX`; elastic ranges are decided at run time."""
    if not value.known:
        return value
    parts = value.value.split(":")
    try:
        counts = [parse_int(p) for p in parts]
    except ValueError:
        return unresolved(f"--nnodes {value.value!r} is not N or MIN:MAX", value.span)
    if len(counts) == 1 or (len(counts) == 2 and counts[0] == counts[1]):
        return Value(counts[0], value.span, value.origin)
    return unresolved(f"--nnodes {value.value} is elastic: the node count is decided at run time", value.span)


def _rendezvous_host(call: LauncherCall) -> Value | None:
    """Where the workers meet: the --rdzv-endpoint host for a dynamic backend, else --master-addr."""
    backend = call.option("--rdzv-backend")
    endpoint = call.option("--rdzv-endpoint")
    addr = call.option("--master-addr")
    dynamic = backend is not None and backend.text != "static"
    if endpoint is not None and (dynamic or addr is None):
        text = endpoint.text
        if text is None:
            return from_word(endpoint, str, "--rdzv-endpoint")
        host = text[1:text.index("]")] if text.startswith("[") and "]" in text else text.rsplit(":", 1)[0] \
            if text.count(":") == 1 else text
        return Value(host, endpoint.slice(0, len(host)).value_span if host else endpoint.value_span, endpoint.origin)
    if addr is not None:
        return from_word(addr, str, "--master-addr")
    return None


def _deepspeed(command: Command, start: int) -> LauncherCall:
    scan = _scan(command.words, start, DEEPSPEED)
    call = _finish(LauncherCall("deepspeed", command, scan.options), scan)
    call.is_module = call.flag("--module")
    hostfile = call.option("--hostfile")
    call.hostfile = from_word(hostfile, str, "--hostfile") if hostfile is not None else None
    addr = call.option("--master_addr")
    call.master_addr = from_word(addr, str, "--master_addr") if addr is not None else None
    rank = call.option("--node_rank")
    call.node_rank = from_word(rank, parse_int, "--node_rank") if rank is not None else None
    port = call.option("--master_port")
    call.master_port = from_word(port, parse_int, "--master_port") if port is not None else None
    return call


def _srun(command: Command, start: int) -> LauncherCall:
    from plint.reading.sources.slurm import node_count, parse_options

    words = command.words[start:]
    parsed = parse_options(words, "srun", opaque=lambda i: any(_looks_like_program(w) for w in words[i + 1:]))
    scan = _Scan({}, start + parsed.stop, parsed.opaque, parsed.unknown)
    for opt in parsed.options:
        scan.options.setdefault("--" + opt.name, []).extend([opt.value] if opt.value is not None else [])
    call = _finish(LauncherCall("srun", command, scan.options), scan)
    nodes = call.option("--nodes")
    call.nodes = node_count(nodes) if nodes is not None else None
    for attr, name in (("tasks", "--ntasks"), ("tasks_per_node", "--ntasks-per-node")):
        w = call.option(name)
        if w is not None:
            setattr(call, attr, from_word(w, parse_int, f"srun {name}"))
    return call


def _mpirun(command: Command, start: int) -> LauncherCall:
    scan = _scan(command.words, start, MPIRUN)
    call = _finish(LauncherCall("mpirun", command, scan.options), scan)
    np_word = call.option("--np")
    call.tasks = from_word(np_word, parse_int, "mpirun -np") if np_word is not None else None
    per = call.option("--npernode")
    if per is not None:
        call.tasks_per_node = from_word(per, parse_int, "mpirun -npernode")
    for option in ("--map-by", "--ppr"):  # `--map-by ppr:8:node` / `--ppr 8:node`
        w = call.option(option)
        if call.tasks_per_node is None and w is not None and w.known:
            m = re.match(r"(?:ppr:)?(\d+):node", w.text or "")
            if m and (option == "--ppr" or (w.text or "").startswith("ppr:")):
                at = (w.text or "").index(m.group(1))
                call.tasks_per_node = Value(int(m.group(1)), w.slice(at, at + len(m.group(1))).value_span, w.origin)
    if call.flag("--pernode") and call.tasks_per_node is None:
        call.tasks_per_node = derived(1, "mpirun -pernode: one process per node", call.command.site)
    return call


def _aprun(command: Command, start: int) -> LauncherCall:
    scan = _scan(command.words, start, APRUN)
    call = _finish(LauncherCall("aprun", command, scan.options), scan)
    for attr, name, what in (("tasks", "--pes", "aprun -n"), ("tasks_per_node", "--pes-per-node", "aprun -N")):
        w = call.option(name)
        if w is not None:
            setattr(call, attr, from_word(w, parse_int, what))
    return call


def _accelerate(command: Command, start: int) -> LauncherCall:
    scan = _scan(command.words, start, ACCELERATE)
    call = _finish(LauncherCall("accelerate", command, scan.options), scan)
    call.is_module = call.flag("--module")
    for attr, name in (("tasks", "--num_processes"), ("nodes", "--num_machines"), ("node_rank", "--machine_rank"),
                       ("master_port", "--main_process_port")):
        w = call.option(name)
        if w is not None:
            setattr(call, attr, from_word(w, parse_int, name))
    ip = call.option("--main_process_ip")
    call.master_addr = from_word(ip, str, "--main_process_ip") if ip is not None else None
    return call


# ---- chains -------------------------------------------------------------------------------------
def _chain_calls(command: Command) -> list[LauncherCall]:
    """The launchers of one command, outermost first: `srun torchrun x.py` -> [srun, torchrun]."""
    calls: list[LauncherCall] = []
    start = 0
    while start < len(command.words):
        call = parse_launcher(command, start)
        if call is None:
            break
        calls.append(call)
        if call.launcher == "python" or call.program is None or call.program_index < 0:
            break
        inner = _base(call.program)
        no_python = call.flag("--no-python", "--no_python")
        if call.launcher in SCHEDULERS or (no_python and (is_python(inner) or inner in ("torchrun", "deepspeed"))):
            start = call.program_index
            continue
        break
    return calls


def _parent_calls(command: Command) -> list[LauncherCall]:
    """Launchers of the commands that ran this one as a string or a script (`srun bash -c "..."`)."""
    out: list[LauncherCall] = []
    parent = command.parent
    while parent is not None:
        out = [c for c in _chain_calls(parent) if c.launcher != "python"] + out
        parent = parent.parent
    return out


def _is_launch(calls: list[LauncherCall]) -> bool:
    inner = calls[-1]
    if inner.flag("-c") or (inner.program is None and inner.launcher == "python"):
        return False
    if inner.launcher in SPAWNERS:
        return inner.program is not None
    if inner.launcher in SCHEDULERS:
        # a script run directly (`srun ./train.py`) is a launch; a shell or a binary is not: the commands a
        # shell runs are read on their own, with this one as their parent
        return inner.program is not None and (_base(inner.program) or "").endswith(".py")
    program = inner.program
    if program is None:
        return False
    if len(calls) > 1:
        return True  # python started by srun or mpirun
    args = [w.text or "" for w in inner.command.words[inner.program_index + 1:]]
    options = {a.split("=")[0] for a in args}
    flagged = bool(options & TRAINING_FLAGS)
    if not program.known:
        return flagged
    name = (program.text or "").rsplit(".", 1)[-1] if inner.is_module else posixpath.basename(program.text or "")
    if inner.is_module and (program.text or "").split(".")[0] in ("pip", "venv", "ensurepip", "pytest", "json"):
        return False
    if name.startswith(TRAINING_NAMES):
        return True
    # one process started by no launcher, a script not named for training: Megatron's model and parallel flags
    # alone are what its checkpoint tools take too (tools/merge_mp_partitions.py, checkpoint converters); a
    # training run says how long it trains or that DeepSpeed drives it
    return flagged and bool(options & (TRAINING_LENGTH_FLAGS | _DRIVER_FLAGS))


def find_launches(result: ShellResult, job, read_file: Callable[[str], SourceFile | None]) -> list[LaunchChain]:
    """One chain per training launch, in execution order."""
    chains: list[LaunchChain] = []
    for command in result.commands:
        own = _chain_calls(command)
        if not own:
            continue
        calls = _parent_calls(command) + own
        if not _is_launch(calls):
            continue
        problems = [p for c in calls for p in c.problems]
        for c in calls:
            if c.launcher == "deepspeed":
                _deepspeed_resources(c, read_file, problems, result)
            elif c.launcher == "srun":
                _srun_step(c, job)
            elif c.launcher == "accelerate":
                _accelerate_config(c, read_file)
        nodes, per, world, launcher = _resolve(calls)
        inner = calls[-1]
        args = command.words[inner.program_index + 1:] if inner.program_index >= 0 else []
        node_rank = next((c.node_rank for c in reversed(calls) if c.node_rank is not None), None)
        master = next((c.master_addr for c in reversed(calls) if c.master_addr is not None), None)
        chains.append(LaunchChain(calls, launcher, inner.program, list(args), nodes, per, world, node_rank, master,
                                  problems, command))
    return chains


# ---- resolution ---------------------------------------------------------------------------------
def _product(a: Value | None, b: Value | None, note: str) -> Value:
    if a is None or b is None or not a.known or not b.known:
        missing = [v.note for v in (a, b) if v is not None and not v.known and v.note]
        return unresolved("needs " + "; ".join(missing) if missing else "a factor is unknown")
    return derived(a.value * b.value, note.format(a=a.value, b=b.value), b.span or a.span)


def _quotient(w: Value, n: Value, note: str, floor: bool = False) -> Value:
    if not w.known or not n.known:
        missing = [v.note for v in (w, n) if not v.known and v.note]
        return unresolved("needs " + "; ".join(missing) if missing else "a count is unknown")
    if n.value <= 0 or (w.value % n.value and not floor):
        return Value(None, w.span, "derived", f"{w.value} processes do not divide evenly over {n.value} nodes")
    return derived(w.value // n.value, note.format(w=w.value, n=n.value), w.span)


def _resolve(calls: list[LauncherCall]) -> tuple[Value, Value, Value, str | None]:
    """(nnodes, workers per node, world size, DESIGN's `launcher`)."""
    spawners = [c for c in calls if c.launcher in SPAWNERS]
    schedulers = [c for c in calls if c.launcher in SCHEDULERS]
    if spawners:
        s = spawners[-1]
        if s.launcher == "accelerate":
            return _accelerate_sizes(s) + ("accelerate",)
        return s.nnodes, s.nproc_per_node, s.world_size, s.launcher  # type: ignore[return-value]
    if schedulers:
        s = schedulers[-1]
        if s.launcher in ("mpirun", "aprun"):
            return _mpirun_sizes(s) + (s.launcher,)
        return s.nodes, s.tasks_per_node, s.tasks, "srun"  # type: ignore[return-value]
    site = calls[-1].command.words[0].site if calls[-1].command.words else None
    unknown = [w for c in calls for w in c.wrapped_by]
    if unknown:  # `${SRUN_EXEC} python3 train.py`: the unknown word may be the launcher
        note = (f"`{unknown[0].display()}` before the program is unknown and may be a launcher that starts several "
                "processes")
        return unresolved(note, unknown[0].site), unresolved(note, unknown[0].site), \
            unresolved(note, unknown[0].site), None
    one = "a single process: the program is started without a launcher"
    return derived(1, one, site), derived(1, one, site), derived(1, one, site), None


def _mpirun_sizes(s: LauncherCall) -> tuple[Value, Value, Value]:
    """mpirun -np / -npernode, or aprun -n / -N (with neither -N, ALPS fills each node: the nodes decide)."""
    np_, per_name = ("-n", "-N") if s.launcher == "aprun" else ("-np", "-npernode")
    tasks = s.tasks or _hidden(s, np_) or unresolved(
        f"{s.launcher} without {np_} starts one rank per slot of its host list or allocation, known at run time")
    per = s.tasks_per_node or _hidden(s, per_name)
    if per is None:
        if tasks.known:
            return unresolved(f"{s.launcher} gives no ranks per node: the hosts' slots decide"), \
                unresolved(f"{s.launcher} gives no ranks per node: the hosts' slots decide"), tasks
        return tasks, tasks, tasks
    if s.tasks is None and per.known:
        return unresolved(f"{s.launcher} without {np_}: the number of hosts decides"), per, tasks
    nodes = _quotient(tasks, per, f"nodes = {{w}} ranks / {{n}} per node ({s.launcher} {np_} / {per_name})")
    return nodes, per, tasks


def _accelerate_sizes(s: LauncherCall) -> tuple[Value, Value, Value]:
    nodes = s.nodes or _hidden(s, "--num_machines") or default(1, "accelerate --num_machines defaults to 1")
    total = s.tasks or _hidden(s, "--num_processes") or unresolved(
        "accelerate launch without --num_processes takes it from its config file or counts the local GPUs at "
        "run time")
    per = _quotient(total, nodes, "workers per node = {w} // {n} (accelerate --num_processes // --num_machines)",
                    floor=True)
    world = _product(nodes, per, "world size = {a} machines * {b} workers")
    return nodes, per, world


def _accelerate_config(call: LauncherCall, read_file: Callable[[str], SourceFile | None]) -> None:
    """Counts from `--config_file` (accelerate's YAML) that the command line does not give."""
    path = call.option("--config_file")
    if path is None or path.text is None or (call.tasks is not None and call.nodes is not None):
        return
    source = read_file(path.text)
    if source is None:
        return
    import yaml

    try:
        data = yaml.safe_load(source.text)
    except yaml.YAMLError:  # a config plint cannot parse leaves the counts unresolved
        return
    if not isinstance(data, dict):
        return
    span = source.span(0, len(source.data))
    for attr, key in (("tasks", "num_processes"), ("nodes", "num_machines"), ("node_rank", "machine_rank")):
        if getattr(call, attr) is None and isinstance(data.get(key), int):
            setattr(call, attr, Value(data[key], _yaml_key_span(source, key) or span, "literal"))
    if call.master_addr is None and isinstance(data.get("main_process_ip"), str):
        call.master_addr = Value(data["main_process_ip"], _yaml_key_span(source, "main_process_ip") or span)


def _yaml_key_span(source: SourceFile, key: str) -> Span | None:
    m = re.search(rf"(?m)^{re.escape(key)}:\s*(\S+)", source.text)
    if not m:
        return None
    start = len(source.text[:m.start(1)].encode("utf-8", "surrogateescape"))
    return source.span(start, start + len(m.group(1).encode("utf-8", "surrogateescape")))


def _outside(result: ShellResult | None, name: str) -> str | None:
    """plint.root's note when the file a launch names (against the script's folder) lies outside the
    root of the check, else None."""
    if result is None:
        return None
    import os

    from plint.root import WIDEN_HINT, note_for

    note = note_for(os.path.join(os.path.dirname(os.path.abspath(result.source.path)), name))
    return f"{note} ({WIDEN_HINT})" if note is not None else None


def _deepspeed_resources(call: LauncherCall, read_file: Callable[[str], SourceFile | None],
                         problems: list[Problem], result: ShellResult | None = None) -> None:
    """Nodes, slots per node and world size as deepspeed/launcher/runner.py `main` computes them (plint.reading.sources.
    hostfile). A hostfile plint cannot read leaves --num_nodes / --num_gpus to decide; no --hostfile means the
    runner's /job/hostfile, whose existence only the launching machine knows."""
    from plint.reading.sources.hostfile import (DEFAULT_HOSTFILE, assume_local_node, include_as_hostfile, read_hostfile,
                                        resolve_resources, unread_resources)

    def unknown(note: str, span: Span | None) -> None:
        call.world_size = call.nnodes = call.nproc_per_node = unresolved(note, span)

    hidden = _hidden(call, "--hostfile/--num_gpus")
    if hidden is not None:
        return unknown(hidden.note or "", hidden.span)
    texts: dict[str, str | None] = {}
    numbers: dict[str, int | None] = {}
    sizes: dict[str, Value | None] = {}  # --num_nodes / --num_gpus, known or not
    for name in ("--include", "--exclude", "--num_nodes", "--num_gpus", "--launcher", "--node_rank"):
        w = call.option(name)
        v = from_word(w, parse_int, f"deepspeed {name}") if w is not None else None
        if name in ("--num_nodes", "--num_gpus"):
            sizes[name] = v
            if v is not None and not v.known:
                continue  # the size it sets is unknown; the rest of the resources may still be read
        elif w is not None and not w.known:
            return unknown(f"deepspeed {name}: {v.note}", w.value_span)
        texts[name] = w.text if w is not None else None
        if name in ("--num_nodes", "--num_gpus", "--node_rank") and w is not None:
            if not v.known:
                return unknown(f"deepspeed {name} {w.text!r} is not a number", w.value_span)
            numbers[name] = v.value
    selection = texts["--include"] or texts["--exclude"]
    # provenance: the hostfile named, else --num_gpus, else the launcher word
    chosen = call.option("--hostfile") or call.option("--num_gpus")
    span = chosen.value_span if chosen is not None else call.command.words[0].site
    hostfile = None
    unread: str | None = None  # the hostfile the runner reads when plint cannot
    if call.hostfile is not None:
        word = call.option("--hostfile")
        if not call.hostfile.known:
            # a path with unknown parts still names the file the script wrote under that name (the
            # evaluator keys such virtual files by the path's rendering, unknown parts as ${NAME})
            written = result.virtual_files.get(word.display()) if result is not None and word is not None else None
            src = SourceFile(written.path, written.content.render()) if written is not None else None
            unread = f"the hostfile {word.display() if word is not None else ''} ({call.hostfile.note})"
        else:
            src = read_file(call.hostfile.value)
            outside = _outside(result, call.hostfile.value) if src is None else None
            unread = (f"the hostfile {call.hostfile.value} ({outside})" if outside is not None else
                      f"the hostfile {call.hostfile.value} (neither in the repository nor written by the script)")
        if src is not None:
            hostfile, unread = read_hostfile(src), None
    elif (numbers.get("--num_nodes") or 0) > 1 or (sizes["--num_nodes"] is not None and not sizes["--num_nodes"].known):
        unread = f"{DEFAULT_HOSTFILE} (the runner's default --hostfile)"  # several nodes: the author relies on it
    elif selection and any(h.split(":")[0] != "localhost" for h in selection.split("@")):
        unread = f"{DEFAULT_HOSTFILE} (the runner's default --hostfile)"  # --include names its hosts
    if unread is not None and texts["--include"] and not texts["--exclude"]:
        hostfile = include_as_hostfile(texts["--include"], unread, span)
        unread = None if hostfile is not None else unread
    if unread is not None:
        if selection:
            return unknown(f"deepspeed --include/--exclude select hosts of {unread}, which plint cannot read",
                           call.hostfile.span if call.hostfile is not None else span)
        res = unread_resources(unread, sizes["--num_nodes"], sizes["--num_gpus"], span)
    else:
        res = resolve_resources(hostfile, texts["--include"], texts["--exclude"], numbers.get("--num_nodes"),
                                numbers.get("--num_gpus"), span, visible_devices=_visible_devices(call.command),
                                launcher=(texts["--launcher"] or "").lower() or None, no_ssh=call.flag("--no_ssh"),
                                node_rank=numbers.get("--node_rank"))
        if hostfile is None and numbers.get("--num_nodes") == 1:  # one node, whichever file the runner reads
            w = call.option("--num_nodes")
            res.nnodes = Value(1, w.value_span, w.origin, "deepspeed --num_nodes 1: one node") \
                if res.nnodes.known else res.nnodes
        elif hostfile is None:
            res = assume_local_node(res)
        nodes = sizes["--num_nodes"]
        if nodes is not None and not nodes.known:  # `--num_nodes=$NODES` over a hostfile plint reads
            res.nnodes = nodes
            res.world_size = unresolved(f"needs --num_nodes: {nodes.note}", nodes.span)
    problems.extend(res.problems)
    call.world_size, call.nnodes, call.nproc_per_node = res.world_size, res.nnodes, res.gpus_per_node
    gpus = call.option("--num_gpus")
    if gpus is not None and res.gpus_per_node.known:  # point at the option that set it
        n = res.gpus_per_node.value
        call.nproc_per_node = Value(n, gpus.value_span, gpus.origin,
                                    f"deepspeed --num_gpus {n}: slots 0..{n - 1} on every host")
    if call.master_addr is None and res.multi_node and res.hosts_and_slots:
        first = res.hosts_and_slots[0][0]
        call.master_addr = derived(first, f"no --master_addr: DeepSpeed asks the first host ({first}) for its "
                                          "address", call.hostfile.span if call.hostfile else None)


def _visible_devices(command: Command) -> str | None:
    var = command.assignments.get("CUDA_VISIBLE_DEVICES") or command.env.get("CUDA_VISIBLE_DEVICES")
    if var is None or ("CUDA_VISIBLE_DEVICES" not in command.assignments and not var.exported):
        return None
    value = _var_value(var, str, "CUDA_VISIBLE_DEVICES")
    return value.value if value.known else None


# ---- srun: how many tasks a step starts ---------------------------------------------------------
class _Unknown(Exception):
    pass


def _job_env_value(command: Command, job, names: tuple[str, ...]) -> Value | None:
    """A SLURM_* variable srun reads as a default (srun(1) INPUT ENVIRONMENT VARIABLES): from the command's
    environment (the batch script's, seeded from #SBATCH), else from the job."""
    for name in names:
        var = command.env.get(name)
        if var is not None and var.exported:
            return _var_value(var, parse_int, name)
    if job is not None:
        from plint.reading.sources.slurm import implied_env

        env = implied_env(job)
        for name in names:
            if name in env:
                return _var_value(env[name], parse_int, name)
    return None


def _srun_step(call: LauncherCall, job) -> None:
    """Nodes, tasks and tasks per node of an srun step, following srun's `_opt_verify` (src/srun/opt.c): the
    command line overrides SLURM_JOB_NUM_NODES/SLURM_NTASKS/SLURM_NTASKS_PER_NODE from the job; with nodes and
    no task count it starts one task per node; a --ntasks-per-node that contradicts an inherited task count
    is ignored (srun warns "can't honor --ntasks-per-node")."""
    env = call.command
    cli_nodes, cli_tasks, cli_per = call.nodes, call.tasks, call.tasks_per_node
    env_nodes = _job_env_value(env, job, ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"))
    env_tasks = _job_env_value(env, job, ("SLURM_NTASKS", "SLURM_NPROCS"))
    env_per = _job_env_value(env, job, ("SLURM_NTASKS_PER_NODE",))
    hidden = _hidden(call, "--nodes/--ntasks")
    nodes, tasks, per = cli_nodes or env_nodes, cli_tasks or env_tasks, cli_per or env_per
    nodes_by_env, tasks_by_env = cli_nodes is None and env_nodes is not None, cli_tasks is None and env_tasks is not None
    in_job = env_nodes is not None or env_tasks is not None or job is not None

    def need(v: Value | None) -> int:
        if v is None or not v.known:
            raise _Unknown(v.note if v is not None and v.note else "unknown")
        return v.value

    try:
        if hidden is not None:
            raise _Unknown(hidden.note)
        if nodes is None and tasks is None and per is None:
            if in_job:
                raise _Unknown("srun inside a job whose node count is not known from its options")
            # srun(1): inside an allocation (sbatch/salloc) a step with no -N/-n takes the allocation's
            # SLURM_NNODES/SLURM_NTASKS; a script with no #SBATCH directive gets its allocation from the
            # command line that submits it, which the file does not show. One task is only srun's answer
            # on a login node, which a multi-GPU launch script is not written for.
            raise _Unknown("srun with no -N/-n runs as many tasks as the allocation it is started in, and no "
                           "#SBATCH directive gives it (supply the sbatch/salloc options with --env "
                           "SLURM_NNODES=<n> --env SLURM_NTASKS=<n>)")
        if nodes is not None and per is None and tasks is None:
            n = need(nodes)
            call.nodes, call.tasks = nodes, derived(n, f"srun starts one task per node: {n} tasks", nodes.span)
            call.tasks_per_node = derived(1, "srun starts one task per node by default", nodes.span)
            return
        if nodes is not None and tasks is not None:
            n, t = need(nodes), need(tasks)
            if t < n:
                nodes = derived(t, f"srun cannot run {t} tasks on {n} nodes and uses {t}", tasks.span)
                n = t
            if per is not None and tasks_by_env and not nodes_by_env:
                tasks = None  # srun drops the inherited count and takes nodes * tasks-per-node
            elif per is not None and t > n * need(per):
                call.problems.append(Problem(
                    "slurm", f"srun: can't honor --ntasks-per-node set to {per.value} which doesn't match the "
                             f"requested tasks {t} with the maximum number of requested nodes {n}. Ignoring "
                             "--ntasks-per-node.", per.span))
                per = None
        if per is not None and tasks is None:
            n = need(nodes) if nodes is not None else 1
            tasks = derived(n * need(per), f"tasks = {n} nodes * {per.value} tasks per node (srun)", per.span)
        if nodes is None:
            raise _Unknown(f"srun -n {tasks.value if tasks is not None else '?'} without -N: Slurm spreads the "
                           "tasks over nodes at run time")
        call.nodes, call.tasks = nodes, tasks
        if per is None:
            per = _quotient(tasks, nodes, "tasks per node = {w} tasks / {n} nodes (srun)")  # type: ignore[arg-type]
        call.tasks_per_node = per
    except _Unknown as why:
        note = f"srun step size unknown: {why.args[0]}"
        call.nodes = nodes if nodes is not None and nodes.known and hidden is None else unresolved(note)
        call.tasks = unresolved(note)
        call.tasks_per_node = per if per is not None and per.known and hidden is None else unresolved(note)
