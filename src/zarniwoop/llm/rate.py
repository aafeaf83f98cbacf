"""Per-level rate limits: `requests_per_minute` and `tokens_per_minute` beside the token budgets.

    llm:
      quota: {daily_tokens: 500000, requests_per_minute: 10, tokens_per_minute: 40000}

Any level (account, project, team, tenant) may set either; every limit of every level holds. Each
upstream attempt is admitted against a sliding window (`ai.rateLimit.windowSeconds`, default 60 —
shorter only for tests): a request line counts attempts, a token line the call's reservation
(input estimate + `max_tokens`), corrected to the real usage when the call settles. A call over a
limit is refused before anything is sent, with `RateLimitExceededError(level, retry_after)`: the
seconds until the window has room (a gateway answers 429 with `Retry-After`). The local free
tier (`quota: unlimited` entries) is never rate-limited.

Two limiters satisfy `RateLimiter`: `RedisRateLimiter` (with `redis_url`: one Lua script on Redis's
own clock admits on every line or on none, so all replicas share one window) and
`MemoryRateLimiter` (embedded default: the window of this process only).

    zarniwoop:llmr:{acme}:account:mike:requests     ZSET attempt id → admitted at (epoch s)
    zarniwoop:llmr:{acme}:account:mike:tokens:n     HASH attempt id → tokens
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..contract.errors import RateLimitExceededError

if TYPE_CHECKING:
    from ..tenancy.accounts import CallScope

WINDOW_KEY = "ai.rateLimit.windowSeconds"
DEFAULT_WINDOW_SECONDS = 60.0
Kind = Literal["requests", "tokens"]


@dataclass(frozen=True, slots=True)
class RateLine:
    level: str
    owner: str
    kind: Kind
    limit: int

    @property
    def label(self) -> str:
        return f"{self.level}/{self.owner}"


@dataclass(frozen=True, slots=True)
class RateTicket:
    """One admitted attempt: what it counts on which lines (to correct or take back later)."""

    id: str
    tenant: str
    lines: tuple[RateLine, ...]
    tokens: int


def rate_lines(scope: CallScope) -> list[RateLine]:
    """The request and token lines of every level that sets a per-minute limit."""
    lines: list[RateLine] = []
    for level, owner, unit in scope.levels():
        quota = unit.llm.quota if unit is not None else None
        if quota is None:
            continue
        if quota.requests_per_minute is not None:
            lines.append(RateLine(level, owner, "requests", quota.requests_per_minute))
        if quota.tokens_per_minute is not None:
            lines.append(RateLine(level, owner, "tokens", quota.tokens_per_minute))
    return lines


def refused(line: RateLine, retry_after: float, window: float) -> RateLimitExceededError:
    what = "requests" if line.kind == "requests" else "tokens"
    per = "minute" if window == DEFAULT_WINDOW_SECONDS else f"{window:g} s"
    return RateLimitExceededError(
        line.level,
        round(max(retry_after, 0.001), 3),
        f"{line.level.capitalize()} rate limit reached: {line.label} allows {line.limit:,} {what} per {per}; "
        f"retry in {max(retry_after, 0.001):.1f}s",
    )


class RateLimiter(Protocol):
    async def admit(
        self, tenant: str, lines: Sequence[RateLine], tokens: int, *, window: float
    ) -> RateTicket: ...

    async def settle(self, ticket: RateTicket, tokens: int) -> None: ...

    async def release(self, ticket: RateTicket) -> None: ...


def _wait_for_room(
    entries: Sequence[tuple[float, int]], need: int, limit: int, now: float, window: float
) -> float:
    """Seconds until the oldest entries have left the window far enough that `need` more fit."""
    total = sum(amount for _, amount in entries)
    for at, amount in sorted(entries):
        total -= amount
        if total + need <= limit:
            return at + window - now
    return window  # more than the whole limit at once: one full window (it cannot fit sooner)


class MemoryRateLimiter:
    """The window of this process (the embedded default; replicas use `RedisRateLimiter`)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self._log: dict[tuple[str, str, str, str], dict[str, tuple[float, int]]] = {}
        self._lock = asyncio.Lock()

    def _entries(
        self, tenant: str, line: RateLine, now: float, window: float
    ) -> dict[str, tuple[float, int]]:
        entries = self._log.setdefault((tenant, line.level, line.owner, line.kind), {})
        for key in [k for k, (at, _) in entries.items() if at <= now - window]:
            del entries[key]
        return entries

    async def admit(
        self, tenant: str, lines: Sequence[RateLine], tokens: int, *, window: float
    ) -> RateTicket:
        ticket = RateTicket(secrets.token_hex(8), tenant, tuple(lines), tokens)
        async with self._lock:
            now = self.now()
            for line in lines:
                entries = self._entries(tenant, line, now, window)
                need = 1 if line.kind == "requests" else tokens
                if sum(amount for _, amount in entries.values()) + need > line.limit:
                    raise refused(
                        line, _wait_for_room(list(entries.values()), need, line.limit, now, window), window
                    )
            for line in lines:
                self._entries(tenant, line, now, window)[ticket.id] = (
                    now,
                    1 if line.kind == "requests" else tokens,
                )
        return ticket

    async def settle(self, ticket: RateTicket, tokens: int) -> None:
        async with self._lock:
            for line in ticket.lines:
                entries = self._log.get((ticket.tenant, line.level, line.owner, line.kind), {})
                if line.kind == "tokens" and ticket.id in entries:
                    entries[ticket.id] = (entries[ticket.id][0], max(0, tokens))

    async def release(self, ticket: RateTicket) -> None:
        async with self._lock:
            for line in ticket.lines:
                self._log.get((ticket.tenant, line.level, line.owner, line.kind), {}).pop(ticket.id, None)


_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local window = tonumber(ARGV[1])
local id = ARGV[2]
local tokens = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
for i = 1, n do
  local zset, amounts = KEYS[2*i-1], KEYS[2*i]
  local limit = tonumber(ARGV[4 + i])
  local need = 1
  if ARGV[4 + n + i] == 'tokens' then need = tokens end
  local lapsed = redis.call('ZRANGEBYSCORE', zset, '-inf', now - window)
  for _, member in ipairs(lapsed) do redis.call('HDEL', amounts, member) end
  redis.call('ZREMRANGEBYSCORE', zset, '-inf', now - window)
  local members = redis.call('ZRANGE', zset, 0, -1, 'WITHSCORES')
  local total = 0
  local amount = {}
  for j = 1, #members, 2 do
    local a = tonumber(redis.call('HGET', amounts, members[j]) or '1')
    amount[j] = a
    total = total + a
  end
  if total + need > limit then
    local wait = window
    for j = 1, #members, 2 do
      total = total - amount[j]
      if total + need <= limit then
        wait = tonumber(members[j + 1]) + window - now
        break
      end
    end
    return {i, tostring(wait)}
  end
end
for i = 1, n do
  local zset, amounts = KEYS[2*i-1], KEYS[2*i]
  local need = 1
  if ARGV[4 + n + i] == 'tokens' then need = tokens end
  redis.call('ZADD', zset, now, id)
  redis.call('HSET', amounts, id, need)
  local ttl = math.ceil(window * 1000) + 1000
  redis.call('PEXPIRE', zset, ttl)
  redis.call('PEXPIRE', amounts, ttl)
end
return {0, '0'}
"""


_SETTLE = """
for i = 1, #KEYS, 2 do
  if redis.call('ZSCORE', KEYS[i], ARGV[1]) then redis.call('HSET', KEYS[i + 1], ARGV[1], ARGV[2]) end
end
return 0
"""


class RedisRateLimiter:
    """Sliding windows in Redis, shared by every replica (one script, Redis's clock)."""

    def __init__(self, client: Any, *, prefix: str = "zarniwoop:") -> None:
        self.redis = client
        self.prefix = prefix
        self._admit = client.register_script(_ADMIT)
        self._settle = client.register_script(_SETTLE)

    def _keys(self, tenant: str, line: RateLine) -> tuple[str, str]:
        base = f"{self.prefix}llmr:{{{tenant}}}:{line.level}:{line.owner}:{line.kind}"
        return base, base + ":n"

    async def admit(
        self, tenant: str, lines: Sequence[RateLine], tokens: int, *, window: float
    ) -> RateTicket:
        ticket = RateTicket(secrets.token_hex(8), tenant, tuple(lines), tokens)
        if not lines:
            return ticket
        keys = [key for line in lines for key in self._keys(tenant, line)]
        args: list[str | int | float] = [window, ticket.id, tokens, len(lines)]
        args += [line.limit for line in lines] + [line.kind for line in lines]
        failed, wait = await self._admit(keys=keys, args=args)
        if int(failed):
            raise refused(lines[int(failed) - 1], float(wait), window)
        return ticket

    async def settle(self, ticket: RateTicket, tokens: int) -> None:
        token_lines = [line for line in ticket.lines if line.kind == "tokens"]
        if not token_lines:
            return
        keys = [key for line in token_lines for key in self._keys(ticket.tenant, line)]
        await self._settle(keys=keys, args=[ticket.id, max(0, tokens)])

    async def release(self, ticket: RateTicket) -> None:
        if not ticket.lines:
            return
        pipe = self.redis.pipeline(transaction=False)
        for line in ticket.lines:
            zset, amounts = self._keys(ticket.tenant, line)
            pipe.zrem(zset, ticket.id)
            pipe.hdel(amounts, ticket.id)
        await pipe.execute()
