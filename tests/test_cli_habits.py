"""The habits people bring from ruff and shellcheck, through the real console script (issue 16): fixable
findings marked and counted, --quiet/--verbose/--statistics, standard input with --stdin-filename,
--color with NO_COLOR/FORCE_COLOR/TERM, and the exit codes kept."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PLINT = Path(sys.executable).with_name("plint")
pytestmark = pytest.mark.skipif(not PLINT.exists(), reason="the plint console script is not installed")

# tp 2 without CUDA_DEVICE_MAX_CONNECTIONS (PL601, safe fix), without --sequence-parallel (PL303, safe
# fix), and tp*pp = 6 not dividing the 8 GPUs (PL101, an unsafe layout fix)
BROKEN = (
    "#!/bin/bash\n"
    "torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --tensor-model-parallel-size 2 "
    "--pipeline-model-parallel-size 3 --num-layers 30 --hidden-size 4096 --num-attention-heads 32 "
    "--seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 "
    "--bf16 --vocab-size 32000\n"
)
# one GPU, nothing to say
CLEAN = (
    "#!/bin/bash\n"
    "torchrun --nproc_per_node 1 pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 "
    "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 4 --global-batch-size 64 "
    "--vocab-size 32000 --bf16\n"
)
ESC = "\x1b["


def plint(
    args: list[str], cwd: Path, stdin: bytes | None = None, env: dict[str, str] | None = None, merged: bool = False
) -> subprocess.CompletedProcess:
    """The installed `plint` in a clean colour environment (no NO_COLOR/FORCE_COLOR from the caller)."""
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")}
    base["TERM"] = "xterm-256color"
    return subprocess.run(
        [str(PLINT), *args],
        cwd=cwd,
        input=stdin if stdin is not None else b"",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        env={**base, **(env or {})},
        timeout=120,
    )


def text(proc) -> str:
    return proc.stdout.decode()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # the root of the checked files
    (tmp_path / "broken.sh").write_text(BROKEN)
    (tmp_path / "clean.sh").write_text(CLEAN)
    return tmp_path


# ---- 1. fixable findings marked, counted, and what --unsafe-fixes hides --------------------------


def test_text_report_marks_fixable_findings_and_counts_them(tree):
    proc = plint(["check", "broken.sh"], tree)
    out = text(proc)
    assert proc.returncode == 1
    assert "PL601 [warning] [*] cuda-device-max-connections" in out
    assert "PL303 [warning] [*] sequence-parallel-off" in out
    assert "PL101 [error] world-size-indivisible" in out  # its only fix is unsafe: no mark
    assert "(unsafe fix: `plint fix --unsafe-fixes`)" in out
    assert out.rstrip().splitlines()[-1] == "[*] 2 fixable with `plint fix`, 1 more with `plint fix --unsafe-fixes`"
    concise = text(plint(["check", "--concise", "broken.sh"], tree)).splitlines()
    assert concise[0].startswith("broken.sh:2:1: PL601 [warning] [*] tp 2 needs")
    assert any(line.startswith("broken.sh:2:") and " PL101 [error] world size 8" in line for line in concise)


def test_a_clean_file_has_no_fixable_line(tree):
    proc = plint(["check", "clean.sh"], tree)
    assert proc.returncode == 0
    assert "fixable" not in text(proc)


def test_fix_diff_names_the_hidden_unsafe_fix_and_ends_its_diff_with_a_newline(tree):
    (tree / "broken.sh").write_text(BROKEN.rstrip("\n"))  # no final newline: the diff still ends in one
    proc = plint(["fix", "--diff", "broken.sh"], tree, merged=True)
    assert proc.returncode == 1
    lines = text(proc).splitlines()
    assert lines[-2] == "\\ No newline at end of file"
    assert lines[-1] == (
        "plint: would fix 2 finding(s) in 1 file(s), 1 remaining "
        "(1 hidden fix can be enabled with `plint fix --unsafe-fixes`)"
    )
    unsafe = plint(["fix", "--diff", "--unsafe-fixes", "broken.sh"], tree)
    assert "hidden fix" not in unsafe.stderr.decode()
    assert (tree / "broken.sh").read_text() == BROKEN.rstrip("\n")  # --diff writes nothing


# full recompute on its own continuation line, where selective recompute fits: PL308's unsafe fix deletes that line
FULL_RECOMPUTE = (
    "#!/bin/bash\n"
    "torchrun --nproc_per_node 1 pretrain_gpt.py \\\n"
    "    --num-layers 8 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 \\\n"
    "    --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \\\n"
    "    --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 8 --vocab-size 32000 --bf16\n"
)


def test_a_help_diff_shows_a_deleted_line_alone(tree):
    """A deletion through the line's newline spans the next line, which it keeps: the help shows `- the line`,
    not that next line removed and added again."""
    (tree / "recompute.sh").write_text(FULL_RECOMPUTE)
    proc = plint(["check", "--gpu", "h100-sxm", "recompute.sh"], tree)
    assert "PL308" in text(proc)
    diff = [" ".join(line.split()) for line in text(proc).splitlines() if line.lstrip().startswith(("- ", "+ "))]
    assert "- --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \\" in diff
    assert not any("--max-position-embeddings" in line for line in diff)


def test_fix_diff_of_a_file_with_a_form_feed_applies_with_patch(tree):
    # diff and patch end a line at a newline only; str.splitlines also broke it at the form feed and put
    # `\ No newline at end of file` inside the diff (review)
    original = "#!/bin/bash\n# page\x0cbreak\n" + BROKEN.splitlines(keepends=True)[1]
    (tree / "broken.sh").write_text(original)
    diff = plint(["fix", "--diff", "broken.sh"], tree).stdout
    assert b"No newline" not in diff
    target = tree / "copy.sh"
    target.write_text(original)
    patch = shutil.which("patch")
    if patch is None:
        pytest.skip("no patch program")
    subprocess.run([patch, "-s", str(target)], input=diff, check=True, timeout=60)
    plint(["fix", "broken.sh"], tree)
    assert target.read_bytes() == (tree / "broken.sh").read_bytes() != original.encode()


def test_fix_help_says_what_quiet_does_for_fix(tree):
    # check's help ("nothing at all for a clean file") is not what -q does for fix: it drops the summary (review)
    out = " ".join(text(plint(["fix", "--help"], tree)).split())
    assert "-q, --quiet No summary line" in out and "nothing at all for a clean file" not in out
    assert "nothing at all for a clean file" in " ".join(text(plint(["check", "--help"], tree)).split())


def test_fix_diff_is_coloured_only_when_asked_or_on_a_terminal(tree):
    plain = plint(["fix", "--diff", "broken.sh"], tree)
    assert ESC not in text(plain)
    coloured = text(plint(["fix", "--diff", "--color", "always", "broken.sh"], tree))
    assert "\x1b[32m+export CUDA_DEVICE_MAX_CONNECTIONS=1" in coloured  # green additions
    assert re.search(r"\x1b\[31m-torchrun", coloured)  # red removals
    # the same diff under the colour
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == text(plain)


def test_rules_and_explain_say_fixed_rules_are_fixed():
    from plint.fixing.fixers import fixable_codes

    listing = subprocess.run([str(PLINT), "rules"], capture_output=True, text=True, timeout=60).stdout
    for code in ("PL101", "PL102", "PL103", "PL104", "PL107", "PL201", "PL504"):
        assert code in fixable_codes(), code
        line = next(line for line in listing.splitlines() if line.startswith(code))
        assert "never" not in line, line
        explained = subprocess.run([str(PLINT), "explain", code], capture_output=True, text=True, timeout=60).stdout
        assert "Not fixed automatically" not in explained, code


# ---- 2. --quiet, default, --verbose, --statistics ------------------------------------------------


def test_quiet_prints_nothing_for_a_clean_file_and_only_findings_otherwise(tree):
    clean = plint(["check", "-q", "clean.sh"], tree)
    assert clean.returncode == 0 and clean.stdout == b""
    broken = plint(["check", "--quiet", "broken.sh"], tree)
    out = text(broken)
    assert broken.returncode == 1
    assert out.startswith("PL601 [warning] [*]")
    assert "launcher=" not in out and "memory/GPU" not in out and "file(s) checked" not in out
    assert plint(["check", "-q", "--concise", "clean.sh"], tree).stdout == b""


def test_default_shows_a_layout_only_beside_findings_about_it_when_several_files_are_checked(tree):
    one = text(plint(["check", "clean.sh"], tree))
    assert one.startswith("clean.sh: launcher=torchrun")  # one file: its layout and estimate
    assert "memory/GPU" in one
    both = text(plint(["check", "broken.sh", "clean.sh"], tree))
    assert "broken.sh: launcher=torchrun" in both  # PL101 concerns its layout
    assert "clean.sh: launcher=" not in both  # nothing to say: only counted
    assert both.rstrip().splitlines()[-2] == "2 file(s) checked: 1 error(s), 2 warning(s), 0 info"
    verbose = text(plint(["check", "-v", "broken.sh", "clean.sh"], tree))
    assert "broken.sh: launcher=torchrun" in verbose and "clean.sh: launcher=torchrun" in verbose


def test_quiet_and_verbose_together_is_a_usage_error(tree):
    proc = plint(["check", "-q", "-v", "clean.sh"], tree)
    assert proc.returncode == 2
    assert "--quiet and --verbose" in proc.stderr.decode()


def test_statistics_counts_findings_per_rule(tree):
    (tree / "broken2.sh").write_text(BROKEN)
    proc = plint(["check", "--statistics", "broken.sh", "broken2.sh"], tree)
    assert proc.returncode == 1
    lines = text(proc).splitlines()
    assert lines[:3] == [
        "2\tPL101\t    [error] world-size-indivisible",
        "2\tPL303\t[*] [warning] sequence-parallel-off",
        "2\tPL601\t[*] [warning] cuda-device-max-connections",
    ]
    assert lines[3] == "2 file(s) checked: 2 error(s), 4 warning(s), 0 info"
    assert "--> " not in text(proc)  # counts instead of the findings
    wrong = plint(["check", "--statistics", "--format", "json", "broken.sh"], tree)
    assert wrong.returncode == 2


def test_note_on_a_named_json_shows_control_characters_as_escapes(tree):
    # the note names the file: a name carrying a terminal escape must not reach the terminal (review)
    name = "vocab\x1b[2J.json"
    (tree / name).write_text('{"hello": 1}\n')
    proc = plint(["check", name], tree)
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "\x1b" not in err and "vocab\\x1b[2J.json: not a DeepSpeed config" in err


# ---- 3. standard input ---------------------------------------------------------------------------


def test_check_reads_standard_input_as_dash(tree):
    piped = plint(["check", "--concise", "-"], tree, stdin=BROKEN.encode())
    named = plint(["check", "--concise", "broken.sh"], tree)
    assert piped.returncode == named.returncode == 1
    assert text(piped) == text(named).replace("broken.sh:", "-:")
    assert plint(["check", "-"], tree, stdin=CLEAN.encode()).returncode == 0


def test_stdin_filename_resolves_relative_files_as_for_that_name(tree):
    sub = tree / "jobs"
    sub.mkdir()
    (sub / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stgae": 1}}\n')
    launch = (
        "#!/bin/bash\n"
        "deepspeed --num_gpus 8 pretrain_gpt.py --tensor-model-parallel-size 1 --num-layers 2 "
        "--hidden-size 256 --num-attention-heads 4 --seq-length 512 --max-position-embeddings 512 "
        "--micro-batch-size 2 --global-batch-size 64 --vocab-size 1024 --bf16 "
        "--deepspeed --deepspeed_config ds.json\n"
    )
    proc = plint(["check", "--concise", "--stdin-filename", "jobs/new.sh", "-"], tree, stdin=launch.encode())
    out = text(proc)
    # ds.json beside jobs/new.sh is read (and its misspelt key found), as for the file itself
    assert "jobs/ds.json:1:" in out and "PL504 [error]" in out and '"stage"' in out
    assert proc.returncode == 1
    elsewhere = plint(["check", "--concise", "--stdin-filename", "new.sh", "-"], tree, stdin=launch.encode())
    assert "PL504" not in text(elsewhere) and "ds.json is neither in the repository" in text(elsewhere)
    # the name alone (no `-`) reads standard input too, as ruff does
    alone = plint(["check", "--concise", "--stdin-filename", "jobs/new.sh"], tree, stdin=launch.encode())
    assert text(alone) == out


def test_stdin_snippets_and_fix_diffs_show_standard_input_not_the_file_on_disk(tree):
    # an editor sends its unsaved buffer under the file's name: the report quotes the buffer (review)
    (tree / "edited.sh").write_text("#!/bin/bash\n# the version on disk\necho hello\n")
    proc = plint(["check", "--stdin-filename", "edited.sh", "-"], tree, stdin=BROKEN.encode())
    out = text(proc)
    assert "version on disk" not in out
    assert "2 | torchrun --nproc_per_node 8" in out and "    + export CUDA_DEVICE_MAX_CONNECTIONS=1" in out
    missing = text(plint(["check", "--stdin-filename", "new/launch.sh", "-"], tree, stdin=BROKEN.encode()))
    assert "2 | torchrun --nproc_per_node 8" in missing  # a name not on disk still gets its snippets


def test_stdin_per_file_ignores_follow_the_name(tree):
    (tree / ".plint.toml").write_text('per-file-ignores = { "legacy/*.sh" = ["PL601"] }\n')
    (tree / "legacy").mkdir()
    as_legacy = text(
        plint(["check", "--concise", "--stdin-filename", "legacy/old.sh", "-"], tree, stdin=BROKEN.encode())
    )
    as_new = text(plint(["check", "--concise", "--stdin-filename", "new.sh", "-"], tree, stdin=BROKEN.encode()))
    assert "PL601" not in as_legacy and "legacy/old.sh:2:" in as_legacy
    assert "new.sh:2:1: PL601" in as_new


def test_a_fast_path_error_rerun_through_click_checks_the_same_standard_input(tree):
    # a name that a strict UTF-8 stdout cannot print makes the fast path fail; the console entry then
    # runs the check again through click, which once read a drained stdin and passed the launch (review)
    name = os.fsdecode(b"caf\xe9.sh")
    proc = plint(
        ["check", "--concise", "--stdin-filename", name, "-"],
        tree,
        stdin=BROKEN.encode(),
        env={"PYTHONIOENCODING": "utf-8:strict"},
    )
    assert proc.returncode != 0 and "0 error(s)" not in text(proc)


def test_stdin_filename_without_dash_among_paths_is_a_usage_error(tree):
    proc = plint(["check", "--stdin-filename", "x.sh", "clean.sh"], tree)
    assert proc.returncode == 2 and "give `-`" in proc.stderr.decode()
    fix = plint(["fix", "-"], tree, stdin=BROKEN.encode())  # fix edits files: standard input is refused
    assert fix.returncode == 2 and "standard input) is for plint check" in fix.stderr.decode()


def test_stdin_filename_through_a_symlink_loop_is_a_usage_error(tree):
    # the name need not exist, but the reader resolves it: a loop is said, never a traceback (review)
    (tree / "loop-a").symlink_to("loop-b")
    (tree / "loop-b").symlink_to("loop-a")
    for name in ("loop-a", "loop-a/new.sh"):
        proc = plint(["check", "--concise", "--stdin-filename", name, "-"], tree, stdin=BROKEN.encode())
        err = proc.stderr.decode()
        assert proc.returncode == 2 and "Traceback" not in err and "cannot be resolved" in err


def test_stdin_filename_alone_keeps_its_usage_error(tree):
    # a usage error falls back to click, which once asked for PATHS instead of saying what is wrong (review)
    proc = plint(["check", "--stdin-filename", "x.sh", "-q", "-v"], tree, stdin=BROKEN.encode())
    assert proc.returncode == 2 and "--quiet and --verbose" in proc.stderr.decode()
    # no path at all checks the working directory, as ruff does (issue 29 changed the usage error)
    bare = plint(["check", "--concise"], tree)
    assert bare.returncode == 1 and "broken.sh:" in text(bare) and "2 file(s) checked" in text(bare)
    assert "plint check [OPTIONS] [PATHS]..." in text(plint(["check", "--help"], tree))


# ---- 4. colour -----------------------------------------------------------------------------------


def test_color_never_always_and_the_environment(tree):
    assert ESC not in text(plint(["check", "broken.sh"], tree))  # a pipe: plain
    assert ESC not in text(plint(["check", "--color", "never", "broken.sh"], tree, env={"FORCE_COLOR": "1"}))
    assert ESC in text(plint(["check", "--color", "always", "broken.sh"], tree, env={"NO_COLOR": "1"}))
    assert ESC in text(plint(["check", "broken.sh"], tree, env={"FORCE_COLOR": "1"}))  # CI logs
    assert ESC not in text(plint(["check", "broken.sh"], tree, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}))
    assert ESC not in text(plint(["check", "broken.sh"], tree, env={"FORCE_COLOR": "1", "TERM": "dumb"}))
    assert ESC in text(plint(["check", "--color", "always", "broken.sh"], tree, env={"TERM": "dumb"}))


def test_color_auto_on_a_terminal(tree):
    pty = pytest.importorskip("pty")
    main, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(
        [str(PLINT), "check", "broken.sh"],
        cwd=tree,
        stdout=secondary,
        stderr=secondary,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(main)
    assert ESC in b"".join(chunks).decode()


def test_severities_have_distinct_colours(tree):
    out = text(plint(["check", "--color", "always", "broken.sh"], tree))
    header = {m.group(2): m.group(1) for m in re.finditer(r"\x1b\[([0-9;]+)m(PL\d+) \[", out)}
    assert header["PL101"] != header["PL601"]  # error red, warning yellow
    carets = re.findall(r"\x1b\[([0-9;]+)m *\^+", out)
    assert len(set(carets)) == 2, carets  # the carets follow the severity too
    info = "#!/bin/bash\ntorchrun --nproc_per_node 8 x.py $EXTRA_ARGS\n"  # PL002: info
    (tree / "info.sh").write_text(info)
    info_out = text(plint(["check", "--color", "always", "info.sh"], tree))
    info_header = re.search(r"\x1b\[([0-9;]+)m(PL\d+) \[info\]", info_out)
    assert info_header and info_header.group(1) not in set(header.values())


# ---- 7. exit codes -------------------------------------------------------------------------------


def test_exit_codes_unchanged(tree):
    assert plint(["check", "clean.sh"], tree).returncode == 0
    assert plint(["check", "-q", "broken.sh"], tree).returncode == 1
    assert plint(["check", "--fail-on", "never", "-q", "broken.sh"], tree).returncode == 0
    assert plint(["check", "--color", "sometimes", "clean.sh"], tree).returncode == 2
    assert plint(["check", "missing.sh"], tree).returncode == 2


def test_a_file_name_that_is_not_utf8_prints_escaped_under_a_strict_utf8_stream(tree):
    name = b"caf\xe9.sh"
    with open(os.path.join(os.fsencode(tree), name), "wb") as f:
        f.write(BROKEN.encode())
    proc = subprocess.run(
        [os.fsencode(PLINT), b"check", b"--concise", name],
        cwd=tree,
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr  # the findings, not an encoding error (exit 2)
    assert b"caf\\udce9.sh:2:1: PL601" in proc.stdout


def test_standard_input_over_the_size_limit_says_so_without_a_made_up_size(tree):
    proc = plint(["check", "--concise", "-"], tree, stdin=b"#" * (5 * 1024 * 1024))
    out = text(proc)
    assert proc.returncode == 1 and "PL001" in out
    assert "too large to be a launch file (over 4194304 bytes)" in out
