"""What every part of the static bash evaluator shares: its options, its limits, the signals that
carry control flow (exit, return, break, continue, budget), and how it reads files."""

from __future__ import annotations

from pathlib import Path

from plint.reading.loading import Unread, load_found, outside_root
from plint.reading.shell.model import Command, MappedText, Piece, Var, Word
from plint.record import field, record
from plint.source import SourceFile, display_path

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Callable


IFS = " \t\n"

MAX_LOOP = 64

# the evaluator's share of plint.bounds: a value longer than this is unresolved, and the characters
# built per file are counted so a loop that copies large values stops too
MAX_PIECES = 4096  # pieces of one value (each is an object: `X="$X$X"` doubles them)

# pieces built into words and values per file, a character counting 1/64 of a piece: ~10-30 us each,
# so a 4 MiB line of 2 million words stops here rather than after a minute
MAX_WORK = 100_000

MAX_COMMAND_WORDS = 50_000  # a command longer than this is not expanded (its nodes alone cost ~100 MB)

MAX_DEPTH = 24

SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
# commands that submit a script as a batch job, and so `via` of the commands it runs: Slurm's, and PBS's or Grid
# Engine's qsub
SUBMITTERS = frozenset({"sbatch", "qsub"})
# qsub's options that take a value: OpenPBS's (src/cmds/qsub_sup.c GETOPT_ARGS) and Grid Engine's (gridengine 6.2
# qsub(1)); Grid Engine's -pe takes two (the parallel environment and the slots)
QSUB_VALUE_OPTIONS = frozenset(
    {f"-{letter}" for letter in "aAcCejJklmMNopqrRSuvWP"}
    | {"-g", "-t", "-wd", "-hold_jid", "-hold_jid_ad", "-b", "-js", "-ar", "-dl", "-tc", "-sync", "-now"}
    | {"-binding", "-jc", "-shell", "-masterq", "-i", "-ckpt", "-pty", "-sc", "-ac", "-dc", "-rou", "-rdi"}
)
# how the error for a command name bash cannot find starts (Commands.not_found; PL005 quotes it)
NOT_FOUND_PREFIX = "bash runs `"

DECLARE = {"export", "declare", "typeset", "local", "readonly"}

EXPANSIONS = {"expansion", "simple_expansion", "command_substitution", "arithmetic_expansion", "process_substitution"}


@record
class EvalOptions:
    env: dict[str, Var] = field(default_factory=dict)
    positional: list[Word] | None = None
    read_file: Callable[[Path], SourceFile | None] | None = None
    # a job a submitter (SUBMITTERS) starts: the variables its scheduler gives it, and the files (PBS's node file)
    # (the submitting command, the submitter's name, the job's script)
    child_env: Callable[[Command, str, SourceFile], dict[str, Var]] | None = None
    child_files: Callable[[Command, str, SourceFile], dict[str, MappedText]] | None = None
    max_steps: int = 20000
    max_work: int = MAX_WORK  # words and values built (see Shell.capped); extra readings of a file get less
    # Values for variables the script assigns from something unknowable ($(nvidia-smi ...)):
    # [tool.plint.assume] / --assume. Unlike env, they replace an unknown assignment.
    assume: dict[str, str] = field(default_factory=dict)
    # Undecided branches to take one way (choice key -> index of the alternative): how plint reads each
    # launch a branch chooses (shell/choices.py); every other undecided branch still merges.
    choices: dict = field(default_factory=dict)
    # A loop over the script's arguments runs no time when none are given (as bash does); False merges
    # it as undecided instead, for a script that exits without arguments (read.py reads it both ways).
    no_arguments: bool = True
    # Files the script's environment gives it, by the display of the word that names them ($PBS_NODEFILE's
    # node file): read where the script reads that word (`wc -l < $PBS_NODEFILE`).
    files: dict[str, MappedText] = field(default_factory=dict)


# the line tools plint runs (plint.reading.shell.lines.RUNNERS, imported where one runs, as cut and sed are)
LINE_TOOLS = frozenset(("wc", "sort", "uniq", "head", "awk"))
# commands whose output producer() builds when they stand alone in a command substitution (not `pure`'s)
LISTING_COMMANDS = LINE_TOOLS | {"scontrol", "cat", "yq", "jq"}
# the compound commands whose stdout a redirection or a pipe collects (`for ...; done > hostfile`)
CAPTURED_BODIES = frozenset(
    (
        "for_statement",
        "c_style_for_statement",
        "while_statement",
        "if_statement",
        "case_statement",
        "compound_statement",
        "subshell",
    )
)
# commands that write nothing to stdout, run inside a compound command whose output a redirection collects
SILENT_COMMANDS = frozenset(
    (
        "export",
        "local",
        "declare",
        "typeset",
        "readonly",
        "set",
        "shift",
        "cd",
        "mkdir",
        "rm",
        "cp",
        "mv",
        "ln",
        "touch",
        "sleep",
        "true",
        "false",
        ":",
        "unset",
        "source",
        ".",
        "eval",
        "wait",
        "trap",
        "ulimit",
        "umask",
        "test",
        "[",
        "let",
        "break",
        "continue",
        "return",
        "exit",
        "read",
        "module",
        "chmod",
    )
)


class ShellExit(Exception):
    def __init__(self, site=None):
        super().__init__()
        self.site = site  # the `exit` command that ran (every way through it, for a branch all of whose ways exit)


class ShellReturn(Exception):
    pass


class ShellBreak(Exception):
    pass


class ShellContinue(Exception):
    pass


class ShellDiscard(Exception):
    """An expansion bash refuses (`$((1_000_000))`, `$((1/0))`): bash 5.2 abandons the whole top-level command
    it stands in (the rest of its line, the loop, `if` or function call around it) and goes on with the next;
    a sourced file, an `eval` or `bash -c` string and a subshell each have a top level of their own."""


class OverBudget(Exception):
    """Evaluation stopped: args[0] names the budget (steps, work)."""


def _display(path: str) -> str:
    """A path as diagnostics show it: relative to the working directory when under it."""
    try:
        return display_path(path)
    except OSError:
        return str(Path(path))


def default_read(path: str) -> tuple[SourceFile | None, Unread | None]:
    """A file a script sources, runs or copies, read as the files a launch names are (only inside the
    root, only a regular UTF-8 text file within plint's size limit): its text, or why a file that is
    there is not read; (None, None) when nothing is there."""
    return load_found(path, _display(path))


def path_reader(
    read_file: Callable[[Path], SourceFile | None],
) -> Callable[[str], tuple[SourceFile | None, Unread | None]]:
    """EvalOptions.read_file as the evaluator calls it (with a string): it is given a Path; a file it does
    not give is said unread only where the root refuses it."""

    def read(path: str) -> tuple[SourceFile | None, Unread | None]:
        source = read_file(Path(path))
        return source, outside_root(path) if source is None else None

    return read


@record
class ShellState:
    vars: dict[str, Var]
    positional: list[Word] | None
    functions: dict


class SpanNode:
    """A fake node covering a run of sibling nodes (the operand of ${X:-...})."""

    def __init__(self, children, start: int, end: int):
        self.children = children
        self.start_byte = start
        self.end_byte = end


SBATCH_FLAGS = {
    "--exclusive",
    "--wait",
    "-W",
    "--parsable",
    "--hold",
    "-H",
    "--requeue",
    "--no-requeue",
    "--test-only",
    "--overcommit",
    "-O",
    "--contiguous",
    "--spread-job",
    "--use-min-nodes",
    "--quiet",
    "-Q",
    "--verbose",
    "-v",
    "--ignore-pbs",
}


@record
class OutputSink:
    """What a compound command redirected to a file (`for ...; done > hostfile`, `{ ...; } > f`) writes to its
    stdout, in order; `unknown` once anything in it writes text plint cannot tell (a command it does not run,
    a branch it cannot decide, a nested shell), when the file's content is known only at run time."""

    pieces: list[Piece] = field(default_factory=list)
    unknown: str | None = None
