"""`ray job submit [OPTIONS] -- python TRAINER ARGS`: Ray's job CLI runs the entrypoint after `--` once, as the job's
driver, on a cluster started beforehand (`ray start --head --num-gpus N`); the driver then places the training
processes itself, as Ray actors (ray/dashboard/modules/job/cli.py, `submit`: the entrypoint is the command's
remaining words).

The trainers that are run this way say how many in their own arguments: slime's train.py and OpenRLHF's
train_ppo_ray place the actor model's ranks on --actor-num-nodes (OpenRLHF: --actor_num_nodes) nodes of
--actor-num-gpus-per-node GPUs each (THUDM/slime slime/utils/arguments.py; OpenRLHF openrlhf/cli/train_ppo_ray.py),
and the training layout is that actor's. Without them the count is the trainer's own and unknown here. The
variables of `--runtime-env-json`'s "env_vars" are set in the driver's and the actors' environment.
"""

from __future__ import annotations

import json

from plint.reading.shell.model import Command, Piece, Var, Word
from plint.reading.sources.launch_calls import LauncherCall, is_python, product_of, with_environment
from plint.reading.sources.verl import is_verl_main, verl_sizes, with_worker_env
from plint.reading.sources.wrappers import base, python_program
from plint.values import Value, from_word, parse_int, unresolved

MAX_RUNTIME_ENV_CHARS = 65536  # a runtime-env JSON longer than this is not read
HOLE = "\x00"  # stands for an unknown part of the JSON's text
# the trainer's options that size its actor (the training ranks), dashed, underscored and (OpenRLHF from v0.10.4,
# openrlhf/cli/train_ppo_ray.py) dotted
ACTOR_NODES = ("--actor-num-nodes", "--actor_num_nodes", "--actor.num_nodes")
ACTOR_GPUS_PER_NODE = ("--actor-num-gpus-per-node", "--actor_num_gpus_per_node", "--actor.num_gpus_per_node")


def is_ray_job_submit(words: list[Word], i: int) -> bool:
    return [w.text for w in words[i + 1 : i + 3]] == ["job", "submit"]


def ray_job_call(command: Command, start: int) -> LauncherCall | None:
    """The job's driver after `--`, when it is a python program; None otherwise (nothing plint reads as training)."""
    words = command.words
    dash = next((k for k in range(start, len(words)) if words[k].text == "--"), None)
    if dash is None or dash + 1 >= len(words) or not is_python(base(words[dash + 1])):
        return None
    program, index, is_module, code = python_program(words, dash + 2)
    if program is None or code:
        return None
    args = words[index + 1 :]
    site = words[start - 3].site
    with_env = _with_runtime_env(command, start)
    if is_module and is_verl_main(program.text, args):  # verl's trainer places its workers as it does under python
        call = LauncherCall("ray", with_worker_env(with_env, program), program=program, program_index=index)
        call.is_module = True
        call.nnodes, call.nproc_per_node, call.world_size = verl_sizes(args, site)
        return call
    call = LauncherCall("ray", with_env, program=program, program_index=index, is_module=is_module)
    nodes = _last_value(args, ACTOR_NODES) or unresolved(
        "the Ray job's trainer places its own processes, and no --actor-num-nodes says on how many nodes", site
    )
    per = _last_value(args, ACTOR_GPUS_PER_NODE) or unresolved(
        "the Ray job's trainer places its own processes, and no --actor-num-gpus-per-node says how many a node",
        site,
    )
    call.nnodes, call.nproc_per_node = nodes, per
    call.world_size = product_of(nodes, per, "world = --actor-num-nodes x --actor-num-gpus-per-node: the actor's ranks")
    return call


def _with_runtime_env(command: Command, start: int) -> Command:
    """The command with the variables its `--runtime-env-json` gives the job (`{"env_vars": {"NAME": "V"}}`: Ray sets
    them for the driver and every actor it starts) as assignments in front of it, each placed at the JSON's word."""
    words = command.words
    for k in range(start, len(words)):
        name, eq, _ = words[k].known_prefix().partition("=")
        if words[k].text == "--":
            break
        if name != "--runtime-env-json":
            continue
        word = words[k].after(len(name) + 1) if eq else words[k + 1] if k + 1 < len(words) else None
        variables = _env_vars(_with_holes(word) if word is not None else None)
        if word is None or not variables:
            return command
        given = {
            key: Var(key, (_piece(value, word),), exported=True, span=word.value_span)
            for key, value in variables.items()
        }
        return with_environment(command, given)
    return command


def _with_holes(word: Word) -> str:
    """The word's text with HOLE for each unknown piece (`"NCCL_NVLS_ENABLE": "${HAS_NVLINK}"`)."""
    return "".join(p.text if p.known and p.text is not None else HOLE for p in word.pieces)


def _piece(value: str, word: Word) -> Piece:
    if HOLE in value:
        return Piece(None, word.value_span, "unresolved", reason="a runtime-env value the script computes at run time")
    return Piece(value, word.value_span, "derived")


def _env_vars(text: str | None) -> dict[str, str]:
    """runtime_env["env_vars"] of a runtime-env JSON, its string values only; {} when it is not one."""
    if text is None or len(text) > MAX_RUNTIME_ENV_CHARS:
        return {}
    try:
        runtime_env = json.loads(text, strict=False)  # strict=False: the HOLE control character inside strings
    except ValueError:
        return {}
    env = runtime_env.get("env_vars") if isinstance(runtime_env, dict) else None
    if not isinstance(env, dict):
        return {}
    return {k: v for k, v in env.items() if isinstance(k, str) and isinstance(v, str)}


def _last_value(args: list[Word], names: tuple[str, ...]) -> Value | None:
    """The value of the last of `names` given (argparse keeps the last), as `--name V` or `--name=V`."""
    found: Value | None = None
    for k, word in enumerate(args):
        name, eq, _ = (word.text or "").partition("=")
        if name not in names:
            continue
        value = word.after(len(name) + 1) if eq else args[k + 1] if k + 1 < len(args) else None
        if value is not None:
            found = from_word(value, parse_int, name)
    return found
