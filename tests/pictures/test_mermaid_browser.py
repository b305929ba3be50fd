"""The markdown report's pipeline chart drawn by the mermaid release on the npm registry, in headless
Chromium: every block lands where the schedule puts it (the rendered SVG's rect x and width are one affine
map of the block's start and length), one row per stage. Under `dateFormat X` mermaid 11 and 12 drew every
block from t=0 (the rects all had x=75); parsing the chart could not see that, drawing it does.

Needs Chromium and npm (the package is installed once into a cache folder, $PLINT_MERMAID_DIR or
~/.cache/plint-tests/mermaid); skips with the reason where either is missing or the registry is out of
reach. A screenshot of each chart is kept under the test's tmp_path."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from plint.pictures.markdown import gantt_lines
from plint.pictures.schedule import build

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NPM = shutil.which("npm")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=20000",
]

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
    pytest.mark.skipif(NPM is None, reason="npm is not installed: mermaid comes from the npm registry"),
]


def _npm(*args: str, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run([NPM, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def mermaid_js() -> Path:
    """mermaid.min.js of the registry's current release, installed once into the cache folder."""
    folder = Path(os.environ.get("PLINT_MERMAID_DIR") or Path.home() / ".cache" / "plint-tests" / "mermaid")
    try:
        version = _npm("view", "mermaid", "version", timeout=120).stdout.strip()
    except subprocess.TimeoutExpired:
        version = ""
    installed = folder / "node_modules" / "mermaid"
    if installed.is_dir() and (
        not version or json.loads((installed / "package.json").read_text())["version"] == version
    ):
        return installed / "dist" / "mermaid.min.js"
    if not version:
        pytest.skip("the npm registry is out of reach (npm view mermaid version) and no mermaid is cached")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = _npm(
            "install",
            "--prefix",
            str(folder),
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            f"mermaid@{version}",
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm install mermaid@{version} took over 10 minutes")
    if done.returncode != 0 or not (installed / "dist" / "mermaid.min.js").is_file():
        pytest.skip(f"npm install mermaid@{version} failed: {done.stderr[-300:]}")
    return installed / "dist" / "mermaid.min.js"


def _draw(tmp_path: Path, mermaid_js: Path, lines: list[str], name: str) -> list[dict]:
    """The chart rendered by mermaid in Chromium: each task's rect (in declaration order) with x, y, width."""
    page = tmp_path / f"{name}.html"
    page.write_text(
        f'<!DOCTYPE html><html><body><pre class="mermaid">{html.escape(chr(10).join(lines))}</pre>'
        f'<script src="{mermaid_js.as_uri()}"></script>'
        "<script>mermaid.initialize({startOnLoad: true});</script></body></html>"
    )
    profile = tmp_path / f"profile-{name}"
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    shot = tmp_path / f"{name}.png"
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--screenshot={shot}",
            "--window-size=1400,500",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rects = []
    for tag in re.findall(r"<rect\b[^>]*>", dom.stdout):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        task = re.search(r"-task(\d+)$", attrs.get("id", ""))
        if task and "task" in attrs.get("class", "").split():
            rects.append(
                {"n": int(task.group(1)), "x": float(attrs["x"]), "y": float(attrs["y"]), "w": float(attrs["width"])}
            )
    assert rects, "mermaid drew no task: " + dom.stdout[-2000:]
    return sorted(rects, key=lambda r: r["n"])


def _declared(lines: list[str]) -> list[tuple[int, int, int]]:
    """(stage, start, end) of each task line, in order."""
    out, stage = [], -1
    for line in lines:
        if line.strip().startswith("section stage"):
            stage = int(line.split()[-1])
        task = re.search(r":(?:\w+, )?(\d+), (\d+)$", line)
        if task:
            out.append((stage, int(task.group(1)), int(task.group(2))))
    return out


@pytest.mark.parametrize("pp,microbatches,vpp", [(4, 4, None), (2, 4, 2)], ids=["1f1b", "interleaved"])
def test_each_block_is_drawn_where_the_schedule_puts_it(tmp_path, mermaid_js, pp, microbatches, vpp):
    schedule = build(pp, microbatches, vpp)
    lines = gantt_lines(schedule)
    declared = _declared(lines)
    rects = _draw(tmp_path, mermaid_js, lines, f"gantt-{pp}-{microbatches}-{vpp}")
    assert len(rects) == len(declared) == len(schedule.blocks)
    # one affine map from schedule time to pixels, fitted on the earliest and the latest start
    first = min(range(len(declared)), key=lambda i: declared[i][1])
    last = max(range(len(declared)), key=lambda i: declared[i][1])
    px = (rects[last]["x"] - rects[first]["x"]) / (declared[last][1] - declared[first][1])
    assert px > 1, "every block starts at the same x"
    for (stage, start, end), rect in zip(declared, rects):
        assert rect["x"] == pytest.approx(rects[first]["x"] + (start - declared[first][1]) * px, abs=1.5)
        assert rect["w"] == pytest.approx((end - start) * px, abs=1.5)
    # one row per stage (compact display): a stage's blocks share a y, stages go down in order
    rows = {}
    for (stage, _, _), rect in zip(declared, rects):
        rows.setdefault(stage, set()).add(rect["y"])
    assert all(len(ys) == 1 for ys in rows.values()), rows
    ys = [next(iter(rows[s])) for s in sorted(rows)]
    assert ys == sorted(ys) and len(set(ys)) == pp
    # the pipeline's warm-up: stage s starts its first block s forward-lengths after stage 0
    starts = {stage: min(r["x"] for (s, _, _), r in zip(declared, rects) if s == stage) for stage in rows}
    assert len(set(starts.values())) == pp and sorted(starts.values()) == [starts[s] for s in sorted(starts)]
