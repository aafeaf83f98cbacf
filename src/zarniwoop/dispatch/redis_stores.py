"""The dispatcher's stores shared by every replica through Redis: cooldowns, the result cache,
reachability. They live on the deployment's one `limits.RedisState` (client, prefix, scripts);
the pacing and the call budgets in Redis are in `limits/` (`RedisPacer`, `RedisCallBudgets`).

Every update is a single atomic Redis operation — the cooldown renewal is a Lua script
("streak + 1, until = max(existing, now + policy(streak))") — so replicas never race a
read-modify-write. Keys expire on their own; nothing needs sweeping.

Privacy: cache keys are SHA-256 digests of the request (`cache.cache_digest`), and cached results
are stored without the query text (the dispatcher puts the caller's query back on a hit).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from ..contract.results import SearchResult
from ..limits.redis_state import RedisState
from ..observability.metrics import CACHE_EVICTIONS, CACHE_LOOKUPS
from ..observability.outage import OutageLog
from .cache import DEFAULT_MAX_BYTES, MAX_ENTRY_BYTES, cache_digest, decode_result, encode_result
from .cooldown import Cooldown, cooldown_policy
from .reachability import LastOutcome

if TYPE_CHECKING:
    from ..contract.query import SearchScope

log = logging.getLogger(__name__)

STREAK_MEMORY = 86400
"""A cooldown key outlives its cooldown by a day, so a failure soon after still doubles the backoff."""
REACHABILITY_TTL = 7 * 86400


_RECORD_FAILURE = """
local now = tonumber(ARGV[1])
local base = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local current = redis.call('HMGET', KEYS[1], 'until', 'streak')
local streak = (tonumber(current[2]) or 0) + 1
local seconds = math.min(base * 2 ^ (streak - 1), cap)
local until_epoch = math.max(tonumber(current[1]) or 0, now + seconds)
local until_text = string.format('%.6f', until_epoch)
redis.call('HSET', KEYS[1], 'until', until_text, 'streak', streak, 'reason', ARGV[4], 'updated', ARGV[1])
redis.call('EXPIRE', KEYS[1], math.ceil(until_epoch - now) + tonumber(ARGV[5]))
return {until_text, streak}
"""


class RedisCooldownStore:
    """The `CooldownStore` of a replica set: `research:<instance>:<modality>` per project scope."""

    def __init__(self, state: RedisState) -> None:
        self.state = state
        self._record_failure = state.script(_RECORD_FAILURE)

    def _key(self, scope: SearchScope, subject: str) -> str:
        return self.state.key("cooldown", scope.tenant, scope.project, subject)

    async def get_many(self, scope: SearchScope, subjects: list[str]) -> dict[str, Cooldown]:
        if not subjects:
            return {}
        async with self.state.client.pipeline(transaction=False) as pipe:
            for subject in subjects:
                pipe.hmget(self._key(scope, subject), "until", "reason", "streak")
            rows = await pipe.execute()
        out = {}
        for subject, (until, reason, streak) in zip(subjects, rows, strict=True):
            if until is not None:
                out[subject] = Cooldown(subject, float(until), (reason or b"").decode(), int(streak or 0))
        return out

    async def record_failure(
        self, scope: SearchScope, subject: str, error: BaseException, reason: str, now: float
    ) -> Cooldown:
        policy = cooldown_policy(error)
        until, streak = await self._record_failure(
            keys=[self._key(scope, subject)], args=[repr(now), policy.base, policy.cap, reason, STREAK_MEMORY]
        )
        return Cooldown(subject, float(until), reason, int(streak))

    async def record_success(self, scope: SearchScope, subject: str) -> None:
        await self.state.client.delete(self._key(scope, subject))

    async def clear(self, scope: SearchScope) -> None:
        pattern = self.state.key("cooldown", scope.tenant, scope.project, "*")
        keys = [k async for k in self.state.client.scan_iter(match=pattern, count=500)]
        if keys:
            await self.state.client.delete(*keys)


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

    def __init__(self, state: RedisState, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.state = state
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
                pipe.zadd(self._lru, {name.rsplit(":", 1)[1]: time.time()}, xx=True)
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
                    repr(time.time()),
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


_FLIGHT_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_FLIGHT_CLAIM = """
local holder = redis.call('GET', KEYS[1])
if holder then
  redis.call('SET', KEYS[3], holder, 'PX', ARGV[4])
  return holder
end
local done = redis.call('GET', KEYS[2])
if done then
  local at, owner = string.match(done, '^([^|]+)|(.*)$')
  if tonumber(at) >= tonumber(ARGV[3]) then return owner end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[4])
end
return ARGV[1]
"""
_FLIGHT_RELEASE = """
if ARGV[2] == '1' and redis.call('GET', KEYS[2]) == ARGV[1] then return 0 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 1
"""
_FLIGHT_FINISH = """
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('SET', KEYS[3], ARGV[4] .. '|' .. ARGV[1], 'PX', ARGV[3])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
if redis.call('GET', KEYS[4]) == ARGV[1] then
  redis.call('DEL', KEYS[4])
end
return 1
"""
WAITER_MS = 600_000
"""How long a follower's mark on a flight lasts: longer than any search waits; the leader's finish
removes it."""


class RedisFlights:
    """The `flights.FlightStore` of a replica set: the lease is `SET NX PX` on `flight:<digest>`
    (value: its owner), renewed and given up by scripts that first check the owner; a claimer that
    finds it held marks `flightwait:<digest>` with the holder's name, and only then does the
    holder publish its result: `flightresult:<digest>:<owner>`, and `flightdone:<digest>` says
    which flight finished last and when (the replicas' clocks compare it with a claimer's start),
    both expiring on their own. Redis's clock times the leases."""

    def __init__(self, state: RedisState) -> None:
        self.state = state
        self._claim = state.script(_FLIGHT_CLAIM)
        self._renew = state.script(_FLIGHT_RENEW)
        self._release = state.script(_FLIGHT_RELEASE)
        self._finish = state.script(_FLIGHT_FINISH)

    # Replicas on other hosts are not counted: every search takes its lease.
    async def join(self) -> None:
        return None

    async def leave(self) -> None:
        return None

    async def shared(self) -> bool:
        return True

    def _lease(self, key: bytes) -> str:
        return self.state.key("flight", key.hex())

    def _waiter(self, key: bytes) -> str:
        return self.state.key("flightwait", key.hex())

    def _result(self, key: bytes, owner: str) -> str:
        return self.state.key("flightresult", key.hex(), owner)

    async def claim(self, key: bytes, owner: str, now: float, lease: float, since: float) -> str | None:
        holder = await self._claim(
            keys=[self._lease(key), self.state.key("flightdone", key.hex()), self._waiter(key)],
            args=[owner, max(1, int(lease * 1000)), repr(since), WAITER_MS],
        )
        return holder.decode() if isinstance(holder, bytes) else str(holder)

    async def renew(self, key: bytes, owner: str, now: float, lease: float) -> bool:
        return bool(await self._renew(keys=[self._lease(key)], args=[owner, max(1, int(lease * 1000))]))

    async def finish(
        self, key: bytes, owner: str, body: Callable[[], bytes] | None, now: float, keep: float
    ) -> None:
        released = await self._release(
            keys=[self._lease(key), self._waiter(key)], args=[owner, "0" if body is None else "1"]
        )
        if released or body is None:
            return
        await self._finish(
            keys=[
                self._lease(key),
                self._result(key, owner),
                self.state.key("flightdone", key.hex()),
                self._waiter(key),
            ],
            args=[owner, body(), max(1, int(keep * 1000)), repr(now)],
        )

    async def watch(self, key: bytes, holder: str, now: float) -> tuple[str | None, bytes | None]:
        async with self.state.client.pipeline(transaction=False) as pipe:
            pipe.get(self._lease(key))
            pipe.get(self._result(key, holder))
            live, body = await pipe.execute()
        return (live.decode() if isinstance(live, bytes) else live), body


class RedisReachability:
    """Last outcome per (scope, instance), seen by every replica."""

    def __init__(self, state: RedisState) -> None:
        self.state = state

    def _key(self, scope: SearchScope) -> str:
        return self.state.key("reach", scope.tenant, scope.project)

    async def record(self, scope: SearchScope, instance_id: str, outcome: LastOutcome) -> None:
        body = json.dumps({"ok": outcome.ok, "error": outcome.error, "at": outcome.at})
        key = self._key(scope)
        async with self.state.client.pipeline(transaction=True) as pipe:
            pipe.hset(key, instance_id, body)
            pipe.expire(key, REACHABILITY_TTL)
            await pipe.execute()

    async def get_many(self, scope: SearchScope, instance_ids: Sequence[str]) -> dict[str, LastOutcome]:
        if not instance_ids:
            return {}
        values = await self.state.client.hmget(self._key(scope), list(instance_ids))
        out: dict[str, LastOutcome] = {}
        for instance_id, raw in zip(instance_ids, values, strict=True):
            if raw is not None:
                data: dict[str, Any] = json.loads(raw)
                out[instance_id] = LastOutcome(bool(data["ok"]), data.get("error"), float(data["at"]))
        return out
