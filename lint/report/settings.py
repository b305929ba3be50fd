"""`plint check --show-settings`: which config file was found for a path and the settings in force,
as ruff's --show-settings prints them, so a user can tell why a rule runs or not without reading code."""

from __future__ import annotations

import json
import os
from pathlib import Path


def render(path: str | Path, options, fail_on: str | None = None) -> str:
    """The config file found for `path` (or why none is read), then each setting as `key = value`
    (TOML-like, values as JSON), the command line's selectors and the rules in force for `path`."""
    from plint.checking.config import Settings
    from plint.checking.engine import Engine

    engine = Engine(options)
    settings: Settings = engine.settings_for(_probe_file(path))
    lines = [f"Settings for {path}", f"config file = {_config_line(settings, options)}"]
    rows = {
        "select": settings.select,
        "extend-select": settings.extend_select,
        "ignore": settings.ignore,
        "per-file-ignores": settings.per_file_ignores,
        "severity": settings.severity,
        "fail-on": settings.fail_on or "error",
        "thresholds": settings.thresholds,
        "gpu": settings.gpu,
        **{key: settings.cluster.get(key) for key in ("nvlink-domain", "inter-node-bandwidth-gbps", "gpus-per-node")},
        "assume": settings.assume,
        "megatron": settings.releases.get("megatron"),
        "deepspeed": settings.releases.get("deepspeed"),
        "baseline": settings.baseline,
        "trainer-source": settings.trainer_source,
        "root": settings.root_dir,
        "read-outside": settings.read_outside,
        "source-path": settings.source_path,
    }
    lines += [f"{key} = {json.dumps(value)}" for key, value in rows.items()]
    command_line = {
        "--select": options.select,
        "--extend-select": options.extend_select,
        "--ignore": options.ignore,
        "--gpu": options.gpu,
        "--fail-on": fail_on,
        "--root": options.root,
        "--env": options.env or None,
        "--assume": options.assume or None,
    }
    given = [f"{flag} = {json.dumps(value)}" for flag, value in command_line.items() if value]
    lines += ["", "# the command line (wins over the file)", *given] if given else []
    in_force = engine.selected(settings, str(_probe_file(path)))
    lines += [
        "",
        f"# rules in force for {path}: {len(in_force)} of {len(engine.rules)}",
        f"rules = {json.dumps(sorted(in_force))}",
    ]
    return "\n".join(lines)


def _probe_file(path: str | Path) -> Path:
    """A file in the folder whose config applies: a folder's own config is found from a file inside it."""
    path = Path(path)
    return path / "launch.sh" if path.is_dir() else path


def _config_line(settings, options) -> str:
    if getattr(options, "isolated", False):
        return '"" # --isolated: no config file is read'
    if settings.path is None:
        return (
            '"" # none found: no .plint.toml or pyproject.toml with [tool.plint] from the path up to the '
            "git root; the defaults below"
        )
    rel = os.path.relpath(settings.path)
    shown = str(settings.path) if rel.startswith("..") else rel
    how = "--config" if options.config_file else "found from the path"
    return f"{json.dumps(shown)} # {'[tool.plint], ' if settings.in_tool_table else ''}{how}"
