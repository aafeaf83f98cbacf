"""The local index's writer: extraction per file type, passage chunking, incremental updates."""

from __future__ import annotations

import itertools
import os
import sqlite3
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract.errors import ExtractionError, MissingLibraryError
from zarniwoop.localindex.chunk import MAX_CHARS, OVERLAP_CHARS, TARGET_CHARS, chunk_blocks
from zarniwoop.localindex.extract import (
    Block,
    extract,
    extract_html,
    extract_markdown,
    extract_pdf,
)
from zarniwoop.localindex.index import LocalIndex, index_file
from zarniwoop.localindex.indexer import index_path

from ..support.pdf import make_pdf

P = Path("doc.md")


def test_markdown_sections_setext_headings_and_fences():
    text = (
        "Intro line\n\n"  # 1
        "Main Title\n==========\n\n"  # 3
        "Body of main.\n\n"  # 6
        "Sub\n---\n\n"  # 8
        "Under sub.\nSecond line.\n\n"  # 11
        "```\n# not a heading\n```\n\n"  # 14
        "### Deep ###\n\n"  # 18
        "Deep text.\n"  # 20
    )
    doc = extract_markdown(P, text)
    assert doc.title == "Main Title"
    assert [(b.heading, b.line) for b in doc.blocks] == [
        ("", 1),
        ("Main Title", 6),
        ("Main Title › Sub", 11),
        ("Main Title › Sub", 14),
        ("Main Title › Sub › Deep", 20),
    ]
    assert doc.blocks[2].text == "Under sub.\nSecond line."
    assert doc.blocks[3].text == "```\n# not a heading\n```"


def test_markdown_title_from_front_matter_then_first_heading_then_file_name():
    assert extract_markdown(P, "---\ntitle: 'Quoted'\n---\n# H1\n\nx\n").title == "Quoted"
    assert extract_markdown(P, "## Only an H2\n\nx\n").title == "Only an H2"
    assert extract_markdown(Path("plain.md"), "just text\n").title == "plain.md"


def test_html_blocks_headings_entities_and_line_numbers():
    html = (
        b"<html><head><title> The &lt;Title&gt; </title><style>p{}</style></head>\n"
        b"<body><nav>Menu</nav>\n<h1>Top</h1>\n<p>First <b>bold</b>\n para&nbsp;graph.</p>\n"
        b"<script>ignored()</script><h3>Low</h3><ul><li>one</li><li>two</li></ul><svg><text>no</text></svg>\n"
    )
    doc = extract_html(Path("a.html"), html)
    assert doc.title == "The <Title>"
    assert [(b.text, b.heading, b.line) for b in doc.blocks] == [
        ("Menu", "", 2),
        ("First bold para graph.", "Top", 4),  # &nbsp; folds like any space
        ("one", "Top › Low", 6),
        ("two", "Top › Low", 6),
    ]


def test_html_declared_charset_and_first_h1_as_title():
    body = '<meta charset="iso-8859-1"><h1>Caf\xe9</h1><p>cr\xe8me</p>'.encode("latin-1")
    doc = extract_html(Path("x.htm"), body)
    assert doc.title == "Café"
    assert doc.blocks[0].text == "crème"


def test_text_decoding_and_binary_refusal():
    assert extract(Path("a.txt"), "naïve\n".encode("cp1252"), "txt").blocks[0].text == "naïve"
    assert extract(Path("a.txt"), "\ufeffbom\n".encode(), "txt").blocks[0].text == "bom"
    with pytest.raises(ExtractionError, match="binary"):
        extract(Path("a.txt"), b"ab\x00cd", "txt")


def test_pdf_pages_title_and_damage():
    doc = extract_pdf(Path("r.pdf"), make_pdf(["Page one text.", "Hyphen-\nated words."], title="Report"))
    assert doc.title == "Report"
    assert [(b.text, b.page) for b in doc.blocks] == [("Page one text.", 1), ("Hyphenated words.", 2)]
    untitled = extract_pdf(Path("r.pdf"), make_pdf(["x"]))
    assert untitled.title == "r.pdf"
    with pytest.raises(ExtractionError, match="unreadable PDF"):
        extract_pdf(Path("r.pdf"), b"%PDF-1.4 garbage")
    blank = extract_pdf(Path("scan.pdf"), make_pdf([""]))
    assert blank.blocks == () and blank.warnings == ("no text layer (a scanned PDF needs OCR first)",)


def test_pdf_without_pypdf_is_a_missing_library(monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)  # `import pypdf` now raises ImportError
    with pytest.raises(MissingLibraryError, match="pip install pypdf"):
        extract_pdf(Path("r.pdf"), make_pdf(["x"]))


def test_chunks_are_bounded_overlapping_and_stay_in_their_section():
    sentence = "The turbine bearing shows wear beyond the documented limit. "
    long_para = sentence * 80  # ~4.9k characters, one paragraph
    blocks = [
        Block("Short intro.", 1, None, "A"),
        Block(long_para.strip(), 3, None, "A"),
        Block("Other section.", 9, None, "A › B"),
    ]
    passages = chunk_blocks(blocks)
    assert [p.chunk for p in passages] == list(range(len(passages)))
    assert all(len(p.text) <= MAX_CHARS for p in passages)
    in_a = [p for p in passages if p.heading == "A"]
    assert len(in_a) >= 3
    assert in_a[0].text.startswith("Short intro.") and in_a[0].line == 1
    assert all(p.line == 3 for p in in_a[1:])
    for before, after in itertools.pairwise(in_a):  # the next starts with the last ~200 characters
        assert any(before.text.endswith(after.text[:k]) for k in range(50, OVERLAP_CHARS + 1))
    assert passages[-1].heading == "A › B" and passages[-1].text == "Other section."


def test_pages_never_share_a_passage_and_short_paragraphs_pack_together():
    blocks = [Block("p1 a", None, 1), Block("p1 b", None, 1), Block("p2", None, 2)]
    assert [(p.text, p.page) for p in chunk_blocks(blocks)] == [("p1 a\n\np1 b", 1), ("p2", 2)]


def test_an_overlong_word_is_cut():
    passages = chunk_blocks([Block("x" * (MAX_CHARS * 2 + 10))])
    assert [len(p.text) for p in passages] == [MAX_CHARS, MAX_CHARS, 10]


@settings(deadline=None)
@given(st.lists(st.text(min_size=0, max_size=3000), max_size=8))
def test_every_word_survives_chunking_and_no_passage_is_too_long(paragraphs):
    blocks = [Block(p, i) for i, p in enumerate(paragraphs)]
    passages = chunk_blocks(blocks)
    assert all(0 < len(p.text) <= MAX_CHARS for p in passages)
    joined = " ".join(p.text for p in passages)
    for paragraph in paragraphs:
        for word in paragraph.split():
            if len(word) <= MAX_CHARS:
                assert word in joined
    assert TARGET_CHARS < MAX_CHARS


def _docs(home: Path) -> dict[str, int]:
    with LocalIndex.open_for_writing(index_file(home, "t", "p")) as index:
        rows = index.conn.execute("SELECT path, passages FROM documents").fetchall()
    return {Path(p).name: n for p, n in rows}


def test_incremental_runs_read_only_what_changed(tmp_path):
    home, docs = tmp_path / "home", tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha text\n")
    (docs / "b.txt").write_text("bravo text\n")
    (docs / "c.html").write_text("<p>charlie text</p>")
    first = index_path(docs, home, "t", "p")
    assert (first.indexed, first.updated, first.unchanged, first.removed) == (3, 0, 0, 0)
    assert first.passages_written == 3 and first.documents == 3 and first.passages == 3

    again = index_path(docs, home, "t", "p")
    assert (again.indexed, again.updated, again.unchanged, again.removed, again.passages_written) == (
        0,
        0,
        3,
        0,
        0,
    )

    os.utime(docs / "b.txt", (1_600_000_000, 1_600_000_000))  # touched, same bytes
    touched = index_path(docs, home, "t", "p")
    assert (touched.updated, touched.unchanged) == (0, 3)

    (docs / "a.md").write_text("# A\n\nalpha text, longer now\n\n## A2\n\nmore\n")
    (docs / "c.html").unlink()
    (docs / "d.txt").write_text("delta\n")
    changed = index_path(docs, home, "t", "p")
    assert (changed.indexed, changed.updated, changed.unchanged, changed.removed) == (1, 1, 1, 1)
    assert _docs(home) == {"a.md": 2, "b.txt": 1, "d.txt": 1}


def test_other_folders_in_the_same_index_are_left_alone(tmp_path):
    home = tmp_path / "home"
    for name in ("one", "two", "one-more"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.txt").write_text(f"{name} text\n")
    index_path(tmp_path / "one", home, "t", "p")
    index_path(tmp_path / "one-more", home, "t", "p")
    report = index_path(tmp_path / "two", home, "t", "p")
    assert report.removed == 0 and report.documents == 3
    (tmp_path / "one" / "one.txt").unlink()
    again = index_path(tmp_path / "one", home, "t", "p")  # "one-more" shares a prefix, not the folder
    assert again.removed == 1
    assert set(_docs(home)) == {"two.txt", "one-more.txt"}
    rebuilt = index_path(tmp_path / "two", home, "t", "p", rebuild=True)
    assert rebuilt.rebuilt and rebuilt.indexed == 1 and set(_docs(home)) == {"two.txt"}


def test_failures_skips_and_warnings_are_reported_per_file(tmp_path, monkeypatch):
    home, docs = tmp_path / "home", tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("fine\n")
    (docs / "bin.txt").write_bytes(b"\x00\x01\x02")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (docs / "scan.pdf").write_bytes(make_pdf([""]))
    report = index_path(docs, home, "t", "p")
    assert report.indexed == 2  # ok.md and the scan (stored with no passages, so it is not re-read)
    assert {(Path(n.path).name, n.reason.split(" (")[0]) for n in report.failed} == {
        ("bin.txt", "binary content, not text"),
        ("broken.pdf", "unreadable PDF"),
    }
    assert [(Path(n.path).name, n.reason) for n in report.warnings] == [
        ("scan.pdf", "no text layer (a scanned PDF needs OCR first)")
    ]

    (docs / "late.pdf").write_bytes(make_pdf(["late text"]))
    monkeypatch.setitem(sys.modules, "pypdf", None)
    without = index_path(docs, home, "t", "p")
    # failed files are tried again on every run; without pypdf every PDF to read is skipped
    assert [(Path(n.path).name, n.reason) for n in without.skipped] == [
        ("broken.pdf", "PDF text needs pypdf: pip install pypdf"),
        ("late.pdf", "PDF text needs pypdf: pip install pypdf"),
    ]
    assert [Path(n.path).name for n in without.failed] == ["bin.txt"]
    assert without.unchanged == 2  # the stored ones (ok.md, scan.pdf) are not read again


def test_a_file_that_turns_unreadable_loses_its_old_passages(tmp_path):
    home, docs = tmp_path / "home", tmp_path / "docs"
    docs.mkdir()
    (docs / "x.txt").write_text("once readable\n")
    index_path(docs, home, "t", "p")
    (docs / "x.txt").write_bytes(b"\x00binary now")
    report = index_path(docs, home, "t", "p")
    assert [n.reason for n in report.failed] == [
        "binary content, not text; its earlier passages were removed"
    ]
    assert _docs(home) == {}


def test_symlinks_are_not_followed(tmp_path):
    home, docs, outside = tmp_path / "home", tmp_path / "docs", tmp_path / "outside"
    docs.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (docs / "real.txt").write_text("real\n")
    (docs / "link.txt").symlink_to(outside / "secret.txt")
    (docs / "linked-dir").symlink_to(outside, target_is_directory=True)
    report = index_path(docs, home, "t", "p")
    assert report.indexed == 1 and set(_docs(home)) == {"real.txt"}


def test_an_index_of_another_format_is_replaced_and_said_so(tmp_path):
    home, docs = tmp_path / "home", tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("alpha\n")
    db = index_file(home, "t", "p")
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript("CREATE TABLE meta(key TEXT, value TEXT); INSERT INTO meta VALUES ('schema', '0');")
    conn.close()
    report = index_path(docs, home, "t", "p")
    assert report.rebuilt and report.indexed == 1
    assert [n.reason for n in report.warnings] == [
        "an index of another format was replaced: index other folders again"
    ]
