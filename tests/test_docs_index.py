"""The README opens with a table of contents of its sections, and docs/README.md links every page in
docs/ (issue 46: an 839-line README with no contents, pages nobody linked)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def test_the_readme_contents_list_every_section_in_order():
    text = (ROOT / "README.md").read_text()
    sections = [t for t in re.findall(r"^## (.+)$", text, flags=re.M) if t != "Contents"]
    contents = text.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^- \[([^\]]+)\]\(#([^)]+)\)", contents, flags=re.M)
    assert [title for title, _ in listed] == sections
    assert all(anchor == _anchor(title) for title, anchor in listed)
    assert "(docs/README.md)" in contents


def test_the_docs_index_links_every_page_and_nothing_missing():
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md")
    index = (ROOT / "docs" / "README.md").read_text()
    linked = sorted(set(re.findall(r"\]\(([\w.-]+\.md)\)", index)))
    assert linked == pages
    assert all((ROOT / "docs" / page).is_file() for page in linked)


def test_the_readme_keeps_its_benchmark_tables_short():
    """The figures of every issue live in docs/performance.md; the README keeps the gate's table."""
    text = (ROOT / "README.md").read_text()
    performance = text.split("\n## Performance\n", 1)[1]
    table_rows = [line for line in performance.splitlines() if line.startswith("|")]
    assert len(table_rows) <= 10
    assert "docs/performance.md" in performance
