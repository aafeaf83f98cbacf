"""Token budgets in Redis (`redis_url` set): atomic multi-level reserve/settle for replicas.

One Lua script checks every limited line and records the hold on all of them, or on none — Redis
runs a script without interleaving anything else, so calls of any number of processes never
overspend. Per line (all keys of a tenant share a hash slot through the `{tenant}` tag):

    zarniwoop:llmq:{acme}:project:review:monthly:2026-04          used tokens (INCRBY)
    zarniwoop:llmq:{acme}:project:review:monthly:2026-04:holds    ZSET hold id → expiry (epoch s)
    zarniwoop:llmq:{acme}:project:review:monthly:2026-04:amounts  HASH hold id → tokens

Lapsed holds (a crashed process) are dropped by the next script that touches the line. Counters
expire a while after their period (daily 3 days, monthly 40 days); threshold alerts are
`SET NX` keys with the same lifetime.

Outage policy (docs/robustness.md, `token_budgets`): fail closed — a reservation that cannot reach
Redis raises `BudgetUnavailableError`; a settle or release that cannot is logged once and dropped.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime

from redis.exceptions import RedisError

from ..observability.outage import OutageLog
from .clock import Clock
from .redis_state import RedisState, open_redis
from .token_budgets import (
    HOLD_TTL_SECONDS,
    Hold,
    LineStatus,
    QuotaLine,
    buckets_for,
    exhausted_error,
    unavailable_error,
)

log = logging.getLogger(__name__)

TTL = {"daily": 3 * 86400, "monthly": 40 * 86400}
ScriptArg = str | int | float
"""What a Lua script's ARGV takes (redis-py encodes each)."""

TOKEN_RESERVE_SCRIPT = """
local now = tonumber(ARGV[1])
local expires = tonumber(ARGV[2])
local id = ARGV[3]
local tokens = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
local state = {}
for i = 1, n do
  local used_key, zset, amounts = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
  local lapsed = redis.call('ZRANGEBYSCORE', zset, '-inf', now)
  for _, member in ipairs(lapsed) do redis.call('HDEL', amounts, member) end
  redis.call('ZREMRANGEBYSCORE', zset, '-inf', now)
  local used = tonumber(redis.call('GET', used_key) or '0')
  local held = 0
  for _, v in ipairs(redis.call('HVALS', amounts)) do held = held + tonumber(v) end
  if used + held + tokens > tonumber(ARGV[5 + i]) then
    return {i, used, held}
  end
end
for i = 1, n do
  local zset, amounts = KEYS[3*i-1], KEYS[3*i]
  redis.call('ZADD', zset, expires, id)
  redis.call('HSET', amounts, id, tokens)
  redis.call('EXPIRE', zset, tonumber(ARGV[5 + n + i]))
  redis.call('EXPIRE', amounts, tonumber(ARGV[5 + n + i]))
end
return {0, 0, 0}
"""

TOKEN_SETTLE_SCRIPT = """
local id = ARGV[1]
local tokens = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local out = {}
for i = 1, n do
  local used_key, zset, amounts = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
  redis.call('ZREM', zset, id)
  redis.call('HDEL', amounts, id)
  local used = redis.call('INCRBY', used_key, tokens)
  redis.call('EXPIRE', used_key, tonumber(ARGV[3 + i]))
  local held = 0
  for _, v in ipairs(redis.call('HVALS', amounts)) do held = held + tonumber(v) end
  out[2*i-1] = used
  out[2*i] = held
end
return out
"""


def _key(prefix: str, tenant: str, line: QuotaLine, bucket: str) -> str:
    return f"{prefix}llmq:{{{tenant}}}:{line.level}:{line.owner}:{line.period}:{bucket}"


class RedisTokenBudgets:
    """The `TokenBudgets` of a replica set, on the deployment's `RedisState` (or a URL: its own)."""

    def __init__(
        self, state: RedisState | str, *, clock: Clock | None = None, hold_ttl: float = HOLD_TTL_SECONDS
    ) -> None:
        self._owns = isinstance(state, str)
        self.state = open_redis(state) if isinstance(state, str) else state
        self.redis = self.state.client
        self.prefix = self.state.prefix
        self.clock = clock or Clock()
        self.hold_ttl = hold_ttl
        self._reserve = self.state.script(TOKEN_RESERVE_SCRIPT)
        self._settle = self.state.script(TOKEN_SETTLE_SCRIPT)
        self.outage = OutageLog(log, "Redis (token budgets)")

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), UTC)

    def _keys(self, tenant: str, lines: Sequence[QuotaLine], hold: Hold) -> list[str]:
        keys: list[str] = []
        for line in lines:
            base = _key(self.prefix, tenant, line, hold.bucket(line.period))
            keys += [base, base + ":holds", base + ":amounts"]
        return keys

    async def reserve(self, tenant: str, lines: Sequence[QuotaLine], tokens: int) -> Hold:
        hold = Hold(secrets.token_hex(8), tenant, tuple(lines), buckets_for(self.now()), tokens)
        limited = [line for line in lines if line.limit is not None]
        if not limited:
            return hold
        now = self.clock.now()
        caps = [cap for line in limited if (cap := line.cap) is not None]  # a line with a limit has a cap
        args: list[ScriptArg] = [now, now + self.hold_ttl, hold.id, tokens, len(limited)]
        args += [*caps, *(TTL[line.period] for line in limited)]
        try:
            failed, used, held = await self._reserve(keys=self._keys(tenant, limited, hold), args=args)
        except (RedisError, OSError) as exc:
            self.outage.failed(exc, "token budgets fail closed: calls under a budget are refused")
            raise unavailable_error(limited, exc, "Redis") from None
        self.outage.recovered()
        if int(failed):
            line = limited[int(failed) - 1]
            raise exhausted_error(LineStatus(line, hold.bucket(line.period), int(used), int(held)), tokens)
        return hold

    async def settle(self, hold: Hold, tokens: int) -> list[LineStatus]:
        lines = list(hold.lines)
        args: list[ScriptArg] = [hold.id, max(0, tokens), len(lines), *(TTL[line.period] for line in lines)]
        try:
            out = await self._settle(keys=self._keys(hold.tenant, lines, hold), args=args)
        except (RedisError, OSError) as exc:
            self.outage.failed(exc, "usage not charged to the budgets; holds lapse by themselves")
            return []
        return [
            LineStatus(line, hold.bucket(line.period), int(out[2 * i]), int(out[2 * i + 1]))
            for i, line in enumerate(lines)
            if line.limit is not None
        ]

    async def release(self, hold: Hold) -> None:
        limited = [line for line in hold.lines if line.limit is not None]
        if not limited:
            return
        pipe = self.redis.pipeline(transaction=True)
        for line in limited:
            base = _key(self.prefix, hold.tenant, line, hold.bucket(line.period))
            pipe.zrem(base + ":holds", hold.id)
            pipe.hdel(base + ":amounts", hold.id)
        try:
            await pipe.execute()
        except (RedisError, OSError) as exc:
            self.outage.failed(exc, "the hold lapses by itself")

    async def status(self, tenant: str, lines: Sequence[QuotaLine]) -> list[LineStatus]:
        try:
            return await self._status(tenant, lines)
        except (RedisError, OSError) as exc:
            self.outage.failed(exc, "budget status unknown")
            return []

    async def _status(self, tenant: str, lines: Sequence[QuotaLine]) -> list[LineStatus]:
        buckets = dict(buckets_for(self.now()))
        now = self.clock.now()
        out = []
        for line in lines:
            base = _key(self.prefix, tenant, line, buckets[line.period])
            used = int(await self.redis.get(base) or 0)
            live = set(await self.redis.zrangebyscore(base + ":holds", now, "+inf"))
            amounts = await self.redis.hgetall(base + ":amounts") if live else {}
            out.append(
                LineStatus(
                    line, buckets[line.period], used, sum(int(v) for k, v in amounts.items() if k in live)
                )
            )
        return out

    async def mark_alert(self, tenant: str, status: LineStatus, threshold: int) -> bool:
        line = status.line
        key = f"{_key(self.prefix, tenant, line, status.bucket)}:alert:{threshold}"
        return bool(await self.redis.set(key, "1", nx=True, ex=TTL[line.period]))

    async def charge(self, tenant: str, line: QuotaLine, tokens: int, *, bucket: str | None = None) -> None:
        bucket = bucket or dict(buckets_for(self.now()))[line.period]
        key = _key(self.prefix, tenant, line, bucket)
        await self.redis.incrby(key, tokens)
        await self.redis.expire(key, TTL[line.period])

    async def aclose(self) -> None:
        if self._owns:
            await self.state.aclose()
