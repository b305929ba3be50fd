"""What stands in front of a launcher: wrappers (nohup, env A=1, numactl, time, containers, `conda run`,
`uv run`, `poetry run`, `nsys profile`, `debugpy-run`), python's own options, and words plint cannot know (`$VENV_PREFIX torchrun`, `"${PROFILE_CMD[@]}" python
-m torch.distributed.run` where the array is set on a branch plint cannot decide).

Each wrapper's grammar is its own manual's: which options take a value (so the value is not taken for the
program), and how many words it consumes after its options (timeout's DURATION, a container's IMAGE).
"""

from __future__ import annotations

import posixpath

from plint.record import field, record

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

from plint.reading.shell.model import Word

# wrapper -> (options that take a value, words the wrapper consumes after its options), from each tool's manual
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "nohup": (frozenset(), 0),
    "command": (frozenset(), 0),
    "time": (frozenset({"-o", "-f", "--output", "--format"}), 0),  # GNU time(1)
    "exec": (frozenset({"-a"}), 0),  # bash builtin
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),  # coreutils env(1)
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),  # then DURATION
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata"}), 0),
    "taskset": (frozenset(), 1),  # then the mask or cpu list
    "chrt": (frozenset({"-T", "-P", "-D"}), 1),  # then the priority
    # numactl(8): the options that take an argument
    "numactl": (
        frozenset(
            {
                "-i",
                "--interleave",
                "-p",
                "--preferred",
                "-C",
                "--physcpubind",
                "-N",
                "--cpunodebind",
                "-m",
                "--membind",
                "-P",
                "--preferred-many",
                "-w",
                "--weighted-interleave",
                "-I",
                "--shmid",
                "-S",
                "--shm",
                "-f",
                "--file",
                "-L",
                "--length",
                "-o",
                "--offset",
                "-M",
                "--shmmode",
            }
        ),
        0,
    ),
}
_CONTAINER_VALUES = frozenset(
    {  # singularity/apptainer exec|run and docker run|exec options with a value
        "-B",
        "--bind",
        "--mount",
        "--env",
        "--env-file",
        "-H",
        "--home",
        "-o",
        "--overlay",
        "--pwd",
        "-W",
        "--workdir",
        "-S",
        "--scratch",
        "--security",
        "--app",
        "--network",
        "--network-args",
        "--dns",
        "--hostname",
        "-e",
        "-v",
        "--volume",
        "--name",
        "-w",
        "--gpus",
        "--shm-size",
        "--ipc",
        "--net",
        "--ulimit",
        "-u",
        "--user",
        "--entrypoint",
        "--runtime",
        "-p",
        "--publish",
        "--device",
        "--cap-add",
        "--security-opt",
        "-h",
        "-l",
        "--label",
        "--cpus",
        "-m",
        "--memory",
        "--pid",
        "--platform",
        "--cpuset-cpus",
        "--add-host",
        "--tmpfs",
        "--log-driver",
        # the rest of `docker run`'s options with a value (docs.docker.com/reference/cli/docker/container/run)
        "--expose",
        "--restart",
        "--pull",
        "--attach",
        "--annotation",
        "--blkio-weight",
        "--cgroup-parent",
        "--cidfile",
        "--cpu-period",
        "--cpu-quota",
        "--cpu-shares",
        "--cpuset-mems",
        "--device-cgroup-rule",
        "--dns-option",
        "--dns-search",
        "--domainname",
        "--group-add",
        "--health-cmd",
        "--ip",
        "--ip6",
        "--isolation",
        "--label-file",
        "--link",
        "--log-opt",
        "--mac-address",
        "--memory-reservation",
        "--memory-swap",
        "--network-alias",
        "--oom-score-adj",
        "--pids-limit",
        "--stop-signal",
        "--stop-timeout",
        "--storage-opt",
        "--sysctl",
        "--userns",
        "--uts",
        "--volumes-from",
    }
)
# Nsight Systems `nsys profile|launch [options] <application>`: every switch of the CLI Profile Command Switch
# Options table takes a parameter (`-o out`, `--trace=cuda,nvtx`, `--force-overwrite true`) except these
# (NVIDIA Nsight Systems User Guide, UserGuide/topics/cli-profile-command-switch-options.rst).
_NSYS_NO_VALUE = frozenset({"--ftrace-keep-user-config", "--storage-metrics", "--help", "-h"})
# `debugpy-run [options] (-m MODULE | PROGRAM) [--] ARGS`: its argparse options with a value (bulletmark/debugpy-run
# debugpy_run.py); it runs `python -m debugpy ... -m MODULE ARGS`, argparse dropping the first `--`.
_DEBUGPY_RUN_VALUES = frozenset({"-p", "--port", "--log-to", "-c", "--code", "--pid"})
# `uv run [OPTIONS] [COMMAND]`: the options that take a value (astral-sh/uv docs/reference/cli.md, uv run);
# `--module/-m` runs `python -m COMMAND`, `--script/-s` and a COMMAND ending in .py run `python COMMAND`.
_UV_RUN_VALUES = frozenset(
    {
        "--allow-insecure-host",
        "--trusted-host",
        "--cache-dir",
        "--color",
        "--config-file",
        "--config-setting",
        "--config-settings",
        "-C",
        "--default-index",
        "--directory",
        "--env-file",
        "--exclude-newer",
        "--extra",
        "--extra-index-url",
        "--find-links",
        "-f",
        "--fork-strategy",
        "--group",
        "--index",
        "--index-strategy",
        "--index-url",
        "-i",
        "--keyring-provider",
        "--link-mode",
        "--no-binary-package",
        "--no-build-isolation-package",
        "--no-build-package",
        "--no-extra",
        "--no-group",
        "--only-group",
        "--package",
        "--prerelease",
        "--project",
        "--python",
        "-p",
        "--refresh-package",
        "--reinstall-package",
        "--resolution",
        "--upgrade-package",
        "-P",
        "--with",
        "--with-editable",
        "--with-requirements",
    }
)


def python_program(words: list[Word], i: int) -> tuple[Word | None, int, bool, bool]:
    """After `python`: skip interpreter options -> (program word, its index, is_module, runs `-c` code)."""
    while i < len(words):
        t = words[i].text
        if t is None:
            if (base(words[i]) or "").endswith(".py"):  # `python "${NEOX_DIR}/deepy.py"`: a script in a folder unknown
                return words[i], i, False, False
            if i + 1 < len(words) and (words[i + 1].text or "").endswith(".py"):
                i += 1  # `python3 $OPTS train.py`: unknown interpreter options (or nothing) before the script
                continue
            return words[i], i, False, False
        if t == "--":
            i += 1
            continue
        if not t.startswith("-") or t == "-":
            return words[i], i, False, False
        if t.startswith("--"):  # python(1): only --check-hash-based-pycs takes a value
            i += 2 if t == "--check-hash-based-pycs" else 1
            continue
        for pos in range(1, len(t)):  # a cluster such as -u, -um, -W ignore, -Xdev
            letter = t[pos]
            if letter in "cmWX":
                attached = pos + 1 < len(t)
                if letter == "c":
                    return None, -1, False, True
                if letter == "m":
                    if attached:
                        return words[i].slice(pos + 1), i, True, False
                    return (words[i + 1], i + 1, True, False) if i + 1 < len(words) else (None, -1, True, False)
                i += 0 if attached else 1
                break
        i += 1
    return None, -1, False, False


@record
class Unwrapped:
    index: int  # the first word after the wrappers: the launcher (or the program, or len(words))
    unknown: list[Word] = field(default_factory=list)  # unknown words read as wrappers: a launcher follows them
    # "module" | "script": the wrapper itself runs python (`uv run -m X`); "module, -- dropped": its parser also
    # drops a `--` after the module (debugpy-run's argparse REMAINDER)
    runs_python: str | None = None


def base(word: Word | None) -> str | None:
    """The command name of a word: its basename; for a path whose directory is unknown (`${VENV}/bin/torchrun`),
    the basename of the known tail."""
    if word is None:
        return None
    text = word.text
    if text is None:
        tail = []
        for piece in reversed(word.pieces):
            if piece.text is None:
                break
            tail.append(piece.text)
        text = "".join(reversed(tail))
        if "/" not in text:
            return None
    return posixpath.basename(text) or None


def _skip_options(
    words: list[Word], i: int, takes_value: frozenset[str] | Callable[[str], bool], seen: list[str] | None = None
) -> int:
    """The index after the options at words[i:]; `takes_value` names (or tests) the options whose value is the
    next word; `seen` collects the option words."""
    test = takes_value if callable(takes_value) else takes_value.__contains__
    while i < len(words):
        t = words[i].text or words[i].known_prefix()  # `--output=$NSYS_OUT`: an option, its value unknown
        if t == "--":
            return i + 1
        if not t.startswith("-") or t == "-":
            return i
        if seen is not None:
            seen.append(t)
        i += 2 if test(t) else 1
    return i


def _nsys_takes_value(option: str) -> bool:
    """After `nsys profile`: every option takes a value, in the next word unless attached (`--stats=true`,
    `-tcuda`)."""
    attached = "=" in option or (not option.startswith("--") and len(option) > 2)
    return not attached and option not in _NSYS_NO_VALUE


def _skip_uv_run(words: list[Word], i: int) -> tuple[int, str | None]:
    seen: list[str] = []
    i = _skip_options(words, i, _UV_RUN_VALUES, seen)
    if {"-m", "--module"} & set(seen):
        return i, "module"
    if {"-s", "--script"} & set(seen) or (i < len(words) and (words[i].text or "").endswith(".py")):
        return i, "script"  # `uv run file.py` is `uv run python file.py`
    return i, None


def _one_wrapper(words: list[Word], i: int) -> tuple[int, str | None] | None:
    """(index after the wrapper at words[i], what it runs itself) or None when words[i] is no wrapper."""
    name = base(words[i])
    if name in _WRAPPERS:
        with_value, consumed = _WRAPPERS[name]
        i = _skip_options(words, i + 1, with_value)
        if name == "env":
            while i < len(words) and "=" in (words[i].text or "") and not (words[i].text or "").startswith("-"):
                i += 1
        return i + consumed, None
    nxt = words[i + 1].text if i + 1 < len(words) else None
    if name in ("singularity", "apptainer") and nxt in ("exec", "run"):
        return _skip_options(words, i + 2, _CONTAINER_VALUES) + 1, None  # the image
    if name in ("docker", "podman") and nxt in ("run", "exec"):
        return _skip_options(words, i + 2, _CONTAINER_VALUES) + 1, None  # the image or container
    if name in ("conda", "mamba", "micromamba") and nxt == "run":
        return _skip_options(words, i + 2, frozenset({"-n", "--name", "-p", "--prefix", "--cwd"})), None
    if name == "nsys" and nxt in ("profile", "launch"):
        return _skip_options(words, i + 2, _nsys_takes_value), None
    if name == "uv" and nxt == "run":
        return _skip_uv_run(words, i + 2)
    if name == "poetry" and nxt == "run":  # global options with a value (python-poetry.org/docs/cli)
        return _skip_options(words, i + 2, frozenset({"-C", "--directory", "-P", "--project"})), None
    if name == "debugpy-run":
        return _skip_debugpy_run(words, i + 1)
    return None


def _skip_debugpy_run(words: list[Word], i: int) -> tuple[int, str | None]:
    while i < len(words):
        t = words[i].text or ""
        if t in ("-m", "--module"):
            return i + 1, "module, -- dropped"  # the module is the value of -m
        if t == "--" or not t.startswith("-"):
            break
        i += 2 if t in _DEBUGPY_RUN_VALUES else 1
    i += 1 if i < len(words) and words[i].text == "--" else 0
    return i, "script" if i < len(words) and (words[i].text or "").endswith(".py") else None


# commands that print, test or look up their arguments rather than run them: never a wrapper
_NOT_RUNNING = frozenset(
    {
        "echo",
        "printf",
        "print",
        "log",
        "logger",
        "tee",
        "cat",
        "grep",
        "egrep",
        "fgrep",
        "which",
        "type",
        "hash",
        "alias",
        "help",
        "man",
        "info",
        "whereis",
        "whatis",
        "ls",
        "test",
        "read",
        "declare",
        "local",
        "export",
        "readonly",
        "set",
        "unset",
        "shift",
        "return",
        "exit",
        "source",
        ".",
        "eval",
        "trap",
        "cd",
        "pushd",
        "popd",
        "wait",
        "kill",
        "sleep",
        "true",
        "false",
        ":",
        "pip",
        "pip3",
        "conda",
        "module",
        "ml",
        "mkdir",
        "rm",
        "cp",
        "mv",
        "touch",
        "chmod",
        "ln",
        "sed",
        "awk",
        "head",
        "tail",
        "wc",
        "sort",
        "uniq",
        "cut",
        "tr",
        "xargs",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "date",
        "hostname",
        "nvidia-smi",
        "git",
        "wget",
        "curl",
        "ssh",
        "scp",
    }
)


def _script_before_launcher(words: list[Word], i: int, starts_launcher: Callable[[list[Word], int], bool]) -> bool:
    """`./local_rank.sh python3 train.py`: a shell script handed a launch as its arguments (the rank-binding
    helpers of MPI launches set per-rank variables, then run their arguments); and `launch python3 train.py`
    named first: a command plint does not know (a function of a file it could not read, `source <(curl ...)`)
    in front of a python or launcher command it is handed."""
    name = base(words[i])
    if not name or i + 1 >= len(words) or not starts_launcher(words, i + 1):
        return False
    if i == 0:  # the command itself: a script named first the shell runs as a child, read on its own
        return (
            "/" not in (words[i].text or "/") and "." not in name and name not in _NOT_RUNNING and name not in _WRAPPERS
        )
    return name.endswith(".sh")


def unwrap_words(
    words: list[Word], i: int = 0, starts_launcher: Callable[[list[Word], int], bool] | None = None
) -> Unwrapped:
    """The words after the wrappers at words[i:]. An unknown word is read as a wrapper only when a launcher
    (as `starts_launcher` tells) follows it, possibly behind more wrappers: `$VENV_PREFIX torchrun ...`."""
    pending: list[Word] = []  # unknown words awaiting a launcher after them
    first_pending = -1
    while i < len(words):
        if starts_launcher is not None and starts_launcher(words, i):
            return Unwrapped(i, pending)
        if starts_launcher is not None and (
            not words[i].known and base(words[i]) is None or _script_before_launcher(words, i, starts_launcher)
        ):
            if not pending:
                first_pending = i
            pending.append(words[i])
            i += 1
            continue
        step = _one_wrapper(words, i)
        if step is None:
            break
        i, runs = step
        if runs is not None:
            return Unwrapped(i, pending, runs)
    if pending:
        return Unwrapped(first_pending)  # nothing recognisable after them: the first unknown word is the program
    return Unwrapped(i)
