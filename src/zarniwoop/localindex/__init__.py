"""Search your own documents: a per-project SQLite FTS5 index and the `local` protocol over it.

    extract.py   file bytes → title + paragraphs with line/page/heading (txt, Markdown, HTML, PDF)
    chunk.py     paragraphs → overlapping passages of about 1–2k characters
    indexer.py   a folder → the scope's index file, incrementally (`zarniwoop index PATH`)
    index.py     the index file itself: schema, writes, BM25 search (`LocalIndex`)
    fts_query.py user text → a safe FTS5 MATCH expression (never FTS5 syntax)
    protocol.py  the `local` protocol (INTERNAL_DOC, RAG), registered through the
                 `zarniwoop.protocols` entry point exactly as an add-on protocol would be

The index lives in its own file, `ZARNIWOOP_HOME/index/<tenant>/<project>/local.db`, apart from
the main database, so it works the same on SQLite or PostgreSQL deployments. Nothing is imported
here: loading the protocol does not load the indexer's PDF reader.
"""
