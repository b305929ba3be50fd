"""The README and the docs/ pages: nothing in them points outside a clone of the repository, and the
documentation site (mkdocs.yml) builds with mkdocs in strict mode (a broken link or anchor fails it)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# files of the workspace plint was built in, which a clone does not have
OUTSIDE = re.compile(r"\.\./shared|/work/|\bDESIGN\.md\b|\bREFERENCE\.md\b|\bHELPERS\.md\b")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_names_a_file_a_clone_does_not_have(page):
    text = page.read_text()
    assert not OUTSIDE.findall(text), OUTSIDE.findall(text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(page):
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor of the same page (mkdocs --strict checks those)
        resolved = (page.parent / target.split("#")[0]).resolve()
        assert resolved.is_relative_to(ROOT) and resolved.exists(), f"{page.name}: {target}"


def test_the_readme_lists_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md") if p.name != "index.md"}
    listed = set(LINK.findall(readme))
    assert pages <= listed, pages - listed


def test_the_docs_site_builds_in_strict_mode(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    built = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("index.html")}
    assert {"index.html", "checking/index.html", "rules/index.html", "rules/PL101/index.html"} <= built


def test_mkdocs_is_in_the_docs_extra():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("mkdocs") for req in extras["docs"])
    assert "mkdocs build --strict" in (ROOT / ".ci" / "run").read_text()
