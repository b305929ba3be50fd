"""The `plint show --format html` page opened in headless Chromium (Debian's package): the DOM it
builds carries every drawn GPU and every stage row, a screenshot is taken (kept under the test's
tmp_path as an artifact), and the browser logs no console error. Skips when Chromium is absent."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from fixture_paths import FIXTURES, ROOT
from plint.cli.commands import cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"  # a fresh profile per run
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120
    )


def test_page_renders_in_headless_chromium(tmp_path):
    page = tmp_path / "show.html"
    launch = FIXTURES / "vpp-stages-per-rank" / "launch.sh"  # 64 GPUs, pp 4
    out = CliRunner().invoke(cli, ["show", str(launch), "--format", "html", "-o", str(page)])
    assert out.exit_code == 0, out.output

    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr
    assert sorted(int(r) for r in re.findall(r'data-rank="(\d+)"', dom.stdout)) == list(range(64))
    assert sorted(int(s) for s in re.findall(r'data-stage="(\d+)"', dom.stdout)) == [0, 1, 2, 3]

    shot = tmp_path / "show.png"
    run = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1100,1000", "--hide-scrollbars", page.as_uri())
    assert run.returncode == 0, run.stderr
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    for log in (dom.stderr, run.stderr):
        # with --enable-logging=stderr Chromium logs each console message of the page as "...:CONSOLE:<line>]"
        # (checked: a page calling console.error and an undefined function logs two such lines)
        assert ":CONSOLE" not in log and "Uncaught" not in log, log
        assert "net::ERR" not in log, log  # nothing fetched


PAGES = {
    8: FIXTURES / "nsys-profile-torchrun" / "launch.sh",
    128: ROOT / "tests" / "pictures" / "launches" / "cross-node-128" / "launch.sh",
    16384: ROOT / "tests" / "pictures" / "launches" / "cluster-16k" / "launch.sh",
}


@pytest.mark.parametrize("world", sorted(PAGES))
def test_each_size_renders_with_its_legend_findings_and_outlines(tmp_path, world):
    """Issue 29: the page at 8, 128 and 16,384 GPUs as Chromium builds it: the schedule's legend, the speed
    line, the findings, one TP outline per drawn group (the 128-GPU run's tp16 groups span two nodes:
    one polygon each), and a screenshot the size of the page, with no console error."""
    page = tmp_path / "show.html"
    out = CliRunner().invoke(cli, ["show", str(PAGES[world]), "--format", "html", "-o", str(page)])
    assert out.exit_code == 0, out.output
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr
    for text in ("F forward", "B backward", "idle (bubble)", "tokens/s per GPU", "exposed time", "Findings"):
        assert text in dom.stdout, text
    outlines = re.findall(r'<polygon class="tp-group" data-first-rank="(\d+)"', dom.stdout)
    tp = {8: 4, 128: 16, 16384: 8}[world]
    drawn = len(set(int(r) for r in re.findall(r'data-rank="(\d+)"', dom.stdout)))
    assert len(outlines) == drawn // tp
    height = int(float(re.search(r'<svg[^>]* height="([\d.]+)"', dom.stdout).group(1)))
    shot = tmp_path / f"show-{world}.png"
    run = _chromium(
        tmp_path, f"--screenshot={shot}", f"--window-size=1100,{height + 40}", "--hide-scrollbars", page.as_uri()
    )
    assert run.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    width, tall = int.from_bytes(shot.read_bytes()[16:20], "big"), int.from_bytes(shot.read_bytes()[20:24], "big")
    assert (width, tall) == (1100, height + 40)  # the PNG header's size: the whole page was drawn
    for log in (dom.stderr, run.stderr):
        assert ":CONSOLE" not in log and "Uncaught" not in log, log
