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
from typing import TYPE_CHECKING, Any

from plint.reading.shell.model import Piece, Problem, Word
from plint.reading.sources.neox_config import UNBUILT, NeoXConfig, merge_configs
from plint.reading.sources.neox_values import neox_facts
from plint.reading.sources.wrappers import base
from plint.record import field, record
from plint.reading.sources.yaml_config import plain, shown
from plint.source import SourceFile, parse_python
from plint.values import Value, derived

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
        if conf_dir is not None and conf_dir.text is None and conf_dir.under_unknown_folder() is not None:
            # `--conf_dir ${HOME}/llama-eus/leonardo/configs`: named as the evaluator renders such a path, for the
            # file the script wrote under it or the tail of it in the tree (file_lookup.FileLookup._under_unknown_folder)
            path = posixpath.join(conf_dir.display(), word.display())
        elif word.text is None or (conf_dir is not None and conf_dir.text is None):
            out.append((word, None))
            continue
        else:
            path = posixpath.join(conf_dir.text, word.text) if conf_dir is not None and conf_dir.text else word.text
        if not (path.endswith(".yml") or path.endswith(".json")):  # `125M` stands for `125M.yml`
            path += ".yml"
        out.append((word, path))
    return out


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
        if entry is None or entry.value is None or entry.value is UNBUILT:
            continue
        if key in _RUNNER_DEFAULTS and entry.value == _RUNNER_DEFAULTS[key]:
            continue
        if plain(entry.value) is None:  # a list or mapping (an alias may make it millions of nodes): not printed
            why = f"{key} in the config is {shown(entry.value)}"
            options["--" + key] = [Word((Piece(None, entry.span, "unresolved", reason=why, name=key),), entry.span)]
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
