"""Read one file into launches and layouts: the parse -> Launch -> Layout part of the data flow.

Shell files go through the static evaluator (seeded with the Slurm variables its #SBATCH lines imply
and with --env), then the launcher, trainer and DeepSpeed readers; a DeepSpeed JSON given alone is
read for its own sake (it has no launch, so no layout).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from plint.record import field, record

from plint.layout import Layout
from plint.reading.configs_alone import read_json_alone, read_yaml_alone, template_slots
from plint.reading.file_lookup import FileLookup, unknown_whole
from plint.reading.frameworks import bridge_launch, framework_launch, openrlhf_launch
from plint.reading.normalise import Launch, build_layout
from plint.reading.shell.model import MappedText, Piece, Problem, ShellResult, Var, Word
from plint.reading.loading import MAX_FILE_BYTES as MAX_FILE_BYTES  # where plint.checking.check reads it
from plint.reading.loading import load_checked
from plint.source import display_path, SourceFile, overlaid, read_bytes
from plint.root import OUTSIDE_NOTE, tree_root
from plint.values import Value, derived
from plint.bounds import MAX_LAUNCHES

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.reading.sources.deepspeed_config import DeepSpeedConfig
    from plint.reading.sources.launch_calls import LaunchChain

SHELL_SUFFIXES = {".sh", ".bash", ".slurm", ".sbatch", ".zsh", ""}


@record
class FileReading:
    path: str
    kind: str  # "shell" | "json" | "yaml" | "python" (named on the command line, never read: file_kind)
    source: SourceFile | None = None
    shell: ShellResult | None = None
    launches: list[Launch] = field(default_factory=list)
    layouts: list[Layout] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    unreadable: str | None = None  # why the file could not be read at all (PL001)
    ds_config: DeepSpeedConfig | None = None  # a DeepSpeed JSON read on its own
    root: object = None  # plint.root.Root: where this check read files (reports read back only there)
    # commands that plainly start training but yielded no launch (sources.unlaunched), for a file with none
    unused_launches: list = field(default_factory=list)
    # {package: (version, file)}: the releases the checked tree pins (requirement_pins), read where a DeepSpeed
    # config is judged
    pins: dict[str, tuple[str, str]] = field(default_factory=dict)


def file_kind(path: str | Path) -> str:
    """ "json", "yaml" (a GPT-NeoX config) or "shell" by the name; by what it holds for standard input without a
    name (`plint check -`) and a file whose suffix is neither JSON's nor a shell script's (FlagAI's Aquila2 keeps
    its DeepSpeed config as `ds_zero2.config`). "python" for a Python program (`.py`, or a `#!...python` first line): no launch file,
    and no shell script either (bash would reject its first `def f(x):`)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yml", ".yaml"):
        return "yaml"
    if suffix in (".py", ".pyw", ".pyi") or (
        str(path) != "-" and suffix not in (".sh", ".bash") and _python_program(path)
    ):
        return "python"
    if str(path) == "-":
        data = overlaid(path)
        if data is not None and _looks_like_json(data):
            return "json"
    elif suffix not in SHELL_SUFFIXES:
        try:
            data = overlaid(path) or read_bytes(path)
        except OSError:  # PL001 says why when the file is read
            return "shell"
        if _looks_like_json(data):
            return "json"
    return "shell"


def _python_program(path: str | Path) -> bool:
    """A file whose `#!` line runs Python (`#!/usr/bin/env python3`)."""
    try:
        head = (overlaid(path) or read_bytes(path))[:128]
    except OSError:  # PL001 says why when the file is read
        return False
    first = head.split(b"\n", 1)[0]
    return first.startswith(b"#!") and b"python" in first


def _looks_like_json(data: bytes) -> bool:
    """A JSON object (what a DeepSpeed config is): `{`, then a key or `}`. A shell script may open with a
    brace group, but its `{` is followed by a command (`{ echo`), never by `"` or `}`; `[` opens a test
    (`[ -f x ]`, `[[ ... ]]`) as often as an array, so it is read as shell."""
    text = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text[:1] == b"{" and text[1:].lstrip(b" \t\r\n")[:1] in (b'"', b"}")


def env_vars(env: dict[str, str]) -> dict[str, Var]:
    """--env NAME=VALUE as exported shell variables of origin "env"."""
    return {
        name: Var(name, (Piece(value, None, "env"),), exported=True)
        for name, value in env.items()
        if not name.isdigit()
    }


def positional_words(env: dict[str, str]) -> list[Word] | None:
    """--env 1=VALUE 2=VALUE seeds the script's positional parameters."""
    numbered = {int(k): v for k, v in env.items() if k.isdigit() and int(k) > 0}
    if not numbered:
        return None
    return [Word((Piece(numbered.get(i, ""), None, "env"),)) for i in range(1, max(numbered) + 1)]


def read_path(
    path: str | Path,
    env: dict[str, str] | None = None,
    gpu: str | None = None,
    assume: dict[str, str] | None = None,
    releases: dict[str, str] | None = None,
    trainer_source: str | None = None,
) -> FileReading:
    path = str(Path(path))  # a string from here on
    env = env or {}
    display = display_path(path)
    kind = file_kind(path)
    source, why = load_checked(path, display)
    reading = FileReading(display, kind, source)
    if source is None:
        reading.unreadable = why
        return reading
    if kind in ("json", "yaml"):
        alone = (read_json_alone if kind == "json" else read_yaml_alone)(source)
        reading.ds_config, reading.problems, reading.layouts = alone.ds_config, alone.problems, alone.layouts
    elif kind != "python":  # a training script is read through the launch that runs it (entry-point evidence)
        _read_shell(reading, source, path, env, gpu, assume or {}, releases or {}, trainer_source)
    if reading.ds_config is not None or any(layout.extras.ds_config is not None for layout in reading.layouts):
        from plint.reading.sources.requirement_pins import pinned_releases

        reading.pins = pinned_releases(tree_root(path))
    return reading


def _read_shell(
    reading: FileReading,
    source: SourceFile,
    path: str,
    env: dict[str, str],
    gpu: str | None,
    assume: dict[str, str],
    releases: dict[str, str],
    trainer_source: str | None = None,
) -> None:
    from plint.reading.shell.evaluator import EvalOptions, evaluate

    job, pbs, grid_engine, seeded, files = _job_environment(source, env, assume)
    if grid_engine is not None:
        reading.problems.extend(grid_engine.problems)

    options = EvalOptions(
        env=seeded,
        positional=positional_words(env),
        child_env=_child_env,
        child_files=_child_files,
        assume=assume,
        files=files,
    )
    result = evaluate(source, options)
    reading.shell = result
    reading.problems.extend(result.problems)
    if job is not None:  # a template slot among the #SBATCH options (`#SBATCH <SLURM OPTIONS> --nodes=128`)
        reading.problems.extend(p for p in job.problems if p.kind == "unresolved")
    base = os.path.dirname(path) or "."  # Path(path).parent
    chains = _launch_chains(source, options, result, job, base)
    # a reading one way through a branch that ran out of its share of the budget says so, once
    stopped = {
        p.message: p
        for chain, lookup in chains
        if lookup.result is not None and lookup.result is not result
        for p in lookup.result.problems
        if p.message.startswith("plint stopped evaluating")
    }
    reading.problems.extend(p for p in stopped.values() if p not in reading.problems)
    if len(chains) > MAX_LAUNCHES:  # a launch line repeated a thousand times: a bounded report
        extra = chains[MAX_LAUNCHES][0]
        first = extra.calls[-1].command.site if extra.calls else None
        reading.problems.append(
            Problem(
                "unresolved",
                f"{len(chains) - MAX_LAUNCHES} more launches in this file "
                f"are not read (plint reads at most {MAX_LAUNCHES} per file; repeats "
                "past that are not told apart)",
                first,
            )
        )
        chains = chains[:MAX_LAUNCHES]
    lookups: list[FileLookup] = []
    if not chains:
        from plint.reading.sources.unlaunched import unused_launches

        lookups.append(FileLookup(result, base))
        read = [lookups[0].source(p) for p in result.files_read]
        reading.unused_launches = unused_launches([source] + [f for f in read if f is not None], result)
    for chain, lookup in chains:
        if lookup not in lookups:
            lookups.append(lookup)
        lookup.at(chain.command)
        launch = _launch(chain, job, lookup, gpu, releases, path, trainer_source)
        launch.pbs = pbs is not None
        launch.lsf = _asks_lsf(source)
        launch.grid_engine = grid_engine is not None
        launch.other_scheduler = _OTHER_SCHEDULERS.search(source.data) is not None
        reading.launches.append(launch)
        reading.problems.extend(getattr(chain, "problems", []))
        for slot in _slots(chain):  # a launch's reading of a slot ($X is set from <...>) replaces the file's
            reading.problems = [p for p in reading.problems if not (p.kind == slot.kind and p.span == slot.span)]
            reading.problems.append(slot)
        layout = build_layout(launch)
        if lookup.result is not None and lookup.result.chosen:  # one way through a branch that chose it
            layout.conditions = tuple(dict.fromkeys(lookup.result.chosen + list(layout.conditions)))
        layout.extras.release = launch.release
        layout.extras.catalog = launch.catalog
        reading.problems.extend(layout.extras.problems)
        layout.extras.problems = []
        reading.layouts.append(layout)
    # a file outside the root that no layout value names as the reason it is unknown (an accelerate
    # config whose counts the command line gives anyway) is still said once
    notes = [v.note for layout in reading.layouts for v in layout.fields.values() if v.note]
    for lookup in lookups:
        reading.problems.extend(p for p in lookup.problems if p not in reading.problems)
        said = notes + [p.message for p in reading.problems]
        refused = [
            Problem(why.kind, why.say(name, "values from it are unknown"), None)
            for name, why in lookup.refused.items()
            if not any(name in note and (why.why in note or OUTSIDE_NOTE in note) for note in said)
        ]
        reading.problems.extend(p for p in refused if p not in reading.problems)


def _launch_chains(source: SourceFile, options, result: ShellResult, job, base: str) -> list[tuple]:
    """Each launch with the file lookup of the reading it came from: the script's own reading, and where
    an undecided branch hides a launch (`eval "$full_cmd"`, shell/choices.py) one reading per way
    through it, the way bash takes with no arguments first; a launch read twice is kept once."""
    from plint.reading.shell.evaluator import EvalOptions, evaluate

    out = _readings_launches(source, options, result, job, base)
    if result.argument_loops and not out:
        # run with no arguments the script stops before its launch (`[ -z "$MODEL" ] && exit 1` after an
        # option loop), in every way through its undecided branches: read it with the loop undecided, so
        # the launch is read and what the options set stays unresolved
        options = EvalOptions(
            env=options.env,
            positional=options.positional,
            child_env=options.child_env,
            child_files=options.child_files,
            assume=options.assume,
            no_arguments=False,
            files=options.files,
        )
        out = _readings_launches(source, options, evaluate(source, options), job, base)
    return out


def _readings_launches(source: SourceFile, options, result: ShellResult, job, base: str) -> list[tuple]:
    """The launches of one reading and, where an undecided branch hides a launch, of one reading per way
    through it (the way bash takes with no arguments first); a launch read twice is kept once (among the
    first MAX_LAUNCHES: the rest are only counted, so a launch called a thousand times stays cheap)."""
    from plint.reading.shell.choices import chosen_elsewhere, forced_readings, hidden_choices, same_launch, written_at
    from plint.reading.shell.evaluator import EvalOptions, evaluate
    from plint.reading.sources.launchers import find_launches, same_program

    readings = [result]
    hidden = hidden_choices(result)
    if hidden:

        def variant(**changes):
            fields = dict(
                env=options.env,
                positional=options.positional,
                child_env=options.child_env,
                child_files=options.child_files,
                assume=options.assume,
                no_arguments=options.no_arguments,
                files=options.files,
            )
            return EvalOptions(**{**fields, **changes})

        # the readings one per arm share one more reading's budget (a file is read at most twice over)
        count = len(forced_readings(hidden)) + 1
        steps, work = (max(500, options.max_steps // count), max(5000, options.max_work // count))
        alternatives = [variant(choices=forced, max_steps=steps, max_work=work) for forced in forced_readings(hidden)]
        if options.positional is None and all(c.on_arguments for c in hidden):
            # what bash does when run with no arguments
            alternatives.insert(0, variant(positional=[], max_steps=steps, max_work=work))
        readings = [evaluate(source, o) for o in alternatives] + readings
        if len(readings) > 1 and alternatives[0].positional == []:
            readings[0].chosen.append("the script is run with no arguments")
    out: list[tuple] = []
    by_place: dict = {}  # earlier readings' launches by where they are written: only those can be the same
    for one in readings:  # a launch an earlier reading read is left out; one reading's own launches all stay
        lookup = FileLookup(one, base)
        mine: list[LaunchChain] = []
        for chain in find_launches(one, job, lookup.source, lookup.config, lookup.unread, lookup.at):
            if len(out) + len(mine) >= MAX_LAUNCHES:  # past the bound, only counted (see _read_shell)
                mine.append(chain)
                continue
            if chain.command is not None:
                earlier = by_place.get(written_at(chain.command), ())
                if any(same_launch(c, chain.command) for c in earlier) or chosen_elsewhere(
                    chain.command, earlier, one.merged_from
                ):
                    continue
            if any(same_program(c, chain) for c in mine):
                continue  # the same program run from another arm of a per-rank dispatch
            mine.append(chain)
        out.extend((chain, lookup) for chain in mine)
        for chain in mine:
            if chain.command is not None:
                by_place.setdefault(written_at(chain.command), []).append(chain.command)
    return out


def _slots(chain) -> list[Problem]:
    """The template slots (`<PATH TO DATASET>`) a launch's commands hold, each an unfilled value."""
    from plint.reading.shell.placeholders import slot_problems

    commands = [call.command for call in chain.calls] + ([chain.command] if chain.command is not None else [])
    return slot_problems(w for c in commands for w in c.words)


def _slurm_job(source: SourceFile):
    """The job the script's #SBATCH (or #SLURM) directives ask for; None without any, and then the
    Slurm reader is not even imported (most launch scripts are not batch scripts)."""
    if b"#SBATCH" not in source.data and b"#SLURM" not in source.data:
        return None
    from plint.reading.sources.slurm import read_directives

    return read_directives(source)


# bsub reads the `#BSUB` lines of a batch script as its options (IBM Spectrum LSF, "Submit a job": bsub < script)
_BSUB = re.compile(rb"^[ \t]*#BSUB[ \t]", re.MULTILINE)


# directives of resource managers whose hosts plint does not know, or knows only for some requests: Fujitsu's PJM
# (`#PJM -L node=...`, Fugaku), Grid Engine (`#$ -l rt_F=2`, ABCI: sources/grid_engine.py reads what it can), Cobalt
# (`#COBALT -n 8`), Flux (`#flux: -N 2`) and Moab (`#MSUB -l nodes=2`)
_OTHER_SCHEDULERS = re.compile(rb"^[ \t]*#(PJM|\$|COBALT|flux:|MSUB)[ \t]", re.MULTILINE)


def _asks_lsf(source: SourceFile) -> bool:
    """Whether the script asks LSF for its job (a `#BSUB` directive)."""
    return _BSUB.search(source.data) is not None


def _child_env(command, submitter: str, child: SourceFile) -> dict[str, Var]:
    """The variables a job the script submits starts with: its scheduler's, from the job's directives under the
    submitting command's options, and those the command passes (sbatch --export, qsub -v)."""
    if submitter == "qsub":
        from plint.reading.sources.pbs import implied_env as pbs_env
        from plint.reading.sources.pbs import passed_variables, submitted_job

        return {**pbs_env(submitted_job(child, command.words[1:])), **passed_variables(command.words[1:])}
    from plint.reading.sources.slurm import apply_options, exported_variables

    child_job = apply_options(_slurm_job(child), command.words[1:])
    return {**exported_variables(command.words[1:]), **_slurm_env(child_job)}


def _child_files(command, submitter: str, child: SourceFile) -> dict[str, MappedText]:
    """The files a job the script submits with qsub reads: its node file."""
    if submitter != "qsub":
        return {}
    from plint.reading.sources.pbs import node_file, node_file_key, submitted_job

    nodes = node_file(submitted_job(child, command.words[1:]))
    return {node_file_key(): nodes} if nodes is not None else {}


def _pbs_job(source: SourceFile):
    """The PBS job the script's #PBS directives ask for, and the files it gives the script (its node file);
    (None, {}) without any directive, and then the PBS reader is not imported."""
    if b"#PBS" not in source.data:
        return None, {}
    from plint.reading.sources.pbs import node_file, node_file_key, read_directives

    job = read_directives(source)
    nodes = node_file(job)
    return job, ({node_file_key(): nodes} if nodes is not None else {})


def _job_environment(source: SourceFile, env: dict[str, str], assume: dict[str, str]):
    """The batch job the script's directives ask for (Slurm, PBS, Grid Engine) and the environment it starts
    with: what the directives imply, then --env, then --assume for a variable the script never sets; and the
    files the job gives it (PBS's node file)."""
    job = _slurm_job(source)
    seeded = _slurm_env(job)
    pbs, files = _pbs_job(source)
    if pbs is not None:
        from plint.reading.sources.pbs import implied_env as pbs_env

        seeded.update(pbs_env(pbs))
    grid_engine = _grid_engine_job(source)
    if grid_engine is not None:
        from plint.reading.sources.grid_engine import implied_env as grid_engine_env

        seeded.update(grid_engine_env(grid_engine))
    seeded.update(env_vars(env))  # --env wins over what #SBATCH implies: the user said so
    for name, value in assume.items():  # an assumed variable the script never sets reads as seeded
        seeded.setdefault(name, Var(name, (Piece(value, None, "assumed"),), exported=True))
    return job, pbs, grid_engine, seeded, files


def _grid_engine_job(source: SourceFile):
    """The Grid Engine job the script's `#$` lines ask for; None without any (the reader is not imported)."""
    if b"#$" not in source.data:
        return None
    from plint.reading.sources.grid_engine import read_directives

    return read_directives(source)


def _slurm_env(job) -> dict[str, Var]:
    """The SLURM_* variables a job's directives imply inside it."""
    if job is None:
        return {}
    from plint.reading.sources.slurm import implied_env

    return implied_env(job)


def _launch(
    chain,
    job,
    lookup: FileLookup,
    gpu: str | None,
    releases: dict[str, str],
    launch_file: str | None = None,
    trainer_source: str | None = None,
) -> Launch:
    from plint.catalog.in_force import catalog_in_force
    from plint.reading.sources.entry_script import absent_entry, read_entry_script
    from plint.reading.sources.megatron import megatron_facts, parse_trainer_args
    from plint.reading.sources.megatron_frameworks import apply_framework, framework_of
    from plint.reading.sources.megatron_yaml import yaml_cfg_words
    from plint.catalog.forks import fork_by_spelling
    from plint.reading.sources.openrlhf import is_openrlhf
    from plint.reading.sources.megatron_bridge import is_bridge_recipe_run
    from plint.reading.sources.trainer import detect_trainer, fork_release

    if chain.neox_facts is not None:
        return _neox_launch(chain, job, gpu)
    is_module = bool(chain.calls) and chain.calls[-1].is_module
    program = chain.entrypoint.text if chain.entrypoint is not None else None
    driven = framework_launch(chain, job, gpu, lookup, is_module)
    if driven is not None:
        return driven
    script = read_entry_script(program, is_module, launch_file, _launch_folder(chain)) if launch_file else None
    if launch_file and not is_module and is_bridge_recipe_run(program, chain.trainer_args):
        return bridge_launch(chain, job, gpu, script.path if script else None, launch_file)
    if is_openrlhf(program, is_module, script.path if script else None, script.modules if script else frozenset()):
        return openrlhf_launch(chain, job, gpu)
    trainer = detect_trainer(chain.entrypoint, chain.launcher, chain.trainer_args, is_module, script)
    launch = Launch(chain, trainer, slurm=job, gpu_override=gpu)
    flavour = trainer.value
    if flavour in ("megatron", "megatron-deepspeed"):
        named = _named_release(releases.get("megatron"), flavour)
        recognised = spelled_by = None
        if named is None and flavour == "megatron-deepspeed":
            fork = fork_release(chain.entrypoint, chain.trainer_args)
            recognised = fork.value if fork is not None else None
        elif named is None:
            spelled_by = fork_by_spelling({w.text for w in chain.trainer_args if w.text and w.text.startswith("--")})
        entry = chain.entrypoint.display() if chain.entrypoint is not None else None
        absent = absent_entry(program, is_module, script, launch_file) if launch_file else None
        in_force = catalog_in_force(
            flavour,
            launch_file or ".",
            entry,
            named,
            trainer_source,
            recognised=recognised,
            spelled_by=spelled_by,
            entry_absent=absent,
        )
        catalog = in_force.catalog
        launch.release = (catalog.release, in_force.assumed)  # (release, assumed?)
        launch.catalog = in_force
        framework = framework_of(script.megatron_module if script is not None else None)
        args = parse_trainer_args(chain.trainer_args, catalog, unknown_switches=framework is not None)
        from_yaml = yaml_cfg_words(args, catalog, lookup.config)
        if from_yaml is not None:  # --yaml-cfg: the YAML is the namespace, the command line is ignored
            args = parse_trainer_args(from_yaml.words, catalog)
        launch.trainer_args = args
        launch.facts = megatron_facts(args, catalog, flavour)
        apply_framework(framework, launch.facts, args)
        if from_yaml is not None:
            from_yaml.annotate(launch.facts)
    else:
        from plint.reading.sources.hf import hf_facts
        from plint.reading.sources.model_shape import model_facts
        from plint.reading.sources.swift_trainer import is_swift, swift_defaults, swift_facts

        swift = is_swift(program)
        launch.facts = hf_facts(chain.trainer_args, swift_defaults() if swift else None)
        if swift:
            swift_facts(launch.facts)
        _accelerate_settings(launch)
        if script is not None and script.hf_trainer:
            launch.facts["data_parallel"] = Value(True, None, "derived", f"{script.path} builds the HF Trainer")
        elif script is not None and script.torch_data_parallel:
            launch.facts["data_parallel"] = Value(
                True, None, "derived", f"{script.path} wraps its model in PyTorch's FSDP/DDP (data parallel)"
            )
        # the shape of the model it names (its config.json in the tree, [tool.plint] model, plint's catalog)
        launch.facts.update(model_facts(launch.facts.get("model.name"), launch_file))
        if script is not None and script.path is not None and launch_file is not None:
            _script_config(launch, script.path, launch_file)
    config_path = launch.facts.get("deepspeed.config_path")
    if config_path is not None:
        launch.ds_config = _ds_config(config_path, lookup, launch)
    return launch


def _launch_folder(chain) -> str | None:
    """The folder the launch runs in when a `cd` before it moved there ($PWD as the shell left it), else None."""
    from plint.reading.shell.fields import var_text

    pwd = chain.command.env.get("PWD") if chain.command is not None else None
    return var_text(pwd) if pwd is not None else None


def _neox_launch(chain, job, gpu: str | None) -> Launch:
    """A GPT-NeoX launch (plint.reading.sources.neox): Megatron-LM's model driven by DeepSpeed, its values all
    from the YAML configs deepy.py merges; no command-line flags for a flag catalog to judge."""
    deepy = chain.calls[-1].command.words[0] if chain.calls and chain.calls[-1].command.words else None
    trainer = derived(
        "megatron-deepspeed",
        "GPT-NeoX (deepy.py): a Megatron-LM fork run by DeepSpeed, configured by YAML files",
        deepy.value_span if deepy is not None else None,
    )
    launch = Launch(chain, trainer, slurm=job, gpu_override=gpu)
    launch.facts = dict(chain.neox_facts)
    return launch


def _accelerate_settings(launch: Launch) -> None:
    """What `accelerate launch` gives the script beyond the process counts (DeepSpeed, its config, precision,
    accumulation): the script's own flags win where both say."""
    from plint.reading.sources.launch_accelerate import accelerate_facts

    for call in launch.chain.calls:
        if call.launcher != "accelerate":
            continue
        for key, value in accelerate_facts(call).items():
            launch.facts.setdefault(key, value)
        enabled = launch.facts.get("deepspeed.enabled")
        if enabled is not None and enabled.value is True and launch.trainer.value == "unknown":
            launch.trainer = Value(
                "deepspeed", launch.trainer.span, "derived", f"{enabled.note}, and no Megatron entry point"
            )


def _script_config(launch: Launch, script: str, launch_file: str) -> None:
    """The DeepSpeed config the entry script builds in Python (when the command line names no JSON), and a
    PipelineModule it builds (plint.reading.sources.script_ds_config)."""
    from plint.reading.sources.script_ds_config import pipeline_module, script_ds_config

    root = tree_root(launch_file)
    path = os.path.join(root, script)
    pipe = pipeline_module(path, root)
    if pipe is not None:
        launch.facts["deepspeed.pipeline_module"] = pipe
    if launch.facts.get("deepspeed.config_path") is not None:
        _script_defaults(launch, path, root)
        return
    built = script_ds_config(path, root, launch.chain.trainer_args)
    if built is None:
        _script_defaults(launch, path, root)
        return
    for key, value in built.facts.items():  # what DeepSpeed runs is the config; the batch flags may agree
        if key in ("parallel.zero_stage", "precision", "deepspeed.config_path") or key.startswith("offload."):
            launch.facts[key] = value
        else:
            launch.facts.setdefault(key, value)
    launch.facts["deepspeed.script_config"] = Value(built.where, None, "derived", f"the config {built.where} receives")
    _script_defaults(launch, path, root)


def _script_defaults(launch: Launch, path: str, root: str) -> None:
    """Batch and sequence length the launch leaves to the entry script: the defaults it declares."""
    from plint.reading.sources.hf import SCRIPT_DEFAULT_FIELDS
    from plint.reading.sources.script_ds_config import script_defaults

    if launch.facts.get("arguments.incomplete") is not None:
        return  # an unknown part of the command line may set them
    defaults = None
    for name, key in SCRIPT_DEFAULT_FIELDS.items():
        if key in launch.facts:
            continue
        defaults = script_defaults(path, root) if defaults is None else defaults
        found = defaults.get(name)
        if found is not None and isinstance(found.value, int) and not isinstance(found.value, bool) and found.value > 0:
            launch.facts[key] = found


def _named_release(named: str | None, flavour: str) -> str | None:
    """The configured release when it fits the trainer: a Megatron-LM release for Megatron-LM, a fork
    name for Megatron-DeepSpeed (a Megatron-LM release says nothing about which fork runs)."""
    from plint.catalog.flags import release_info

    info = release_info(named) if named else None
    return named if info is not None and info["flavour"] == flavour else None


def _ds_config(config_path: Value, lookup: FileLookup, launch: Launch):
    from plint.reading.shell.template import mark_unfilled
    from plint.reading.sources.deepspeed_config import read_deepspeed_config

    word = launch.facts.get("deepspeed.config_word")
    if not config_path.known and word is not None and lookup.result is not None:
        # a path with an unknown part (`$DIR/ds.json`) still matches the file the script wrote to it
        vf = lookup.written().get(word.value)
        if vf is not None and unknown_whole(vf.content) is None:
            # the script wrote it: a template slot left in it stays unfilled
            return _readable(
                read_deepspeed_config(mark_unfilled(vf.content, word.value), word.value),
                None,
                launch,
                lookup,
                config_path,
            )
        if vf is not None:
            return _unread_config(
                launch, lookup, config_path, f"the DeepSpeed config {word.value}: {unknown_whole(vf.content)}"
            )
    if not config_path.known:  # said once (PL002): a named config is never lost without a word
        return _unread_config(
            launch,
            lookup,
            config_path,
            f"the DeepSpeed config path is unknown ({config_path.note}): its keys are unknown",
        )
    lookup.climbing.add(str(config_path.value))  # a DeepSpeed config is looked up where the script is run from too
    why = lookup.unread(str(config_path.value))
    if why is not None:
        said = why.say(f"the DeepSpeed config {config_path.value}", "its keys are unknown")
        return _unread_config(launch, lookup, config_path, said, why.kind)
    resolved, text = lookup.mapped(str(config_path.value))
    if text is None:
        return _unread_config(
            launch,
            lookup,
            config_path,
            f"the DeepSpeed config {config_path.value} is neither in the repository (beside the "
            "script or in a folder above it) nor written by the script: its keys are unknown",
        )
    written = lookup.result is not None and (resolved in lookup.written() or str(config_path.value) in lookup.written())
    if written:
        text = mark_unfilled(text, display_path(resolved))  # the script wrote it: a slot left in it stays unfilled
    cfg = _readable(
        read_deepspeed_config(text, display_path(resolved)),
        None if written else lookup.source(str(config_path.value)),
        launch,
        lookup,
        config_path,
    )
    note = lookup.assumed_note(str(config_path.value))
    return _assumed_config(cfg, note) if cfg is not None and note is not None else cfg


def _assumed_config(cfg, note: str):
    """The config's values as assumptions: the file was found where the script is assumed to run from."""
    for name, value in list(vars(cfg).items()):
        if isinstance(value, Value) and value.known:
            setattr(
                cfg,
                name,
                Value(value.value, value.span, "assumed", note if not value.note else f"{note}; {value.note}"),
            )
    return cfg


def _readable(cfg, source: SourceFile | None, launch: Launch, lookup: FileLookup, config_path: Value):
    """The config, or None when DeepSpeed could not load it (not JSON, not an object): then its error
    is the same PL001 as when the file is checked alone (one verdict per file), and no value of the
    launch comes from it (a broken config sets no ZeRO stage). A `sed` template on disk is not broken
    (see plint.reading.configs_alone.read_json_alone)."""
    broken = [p for p in cfg.problems if p.kind == "syntax"]
    too_big = [p for p in cfg.problems if p.kind == "unresolved"]  # past plint's budget: not read (PL002)
    if too_big or not broken or (source is not None and template_slots(source)):
        if not too_big:
            return cfg
        broken = too_big
    lookup.problems.extend(p for p in broken if p not in lookup.problems)
    why = "plint did not read its config" if too_big else "DeepSpeed cannot load its config"
    launch.facts["deepspeed.config"] = Value(None, config_path.span, "unresolved", f"{why}: {broken[0].message}")
    return None


def _unread_config(launch: Launch, lookup: FileLookup, config_path: Value, note: str, kind: str = "unresolved") -> None:
    """A DeepSpeed config plint does not read (outside the root or copied from there, too large, not a
    regular file; binary or not UTF-8, a Problem of kind "syntax" as broken JSON is): unresolved, and said
    once, at the word naming it, even where the command line gives every value the config would."""
    launch.facts["deepspeed.config"] = Value(None, config_path.span, "unresolved", note)
    if not any(p.message == note for p in lookup.problems):
        lookup.problems.append(Problem(kind, note, config_path.span))
    return None
