"""Result cache and request coalescing.

The cache stores finished `SearchResult`s for `research.cache.ttlSeconds` (per modality
overridable); a hit costs no quota and says `"cached": true`. Coalescing lets identical
concurrent requests share one upstream call: the first starts it, the rest await its future.

Every process of a deployment shares one cache: on the embedded default an in-memory LRU over a
SQLite file under `ZARNIWOOP_HOME` (`TieredResultCache` over `cache_sql.SQLiteResultCache`), with
Redis `cache_redis.RedisResultCache`; both bounded by `research.cache.maxBytes` with LRU eviction.
Shared entries are keyed by `cache_digest` (SHA-256; the query in the key is already the audit's
`queryHash`), never by the query text, and store the result without the caller's query.

A caller that wants fresh answers — the CLI's `--no-cache`, HTTP's `"cache": false` /
`Cache-Control: no-cache`, the web UI's refresh — says so with each search it starts
(`Dispatcher.search(cache=False)`; a tool call carries it in `ToolContext.cache` to every search
it starts: a rich fan-out, an investigation's planned searches).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import replace
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from ..limits.clock import Clock
from ..observability.metrics import CACHE_BYTES, CACHE_EVICTIONS, CACHE_LOOKUPS
from ..storage.privacy import redact_query

if TYPE_CHECKING:
    from ..contract.results import SearchResult

T = TypeVar("T")


class ResultCache(Protocol):
    async def get(self, key: Hashable) -> SearchResult | None: ...

    async def set(self, key: Hashable, value: SearchResult, ttl: float) -> None: ...

    async def clear(self) -> None: ...


class SharedResultCache(ResultCache, Protocol):
    """A second level every process reads (SQLite file, Redis): `lookup` also says how long the
    entry has left, so the first level never outlives it."""

    async def lookup(self, key: Hashable) -> tuple[SearchResult, float] | None: ...


def cache_digest(key: Hashable) -> bytes:
    """The shared stores' key for a request key: SHA-256 of its `repr` (stable across processes;
    the dispatcher's keys hold the query only as its SHA-256)."""
    return hashlib.sha256(repr(key).encode()).digest()


DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""`research.cache.maxBytes`: the embedded cache's bound, measured on what it stores."""
MAX_ENTRY_BYTES = 2 * 1024 * 1024
"""A result larger than this is not cached at all (it would push out dozens of others)."""


class MemoryResultCache:
    """An LRU bounded by bytes, with per-entry expiry; the embedded default (Redis shares one
    across replicas). Entries are stored as their compact JSON, so a result costs what its JSON
    weighs — not the several times more of live Python objects — and that is what is counted."""

    def __init__(
        self,
        max_bytes: int = DEFAULT_MAX_BYTES,
        *,
        max_entry_bytes: int = MAX_ENTRY_BYTES,
        count_lookups: bool = True,
        clock: Clock | None = None,
    ) -> None:
        self.clock = clock or Clock()
        """Times the entries' TTLs (monotonic: this process's own)."""
        self._entries: collections.OrderedDict[Hashable, tuple[float, bytes]] = collections.OrderedDict()
        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_entry_bytes, max_bytes)
        self.bytes = 0
        self.count_lookups = count_lookups
        """False under `TieredResultCache`, which counts one lookup over both levels."""

    async def get(self, key: Hashable) -> SearchResult | None:
        entry = self._entries.get(key)
        if entry is None:
            self._count("miss")
            return None
        expires, body = entry
        if expires < self.clock.monotonic():
            self._drop(key, "expired")
            self._count("miss")
            return None
        self._entries.move_to_end(key)
        self._count("hit")
        return decode_result(body)

    def _count(self, outcome: str) -> None:
        if self.count_lookups:
            CACHE_LOOKUPS.labels(outcome).inc()

    async def set(self, key: Hashable, value: SearchResult, ttl: float) -> None:
        body = encode_result(value)
        if len(body) > self.max_entry_bytes:
            return
        if key in self._entries:
            self._drop(key, None)
        self._entries[key] = (self.clock.monotonic() + ttl, body)
        self.bytes += len(body)
        while self.bytes > self.max_bytes and self._entries:
            self._drop(next(iter(self._entries)), "size")
        CACHE_BYTES.set(self.bytes)

    async def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0
        CACHE_BYTES.set(0)

    def _drop(self, key: Hashable, reason: str | None) -> None:
        _, body = self._entries.pop(key)
        self.bytes -= len(body)
        if reason:
            CACHE_EVICTIONS.labels(reason).inc()
        CACHE_BYTES.set(self.bytes)


class TieredResultCache:
    """The embedded default: this process's LRU in front of the file every process shares. A
    first-level miss asks the second level and keeps its answer for the time that entry has left;
    writes go to both. The second level failing (disk full, locked too long) is a miss, never a
    failed search."""

    def __init__(self, memory: MemoryResultCache, shared: SharedResultCache) -> None:
        self.memory = memory
        self.shared = shared
        memory.count_lookups = False

    async def get(self, key: Hashable) -> SearchResult | None:
        result = await self.memory.get(key)
        if result is None:
            found = await self.shared.lookup(key)
            if found is not None:
                result, left = found
                await self.memory.set(key, result, left)
        CACHE_LOOKUPS.labels("miss" if result is None else "hit").inc()
        return result

    async def set(self, key: Hashable, value: SearchResult, ttl: float) -> None:
        await self.memory.set(key, value, ttl)
        await self.shared.set(key, value, ttl)

    async def clear(self) -> None:
        await self.memory.clear()
        await self.shared.clear()

    async def aclose(self) -> None:
        closer = getattr(self.shared, "aclose", None)
        if closer is not None:
            await closer()


def encode_result(result: SearchResult) -> bytes:
    """A result as the cache keeps it: compact JSON without the caller's query (the key has it),
    and with the query redacted from the messages a provider may have echoed it in (an attempt's
    error, the summary, the note): what is stored, in a file or in Redis, never holds the query's text."""
    query = result.query
    stored = result.with_(
        query="",
        cached=False,
        error_message=redact_query(result.error_message, query),
        error_summary=redact_query(result.error_summary, query),
        note=redact_query(result.note, query),
        attempts=tuple(
            replace(a, error_message=redact_query(a.error_message, query)) if a.error_message else a
            for a in result.attempts
        ),
    )
    return json.dumps(stored.to_json(), separators=(",", ":")).encode()


def decode_result(body: bytes | str) -> SearchResult:
    from ..contract.results import SearchResult

    return SearchResult.from_json(json.loads(body))


class Coalescer(Generic[T]):
    """Runs one coroutine per key at a time; concurrent callers with the same key share its result.

    Generic in the result type so that a follower gets back exactly what the leader's call returned.
    """

    def __init__(self) -> None:
        self._inflight: dict[Hashable, asyncio.Future[T]] = {}

    async def run(self, key: Hashable, factory: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """Returns `(result, shared)`; `shared` is True for the callers that did not start the call."""
        existing = self._inflight.get(key)
        if existing is not None:
            return await asyncio.shield(existing), True
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            result = await factory()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: there may be no follower to read it
            raise
        else:
            future.set_result(result)
            return result, False
        finally:
            self._inflight.pop(key, None)
