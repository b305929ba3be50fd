"""No input makes plint raise: arbitrary text and mutated fixtures all come back as results."""

import random

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixture_paths import FIXTURES
from plint.checking.check import check_paths
from plint.cli.commands import cli

SCRIPTS = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".sh", ".slurm", ".sbatch", ".json"))
SHELL_ALPHABET = st.sampled_from(
    list("$(){}[]\"'`\\|&;<>=#!*?~-_ \n\t:+/%,.@0123456789abcxyzEOFTPN")
    + [
        "torchrun ",
        "deepspeed ",
        "srun ",
        "<<EOF\n",
        "\nEOF\n",
        "${",
        "$((",
        "eval ",
        "bash -c ",
        "--tensor-model-parallel-size ",
        "source ",
        "#SBATCH --nodes=",
    ]
)


def _check_text(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    (result,) = check_paths([path])
    for d in result.diagnostics:
        assert d.code.startswith("PL") and d.severity in ("error", "warning", "info")
    return result


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(SHELL_ALPHABET, max_size=80).map("".join))
def test_arbitrary_shell_text_never_raises(tmp_path, text):
    _check_text(tmp_path, "fuzz.sh", text.encode())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(tmp_path, data):
    _check_text(tmp_path, "fuzz.sh", data)
    _check_text(tmp_path, "fuzz.json", data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10**6), st.integers(1, 6))
def test_mutated_fixtures_never_raise(tmp_path, seed, edits):
    rng = random.Random(seed)
    original = SCRIPTS[seed % len(SCRIPTS)]
    text = bytearray(original.read_bytes())
    for _ in range(edits):
        pos = rng.randrange(len(text) + 1)
        op = rng.randrange(3)
        if op == 0 and text:
            del text[pos : pos + rng.randrange(1, 20)]
        elif op == 1:
            text[pos:pos] = rng.choice([b'"', b"'", b"$(", b"${", b")", b"}", b"\\\n", b"<<EOF\n", b"\n", b"=", b"(("])
        else:
            chunk = text[rng.randrange(len(text) + 1) :][:30]
            text[pos:pos] = chunk
    result = _check_text(tmp_path, original.name, bytes(text))
    assert result.reading is not None


def test_cli_exit_codes_stay_in_range(tmp_path):
    runner = CliRunner()
    for i, data in enumerate([b"", b"\x00\x01", b"'unterminated", b"$((", b'{"a":', b"torchrun $((1/0))"]):
        path = tmp_path / f"f{i}.sh"
        path.write_bytes(data)
        result = runner.invoke(cli, ["check", "--format", "json", str(path)])
        assert result.exit_code in (0, 1), (data, result.output, result.exception)
