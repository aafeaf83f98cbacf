"""The database behind settings, cooldowns, audit and the rest: SQLite (WAL) by default.

The interface is async and small (`execute`, `fetchone`, `fetchall`, `transaction`) with `?`
placeholders, so a PostgreSQL implementation can stand behind the same calls. SQLite calls
are sub-millisecond in WAL mode, so they run inline rather than on a thread pool; waiting for
another process's write lock is done with `asyncio.sleep`, never inside SQLite (see
`SQLiteDatabase`).

Migrations are numbered SQL files, `migrations/NNNN_name.sql` written once for both dialects
(storage/schema.py), applied once each, in order, recorded in `schema_version`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..contract.errors import ConfigError
from .private import create_private, private_dir
from .schema import migration_scripts

log = logging.getLogger(__name__)

Row = tuple[Any, ...]
_T = TypeVar("_T")

BUSY_WAIT_SECONDS = 10.0
"""How long a statement waits for another process's write lock before `database is locked`."""
_FIRST_BACKOFF = 0.001
_MAX_BACKOFF = 0.02


class Database(Protocol):
    dialect: str

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def transaction(self) -> contextlib.AbstractAsyncContextManager[Database]: ...

    def write_batch(self) -> contextlib.AbstractAsyncContextManager[Database]:
        """Writes that belong together (a call's charge and its usage record), committed at once
        where a statement that fails inside a transaction is undone alone; elsewhere each on its
        own, so one refused write never takes the others with it."""
        ...

    async def migrate(self) -> int: ...

    async def aclose(self) -> None: ...


def _is_busy(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY or one of its extended codes: another connection holds the lock."""
    return isinstance(exc, sqlite3.OperationalError) and exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY


class SQLiteDatabase:
    """One SQLite file in WAL mode, shared safely by every CLI process and server replica on a host.

    One connection serves every task of the event loop, so a transaction belongs to the task that
    opened it (a context variable, as in `PostgresDatabase`): its calls, and those of tasks it
    starts, join it; any other task waits until it ends (`transaction()` behind an `asyncio.Lock`,
    single statements until no transaction is open) instead of writing into it.

    Waiting for another process's write lock never blocks the event loop: SQLite's own busy
    handler is off (`busy_timeout=0`), and a busy statement is retried after `asyncio.sleep`
    (1 ms, doubling to 20 ms) for up to `busy_wait` seconds, then raises `database is locked` as
    SQLite's 10 s timeout did.
    """

    dialect = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        busy_wait: float = BUSY_WAIT_SECONDS,
        first_pragmas: Sequence[str] = (),
        synchronous: str = "NORMAL",
    ) -> None:
        """`first_pragmas` run before WAL is switched on: those a file takes only while it is new
        (`auto_vacuum=INCREMENTAL`, the result cache's file); `synchronous="OFF"` for a file whose
        loss costs nothing (the cache: no fsync per checkpoint)."""
        self.path = str(path)
        self.busy_wait = busy_wait
        if self.path != ":memory:":
            private_dir(Path(self.path).parent)
            create_private(self.path)  # before SQLite does, which would make it (and its WAL) 0644
        self._conn = self._connect(first_pragmas)
        self._conn.execute(f"PRAGMA synchronous={synchronous}")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA busy_timeout=0")
        self._open: _Transaction | None = None
        """The transaction open on the connection, if any."""
        self._owner: contextvars.ContextVar[_Transaction | None] = contextvars.ContextVar(
            f"zarniwoop_sqlite_tx_{id(self)}", default=None
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tx_lock = asyncio.Lock()
        self._idle = asyncio.Event()
        self._idle.set()

    def _connect(self, first_pragmas: Sequence[str]) -> sqlite3.Connection:
        """Open the file and switch it to WAL. Opening is synchronous anyway, so SQLite may wait for
        the lock itself; but a new file's switch to WAL while another process creates the same file
        (three CLI processes started at once on a fresh home) can be refused at once, without the
        busy handler (SQLite's deadlock avoidance), so a busy open is retried until `busy_wait`."""
        deadline = time.monotonic() + self.busy_wait
        delay = 0.005
        while True:
            conn: sqlite3.Connection | None = None
            try:
                conn = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_WAIT_SECONDS
                )
                for pragma in first_pragmas:
                    conn.execute(f"PRAGMA {pragma}")
                conn.execute("PRAGMA journal_mode=WAL")
                return conn
            except sqlite3.Error as exc:
                if conn is not None:
                    conn.close()
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise ConfigError(
                        "database_url", f"cannot open SQLite database {self.path}: {exc}"
                    ) from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return await self._run(lambda: self._conn.execute(sql, tuple(params)).rowcount)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """All rows or none (one transaction, as asyncpg's `executemany`), and one commit for the batch."""
        batch = [tuple(r) for r in rows]
        if self._in_own_transaction():
            self._conn.executemany(sql, batch)
            return
        await self._run(lambda: self._conn.execute("BEGIN IMMEDIATE"))
        try:  # no await from BEGIN to COMMIT: no other task can slip a statement in
            self._conn.executemany(sql, batch)
        except BaseException:
            self._rollback()
            raise
        self._conn.execute("COMMIT")

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        def one() -> Row | None:
            row = self._conn.execute(sql, tuple(params)).fetchone()
            return tuple(row) if row is not None else None

        return await self._run(one)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return await self._run(lambda: [tuple(r) for r in self._conn.execute(sql, tuple(params)).fetchall()])

    async def executescript(self, script: str) -> None:
        """Statements run to completion, outside any transaction (`PRAGMA incremental_vacuum`, which
        a single step would leave one page into its work)."""
        await self._run(lambda: self._conn.executescript(script))

    def transaction(self) -> contextlib.AbstractAsyncContextManager[SQLiteDatabase]:
        """An IMMEDIATE transaction: takes the write lock up front so read-modify-write is atomic
        across processes too. Nested in the same task, it joins the outer one."""
        return _SQLiteTransaction(self)

    def write_batch(self) -> contextlib.AbstractAsyncContextManager[SQLiteDatabase]:
        """One transaction: SQLite undoes just a failed statement and keeps the rest, so the batch
        costs one commit (one fsync of the WAL) instead of one per write."""
        return self.transaction()

    async def migrate(self) -> int:
        return await apply_migrations(self)

    async def aclose(self) -> None:
        self._conn.close()

    def _in_own_transaction(self) -> bool:
        return self._open is not None and self._owner.get() is self._open

    async def _run(self, statement: Callable[[], _T]) -> _T:
        """Run `statement` on the connection now, unless another task's transaction holds it
        (then wait for that to end) or another process holds the write lock (then retry)."""
        if self._in_own_transaction():  # the write lock is ours: never busy
            return statement()
        delay = _FIRST_BACKOFF
        deadline: float | None = None
        while True:
            while self._open is not None:  # another task's transaction: not ours to write into
                await self._idle.wait()
            try:
                return statement()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                now = time.monotonic()
                deadline = deadline if deadline is not None else now + self.busy_wait
                if now >= deadline:
                    raise
                await asyncio.sleep(min(delay, deadline - now))
                delay = min(delay * 2, _MAX_BACKOFF)

    def _rollback(self) -> None:
        """Roll back what is open (SQLite has already rolled back after some errors)."""
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _bind_loop(self) -> None:
        """Fresh asyncio primitives for a new event loop (a CLI may run several, one after another)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop and self._open is None and not self._tx_lock.locked():
            self._loop = loop
            self._tx_lock = asyncio.Lock()
            self._idle = asyncio.Event()
            self._idle.set()


class _Transaction:
    """Identity of one open transaction: tasks whose context holds it are inside it."""

    __slots__ = ()


class _SQLiteTransaction:
    """`SQLiteDatabase.transaction()`: a class, not a generator-based context manager, because two
    of them open on every LLM call (the reservation, the charges' write batch)."""

    __slots__ = ("_db", "_joined", "_token")

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db
        self._joined = False
        self._token: contextvars.Token[_Transaction | None] | None = None

    async def __aenter__(self) -> SQLiteDatabase:
        db = self._db
        if db._in_own_transaction():
            self._joined = True
            return db
        db._bind_loop()
        await db._tx_lock.acquire()
        try:
            await db._run(lambda: db._conn.execute("BEGIN IMMEDIATE"))
        except BaseException:
            db._tx_lock.release()
            raise
        tx = db._open = _Transaction()
        db._idle.clear()
        self._token = db._owner.set(tx)
        return db

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if self._joined:
            return
        db = self._db
        try:
            if exc_type is not None:
                db._rollback()
            else:
                try:
                    db._conn.execute("COMMIT")
                except BaseException:
                    db._rollback()
                    raise
        finally:
            assert self._token is not None
            db._owner.reset(self._token)
            db._open = None
            db._idle.set()
            db._tx_lock.release()


@functools.cache
def value_rows(count: int, width: int) -> str:
    """`(?, ?), (?, ?)`: the VALUES of a multi-row statement, `count` rows of `width` columns."""
    return ", ".join(["(" + ", ".join("?" * width) + ")"] * count)


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


_BODY = re.compile(r"\$\$.*?\$\$|\bBEGIN\b.*?\bEND\b(?=;)", re.DOTALL)
"""A function body (`$$ … $$`) or a trigger body (`BEGIN … END;`): its semicolons end no statement."""


def _split_sql(script: str) -> list[str]:
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    text = _BODY.sub(lambda m: m.group(0).replace(";", "\0"), "\n".join(lines))
    statements = [s.strip().replace("\0", ";") for s in text.split(";") if s.strip()]
    return [s + ";" if _BODY.search(s + ";") and s.endswith("END") else s for s in statements]


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
