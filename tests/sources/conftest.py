import pytest

from plint.reading.read import FileLookup
from plint.reading.shell.evaluator import EvalOptions, evaluate
from plint.source import SourceFile
from plint.reading.sources import slurm
from plint.reading.sources.launchers import find_launches


@pytest.fixture
def launches(tmp_path):
    """find_launches over a script given as text, with extra files beside it."""

    def _launches(text: str, files: dict[str, str] | None = None):
        for name, body in (files or {}).items():
            (tmp_path / name).write_text(body)
        path = tmp_path / "job.sh"
        path.write_text(text)
        source = SourceFile(str(path), text)
        job = slurm.read_directives(source)
        env = slurm.implied_env(job) if job else {}
        result = evaluate(source, EvalOptions(env=env))
        return find_launches(result, job, FileLookup(result, tmp_path).source)

    return _launches
