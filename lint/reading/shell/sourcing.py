"""The evaluator's files: sourced scripts, child shells, redirections, heredocs and herestrings,
and the files a pipeline writes (a mixin of plint.reading.shell.evaluator.Shell)."""

from __future__ import annotations

import os
import re

from plint.reading.loading import Unread
from plint.reading.shell.pure_commands import pure_output
from plint.reading.shell.core import ShellCore
from plint.reading.shell.files import path_key
from plint.reading.shell.model import Command, MappedText, Piece, Problem, Var, VirtualFile, Word, unknown
from plint.reading.shell.unit import Unit, heredoc_as_file
from plint.record import record
from plint.root import is_under
from plint.source import SourceFile, display_path
from plint.reading.shell.source_path import (
    NOT_FOLLOWED,
    SOURCE_PATH_HINT,
    Place,
    assumed_note,
    checked_root,
    comment_places,
    named_file,
    named_path,
    not_found,
    outside_tail_note,
    places,
    tail_places,
)
from plint.reading.shell.fields import flatten, unknown_arguments
from plint.reading.shell.state import (
    EvalOptions,
    LINE_TOOLS,
    MAX_DEPTH,
    CAPTURED_BODIES,
    MAX_PIECES,
    OutputSink,
    ShellBreak,
    OverBudget,
    ShellContinue,
    ShellExit,
    ShellReturn,
)
from plint.bounds import MAX_NESTING, MAX_REPARSED_NESTING

# commands whose output is a path computed from their words (plint.reading.shell.pure_commands)
PATH_COMMANDS = frozenset(("dirname", "basename", "realpath", "readlink"))
MAX_XARGS_WORDS = 1_000  # words of input `xargs` hands on
# (what the path is, what plint assumed holds a checkout of the tree) for _find_tail's note
_UNDER_HOME = ("starts with ~, the home folder of whoever runs the script", "the home folder")
_ELSEWHERE = ("is an absolute path outside the checked tree", "that folder")


class Sourcing(ShellCore):
    def resolve_path(self, text: str, unit: Unit) -> str:
        """A path named by the file being run, against that file's directory (see files.path_key)."""
        return path_key(os.path.dirname(os.path.abspath(unit.source.path)), text)

    def source(self, word: Word, args: list[Word], unit: Unit, node=None) -> None:
        named = named_file(node, unit.data) if node is not None else None
        # `# shellcheck source=/dev/null`: the user does not care for the file; read it if plint can, say nothing
        # if not. A FILE with `$` is no path (shellcheck does not expand it either)
        quiet = named == NOT_FOLLOWED
        if quiet or "$" in (named or ""):
            named = None
        shown, by_directive = word.display(), False
        if named is not None and not word.known:  # the directive names what the run-time path will be
            word = Word((Piece(named_path(named, unit.source.path), word.site, "literal"),), word.site)
            shown, by_directive = f"{named} (named by a source= comment)", True
        found = self.find_sourced(word, unit)
        if quiet and found.source is None:
            return
        if found.why is not None:
            said = found.why.say(f"sourced file {shown}", "values it sets are unknown")
            self.result.problems.append(Problem(found.why.kind, said, word.site))
            self.unread_sources.append(shown)
            return
        src = found.source
        if src is None:
            # A relative path names a file of the project, which may set launch values; an absolute
            # one outside it (a venv's activate, /etc/profile) is environment setup, not reported,
            # unless a directive named it
            if not word.known or not os.path.isabs(word.text or "") or by_directive:
                self.result.problems.append(
                    Problem(
                        "unresolved",
                        f"cannot read sourced file {shown}: {not_found(word, found.looked)}; "
                        "values it sets are unknown",
                        word.site,
                    )
                )
                self.unread_sources.append(shown)
            return
        key = os.path.abspath(src.path)
        if key in self.active_files or self.depth >= MAX_DEPTH:
            return
        if found.assumed is not None:
            self.result.problems.append(Problem("unresolved", found.assumed, word.site))
        self.result.files_read.append(key)
        saved = self.positional
        before = dict(self.vars)
        if args:
            self.positional = args
        self.depth += 1
        try:
            self.run_file(src)
        except ShellReturn:
            pass
        finally:
            self.depth -= 1
            if args:
                self.positional = saved
            if found.assumed is not None:
                self._mark_assumed(before)

    def find_sourced(self, word: Word, unit: Unit, named: str = "") -> Sourced:
        """The file `source WORD` reads: in the first place of plint.reading.shell.source_path.places that
        holds one (written by the script first, then on disk through `self.read`, which asks the root), or
        why the file there is not read; with every path looked at, and a note when the first of two guessed
        places that both hold a file, differing, was taken."""
        text = word.text
        if text is None:
            # `bash $LLM_DK_DIR/intel-extension-for-deepspeed/examples/gpt.sh`: a checkout of this tree under a folder
            # known only at run time, read from the tail of the path that is a file of the tree, as `~/...` is
            suffix = word.under_unknown_folder()
            if suffix is None:
                return Sourced()
            prefix = word.display()[: len(word.display()) - len(suffix)]
            found = self._find_tail(
                word, suffix, unit, named, (f"starts with {prefix}, known only at run time", prefix)
            )
            return found if found.source is not None or found.why is not None else Sourced()
        if text.startswith("~/"):
            return self._find_tail(word, text[2:], unit, named, _UNDER_HOME)
        if os.path.isabs(text) and not is_under(
            os.path.normpath(text), os.path.abspath(checked_root(unit.source.path))
        ):
            found = self._find_tail(word, text, unit, named, _ELSEWHERE)
            if found.source is not None or found.why is not None:
                return found
        looked: list[tuple[str, Place]] = []
        hits: list[tuple[Place, str, SourceFile | None, Unread | None]] = []
        moved_to = self.current_folder() if "PWD" in self.vars else None  # after a `cd`
        for place in places(unit.source.path, text, comment_places(unit.source.text), moved_to):
            path = path_key(place.folder, text)
            looked.append((path, place))
            virtual = self.result.virtual_files.get(path)
            src, why = (SourceFile(path, virtual.content.render()), None) if virtual is not None else self.read(path)
            if src is None and why is None:
                continue  # nothing there
            hits.append((place, path, src, why))
            if src is None or place.named or virtual is not None or len(hits) == 2:
                # refused: said; named by the user: no guess; written by the script, into the folder it
                # runs in, where bash then reads it; two guesses: enough to compare
                break
        if not hits:
            return Sourced(looked=tuple(looked))
        place, path, src, why = hits[0]
        other = hits[1] if len(hits) == 2 else None
        assumed = None
        if src is not None and other is not None and other[2] is not None and other[2].text != src.text:
            named = named or f"sourced file {word.display()}"
            assumed = assumed_note(named, (path, place), (other[1], other[0]))
        return Sourced(src, why, tuple(looked), assumed)

    def _find_tail(self, word: Word, text: str, unit: Unit, named: str, why: tuple[str, str]) -> Sourced:
        """A path plint cannot follow where it points: `~/repo/train/run.sh` (under the home folder of whoever
        runs the script) or an absolute path outside the checked tree (`/opt/Megatron-LM/examples/run.sh` in a
        container, `/home/alice/repo/run.sh`). A job script that runs a script of its own repository through a
        checkout of it is the common case, so plint reads the longest tail of the path that is a file of the
        checked tree (source_path.tail_places), and says that it assumed so."""
        looked: list[tuple[str, Place]] = []
        for path, place in tail_places(text, unit.source.path):
            looked.append((path, place))
            src, unread = self.read(path)
            if src is None and unread is None:
                continue
            if src is None:
                return Sourced(None, unread, tuple(looked))
            shown = named or f"sourced file {word.display()}"
            return Sourced(src, None, tuple(looked), outside_tail_note(shown, why[0], why[1], path))
        return Sourced(looked=tuple(looked))

    def _mark_assumed(self, before: dict[str, Var]) -> None:
        """The variables a sourced file set, as assumptions: the file was one of two plint could not tell
        apart (their values say so, as values read from a config found above the script do)."""
        for name, var in list(self.vars.items()):
            if before.get(name) is not var:
                self.vars[name] = Var(
                    name,
                    _assumed_pieces(var.value),
                    None if var.items is None else tuple(_assumed_pieces(item) for item in var.items),
                    var.exported,
                    var.span,
                )

    def child_shell(self, extra: dict[str, Var] | None = None, cmd: Command | None = None):
        """A shell for a script this one starts: it inherits the exported variables and those the command's
        `NAME=value` prefixes set (bash exports them to that command: `GBS=8 sbatch job.sh`)."""
        env = {k: v for k, v in self.vars.items() if v.exported}
        env.update({k: v.exported_copy() for k, v in (cmd.assignments if cmd is not None else {}).items()})
        env.update(extra or {})
        child = type(self)(
            self.result.source,
            EvalOptions(
                env=env,
                read_file=self.options.read_file,
                child_env=self.options.child_env,
                child_files=self.options.child_files,
                max_steps=self.options.max_steps,
                assume=self.options.assume,
            ),
            self.result,
        )
        child.steps = self.steps
        child.depth = self.depth + 1
        child.nesting, child.reparsed = self.nesting, self.reparsed
        child.conditions = list(self.conditions)
        child.loops = self.loops
        child.parents = list(self.parents)
        child.active_files = set(self.active_files)
        child.script_path = self.script_path
        return child

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
    ) -> None:
        if self.depth >= MAX_DEPTH:
            return
        if fresh and self.output_sinks:
            self.sinks_unknown(f"a shell started by {via}")
        sub = Unit.from_pieces(pieces, unit.source)
        shell = self.child_shell(extra, cmd) if fresh else self
        if fresh:
            shell.positional = positional
            shell.arg0 = arg0
        shell.parents.append((cmd, via))
        shell.depth += 1
        try:
            shell.run_unit(sub)
        except (ShellExit, ShellReturn, ShellBreak, ShellContinue):
            pass
        finally:
            shell.depth -= 1
            shell.parents.pop()
            if fresh:
                self.steps = shell.steps

    def stdin_script(self, content: MappedText, args: list[Word], cmd: Command, via: str, unit: Unit) -> None:
        """A script read from stdin (a heredoc): its commands run in a fresh shell, their spans
        pointing into the heredoc body where it is verbatim."""
        if self.output_sinks:
            self.sinks_unknown(f"a script read from stdin ({via})")
        if self.depth >= MAX_DEPTH:
            return
        extra = self.job_environment(cmd, via, heredoc_as_file(content, unit, self.body_ranges.get(id(content))))
        self.second_parse(content.pieces, unit, cmd, via, fresh=True, positional=args, extra=extra)

    def _assume_commands_since(self, recorded: int) -> None:
        """The words of the commands recorded from index `recorded` on, as assumptions (read from a guessed file)."""
        for run in self.result.commands[recorded:]:
            run.words = [Word(_assumed_pieces(w.pieces), w.site) for w in run.words]

    def child_script(
        self, word: Word, args: list[Word], cmd: Command, via: str, unit: Unit, given: dict[str, Var] | None = None
    ) -> None:
        """`bash FILE`, `sbatch FILE`: FILE is looked for where a sourced file is (bash opens a relative one
        from the folder the script runs in), and run in a child shell; `given`: variables a wrapper sets in its
        environment (`env NAME=value bash FILE`)."""
        if self.output_sinks:
            self.sinks_unknown(f"the script {word.display()} ({via})")
        if word.text is None and word.display() in self.result.virtual_files:
            return self.written_script(word, args, cmd, via, unit)
        found = self.find_sourced(word, unit, f"script {word.display()} ({via})")
        if found.why is not None:
            said = found.why.say(f"script {word.display()} ({via})", "the commands it runs are unknown")
            self.result.problems.append(Problem(found.why.kind, said, word.site))
            return
        # not found where bash would look, but this script wrote (`cp`, `cat >`) one file of that name, run from a
        # folder plint cannot follow (`singularity exec --pwd ...`): that file, its values assumed
        copy = self.result.written_named(word.text) if found.source is None and word.text is not None else None
        if copy is not None:
            note = f"script {word.text} is not where bash would look from here; plint read {display_path(copy.path)}"
            self.result.problems.append(
                Problem("unresolved", f"{note}, written by this script, as the one run", word.site)
            )
            recorded = len(self.result.commands)
            self.written_script(word, args, cmd, via, unit, copy)
            self._assume_commands_since(recorded)
            return
        src = found.source
        if src is None:  # not found, or a path known only at run time
            self.result.unread_scripts.append((word.site, not_found(word, found.looked, "runs")))
        if src is None or self.depth >= MAX_DEPTH:
            return
        key = os.path.abspath(src.path)
        if key in self.active_files:
            return
        if found.assumed is not None:
            self.result.problems.append(Problem("unresolved", found.assumed, word.site))
        recorded = len(self.result.commands)
        extra = self.job_environment(cmd, via, src)
        shell = self.child_shell({**(given or {}), **extra}, cmd)
        if any(unknown_arguments(a) for a in args) and self.no_arguments():  # `bash x.sh 1 $*`: none forwarded
            args = [a for a in args if not unknown_arguments(a)]
        shell.positional = args
        shell.script_path = os.path.abspath(src.path)
        shell.parents.append((cmd, via))
        self.result.files_read.append(key)
        try:
            shell.run_file(src)
        except (ShellExit, ShellReturn, ShellBreak, ShellContinue):
            pass
        finally:
            self.steps = shell.steps
            if found.assumed is not None:  # what the script runs is read from one of two files plint guessed
                self._assume_commands_since(recorded)

    # ---- redirections, heredocs, pipelines --------------------------------------------------------
    def redirected(self, node, unit: Unit, stdin: MappedText | None = None) -> int | None:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.children if c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect")]
        heredoc = None
        out_target, append = None, False
        for r in redirects:
            if r.type == "heredoc_redirect":
                heredoc = self.heredoc(r, unit)
                for c in r.children:
                    if c.type == "file_redirect":
                        out_target, append = self._file_target(c, unit)
            elif r.type == "file_redirect":
                source = self._file_source(r, unit)
                if source is not None:  # `envsubst < template.json`: the file is the command's stdin
                    heredoc = self.file_text(source, unit)
                    continue
                target, app = self._file_target(r, unit)
                if target is not None:
                    out_target, append = target, app
            elif r.type == "herestring_redirect":
                heredoc = self.herestring(r, unit)
        self.last_output = None
        if body is None:
            return 0
        given = heredoc if heredoc is not None else stdin  # the input of a loop reading it line by line
        if out_target is not None and body.type in CAPTURED_BODIES:
            return self.captured(body, unit, out_target, append, node, given)
        if body.type == "while_statement" and given is not None and self.read_loop(body, unit, given):
            return 0
        if body.type == "pipeline":
            status = self.pipeline(body, unit)
            if out_target is not None:
                self.write(out_target, self._written_output(body, unit, out_target), append, unit, node)
                self.last_output = None
            return status
        if body.type != "command":
            status = self.statement(body, unit)
            self.last_output = None
            return status
        status = self.command(body, unit, stdin=heredoc if heredoc is not None else stdin, output=True)
        if out_target is not None:
            self.write(out_target, self._written_output(body, unit, out_target), append, unit, node)
            self.last_output = None  # it went to the file
        elif self.output_sinks and not self._stdout_elsewhere(redirects, unit):
            name = body.child_by_field_name("name")
            silent = name is not None and self.writes_nothing([Word.of(unit.text(name.start_byte, name.end_byte))])
            if not silent:
                self.to_sink(self.last_output, "a command whose output plint cannot tell")
            self.last_output = None
        return status

    def captured(
        self, body, unit: Unit, target: Word, append: bool, node, stdin: MappedText | None = None
    ) -> int | None:
        """`for ...; done > FILE` (a loop, if, case, group or subshell redirected): the file holds what the
        commands inside write to stdout, in the order they run; where plint cannot tell some of it, the file is
        written, its content known only at run time."""
        status, content = self.compound_output(body, unit, stdin)
        if content is None:
            where = unit.span(body.start_byte, body.end_byte)
            line = f" at line {where.line}" if where is not None else ""
            reason = f"{target.display()} holds what the compound command{line} writes, known only at run time"
            content = MappedText([Piece(None, unit.span(node.start_byte, node.end_byte), "unresolved", reason=reason)])
        self.write(target, content, append, unit, node)
        self.last_output = None
        return status

    def _written_output(self, body, unit: Unit, target: Word) -> MappedText:
        """What a command redirected to `target` wrote; unknown, not absent, where plint cannot tell, so that a
        file the script writes is not read from a stale copy on disk (`scontrol ... | sed ... > hostfile`)."""
        if self.last_output is not None:
            return self.last_output
        where = unit.span(body.start_byte, body.end_byte)
        line = f" at line {where.line}" if where is not None else ""
        reason = f"{target.display()} holds what the command{line} writes, known only at run time"
        return MappedText([Piece(None, where, "unresolved", reason=reason)])

    def compound_output(self, body, unit: Unit, stdin: MappedText | None) -> tuple[int | None, MappedText | None]:
        """Run a compound command collecting what it writes to stdout: (its status, the text, or None where
        plint cannot tell it). A `while read NAME` loop reads `stdin` line by line (Control.read_loop)."""
        sink = OutputSink()
        self.output_sinks.append(sink)
        try:
            read = body.type == "while_statement" and stdin is not None and self.read_loop(body, unit, stdin)
            status = 0 if read else self.statement(body, unit)
        finally:
            self.output_sinks.pop()
        if sink.unknown is not None:
            return status, None
        span = unit.span(body.start_byte, body.end_byte)
        return status, MappedText(list(self.capped(sink.pieces, "the output of a compound command", span)))

    def to_sink(self, produced: MappedText | None, why: str) -> None:
        """Where a redirected compound command collects stdout, what a command in it wrote (None: unknown)."""
        sink = self.output_sinks[-1]
        if produced is None:
            sink.unknown = sink.unknown or why
        elif sink.unknown is None:
            sink.pieces.extend(produced.pieces)

    def sinks_unknown(self, why: str) -> None:
        """Something writes to the collected stdout what plint cannot follow (a nested shell, a branch)."""
        for sink in self.output_sinks:
            sink.unknown = sink.unknown or why

    @staticmethod
    def _stdout_elsewhere(redirects, unit: Unit) -> bool:
        """Whether a command's redirections send its stdout somewhere other than the shell's (`>&2`,
        `> /dev/null`): a redirection of descriptor 1, or of none, other than an input one."""
        for r in redirects:
            if r.type != "file_redirect":
                continue
            op = next((c.type for c in r.children if not c.is_named), ">")
            descriptor = r.child_by_field_name("descriptor")
            fd = unit.text(descriptor.start_byte, descriptor.end_byte) if descriptor is not None else "1"
            if fd == "1" and op not in ("<", "<&", "<>"):
                return True
        return False

    def _file_source(self, node, unit: Unit) -> Word | None:
        """The file of a `< FILE` input redirection, when its name is known."""
        op = next((c.type for c in node.children if not c.is_named), ">")
        dest = node.child_by_field_name("destination")
        if op != "<" or dest is None or node.child_by_field_name("descriptor") is not None:
            return None
        words = self.words([dest], unit)
        # a file the environment gives by a name known only at run time (`< $PBS_NODEFILE`) is read as given
        given = bool(words) and words[0].display() in self.result.virtual_files
        return words[0] if words and (words[0].known or given) else None

    def _file_target(self, node, unit: Unit) -> tuple[Word | None, bool]:
        op = next((c.type for c in node.children if not c.is_named), ">")
        dest = node.child_by_field_name("destination")
        descriptor = node.child_by_field_name("descriptor")
        if descriptor is not None and unit.text(descriptor.start_byte, descriptor.end_byte) != "1":
            return None, False
        if op not in (">", ">>", ">|", "&>", "&>>") or dest is None:
            return None, False
        words = self.words([dest], unit)
        if not words or words[0].text in ("/dev/null", "/dev/stderr", "/dev/stdout"):
            return None, False
        return words[0], op in (">>", "&>>")

    def write(self, target: Word, content: MappedText, append: bool, unit: Unit, where) -> None:
        """Record a file the script writes; `where` is the writing node or its span."""
        text = target.text
        key = str(self.resolve_path(text, unit)) if text is not None else target.display()
        span = unit.span(where.start_byte, where.end_byte) if hasattr(where, "start_byte") else where
        if append and key in self.result.virtual_files:
            content = MappedText(
                list(
                    self.capped(self.result.virtual_files[key].content.pieces + content.pieces, f"the file {key}", span)
                )
            )
        self.result.virtual_files = {**self.result.virtual_files, key: VirtualFile(key, content, span)}  # Command.files

    def herestring(self, node, unit: Unit) -> MappedText:
        """`<<< WORD`: the expanded word (not split) and a newline."""
        pieces = [p for c in node.named_children for p in flatten(self.expand(c, unit, quoted=True))]
        return MappedText(
            list(self.capped(pieces, "a here-string", unit.span(node.start_byte, node.end_byte))) + [Piece("\n", None)]
        )

    def heredoc(self, node, unit: Unit) -> MappedText:
        start_node = next((c for c in node.children if c.type == "heredoc_start"), None)
        strip_tabs = any(c.type == "<<-" for c in node.children)
        delim = unit.text(start_node.start_byte, start_node.end_byte) if start_node is not None else "EOF"
        quoted = any(q in delim for q in ("'", '"', "\\"))
        delim = delim.replace("'", "").replace('"', "").replace("\\", "")
        # The body starts on the line after the redirect; find it in the raw bytes (tree-sitter's
        # heredoc_body is unreliable with $((...)) inside, upstream issue #325).
        data = unit.data
        body_start = data.find(b"\n", node.start_byte)
        if body_start < 0:
            return MappedText([])
        body_start += 1
        pos = body_start
        lines: list[tuple[int, int]] = []
        while pos < len(data):
            nl = data.find(b"\n", pos)
            line_end = len(data) if nl < 0 else nl
            line = data[pos:line_end]
            check = line.lstrip(b"\t") if strip_tabs else line
            if check.rstrip(b"\r") == delim.encode("utf-8", "surrogateescape"):
                break
            lines.append((pos, min(line_end + 1, len(data))))
            pos = line_end + 1
        pieces: list[Piece] = []
        for s, e in lines:
            if strip_tabs:
                while s < e and data[s : s + 1] == b"\t":
                    s += 1
            if quoted:
                pieces.extend(unit.pieces(s, e))
            else:
                line_pieces = self.expand_heredoc_line(s, e, unit)
                if self.over_budget(len(line_pieces), 0) or len(pieces) > MAX_PIECES:
                    return MappedText([self._too_big("a here-document", unit.span(node.start_byte, e))])
                pieces.extend(line_pieces)
        kept = [p for p in pieces if p.text != "" or not p.known]
        if not quoted:  # a quoted body is the file's own text: no bigger than the file
            kept = list(self.capped(kept, "a here-document", unit.span(node.start_byte, node.end_byte)))
        body = MappedText(kept)
        if lines:
            self.body_ranges[id(body)] = (lines[0][0], lines[-1][1])
        return body

    def expand_heredoc_line(self, start: int, end: int, unit: Unit, escapes: bool = True) -> list[Piece]:
        """One line of an unquoted heredoc: parameter, command and arithmetic expansion; \\$ \\` \\\\."""
        data = unit.data
        out: list[Piece] = []
        run = start
        i = start
        while i < end:
            ch = data[i : i + 1]
            if escapes and ch == b"\\" and i + 1 < end and data[i + 1 : i + 2] in (b"$", b"`", b"\\", b"\n"):
                if i > run:
                    out.extend(unit.pieces(run, i))
                if data[i + 1 : i + 2] != b"\n":
                    out.append(unit.piece(i + 1, i + 2))
                i += 2
                run = i
                continue
            if ch == b"$" and i + 1 < end:
                j = self._expansion_end(data, i, end)
                if j > i + 1:
                    if i > run:
                        out.extend(unit.pieces(run, i))
                    out.extend(self.expand_snippet(i, j, unit))
                    i = j
                    run = i
                    continue
            if ch == b"`":
                j = data.find(b"`", i + 1, end)
                if j > 0:
                    if i > run:
                        out.extend(unit.pieces(run, i))
                    out.append(unknown(f"{unit.text(i, j + 1)} is computed at run time", None, unit.span(i, j + 1)))
                    i = j + 1
                    run = i
                    continue
            i += 1
        if run < end:
            out.extend(unit.pieces(run, end))
        return out

    @staticmethod
    def _expansion_end(data: bytes, i: int, end: int) -> int:
        nxt = data[i + 1 : i + 2]
        if nxt in (b"{", b"("):
            close = b"}" if nxt == b"{" else b")"
            depth, j = 0, i + 1
            closing = data.find(close, j, end)
            while closing >= 0:  # from bracket to bracket (bytes.find), not byte by byte
                opening = data.find(nxt, j, closing)
                if opening >= 0:
                    depth, j = depth + 1, opening + 1
                    continue
                depth, j = depth - 1, closing + 1
                if depth == 0:
                    return j
                closing = data.find(close, j, end)
            return i
        j = i + 1
        if j < end and (data[j : j + 1].isalpha() or data[j : j + 1] == b"_"):
            while j < end and (data[j : j + 1].isalnum() or data[j : j + 1] == b"_"):
                j += 1
            return j
        if j < end and data[j : j + 1] in b"0123456789@*#?$!":
            return j + 1
        return i

    def expand_snippet(self, start: int, end: int, unit: Unit) -> list[Piece]:
        """An expansion found in heredoc text, parsed on its own with its real position kept; one level of
        nesting of the budget (plint.bounds.MAX_NESTING), as each level parses the text inside it again."""

        self.nesting += 1
        self.reparsed += 1
        try:
            if self.reparsed > MAX_REPARSED_NESTING or self.nesting > MAX_NESTING:
                raise OverBudget(
                    f"where expansions nest more than {min(MAX_REPARSED_NESTING, MAX_NESTING)} deep in "
                    "text parsed again (too complex: not evaluated)",
                    unit.span(start, start + 1),
                )
            return self._expand_snippet(start, end, unit)
        finally:
            self.nesting -= 1
            self.reparsed -= 1

    def _expand_snippet(self, start: int, end: int, unit: Unit) -> list[Piece]:
        text = unit.data[start:end]
        span = unit.span(start, end)
        if text.startswith(b"$((") and text.endswith(b"))"):
            return [self.arith_text(start + 3, end - 2, unit, span)]
        from plint.reading.shell.parse import TooComplex, parse

        prefix = b"X="
        data = prefix + text
        seg_piece = unit.piece(start, end)
        sub = Unit(
            data, [(0, len(prefix), Piece("X=", None)), (len(prefix), len(data), seg_piece)], unit.source, unit.unknowns
        )
        try:
            tree = parse(data)
        except TooComplex as exc:
            raise OverBudget(f"where an expansion is too complex ({exc.args[0]})") from None
        stack = [tree.root_node]
        while stack:
            n = stack.pop()
            if n.type == "variable_assignment":
                value = n.child_by_field_name("value")
                if value is None:
                    break
                return list(flatten(self.expand(value, sub, quoted=True)))
            stack.extend(reversed(n.children))
        return [seg_piece]

    def producer(
        self, words: list[Word], unit: Unit, stdin: MappedText | None, node, prefix_env: dict[str, Var] | None = None
    ) -> MappedText | None:
        """What a pure text-producing command writes to stdout (cat, tee, echo, printf, sed, envsubst, cut, and
        the line tools wc, sort, uniq and head);
        `node` is the command or its span, for the files it writes; `prefix_env` the `NAME=value`
        words before the command, which bash exports to it alone."""
        if not words or words[0].text is None:
            return None
        name = words[0].text.rsplit("/", 1)[-1]
        args = words[1:]
        if name in ("cat", "tee"):
            files = [w for w in args if not (w.text or "").startswith("-")]
            if name == "cat" and files:
                contents = [self.file_text(w, unit) for w in files]
                if any(c is None for c in contents):
                    return None
                return MappedText([p for c in contents for p in c.pieces])  # type: ignore[union-attr]
            if name == "tee" and stdin is not None:
                for w in files:
                    if w.known:
                        self.write(w, stdin, False, unit, node)
            return stdin
        if name == "echo":
            flags = []
            while args and args[0].text in ("-n", "-e", "-E", "-ne", "-en"):
                flags.append(args[0].text)
                args = args[1:]
            pieces: list[Piece] = []
            for i, w in enumerate(args):
                if i:
                    pieces.append(Piece(" ", None))
                pieces.extend(w.pieces)
            if not any("n" in f for f in flags):
                pieces.append(Piece("\n", None))
            return MappedText(pieces)
        if name == "printf" and args:
            fmt = args[0].text
            if fmt in ("%s", "%s\n", "%s\\n") and len(args) > 1:
                pieces = [p for w in args[1:] for p in w.pieces]
                if fmt != "%s":
                    pieces.append(Piece("\n", None))
                return MappedText(pieces)
            if fmt is not None and "%" not in fmt and len(args) == 1:
                if "\\" not in fmt:
                    return MappedText(list(args[0].pieces))
                # the format's escapes (printf(1): \n, \t, \\), as bash's printf builtin reads them
                decoded = re.sub(r"\\([nt\\])", lambda m: {"n": "\n", "t": "\t", "\\": "\\"}[m.group(1)], fmt)
                return MappedText([Piece(decoded, args[0].pieces[0].span if args[0].pieces else None, "derived")])
            return None
        if name == "envsubst":
            from plint.reading.shell.template import run_envsubst

            def lookup(name: str) -> Var | None:
                given = (prefix_env or {}).get(name)
                return self.lookup(name) if given is None else given.exported_copy(name)

            return run_envsubst(args, stdin, lookup)
        if name == "cut":
            from plint.reading.shell.cut import run_cut

            return run_cut(args, stdin)
        if name in LINE_TOOLS:
            from plint.reading.shell.lines import RUNNERS

            return RUNNERS[name](args, stdin, lambda w: self.file_text(w, unit))
        if name == "scontrol":
            return self.slurm_hostnames(args, node, unit)
        if name in ("yq", "jq"):
            from plint.reading.shell.query import run_query

            return run_query(name, args, stdin, lambda w: self.file_text(w, unit))
        if name in PATH_COMMANDS and all(w.known for w in words):  # `dirname "$0" | xargs realpath`
            out = pure_output([w.text for w in words], self.working_folder())[0]
            return MappedText([Piece(out + "\n", None, "derived")]) if out is not None else None
        if name == "xargs" and stdin is not None and args and (args[0].text or "-")[0] != "-" and args[0].text != name:
            # xargs CMD ARGS: CMD run once with the words of its input after ARGS (no option of xargs read)
            given = stdin.render() if all(p.known for p in stdin.pieces) else None
            if given is None or len(given.split()) > MAX_XARGS_WORDS:
                return None
            return self.producer([*args, *(Word.of(t) for t in given.split())], unit, None, node)
        if name == "sed":
            if any((w.text or "").startswith(("-i", "--in-place")) for w in args):
                return None  # edits its file in place (file_command), writes nothing to stdout
            from plint.reading.shell.sed import run_sed

            return run_sed(
                args,
                stdin,
                lambda w: self.file_text(w, unit),
                lambda w, content: self.write(w, content, False, unit, node),
            )
        return None

    def file_text(self, word: Word, unit: Unit) -> MappedText | None:
        if not word.known:
            vf = self.result.virtual_files.get(word.display())
            return vf.content if vf is not None else None
        path = self.resolve_path(word.text, unit)  # type: ignore[arg-type]
        vf = self.result.virtual_files.get(str(path))
        if vf is not None:
            return vf.content
        src, why = self.read(path)
        if src is None and why is None and not os.path.isabs(word.text):  # type: ignore[arg-type]
            # not beside the script: where a sourced file would be (a folder above it, the checked root)
            found = self.find_sourced(word, unit, f"file {word.display()}")
            if found.assumed is not None:  # two guessed folders hold different files: which one is unknown
                differ = f"{word.display()} is a different file in each of two folders the script may run from"
                return MappedText(
                    [unknown(f"{differ}, so its content is unknown ({SOURCE_PATH_HINT})", span=word.site)]
                )
            src, why = found.source, found.why
        elif src is None and os.path.isabs(word.text):  # type: ignore[arg-type]
            # outside the checked tree (`sed ... /work/alice/repo/ds_TEMPLATE.json`): the same path inside it, as a
            # sourced file's, its values assumed
            found = self.find_sourced(word, unit, f"file {word.display()}")
            if found.source is not None and found.assumed is not None:
                self.result.problems.append(Problem("unresolved", found.assumed, word.site))
                pieces = _assumed_pieces(tuple(MappedText.from_source(found.source).pieces))
                return MappedText(list(pieces), assumed=True)  # what counts its lines is assumed too
        if why is not None:  # its content is unknown, not absent
            return MappedText([unknown(f"written from {word.display()}, {why.why}", span=word.site)])
        return MappedText.from_source(src) if src is not None else None


def _assumed_pieces(pieces: tuple[Piece, ...]) -> tuple[Piece, ...]:
    return tuple(
        Piece(p.text, p.span, "assumed", p.exact, source=p.source, default_of=p.default_of) if p.known else p
        for p in pieces
    )


@record(frozen=True)
class Sourced:
    """What `source WORD` found: the file read, or why the file there is not; the paths looked at, each with
    its place; and the note saying the file was taken from two that differ."""

    source: SourceFile | None = None
    why: Unread | None = None
    looked: tuple[tuple[str, Place], ...] = ()
    assumed: str | None = None
