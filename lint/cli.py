"""The command line: click commands that parse options, call one function and print.

Everything else is imported inside the commands so that `plint check` pays only for what it uses.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from plint import __version__

FORMATS = ["text", "json", "sarif", "github", "markdown"]
FAIL_ON = ["error", "warning", "info", "never"]
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def _parse_env(values: tuple[str, ...], option: str = "--env") -> dict[str, str]:
    env: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name or not (name.isidentifier() or name.isdigit()):
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint=option)
        env[name] = value
    return env


def _codes(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [c.strip() for c in value.split(",") if c.strip()]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="plint")
def cli() -> None:
    """Lint the launch files of Megatron-LM and DeepSpeed training runs."""


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="Output format.")
@click.option("--concise", is_flag=True, help="Text format: one line per finding.")
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE",
              help="Seed a variable the script reads from its environment (digits name a positional parameter).")
@click.option("--assume", "assume", multiple=True, metavar="NAME=VALUE",
              help="Value for a variable the script sets from something only known at run time.")
@click.option("--gpu", default=None, metavar="NAME", help="The GPU the job runs on (overrides the files).")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Use this config file instead of discovering pyproject.toml / .plint.toml.")
@click.option("--isolated", is_flag=True, help="Ignore every config file.")
@click.option("--select", default=None, metavar="CODES", help="Only these rules (codes or names, comma-separated).")
@click.option("--extend-select", default=None, metavar="CODES", help="Add these rules to the selection.")
@click.option("--ignore", default=None, metavar="CODES", help="Skip these rules.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default=None,
              help="Exit 1 when a finding is at or above this severity (default: error).")
@click.option("--baseline", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Suppress the findings listed in this baseline file (default: .plint-baseline if present).")
@click.option("--write-baseline", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write every current finding to this baseline file and exit 0.")
def check(paths: tuple[Path, ...], fmt: str, concise: bool, env: tuple[str, ...], assume: tuple[str, ...],
          gpu: str | None,
          config_file: Path | None, isolated: bool, select: str | None, extend_select: str | None,
          ignore: str | None, fail_on: str | None, baseline: Path | None,
          write_baseline: Path | None) -> None:
    """Read launch files and report what is wrong with them."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise click.UsageError("no such file or directory: " + ", ".join(missing))
    from plint.check import CheckOptions, check_paths

    options = CheckOptions(env=_parse_env(env), assume=_parse_env(assume, "--assume"), gpu=gpu, config_file=config_file, isolated=isolated,
                           select=_codes(select), extend_select=_codes(extend_select),
                           ignore=_codes(ignore), baseline=baseline)
    try:
        run = check_paths(list(paths), options)
    except ValueError as exc:  # a bad config file or an unknown rule selector
        raise click.UsageError(str(exc)) from None
    if write_baseline is not None:
        from plint.baseline import write_baseline as write

        count = write(write_baseline, run.results)
        click.echo(f"wrote {count} finding(s) to {write_baseline}", err=True)
        return
    from importlib import import_module

    reporter = import_module(f"plint.report.{'json_report' if fmt == 'json' else fmt}")
    click.echo(reporter.render(run.results, concise=concise) if fmt == "text" else reporter.render(run.results))
    threshold = fail_on or run.fail_on or "error"
    if threshold != "never" and any(
            d.suppressed is None and SEVERITY_RANK[d.severity] >= SEVERITY_RANK[threshold]
            for r in run.results for d in r.diagnostics):
        sys.exit(1)


def main() -> None:
    cli(prog_name="plint")
