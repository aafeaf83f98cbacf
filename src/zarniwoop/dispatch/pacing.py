"""Pacing: keep each endpoint under its request rate by waiting, instead of provoking a 429.

A sliding-window log per (endpoint, credential): a call may start when fewer than `n` calls
started in the last `n / rate` seconds. Waiting happens inside the caller's deadline; a call
that could not start before it is reported as a timeout by the dispatcher.

`RateLimiter` paces one process; with Redis configured, `redis_state.RedisRateLimiter` keeps the
same log in Redis, so every replica sharing a credential shares its rate.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import math
from typing import Protocol

from .clock import Clock

MARGIN = 0.05
"""Slack so that scheduling and network jitter between us and the provider (tens of ms on a busy
host) never puts n+1 calls in one window as the provider counts them."""


class Pacer(Protocol):
    async def wait(self, key: str, per_second: float | None) -> None: ...


def pace_key(protocol_id: str, instance_id: str, api_key: str | None) -> str:
    """The pacing identity of an endpoint and its credential. The key enters only as a short digest
    (stable across processes, so replicas agree; never the key itself, which would land in Redis)."""
    digest = hashlib.sha256(api_key.encode()).hexdigest()[:16] if api_key else "-"
    return f"{protocol_id}:{instance_id}:{digest}"


def window_of(per_second: float) -> tuple[int, float]:
    """`(n, seconds)`: at most n starts per window; 2/s → 2 per 1 s, 0.5/s → 1 per 2 s."""
    n = max(1, math.floor(per_second))
    return n, n / per_second + MARGIN


class RateLimiter:
    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self._starts: dict[str, collections.deque[float]] = {}

    def reserve(self, key: str, per_second: float) -> float:
        """Reserve the next start slot for `key`; returns how long to wait before starting."""
        n, window = window_of(per_second)
        starts = self._starts.setdefault(key, collections.deque(maxlen=n))
        now = self.clock.monotonic()
        slot = now if len(starts) < n else max(now, starts[0] + window)
        starts.append(slot)
        return slot - now

    async def wait(self, key: str, per_second: float | None) -> None:
        if not per_second or per_second <= 0:
            return
        delay = self.reserve(key, per_second)
        if delay > 0:
            await asyncio.sleep(delay)
