"""The one Redis of a deployment: its client, its key prefix, its scripts.

Selected by `redis_url` in the config file:

    redis_url: redis://127.0.0.1:6379/0
    redis_prefix: "zarniwoop:"        # every key starts with it; one prefix per deployment

Every limiter and budget in Redis (`pacing_redis`, `windows_redis`, `budgets_redis`) and the
dispatcher's shared stores (`dispatch/cooldown_redis.py`, `cache_redis`, `flights_redis`,
`reachability_redis`) take this object: one pool, one prefix, scripts registered on that pool.
Every update is a single atomic
Redis operation (a Lua script where it is a read-modify-write), so replicas never race.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis

DEFAULT_PREFIX = "zarniwoop:"
"""The key prefix when the config file sets no `redis_prefix`."""


@dataclass(slots=True)
class RedisState:
    """One Redis client and the key prefix of this deployment."""

    client: aioredis.Redis
    prefix: str = DEFAULT_PREFIX
    _scripts: dict[str, Any] = field(default_factory=dict, repr=False)

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    def script(self, source: str) -> Any:
        """The Lua script `source`, registered once on this client (redis-py loads it by SHA on
        first use and again after a Redis restart)."""
        registered = self._scripts.get(source)
        if registered is None:
            registered = self._scripts[source] = self.client.register_script(source)
        return registered

    async def aclose(self) -> None:
        await self.client.aclose()


def open_redis(
    url: str, prefix: str = DEFAULT_PREFIX, *, max_connections: int = 64, timeout: float = 2.0
) -> RedisState:
    """A client with short timeouts (a Redis outage must cost a call milliseconds, not seconds)
    over a *blocking* pool: a burst of searches waits for a free connection instead of failing
    with "Too many connections". `timeout`: connect and read, each (a test of something other
    than an outage gives a generous one, so that a loaded machine is not taken for an outage)."""
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=max(5.0, timeout),
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
    )
    return RedisState(aioredis.Redis.from_pool(pool), prefix)


__all__ = ["DEFAULT_PREFIX", "RedisState", "open_redis"]
