"""Pacing shared through the database: the GCRA of `pacing.LocalPacer`, its TAT in a table.

`zarniwoop serve --workers N` runs N processes on one database; each paced alone, a provider
documenting "1 call per second" would see N. `SQLPacer` keeps one theoretical arrival time per
(endpoint, credential digest) in the `pacing` table and moves it with one conditional upsert
(atomic across processes: SQLite's write lock, PostgreSQL's row lock), on the wall
clock (`Clock.now`), which every process on the host — and every host on a PostgreSQL — shares.

It costs one small write per paced call of a slow endpoint (a fast one leases a few
slots ahead, one transaction for up to `LEASE_MAX` calls), and is used only when several
processes serve (`Runtime.open(share_pacing=True)`); with Redis configured `pacing_redis.RedisPacer`
does the same in Redis. If the database is unreachable or locked past its busy wait, the process
paces itself alone until it is back (logged once): searches never fail for pacing.
"""

from __future__ import annotations

import collections
import logging
from typing import TYPE_CHECKING

from ..observability.outage import OutageLog
from .pacing import Cell, LocalPacer, cell_of, next_slot

if TYPE_CHECKING:
    from ..storage.db import Database

log = logging.getLogger(__name__)

ROUNDING = 1e-3
"""Waits shorter than this are none: epoch seconds as floats are only exact to ~0.2 µs."""
LEASE_SECONDS = 0.005
LEASE_MAX = 32
"""A fast endpoint's slots are taken from the table up to 5 ms (and at most 32) ahead at once and
handed out in the process: at 100,000 calls/s one transaction per 32 calls instead of one per
call, while the other workers wait at most those 5 ms longer for a slot. An endpoint slower than
400 calls/s — every documented provider limit — takes one slot per call; a lease left unused
goes stale after 5 ms (it is never spent in a bunch)."""

_UPSERT = (
    "INSERT INTO pacing (pace_key, tat, updated_at) VALUES (?, ?, ?) "
    "ON CONFLICT (pace_key) DO UPDATE SET tat = excluded.tat, updated_at = excluded.updated_at"
)


_TAKE_ONE = (
    # the GCRA step in one statement: base = max(TAT, now); take the slot (TAT := base + T) only if
    # it starts within max_wait (base - τ - now <= max_wait); the new TAT comes back, or no row
    "INSERT INTO pacing (pace_key, tat, updated_at) VALUES (?, ?, ?) "
    "ON CONFLICT (pace_key) DO UPDATE SET "
    "tat = (CASE WHEN pacing.tat > ? THEN pacing.tat ELSE ? END) + ?, updated_at = excluded.updated_at "
    "WHERE (CASE WHEN pacing.tat > ? THEN pacing.tat ELSE ? END) - ? - ? <= ? "
    "RETURNING tat"
)
MAX_WAIT_BOUND = 1e9
"""`max_wait` as a number SQL can compare with (it may be infinite)."""


class SQLPacer:
    """The dispatcher's `Pacer` for several processes on one database."""

    def __init__(self, db: Database, fallback: LocalPacer) -> None:
        self.db = db
        self.fallback = fallback
        self.outage = OutageLog(log, "database (pacing)")
        self._leased: dict[str, collections.deque[float]] = {}
        """Start slots taken from the table ahead of need (fast endpoints only), by key."""

    async def reserve(
        self, key: str, per_second: float | None, max_wait: float, burst: float | None = None
    ) -> float | None:
        if not per_second or per_second <= 0:
            return 0.0
        now = self.fallback.clock.now()
        leased = self._leased.get(key)
        while leased:  # a slot leased earlier, unless it is too old to use without bunching
            slot = leased.popleft()
            if slot >= now - LEASE_SECONDS:
                wait = 0.0 if slot - now < ROUNDING else slot - now
                if wait <= max_wait:
                    return wait
                leased.appendleft(slot)
                return None
        cell = cell_of(per_second, burst)
        lease = max(1, min(LEASE_MAX, int(per_second * LEASE_SECONDS)))
        try:
            taken = await (
                self._take_one(key, cell, max_wait) if lease == 1 else self._lease(key, cell, max_wait, lease)
            )
        except Exception as exc:
            self.outage.failed(exc, "each process paces itself")
            return self.fallback.take(key, per_second, max_wait, burst)
        self.outage.recovered()
        return taken

    async def _take_one(self, key: str, cell: Cell, max_wait: float) -> float | None:
        """One slot in one statement (no transaction round trips): the common case."""
        now = self.fallback.clock.now()
        bound = min(max_wait, MAX_WAIT_BOUND) + ROUNDING  # as `_lease` rounds: a wait under it is none
        rows = await self.db.fetchall(
            _TAKE_ONE,
            (key, now + cell.interval, now, now, now, cell.interval, now, now, cell.tolerance, now, bound),
        )
        if not rows:
            return None
        start = max(now, float(rows[0][0]) - cell.interval - cell.tolerance)
        return 0.0 if start - now < ROUNDING else start - now

    async def _lease(self, key: str, cell: Cell, max_wait: float, lease: int) -> float | None:
        """The first slot for this call and up to `lease - 1` more within `LEASE_SECONDS`, kept."""
        async with self.db.transaction():
            row = await self.db.fetchone("SELECT tat FROM pacing WHERE pace_key = ?", (key,))
            now = self.fallback.clock.now()
            start, tat = next_slot(float(row[0]) if row else None, now, cell)
            wait = 0.0 if start - now < ROUNDING else start - now
            if wait > max_wait:
                return None
            ahead: list[float] = []
            while len(ahead) + 1 < lease:
                later, after = next_slot(tat, now, cell)
                if later > now + LEASE_SECONDS:
                    break
                ahead.append(later)
                tat = after
            await self.db.execute(_UPSERT, (key, tat, now))
        if ahead:
            self._leased.setdefault(key, collections.deque()).extend(ahead)
        return wait


__all__ = ["SQLPacer"]
