"""The command line: click commands that parse options, call one function and print.

`check`'s options are declared in plint.check_command (shared with the click-free fast path of
plint.entry); everything else is imported inside the commands so that each pays only for what it uses.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from plint import __version__
from plint.check_command import OPTIONS, UsageError, run


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="plint")
def cli() -> None:
    """Lint the launch files of Megatron-LM and DeepSpeed training runs."""


def _with_check_options(command):
    for opt in reversed(OPTIONS):
        if opt.kind == "flag":
            command = click.option(opt.flag, opt.dest, is_flag=True, help=opt.help)(command)
        elif opt.kind == "multi":
            command = click.option(opt.flag, opt.dest, multiple=True, metavar=opt.metavar,
                                   help=opt.help)(command)
        else:
            command = click.option(opt.flag, opt.dest, default=opt.default, metavar=opt.metavar,
                                   type=click.Choice(opt.choices) if opt.choices else None,
                                   show_default=opt.default is not None, help=opt.help)(command)
    return command


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_with_check_options
def check(paths: tuple[Path, ...], **options) -> None:
    """Read launch files and report what is wrong with them."""
    try:
        code = run(list(paths), **options)
    except ValueError as exc:  # UsageError, or a bad rule selector
        raise click.UsageError(str(exc)) from None
    sys.exit(code)


from plint.commands_docs import explain, rules  # noqa: E402

cli.add_command(rules)
cli.add_command(explain)


def main() -> None:
    cli(prog_name="plint")


__all__ = ["cli", "main", "UsageError"]
