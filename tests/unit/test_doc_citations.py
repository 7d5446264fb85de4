"""Comments, docstrings and messages cite only pages of this repository.

A citation of a source document by number, of a section of the product specification or of an
issue names a document a checkout does not contain, so no reader can follow it; the decision it
stands for has a page under ``docs/decisions/`` instead (docs/decisions/index.md). Every
``docs/...`` page the code cites must exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness import REPO

pytestmark = pytest.mark.engine_independent

OUTSIDE_CITATION = re.compile(
    r"(?i:\bseeds?\s+0\d\d\b)|\bSPEC(?:\.md)?\s*(?:sections?|§|\d)|(?i:\bissues?\s+#?\d+)"
)
"""The forms that cited the project's source documents and its issue tracker."""

DOCS_PAGE = re.compile(r"(?<![\w/.])docs/[\w./-]*\w")
TEXT_SUFFIXES = {".py", ".html", ".css", ".js", ".toml", ".sql", ".md", ".txt", ".sh", ".ini"}
NOT_OURS = {"vendor", "node_modules", "__pycache__"}
"""Third-party code kept as it is published, and build output."""


def our_text_files() -> list[Path]:
    files = []
    for top in ("src", "tests", "benchmarks"):
        for path in sorted((REPO / top).rglob("*")):
            parts = set(path.relative_to(REPO).parts)
            if path.is_file() and path.suffix in TEXT_SUFFIXES and not parts & NOT_OURS:
                files.append(path)
    return files


def test_the_scan_covers_the_benchmarks() -> None:
    """The benchmarks' docstrings and their results page are held to the same rule as the code."""
    scanned = {path.relative_to(REPO).as_posix() for path in our_text_files()}
    assert "benchmarks/queue_compare.py" in scanned
    assert "benchmarks/RESULTS.md" in scanned


def citations(pattern: re.Pattern[str]) -> list[tuple[str, int, str]]:
    found = []
    for path in our_text_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in pattern.finditer(line):
                found.append((str(path.relative_to(REPO)), number, match.group(0)))
    return found


def test_no_citation_of_a_document_outside_the_repository() -> None:
    outside = citations(OUTSIDE_CITATION)
    assert not outside, "cite a page under docs/ instead (docs/decisions/ for a decision):\n" + (
        "\n".join(f"{path}:{line}: {text}" for path, line, text in outside)
    )


def test_every_cited_docs_page_exists() -> None:
    cited = citations(DOCS_PAGE)
    assert cited, "the code cites no docs/ page at all: the scan is broken"
    missing = [
        (path, line, page)
        for path, line, page in cited
        if page.endswith(".md") and not (REPO / page).is_file()
    ]
    assert not missing, "\n".join(
        f"{path}:{line}: {page} does not exist" for path, line, page in missing
    )


def test_the_readme_links_only_to_files_that_exist() -> None:
    """README.md is outside the site that ``mkdocs build --strict`` checks: its links into the
    documentation are checked here."""
    links = re.findall(r"\]\(([^)#\s]+)", (REPO / "README.md").read_text())
    local = [link for link in links if "://" not in link]
    assert local, "the README links to no page: the scan is broken"
    missing = [link for link in local if not (REPO / link).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
