"""Cooldowns in Redis, shared by every replica: the `CooldownStore` of a replica set.

The renewal is one Lua script ("streak + 1, until = max(existing, now + policy(streak))"), so
replicas never race a read-modify-write; its doubling is generated from the one formula of
`limits/failure_policy.py` (`Backoff.lua_seconds`, the Lua form of `Backoff.seconds`). Keys
expire on their own a day after the cooldown ends; nothing needs sweeping. The SQL form is in
`cooldown.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..limits.failure_policy import Backoff, bench
from ..limits.redis_state import RedisState
from .cooldown import Cooldown

if TYPE_CHECKING:
    from ..contract.query import SearchScope

STREAK_MEMORY = 86400
"""A cooldown key outlives its cooldown by a day, so a failure soon after still doubles the backoff."""

_RECORD_FAILURE = f"""
local now = tonumber(ARGV[1])
local base = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local current = redis.call('HMGET', KEYS[1], 'until', 'streak')
local streak = (tonumber(current[2]) or 0) + 1
local seconds = {Backoff.lua_seconds("base", "cap", "streak")}
local until_epoch = math.max(tonumber(current[1]) or 0, now + seconds)
local until_text = string.format('%.6f', until_epoch)
redis.call('HSET', KEYS[1], 'until', until_text, 'streak', streak, 'reason', ARGV[4], 'updated', ARGV[1])
redis.call('EXPIRE', KEYS[1], math.ceil(until_epoch - now) + tonumber(ARGV[5]))
return {{until_text, streak}}
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
        policy = bench(error)
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
