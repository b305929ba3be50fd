"""Small synthetic results for the reporter tests, and a launch that produces PL002 for CLI runs."""

from __future__ import annotations

from pathlib import Path

from plint.checking.check import FileResult
from plint.diagnostics import Diagnostic
from plint.reading.read import FileReading

# PL002: $NNODES has no value in the script, so the node count (and everything after it) is unknown.
UNRESOLVED_LAUNCH = (
    "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
    "torchrun --nnodes $NNODES --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1\n"
)


def write_launch(folder: Path, text: str = UNRESOLVED_LAUNCH, name: str = "launch.sh") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def result(path, *diagnostics: Diagnostic, unreadable: str | None = None) -> FileResult:
    return FileResult(FileReading(str(path), "shell", unreadable=unreadable), list(diagnostics))


def diagnostic(
    code: str, severity: str, message: str, path, line=None, col=None, end_line=None, end_col=None, **fields
) -> Diagnostic:
    from plint.rules.registry import all_rules

    rule = all_rules().get(code)
    name = rule.name if rule is not None else "made-up-rule"
    return Diagnostic(code, name, severity, message, str(path), line, col, end_line, end_col, **fields)
