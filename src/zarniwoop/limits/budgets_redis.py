"""The budget engine in Redis (`redis_url` set): atomic multi-line reserve/spend/settle for replicas.

One Lua script checks every limited line and records the hold (or the spend) on all of them, or
on none — Redis runs a script without interleaving anything else, so calls of any number of
processes never overspend. Per line:

    zarniwoop:llmq:{acme}:project:review:monthly:2026-04          used tokens (INCRBY)
    zarniwoop:llmq:{acme}:project:review:monthly:2026-04:holds    ZSET hold id → expiry (epoch s)
    zarniwoop:llmq:{acme}:project:review:monthly:2026-04:amounts  HASH hold id → amount
    zarniwoop:quota:_system:_tenant:serper-main:day:2026-04-23    used calls of a search provider

(A token line's keys share a hash slot through the `{tenant}` tag; call lines keep the keys they
had before the engine was one, so counters in a running Redis survive the upgrade.) Lapsed holds
(a crashed process) are dropped by the next script that touches the line. Every key expires an
hour after its period ends; threshold alerts are `SET NX` keys with the same end.

Outage policy (`budgets.OUTAGE_POLICY`): a reservation that cannot reach Redis raises
`BudgetUnavailableError`; a settle or release that cannot is logged once and dropped.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence

from redis.exceptions import RedisError

from .budgets import (
    EDGE_SPELLING,
    EXPIRY_GRACE_SECONDS,
    HOLD_TTL_SECONDS,
    Bucket,
    BucketChoice,
    Budgets,
    Hold,
    LineStatus,
    QuotaLine,
    bucket_named,
    bucket_of,
    current_buckets,
    exhausted_error,
    line_tenant,
    outage_log,
    unavailable_error,
)
from .call_budgets import BudgetWindow, CallBudgets, window_line
from .clock import Clock
from .redis_state import RedisState, open_redis
from .revocation import TokenCheck

log = logging.getLogger(__name__)

ScriptArg = str | int | float
"""What a Lua script's ARGV takes (redis-py encodes each)."""

RESERVE_SCRIPT = """
local now, expires, id = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local amount, n, spend = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
for i = 1, n do
  local used_key, zset, amounts = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
  local lapsed = redis.call('ZRANGEBYSCORE', zset, '-inf', now)
  for _, member in ipairs(lapsed) do redis.call('HDEL', amounts, member) end
  redis.call('ZREMRANGEBYSCORE', zset, '-inf', now)
  local cap = tonumber(ARGV[6 + i])
  if cap >= 0 then
    local used = tonumber(redis.call('GET', used_key) or '0')
    local held = 0
    for _, v in ipairs(redis.call('HVALS', amounts)) do held = held + tonumber(v) end
    if used + held + amount > cap then return {i, used, held} end
  end
end
local out = {0}
for i = 1, n do
  local used_key, zset, amounts = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
  local expire_at = tonumber(ARGV[6 + n + i])
  if spend then
    out[i + 1] = redis.call('INCRBY', used_key, amount)
    redis.call('EXPIREAT', used_key, expire_at)
  else
    redis.call('ZADD', zset, expires, id)
    redis.call('HSET', amounts, id, amount)
    redis.call('EXPIREAT', zset, expire_at)
    redis.call('EXPIREAT', amounts, expire_at)
  end
end
return out
"""

SETTLE_SCRIPT = """
local id, amount, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for i = 1, n do
  local used_key, zset, amounts = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
  redis.call('ZREM', zset, id)
  redis.call('HDEL', amounts, id)
  local used = redis.call('INCRBY', used_key, amount)
  redis.call('EXPIREAT', used_key, tonumber(ARGV[3 + i]))
  local held = 0
  for _, v in ipairs(redis.call('HVALS', amounts)) do held = held + tonumber(v) end
  out[2*i-1] = used
  out[2*i] = held
end
return out
"""


def expire_at(bucket: Bucket) -> int:
    return int(bucket.resets_at) + EXPIRY_GRACE_SECONDS


class RedisBudgets(Budgets):
    """The `Budgets` of a replica set, on the deployment's `RedisState` (or a URL: its own)."""

    def __init__(
        self,
        state: RedisState | str,
        *,
        clock: Clock | None = None,
        hold_ttl: float = HOLD_TTL_SECONDS,
        what: str | None = "budgets",
        token_check: TokenCheck | None = None,
    ) -> None:
        """`token_check`: the database's `TokenStore.live`, run beside the script (`revocation.py`)."""
        self.token_check = token_check
        self._owns = isinstance(state, str)
        self.state = open_redis(state) if isinstance(state, str) else state
        self.redis = self.state.client
        self.clock = clock or Clock()
        self.hold_ttl = hold_ttl
        self._reserve = self.state.script(RESERVE_SCRIPT)
        self._settle = self.state.script(SETTLE_SCRIPT)
        self.outage = outage_log(log, "Redis", what)

    def key(self, tenant: str, line: QuotaLine, bucket: str) -> str:
        owner = line_tenant(tenant, line)
        if line.unit == "calls":
            period = EDGE_SPELLING[line.period]
            return self.state.key("quota", owner, line.owner, line.subject, period, bucket)
        return f"{self.state.prefix}llmq:{{{owner}}}:{line.level}:{line.owner}:{line.period}:{bucket}"

    def _keys(self, hold: Hold, lines: Sequence[QuotaLine]) -> list[str]:
        keys: list[str] = []
        for line in lines:
            base = self.key(hold.tenant, line, hold.bucket(line.period))
            keys += [base, base + ":holds", base + ":amounts"]
        return keys

    @contextlib.contextmanager
    def _fail_closed(self, lines: Sequence[QuotaLine]) -> Iterator[None]:
        try:
            yield
        except (RedisError, OSError) as exc:
            self.outage.failed(exc, "budgets fail closed: calls under a budget are refused")
            raise unavailable_error(lines, exc, "Redis") from None
        self.outage.recovered()

    async def _run_reserve(self, hold: Hold, lines: Sequence[QuotaLine], *, spend: bool) -> list[int]:
        now = self.clock.now()
        caps = [-1 if line.cap is None else line.cap for line in lines]
        args: list[ScriptArg] = [now, now + self.hold_ttl, hold.id, hold.amount, len(lines), int(spend)]
        args += [*caps, *(expire_at(hold.window(line.period)) for line in lines)]
        with self._fail_closed(lines):
            out = await self._reserve(keys=self._keys(hold, lines), args=args)
        failed = int(out[0])
        if failed:
            line = lines[failed - 1]
            raise exhausted_error(
                LineStatus(line, hold.bucket(line.period), int(out[1]), int(out[2])), hold.amount
            )
        return [int(v) for v in out[1:]]

    async def _hold(self, hold: Hold, limited: Sequence[QuotaLine]) -> None:
        await self._run_reserve(hold, limited, spend=False)

    async def _spend(self, hold: Hold) -> list[LineStatus]:
        counts = await self._run_reserve(hold, hold.lines, spend=True)
        return [
            LineStatus(line, hold.bucket(line.period), n) for line, n in zip(hold.lines, counts, strict=True)
        ]

    async def settle(self, hold: Hold, amount: int) -> list[LineStatus]:
        lines = list(hold.lines)
        args: list[ScriptArg] = [hold.id, max(0, amount), len(lines)]
        args += [expire_at(hold.window(line.period)) for line in lines]
        try:
            out = await self._settle(keys=self._keys(hold, lines), args=args)
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
            base = self.key(hold.tenant, line, hold.bucket(line.period))
            pipe.zrem(base + ":holds", hold.id)
            pipe.hdel(base + ":amounts", hold.id)
        try:
            await pipe.execute()
        except (RedisError, OSError) as exc:
            self.outage.failed(exc, "the hold lapses by itself")

    async def status(
        self, tenant: str, lines: Sequence[QuotaLine], *, buckets: BucketChoice = None
    ) -> list[LineStatus]:
        try:
            return await self._status(tenant, lines, buckets or current_buckets(self.clock.now()))
        except (RedisError, OSError) as exc:
            self.outage.failed(exc, "budget status unknown")
            return []

    async def _status(
        self, tenant: str, lines: Sequence[QuotaLine], buckets: Mapping[str, Bucket]
    ) -> list[LineStatus]:
        now = self.clock.now()
        out = []
        for line in lines:
            bucket = buckets[line.period].start
            base = self.key(tenant, line, bucket)
            used = int(await self.redis.get(base) or 0)
            live = set(await self.redis.zrangebyscore(base + ":holds", now, "+inf"))
            amounts = await self.redis.hgetall(base + ":amounts") if live else {}
            out.append(LineStatus(line, bucket, used, sum(int(v) for k, v in amounts.items() if k in live)))
        return out

    async def mark_alert(self, tenant: str, status: LineStatus, threshold: int) -> bool:
        line = status.line
        key = f"{self.key(tenant, line, status.bucket)}:alert:{threshold}"
        ends = expire_at(bucket_named(line.period, status.bucket))
        return bool(await self.redis.set(key, "1", nx=True, exat=ends))

    async def charge(
        self, tenant: str, line: QuotaLine, amount: int, *, bucket: str | Bucket | None = None
    ) -> None:
        window = bucket_of(line, bucket, self.clock.now())
        key = self.key(tenant, line, window.start)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.incrby(key, amount)
            pipe.expireat(key, expire_at(window))
            await pipe.execute()

    async def aclose(self) -> None:
        if self._owns:
            await self.state.aclose()


class RedisCallBudgets(CallBudgets):
    """Call budgets on the deployment's Redis (the keeper above reports its outages)."""

    def __init__(self, state: RedisState, *, clock: Clock | None = None) -> None:
        self.redis_budgets = RedisBudgets(state, clock=clock, what=None)
        super().__init__(self.redis_budgets)

    def _key(self, subject: str, window: BudgetWindow) -> str:
        line, bucket = window_line(subject, window)
        return self.redis_budgets.key("", line, bucket.start)


__all__ = ["RESERVE_SCRIPT", "SETTLE_SCRIPT", "RedisBudgets", "RedisCallBudgets"]
