"""Result cache and request coalescing.

The cache stores finished `SearchResult`s for `research.cache.ttlSeconds` (per modality
overridable); a hit costs no quota and says `"cached": true`. Coalescing lets identical
concurrent requests share one upstream call: the first starts it, the rest await its future.

`bypassing_cache()` makes every search started inside it (a rich fan-out, an investigation's
planned searches) skip the cached answer and ask the providers — the CLI's `--no-cache`, HTTP's
`"cache": false` / `Cache-Control: no-cache`, the web UI's refresh.
"""

from __future__ import annotations

import asyncio
import collections
import json
import time
from collections.abc import Awaitable, Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from ..observability.metrics import CACHE_BYTES, CACHE_EVICTIONS, CACHE_LOOKUPS

if TYPE_CHECKING:
    from ..contract.results import SearchResult

T = TypeVar("T")

_BYPASS: ContextVar[bool] = ContextVar("zarniwoop_cache_bypass", default=False)


@contextmanager
def bypassing_cache(active: bool = True) -> Iterator[None]:
    """Within this block (and the tasks it starts), searches skip cached answers."""
    token = _BYPASS.set(active or _BYPASS.get())
    try:
        yield
    finally:
        _BYPASS.reset(token)


def cache_bypassed() -> bool:
    return _BYPASS.get()


class ResultCache(Protocol):
    async def get(self, key: Hashable) -> SearchResult | None: ...

    async def set(self, key: Hashable, value: SearchResult, ttl: float) -> None: ...

    async def clear(self) -> None: ...


DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""`research.cache.maxBytes`: the embedded cache's bound, measured on what it stores."""
MAX_ENTRY_BYTES = 2 * 1024 * 1024
"""A result larger than this is not cached at all (it would push out dozens of others)."""


class MemoryResultCache:
    """An LRU bounded by bytes, with per-entry expiry; the embedded default (Redis shares one
    across replicas). Entries are stored as their compact JSON, so a result costs what its JSON
    weighs — not the several times more of live Python objects — and that is what is counted."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, *, max_entry_bytes: int = MAX_ENTRY_BYTES) -> None:
        self._entries: collections.OrderedDict[Hashable, tuple[float, bytes]] = collections.OrderedDict()
        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_entry_bytes, max_bytes)
        self.bytes = 0

    async def get(self, key: Hashable) -> SearchResult | None:
        entry = self._entries.get(key)
        if entry is None:
            CACHE_LOOKUPS.labels("miss").inc()
            return None
        expires, body = entry
        if expires < time.monotonic():
            self._drop(key, "expired")
            CACHE_LOOKUPS.labels("miss").inc()
            return None
        self._entries.move_to_end(key)
        CACHE_LOOKUPS.labels("hit").inc()
        return decode_result(body)

    async def set(self, key: Hashable, value: SearchResult, ttl: float) -> None:
        body = encode_result(value)
        if len(body) > self.max_entry_bytes:
            return
        if key in self._entries:
            self._drop(key, None)
        self._entries[key] = (time.monotonic() + ttl, body)
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


def encode_result(result: SearchResult) -> bytes:
    """A result as the cache keeps it: compact JSON without the caller's query (the key has it)."""
    return json.dumps(result.with_(query="", cached=False).to_json(), separators=(",", ":")).encode()


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
