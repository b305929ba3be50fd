"""Configuration: `[tool.plint]` in pyproject.toml or a `.plint.toml`, found by walking up from the
checked file and stopping at the git root; the nearest file wins, with no merging (as ruff does).

Validation is a few direct checks with clear messages (importing jsonschema would cost more than
the whole check); schemas/config.schema.json documents the same shape and a test keeps the two in
agreement.
"""

from __future__ import annotations

from pathlib import Path
TYPE_CHECKING = False  # typing is imported by type checkers only: it costs start-up time
if TYPE_CHECKING:
    from typing import Any

from plint.record import field, record

THRESHOLDS = {"bubble": 0.10, "memory-headroom": 0.90, "mfu": 0.35}
SEVERITIES = ("error", "warning", "info", "off")
KEYS = {
    "select": list, "extend-select": list, "ignore": list, "per-file-ignores": dict, "severity": dict,
    "fail-on": str, "thresholds": dict, "gpu": str, "nvlink-domain": int, "inter-node-bandwidth-gbps": (int, float),
    "gpus-per-node": int, "assume": dict, "megatron": str, "deepspeed": str, "baseline": str,
}


@record
class Settings:
    path: Path | None = None  # the config file, None when there is none
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    severity: dict[str, str] = field(default_factory=dict)
    fail_on: str | None = None
    thresholds: dict[str, float] = field(default_factory=lambda: dict(THRESHOLDS))
    gpu: str | None = None
    cluster: dict[str, Any] = field(default_factory=dict)  # nvlink-domain, inter-node bandwidth, gpus-per-node
    assume: dict[str, str] = field(default_factory=dict)
    releases: dict[str, str] = field(default_factory=dict)  # {"megatron": "0.16", "deepspeed": "0.19"}
    baseline: str | None = None

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()


def _toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: {exc}") from None


def table_of(path: Path) -> dict | None:
    """The plint table of a config file, or None when a pyproject.toml has none."""
    if path.name == "pyproject.toml":
        try:
            if "tool.plint" not in path.read_text(errors="replace"):
                return None  # most pyproject files have no [tool.plint]: skip the TOML parser
        except OSError:
            return None
    data = _toml(path)
    if path.name == "pyproject.toml":
        return data.get("tool", {}).get("plint")
    return data


def discover(start: Path) -> Path | None:
    """The nearest .plint.toml or pyproject.toml with [tool.plint], from start up to the git root."""
    folder = start if start.is_dir() else start.parent
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        for name in (".plint.toml", "pyproject.toml"):
            path = candidate / name
            if path.is_file() and (name == ".plint.toml" or table_of(path) is not None):
                return path
        if (candidate / ".git").exists():
            return None
    return None


def _strings(path: Path, key: str, value) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{path}: [tool.plint] {key}: expected a list of rule codes or names, got {value!r}")
    return value


def settings_from(path: Path, table: dict) -> Settings:
    from difflib import get_close_matches

    for key, value in table.items():
        if key not in KEYS:
            near = get_close_matches(key, KEYS, n=1)
            raise ValueError(f"{path}: [tool.plint] unknown key {key!r}" + (f"; did you mean {near[0]!r}?" if near else ""))
        expected = KEYS[key]
        if not isinstance(value, expected) or isinstance(value, bool):
            kind = expected.__name__ if isinstance(expected, type) else "number"
            raise ValueError(f"{path}: [tool.plint] {key}: expected {kind}, got {value!r}")
    s = Settings(path=path)
    if "select" in table:
        s.select = _strings(path, "select", table["select"])
    s.extend_select = _strings(path, "extend-select", table.get("extend-select", []))
    s.ignore = _strings(path, "ignore", table.get("ignore", []))
    s.per_file_ignores = {g: _strings(path, f"per-file-ignores.{g}", v) for g, v in table.get("per-file-ignores", {}).items()}
    for key, level in table.get("severity", {}).items():
        if level not in SEVERITIES:
            raise ValueError(f"{path}: [tool.plint] severity.{key}: expected one of {', '.join(SEVERITIES)}, got {level!r}")
        s.severity[key] = level
    if "fail-on" in table:
        if table["fail-on"] not in ("error", "warning", "info", "never"):
            raise ValueError(f"{path}: [tool.plint] fail-on: expected error, warning, info or never")
        s.fail_on = table["fail-on"]
    for key, value in table.get("thresholds", {}).items():
        if key not in THRESHOLDS or not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError(f"{path}: [tool.plint] thresholds.{key}: known thresholds are "
                             f"{', '.join(THRESHOLDS)}, each a number")
        s.thresholds[key] = float(value)
    s.gpu = table.get("gpu")
    s.cluster = {k: table[k] for k in ("nvlink-domain", "inter-node-bandwidth-gbps", "gpus-per-node") if k in table}
    s.assume = {str(k): str(v) for k, v in table.get("assume", {}).items()}
    s.releases = {k: table[k] for k in ("megatron", "deepspeed") if k in table}
    if "megatron" in s.releases:
        from plint.catalog.flags import releases

        if s.releases["megatron"] not in releases():
            raise ValueError(f"{path}: [tool.plint] megatron: unknown release {s.releases['megatron']!r}; "
                             f"known: {', '.join(releases())}")
    s.baseline = table.get("baseline")
    return s


def load(path: Path | None) -> Settings:
    if path is None:
        return Settings()
    table = table_of(path)
    return settings_from(path, table or {})
