"""Pacing shared by every replica through Redis: the GCRA of `pacing.LocalPacer`, its TAT in Redis.

One Lua script reserves the next start slot atomically on Redis's own clock (so the replicas'
clocks need not agree) and returns how long to wait — or takes nothing when the slot is further
away than `max_wait`. Outage policy (docs/robustness.md): pacing fails open — if Redis is
unreachable the process paces itself alone (`LocalPacer`) until it is back, logged once; searches
never fail for pacing.
"""

from __future__ import annotations

import logging

from redis.exceptions import RedisError

from ..observability.outage import OutageLog
from .pacing import LocalPacer, cell_of
from .redis_state import RedisState

log = logging.getLogger(__name__)

GCRA_SCRIPT = """
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local max_wait = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local base = math.max(tonumber(redis.call('GET', KEYS[1])) or now, now)
local slot = math.max(now, base - tolerance)
if slot - now > max_wait then return false end
local tat = base + interval
redis.call('SET', KEYS[1], string.format('%.6f', tat), 'PX', math.ceil((tat - now) * 1000) + 1000)
return string.format('%.6f', slot - now)
"""


class RedisPacer:
    """The dispatcher's `Pacer` for replicas sharing a Redis."""

    def __init__(self, state: RedisState, fallback: LocalPacer) -> None:
        self.state = state
        self.fallback = fallback
        self._reserve = state.script(GCRA_SCRIPT)
        self.outage = OutageLog(log, "Redis (pacing)")

    async def reserve(
        self, key: str, per_second: float | None, max_wait: float, burst: float | None = None
    ) -> float | None:
        if not per_second or per_second <= 0:
            return 0.0
        cell = cell_of(per_second, burst)
        bound = repr(min(max_wait, 1e9))  # Lua numbers: no `inf` literal
        args = [repr(cell.interval), repr(cell.tolerance), bound]
        try:
            delay = await self._reserve(keys=[self.state.key("gcra", key)], args=args)
            self.outage.recovered()
        except (RedisError, OSError) as exc:
            self.outage.failed(exc, "pacing fails open: each process paces itself")
            return self.fallback.take(key, per_second, max_wait, burst)
        return None if delay is None else float(delay)


__all__ = ["GCRA_SCRIPT", "RedisPacer"]
