"""The dispatcher's stores shared by every replica through Redis: cooldowns, the result cache,
reachability. They live on the deployment's one `limits.RedisState` (client, prefix, scripts);
the pacing and the call budgets in Redis are in `limits/` (`RedisPacer`, `RedisCallBudgets`).

Every update is a single atomic Redis operation — the cooldown renewal is a Lua script
("streak + 1, until = max(existing, now + policy(streak))") — so replicas never race a
read-modify-write. Keys expire on their own; nothing needs sweeping.

Privacy: cache keys are SHA-256 digests of the request, and cached results are stored without
the query text (the dispatcher puts the caller's query back on a hit).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from ..contract.results import SearchResult
from ..limits.redis_state import RedisState
from ..observability.metrics import CACHE_LOOKUPS
from ..observability.outage import OutageLog
from .cache import MAX_ENTRY_BYTES, decode_result, encode_result
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


class RedisResultCache:
    """The `ResultCache` of a replica set. A Redis failure is a cache miss, never a failed search."""

    def __init__(self, state: RedisState) -> None:
        self.state = state
        self.outage = OutageLog(log, "Redis result cache")

    def _key(self, key: Hashable) -> str:
        return self.state.key("cache", hashlib.sha256(repr(key).encode()).hexdigest())

    async def get(self, key: Hashable) -> SearchResult | None:
        try:
            raw = await self.state.client.get(self._key(key))
        except RedisError as exc:
            self.outage.failed(exc, "searches run uncached")
            return None
        self.outage.recovered()
        CACHE_LOOKUPS.labels("miss" if raw is None else "hit").inc()
        if raw is None:
            return None
        try:
            return decode_result(raw)
        except (ValueError, KeyError, TypeError):
            log.warning("dropping an unreadable cache entry")
            return None

    async def set(self, key: Hashable, value: SearchResult, ttl: float) -> None:
        body = encode_result(value)
        if len(body) > MAX_ENTRY_BYTES:  # Redis is bounded by its maxmemory (allkeys-lru); one entry is too
            return
        try:
            await self.state.client.set(self._key(key), body, px=max(1, int(ttl * 1000)))
        except RedisError as exc:
            self.outage.failed(exc, "searches run uncached")

    async def clear(self) -> None:
        keys = [k async for k in self.state.client.scan_iter(match=self.state.key("cache", "*"), count=500)]
        if keys:
            await self.state.client.delete(*keys)


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
