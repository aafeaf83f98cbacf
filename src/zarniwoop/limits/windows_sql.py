"""Admission windows in the database: the embedded default, shared by every process on it.

Without Redis, separate CLI processes (and `serve --workers N`) each had a window of their own, so
`requests_per_minute: 5` let five calls through *per process*. `SQLAdmissionWindows` keeps one row
per admitted attempt and line in `rate_windows` and admits inside one write transaction (SQLite's
`BEGIN IMMEDIATE`, PostgreSQL's advisory-locked transaction): it drops the rows that slid out of
the window, sums the rest, refuses when any line would pass its limit (nothing written: all lines
or none), and otherwise records the attempt on every line. Wall clock (`Clock.now`): every process
on the host shares it.

Outage policy (docs/robustness.md, `windows`): fail open — if the database is unreachable or locked
past its busy wait, the process admits against its own window (`LocalAdmissionWindows`) until it
is back, logged once.
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..contract.errors import DatabaseUnavailableError, RateLimitExceededError
from ..observability.outage import OutageLog
from .clock import Clock
from .windows import LocalAdmissionWindows, RateLine, RateTicket, SharedAdmissionWindows, need_of, no_room

if TYPE_CHECKING:
    from ..storage.db import Database

log = logging.getLogger(__name__)

STORE_ERRORS = (DatabaseUnavailableError, sqlite3.OperationalError)
"""What an unreachable or locked database raises (anything else is a bug and propagates)."""
STALE_SECONDS = 86400.0
"""Now and then rows older than this are dropped whatever their line (owners no longer called)."""

_LINE = "tenant = ? AND level = ? AND owner = ? AND kind = ?"


class SQLAdmissionWindows(SharedAdmissionWindows):
    """Sliding windows in `rate_windows`, shared by every process on the database."""

    store_errors = STORE_ERRORS

    def __init__(
        self, db: Database, *, clock: Clock | None = None, fallback: LocalAdmissionWindows | None = None
    ) -> None:
        self.db = db
        self.clock = clock or Clock()
        self.fallback = fallback or LocalAdmissionWindows(self.clock)
        self.outage = OutageLog(log, "database (LLM rate windows)")

    async def _admit(self, ticket: RateTicket, window: float) -> RateLimitExceededError | None:
        async with self.db.transaction():
            now = self.clock.now()
            for line in ticket.lines:
                key = (ticket.tenant, line.level, line.owner, line.kind)
                await self.db.execute(
                    f"DELETE FROM rate_windows WHERE {_LINE} AND admitted_at <= ?", (*key, now - window)
                )
                rows = await self.db.fetchall(
                    f"SELECT admitted_at, amount FROM rate_windows WHERE {_LINE}", key
                )
                entries = [(float(at), int(amount)) for at, amount in rows]
                if (refusal := no_room(line, ticket.tokens, entries, now, window)) is not None:
                    return refusal  # the lapsed rows' deletion commits: they are gone either way
            await self.db.executemany(
                "INSERT INTO rate_windows (ticket, tenant, level, owner, kind, admitted_at, amount) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        ticket.id,
                        ticket.tenant,
                        line.level,
                        line.owner,
                        line.kind,
                        now,
                        need_of(line, ticket.tokens),
                    )
                    for line in ticket.lines
                ],
            )
            if secrets.randbelow(256) == 0:
                await self.db.execute(
                    "DELETE FROM rate_windows WHERE admitted_at <= ?", (now - max(window, STALE_SECONDS),)
                )
        return None

    async def _settle(self, ticket: RateTicket, token_lines: Sequence[RateLine], tokens: int) -> None:
        await self.db.execute(
            "UPDATE rate_windows SET amount = ? WHERE ticket = ? AND tenant = ? AND kind = 'tokens'",
            (tokens, ticket.id, ticket.tenant),
        )

    async def _release(self, ticket: RateTicket) -> None:
        await self.db.execute(
            "DELETE FROM rate_windows WHERE ticket = ? AND tenant = ?", (ticket.id, ticket.tenant)
        )


__all__ = ["SQLAdmissionWindows"]
