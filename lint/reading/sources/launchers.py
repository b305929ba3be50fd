"""What launcher commands mean: torchrun, the legacy torch.distributed.launch, the deepspeed launcher, srun,
mpirun/mpiexec, aprun, jsrun, bcprun and `accelerate launch`, the wrappers in front of them (their grammars in
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

from plint.reading.shell.choices import sibling_arms
from plint.reading.shell.model import Command, Problem, ShellResult, Word
from plint.reading.shell.state import SHELLS
from plint.reading.sources.trainer import TRAINING_LENGTH_FLAGS
from plint.reading.sources.wrappers import base as _base, python_program as _python_program, unwrap_words
from plint.source import SourceFile
from plint.values import Value, derived, unresolved
from plint.reading.sources.launch_accelerate import accelerate_call, read_accelerate_config, accelerate_sizes
from plint.reading.sources.launch_calls import (
    LaunchChain,
    LauncherCall,
    SCHEDULERS,
    SPAWNERS,
    TRAINING_FLAGS,
    TRAINING_NAMES,
    DRIVER_FLAGS,
    LAUNCHER_MODULES,
    is_python,
)
from plint.reading.sources.launch_bcprun import bcprun_call, bcprun_sizes
from plint.reading.sources.launch_ray import is_ray_job_submit, ray_job_call
from plint.reading.sources.chatlearn import is_chatlearn
from plint.reading.sources.verl import is_verl_main, verl_megatron_actor, verl_sizes, with_worker_env
from plint.reading.sources.nemo_rl import is_nemo_rl
from plint.reading.sources.roll import is_roll_pipeline
from plint.reading.sources.skyrl import WORKER_ENV as SKYRL_WORKER_ENV
from plint.reading.sources.skyrl import is_skyrl_main, skyrl_megatron, skyrl_sizes
from plint.reading.sources.launch_deepspeed import deepspeed_call, read_deepspeed_resources, read_named_hostfile
from plint.reading.sources.launch_mpi import aprun_call, hostfile_slots, jsrun_call, mpirun_call, mpirun_sizes
from plint.reading.sources.launch_srun import srun_call, read_srun_step
from plint.reading.sources.launch_torchrun import torchrun_call
from plint.reading.sources.neox import NEOX_PROGRAM, is_neox, read_neox

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from plint.reading.loading import Unread


# ---- parsing one launcher -----------------------------------------------------------------------


def _torchrun_command(command: Command, start: int) -> LauncherCall:
    return torchrun_call(command, start, "torchrun")


# The one table of launchers: the command that starts each -> how its options are read (from the word after
# it). A new launcher is a module beside these (launch_<name>.py) and a row here; one run as a python module
# (`python -m torch.distributed.run`) is a row of launch_calls.LAUNCHER_MODULES too.
LAUNCHERS: dict[str, Callable[[Command, int], LauncherCall]] = {
    "torchrun": _torchrun_command,
    "torchrun_jsc": _torchrun_command,  # launch_calls.LAUNCHER_MODULES
    "deepspeed": deepspeed_call,
    "ds": deepspeed_call,
    "srun": srun_call,
    "mpirun": mpirun_call,
    "mpiexec": mpirun_call,
    "orterun": mpirun_call,
    "mpiexec.hydra": mpirun_call,
    "aprun": aprun_call,
    "jsrun": jsrun_call,
    "bcprun": bcprun_call,
    "accelerate-launch": accelerate_call,  # `accelerate launch` (two words) is read in _launcher_at
}


# A launcher's console script run by python (`python /venv/bin/deepspeed ...`, `python $(which torchrun) ...`): the
# scripts torch (torchrun) and DeepSpeed (bin/deepspeed, bin/ds) install, each the launcher it names.
CONSOLE_SCRIPTS = {"torchrun": "torchrun", "deepspeed": "deepspeed", "ds": "deepspeed"}


def _starts_launcher(words: list[Word], i: int) -> bool:
    """words[i] starts a launcher or a python interpreter: what an unknown word before it may wrap."""
    name = _base(words[i])
    if name in LAUNCHERS or is_python(name):
        return True
    if name == "accelerate":
        return i + 1 < len(words) and words[i + 1].text == "launch"
    return _interpreter_of_launcher(words, i)


def unwrap(words: list[Word], i: int = 0) -> int:
    """Index of the launcher after the wrappers (nohup, env A=1, numactl, containers, `uv run`, `nsys profile`)
    and the unknown words standing before it, or of the first word that is neither."""
    return unwrap_words(words, i, _starts_launcher).index


def _interpreter_of_launcher(words: list[Word], i: int) -> bool:
    """`$PYTHON -m torch.distributed.run`, `/PATH/TO/PYTHON -m torch.distributed.launch`: a word that python options
    and a launcher module follow, unknown or a name only a Python interpreter answers to that way (a placeholder
    path, an environment's renamed binary)."""
    if i + 1 >= len(words) or not (words[i + 1].text or "").startswith("-"):
        return False
    program, _, is_module, _ = _python_program(words, i + 1)
    return is_module and program is not None and program.text in LAUNCHER_MODULES


def _python(
    command: Command, program: Word | None, index: int, is_module: bool, code: bool = False, skip: int = 0
) -> LauncherCall:
    """A python program, or the launcher it runs as a module (`python -m torch.distributed.run`); `skip` words
    after the module never reach it."""
    kind = LAUNCHER_MODULES.get(program.text or "") if is_module and program is not None else None
    if kind is None and not is_module and program is not None:
        kind = CONSOLE_SCRIPTS.get(posixpath.basename(program.text or ""))
    if kind == "deepspeed":
        return deepspeed_call(command, index + 1 + skip)
    if kind == "accelerate":
        return accelerate_call(command, index + 1 + skip)
    if kind is not None:
        return torchrun_call(command, index + 1 + skip, kind)
    verl = is_module and program is not None and is_verl_main(program.text, command.words[index + 1 :])
    if verl and program is not None:  # Ray workers the driver places, with the environment it gives them
        command = with_worker_env(command, program)
    skyrl = is_module and program is not None and is_skyrl_main(program.text, command.words[index + 1 :])
    if skyrl and program is not None and skyrl_megatron(program.text, command.words[index + 1 :]):
        command = with_worker_env(command, program, SKYRL_WORKER_ENV)
    call = LauncherCall("python", command, program=program, program_index=index, is_module=is_module)
    if code:
        call.options["-c"] = []
    if verl and program is not None:
        call.nnodes, call.nproc_per_node, call.world_size = verl_sizes(command.words[index + 1 :], program.site)
    elif skyrl and program is not None:  # SkyRL's driver places the policy's Ray workers
        args = command.words[index + 1 :]
        call.nnodes, call.nproc_per_node, call.world_size = skyrl_sizes(program.text, args, program.site)
    skipped = [w for w in command.words[: max(index, 0)][-1:] if not w.known and program is not None and not is_module]
    if (
        skipped and program is not None and skipped[0] is not program
    ):  # python_program stepped over it to the script after it
        call.problems.append(
            Problem(
                "unresolved",
                f"`{skipped[0].display()}` between python and {program.display()} is unknown: read as "
                "interpreter options (or nothing, when it is empty)",
                skipped[0].site,
            )
        )
    return call


def parse_launcher(command: Command, start: int = 0) -> LauncherCall | None:
    """The launcher at command.words[start:] after wrappers, or a python program; None for anything else."""
    words = command.words
    unwrapped = unwrap_words(words, start, _starts_launcher)
    call = _launcher_at(command, unwrapped.index, unwrapped.runs_python)
    if (
        call is None
        and unwrapped.index + 1 < len(words)
        and (not words[unwrapped.index].known or (words[unwrapped.index].text or "").endswith(".sh"))
        and (words[unwrapped.index + 1].text or "").endswith(".py")
    ):
        # `$LAUNCHER pretrain_gpt.py ...`, `/scratch/.../launch.sh pretrain_gpt.py ...`: a python script started by
        # something plint cannot know, or by a script it does not follow (one in the tree it runs instead)
        call = LauncherCall(
            "python",
            command,
            program=words[unwrapped.index + 1],
            program_index=unwrapped.index + 1,
            wrapped_by=[words[unwrapped.index]],
        )
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
            what_it_is = (
                "a script plint does not follow: read as a wrapper that runs the command after it (what "
                "such a script usually does: set per-rank variables, then run its arguments)"
            )
        else:  # `launch python3 train.py` after `source <(curl ...)`
            what_it_is = (
                "a command plint does not know (no function or program of that name is read; a file it "
                "could not read may define it): read as a wrapper that runs the command after it"
            )
        call.problems.append(Problem("unresolved", f"`{w.display()}` before {what.strip()} is {what_it_is}", w.site))
    if not unknown_words:
        return call
    shown = " ".join(f"`{w.display()}`" for w in unknown_words)
    why = "; ".join(dict.fromkeys(p.reason for w in unknown_words for p in w.unknowns if p.reason))
    if call.launcher == "python":
        effect = (
            "it may be a launcher (srun, mpirun, torchrun) that decides how many processes run, so the node "
            "and process counts are unknown"
        )
    else:
        effect = f"read as a wrapper in front of {call.launcher}, whose own options give the process counts"
    call.problems.append(
        Problem(
            "unresolved",
            f"{shown} before {what.strip()} is unknown" + (f" ({why})" if why else "") + f": {effect}",
            unknown_words[0].site,
        )
    )
    return call


def _launcher_at(command: Command, i: int, runs_python: str | None = None) -> LauncherCall | None:
    words = command.words
    if i >= len(words):
        return None
    if runs_python is not None:  # `uv run -m torch.distributed.run ...`, `uv run train.py`
        dropped = runs_python == "module, -- dropped" and i + 1 < len(words) and words[i + 1].text == "--"
        return _python(command, words[i], i, runs_python != "script", skip=1 if dropped else 0)
    name = _base(words[i])
    parse = LAUNCHERS.get(name) if name is not None else None
    if parse is not None:
        return parse(command, i + 1)
    if name == "accelerate" and i + 1 < len(words) and words[i + 1].text == "launch":
        return accelerate_call(command, i + 2)
    if name == "ray" and is_ray_job_submit(words, i):
        return ray_job_call(command, i + 3)
    if name in ("swift", "megatron") and words[i].known:
        from plint.reading.sources.launch_swift import swift_call

        return swift_call(command, i + 1, name)
    if is_python(name) or _interpreter_of_launcher(words, i):
        program, index, is_module, code = _python_program(words, i + 1)
        return _python(command, program, index, is_module, code)
    if name == NEOX_PROGRAM and words[i].known:  # `./deepy.py train.py ...`: run by its #! line, a python script
        return LauncherCall("python", command, program=words[i], program_index=i)
    return None


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
        if inner.program is not None and _base(inner.program) in SHELLS and inner.flag("--no-python", "--no_python"):
            # `deepspeed --no_python bash -c "$CMD"`: each rank execs the shell as given (DeepSpeed's
            # launcher/launch.py main: no interpreter is prepended under --no_python); the command the shell
            # runs is read on its own, with this launcher as its parent
            return False
        return inner.program is not None and not _data_tool(inner.program)
    if inner.launcher in SCHEDULERS:
        # a script run directly (`srun ./train.py`) is a launch; a shell or a binary is not: the commands a
        # shell runs are read on their own, with this one as their parent
        return inner.program is not None and (_base(inner.program) or "").endswith(".py")
    program = inner.program
    if program is None:
        return False
    if len(calls) > 1:
        return not _data_tool(program)  # python started by srun or mpirun, unless it prepares data
    args = [w.text or "" for w in inner.command.words[inner.program_index + 1 :]]
    options = {a.split("=")[0] for a in args}
    flagged = bool(options & TRAINING_FLAGS)
    if not program.known:
        return flagged
    if not inner.is_module and is_chatlearn(program.text, inner.command.words[inner.program_index + 1 :]):
        return True  # ChatLearn's entry point with its template: read by plint.reading.sources.chatlearn
    if not inner.is_module and is_roll_pipeline(program.text, inner.command.words[inner.program_index + 1 :]):
        return True  # ROLL's start script with its config: read by plint.reading.sources.roll
    if not inner.is_module and is_nemo_rl(program.text, inner.command.words[inner.program_index + 1 :]):
        return True  # NeMo RL's driver with its config: read by plint.reading.sources.nemo_rl
    if inner.is_module and is_verl_main(program.text, inner.command.words[inner.program_index + 1 :]):
        # verl's trainer: a Megatron actor is what plint reads
        return verl_megatron_actor(inner.command.words[inner.program_index + 1 :])
    if inner.is_module and is_skyrl_main(program.text, inner.command.words[inner.program_index + 1 :]):
        # SkyRL's trainers: a policy on its Megatron backend is what plint reads
        return skyrl_megatron(program.text, inner.command.words[inner.program_index + 1 :])
    name = (program.text or "").rsplit(".", 1)[-1] if inner.is_module else posixpath.basename(program.text or "")
    if inner.is_module and (program.text or "").split(".")[0] in ("pip", "venv", "ensurepip", "pytest", "json"):
        return False
    if name.startswith(TRAINING_NAMES):
        return True
    # one process started by no launcher, a script not named for training: Megatron's model and parallel flags
    # alone are what its checkpoint tools take too (tools/merge_mp_partitions.py, checkpoint converters); a
    # training run says how long it trains or that DeepSpeed drives it
    return flagged and bool(options & (TRAINING_LENGTH_FLAGS | DRIVER_FLAGS))


# Megatron-LM's and NeMo's data preparation tools (Megatron-LM tools/preprocess_data.py, tools/merge_datasets.py;
# NeMo scripts/nlp_language_modeling/preprocess_data_for_megatron.py): run under srun or mpirun to tokenize a
# corpus in parallel, they train nothing; nor does a checkpoint converter (Megatron-LM tools/checkpoint/convert.py,
# the convert_*_checkpoint.py scripts of Megatron-LM and transformers) given to srun for a node of its own, or to
# torchrun over the model's ranks (Megatron-LM examples/post_training/modelopt/convert_model.py and export.py), nor
# an inference script under torchrun (ms-swift's swift/cli/infer.py, `swift infer`)
DATA_TOOL_NAMES = ("preprocess_data", "merge_datasets", "convert", "export", "infer")


# a checkpoint converter between formats, by its name: Pai-Megatron-Patch's hf2mcore.py, deepspeed_to_hf_llama.py
_CHECKPOINT_FORMATS = r"(?:hf|huggingface|megatron|mcore|mg|ds|deepspeed|dcp|universal)"
CONVERTER_NAME = re.compile(rf"{_CHECKPOINT_FORMATS}(?:2|_to_){_CHECKPOINT_FORMATS}(?:_|\.|$)", re.IGNORECASE)


def _data_tool(program: Word) -> bool:
    """A data tool or a checkpoint converter, by its file name (known after the last unknown part of its path:
    `$repo/scripts/deepspeed_to_hf_llama.py`)."""
    tail = program.known_suffix()
    if not program.known and "/" not in tail:
        return False
    name = posixpath.basename(tail)
    tool = name.startswith(DATA_TOOL_NAMES) or CONVERTER_NAME.search(name) is not None
    return tool and not name.startswith(TRAINING_NAMES)


def _written(word: Word) -> tuple:
    """A word's text and where each of its pieces was written."""
    spans = tuple((p.span.path, p.span.start, p.span.end) if p.span is not None else None for p in word.pieces)
    return word.text, spans


def same_program(a: LaunchChain, b: LaunchChain) -> bool:
    """Whether two launches run one program with one argument list, every word written at the same place,
    under the same launchers and counts; only what wraps them differs. `case $LOCAL_RANK in 0) numactl
    --cpunodebind=0 $APP ;; 1) numactl --cpunodebind=1 $APP ;; esac` in a per-rank script: each rank runs
    one arm, and the arms together are one job, not one launch each."""
    if a.entrypoint is None or b.entrypoint is None or a.command is None or b.command is None:
        return False
    if not sibling_arms(a.command.conditions, b.command.conditions):
        return False  # the same launch run twice in a row is two launches
    if [c.launcher for c in a.calls] != [c.launcher for c in b.calls]:
        return False
    counts = ((a.nnodes, b.nnodes), (a.workers_per_node, b.workers_per_node), (a.world_size, b.world_size))
    if any(x.value != y.value or x.known != y.known for x, y in counts):
        return False
    words_a, words_b = [a.entrypoint, *a.trainer_args], [b.entrypoint, *b.trainer_args]
    return len(words_a) == len(words_b) and all(_written(x) == _written(y) for x, y in zip(words_a, words_b))


def _runs_a_followed_script(
    call: LauncherCall, command: Command, read_file: Callable[[str], SourceFile | None]
) -> bool:
    """`srun ./entry.sh pretrain_gpt.py ...` where entry.sh is in the tree: the shell ran it, and its own command
    (`exec python "$@"`) is the launch; only a script plint cannot read is taken as a wrapper of the .py after it."""
    wrapper = command.words[call.program_index - 1] if call.launcher == "python" and call.program_index > 0 else None
    return (
        wrapper is not None
        and wrapper in call.wrapped_by
        and wrapper.known
        and (wrapper.text or "").endswith(".sh")
        and read_file(wrapper.text or "") is not None
    )


def find_launches(
    result: ShellResult,
    job,
    read_file: Callable[[str], SourceFile | None],
    read_config: Callable[[str], tuple[SourceFile | None, str | None]] | None = None,
    why_unread: Callable[[str], Unread | None] | None = None,
    at_command: Callable[[Command], None] | None = None,
) -> list[LaunchChain]:
    """One chain per training launch, in execution order. `read_config` reads a launcher's config file
    (accelerate's --config_file, GPT-NeoX's YAML) where the script is run from too, with a note when that is a
    guess; `why_unread` says why a named file that is there is not read (outside the checked tree, too large,
    not a regular file), else None; `at_command(command)` is told which command's files the readers should see
    (the files the script had written when it ran)."""
    chains: list[LaunchChain] = []
    configs = read_config or (lambda name: (read_file(name), None))
    why = why_unread or (lambda name: None)
    for command in result.commands:
        own = _chain_calls(command)
        if not own or _runs_a_followed_script(own[-1], command, read_file):
            continue
        calls = _parent_calls(command) + own
        if at_command is not None:
            at_command(command)
        neox = None
        if is_neox(calls[-1]):  # deepy.py runs DeepSpeed's runner with the options its YAML configs give
            neox = read_neox(calls[-1], configs, why)
            calls = calls[:-1] + [neox.runner]
        elif not _is_launch(calls):
            continue
        problems = [p for c in calls for p in c.problems] + (neox.problems if neox is not None else [])
        for c in calls:
            if c.launcher == "deepspeed":
                read_deepspeed_resources(c, read_file, problems, result, why_unread, configs)
            elif c.launcher == "srun":
                read_srun_step(c, job)
            elif c.launcher == "accelerate":
                read_accelerate_config(c, configs, why, problems)
            elif c.launcher == "mpirun":
                hostfile_slots(c, read_named_hostfile(c, configs, result, why_unread))
        nodes, per, world, launcher = _resolve(calls)
        inner = calls[-1]
        # the words of the command the call reads: a tool's own (`swift sft` runs torchrun) is not the script's
        args = inner.command.words[inner.program_index + 1 :] if inner.program_index >= 0 else []
        node_rank = next((c.node_rank for c in reversed(calls) if c.node_rank is not None), None)
        master = next((c.master_addr for c in reversed(calls) if c.master_addr is not None), None)
        chains.append(
            LaunchChain(
                calls,
                launcher,
                inner.program,
                list(args),
                nodes,
                per,
                world,
                node_rank,
                master,
                problems,
                inner.command,  # the command as its launcher reads it (`ray job submit` adds its job's variables)
                neox_facts=neox.facts if neox is not None else None,
            )
        )
    return chains


def _resolve(calls: list[LauncherCall]) -> tuple[Value, Value, Value, str | None]:
    """(nnodes, workers per node, world size, DESIGN's `launcher`)."""
    spawners = [c for c in calls if c.launcher in SPAWNERS]
    schedulers = [c for c in calls if c.launcher in SCHEDULERS]
    if spawners:
        s = spawners[-1]
        if s.launcher == "accelerate":
            return accelerate_sizes(s) + ("accelerate",)
        return s.nnodes, s.nproc_per_node, s.world_size, s.launcher  # type: ignore[return-value]
    if schedulers:
        s = schedulers[-1]
        if s.launcher in ("mpirun", "aprun", "jsrun"):
            return mpirun_sizes(s) + (s.launcher,)
        if s.launcher == "bcprun":
            return bcprun_sizes(s) + ("bcprun",)
        return s.nodes, s.tasks_per_node, s.tasks, "srun"  # type: ignore[return-value]
    if calls[-1].world_size is not None:  # a driver that places its own workers (verl's trainer)
        return calls[-1].nnodes, calls[-1].nproc_per_node, calls[-1].world_size, None  # type: ignore[return-value]
    site = calls[-1].command.words[0].site if calls[-1].command.words else None
    unknown = [w for c in calls for w in c.wrapped_by]
    if unknown:  # `${SRUN_EXEC} python3 train.py`: the unknown word may be the launcher
        note = (
            f"`{unknown[0].display()}` before the program is unknown and may be a launcher that starts several "
            "processes"
        )
        return (
            unresolved(note, unknown[0].site),
            unresolved(note, unknown[0].site),
            unresolved(note, unknown[0].site),
            None,
        )
    one = "a single process: the program is started without a launcher"
    return derived(1, one, site), derived(1, one, site), derived(1, one, site), None
