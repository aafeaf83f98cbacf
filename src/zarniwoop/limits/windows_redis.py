"""Admission windows in Redis (`redis_url` set): one sliding window per line for every replica.

One Lua script on Redis's own clock admits an attempt on every line or on none:

    zarniwoop:llmr:{acme}:account:mike:requests     ZSET attempt id → admitted at (epoch s)
    zarniwoop:llmr:{acme}:account:mike:tokens:n     HASH attempt id → tokens

Outage policy (docs/robustness.md, `windows`): fail open — while Redis is unreachable each process
admits against its own window (`LocalAdmissionWindows`), logged once; a ticket admitted there is
settled there.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from redis.exceptions import RedisError

from ..contract.errors import RateLimitExceededError
from ..observability.outage import OutageLog
from .redis_state import RedisState
from .windows import LocalAdmissionWindows, RateLine, RateTicket, SharedAdmissionWindows, refused

log = logging.getLogger(__name__)

WINDOW_ADMIT_SCRIPT = """
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


WINDOW_SETTLE_SCRIPT = """
for i = 1, #KEYS, 2 do
  if redis.call('ZSCORE', KEYS[i], ARGV[1]) then redis.call('HSET', KEYS[i + 1], ARGV[1], ARGV[2]) end
end
return 0
"""


class RedisAdmissionWindows(SharedAdmissionWindows):
    """Sliding windows in Redis, shared by every replica (one script, Redis's clock)."""

    store_errors = (RedisError, OSError)

    def __init__(self, state: RedisState, fallback: LocalAdmissionWindows | None = None) -> None:
        self.state = state
        self.fallback = fallback or LocalAdmissionWindows()
        self._admit_script = state.script(WINDOW_ADMIT_SCRIPT)
        self._settle_script = state.script(WINDOW_SETTLE_SCRIPT)
        self.outage = OutageLog(log, "Redis (LLM rate windows)")

    def _keys(self, tenant: str, line: RateLine) -> tuple[str, str]:
        base = f"{self.state.prefix}llmr:{{{tenant}}}:{line.level}:{line.owner}:{line.kind}"
        return base, base + ":n"

    async def _admit(self, ticket: RateTicket, window: float) -> RateLimitExceededError | None:
        lines = ticket.lines
        keys = [key for line in lines for key in self._keys(ticket.tenant, line)]
        args: list[str | int | float] = [window, ticket.id, ticket.tokens, len(lines)]
        args += [line.limit for line in lines] + [line.kind for line in lines]
        failed, wait = await self._admit_script(keys=keys, args=args)
        return refused(lines[int(failed) - 1], float(wait), window) if int(failed) else None

    async def _settle(self, ticket: RateTicket, token_lines: Sequence[RateLine], tokens: int) -> None:
        keys = [key for line in token_lines for key in self._keys(ticket.tenant, line)]
        await self._settle_script(keys=keys, args=[ticket.id, tokens])

    async def _release(self, ticket: RateTicket) -> None:
        pipe = self.state.client.pipeline(transaction=False)
        for line in ticket.lines:
            zset, amounts = self._keys(ticket.tenant, line)
            pipe.zrem(zset, ticket.id)
            pipe.hdel(amounts, ticket.id)
        await pipe.execute()


__all__ = ["WINDOW_ADMIT_SCRIPT", "WINDOW_SETTLE_SCRIPT", "RedisAdmissionWindows"]
