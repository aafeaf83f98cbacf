"""PostgreSQL behind the same small `Database` interface as SQLite, for replicas that share state.

    database_url: postgresql://zarniwoop@db.internal:5432/zarniwoop?schema=zarniwoop&pool_size=20

Selected by `open_database` for `postgresql://` URLs. Two query parameters are ours: `schema`
puts every table into that schema (created by `migrate()`), `pool_size` caps the connections of
one process (default 10); the others go to asyncpg (server settings such as
`application_name`). SQL is written once with SQLite's `?` placeholders and translated to
`$1, $2, …` here.

`transaction()` has SQLite's IMMEDIATE semantics: it takes a transaction-level advisory lock
(one per schema), so the read-modify-write code written against SQLite (cooldown streaks,
migrations, settings seeding) stays atomic across replicas. Those transactions are short and
rare; the hot shared counters live in Redis when one is configured.

Connection failures (refused, reset, timed out) become `DatabaseUnavailableError` at this one
boundary; SQL errors stay asyncpg's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import hashlib
import logging
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from ..contract.errors import ConfigError, DatabaseUnavailableError
from .db import Row, apply_migrations

log = logging.getLogger(__name__)

_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_UNAVAILABLE = (
    OSError,
    TimeoutError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.InterfaceError,
)


@functools.lru_cache(maxsize=1024)
def translate_placeholders(sql: str) -> str:
    """`?` → `$1, $2, …`, leaving `?` inside quoted literals and identifiers alone."""
    out: list[str] = []
    number = 0
    quote: str | None = None
    for char in sql:
        if quote is not None:
            if char == quote:
                quote = None
        elif char in ("'", '"'):
            quote = char
        elif char == "?":
            number += 1
            out.append(f"${number}")
            continue
        out.append(char)
    return "".join(out)


def _status_count(status: str) -> int:
    """asyncpg's command tag (`DELETE 3`, `INSERT 0 1`) → rows affected; -1 when it has none (DDL)."""
    last = status.rsplit(" ", 1)[-1] if status else ""
    return int(last) if last.isdigit() else -1


def split_url(url: str) -> tuple[str, str | None, int | None]:
    """Take our own `schema` and `pool_size` parameters out of the URL; the rest is asyncpg's DSN."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in query if k in ("schema", "pool_size")}
    schema = ours.get("schema")
    if schema is not None and not _SCHEMA_NAME.match(schema):
        raise ConfigError("database_url", f"schema must be a plain SQL identifier, got {schema!r}")
    pool_size = None
    if "pool_size" in ours:
        if not ours["pool_size"].isdigit() or int(ours["pool_size"]) < 1:
            raise ConfigError(
                "database_url", f"pool_size must be a positive integer, got {ours['pool_size']!r}"
            )
        pool_size = int(ours["pool_size"])
    rest = urlencode([(k, v) for k, v in query if k not in ours])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), schema, pool_size


def _where(url: str) -> str:
    """host:port/db of a URL, for messages (never the password)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    return f"{host}:{parts.port or 5432}{parts.path}"


async def _keep_session(conn: asyncpg.Connection) -> None:
    """What a connection going back to the pool needs reset: nothing. This package changes no session
    state (no SET, LISTEN, cursor or session-level advisory lock: its locks are transactions'), and
    asyncpg rolls back a transaction left open before calling this. asyncpg's default reset query
    was one more network round trip at the end of every statement (issue 42)."""
    del conn


class PostgresDatabase:
    """A pool of asyncpg connections; the same calls as `SQLiteDatabase`."""

    dialect = "postgres"

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 5.0,
        command_timeout: float = 10.0,
    ) -> None:
        self.url, self.schema, pool_size = split_url(url)
        max_size = pool_size or max_size
        self._pool_args: dict[str, Any] = {
            "min_size": min(min_size, max_size),
            "max_size": max_size,
            "timeout": connect_timeout,
            "command_timeout": command_timeout,
            "reset": _keep_session,
        }
        if self.schema:
            self._pool_args["server_settings"] = {"search_path": self.schema}
        self._pool: asyncpg.Pool | None = None
        self._pool_lock = asyncio.Lock()
        self._tx: contextvars.ContextVar[asyncpg.Connection | None] = contextvars.ContextVar(
            f"zarniwoop_pg_tx_{id(self)}", default=None
        )
        digest = hashlib.sha256(f"zarniwoop:{self.schema or 'public'}".encode()).digest()
        self.lock_key = int.from_bytes(digest[:8], "big", signed=True)
        """Advisory lock id of this schema's IMMEDIATE-style transactions (and `zw_reserve_hold`'s)."""

    async def _get_pool(self) -> asyncpg.Pool:
        if self._pool is not None:
            return self._pool
        async with self._pool_lock:
            if self._pool is None:
                try:
                    self._pool = await asyncpg.create_pool(self.url, **self._pool_args)
                except _UNAVAILABLE as exc:
                    raise DatabaseUnavailableError(
                        f"cannot connect to PostgreSQL at {_where(self.url)}: {type(exc).__name__}: {exc}"
                    ) from exc
                except asyncpg.PostgresError as exc:  # no such database, role or password
                    raise ConfigError(
                        "database_url",
                        f"PostgreSQL at {_where(self.url)} refused: {type(exc).__name__}: {exc}",
                    ) from exc
        return self._pool

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.Connection]:
        """The transaction's connection when inside one, else one from the pool."""
        conn = self._tx.get()
        if conn is not None:
            yield conn
            return
        pool = await self._get_pool()
        try:
            async with pool.acquire() as acquired:
                yield acquired
        except _UNAVAILABLE as exc:
            raise DatabaseUnavailableError(
                f"PostgreSQL at {_where(self.url)} unreachable: {type(exc).__name__}"
            ) from exc

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        async with self._connection() as conn:
            return _status_count(await conn.execute(translate_placeholders(sql), *params))

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Atomic: all rows or none (asyncpg ≥ 0.22)."""
        batch = [tuple(r) for r in rows]
        if not batch:
            return
        async with self._connection() as conn:
            await conn.executemany(translate_placeholders(sql), batch)

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        async with self._connection() as conn:
            record = await conn.fetchrow(translate_placeholders(sql), *params)
            return tuple(record) if record is not None else None

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        async with self._connection() as conn:
            return [tuple(r) for r in await conn.fetch(translate_placeholders(sql), *params)]

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresDatabase]:
        """One transaction, serialised with every other `transaction()` on this schema (SQLite's
        BEGIN IMMEDIATE); calls made on this object inside it, in this task, join it."""
        if self._tx.get() is not None:  # nested: join the outer transaction
            yield self
            return
        async with self._connection() as conn:
            try:
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock($1)", self.lock_key)
                    token = self._tx.set(conn)
                    try:
                        yield self
                    finally:
                        self._tx.reset(token)
            except _UNAVAILABLE as exc:
                raise DatabaseUnavailableError(
                    f"PostgreSQL at {_where(self.url)} unreachable: {type(exc).__name__}"
                ) from exc

    @contextlib.asynccontextmanager
    async def write_batch(self) -> AsyncIterator[PostgresDatabase]:
        """Each write on its own: a statement that fails inside a PostgreSQL transaction aborts the
        whole of it, so one refused write (a usage record) would undo the others (the charge)."""
        yield self

    async def migrate(self) -> int:
        """Create the schema if asked for one, then apply the migrations — under the
        advisory lock, so replicas starting together migrate once."""
        try:
            async with self.transaction():
                if self.schema:
                    await self.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                return await apply_migrations(self)
        except DatabaseUnavailableError as exc:  # at start-up, a wrong URL is the likely cause: exit 2
            raise ConfigError("database_url", exc.message) from exc

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            await asyncio.wait_for(pool.close(), timeout=5.0)
        except (TimeoutError, *_UNAVAILABLE):
            pool.terminate()
