"""The README and the docs/ pages: nothing in them points outside a clone of the repository, and the
documentation site (mkdocs.yml) builds with mkdocs in strict mode (a broken link or anchor fails it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from doc_snippets import RELEASE_TAG, precommit_snippets, action_refs, project_version

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
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    built = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("index.html")}
    assert {"index.html", "checking/index.html", "rules/index.html", "rules/PL101/index.html"} <= built


def test_mkdocs_is_in_the_docs_extra():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("mkdocs") for req in extras["docs"])
    assert "mkdocs build --strict" in (ROOT / ".ci" / "run").read_text()


def test_every_snippet_names_the_current_release_tag():
    import yaml

    revs = [repo["rev"] for snippet in precommit_snippets() for repo in yaml.safe_load(snippet)["repos"]]
    assert revs and set(revs) == {RELEASE_TAG}, revs
    assert action_refs() and set(action_refs()) == {RELEASE_TAG}, action_refs()
    assert re.search(
        rf"^## \[{re.escape(project_version())}\] - \d{{4}}-\d{{2}}-\d{{2}}$", (ROOT / "CHANGELOG.md").read_text(), re.M
    ), "CHANGELOG.md has no section for this version"


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)


def test_the_release_tag_resolves_in_the_repository():
    """The tag the snippets name is a commit of this repository, with the action and the hooks at its root and
    this version in its pyproject.toml. A copy that is no git checkout, or a clone made without tags, cannot
    tell: it skips and says so."""
    if shutil.which("git") is None or _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout: the release tag cannot be resolved here")
    if not _git("tag", "--list").stdout.strip():
        pytest.skip(f"this clone has no tags at all (cloned without them?): {RELEASE_TAG} cannot be checked")
    resolved = _git("rev-parse", "--verify", "--quiet", f"{RELEASE_TAG}^{{commit}}")
    assert resolved.returncode == 0, (
        f"the snippets name {RELEASE_TAG}, which is no tag of this repository: "
        f"tag the release commit (git tag -a {RELEASE_TAG})"
    )
    for name in ("action.yml", ".pre-commit-hooks.yaml"):
        assert _git("cat-file", "-e", f"{RELEASE_TAG}:{name}").returncode == 0, f"{RELEASE_TAG} has no {name}"
    released = _git("show", f"{RELEASE_TAG}:pyproject.toml").stdout
    assert re.search(rf'^version = "{re.escape(project_version())}"$', released, re.M)


def test_the_snippets_hooks_are_the_repositorys_hooks():
    import yaml

    hooks = {hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    named = {
        hook["id"]
        for snippet in precommit_snippets()
        for repo in yaml.safe_load(snippet)["repos"]
        for hook in repo["hooks"]
    }
    assert named and named <= hooks, named - hooks
