"""Pacing: keep each endpoint under its request rate by waiting, instead of provoking a 429.

A sliding-window log per (endpoint, credential): a call may start when fewer than `n` calls
started in the last `n / rate` seconds. The dispatcher reserves a start slot only when the wait
fits in the time it can give that candidate (`max_wait`): otherwise the slot is not taken and
the candidate is passed over as `skipped_paced`, so the next candidate serves at once instead of
the search sleeping past its deadline.

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
    async def reserve(self, key: str, per_second: float | None, max_wait: float) -> float | None:
        """Take the next start slot if it comes within `max_wait` seconds and return the wait
        before it (0 = go now); None = it would not, and no slot was taken."""
        ...


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

    def take(self, key: str, per_second: float, max_wait: float = math.inf) -> float | None:
        """Reserve the next start slot for `key` if it is at most `max_wait` away; returns how long
        to wait before starting, or None (nothing reserved)."""
        n, window = window_of(per_second)
        starts = self._starts.setdefault(key, collections.deque(maxlen=n))
        now = self.clock.monotonic()
        slot = now if len(starts) < n else max(now, starts[0] + window)
        if slot - now > max_wait:
            return None
        starts.append(slot)
        return slot - now

    async def reserve(self, key: str, per_second: float | None, max_wait: float) -> float | None:
        if not per_second or per_second <= 0:
            return 0.0
        return self.take(key, per_second, max_wait)


async def wait_for_slot(delay: float) -> None:
    """Sleep until a reserved start slot (a no-op for 0)."""
    if delay > 0:
        await asyncio.sleep(delay)
