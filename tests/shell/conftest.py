import pytest

from plint.reading.shell.evaluator import EvalOptions, evaluate
from plint.source import SourceFile


@pytest.fixture
def run(tmp_path):
    """Evaluate a script given as text (written to tmp_path/main.sh); extra files by name."""

    def _run(text: str, files: dict[str, str] | None = None, **options):
        for name, body in (files or {}).items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(body)
        path = tmp_path / "main.sh"
        path.write_text(text)
        return evaluate(SourceFile(str(path), text), EvalOptions(**options))

    return _run
