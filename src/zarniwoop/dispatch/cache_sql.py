"""The embedded default's shared result cache: one SQLite file, `ZARNIWOOP_HOME/cache.db` (WAL),
read and written by every process of the deployment on the host — each CLI call, each worker of
`serve --workers N` — under each process's in-memory LRU (`cache.TieredResultCache`).

    cache = SQLiteResultCache(home / "cache.db", max_bytes=64 * 1024 * 1024, clock=clock)
    await cache.set(key, result, ttl=600)
    await cache.lookup(key)          # (result, seconds left) or None

- **Its own file**, not the settings database: its writes never queue behind the audit's, and
  deleting it loses nothing but cached answers. Its own schema (`SCHEMA`), created on first use.
  `synchronous=OFF` (no fsync per checkpoint: 6× cheaper writes here): a process crash loses
  nothing, a power loss may lose the file, which is then started afresh.
- **Keys** are `cache.cache_digest(key)` (SHA-256); bodies are the results' compact JSON without
  the caller's query. Expiry is wall-clock epoch seconds, so every process agrees on it.
- **Bounded on disk by `research.cache.maxBytes`**: the file is created with
  `auto_vacuum=INCREMENTAL`; after a write that leaves the database's pages over `MAIN_SHARE` of
  the bound, expired entries go and then the least recently used (`used` is renewed on every hit)
  until the pages are under `LOW_WATER` of it, and the freed pages are returned to the file system.
  The WAL is checkpointed every `WAL_SHARE` of the bound and truncated back to it
  (`journal_size_limit`), so file + WAL stay within the bound plus a few pages (a reader holding an
  old snapshot can delay a checkpoint; the next one catches up).

- **One flight per request across processes** (`dispatch/flights.py`): its leases and results are
  rows of the same file's `flights` table (`SQLiteFlights`); finished and expired rows are swept
  every `SWEEP_EVERY` flights. A runtime's process is a row of `flight_members` while it runs: a
  process with no other member on the file has nobody to share a call with and takes no lease.

A failing file (disk full, locked past `BUSY_WAIT`) is a cache miss and a logged outage, never a
failed search.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING

from ..contract.errors import ConfigError
from ..limits.clock import Clock
from ..observability.metrics import CACHE_BYTES, CACHE_EVICTIONS
from ..observability.outage import OutageLog
from ..storage.db import SQLiteDatabase
from .cache import MAX_ENTRY_BYTES, cache_digest, decode_result, encode_result

if TYPE_CHECKING:
    from ..contract.results import SearchResult

log = logging.getLogger(__name__)

CACHE_FILE = "cache.db"
"""The file's name under `ZARNIWOOP_HOME`."""
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries (key BLOB PRIMARY KEY, body BLOB NOT NULL, "
    "expires REAL NOT NULL, used REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS entries_used ON entries (used)",
    "CREATE INDEX IF NOT EXISTS entries_expires ON entries (expires)",
    "CREATE TABLE IF NOT EXISTS flights (key BLOB PRIMARY KEY, owner TEXT NOT NULL, "
    "expires REAL NOT NULL, result BLOB, finished REAL, waiters INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS flights_expires ON flights (expires)",
    "CREATE TABLE IF NOT EXISTS flight_members (member TEXT PRIMARY KEY, pid INTEGER NOT NULL)",
)
MAIN_SHARE = 0.85
"""The database's pages may take this share of `maxBytes` before eviction starts."""
LOW_WATER = 0.7
"""Eviction frees pages down to this share, so it runs once per many writes, not on each."""
WAL_SHARE = 0.05
"""The WAL's share of the bound: checkpointed when it is this large, truncated back to it."""
MIN_WAL_BYTES = 64 * 1024
BUSY_WAIT = 2.0
"""How long a cache statement waits for another process's write lock; then it is a miss."""
EVICT_BATCH = 500
"""Least recently used entries read per eviction step."""
SWEEP_EVERY = 64
"""Flights finished between two sweeps of the `flights` table."""


class SQLiteResultCache:
    """The `SharedResultCache` of the embedded default (see the module docstring)."""

    def __init__(
        self, path: str | Path, *, max_bytes: int, clock: Clock | None = None, busy_wait: float = BUSY_WAIT
    ) -> None:
        self.path = Path(path)
        self.busy_wait = busy_wait
        self.db = self._open()
        self.max_bytes = max(0, max_bytes)
        self.max_entry_bytes = min(MAX_ENTRY_BYTES, self.max_bytes)
        self.clock = clock or Clock()
        """Times the entries' TTLs and last use (wall time: every process on the host shares the file)."""
        self.outage = OutageLog(log, "shared result cache file")
        self._ready = False
        self._page_size = 4096

    def _open(self) -> SQLiteDatabase:
        try:
            return self._connect()
        except ConfigError as exc:  # not a database any more: the file is only a cache
            log.warning("the shared result cache file was unreadable (%s): starting it afresh", exc.message)
            self._remove()
            return self._connect()

    def _connect(self) -> SQLiteDatabase:
        return SQLiteDatabase(
            self.path, busy_wait=self.busy_wait, first_pragmas=("auto_vacuum=INCREMENTAL",), synchronous="OFF"
        )

    def _remove(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    async def ready(self) -> SQLiteDatabase:
        """The database with its schema and pragmas (once per process). A file that is not a
        database any more (a power loss under `synchronous=OFF`) is deleted and started afresh."""
        if not self._ready:
            try:
                await self._create()
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError):
                    raise
                log.warning("the shared result cache file was unreadable (%s): starting it afresh", exc)
                await self.db.aclose()
                self._remove()
                self.db = self._connect()
                await self._create()
            self._ready = True
        return self.db

    async def _create(self) -> None:
        columns = {str(row[1]) for row in await self.db.fetchall("PRAGMA table_info(flights)")}
        if columns and "waiters" not in columns:  # an older file's leases: transient, dropped
            await self.db.execute("DROP TABLE flights")
        for statement in SCHEMA:
            await self.db.execute(statement)
        row = await self.db.fetchone("PRAGMA page_size")
        self._page_size = int(row[0]) if row else 4096
        wal_bytes = max(MIN_WAL_BYTES, int(self.max_bytes * WAL_SHARE))
        await self.db.execute(f"PRAGMA wal_autocheckpoint={max(8, wal_bytes // self._page_size)}")
        await self.db.execute(f"PRAGMA journal_size_limit={wal_bytes}")

    async def get(self, key: Hashable) -> SearchResult | None:
        found = await self.lookup(key)
        return found[0] if found is not None else None

    async def lookup(self, key: Hashable) -> tuple[SearchResult, float] | None:
        digest, now = cache_digest(key), self.clock.now()
        try:
            db = await self.ready()
            row = await db.fetchone("SELECT body, expires FROM entries WHERE key = ?", (digest,))
            if row is None:
                return None
            body, expires = row
            if expires <= now:
                await db.execute("DELETE FROM entries WHERE key = ? AND expires <= ?", (digest, now))
                CACHE_EVICTIONS.labels("expired").inc()
                return None
            await db.execute("UPDATE entries SET used = ? WHERE key = ?", (now, digest))
        except sqlite3.Error as exc:
            self.outage.failed(exc, "searches miss the shared cache")
            return None
        self.outage.recovered()
        try:
            return decode_result(body), expires - now
        except (ValueError, KeyError, TypeError):
            log.warning("dropping an unreadable cache entry")
            return None

    async def set(self, key: Hashable, value: SearchResult, ttl: float) -> None:
        body = encode_result(value)
        if len(body) > self.max_entry_bytes or ttl <= 0:
            return
        now = self.clock.now()
        try:
            db = await self.ready()
            await db.execute(
                "INSERT INTO entries (key, body, expires, used) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET body = excluded.body, expires = excluded.expires, "
                "used = excluded.used",
                (cache_digest(key), body, now + ttl, now),
            )
            await self._bound(db, now)
        except sqlite3.Error as exc:
            self.outage.failed(exc, "searches miss the shared cache")

    async def clear(self) -> None:
        db = await self.ready()
        await db.execute("DELETE FROM entries")
        await _vacuum(db)
        CACHE_BYTES.set(0)

    async def disk_bytes(self) -> int:
        """What the database's pages take (the file once checkpointed)."""
        db = await self.ready()
        row = await db.fetchone("PRAGMA page_count")
        return int(row[0] if row else 0) * self._page_size

    async def _bound(self, db: SQLiteDatabase, now: float) -> None:
        used = await self.disk_bytes()
        CACHE_BYTES.set(used)
        if used <= self.max_bytes * MAIN_SHARE:
            return
        expired = await db.execute("DELETE FROM entries WHERE expires <= ?", (now,))
        if expired:
            CACHE_EVICTIONS.labels("expired").inc(expired)
        await _vacuum(db)
        target = self.max_bytes * LOW_WATER
        while (used := await self.disk_bytes()) > target:
            excess = used - target
            rows = await db.fetchall(
                "SELECT key, length(body) FROM entries ORDER BY used LIMIT ?", (EVICT_BATCH,)
            )
            if not rows:
                break
            victims, freed = [], 0
            for digest, size in rows:
                victims.append((digest,))
                freed += int(size)
                if freed >= excess:
                    break
            await db.executemany("DELETE FROM entries WHERE key = ?", victims)
            CACHE_EVICTIONS.labels("size").inc(len(victims))
            await _vacuum(db)
        CACHE_BYTES.set(used)

    async def aclose(self) -> None:
        await self.db.aclose()


class SQLiteFlights:
    """The `flights.FlightStore` of the embedded default, in the shared cache's file: one row per
    request key, `(owner, expires, result, finished, waiters)`; a row is free to claim once its
    lease has expired, or its flight finished before the claimer's search began. A claimer that
    finds a live lease counts itself in `waiters`, so a leader nobody waits for gives its lease up
    without writing its result (the common case: one statement, nothing encoded)."""

    def __init__(self, cache: SQLiteResultCache) -> None:
        self.cache = cache
        self._finished = 0
        self._member: str | None = None
        """This store's row in `flight_members` once it joined; a store that never joined (or failed
        to) counts as shared, always: it leases as before membership existed."""
        self._version: object = None
        self._others = True

    async def join(self) -> None:
        """Become a member; rows of processes that died without leaving go (pids of this host: the
        file is never shared across hosts)."""
        db = await self.cache.ready()
        member = f"{os.getpid()}:{secrets.token_hex(4)}"
        await db.execute("INSERT INTO flight_members (member, pid) VALUES (?, ?)", (member, os.getpid()))
        for other, pid in await db.fetchall(
            "SELECT member, pid FROM flight_members WHERE member != ?", (member,)
        ):
            if not _alive(int(pid)):
                await db.execute("DELETE FROM flight_members WHERE member = ?", (other,))
        self._member, self._version = member, None

    async def leave(self) -> None:
        if self._member is not None:
            member, self._member = self._member, None
            db = await self.cache.ready()
            await db.execute("DELETE FROM flight_members WHERE member = ?", (member,))

    async def shared(self) -> bool:
        """Whether another member is on the file. Re-read only when another connection committed
        to the file since the last read (`PRAGMA data_version`): alone, nobody else commits, so
        the answer costs one pragma — not the claim and release two writes a lease costs."""
        if self._member is None:
            return True
        db = await self.cache.ready()
        version = await db.fetchone("PRAGMA data_version")
        if version != self._version:  # read the version first: a commit after it is seen next time
            self._version = version
            others = await db.fetchone(
                "SELECT 1 FROM flight_members WHERE member != ? LIMIT 1", (self._member,)
            )
            self._others = others is not None
        return self._others

    async def claim(self, key: bytes, owner: str, now: float, lease: float, since: float) -> str | None:
        db = await self.cache.ready()
        # One statement takes the lease or counts the caller as a waiter of its holder, and names
        # the holder either way (?1 key, ?2 owner, ?3 expires, ?4 now, ?5 since).
        free = "(flights.result IS NULL AND flights.expires <= ?4) OR flights.finished < ?5"
        rows = await db.fetchall(
            "INSERT INTO flights (key, owner, expires, result, finished, waiters) "
            "VALUES (?1, ?2, ?3, NULL, NULL, 0) ON CONFLICT (key) DO UPDATE SET "
            f"owner = CASE WHEN {free} THEN excluded.owner ELSE flights.owner END, "
            f"expires = CASE WHEN {free} THEN excluded.expires ELSE flights.expires END, "
            f"result = CASE WHEN {free} THEN NULL ELSE flights.result END, "
            f"finished = CASE WHEN {free} THEN NULL ELSE flights.finished END, "
            # a dead leader's lease taken over keeps its waiters: they wait for this leader now
            f"waiters = CASE WHEN {free} THEN (CASE WHEN flights.result IS NULL THEN flights.waiters ELSE 0 END) "
            "ELSE flights.waiters + 1 END "
            "RETURNING owner",
            (key, owner, now + lease, now, since),
        )
        return str(rows[0][0]) if rows else None

    async def renew(self, key: bytes, owner: str, now: float, lease: float) -> bool:
        db = await self.cache.ready()
        renewed = await db.execute(
            "UPDATE flights SET expires = ? WHERE key = ? AND owner = ? AND result IS NULL",
            (now + lease, key, owner),
        )
        return bool(renewed)

    async def finish(
        self, key: bytes, owner: str, body: Callable[[], bytes] | None, now: float, keep: float
    ) -> None:
        db = await self.cache.ready()
        gone = await db.execute(
            "DELETE FROM flights WHERE key = ? AND owner = ? AND (waiters = 0 OR ?)",
            (key, owner, body is None),
        )
        if not gone and body is not None:
            await db.execute(
                "UPDATE flights SET result = ?, expires = ?, finished = ? WHERE key = ? AND owner = ?",
                (body(), now + keep, now, key, owner),
            )
        self._finished += 1
        if self._finished % SWEEP_EVERY == 0:
            await db.execute("DELETE FROM flights WHERE expires <= ?", (now,))

    async def watch(self, key: bytes, holder: str, now: float) -> tuple[str | None, bytes | None]:
        db = await self.cache.ready()
        row = await db.fetchone("SELECT owner, expires, result FROM flights WHERE key = ?", (key,))
        if row is None:
            return None, None
        owner, expires, result = row
        if result is not None:
            return None, (bytes(result) if owner == holder else None)
        return (str(owner) if expires > now else None), None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


async def _vacuum(db: SQLiteDatabase) -> None:
    """Give the free pages back to the file system."""
    await db.executescript("PRAGMA incremental_vacuum")
