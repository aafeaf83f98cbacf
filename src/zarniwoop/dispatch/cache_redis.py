"""The result cache in Redis, shared by every replica: the `SharedResultCache` of a replica set.

Privacy: keys are SHA-256 digests of the request (`cache.cache_digest`), and cached results are
stored without the query text (the dispatcher puts the caller's query back on a hit). The memory
form is in `cache.py`, the SQLite one in `cache_sql.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable

from redis.exceptions import RedisError

from ..contract.results import SearchResult
from ..limits.clock import Clock
from ..limits.redis_state import RedisState
from ..observability.metrics import CACHE_EVICTIONS, CACHE_LOOKUPS
from ..observability.outage import OutageLog
from .cache import DEFAULT_MAX_BYTES, MAX_ENTRY_BYTES, cache_digest, decode_result, encode_result

log = logging.getLogger(__name__)

_CACHE_SET = """
local old = tonumber(redis.call('HGET', KEYS[3], ARGV[3])) or 0
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[3], ARGV[3], #ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
local total = redis.call('INCRBY', KEYS[4], #ARGV[1] - old)
local max_bytes = tonumber(ARGV[5])
local evicted = 0
while total > max_bytes do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)
  if #oldest == 0 then break end
  local member = oldest[1]
  local size = tonumber(redis.call('HGET', KEYS[3], member)) or 0
  redis.call('DEL', ARGV[6] .. member)
  redis.call('ZREM', KEYS[2], member)
  redis.call('HDEL', KEYS[3], member)
  total = redis.call('DECRBY', KEYS[4], size)
  evicted = evicted + 1
end
return {total, evicted}
"""


class RedisResultCache:
    """The `SharedResultCache` of a replica set, bounded by `research.cache.maxBytes` like the
    embedded one: each entry's size and last use are kept beside it (a hash and a sorted set), and
    the write that takes the total over the bound evicts the least recently used, in one script.
    An entry Redis expired on its own still counts until its turn comes (the bound errs low).
    A Redis failure is a cache miss, never a failed search."""

    def __init__(
        self, state: RedisState, *, max_bytes: int = DEFAULT_MAX_BYTES, clock: Clock | None = None
    ) -> None:
        self.state = state
        self.clock = clock or Clock()
        """Orders the entries for eviction by last use (wall time: every replica's uses compare)."""
        self.max_bytes = max(0, max_bytes)
        self.outage = OutageLog(log, "Redis result cache")
        self._set = state.script(_CACHE_SET)
        self._lru = state.key("cachemeta", "lru")
        self._sizes = state.key("cachemeta", "sizes")
        self._total = state.key("cachemeta", "bytes")

    def _key(self, key: Hashable) -> str:
        return self.state.key("cache", cache_digest(key).hex())

    async def get(self, key: Hashable) -> SearchResult | None:
        found = await self.lookup(key)
        return found[0] if found is not None else None

    async def lookup(self, key: Hashable) -> tuple[SearchResult, float] | None:
        name = self._key(key)
        try:
            async with self.state.client.pipeline(transaction=False) as pipe:
                pipe.get(name)
                pipe.pttl(name)
                pipe.zadd(self._lru, {name.rsplit(":", 1)[1]: self.clock.now()}, xx=True)
                raw, left_ms, _ = await pipe.execute()
        except RedisError as exc:
            self.outage.failed(exc, "searches run uncached")
            return None
        self.outage.recovered()
        CACHE_LOOKUPS.labels("miss" if raw is None else "hit").inc()
        if raw is None:
            return None
        try:
            return decode_result(raw), max(0.001, int(left_ms) / 1000)
        except (ValueError, KeyError, TypeError):
            log.warning("dropping an unreadable cache entry")
            return None

    async def set(self, key: Hashable, value: SearchResult, ttl: float) -> None:
        body = encode_result(value)
        if len(body) > min(MAX_ENTRY_BYTES, self.max_bytes) or ttl <= 0:
            return
        name = self._key(key)
        try:
            _, evicted = await self._set(
                keys=[name, self._lru, self._sizes, self._total],
                args=[
                    body,
                    max(1, int(ttl * 1000)),
                    name.rsplit(":", 1)[1],
                    repr(self.clock.now()),
                    self.max_bytes,
                    self.state.key("cache", ""),
                ],
            )
        except RedisError as exc:
            self.outage.failed(exc, "searches run uncached")
            return
        if evicted:
            CACHE_EVICTIONS.labels("size").inc(int(evicted))

    async def stored_bytes(self) -> int:
        """The bytes the entries take, as the bound counts them."""
        return int(await self.state.client.get(self._total) or 0)

    async def clear(self) -> None:
        pattern = self.state.key("cache", "*")
        keys = [k async for k in self.state.client.scan_iter(match=pattern, count=500)]
        await self.state.client.delete(*keys, self._lru, self._sizes, self._total)
