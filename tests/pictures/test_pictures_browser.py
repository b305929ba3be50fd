"""The `plint show --format html` page opened in headless Chromium (Debian's package): the DOM it
builds carries every drawn GPU and every stage row, a screenshot is taken (kept under the test's
tmp_path as an artifact), and the browser logs no console error. Skips when Chromium is absent."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from fixture_paths import FIXTURES
from plint.cli.commands import cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0"]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"  # a fresh profile per run
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=120)


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
