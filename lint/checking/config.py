"""Configuration: `[tool.plint]` in pyproject.toml or a `.plint.toml`, found by walking up from the
checked file and stopping at the git root; the nearest file wins, with no merging (as ruff does).

A `.plint.toml` (or any file given to --config that is not a pyproject.toml) holds the settings at top
level, or under `[tool.plint]` as a pyproject.toml does, so the block of docs/configuration.md can be pasted into either
file. One form per file: settings at top level beside a `[tool.plint]` table, or a `[tool]` table
with no `plint` in it, is an error that says so. (ruff reads a ruff.toml at top level only and
refuses `[tool.ruff]` there, astral-sh/ruff issue 4725; plint takes both, since the pyproject form is
the one people copy from a README.)

Validation is a few direct checks with clear messages (importing jsonschema would cost more than
the whole check); schemas/config.schema.json documents the same shape (a file in either form, and
#/$defs/settings for the table alone) and tests/test_config.py keeps the two in agreement. Rule
selectors are checked against the rule catalog by the engine, which has it loaded anyway
(plint.checking.engine.Engine.settings_for).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from plint.record import field, record
from plint.source import probe


class UsageError(ValueError):
    """A mistake in how plint was called (an option, a config file): the CLI reports it and exits 2.
    Nothing in a checked file raises it: what a file holds is a finding."""


# Every threshold a rule may read from settings.thresholds, with its default (fractions). PL301's absolute
# bubble limit is off (None) unless configured: by default it warns only when it names a better layout. So is
# PL402's headroom: by default it warns only where the estimate's measured error band reaches usable memory.
THRESHOLDS: dict[str, float | None] = {"bubble": None, "memory-headroom": None, "mfu": 0.35}
SEVERITIES = ("error", "warning", "info", "off")
FAIL_ON = ("error", "warning", "info", "never")
CLUSTER_KEYS = ("nvlink-domain", "inter-node-bandwidth-gbps", "gpus-per-node")
RELEASE_KEYS = ("megatron", "deepspeed")
_NUMBER = (int, float)
# key -> accepted Python type(s) after TOML decoding (bools excluded separately: bool is an int)
KEYS: dict[str, Any] = {
    "select": list,
    "extend-select": list,
    "ignore": list,
    "per-file-ignores": dict,
    "severity": dict,
    "fail-on": str,
    "thresholds": dict,
    "gpu": str,
    "nvlink-domain": int,
    "inter-node-bandwidth-gbps": _NUMBER,
    "gpus-per-node": int,
    "assume": dict,
    "megatron": str,
    "deepspeed": str,
    "baseline": str,
    "trainer-source": str,
    "model": str,  # the model fine-tuning launches train: a hub name, or a config.json (or its folder)
    "host-memory": _NUMBER,  # GiB of CPU memory per node (ZeRO CPU offload is checked against it)
    "root": str,
    "read-outside": list,
    "source-path": list,  # folders a sourced relative path is looked for in (plint.reading.shell.source_path)
}
_SHELL_NAME = r"[A-Za-z_][A-Za-z0-9_]*\Z"  # compiled on use: most runs have no [tool.plint.assume]


@record
class Settings:
    path: Path | None = None  # the config file, None when there is none
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    severity: dict[str, str] = field(default_factory=dict)
    fail_on: str | None = None
    thresholds: dict[str, float | None] = field(default_factory=lambda: dict(THRESHOLDS))
    gpu: str | None = None
    cluster: dict[str, Any] = field(default_factory=dict)  # nvlink-domain, inter-node bandwidth, gpus-per-node
    assume: dict[str, str] = field(default_factory=dict)
    releases: dict[str, str] = field(default_factory=dict)  # {"megatron": "0.16", "deepspeed": "0.19"}
    baseline: str | None = None  # relative to the config file's folder
    trainer_source: str | None = None  # a training-code checkout, relative to the config file's folder
    # plint.root: the folder files are read from instead of the git work tree, and folders trusted
    # besides it (absolute paths, resolved against the config file's folder)
    root_dir: str | None = None
    read_outside: list[str] = field(default_factory=list)
    # folders `source FILE` looks in before the script's folder and the root: absolute, or SCRIPTDIR[/...]
    source_path: list[str] = field(default_factory=list)
    in_tool_table: bool = False  # read from a [tool.plint] table (messages name it)
    model: str | None = None  # a catalog name, or the absolute path of a config.json or its folder
    host_memory_gib: float | None = None  # [tool.plint] host-memory: CPU memory per node

    @property
    def root(self) -> Path:
        """The folder per-file-ignores globs and the baseline path are relative to."""
        return self.path.parent if self.path is not None else Path.cwd()

    def selector_lists(self) -> list[tuple[str, list[str]]]:
        """(config key, selectors) for every place the file names rules, for the engine to check."""
        out = [("select", self.select or []), ("extend-select", self.extend_select), ("ignore", self.ignore)]
        out += [(f"per-file-ignores.{glob}", codes) for glob, codes in self.per_file_ignores.items()]
        out.append(("severity", list(self.severity)))
        return out

    def where(self, key: str) -> str:
        """`path: [tool.plint] key` (or `path: key` for settings at top level), the prefix of a config error."""
        return f"{self.path}: {'[tool.plint] ' if self.in_tool_table else ''}{key}"


def _toml(path: str | Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None


def table_of(path: str | Path) -> dict | None:
    """The plint table of a pyproject.toml, or None when it has none."""
    try:
        text = Path(path).read_text(errors="replace")
        # the TOML parser costs ~10 ms of start-up: skip it unless a plint table can be there
        # ([tool.plint], dotted tool.plint.x keys, or `plint = {...}` under a bare [tool])
        if "tool.plint" not in text and not ("[tool]" in text and "plint" in text):
            return None
    except OSError:
        return None
    tool = _toml(path).get("tool")
    table = tool.get("plint") if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


def plint_table(path: str | Path, document: dict) -> tuple[dict, bool]:
    """The settings of a .plint.toml or --config file and whether they sat under [tool.plint]:
    the document itself, or its [tool.plint] table; ValueError when the file mixes the two forms."""
    if "tool" not in document:
        return document, False
    tool = document["tool"]
    if not isinstance(tool, dict) or not isinstance(tool.get("plint"), dict):
        if not isinstance(tool, dict):
            held = f"'tool' is {tool!r}"
        elif "plint" in tool:
            held = f"[tool.plint] is {tool['plint']!r}, not a table"
        else:
            held = f"[tool] holds {', '.join(f'[tool.{name}]' for name in tool) or 'nothing'}"
        raise UsageError(
            f"{path}: no [tool.plint] table ({held}); write plint's settings at top level or under [tool.plint]"
        )
    beside = [key for key in document if key != "tool"]
    if beside:
        raise UsageError(
            f"{path}: settings both at top level ({', '.join(map(repr, beside))}) and under "
            "[tool.plint]: keep one form (top level, or all under [tool.plint])"
        )
    return tool["plint"], True


def discover(start: str | Path) -> Path | None:
    """The nearest .plint.toml or pyproject.toml with [tool.plint], from start up to the git root."""
    start = Path(start)
    folder = (start if probe(start.is_dir) else start.parent).resolve()
    for candidate in (folder, *folder.parents):
        for name in (".plint.toml", "pyproject.toml"):
            path = candidate / name
            if probe(path.is_file) and (name == ".plint.toml" or table_of(path) is not None):
                return path
        if probe((candidate / ".git").exists):  # a directory, or a file in a worktree or submodule
            return None
    return None


def _did_you_mean(word: str, choices) -> str:
    from difflib import get_close_matches

    near = get_close_matches(word, list(choices), n=1)
    return f"; did you mean {near[0]!r}?" if near else ""


def _is(value, expected) -> bool:
    return isinstance(value, expected) and not isinstance(value, bool)


def settings_from(path: Path, table: dict, in_tool_table: bool | None = None) -> Settings:
    """Settings from a decoded plint table; ValueError("path: [tool.plint] key: ...") when it is wrong.
    in_tool_table: whether the table was [tool.plint] (default: when the file is a pyproject.toml)."""
    s = Settings(path=path, in_tool_table=path.name == "pyproject.toml" if in_tool_table is None else in_tool_table)
    for key, value in table.items():
        if key not in KEYS:
            raise UsageError(f"{s.where(repr(key))}: unknown key{_did_you_mean(key, KEYS)}")
        expected = KEYS[key]
        if not _is(value, expected):
            kind = {list: "a list", dict: "a table", str: "a string", int: "an integer"}.get(expected, "a number")
            raise UsageError(f"{s.where(key)}: expected {kind}, got {value!r}")
    if "select" in table:
        s.select = _selectors(s, "select", table["select"])
    s.extend_select = _selectors(s, "extend-select", table.get("extend-select", []))
    s.ignore = _selectors(s, "ignore", table.get("ignore", []))
    s.per_file_ignores = {
        glob: _selectors(s, f"per-file-ignores.{glob}", codes)
        for glob, codes in table.get("per-file-ignores", {}).items()
    }
    for key, level in table.get("severity", {}).items():
        if level not in SEVERITIES:
            raise UsageError(f"{s.where(f'severity.{key}')}: expected one of {', '.join(SEVERITIES)}, got {level!r}")
        s.severity[key] = level
    if "fail-on" in table:
        if table["fail-on"] not in FAIL_ON:
            raise UsageError(f"{s.where('fail-on')}: expected one of {', '.join(FAIL_ON)}, got {table['fail-on']!r}")
        s.fail_on = table["fail-on"]
    for key, value in table.get("thresholds", {}).items():
        if key not in THRESHOLDS:
            raise UsageError(
                f"{s.where(f'thresholds.{key}')}: unknown threshold{_did_you_mean(key, THRESHOLDS)} "
                f"(known: {', '.join(THRESHOLDS)})"
            )
        if not _is(value, _NUMBER) or value < 0:
            raise UsageError(f"{s.where(f'thresholds.{key}')}: expected a number >= 0, got {value!r}")
        s.thresholds[key] = float(value)
    if "gpu" in table:
        from plint.catalog.hardware import unknown_gpu

        problem = unknown_gpu(table["gpu"]) if isinstance(table["gpu"], str) else None
        if problem is not None:
            raise UsageError(f"{s.where('gpu')}: {problem}")
        s.gpu = table["gpu"]
    for key in CLUSTER_KEYS:
        if key in table:
            if table[key] <= 0:
                raise UsageError(f"{s.where(key)}: expected a positive number, got {table[key]!r}")
            s.cluster[key] = table[key]
    for name, value in table.get("assume", {}).items():
        if not re.match(_SHELL_NAME, name):
            raise UsageError(f"{s.where(f'assume.{name}')}: not a shell variable name")
        if not _is(value, (str, int)):
            raise UsageError(f"{s.where(f'assume.{name}')}: expected a string or an integer, got {value!r}")
        s.assume[name] = str(value)
    s.releases = {k: table[k] for k in RELEASE_KEYS if k in table}
    if "megatron" in s.releases:
        from plint.catalog.flags import releases

        if s.releases["megatron"] not in releases():
            raise UsageError(
                f"{s.where('megatron')}: unknown release {s.releases['megatron']!r}; known: {', '.join(releases())}"
            )
    s.baseline = table.get("baseline")
    if "trainer-source" in table:
        folder = os.path.dirname(os.path.abspath(str(path)))
        s.trainer_source = os.path.normpath(os.path.join(folder, os.path.expanduser(table["trainer-source"])))
    _root_keys(s, table)
    s.model = _model_key(s, table.get("model"))
    if "host-memory" in table:
        if table["host-memory"] <= 0:
            raise ValueError(
                f"{s.where('host-memory')}: expected a positive number of GiB, got {table['host-memory']!r}"
            )
        s.host_memory_gib = float(table["host-memory"])
    return s


def _model_key(s: Settings, model: str | None) -> str | None:
    """`model`: a path (to a config.json or the folder holding one) relative to the config file's folder when
    one is there, else a name for plint's model catalog."""
    if model is None:
        return None
    if not model.strip():
        raise ValueError(f"{s.where('model')}: expected a model name or a path, got an empty string")
    folder = os.path.dirname(os.path.abspath(s.path)) if s.path is not None else os.getcwd()
    path = os.path.join(folder, os.path.expanduser(model))
    return path if os.path.exists(path) else model


def _root_keys(s: Settings, table: dict) -> None:
    """`root` and `read-outside`: folders relative to the config file's folder."""
    folder = os.path.dirname(os.path.abspath(s.path)) if s.path is not None else os.getcwd()
    if "root" in table:
        if not table["root"]:
            raise UsageError(f"{s.where('root')}: expected a folder, got an empty string")
        s.root_dir = os.path.join(folder, os.path.expanduser(table["root"]))
    places = table.get("read-outside", [])
    if not all(isinstance(p, str) and p for p in places):
        raise UsageError(f"{s.where('read-outside')}: expected a list of folders, got {places!r}")
    s.read_outside = [os.path.join(folder, os.path.expanduser(p)) for p in places]
    _source_path(s, table.get("source-path", []), folder)


def _source_path(s: Settings, places, folder: str) -> None:
    """`source-path`: folders relative to the config file's folder; SCRIPTDIR (shellcheck's word for the folder
    of the script that sources, https://www.shellcheck.net/wiki/Directive) kept as written, resolved per script."""
    from plint.reading.shell.source_path import is_script_dir

    if not all(isinstance(p, str) and p for p in places):
        raise UsageError(f"{s.where('source-path')}: expected a list of folders, got {places!r}")
    s.source_path = [p if is_script_dir(p) else os.path.join(folder, os.path.expanduser(p)) for p in places]


def _selectors(s: Settings, key: str, value) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{s.where(key)}: expected a list of rule codes, names or code prefixes, got {value!r}")
    return [v.strip() for v in value]


def in_force(start: str | Path, config_file: str | Path | None = None, isolated: bool = False) -> Path | None:
    """The config file in force from `start` (a file or its folder): --config, else the nearest one
    (discover); none with --isolated."""
    if isolated:
        return None
    if config_file is not None:
        return Path(config_file)
    return discover(start)


def load(path: Path | None) -> Settings:
    """The settings of one config file (None: the defaults). Whatever is wrong with a config file is a
    UsageError: the config is part of how plint was called (a ValueError a validator raises included)."""
    try:
        return _load(path)
    except UsageError:
        raise
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _load(path: Path | None) -> Settings:
    if path is None:
        return Settings()
    if path.name == "pyproject.toml":
        table = table_of(path)
        if table is None:
            raise UsageError(f"{path}: no [tool.plint] table")
        return settings_from(path, table, in_tool_table=True)
    table, in_tool_table = plint_table(path, _toml(path))
    return settings_from(path, table, in_tool_table)
