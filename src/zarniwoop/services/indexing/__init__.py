"""The local document index's writer: extract text from files, cut it into passages, store them.

    extract.py   file bytes → title + paragraphs with line/page/heading (txt, Markdown, HTML, PDF)
    chunk.py     paragraphs → overlapping passages of about 1–2k characters
    indexer.py   a folder → the scope's index file, incrementally (`zarniwoop index PATH`)

The index file itself (schema, search) is `storage/local_index.py`; the `local` protocol reads it.
"""

from __future__ import annotations

from .indexer import FileNote, IndexReport, check_target, index_path

__all__ = ["FileNote", "IndexReport", "check_target", "index_path"]
