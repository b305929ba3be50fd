"""The snippets the README and docs show, for the tests that run them: the pre-commit and GitHub Action blocks
name a release tag that exists (issue 29: `@v1` and `rev: COMMIT` failed when pasted)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNIPPET_PAGES = [ROOT / "README.md", ROOT / "docs" / "pre-commit.md", ROOT / "docs" / "github-action.md"]


def project_version() -> str:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


RELEASE_TAG = f"v{project_version()}"


def fenced_blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", page.read_text(), re.S | re.M)


def precommit_snippets() -> list[str]:
    """Every `.pre-commit-config.yaml` the README and docs show (the same block may stand on two pages)."""
    blocks = [
        b
        for page in SNIPPET_PAGES
        for b in fenced_blocks(page, "yaml")
        if "repo: https://github.com/plint-dev/plint" in b
    ]
    return list(dict.fromkeys(blocks))


def workflow_snippets() -> list[str]:
    """Every workflow file the README and docs show."""
    blocks = [b for page in SNIPPET_PAGES for b in fenced_blocks(page, "yaml") if b.startswith("# .github/workflows/")]
    return list(dict.fromkeys(blocks))


def action_refs() -> list[str]:
    return [ref for page in SNIPPET_PAGES for ref in re.findall(r"uses: plint-dev/plint@([^\s`]+)", page.read_text())]
