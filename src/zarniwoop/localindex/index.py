"""The local document index: one SQLite FTS5 file per `(tenant, project)`.

`zarniwoop index PATH` writes it (`localindex/indexer.py`), the `local` protocol reads it. It lives in
its own file, `ZARNIWOOP_HOME/index/<tenant>/<project>/local.db`, not in the main database: it is
the user's document text, rebuilt at will, and it must work the same whether the main database is
the embedded SQLite or a shared PostgreSQL (a replica then needs the folder too — the documents
are local by nature).

Layout:

    documents     one row per file: path, filetype, title, size, mtime, sha256, passage count
    passages      one row per passage (≈1–2k characters): chunk number, page, line, heading, text
    passages_fts  FTS5 over (title, heading, body), external content = `passages`, kept in step
                  by triggers; porter stemming over unicode61 (case- and diacritic-folded)
    roots         the folders indexed into this file, for the status line
    meta          `schema` version; a file of another version is rebuilt by the indexer

Ranking is BM25 with a title match worth four body matches and a heading match two.
Readers open the file read-only; WAL lets a search run while `zarniwoop index` writes.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..contract.errors import IndexFormatError
from ..contract.names import check_name, path_inside

if TYPE_CHECKING:
    from .chunk import Passage

SCHEMA_VERSION = "1"
INDEX_FOLDER = "index"
INDEX_FILE = "local.db"
BM25_WEIGHTS = (4.0, 2.0, 1.0)
"""title, heading, body."""
SNIPPET_TOKENS = 24
HIGHLIGHT = ("**", "**")
"""Markdown bold around matched words in a snippet: readable by a person and by an LLM."""

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS roots(path TEXT PRIMARY KEY, indexed_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS documents(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    filetype TEXT NOT NULL,
    title TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime REAL NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    passages INTEGER NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_mtime ON documents(mtime);
CREATE TABLE IF NOT EXISTS passages(
    id INTEGER PRIMARY KEY,
    document_id INTEGER NOT NULL REFERENCES documents(id),
    chunk INTEGER NOT NULL,
    page INTEGER,
    line INTEGER,
    title TEXT NOT NULL,
    heading TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS passages_document ON passages(document_id);
CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(
    title, heading, body,
    content='passages', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS passages_ai AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts(rowid, title, heading, body) VALUES (new.id, new.title, new.heading, new.body);
END;
CREATE TRIGGER IF NOT EXISTS passages_ad AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts(passages_fts, rowid, title, heading, body)
    VALUES ('delete', old.id, old.title, old.heading, old.body);
END;
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', '{SCHEMA_VERSION}');
"""


def index_file(home: Path, tenant: str, project: str) -> Path:
    """`home/index/<tenant>/<project>/local.db`; `InvalidRequestError` for a name
    outside the one name rule or a path that would leave `home/index`."""
    tenant = check_name("tenant", tenant, allow_level=True)
    project = check_name("project", project, allow_level=True)
    return path_inside(Path(home) / INDEX_FOLDER, tenant, project, INDEX_FILE)


@dataclass(frozen=True, slots=True)
class StoredDocument:
    path: str
    size: int
    mtime_ns: int
    sha256: str
    passages: int


@dataclass(frozen=True, slots=True)
class PassageHit:
    path: str
    filetype: str
    title: str
    heading: str
    body: str
    chunk: int
    page: int | None
    line: int | None
    mtime: float
    score: float
    """BM25 relevance, higher is better (FTS5's `bm25()` negated)."""
    snippet: str


@dataclass(frozen=True, slots=True)
class IndexStats:
    documents: int
    passages: int
    roots: tuple[str, ...]
    updated_at: float | None


class LocalIndex:
    """One open index file. Synchronous: callers run it in a worker thread."""

    def __init__(self, conn: sqlite3.Connection, path: Path, *, replaced: bool = False) -> None:
        self.conn = conn
        self.path = path
        self.replaced = replaced
        """True when `open_for_writing` found a file of another schema version and started it over."""

    # -- opening ---------------------------------------------------------------------------------

    @classmethod
    def open_for_writing(cls, path: Path, *, fresh: bool = False) -> LocalIndex:
        """Open (or create) the file for the indexer; `fresh` starts from an empty index.

        A file of another schema version is replaced: it is only a cache of the documents.
        `IndexFormatError` when the file is not SQLite at all (never deleted without `fresh`).
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            _remove(path)
        conn = _connect(str(path), uri=False)
        try:
            version = _schema_version(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise IndexFormatError(f"{path} is not an index ({exc}); rebuild it with --rebuild") from None
        replaced = version not in (None, SCHEMA_VERSION)
        if replaced:
            conn.close()
            _remove(path)
            conn = _connect(str(path), uri=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        return cls(conn, path, replaced=replaced)

    @classmethod
    def open_for_reading(cls, path: Path) -> LocalIndex | None:
        """The file read-only, or None when there is none yet. `IndexFormatError` on a foreign file."""
        if not path.is_file():
            return None
        conn = _connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            version = _schema_version(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise IndexFormatError(f"the local index is unreadable ({exc})") from None
        if version != SCHEMA_VERSION:
            conn.close()
            raise IndexFormatError(
                f"the local index has schema {version or 'none'}, this version reads {SCHEMA_VERSION}"
            )
        return cls(conn, path)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> LocalIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ---------------------------------------------------------------------------------

    def stats(self) -> IndexStats:
        documents, passages, updated = self.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(passages), 0), MAX(indexed_at) FROM documents"
        ).fetchone()
        roots = tuple(r[0] for r in self.conn.execute("SELECT path FROM roots ORDER BY path"))
        return IndexStats(int(documents), int(passages), roots, updated)

    def is_empty(self) -> bool:
        """No passage at all (cheaper than `stats()`: one index probe, whatever the size)."""
        return self.conn.execute("SELECT 1 FROM passages LIMIT 1").fetchone() is None

    def documents_under(self, root: Path) -> dict[str, StoredDocument]:
        """Every stored document at or below `root` (an absolute, resolved path)."""
        rows = self.conn.execute(
            "SELECT path, size, mtime_ns, sha256, passages FROM documents WHERE path = ? OR path LIKE ? ESCAPE '\\'",
            (str(root), _like_prefix(str(root).rstrip(os.sep) + os.sep)),
        )
        return {r[0]: StoredDocument(r[0], r[1], r[2], r[3], r[4]) for r in rows}

    def search(
        self,
        match: str,
        *,
        limit: int,
        filetypes: Sequence[str] = (),
        mtime_from: float | None = None,
        mtime_before: float | None = None,
        deadline: float | None = None,
    ) -> list[PassageHit]:
        """Passages matching an FTS5 expression (built by `fts_query`), best BM25 first.

        `deadline` (a `time.monotonic()` value) interrupts a long query: `sqlite3.OperationalError`.
        """
        where = ["passages_fts MATCH ?"]
        params: list[object] = [match]
        if filetypes:
            where.append(f"d.filetype IN ({', '.join('?' for _ in filetypes)})")
            params.extend(filetypes)
        if mtime_from is not None:
            where.append("d.mtime >= ?")
            params.append(mtime_from)
        if mtime_before is not None:
            where.append("d.mtime < ?")
            params.append(mtime_before)
        params.append(limit)
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        sql = (
            "SELECT d.path, d.filetype, p.title, p.heading, p.body, p.chunk, p.page, p.line, d.mtime, "
            f"bm25(passages_fts, {weights}) AS score, "
            f"snippet(passages_fts, 2, ?, ?, '…', {SNIPPET_TOKENS}) "
            "FROM passages_fts JOIN passages p ON p.id = passages_fts.rowid "
            "JOIN documents d ON d.id = p.document_id "
            f"WHERE {' AND '.join(where)} ORDER BY score, p.id LIMIT ?"
        )
        if deadline is not None:
            self.conn.set_progress_handler(lambda: time.monotonic() > deadline, 2000)
        try:
            rows = self.conn.execute(sql, [*HIGHLIGHT, *params]).fetchall()
        finally:
            if deadline is not None:
                self.conn.set_progress_handler(None, 0)
        return [
            PassageHit(
                path=r[0],
                filetype=r[1],
                title=r[2],
                heading=r[3],
                body=r[4],
                chunk=r[5],
                page=r[6],
                line=r[7],
                mtime=r[8],
                score=-float(r[9]),
                snippet=r[10],
            )
            for r in rows
        ]

    # -- writing (the indexer) -------------------------------------------------------------------

    def replace_document(
        self,
        path: str,
        *,
        filetype: str,
        title: str,
        size: int,
        mtime_ns: int,
        sha256: str,
        passages: Iterable[Passage],
    ) -> int:
        """Store a file's passages in place of any earlier ones, in one transaction; returns how many."""
        items = list(passages)
        with self.conn:
            self._delete(path)
            cursor = self.conn.execute(
                "INSERT INTO documents(path, filetype, title, size, mtime, mtime_ns, sha256, passages, indexed_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (path, filetype, title, size, mtime_ns / 1e9, mtime_ns, sha256, len(items), time.time()),
            )
            document_id = cursor.lastrowid
            self.conn.executemany(
                "INSERT INTO passages(document_id, chunk, page, line, title, heading, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(document_id, p.chunk, p.page, p.line, title, p.heading, p.text) for p in items],
            )
        return len(items)

    def touch_document(self, path: str, *, size: int, mtime_ns: int) -> None:
        """Same content, new timestamp (a `touch`, a copy): remember the stat, keep the passages."""
        with self.conn:
            self.conn.execute(
                "UPDATE documents SET size = ?, mtime = ?, mtime_ns = ? WHERE path = ?",
                (size, mtime_ns / 1e9, mtime_ns, path),
            )

    def remove_document(self, path: str) -> None:
        with self.conn:
            self._delete(path)

    def record_root(self, root: str) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT INTO roots(path, indexed_at) VALUES (?, ?) "
                "ON CONFLICT(path) DO UPDATE SET indexed_at = excluded.indexed_at",
                (root, time.time()),
            )

    def optimize(self) -> None:
        """Merge the FTS segments after a large change (faster queries, smaller file)."""
        with self.conn:
            self.conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('optimize')")

    def _delete(self, path: str) -> None:
        row = self.conn.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchone()
        if row is None:
            return
        self.conn.execute("DELETE FROM passages WHERE document_id = ?", (row[0],))  # trigger → FTS
        self.conn.execute("DELETE FROM documents WHERE id = ?", (row[0],))


def _connect(target: str, *, uri: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(target, uri=uri, timeout=10.0, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


def _schema_version(conn: sqlite3.Connection) -> str | None:
    """The file's schema version; None for an empty (new) file; DatabaseError for a non-SQLite file."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return None
    if "meta" not in tables:
        return "unknown"
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    return row[0] if row else "unknown"


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


__all__ = [
    "INDEX_FILE",
    "SCHEMA_VERSION",
    "IndexStats",
    "LocalIndex",
    "PassageHit",
    "StoredDocument",
    "index_file",
]
