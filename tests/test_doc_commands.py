"""Every command the README and the docs pages show in a shell block (```sh, or ```console lines after `$ `) is
run: in a scratch copy of the files a clone has (fixtures/, benchmarks/), page by page in order (a command may
use what an earlier one wrote), through the installed `plint` console script, and must end as the page says it
does: exit 0, or 1 for findings, never a usage error (2) or a traceback. A command that cannot run here (it
installs, runs the whole suite, takes half an hour) is listed in ELSEWHERE with the test that exercises it;
a new command in a page that is neither run nor listed fails test_every_shown_command_is_exercised."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COPIED = ("fixtures", "benchmarks")  # what the commands read, copied so that fix and -o write only the copy
# command -> (file that exercises it, text that file must hold: the command or its test)
ELSEWHERE = {
    "pip install . && plint check fixtures/launches/megatron-arrays-llama3-8b/launch.sh": (
        "tests/test_doc_commands.py",
        "def test_the_quick_start_installs_and_checks",
    ),
    "pip install -e '.[test]' && python -m pytest": (".ci/run", "pip install -q -e '.[test]' && python -m pytest"),
    "python benchmarks/fuzz.py --count 10000 --seed 1 --progress 500": (
        "tests/fuzz/test_fuzz_slice.py",
        "def test_a_slice_of_the_fuzzer_finds_nothing",
    ),
    "python benchmarks/fuzz.py --replay benchmarks/fuzz-out/case-00042": ("tests/fuzz/test_fuzz_slice.py", "replay="),
    "python benchmarks/fuzz.py --hook my_checks.py:no_reads_outside": ("tests/fuzz/test_fuzz_slice.py", "hooks="),
    'eval "$(_PLINT_COMPLETE=bash_source plint)"': (
        "tests/test_console_script.py",
        "def test_completion_scripts_come_from_the_documented_variable",
    ),
    'eval "$(_PLINT_COMPLETE=zsh_source plint)"': (
        "tests/test_console_script.py",
        "def test_completion_scripts_come_from_the_documented_variable",
    ),
    "_PLINT_COMPLETE=fish_source plint > ~/.config/fish/completions/plint.fish": (
        "tests/test_console_script.py",
        "def test_completion_scripts_come_from_the_documented_variable",
    ),
}


def _strip_comment(line: str) -> str:
    return re.sub(r"\s+#\s.*$", "", line).strip()


def shown_commands(page: Path) -> list[str]:
    """The commands of a page's shell blocks, in order, without their trailing comments."""
    commands = []
    for language, body in re.findall(r"^```(sh|console)\n(.*?)^```$", page.read_text(), re.S | re.M):
        for line in body.splitlines():
            if language == "console" and not line.startswith("$ "):
                continue  # output
            line = _strip_comment(line.removeprefix("$ "))
            if line and not line.startswith("#"):
                commands.append(line)
    return commands


def _plint_bin() -> Path:
    found = shutil.which("plint") or str(Path(sys.executable).with_name("plint"))
    if not Path(found).exists():
        pytest.skip("the plint console script is not installed (pip install -e .)")
    return Path(found).parent


def _workspace(tmp_path: Path) -> Path:
    work = tmp_path / "clone"
    for name in COPIED:
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__", "fuzz-out"))
    return work


def _run(command: str, cwd: Path, bin_dir: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(cwd),
        "NO_COLOR": "1",
        "COLUMNS": "120",
    }
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_every_shown_command_is_exercised():
    shown = {command for page in PAGES for command in shown_commands(page)}
    assert shown, "no commands found: the block syntax changed?"
    for command, (path, marker) in ELSEWHERE.items():
        assert command in shown, f"ELSEWHERE lists a command no page shows any more: {command}"
        assert marker in (ROOT / path).read_text(), f"{path} does not exercise {command!r}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if any(c not in ELSEWHERE for c in shown_commands(p))],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_the_commands_a_page_shows_run(page, tmp_path):
    bin_dir = _plint_bin()
    work = _workspace(tmp_path)
    for command in shown_commands(page):
        if command in ELSEWHERE:
            continue
        done = _run(command, work, bin_dir)
        output = done.stdout + done.stderr
        assert done.returncode in (0, 1), f"{command}\nexit {done.returncode}\n{output[-3000:]}"
        assert "Traceback" not in output, f"{command}\n{output[-3000:]}"
        redirected = re.search(r">\s*(\S+)$", command)
        written = work / redirected.group(1) if redirected else None
        assert output.strip() or (written and written.stat().st_size), f"{command} printed and wrote nothing"


def test_the_readme_transcript_is_what_plint_prints(tmp_path):
    """The README's `$ plint check ...` and the lines it shows come out of that command today."""
    bin_dir = _plint_bin()
    text = (ROOT / "README.md").read_text()
    block = re.search(r"^```console\n\$ (.*?)\n(.*?)^```$", text, re.S | re.M)
    command, shown = block.group(1), block.group(2)
    done = _run(command, _workspace(tmp_path), bin_dir)
    printed = {line.rstrip() for line in done.stdout.splitlines()}
    missing = [line for line in shown.splitlines() if line.strip() and line.rstrip() not in printed]
    assert not missing, "lines the README shows that plint no longer prints:\n" + "\n".join(missing)


def test_the_quick_start_installs_and_checks(tmp_path):
    """The quick start's first line: `pip install .` (a real, non-editable install of this tree, built as pip
    builds it) into a fresh virtual environment that borrows this one's dependencies, then the check it runs
    through that environment's console script. The package data (schemas, templates) must be in the install
    for the check to print a layout. (pip --python installs into the new environment and leaves this one as
    it is: pip install --prefix would uninstall this environment's plint.)"""
    quick = shown_commands(ROOT / "README.md")[0]
    install, check = (part.strip() for part in quick.split("&&"))
    assert install == "pip install ."
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next(venv.glob("lib/python*/site-packages"))
    borrowed = [p for p in sys.path if p.endswith("site-packages")]  # their .pth files (an editable plint) are not read
    (site / "borrowed_dependencies.pth").write_text("\n".join(borrowed) + "\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            "--no-deps",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    if done.returncode != 0 and re.search(
        r"No matching distribution|Could not find a version|connection", done.stderr, re.I
    ):
        pytest.skip("pip cannot reach a package index for the build backend (setuptools)")
    assert done.returncode == 0, done.stderr
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    words = check.split()
    assert words[0] == "plint"
    checked = subprocess.run(
        [str(venv / "bin" / "plint"), *words[1:]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "launcher=torchrun trainer=megatron" in checked.stdout and "0 error(s)" in checked.stdout
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import plint; print(plint.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    assert where.startswith(str(site)), f"the check ran {where}, not the installed copy"
