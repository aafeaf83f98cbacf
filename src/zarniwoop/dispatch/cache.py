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
import time
from collections.abc import Awaitable, Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

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


class MemoryResultCache:
    """An LRU with per-entry expiry; the embedded default (Redis shares one across replicas)."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._entries: collections.OrderedDict[Hashable, tuple[float, SearchResult]] = (
            collections.OrderedDict()
        )
        self.max_entries = max_entries

    async def get(self, key: Hashable) -> SearchResult | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if expires < time.monotonic():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    async def set(self, key: Hashable, value: SearchResult, ttl: float) -> None:
        self._entries[key] = (time.monotonic() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    async def clear(self) -> None:
        self._entries.clear()


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
