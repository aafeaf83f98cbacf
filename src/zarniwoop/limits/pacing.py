"""Pacing: keep each endpoint under its request rate by waiting, instead of provoking a 429.

A token bucket in its GCRA form (the generic cell rate algorithm) per (endpoint, credential): one
number per key, the *theoretical arrival time* (TAT) of the next call at the sustained pace.

- `rateLimit.perSecond` (r): the sustained pace; calls are spaced `1/r` apart once the burst is used.
- `rateLimit.burst` (b): at most b calls in any one second, the first included (b ≥ r; default:
  the rate itself, so a provider documenting "2 per second" never sees 3 in one second).

With `T = 1/r` and a tolerance `τ = (b − max(r, 1))·T`, a call may start at `max(now, TAT − τ)`;
taking it moves the TAT on by T. `perSecond: 2, burst: 4` therefore starts 3 calls at once, the
4th half a second later, then one every half second: 4 in the first second, 2 in each after.

The dispatcher reserves a start slot only when the wait fits in the time it can give that
candidate (`max_wait`): otherwise the slot is not taken and the candidate is passed over as
`skipped_paced`, so the next candidate serves at once instead of the search sleeping past its
deadline.

Three forms of one `Pacer`: `LocalPacer` paces one process; `pacing_sql.SQLPacer` keeps the TAT in
the database (several processes on one SQLite file or PostgreSQL); `pacing_redis.RedisPacer` keeps
it in Redis (one Lua script on Redis's clock), so every replica sharing a credential shares its
rate. Outage policy (docs/robustness.md): pacing fails open to `LocalPacer` — a search never fails
for pacing.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Protocol

from .clock import Clock

MARGIN = 0.05
"""Slack per second of pacing, so that scheduling and network jitter between us and the provider
(tens of ms on a busy host) never puts one call too many in a second as the provider counts it."""


class Pacer(Protocol):
    async def reserve(
        self, key: str, per_second: float | None, max_wait: float, burst: float | None = None
    ) -> float | None:
        """Take the next start slot if it comes within `max_wait` seconds and return the wait
        before it (0 = go now); None = it would not, and no slot was taken."""
        ...


def pace_key(protocol_id: str, instance_id: str, api_key: str | None) -> str:
    """The pacing identity of an endpoint and its credential. The key enters only as a short digest
    (stable across processes, so replicas agree; never the key itself, which would land in Redis)."""
    digest = hashlib.sha256(api_key.encode()).hexdigest()[:16] if api_key else "-"
    return f"{protocol_id}:{instance_id}:{digest}"


@dataclass(frozen=True, slots=True)
class Cell:
    """GCRA parameters: `interval` seconds between calls at the sustained pace, `tolerance` seconds
    a call may start ahead of it (the burst)."""

    interval: float
    tolerance: float


def cell_of(per_second: float, burst: float | None = None) -> Cell:
    interval = (1 + MARGIN) / per_second
    allowed = max(burst or 0.0, per_second, 1.0)
    return Cell(interval, (allowed - max(per_second, 1.0)) * interval)


def next_slot(tat: float | None, now: float, cell: Cell) -> tuple[float, float]:
    """`(start, new TAT)` of the next call, given the key's TAT (None = never called)."""
    base = now if tat is None else max(tat, now)
    return max(now, base - cell.tolerance), base + cell.interval


class LocalPacer:
    """The GCRA of this process (monotonic clock); also every shared pacer's outage fallback."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self._tat: dict[str, float] = {}

    def take(
        self, key: str, per_second: float, max_wait: float = math.inf, burst: float | None = None
    ) -> float | None:
        """Reserve the next start slot for `key` if it is at most `max_wait` away; returns how long
        to wait before starting, or None (nothing reserved)."""
        now = self.clock.monotonic()
        start, tat = next_slot(self._tat.get(key), now, cell_of(per_second, burst))
        if start - now > max_wait:
            return None
        self._tat[key] = tat
        return start - now

    async def reserve(
        self, key: str, per_second: float | None, max_wait: float, burst: float | None = None
    ) -> float | None:
        if not per_second or per_second <= 0:
            return 0.0
        return self.take(key, per_second, max_wait, burst)

    def paces(self, key: str) -> bool:
        """Whether this process has paced `key` itself (a shared pacer's fallback: during an outage)."""
        return key in self._tat


async def wait_for_slot(delay: float, clock: Clock | None = None) -> None:
    """Sleep until a reserved start slot (a no-op for 0), through the caller's clock."""
    if delay > 0:
        await (clock or Clock()).sleep(delay)
