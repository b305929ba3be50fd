"""The command line: click commands that parse options, call one function and print.

`check`'s options are declared in plint.cli.check_command (shared with the click-free fast path of
plint.entry); everything else is imported inside the commands so that each pays only for what it uses.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from plint import __version__
from plint.checking.config import UsageError
from plint.cli.check_command import OPTIONS, run


class LogUsageError(click.UsageError):
    """A usage error whose message may quote a file (a config value, a launch's unknown values): each
    line shown through the log escaper, so it forms no workflow command on stderr (plint.escape)."""

    def __init__(self, message: str, ctx: click.Context | None = None) -> None:
        from plint.escape import log_lines

        super().__init__(log_lines(message), ctx)


def _print_version(ctx: click.Context, _param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from plint.cli.version import version_text

    click.echo(version_text(__version__))
    ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and the Megatron-LM and DeepSpeed releases the catalogs know, and exit.",
)
def cli() -> None:
    """Lint the launch files of Megatron-LM and DeepSpeed training runs.

    \b
    Exit codes: 0 clean (nothing at or above the failing severity); 1 findings (check, fix), or changes
    fix --diff would make; 2 a usage error (an unknown option, --gpu or rule code), a bad configuration,
    or a path that does not exist."""


def _known_gpu(_ctx, _param, value: str | None) -> str | None:
    """--gpu of plan, generate and show: a name of the hardware catalog, else a usage error with the
    nearest name (check and fix judge theirs with the same plint.catalog.hardware.unknown_gpu)."""
    from plint.catalog.hardware import unknown_gpu

    problem = unknown_gpu(value) if value is not None else None
    if problem is not None:
        raise click.BadParameter(problem)
    return value


def _with_check_options(command, skip: tuple[str, ...] = (), helps: dict[str, str] | None = None):
    """check's options (plint.cli.check_command.OPTIONS) on a click command, less `skip`; `helps` replaces
    the help of an option whose meaning differs for that command."""
    for opt in reversed([o for o in OPTIONS if o.dest not in skip]):
        names = opt.names
        if opt.kind == "flag":
            command = click.option(*names, opt.dest, is_flag=True, help=(helps or {}).get(opt.dest, opt.help))(command)
        elif opt.kind == "multi":
            command = click.option(*names, opt.dest, multiple=True, metavar=opt.metavar, help=opt.help)(command)
        else:
            command = click.option(
                *names,
                opt.dest,
                default=opt.default,
                metavar=opt.metavar,
                type=click.Choice(opt.choices) if opt.choices else None,
                show_default=opt.default is not None,
                help=opt.help,
            )(command)
    return command


@cli.command()
# not required by click: `--stdin-filename NAME` alone stands for `-` (as in the fast path, check_command)
@click.argument("paths", nargs=-1, required=False, metavar="[PATHS]...", type=click.Path(path_type=Path))
@_with_check_options
def check(paths: tuple[Path, ...], **options) -> None:
    """Read launch files and report what is wrong with them (no PATHS: the working directory; `-`: standard
    input, read as JSON when it holds a JSON document, else as a shell script).

    \b
    Exit codes: 0 nothing at or above the failing severity (--fail-on, default error; always 0 with
    --exit-zero); 1 findings at or above it (or, with --dry-run, process groups the trainer would
    refuse); 2 a usage error, a bad configuration, or a path that does not exist. A file plint cannot
    read is a finding (PL001), not an exit code of its own."""
    if not paths and options.get("stdin_filename") is None:
        paths = (Path("."),)  # as ruff: no path checks the working directory
    try:
        code = run(list(paths), **options)
    except UsageError as exc:  # an option, a config, a rule selector: never what a checked file holds
        raise LogUsageError(str(exc)) from None
    sys.exit(code)


def _check_options_for_fix(command):
    """`fix` takes check's options except the output format and the baseline writer."""
    return _with_check_options(
        command,
        skip=(
            "fmt",
            "concise",
            "write_baseline",
            "dry_run",
            "pr_comment",
            "only_new_against",
            "verbose",
            "statistics",
            "stdin_filename",
            "fix",
            "unsafe_fixes",
            "severity",
            "exit_zero",
            "show_settings",
        ),
        helps={"quiet": "No summary line: the findings left (or the diff) only."},
    )


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--unsafe-fixes", "unsafe_fixes", is_flag=True, help="Also apply unsafe fixes (layout changes).")
@click.option(
    "--diff", is_flag=True, help="Print a unified diff per file and write nothing; exit 1 when there would be changes."
)
@_check_options_for_fix
def fix(paths: tuple[Path, ...], unsafe_fixes: bool, diff: bool, **options) -> None:
    """Apply fixes in place: byte-range edits of the original text, comments and formatting kept."""
    from plint.cli.fix_command import run_fix

    try:
        code = run_fix(list(paths), unsafe_fixes=unsafe_fixes, diff=diff, **options)
    except UsageError as exc:
        raise LogUsageError(str(exc)) from None
    sys.exit(code)


@cli.command()
@click.argument("launch", required=False, type=click.Path(path_type=Path))
@click.option(
    "--model",
    "preset",
    metavar="PRESET",
    help="A known model: llama3-8b, llama3-70b, llama3-405b, gpt3-175b, mixtral-8x7b, deepseek-v3.",
)
@click.option("--model-file", type=click.Path(path_type=Path), help="YAML with the keys of layout.model.")
@click.option("--nodes", type=click.IntRange(min=1), help="Nodes in the job.")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=None, help="GPUs per node [default: 8].")
@click.option("--gpu", metavar="NAME", callback=_known_gpu, help="GPU of the hardware catalog [default: h100-sxm].")
@click.option("--seq-length", type=click.IntRange(min=1), help="Sequence length [default: the model's].")
@click.option("--global-batch", type=click.IntRange(min=1), help="Global batch in sequences [default: one per GPU].")
@click.option("--nvlink-domain", type=click.IntRange(min=1), help="GPUs sharing NVLink [default: one node].")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Candidates to show.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--show",
    "show_n",
    type=click.IntRange(min=1),
    metavar="N",
    help="Draw candidate N (1 = best) as `plint show` does.",
)
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE", help="As for check: a variable LAUNCH reads.")
@click.option(
    "--assume", "assume", multiple=True, metavar="NAME=VALUE", help="As for check: a value LAUNCH sets at run time."
)
@click.option(
    "--root",
    "root",
    metavar="DIR",
    type=click.Path(file_okay=False, exists=True),
    help="As for check: read files only under DIR.",
)
@click.option(
    "--config",
    "config_file",
    metavar="FILE",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="As for check: use this config file instead of the nearest one (its thresholds.memory-headroom).",
)
@click.option("--isolated", is_flag=True, help="As for check: ignore every config file.")
def plan(
    launch,
    preset,
    model_file,
    nodes,
    gpus_per_node,
    gpu,
    seq_length,
    global_batch,
    nvlink_domain,
    top,
    fmt,
    show_n,
    env,
    assume,
    root,
    config_file,
    isolated,
) -> None:
    """Rank the layouts of a model on a cluster by predicted tokens/s (or plan around LAUNCH)."""
    from plint.planning.placement import plan_around
    from plint.planning.plan import PlanError, base_input, model_from_file, model_from_preset, plan as run_plan
    from plint.planning.plan_report import render_json, render_text

    try:
        # the memory test is the rules': a headroom the config sets for PL402 holds the candidates too
        headroom, headroom_note = _configured_headroom(config_file, isolated, launch)
        if launch is not None:
            if preset or model_file:
                raise PlanError("give either LAUNCH or --model/--model-file")
            result = _plan_launch(
                launch,
                nodes,
                gpus_per_node,
                gpu,
                seq_length,
                global_batch,
                nvlink_domain,
                top,
                plan_around,
                env,
                assume,
                root,
                headroom,
            )
        else:
            if bool(preset) == bool(model_file):
                raise PlanError("give one of --model PRESET or --model-file FILE (or a launch file)")
            if nodes is None:
                raise PlanError("--nodes is required")
            model = model_from_preset(preset) if preset else model_from_file(model_file)
            base = base_input(
                model, nodes, gpus_per_node or 8, gpu or "h100-sxm", seq_length, global_batch, nvlink_domain
            )
            result = run_plan(base, preset or model_file.stem, top=top, headroom=headroom)
            result.model = model
            if preset and model.get("source"):
                result.notes.append(f"{preset}: {model['source']}")
            if model.get("approximate"):
                result.notes.append(f"approximate: {model['approximate']}")
    except (PlanError, UsageError) as exc:  # UsageError: the launch's configuration
        raise LogUsageError(str(exc)) from None
    if headroom_note:
        result.notes.append(headroom_note)
    from plint.escape import log_lines

    click.echo(render_json(result) if fmt == "json" else log_lines(render_text(result)))
    if show_n is not None:
        if show_n > len(result.candidates):
            raise click.UsageError(f"--show {show_n}: the plan has {len(result.candidates)} candidate(s)")
        from plint.pictures import from_input

        chosen = result.candidates[show_n - 1]
        _emit_pictures(
            [from_input(chosen.inp, chosen.estimate, f"{result.model_name}: candidate {show_n}")], "text", None
        )


def _plan_launch(
    launch,
    nodes,
    gpus_per_node,
    gpu,
    seq_length,
    global_batch,
    nvlink_domain,
    top,
    plan_around,
    env=(),
    assume=(),
    root=None,
    headroom=None,
):
    """The model, cluster and batch of an existing launch, with any option given overriding it."""
    from plint.checking.check import check_paths
    from plint.checking.check import parse_pairs
    from plint.cost.layout_estimate import cost_input
    from plint.planning.plan import PlanError

    if not launch.exists():
        raise PlanError(f"no such file: {launch}")
    (result,) = check_paths(
        [launch],
        env=parse_pairs(env, "--env"),
        assume=parse_pairs(assume, "--assume"),
        root=str(root) if root else None,
    )
    inputs = [cost_input(layout) for layout in result.layouts]
    inputs = [i for i in inputs if i is not None]
    if not inputs:
        raise PlanError(_incomplete(launch, result.layouts, "plan around"))
    inp = inputs[0]
    changes = {
        k: v
        for k, v in (
            ("nnodes", nodes),
            ("gpus_per_node", gpus_per_node),
            ("gpu", gpu),
            ("seq_length", seq_length),
            ("global_batch", global_batch),
            ("nvlink_domain", nvlink_domain),
        )
        if v is not None
    }
    if nodes is not None or gpus_per_node is not None:
        changes["dp"] = None  # the launch's layout on the new cluster: dp follows the world, tp/pp/cp stay
    return plan_around(inp.replace(**changes) if changes else inp, str(launch), top=top, headroom=headroom)


def _configured_headroom(config_file: Path | None, isolated: bool, launch: Path | None) -> tuple[float | None, str]:
    """thresholds.memory-headroom of the config in force (as check finds it: --config, else the nearest
    config to LAUNCH or the working folder), and a note naming it; (None, '') when none is set."""
    from plint.checking.config import in_force, load

    path = in_force(launch if launch is not None else Path.cwd(), config_file, isolated)
    headroom = load(path).thresholds.get("memory-headroom")
    if headroom is None:
        return None, ""
    return headroom, f"candidates stay within {headroom:.0%} of usable memory (thresholds.memory-headroom, {path})"


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--schedule",
    type=click.Choice(["zb-h1", "dualpipe", "gpipe"]),
    help="Draw the same layout under another pipeline schedule (what-if: needs a trainer that runs it).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "html", "svg", "markdown"]), default="text", show_default=True
)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write to FILE instead of printing.")
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE", help="As for check: a variable PATH reads.")
@click.option(
    "--assume", "assume", multiple=True, metavar="NAME=VALUE", help="As for check: a value PATH sets at run time."
)
@click.option(
    "--root",
    "root",
    metavar="DIR",
    type=click.Path(file_okay=False, exists=True),
    help="As for check: read files only under DIR.",
)
@click.option("--gpu", metavar="NAME", callback=_known_gpu, help="As for check: the GPU the job runs on.")
def show(path, schedule, fmt, output, env, assume, root, gpu) -> None:
    """Draw a launch: device grid, pipeline schedule, memory per stage, communication per axis."""
    from plint.checking.check import check_paths
    from plint.checking.check import parse_pairs
    from plint.pictures import from_layout

    if not path.exists():
        raise LogUsageError(f"no such file: {path}")
    try:
        results = check_paths(
            [path],
            env=parse_pairs(env, "--env"),
            assume=parse_pairs(assume, "--assume"),
            root=str(root) if root else None,
            gpu=gpu,
        )
    except UsageError as exc:
        raise LogUsageError(str(exc)) from None
    pictures = []
    for result in results:
        for layout in result.layouts:
            try:
                p = from_layout(layout, str(result.path), schedule, findings=result.diagnostics)
            except ValueError as exc:  # sizes Megatron refuses at start-up: `plint check` says which
                raise LogUsageError(f"{result.path}: {exc}") from None
            if p is not None:
                pictures.append(p)
    if not pictures:
        raise LogUsageError(_incomplete(path, [layout for r in results for layout in r.layouts], "draw"))
    _emit_pictures(pictures, fmt, output)


def _incomplete(path, layouts, purpose: str) -> str:
    """Why no launch of `path` can be costed: the fields each lacks and why (the gaps `plint check` prints
    under its layout line), or that the file holds no launch at all."""
    from plint.cost.layout_estimate import estimate_gaps

    if not layouts:
        return f"{path}: no training launch found to {purpose}"
    gaps = list(dict.fromkeys(gap for layout in layouts for gap in estimate_gaps(layout)))
    return f"{path}: no launch with a complete model shape and cluster to {purpose}" + (
        f": {'; '.join(gaps[:4])} (give the flags, or give --env or --assume for a value the script reads)"
        if gaps
        else ""
    )


def _emit_pictures(pictures, fmt: str, output: Path | None) -> None:
    from plint.pictures.markdown import pictures_markdown
    from plint.pictures.page import render_page
    from plint.pictures.terminal import render_text

    if fmt in ("html", "svg"):
        if len(pictures) > 1:
            click.echo(f"{len(pictures)} launches: drawing the first", err=True)
        text = render_page(pictures[0], fmt)
    elif fmt == "markdown":
        text = "\n".join(line for p in pictures for line in pictures_markdown(p))
    else:
        text = "\n".join(render_text(p, color=output is None and sys.stdout.isatty()) for p in pictures)
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


@cli.command()
@click.option(
    "--target",
    type=click.Choice(["torchrun", "slurm", "deepspeed"]),
    required=True,
    help="torchrun script, Slurm batch script (srun + torchrun), or Megatron-DeepSpeed under the "
    "deepspeed launcher with its hostfile and ds_config.json.",
)
@click.option("--plan", "plan_file", type=click.Path(path_type=Path), help="A `plint plan --format json` output.")
@click.option(
    "--candidate",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Which candidate of --plan (1 = best).",
)
@click.option(
    "--layout",
    "layout_file",
    type=click.Path(path_type=Path),
    help="A `plint check --format json` output or a layout object.",
)
@click.option("--model", "preset", metavar="PRESET", help="Plan for this preset and generate its best layout.")
@click.option("--model-file", type=click.Path(path_type=Path), help="YAML with the keys of layout.model.")
@click.option("--nodes", type=click.IntRange(min=1))
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=8, show_default=True)
@click.option(
    "--gpu",
    metavar="NAME",
    default="h100-sxm",
    show_default=True,
    callback=_known_gpu,
    help="GPU of the hardware catalog.",
)
@click.option("--seq-length", type=click.IntRange(min=1))
@click.option("--global-batch", type=click.IntRange(min=1))
@click.option("--name", help="Run name (job name, checkpoint folder) [default: the model's].")
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("."),
    show_default=True,
    help="Folder to write into.",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.option("--stdout", "to_stdout", is_flag=True, help="Print the files instead of writing them.")
def generate(
    target,
    plan_file,
    candidate,
    layout_file,
    preset,
    model_file,
    nodes,
    gpus_per_node,
    gpu,
    seq_length,
    global_batch,
    name,
    out_dir,
    force,
    to_stdout,
) -> None:
    """Write a launch from a plan candidate, a layout, or the best plan for a model."""
    from plint.planning.generate import GenerateError, load_spec, render, spec_from_candidate, verify, write
    from plint.planning.plan import PlanError

    sources = [x for x in (plan_file, layout_file, preset or model_file) if x]
    try:
        if len(sources) != 1:
            raise GenerateError("give exactly one of --plan, --layout, or --model/--model-file")
        if plan_file or layout_file:
            spec = load_spec(plan_file or layout_file, candidate, name)
        else:
            spec = _best_spec(
                target,
                preset,
                model_file,
                nodes,
                gpus_per_node,
                gpu,
                seq_length,
                global_batch,
                name,
                spec_from_candidate,
            )
        files = render(spec, target)
        problems = verify(files, target, spec)
        if problems:
            raise GenerateError(
                "the generated launch does not check cleanly, nothing written:\n  " + "\n  ".join(problems)
            )
    except (GenerateError, PlanError) as exc:
        raise LogUsageError(str(exc)) from None
    if to_stdout:
        for file_name, text in files.items():
            click.echo(f"==> {file_name} <==\n{text}")
        return
    try:
        written = write(files, target, out_dir, force)
    except GenerateError as exc:
        raise LogUsageError(str(exc)) from None
    for path in written:
        click.echo(f"wrote {path}")


def _best_spec(target, preset, model_file, nodes, gpus_per_node, gpu, seq_length, global_batch, name, from_candidate):
    """Plan on the spot and take the best candidate the target can express."""
    from plint.planning.plan import PlanError, base_input, model_from_file, model_from_preset, plan as run_plan

    if nodes is None:
        raise PlanError("--nodes is required with --model")
    model = model_from_preset(preset) if preset else model_from_file(model_file)
    base = base_input(model, nodes, gpus_per_node, gpu, seq_length, global_batch)
    result = run_plan(base, preset or model_file.stem)
    usable = [
        c
        for c in result.candidates
        if target != "deepspeed"
        or (
            c.inp.cp == 1
            and not c.inp.vpp
            and not c.first_last_layers
            and not c.pipeline_layout
            and not c.inp.num_experts
        )
    ]
    if not usable:
        raise PlanError(
            f"no layout of {preset or model_file} fits on {nodes} x {gpus_per_node} {gpu}"
            + (" that Megatron-DeepSpeed can express" if target == "deepspeed" else "")
        )
    cluster = {"nnodes": nodes, "gpus_per_node": gpus_per_node, "gpu": gpu}
    return from_candidate({**model, **base.shape()}, usable[0].to_json(), cluster, name or preset or model_file.stem)


from plint.cli.commands_docs import explain, rules  # noqa: E402

cli.add_command(rules)
cli.add_command(explain)


def main() -> None:
    cli(prog_name="plint")


__all__ = ["cli", "main"]
