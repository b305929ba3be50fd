"""The evaluator's simple commands: recording them, builtins, getopts, functions, nested commands
(a mixin of plint.reading.shell.evaluator.Shell)."""

from __future__ import annotations

import re
from contextlib import contextmanager

import os

from plint.reading.shell import arith
from plint.reading.shell.core import ShellCore
from plint.reading.shell.arguments import getopts_step
from plint.reading.shell.model import Command, MappedText, Piece, Problem, Var, VirtualFile, Word, unknown
from plint.reading.shell.unit import Unit
from plint.root import is_under
from plint.source import SourceFile
from plint.bounds import parse_index
from plint.reading.shell.fields import unknown_arguments, var_text
from plint.reading.shell.lines import grep_quiet
from plint.reading.shell.state import (
    DECLARE,
    MAX_COMMAND_WORDS,
    MAX_DEPTH,
    NOT_FOUND_PREFIX,
    SBATCH_FLAGS,
    QSUB_VALUE_OPTIONS,
    SHELLS,
    SILENT_COMMANDS,
    ShellBreak,
    OverBudget,
    ShellContinue,
    ShellExit,
    ShellReturn,
    SUBMITTERS,
)

# a word of the form NAME=... (bash(1), "DEFINITIONS": name, then `=` or `+=`)
_ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


class Commands(ShellCore):
    # ---- commands ---------------------------------------------------------------------------------
    @staticmethod
    def _command_parts(node):
        prefix, rest, seen_name = [], [], False
        for c in node.named_children:
            if (
                not seen_name
                and c.type in ("variable_assignment", "file_redirect")
                and node.child_by_field_name("name") is not None
            ):
                prefix.append(c)
                continue
            if c.type == "command_name":
                seen_name = True
                rest.append(c.named_children[0] if c.named_children else c)
                continue
            if c.type in ("file_redirect", "herestring_redirect", "comment"):
                continue
            if seen_name:
                rest.append(c)
            else:
                prefix.append(c)
        return prefix, rest

    def command(self, node, unit: Unit, stdin: MappedText | None = None, output: bool = False) -> int | None:
        """Run a simple command. With `output`, what it writes to stdout (when plint can tell) is
        left in self.last_output for the next stage of a pipeline or a redirection."""
        if output:
            self.last_output = None
        if node.named_child_count > MAX_COMMAND_WORDS:  # counted without building a node per word
            raise OverBudget(
                f"at a command of {node.named_child_count:,} words (plint's bound is "
                f"{MAX_COMMAND_WORDS:,}; too complex: not evaluated)",
                unit.span(node.start_byte, node.start_byte + 1),
            )
        prefix, rest = self._command_parts(node)
        name_node = node.child_by_field_name("name")
        if name_node is None:
            for c in prefix:
                if c.type == "variable_assignment":
                    self.assign(c, unit)
            return 0
        # tree-sitter-bash sometimes glues a line of assignments onto the next line's command
        if prefix and b"\n" in unit.data[prefix[-1].end_byte : name_node.start_byte].replace(b"\\\n", b""):
            for c in prefix:
                if c.type == "variable_assignment":
                    self.assign(c, unit)
            prefix = []
        words = self.words(rest, unit)
        if not words:  # `$EMPTY` alone: the assignments before it stay in the shell
            for c in prefix:
                if c.type == "variable_assignment":
                    self.assign(c, unit)
            return 0
        assignments: dict[str, Var] = {}
        for c in prefix:
            if c.type == "variable_assignment":
                self.assign(c, unit, env=assignments)
        site = unit.span(node.start_byte, node.end_byte)
        herestring = next((c for c in node.children if c.type == "herestring_redirect"), None)
        if herestring is not None:
            stdin = self.herestring(herestring, unit)
        if output:
            self.last_output = self.producer(words, unit, stdin, site, assignments)
        elif self.output_sinks and not self.writes_nothing(words):
            produced = self.producer(words, unit, stdin, site, assignments)
            self.to_sink(produced, f"{words[0].display()} writes what plint cannot tell")
        return self.run(words, site, unit, assignments, stdin, node)

    def not_found(self, name: Word, site) -> int:
        """`$ENV_ARGS torchrun ...` with ENV_ARGS="WANDB_DISABLED=true": a word that an expansion or quotes made
        is never an assignment, so bash looks for a program of that name (bash(1), SIMPLE COMMAND EXPANSION:
        assignments are recognised before expansion) and the command fails, 127, running nothing."""
        shown = name.display()
        self.result.problems.append(
            Problem(
                "shell-error",
                f"{NOT_FOUND_PREFIX}{shown}` as a command name (a word an expansion or quotes make is never an assignment): "
                "command not found (status 127), so nothing of this command runs; put `env` before it or export the "
                "variables",
                site,
            )
        )
        return 127

    def writes_nothing(self, words: list[Word]) -> bool:
        """Whether a command adds nothing of its own to a collected stdout: a builtin or tool that prints
        nothing (SILENT_COMMANDS, `printf -v`), or a function of the script, whose commands are collected as
        they run."""
        name = words[0].text
        if name in SILENT_COMMANDS or name in self.functions:
            return True
        return name == "printf" and len(words) > 1 and words[1].text == "-v"

    def record(self, words: list[Word], site, assignments: dict[str, Var]) -> Command:
        parent, via = self.parents[-1] if self.parents else (None, None)
        cmd = Command(
            words,
            site,
            dict(self.vars),
            assignments,
            parent,
            via,
            tuple(self.conditions),
            self.loops > 0,
            self.result.virtual_files,
        )
        self.result.commands.append(cmd)
        return cmd

    def run(
        self,
        words: list[Word],
        site,
        unit: Unit,
        assignments: dict[str, Var],
        stdin: MappedText | None,
        node=None,  # the command's node in unit.tree, where a directive above it is looked for
    ) -> int | None:
        name = words[0].text
        args = words[1:]
        if name is None:
            self.record(words, site, assignments)
            return None
        if _ASSIGNMENT_WORD.match(name):
            return self.not_found(words[0], site)
        base = name.rsplit("/", 1)[-1]
        if base in DECLARE:
            self.declare_words(base, args)
            return 0
        if name in self.functions and self.depth < MAX_DEPTH:
            self.record(words, site, assignments)
            with self.prefixed(assignments):
                return self.call(name, args)
        cmd = self.record(words, site, assignments)
        texts = [w.text for w in args]
        if base in ("source", "."):
            if args:
                with self.prefixed(assignments):
                    self.source(args[0], args[1:], unit, node)
            return 0
        if base == "eval":
            pieces: list[Piece] = []
            for i, w in enumerate(args):
                if i:
                    pieces.append(Piece(" ", None))
                pieces.extend(w.pieces)
            self.second_parse(pieces, unit, cmd, "eval", fresh=False)
            return None
        if base in ("set", "shift", "unset", "cd"):
            return self.shell_state(base, args, texts, site)
        if base == "getopts":
            return self.getopts(args)
        if base in ("true", ":"):
            return 0
        if base == "false":
            return 1
        if base == "exit":
            raise ShellExit(site)
        if base == "return":
            raise ShellReturn()
        if base == "break":
            raise ShellBreak()
        if base == "continue":
            raise ShellContinue()
        if base == "[":
            last = args[-1].text if args else ""
            if last is None:
                return None
            # bash's `[` fails (status 2, "[: missing `]'") unless its last argument is `]`: `[ $X -eq 1]`
            return self.test_words(args[:-1]) if last == "]" else 2
        if base == "test":
            return self.test_words(args)
        if base in ("read", "mapfile", "readarray") or (base == "printf" and texts[:1] == ["-v"]):
            return self.text_builtin(base, args, site, stdin, self.ifs_for(assignments))
        if base == "let":
            for t in texts:
                if t is not None:
                    self.arith_text_plain(t, site)
            return None
        if base in ("sed", "cp", "mv"):
            self.file_command(base, args, unit, site)
        self.nested(words, cmd, unit, stdin)
        return grep_quiet(texts, stdin) if base == "grep" else None

    def shell_state(self, base: str, args: list[Word], texts: list[str | None], site) -> int | None:
        """The builtins that change the shell's own state: positional parameters, variables, the folder."""
        if base == "set":
            if "--" in texts:
                self.positional = args[texts.index("--") + 1 :]
        elif base == "shift":
            n = _shift_count(texts[0] if texts else None)
            if self.positional is not None:
                self.positional = self.positional[n:]
        elif base == "unset":
            self.unset([t for t in texts if t is not None])
        else:
            return self.change_folder(args, site)
        return 0

    def change_folder(self, args: list[Word], site) -> int | None:
        """`cd DIR`: bash moves and sets $PWD, where a script it then runs or sources by a relative path is
        found (source_path.places); a folder plint cannot know (a variable's, `cd`, `cd -`, `~`) leaves $PWD
        unknown. The status: 0 into a folder of the checked tree, else unknown (it may not exist)."""
        from plint.reading.shell.source_path import checked_root

        operands = [w for w in args if w.text is None or not w.text.startswith("-") or w.text == "-"]
        target = operands[0].text if operands else None
        here = self.current_folder()
        status = None
        if target is not None and target != "-" and not target.startswith("~") and (here or target.startswith("/")):
            folder = os.path.normpath(os.path.join(here or "/", target))
            piece = Piece(folder, None, "derived")
            root = os.path.abspath(checked_root(self.script_path))
            status = 0 if is_under(folder, root) and os.path.isdir(folder) else None
        else:
            piece = unknown("cd moved to a folder plint cannot know", "PWD", site)
        self.vars["PWD"] = Var("PWD", (piece,), None, True, site)
        return status

    def ifs_for(self, assignments: dict[str, Var]) -> str | None:
        """The IFS a command sees (`IFS=: read ...`, else the shell's; unset: bash's blank, tab and newline);
        None when it is unknown."""
        var = assignments.get("IFS") or self.vars.get("IFS")
        return " \t\n" if var is None else var_text(var)

    def text_builtin(
        self, base: str, args: list[Word], site, stdin: MappedText | None, ifs: str | None = " \t\n"
    ) -> int | None:
        """`read`, `mapfile`/`readarray` and `printf -v` (shell/builtins.py): the variables they set."""
        from plint.reading.shell.builtins import mapfile_values, printf_value, read_values

        def keep(name: str, value: tuple = (), items: tuple | None = None) -> None:
            exported = self.vars[name].exported if name in self.vars else False
            self.vars[name] = Var(name, value, items, exported, site)

        if base == "printf":
            given = printf_value(args, site)
            if given is None:
                return None
            keep(*given)
            return 0
        if base == "read":
            read = read_values(args, stdin, site, ifs)
            if read is None:
                return None
            values, status = read
            for name, value in values.items():
                if name.endswith("[]"):
                    keep(name[:-2], (), value)
                else:
                    keep(name, value)
            return status
        mapped = mapfile_values(args, stdin, site)
        if mapped is None:
            return None
        keep(mapped[0], (), mapped[1])
        return 0

    def file_command(self, name: str, args: list[Word], unit: Unit, site) -> None:
        """Commands that change files a later command reads: `sed -i` and `cp`/`mv` of a written file
        (envsubst writes only to stdout: Shell.producer reads it)."""
        if name == "sed":
            if any((w.text or "").startswith(("-i", "--in-place")) for w in args):
                from plint.reading.shell.sed import run_sed

                run_sed(
                    args,
                    None,
                    lambda w: self.file_text(w, unit),
                    lambda w, content: self.write(w, content, False, unit, site),
                )
            return
        paths = [w for w in args if not (w.text or "").startswith("-")]
        if len(paths) != 2:
            return
        content = self.file_text(paths[0], unit)
        if content is None:
            return
        target, text = paths[1], paths[1].text
        if text is not None and (text.endswith("/") or os.path.isdir(self.resolve_path(text, unit))):
            target = Word(target.pieces + (Piece(os.path.basename(paths[0].display()), None),), target.site)
        self.write(target, content, False, unit, site)
        moved = paths[0].text
        if name == "mv" and moved is not None:
            gone = str(self.resolve_path(moved, unit))
            self.result.virtual_files = {k: v for k, v in self.result.virtual_files.items() if k != gone}

    def written_script(
        self, word: Word, args: list[Word], cmd: Command, via: str, unit: Unit, file: VirtualFile | None = None
    ) -> None:
        """`sbatch $DIR/job.sbatch`, named only at run time, where the script itself wrote a file under that same
        name (`cat > $DIR/job.sbatch <<EOF`): that file, run in a child shell as a read one is; its #SBATCH lines
        read with the unknown parts as ${NAME}, so that they read as unknown, never as text."""
        if self.depth >= MAX_DEPTH:
            return
        content = (file or self.result.virtual_files[word.display()]).content
        shown = SourceFile(word.display(), Word(tuple(content.pieces)).display())
        extra = self.job_environment(cmd, via, shown)
        self.second_parse(content.pieces, unit, cmd, via, fresh=True, positional=args, extra=extra)

    def no_arguments(self) -> bool:
        """Whether to read the script as run with no arguments at a loop over them (none given)."""
        if self.positional is not None or not self.options.no_arguments:
            return False
        self.result.argument_loops = True
        return True

    def getopts(self, args: list[Word]) -> int | None:
        """`getopts OPTSTRING NAME [ARGS]` over the script's (or the function's) arguments; with none
        given it ends at once, so `while getopts ...` runs no time, as with no arguments."""
        texts = [w.text for w in args]
        if len(texts) < 2 or texts[0] is None or not texts[1] or not texts[1].isidentifier():
            return None
        if len(texts) > 2:
            words = args[2:]
        elif self.no_arguments():
            return 1
        elif self.positional is None:
            return None
        else:
            words = list(self.positional)
        optind = arith.evaluate(var_text(self.vars.get("OPTIND")) or "1", lambda n: None).value or 1
        offset = self.getopts_offset if optind == self.getopts_at else 0
        step = getopts_step(texts[0], [w.text for w in words], optind, offset)
        value = words[step.optind - 2] if step.unknown_optarg else None
        if step.status is None or (value is not None and value.spread):  # `-H $(cat f)`, maybe no word: unknown
            why = f"getopts reads an argument plint does not know ({texts[1]} and OPTARG are unknown)"
            self.vars[texts[1]] = Var(texts[1], (unknown(why, texts[1]),))
            self.vars["OPTARG"] = Var("OPTARG", (unknown(why, "OPTARG"),))
            return None
        self.getopts_at, self.getopts_offset = step.optind, step.offset
        self.vars[texts[1]] = Var(texts[1], (Piece(step.name or "?", None, "derived"),))
        self.vars["OPTIND"] = Var("OPTIND", (Piece(str(step.optind), None, "derived"),))
        if value is not None:
            self.vars["OPTARG"] = Var("OPTARG", value.pieces)
        elif step.optarg is not None:  # a whole word (`-t 2`) keeps where it was written
            whole = words[step.optind - 2] if 0 <= step.optind - 2 < len(words) else None
            self.vars["OPTARG"] = Var(
                "OPTARG",
                whole.pieces
                if whole is not None and whole.text == step.optarg
                else (Piece(step.optarg, None, "derived"),),
            )
        return step.status

    @contextmanager
    def prefixed(self, assignments: dict[str, Var]):
        """`GBS=64 source cfg.sh`, `GBS=64 run_fn`: the command's `NAME=value` prefixes are the shell's variables
        (exported) while it runs, and the values before it after (bash's temporary environment of a builtin or
        function)."""
        before = {k: self.vars.get(k) for k in assignments}
        self.vars.update({k: v.exported_copy() for k, v in assignments.items()})
        try:
            yield
        finally:
            for k, v in before.items():
                if v is None:
                    self.vars.pop(k, None)
                else:
                    self.vars[k] = v

    def call(self, name: str, args: list[Word]) -> int | None:
        body, unit = self.functions[name]
        saved_positional = self.positional
        if not (self.positional is None and len(args) == 1 and unknown_arguments(args[0])):
            self.positional = args  # `main "$@"` with no arguments given keeps them not given
        self.locals.append({})
        self.depth += 1
        try:
            return self.statement(body, unit)
        except ShellReturn:
            return None
        finally:
            self.depth -= 1
            for k, v in self.locals.pop().items():
                if v is None:
                    self.vars.pop(k, None)
                else:
                    self.vars[k] = v
            self.positional = saved_positional

    def nested(self, words: list[Word], cmd: Command, unit: Unit, stdin: MappedText | None = None) -> None:
        """A shell started with a command string (`bash -c STR`, `srun ... sh -c STR`,
        `sbatch --wrap STR`), a script file (`bash FILE`, `sbatch FILE`, `srun ... bash FILE`,
        `./run.sh`) or a script on stdin (`sbatch <<EOF`, `bash -s <<EOF`)."""
        texts = [w.text for w in words]
        if texts and (texts[0] or "").rsplit("/", 1)[-1] in _RUNS_NO_ARGUMENT:
            return  # `echo nsys profile bash ./run.sh`: words printed or read as data, no shell started
        for i, t in enumerate(texts):
            base = t.rsplit("/", 1)[-1] if t else None
            if base in SHELLS:
                j = i + 1
                while (
                    j < len(texts)
                    and (texts[j] or "").startswith(("-", "+"))
                    and texts[j] != "--"
                    and not _runs_string(texts[j])
                ):
                    j += 2 if _takes_a_value(texts[j]) else 1
                reads_stdin = "-s" in texts[i + 1 : j] or j >= len(words)
                if j < len(texts) and texts[j] == "--":
                    j += 1
                given = env_assignments(words[:i])
                if j < len(texts) and _runs_string(texts[j]) and j + 1 < len(words):
                    self.second_parse(
                        list(words[j + 1].pieces),
                        unit,
                        cmd,
                        "bash -c",
                        fresh=True,
                        positional=words[j + 3 :],
                        extra=given,
                        arg0=words[j + 2] if j + 2 < len(words) else None,
                    )
                elif reads_stdin and stdin is not None:
                    self.stdin_script(stdin, words[j:], cmd, "bash FILE", unit)
                elif j < len(words):
                    self.child_script(words[j], words[j + 1 :], cmd, "bash FILE", unit, given)
                return
            if base == "bcprun":  # NGC's `bcprun ... --cmd STR`: a shell runs STR on each node (launch_bcprun)
                command = _bcprun_command(words, i)
                if command is not None:
                    self.second_parse(list(command.pieces), unit, cmd, "bcprun", fresh=True, positional=[])
                return
            if base in ("ssh", "pdsh"):
                # ssh and pdsh join their command's words with blanks and the remote shell parses the string again
                # (`ssh HOST torchrun ...`, `ssh HOST eval "cd X && torchrun ..."`, `pdsh -w HOSTS "export ...; bash
                # train.sh"`, which runs it on every host)
                start = _ssh_command(texts, i) if base == "ssh" else _pdsh_command(texts, i)
                if start is not None:
                    self.second_parse(_joined(words[start:]), unit, cmd, base, fresh=True, positional=[])
                return
            if base == "qsub":
                self.submit_to_qsub(words, texts, i, cmd, unit, stdin)
                return
            if base == "sbatch":
                j = i + 1
                while j < len(texts):
                    t2 = texts[j]
                    if t2 is None:  # `--job-name=$X`
                        t2 = words[j].display()
                    if not t2.startswith("-"):
                        break
                    if t2 == "--wrap" and j + 1 < len(words) or t2.startswith("--wrap="):
                        wrapped = words[j + 1] if t2 == "--wrap" else words[j].after(len("--wrap="))
                        extra = (
                            self.options.child_env(cmd, "sbatch", SourceFile(unit.source.path, ""))
                            if self.options.child_env
                            else {}
                        )
                        self.second_parse(
                            list(wrapped.pieces), unit, cmd, "sbatch", fresh=True, positional=[], extra=extra
                        )
                        return
                    j += 1 if "=" in t2 or t2 in SBATCH_FLAGS or not t2.startswith("-") else 2
                if j < len(words):
                    self.child_script(words[j], words[j + 1 :], cmd, "sbatch", unit)
                elif stdin is not None:
                    self.stdin_script(stdin, [], cmd, "sbatch", unit)
                return
        script = _script_run_by_path(texts)
        if script is not None:
            self.child_script(words[script], words[script + 1 :], cmd, "bash FILE", unit)

    def job_environment(self, cmd: Command, via: str, script: SourceFile) -> dict[str, Var]:
        """What a job `cmd` submits (`sbatch job.sh`, `qsub job.sh`) starts with: the variables its scheduler gives it,
        and the files it names (PBS's node file), put where the job's script reads them."""
        if via not in SUBMITTERS:
            return {}
        if self.options.child_files is not None:
            files = self.options.child_files(cmd, via, script)
            if files:  # a new mapping: the commands recorded so far keep the files they saw (Command.files)
                self.result.virtual_files = {
                    **self.result.virtual_files,
                    **{key: VirtualFile(key, content) for key, content in files.items()},
                }
        return self.options.child_env(cmd, via, script) if self.options.child_env is not None else {}

    def submit_to_qsub(
        self, words: list[Word], texts: list[str | None], i: int, cmd: Command, unit: Unit, stdin: MappedText | None
    ) -> None:
        """`qsub [OPTIONS] SCRIPT [ARGS]` (PBS or Grid Engine): SCRIPT runs as a batch job, in the environment its
        scheduler gives it; with no script named, the job script comes on stdin."""
        j = i + 1
        while j < len(texts):
            option = texts[j] or words[j].display()
            if option == "--":  # PBS: what follows is the job's executable and its arguments
                j += 1
                break
            if not option.startswith("-"):
                break
            j += 3 if option == "-pe" else 2 if option in QSUB_VALUE_OPTIONS else 1
        if j < len(words):
            self.child_script(words[j], words[j + 1 :], cmd, "qsub", unit)
        elif stdin is not None:
            self.stdin_script(stdin, [], cmd, "qsub", unit)

    def slurm_hostnames(self, args: list[Word], node, unit: Unit) -> MappedText | None:
        """`scontrol show hostnames [$SLURM_JOB_NODELIST]`: the job's node list expanded, one host name a line. The
        names are known when the job runs; their count is the job's node count where its options fix it
        (SLURM_JOB_NUM_NODES, from #SBATCH --nodes). None for another list or another scontrol command."""
        from plint.reading.shell.lines import job_hosts, names_own_nodes

        count = var_text(self.lookup("SLURM_JOB_NUM_NODES")) if names_own_nodes(args) else None
        if count is None or not count.isdigit() or len(count) > 6:
            return None
        span = unit.span(node.start_byte, node.end_byte) if hasattr(node, "start_byte") else node
        return job_hosts(int(count), span)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_assignments(words: list[Word]) -> dict[str, Var]:
    """The variables `env NAME=value ... CMD` puts in CMD's environment (coreutils env(1)), from the words before
    CMD; none when env is not among them, or clears or unsets the environment (-i, -u: not followed)."""
    at = next((k for k, w in enumerate(words) if (w.text or "").rsplit("/", 1)[-1] == "env"), None)
    if at is None:
        return {}
    out: dict[str, Var] = {}
    for word in words[at + 1 :]:
        name, eq, _ = word.known_prefix().partition("=")
        if not eq or _NAME.fullmatch(name) is None:
            if (word.text or "").startswith("-"):
                return {}  # -i, -u NAME, -C DIR, -S STR: an environment plint does not rebuild
            break
        out[name] = Var(name, word.after(len(name) + 1).pieces, exported=True, span=word.value_span)
    return out


# commands that print or test their words, or use them as files, and run none of them (`echo $cmd` of a command
# string, `cp run.sh logs/`: bash starts no shell there; a script copied and then run is read where it runs)
_RUNS_NO_ARGUMENT = frozenset(
    ("echo", "printf", ":", "true", "false", "test", "[", "logger", "which", "type")
    + ("cp", "mv", "rm", "ln", "install", "chmod", "chown", "touch", "cat", "head", "tail", "less", "more", "tee")
    + ("ls", "stat", "file", "wc", "diff", "grep", "sed", "awk", "tar", "zip", "gzip", "scp", "rsync", "dos2unix")
)

# ssh(1)'s options that take a value (its synopsis: -B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -P -p -Q -R -S -W -w)
_SSH_VALUE_OPTIONS = frozenset("BbcDEeFIiJLlmOoPpQRSWw")


def _ssh_command(texts: list[str | None], i: int) -> int | None:
    """Where the command of `ssh [options] destination command...` (texts[i] is ssh) begins: after the options,
    each of a cluster (`-tt`, `-p22`, `-i key`) ending at the first that takes a value, and the destination.
    None for a login with no command, or options plint cannot read."""
    j = i + 1
    while j < len(texts) and (texts[j] or "").startswith("-"):
        flag = texts[j] or ""
        j += 1
        if flag == "--":
            break
        for k, letter in enumerate(flag[1:], start=2):
            if letter in _SSH_VALUE_OPTIONS:
                j += 0 if flag[k:] else 1  # `-p22` holds its value, `-p 22` takes the next word
                break
    return j + 1 if j + 1 < len(texts) else None  # texts[j] is the destination


# pdsh's options that take a value (pdsh(1): -w hosts, -x excluded, -g/-X groups, -l user, -t/-u timeouts, -f fanout,
# -R rcmd module, -M misc module); its option parsing stops at the first word that is no option
_PDSH_VALUE_OPTIONS = frozenset("wxgXltufRM")


def _pdsh_command(texts: list[str | None], i: int) -> int | None:
    """Where the command of `pdsh [options] command...` (texts[i] is pdsh) begins; None when pdsh is given no command
    (it then reads commands interactively) or an option plint cannot read."""
    j = i + 1
    while j < len(texts):
        flag = texts[j]
        if flag is None:
            return None
        if flag == "--":
            j += 1
            break
        if not flag.startswith("-") or flag == "-":
            break
        j += 1
        for k, letter in enumerate(flag[1:], start=2):
            if letter in _PDSH_VALUE_OPTIONS:
                j += 0 if flag[k:] else 1  # `-wnode[1-2]` holds its value, `-w node[1-2]` takes the next word
                break
    return j if j < len(texts) else None


def _bcprun_command(words: list[Word], i: int) -> Word | None:
    """The command string of `bcprun [options] --cmd STR` (words[i] is bcprun; `-c STR`, `--cmd=STR`)."""
    for j in range(i + 1, len(words)):
        text = words[j].text
        if text in ("-c", "--cmd"):
            return words[j + 1] if j + 1 < len(words) else None
        if (words[j].known_prefix() or "").startswith("--cmd="):
            return words[j].after(len("--cmd="))
    return None


def _joined(words: list[Word]) -> list[Piece]:
    """The words of a remote command as the one string ssh sends: joined by blanks, for the remote shell to
    parse again (`ssh HOST eval "cd X && torchrun ..."` runs the string)."""
    pieces: list[Piece] = []
    for k, word in enumerate(words):
        if k:
            pieces.append(Piece(" "))
        pieces.extend(word.pieces)
    return pieces


_INTERPRETERS = ("python", "python3", "torchrun", "deepspeed", "accelerate")


def _takes_a_value(option: str | None) -> bool:
    """A shell option whose value is the next word: `-o pipefail`, `+O extglob` (also ending a cluster, `-eo
    pipefail`), `--rcfile FILE`, `--init-file FILE` (bash(1), OPTIONS and the set builtin)."""
    if option in ("--rcfile", "--init-file"):
        return True
    return option is not None and not option.startswith("--") and len(option) >= 2 and option[-1] in "oO"


def _runs_string(option: str | None) -> bool:
    """`-c` alone or in a cluster of the shell's short options (`bash -lc STR`, `sh -ec STR`): the first word after
    the options is the command string (bash(1), OPTIONS)."""
    return option is not None and option.startswith("-") and not option.startswith("--") and "c" in option[1:]


def _script_run_by_path(texts: list[str | None]) -> int | None:
    """Where a shell script is run by its path: `./run.sh ARGS`, or after a launcher's options
    (`srun -N 2 ./scripts/entry.sh ARGS`, a site's container entry script). A name with a slash is run
    as a file (bash(1), COMMAND EXECUTION); so is a bare name under srun, whose tasks exec a program not on
    PATH from the working directory (slurmstepd's _build_path, src/slurmd/slurmstepd/task.c: `srun launch.sh
    ...`). The words after it are its arguments, "$@" inside. Not past a program that takes the rest as its own
    arguments (python, torchrun...)."""
    by_srun = bool(texts) and (texts[0] or "").rsplit("/", 1)[-1] == "srun"
    for i, t in enumerate(texts):
        if t is None:
            continue  # an option's value plint cannot know (`--container-mounts "$PWD:/ws"`)
        base = t.rsplit("/", 1)[-1]
        if base.startswith(_INTERPRETERS) or base.endswith(".py"):
            return None
        if t.endswith(".sh") and not t.startswith("-") and ("/" in t or by_srun):
            after = (texts[i + 1] or "").rsplit("/", 1)[-1] if i + 1 < len(texts) else ""
            # `./bind_gpu.sh python3 train.py`: a per-rank wrapper of a program, read as a wrapper
            return None if i > 0 and after.startswith(_INTERPRETERS) else i
    return None


def _shift_count(text: str | None) -> int:
    """`shift N`: N positional parameters (1 without N)."""
    return parse_index(text) if text and text.isdigit() else 1
