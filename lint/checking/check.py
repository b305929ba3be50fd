"""`plint check`: read each path, run the engine over what was read, collect the results."""

from __future__ import annotations

import os
from pathlib import Path

from plint.record import field, record

from plint.diagnostics import Diagnostic
from plint.layout import Layout
from plint.reading.read import MAX_FILE_BYTES, FileReading, file_kind, read_path
from plint.root import confined, root_for
from plint.checking.config import UsageError
from plint.reading.shell.placeholders import is_slot_message
from plint.source import display_path, probe, read_bytes

CHECKED_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch", ".json")


@record
class CheckOptions:
    env: dict[str, str] = field(default_factory=dict)
    assume: dict[str, str] = field(default_factory=dict)
    gpu: str | None = None
    config_file: Path | None = None
    isolated: bool = False
    select: list[str] | None = None
    extend_select: list[str] | None = None
    ignore: list[str] | None = None
    baseline: Path | None = None
    trainer_source: str | None = None  # --trainer-source: a checkout whose parser judges the flags
    root: str | None = None  # --root: the only folder files are read from (plint.root)


@record
class FileResult:
    reading: FileReading
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.reading.path

    @property
    def layouts(self) -> list[Layout]:
        return self.reading.layouts


@record
class CheckRun:
    results: list[FileResult]
    fail_on: str | None = None  # from configuration; the command line wins
    # what the run says besides findings, one line each for stderr (a named JSON that is no DeepSpeed config)
    notes: list[str] = field(default_factory=list)

    def __iter__(self):
        return iter(self.results)


def _expand(paths: list[Path]) -> list[tuple[Path, bool]]:
    """(file, found by a folder walk) for every file to check, in order."""
    out: list[tuple[Path, bool]] = []
    for p in paths:
        folder = Path(p)
        if probe(folder.is_dir):
            for f in sorted(folder.rglob("*")):
                rel = f.relative_to(folder).parts
                if (
                    f.is_file()
                    and f.suffix.lower() in CHECKED_SUFFIXES
                    and not any(part.startswith(".") for part in rel)
                ):
                    out.append((f, True))
        else:
            out.append((p, False))
    return out


def expand_paths(paths: list[Path]) -> list[Path]:
    """Directories expand to the launch-like files under them (hidden folders skipped); files are kept
    as given (a str or a Path)."""
    return [path for path, _ in _expand(paths)]


def check_paths(paths: list[Path], options: CheckOptions | None = None, **kwargs) -> CheckRun:
    """Check files; keyword arguments are a shorthand for CheckOptions fields (env=, gpu=).

    A folder walk checks a JSON file only when it is a DeepSpeed config (plint.reading.sources.
    deepspeed_config.looks_like_deepspeed) or a launch of this run reads it: a fixture's golden output,
    a tokenizer's vocabulary or a package.json is not a launch file, and counting it as checked says
    something false. A JSON file named on the command line is always read; one that is no DeepSpeed
    config gets a note saying nothing in it was checked."""
    from plint.checking.engine import Engine

    options = options or CheckOptions(**kwargs)
    engine = Engine(options)
    run = CheckRun([])
    checked: list[tuple[int, FileResult]] = []
    aside: list[tuple[int, Path]] = []  # walked JSON files that are no DeepSpeed config
    for index, (path, walked) in enumerate(_expand(paths)):
        result = _check_file(path, engine, options, skip_unless_deepspeed=walked and file_kind(path) == "json")
        if result is None:
            aside.append((index, path))
            continue
        checked.append((index, result))
        if not walked and result.reading.kind == "json":
            run.notes += _not_deepspeed_note(result.reading)
        if result.reading.kind == "yaml":
            run.notes += _not_neox_note(result.reading)
        if result.reading.kind == "python" and result.reading.unreadable is None:
            run.notes.append(
                f"{result.reading.path}: a Python program, not a launch file: nothing in it was checked (plint reads "
                "the shell scripts, DeepSpeed JSON and GPT-NeoX YAML that launch training, and a training script "
                "through the launch that runs it)"
            )
    if aside:
        read = {
            os.path.realpath(cfg.path)
            for _, r in checked
            for layout in r.layouts
            if (cfg := layout.extras.ds_config) is not None
        }
        checked += [
            (index, result)
            for index, path in aside
            if os.path.realpath(path) in read and (result := _check_file(path, engine, options)) is not None
        ]
        checked.sort(key=lambda pair: pair[0])
    run.results = [result for _, result in checked]
    engine.finish(run.results)
    _once_per_file(run.results)
    run.fail_on = engine.fail_on
    return run


def _check_file(path: Path, engine, options: CheckOptions, skip_unless_deepspeed: bool = False) -> FileResult | None:
    """Read one file and diagnose it; None when skip_unless_deepspeed and it is no DeepSpeed config."""
    settings = engine.settings_for(path)
    trainer_source = options.trainer_source or settings.trainer_source
    root = root_for(path, options.root, settings, (options.trainer_source,) if options.trainer_source else ())
    from plint.reading.sources.hostfile import configured_gpus_per_node
    from plint.reading.sources.model_shape import configured_model
    from plint.reading.shell.source_path import configured_source_path

    # every file this check reads, through the root
    with (
        confined(root),
        configured_model(settings.model),
        configured_gpus_per_node(settings.cluster.get("gpus-per-node")),
        configured_source_path(settings.source_path),
    ):
        if skip_unless_deepspeed and not _deepspeed_file(path):
            return None
        try:
            reading = read_path(
                path,
                env=options.env,
                gpu=options.gpu or settings.gpu,
                assume={**{k: str(v) for k, v in settings.assume.items()}, **options.assume},
                releases=settings.releases,
                trainer_source=trainer_source,
            )
            reading.root = root
            diagnostics = engine.diagnose(reading, settings)
        except Exception as exc:  # noqa: BLE001 (a bug met on one file: the others are still checked)
            if os.environ.get("PLINT_STRICT") == "1":  # the tests see the bug itself, as in the engine
                raise
            reading, diagnostics = _failed(path, root, exc), None
        if diagnostics is None:
            diagnostics = engine.diagnose(reading, settings)
    diagnostics.sort(key=Diagnostic.sort_key)
    return FileResult(reading, diagnostics)


def _failed(path: Path, root, exc: Exception) -> FileReading:
    """The reading of a file plint failed on (a bug of plint, never the file's fault): PL001 with what
    failed, as flake8's E902 and pylint's astroid-error do, so that what a file holds never becomes
    a traceback or the exit code of a usage error, and the other files named are still checked."""

    reading = FileReading(display_path(str(path)), file_kind(path))
    reading.unreadable = f"plint failed on this file ({type(exc).__name__}: {exc}); please report it"
    reading.root = root
    return reading


def _deepspeed_file(path: Path) -> bool:
    """Whether a JSON file a folder walk found is a DeepSpeed config. One larger than a launch file may be
    is not (a Hugging Face tokenizer.json is several MiB; a launch that reads it still gets it checked).
    A file that cannot be read here otherwise (outside the root, not UTF-8) counts as one: the reader then
    reports why (PL001)."""
    from plint.reading.sources.deepspeed_config import looks_like_deepspeed

    try:
        if os.stat(path).st_size > MAX_FILE_BYTES:
            return False
        return looks_like_deepspeed(read_bytes(path).decode("utf-8"))
    except (OSError, ValueError):  # ValueError: UnicodeDecodeError, a NUL byte in the name
        return True


def _not_deepspeed_note(reading: FileReading) -> list[str]:
    """The note for a JSON file read whole and clean that has no DeepSpeed marker at top level."""
    from plint.reading.sources.deepspeed_config import DS_MARKERS, is_deepspeed_document

    cfg = reading.ds_config
    if reading.unreadable is not None or reading.problems or reading.layouts or cfg is None:
        return []
    if is_deepspeed_document(cfg.document.root):
        return []
    return [
        f"{reading.path}: not a DeepSpeed config (none of {', '.join(sorted(DS_MARKERS))} at its top "
        "level): nothing in it was checked"
    ]


def _not_neox_note(reading: FileReading) -> list[str]:
    """The note for a YAML file named on the command line, read whole and clean, that is no GPT-NeoX config (a CI
    workflow); one that cannot be read is PL001 already."""
    from plint.reading.sources.deepspeed_config import NEOX_MARKERS, NEOX_MARKERS_NEEDED

    if reading.unreadable is not None or reading.problems or reading.layouts:
        return []
    return [
        f"{reading.path}: not a GPT-NeoX config (fewer than {NEOX_MARKERS_NEEDED} of {', '.join(sorted(NEOX_MARKERS))} "
        "at its top level): "
        "nothing in it was checked"
    ]


def _once_per_file(results: list[FileResult]) -> None:
    """A finding located in a file that is itself checked in this run (a broken DeepSpeed JSON named
    by a checked launch) is reported with that file only, not again with every launch that reaches it."""
    own = {_where(d) for r in results for d in r.diagnostics if d.path == r.path}
    if not own:
        return
    for r in results:
        r.diagnostics = [d for d in r.diagnostics if d.path == r.path or _where(d) not in own]


def _where(d: Diagnostic) -> tuple:
    """What makes two findings one: a template slot is one finding wherever it is read from (a launch that
    sources the file words it `$X is set from <...>`), any other finding also by its message."""
    if d.code == "PL002" and is_slot_message(d.message):
        return d.code, d.path, d.line, d.col
    return d.code, d.path, d.line, d.col, d.message


def parse_pairs(values, option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name or not (name.isidentifier() or name.isdigit()):
            raise UsageError(f"{option}: expected NAME=VALUE, got {item!r}")
        out[name] = value
    return out


def codes(value: str | None) -> list[str] | None:
    return None if value is None else [c.strip() for c in value.split(",") if c.strip()]


def check_options(
    paths,
    env,
    assume,
    gpu,
    config_file,
    isolated,
    select,
    extend_select,
    ignore,
    baseline,
    trainer_source=None,
    root=None,
):
    """CheckOptions from the command line's values (shared by check and fix); UsageError for bad input."""
    # a dangling symlink or a symlink loop is there (lexists): the check says it cannot be read (PL001)
    missing = [str(p) for p in paths if not probe(lambda: os.path.lexists(p))]
    if missing:
        raise UsageError("no such file or directory: " + ", ".join(missing))
    if root is not None and not probe(Path(root).is_dir):
        raise UsageError(f"--root: no such folder: {root}")
    if config_file is not None and not probe(Path(config_file).is_file):
        raise UsageError(f"--config: no such file: {config_file}")
    if trainer_source is not None and not probe(Path(trainer_source).exists):
        raise UsageError(f"--trainer-source: no such file or directory: {trainer_source}")
    if gpu is not None:
        from plint.catalog.hardware import unknown_gpu

        problem = unknown_gpu(gpu)
        if problem is not None:
            raise UsageError(f"--gpu: {problem}")
    return CheckOptions(
        env=parse_pairs(env, "--env"),
        assume=parse_pairs(assume, "--assume"),
        gpu=gpu,
        config_file=Path(config_file) if config_file else None,
        isolated=isolated,
        select=codes(select),
        extend_select=codes(extend_select),
        ignore=codes(ignore),
        baseline=Path(baseline) if baseline else None,
        trainer_source=trainer_source,
        root=str(root) if root else None,
    )
