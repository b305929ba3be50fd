"""Read one file into launches and layouts: the parse -> Launch -> Layout part of the data flow.

Shell files go through the static evaluator (seeded with the Slurm variables its #SBATCH lines imply
and with --env), then the launcher, trainer and DeepSpeed readers; a DeepSpeed JSON given alone is
read for its own sake (it has no launch, so no layout).
"""

from __future__ import annotations

import os
from plint.record import field, record

from plint.layout import Layout
from plint.normalise import Launch, build_layout
from plint.shell.model import MappedText, Piece, Problem, ShellResult, Var, Word
from plint.source import SourceFile, display_path, normal_path, path_is_file, path_suffix, read_bytes
from plint.values import Value
TYPE_CHECKING = False  # typing is imported by type checkers only: it costs start-up time
if TYPE_CHECKING:
    from pathlib import Path

SHELL_SUFFIXES = {".sh", ".bash", ".slurm", ".sbatch", ".zsh", ""}
MAX_FILE_BYTES = 4 * 1024 * 1024


@record
class FileReading:
    path: str
    kind: str  # "shell" | "json"
    source: SourceFile | None = None
    shell: ShellResult | None = None
    launches: list[Launch] = field(default_factory=list)
    layouts: list[Layout] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    unreadable: str | None = None  # why the file could not be read at all (PL001)
    ds_config: object = None  # a DeepSpeed JSON read on its own


def _load(path: str, display: str) -> tuple[SourceFile | None, str | None]:
    try:
        size = os.stat(path).st_size
        if size > MAX_FILE_BYTES:
            return None, f"file is too large to be a launch file ({size} bytes)"
        raw = read_bytes(path)
    except OSError as exc:
        return None, f"cannot read file: {exc.strerror or exc}"
    if b"\x00" in raw[:8192]:
        return None, "binary file (contains NUL bytes)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    return SourceFile(display, text), None


def file_kind(path: str | Path) -> str:
    return "json" if path_suffix(path).lower() == ".json" else "shell"


def env_vars(env: dict[str, str]) -> dict[str, Var]:
    """--env NAME=VALUE as exported shell variables of origin "env"."""
    return {name: Var(name, (Piece(value, None, "env"),), exported=True)
            for name, value in env.items() if not name.isdigit()}


def positional_words(env: dict[str, str]) -> list[Word] | None:
    """--env 1=VALUE 2=VALUE seeds the script's positional parameters."""
    numbered = {int(k): v for k, v in env.items() if k.isdigit() and int(k) > 0}
    if not numbered:
        return None
    return [Word((Piece(numbered.get(i, ""), None, "env"),)) for i in range(1, max(numbered) + 1)]


class FileLookup:
    """Files a launch names, looked up the way the script would see them: virtual first, then disk."""

    def __init__(self, result: ShellResult | None, base: str | Path):
        self.result, self.base = result, base
        self.cache: dict[str, SourceFile | None] = {}

    def _resolve(self, name: str) -> str:
        path = name if os.path.isabs(name) else os.path.join(os.path.abspath(str(self.base)), name)
        return os.path.normpath(path)

    def mapped(self, name: str) -> tuple[str, MappedText | None]:
        resolved = self._resolve(name)
        if self.result is not None:
            vf = self.result.virtual_files.get(resolved) or self.result.virtual_files.get(name)
            if vf is not None:
                return resolved, vf.content
        source = self.source(name)
        return resolved, MappedText.from_source(source) if source is not None else None

    def source(self, name: str) -> SourceFile | None:
        resolved = self._resolve(name)
        if resolved in self.cache:
            return self.cache[resolved]
        found: SourceFile | None = None
        if self.result is not None and resolved in self.result.virtual_files:
            vf = self.result.virtual_files[resolved]
            found = SourceFile(_display(vf.path), vf.content.render())
        elif path_is_file(resolved):
            found, _ = _load(resolved, _display(resolved))
        self.cache[resolved] = found
        return found


def _display(path: str) -> str:
    """Paths shown relative to the working directory when they lie under it."""
    return display_path(path)


def read_path(path: str | Path, env: dict[str, str] | None = None, gpu: str | None = None,
              assume: dict[str, str] | None = None, releases: dict[str, str] | None = None) -> FileReading:
    path = normal_path(path)  # str(Path(path)): a string from here on
    env = env or {}
    display = _display(path)
    kind = file_kind(path)
    source, why = _load(path, display)
    reading = FileReading(display, kind, source)
    if source is None:
        reading.unreadable = why
        return reading
    if kind == "json":
        _read_json_alone(reading, source)
        return reading
    _read_shell(reading, source, path, env, gpu, assume or {}, releases or {})
    return reading


def _read_json_alone(reading: FileReading, source: SourceFile) -> None:
    from plint.sources.deepspeed_config import read_deepspeed_config

    cfg = read_deepspeed_config(MappedText.from_source(source), source.path)
    reading.ds_config = cfg
    problems = list(getattr(cfg.document, "problems", []))
    if problems and _is_template(source, problems[0]):
        return  # a `sed` template (`"stage": ZERO_STAGE`): invalid JSON by design until a script fills it
    reading.problems.extend(problems)


def _is_template(source: SourceFile, problem: Problem) -> bool:
    """The JSON stops at an ALL_CAPS placeholder where a value belongs."""
    import re

    span = problem.span
    if span is None:
        return False
    rest = source.data[span.start:span.start + 64].decode("utf-8", "replace")
    return re.match(r"[A-Z][A-Z0-9_]{2,}\b", rest) is not None


def _read_shell(reading: FileReading, source: SourceFile, path: str, env: dict[str, str],
                gpu: str | None, assume: dict[str, str], releases: dict[str, str]) -> None:
    from plint.bounds import MAX_LAUNCHES
    from plint.shell.evaluator import EvalOptions, evaluate
    from plint.sources.launchers import find_launches

    job = _slurm_job(source)
    seeded = _slurm_env(job)
    seeded.update(env_vars(env))  # --env wins over what #SBATCH implies: the user said so
    for name, value in assume.items():  # an assumed variable the script never sets reads as seeded
        seeded.setdefault(name, Var(name, (Piece(value, None, "assumed"),), exported=True))

    def child_env(command, child: SourceFile) -> dict[str, Var]:
        from plint.sources.slurm import apply_options

        child_job = apply_options(_slurm_job(child), command.words[1:])
        return _slurm_env(child_job)

    options = EvalOptions(env=seeded, positional=positional_words(env), child_env=child_env, assume=assume)
    result = evaluate(source, options)
    reading.shell = result
    reading.problems.extend(result.problems)
    lookup = FileLookup(result, os.path.dirname(path) or ".")  # Path(path).parent
    chains = find_launches(result, job, lookup.source)
    if len(chains) > MAX_LAUNCHES:  # a launch line repeated a thousand times: a bounded report
        first = chains[MAX_LAUNCHES].calls[-1].command.site if chains[MAX_LAUNCHES].calls else None
        reading.problems.append(Problem("unresolved", f"{len(chains) - MAX_LAUNCHES} more launches in this file "
                                        f"are not read (plint reads at most {MAX_LAUNCHES} per file)", first))
        chains = chains[:MAX_LAUNCHES]
    for chain in chains:
        launch = _launch(chain, job, lookup, gpu, releases)
        reading.launches.append(launch)
        reading.problems.extend(getattr(chain, "problems", []))
        layout = build_layout(launch)
        layout.extras["release"] = launch.release
        reading.problems.extend(layout.extras.pop("problems", []))
        reading.layouts.append(layout)


def _slurm_job(source: SourceFile):
    """The job the script's #SBATCH (or #SLURM) directives ask for; None without any, and then the
    Slurm reader is not even imported (most launch scripts are not batch scripts)."""
    if b"#SBATCH" not in source.data and b"#SLURM" not in source.data:
        return None
    from plint.sources.slurm import read_directives

    return read_directives(source)


def _slurm_env(job) -> dict[str, Var]:
    """The SLURM_* variables a job's directives imply inside it."""
    if job is None:
        return {}
    from plint.sources.slurm import implied_env

    return implied_env(job)


def _launch(chain, job, lookup: FileLookup, gpu: str | None, releases: dict[str, str]) -> Launch:
    from plint.catalog.flags import default_release, load_flag_catalog
    from plint.sources.megatron import megatron_facts, parse_trainer_args
    from plint.sources.trainer import detect_trainer, fork_release

    trainer = detect_trainer(chain.entrypoint, chain.launcher, chain.trainer_args)
    launch = Launch(chain, trainer, slurm=job, gpu_override=gpu)
    flavour = trainer.value
    if flavour in ("megatron", "megatron-deepspeed"):
        named = _named_release(releases.get("megatron"), flavour)
        if named is None and flavour == "megatron-deepspeed":
            fork = fork_release(chain.entrypoint, chain.trainer_args)
            named = fork.value if fork is not None else None
        catalog = load_flag_catalog(named or default_release(flavour))
        launch.release = (catalog.release, named is None)  # (release, assumed?)
        args = parse_trainer_args(chain.trainer_args, catalog)
        launch.trainer_args = args
        launch.facts = megatron_facts(args, catalog, flavour)
    else:
        from plint.sources.hf import hf_facts

        launch.facts = hf_facts(chain.trainer_args)
    config_path = launch.facts.get("deepspeed.config_path")
    if config_path is not None:
        launch.ds_config = _ds_config(config_path, lookup, launch)
    return launch


def _named_release(named: str | None, flavour: str) -> str | None:
    """The configured release when it fits the trainer: a Megatron-LM release for Megatron-LM, a fork
    name for Megatron-DeepSpeed (a Megatron-LM release says nothing about which fork runs)."""
    from plint.catalog.flags import release_info

    info = release_info(named) if named else None
    return named if info is not None and info["flavour"] == flavour else None


def _ds_config(config_path: Value, lookup: FileLookup, launch: Launch):
    from plint.sources.deepspeed_config import read_deepspeed_config

    word = launch.facts.get("deepspeed.config_word")
    if not config_path.known and word is not None and lookup.result is not None:
        # a path with an unknown part (`$DIR/ds.json`) still matches the file the script wrote to it
        vf = lookup.result.virtual_files.get(word.value)
        if vf is not None:
            return read_deepspeed_config(vf.content, word.value)
    if not config_path.known:
        launch.facts["deepspeed.config"] = Value(None, config_path.span, "unresolved",
                                                 f"DeepSpeed config path: {config_path.note}")
        return None
    resolved, text = lookup.mapped(str(config_path.value))
    if text is None:
        launch.facts["deepspeed.config"] = Value(
            None, config_path.span, "unresolved",
            f"the DeepSpeed config {config_path.value} is neither in the repository nor written by the script")
        return None
    return read_deepspeed_config(text, _display(resolved))
