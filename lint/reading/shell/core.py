"""The evaluator's declared state and the interface its parts call on one another.

The Shell is put together from mixins, one per concern (expansions, commands, sourcing, control); each
reads the evaluator's state and calls methods another mixin defines. `ShellCore` is their common base:
it declares that state once (set in `Shell.__init__`) and, for type checkers only, the methods one part
calls on another, so each mixin is read against the same contract and a changed signature is caught
(the real method must stay compatible with its declaration here). At run time it adds nothing but a
class to the method resolution order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable

    from plint.reading.loading import Unread
    from plint.reading.shell.fields import Fields
    from plint.reading.shell.model import Command, MappedText, Piece, ShellResult, Var, Word
    from plint.reading.shell.state import EvalOptions, ShellState
    from plint.reading.shell.unit import Unit
    from plint.source import SourceFile


class ShellCore:
    options: EvalOptions
    read: Callable[[str], tuple[SourceFile | None, Unread | None]]  # a sourced, run or copied file's text, or why not
    result: ShellResult
    vars: dict[str, Var]
    positional: list[Word] | None
    functions: dict[str, tuple]  # name -> (body node, unit)
    readonly: set[str]  # bash refuses to assign or unset these
    steps: int
    work: int  # characters built into values (capped)
    depth: int
    nesting: int  # expansions inside expansions (plint.bounds.MAX_NESTING)
    reparsed: int  # of them, those whose text is parsed again (MAX_REPARSED_NESTING)
    conditions: list[str]
    loops: int
    parents: list[tuple[Command, str]]
    active_files: set[str]
    locals: list[dict[str, Var | None]]
    script_path: str  # $0, as an absolute path
    arg0: Word | None  # $0 given to `bash -c STR NAME ...`
    current_file: str  # ${BASH_SOURCE[0]}: the file being run or sourced
    unknown_reasons: list[str]  # why the condition being evaluated is unknown
    guarded: frozenset[str]  # variables the branch of the condition being tested assigns
    argument_defaults: dict[str, Piece]  # guarded variable -> the positional parameter not given it held
    last_output: MappedText | None  # what the last pipeline wrote to stdout
    body_ranges: dict[int, tuple[int, int]]  # id(heredoc text) -> its bytes in the unit
    getopts_at: int  # where in a word of grouped flags getopts stands
    getopts_offset: int
    discarding: bool  # an expansion bash refuses was met: the top-level command it stands in is abandoned

    if TYPE_CHECKING:
        # evaluator.Shell
        def __init__(self, source: SourceFile, options: EvalOptions, result: ShellResult | None = None) -> None: ...
        def run_file(self, source: SourceFile) -> None: ...
        def run_unit(self, unit: Unit) -> None: ...
        def over_budget(self, size: int, chars: int) -> bool: ...
        @staticmethod
        def _too_big(what: str, span) -> Piece: ...
        def capped(self, pieces: tuple[Piece, ...] | list[Piece], what: str, span=None) -> tuple[Piece, ...]: ...
        def block(self, nodes, unit: Unit) -> int | None: ...
        def statement(self, node, unit: Unit) -> int | None: ...
        def unset(self, names: list[str]) -> None: ...
        def snapshot(self) -> ShellState: ...
        def restore(self, state: ShellState) -> None: ...
        def assign(
            self, node, unit: Unit, local: bool = False, export: bool = False, env: dict[str, Var] | None = None
        ) -> None: ...
        def declare_words(self, keyword: str, words: list[Word]) -> None: ...

        # expansions.Expansions
        def words(self, nodes, unit: Unit) -> list[Word]: ...
        def expand(self, node, unit: Unit, quoted: bool = False) -> Fields: ...
        def lookup(self, name: str) -> Var | None: ...
        def arith_lookup(self, name: str) -> str | None: ...
        def expand_inline(self, start: int, end: int, unit: Unit) -> tuple[str | None, list[Piece]]: ...
        def expand_between(self, node, start: int, end: int, unit: Unit) -> tuple[str | None, list[Piece]]: ...
        def arith_text(
            self,
            start: int,
            end: int,
            unit: Unit,
            span,
            reasons: list[str] | None = None,
            inline: tuple[str | None, list[Piece]] | None = None,
            command: bool = False,
        ) -> Piece: ...

        # commands.Commands
        @staticmethod
        def _command_parts(node): ...
        def command(self, node, unit: Unit, stdin: MappedText | None = None, output: bool = False) -> int | None: ...
        def arith_text_plain(self, text: str, site) -> None: ...
        def no_arguments(self) -> bool: ...

        # sourcing.Sourcing
        def resolve_path(self, text: str, unit: Unit) -> str: ...
        def source(self, word: Word, args: list[Word], unit: Unit, node: Any = None) -> None: ...
        def second_parse(
            self,
            pieces: list[Piece],
            unit: Unit,
            cmd: Command,
            via: str,
            fresh: bool,
            positional: list[Word] | None = None,
            extra: dict[str, Var] | None = None,
            arg0: Word | None = None,
        ) -> None: ...
        def stdin_script(self, content: MappedText, args: list[Word], cmd: Command, via: str, unit: Unit) -> None: ...
        def child_script(self, word: Word, args: list[Word], cmd: Command, via: str, unit: Unit) -> None: ...
        def redirected(self, node, unit: Unit, stdin: MappedText | None = None) -> int | None: ...
        def _file_source(self, node, unit: Unit) -> Word | None: ...
        def working_folder(self) -> str: ...
        def write(self, target: Word, content: MappedText, append: bool, unit: Unit, where) -> None: ...
        def herestring(self, node, unit: Unit) -> MappedText: ...
        def heredoc(self, node, unit: Unit) -> MappedText: ...
        def expand_heredoc_line(self, start: int, end: int, unit: Unit, escapes: bool = True) -> list[Piece]: ...
        def producer(
            self,
            words: list[Word],
            unit: Unit,
            stdin: MappedText | None,
            node,
            prefix_env: dict[str, Var] | None = None,
        ) -> MappedText | None: ...
        def file_text(self, word: Word, unit: Unit) -> MappedText | None: ...

        # control.Control
        def pipeline(self, node, unit: Unit) -> int | None: ...
        def test_words(self, args: list[Word]) -> int | None: ...
