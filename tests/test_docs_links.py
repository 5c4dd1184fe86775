"""Every relative link in the project's Markdown points at a file or directory that exists."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")
SKIP_DIRS = {".venv", ".git", "node_modules", ".pytest_cache", ".ruff_cache"}


def markdown_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.md") if not SKIP_DIRS & set(p.relative_to(ROOT).parts))


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # URLs and anchors within the page
        if not (path.parent / target.split("#", 1)[0]).exists():
            broken.append(target)
    return broken


def test_relative_links_resolve() -> None:
    files = markdown_files()
    assert len(files) >= 10
    problems = {str(p.relative_to(ROOT)): b for p in files if (b := broken_links(p))}
    assert problems == {}


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("x")
    page.write_text("[a](there.md) [b](missing.md#part) [c](https://example.com) [d](#local)")
    assert broken_links(page) == ["missing.md#part"]
