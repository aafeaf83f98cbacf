"""The database behind settings, cooldowns, audit and the rest: SQLite (WAL) by default.

The interface is async and small (`execute`, `fetchone`, `fetchall`, `transaction`) with `?`
placeholders, so a PostgreSQL implementation can stand behind the same calls. SQLite calls
are sub-millisecond in WAL mode, so they run inline rather than on a thread pool.

Migrations are numbered SQL files in `migrations/<dialect>/NNNN_name.sql`, applied once each,
in order, recorded in `schema_version`.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from ..contract.errors import ConfigError

log = logging.getLogger(__name__)

Row = tuple[Any, ...]


class Database(Protocol):
    dialect: str

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def transaction(self) -> contextlib.AbstractAsyncContextManager[Database]: ...

    async def migrate(self) -> int: ...

    async def aclose(self) -> None: ...


class SQLiteDatabase:
    """One SQLite file in WAL mode, shared safely by every CLI process and server replica on a host."""

    dialect = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=10.0
            )
        except sqlite3.Error as exc:
            raise ConfigError("database_url", f"cannot open SQLite database {self.path}: {exc}") from exc
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._lock = threading.RLock()
        self._in_tx = False

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self._lock:
            return self._conn.execute(sql, tuple(params)).rowcount

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """All rows or none (one transaction, as asyncpg's `executemany`), and one commit for the batch."""
        with self._lock:
            batch = [tuple(r) for r in rows]
            if self._in_tx:
                self._conn.executemany(sql, batch)
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(sql, batch)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        with self._lock:
            row = self._conn.execute(sql, tuple(params)).fetchone()
            return tuple(row) if row is not None else None

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._lock:
            return [tuple(r) for r in self._conn.execute(sql, tuple(params)).fetchall()]

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[SQLiteDatabase]:
        """An IMMEDIATE transaction: takes the write lock up front so read-modify-write is atomic
        across processes too."""
        with self._lock:
            if self._in_tx:  # nested: join the outer transaction
                yield self
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._in_tx = True
            try:
                yield self
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._in_tx = False

    async def migrate(self) -> int:
        return await apply_migrations(self)

    async def aclose(self) -> None:
        with self._lock:
            self._conn.close()


def migration_scripts(dialect: str) -> list[tuple[int, str, str]]:
    """`(version, name, sql)` for each bundled migration of a dialect, in order."""
    folder = resources.files("zarniwoop.storage") / "migrations" / dialect
    scripts = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            scripts.append((int(name[:4]), name, entry.read_text(encoding="utf-8")))
    return sorted(scripts)


async def apply_migrations(db: Database) -> int:
    """Apply every migration not yet recorded; returns the schema version reached."""
    await db.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    async with db.transaction():
        done = {row[0] for row in await db.fetchall("SELECT version FROM schema_version")}
        version = max(done, default=0)
        for number, name, sql in migration_scripts(db.dialect):
            if number in done:
                continue
            for statement in _split_sql(sql):
                await db.execute(statement)
            await db.execute(
                "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, CURRENT_TIMESTAMP)",
                (number, name),
            )
            log.info("applied migration %s", name)
            version = number
    return version


def _split_sql(script: str) -> list[str]:
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def open_database(url: str | None, home: Path) -> Database:
    """`sqlite:///path` (relative to the working directory), `sqlite:////abs/path`, or None for the default."""
    if not url:
        return SQLiteDatabase(home / "zarniwoop.db")
    if url.startswith("sqlite:///"):
        return SQLiteDatabase(url.removeprefix("sqlite:///") or ":memory:")
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from .postgres import PostgresDatabase
        except ImportError as exc:
            raise ConfigError(
                "database_url", "PostgreSQL needs the 'scale' extra: pip install 'zarniwoop[scale]'"
            ) from exc
        return PostgresDatabase(url)
    raise ConfigError(
        "database_url", f"expected sqlite:///PATH or postgresql://…, got {url.split(':', 1)[0]}:…"
    )
