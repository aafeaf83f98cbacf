"""Search flights in Redis, shared by every replica: the `flights.FlightStore` of a replica set.

Every update is one atomic script that checks the owner first; Redis's own clock times the
leases. The single-process and SQLite forms are in `flights.py` and `cache_sql.py`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..limits.redis_state import RedisState

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
