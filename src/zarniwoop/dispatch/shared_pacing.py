"""Pacing shared through the database: the GCRA of `pacing.RateLimiter`, its TAT in a table.

`zarniwoop serve --workers N` runs N processes on one database; each paced alone, a provider
documenting "1 call per second" would see N. `SQLPacer` keeps one theoretical arrival time per
(endpoint, credential digest) in the `pacing` table and moves it in one write transaction
(IMMEDIATE on SQLite, so the check and the update are atomic across processes), on the wall
clock (`Clock.now`), which every process on the host — and every host on a PostgreSQL — shares.

It costs one small write transaction per paced call, so it is used only when several processes
serve (`Runtime.open(share_pacing=True)`); with Redis configured `redis_state.RedisRateLimiter`
does the same in Redis. If the database is unreachable or locked past its busy wait, the process
paces itself alone until it is back (logged once): searches never fail for pacing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..observability.outage import OutageLog
from .pacing import RateLimiter, cell_of, next_slot

if TYPE_CHECKING:
    from ..storage.db import Database

log = logging.getLogger(__name__)

ROUNDING = 1e-3
"""Waits shorter than this are none: epoch seconds as floats are only exact to ~0.2 µs."""

_UPSERT = (
    "INSERT INTO pacing (pace_key, tat, updated_at) VALUES (?, ?, ?) "
    "ON CONFLICT (pace_key) DO UPDATE SET tat = excluded.tat, updated_at = excluded.updated_at"
)


class SQLPacer:
    """The dispatcher's `Pacer` for several processes on one database."""

    def __init__(self, db: Database, fallback: RateLimiter) -> None:
        self.db = db
        self.fallback = fallback
        self.outage = OutageLog(log, "database (pacing)")

    async def reserve(
        self, key: str, per_second: float | None, max_wait: float, burst: float | None = None
    ) -> float | None:
        if not per_second or per_second <= 0:
            return 0.0
        cell = cell_of(per_second, burst)
        try:
            async with self.db.transaction():
                row = await self.db.fetchone("SELECT tat FROM pacing WHERE pace_key = ?", (key,))
                now = self.fallback.clock.now()
                start, tat = next_slot(float(row[0]) if row else None, now, cell)
                wait = start - now
                if wait < ROUNDING:
                    wait = 0.0
                if wait <= max_wait:
                    await self.db.execute(_UPSERT, (key, tat, now))
        except Exception as exc:
            self.outage.failed(exc, "each process paces itself")
            return self.fallback.take(key, per_second, max_wait, burst)
        self.outage.recovered()
        return wait if wait <= max_wait else None


__all__ = ["SQLPacer"]
