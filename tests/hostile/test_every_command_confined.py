"""One confinement for every command: `check` (every format), `fix`, `fix --diff`, `show` (every format),
`plan LAUNCH` and `generate` resolve every path through the same root check (plint.root), symlinked files
and folders included. A secret is planted outside the root and reached every way a tree can reach it
(a symlinked file, a symlinked folder, `source ../secret.sh`, `--deepspeed_config ../secret.json`);
every command's stdout, stderr, written files and $GITHUB_STEP_SUMMARY are searched for it. Before,
`plint fix` printed (and wrote!) files a symlink in the tree points to, and `plint check sub/x.sh`
followed a symlinked folder out of the tree."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from console_script import run_plint  # noqa: E402

from hostile_helpers import FORMATS, SECRET, TRAINER, make_tree, outside_snapshot  # noqa: E402

LAUNCH = "torchrun --nproc_per_node 8 " + TRAINER + " --tensor-model-parallel-size 2"
# an outside launch carries the secret in a flag plint would quote (PL501) and has fixable findings
OUTSIDE_LAUNCH = LAUNCH.replace("size 2", "size 3") + " --{secret}-flag 1\n"
FILES = {
    "outside/secret.sh": "TP=2  # {secret}\nexport {secret}=1\n",
    "outside/secret.json": '{"train_micro_batch_size_per_gpu": 1, "{secret}": 1, "zero_optimization": {"stage": 1}}',
    "outside/secret.txt": "{secret}\n",
    "outside/secret.yml": "num_layers: 2\n{secret}: 1\nhidden_size: 64\n",
    "outside/dir/x.sh": OUTSIDE_LAUNCH,
    "outside/dir/ds.json": '{"train_batch_size": 8, "{secret}": 2}',
    # the launches of the tree: each reaches outside its own way, and each is complete enough to draw
    "repo/sources.sh": "source ../outside/secret.sh\n" + LAUNCH + " --seed $TP\n",
    "repo/names.sh": LAUNCH + " --deepspeed --deepspeed_config ../outside/secret.json\n",
    "repo/plain.sh": LAUNCH + "\n",
}
LINKS = {
    "repo/link.sh": "{outside}/dir/x.sh",
    "repo/link.json": "{outside}/secret.json",
    "repo/link.yml": "{outside}/secret.yml",
    "repo/text.sh": "{outside}/secret.txt",
    "repo/sub": "{outside}/dir",
}
NAMED = ["sources.sh", "names.sh", "plain.sh", "link.sh", "link.json", "link.yml", "text.sh", "sub/x.sh", "sub"]


@pytest.fixture
def tree(tmp_path):
    repo, outside = make_tree(tmp_path, FILES, LINKS)
    return repo, outside, outside_snapshot(outside)


def _commands(repo: Path) -> dict[str, list[str]]:
    """Every command plint has, each given what reaches outside."""
    out = {f"check --format {fmt}": ["check", "--format", fmt, *NAMED] for fmt in FORMATS}
    out["check sub/x.sh"] = ["check", "sub/x.sh"]
    out["check --verbose"] = ["check", "--verbose", *NAMED]
    out["fix --diff"] = ["fix", "--diff", *NAMED]
    out["fix --diff --unsafe-fixes"] = ["fix", "--diff", "--unsafe-fixes", *NAMED]
    out["fix"] = ["fix", "--unsafe-fixes", *NAMED]
    for launch in ("sources.sh", "names.sh", "plain.sh", "link.sh", "sub/x.sh"):
        for fmt in ("text", "html", "svg", "markdown"):
            shown = f"shown-{launch.replace('/', '-')}.{fmt}"
            out[f"show {launch} {fmt}"] = ["show", "--format", fmt, "-o", shown, launch]
        out[f"plan {launch}"] = ["plan", launch]
        out[f"plan {launch} json"] = ["plan", "--format", "json", "--show", "1", launch]
    for layout in ("link.json", "sub/ds.json", "sub/x.sh"):
        out[f"generate --layout {layout}"] = ["generate", "--target", "torchrun", "--layout", layout, "--stdout"]
    for target in ("torchrun", "slurm", "deepspeed"):  # from the layout of a launch that sources the secret
        out[f"generate {target}"] = ["generate", "--target", target, "--layout", "layout.json", "-o", f"gen-{target}"]
    return out


def _written(repo: Path) -> str:
    """Every file in the tree but the planted launches (what the commands wrote)."""
    texts = []
    for path in repo.rglob("*"):
        if (
            path.is_file()
            and not path.is_symlink()
            and ".git" not in path.parts
            and not any(path.resolve() == (repo / name).resolve() for name in FILES if name.startswith("repo/"))
        ):
            texts.append(path.read_text(errors="replace"))
    return "\n".join(texts)


def test_no_command_reads_shows_or_writes_outside_the_root(tree, tmp_path):
    repo, outside, before = tree
    summary = tmp_path / "summary.md"
    layout = run_plint("check", "--format", "json", "sources.sh", cwd=repo)
    (repo / "layout.json").write_text(layout.stdout)
    ran = 0
    for name, args in _commands(repo).items():
        done = run_plint(
            *args, cwd=repo, env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(tmp_path / "github_output")}
        )
        assert "Traceback" not in done.stderr, (name, done.stderr)
        assert done.returncode in (0, 1, 2), (name, done.returncode)
        for stream, text in (("stdout", done.stdout), ("stderr", done.stderr)):
            assert SECRET not in text, f"`plint {name}` {stream} shows a file outside the root:\n{text}"
        ran += 1
    assert ran > 30
    assert SECRET not in _written(repo), "a command wrote the content of a file outside the root"
    assert SECRET not in summary.read_text()
    assert outside_snapshot(outside) == before, "a command changed a file outside the root"


def test_a_symlinked_folder_named_is_refused_as_a_symlinked_file_is(tree):
    repo, _, _ = tree
    done = run_plint("check", "--format", "json", "sub/x.sh", "link.sh", "plain.sh", cwd=repo)
    assert done.returncode == 1
    assert done.stdout.count("outside the checked tree: not read") == 2, done.stdout


def test_fix_neither_reads_nor_writes_through_a_symlinked_folder(tree):
    repo, outside, before = tree
    done = run_plint("fix", "--unsafe-fixes", "sub/x.sh", "link.json", cwd=repo)
    assert SECRET not in done.stdout + done.stderr
    assert "outside the checked tree" in done.stdout
    assert outside_snapshot(outside) == before


def test_generate_reads_a_layout_only_as_check_would(tree):
    repo, _, _ = tree
    done = run_plint("generate", "--target", "torchrun", "--layout", "link.json", "--stdout", cwd=repo)
    assert done.returncode == 2 and "outside the checked tree" in done.stderr and SECRET not in done.stderr
