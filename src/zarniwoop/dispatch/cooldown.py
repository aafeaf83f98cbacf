"""Cooldowns: which failures bench a provider for a modality, for how long, and where that is stored.

Subject `research:<instance>:<modality>` per project scope — modality- and instance-isolated, so
an IMAGE 429 from serper-main does not cut off its WEB searches, nor serper-eu's.

Lengths (DESIGN §5): 429 → `Retry-After` (capped at 1 h) else 60 s; 401/403 → 30 min;
5xx, network errors, timeouts → 30 s doubling per consecutive failure up to 10 min;
malformed body → 5 min — one table with LLM failover's, `limits/failure_policy.py`.
A renewed cooldown never shortens one already running. The Redis form is `cooldown_redis.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..limits.failure_policy import bench

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..storage.db import Database


def cooldown_seconds(error: BaseException, streak: int) -> float:
    """How long to bench a provider after `error`, the `streak`-th consecutive failure (1-based)."""
    return bench(error).seconds(streak)


@dataclass(frozen=True, slots=True)
class Cooldown:
    subject: str
    until: float
    reason: str
    streak: int

    def active(self, now: float) -> bool:
        return self.until > now


class CooldownStore(Protocol):
    async def get_many(self, scope: SearchScope, subjects: list[str]) -> dict[str, Cooldown]: ...

    async def record_failure(
        self, scope: SearchScope, subject: str, error: BaseException, reason: str, now: float
    ) -> Cooldown: ...

    async def record_success(self, scope: SearchScope, subject: str) -> None: ...

    async def clear(self, scope: SearchScope) -> None: ...


class SQLCooldownStore:
    """Cooldowns in the database, so separate CLI processes honour each other's."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def get_many(self, scope: SearchScope, subjects: list[str]) -> dict[str, Cooldown]:
        if not subjects:
            return {}
        marks = ",".join("?" * len(subjects))
        rows = await self.db.fetchall(
            f"SELECT subject, until_epoch, reason, streak FROM cooldowns WHERE tenant = ? AND project = ? "
            f"AND subject IN ({marks})",
            (scope.tenant, scope.project, *subjects),
        )
        return {r[0]: Cooldown(r[0], float(r[1]), r[2], int(r[3])) for r in rows}

    async def record_failure(
        self, scope: SearchScope, subject: str, error: BaseException, reason: str, now: float
    ) -> Cooldown:
        async with self.db.transaction() as tx:
            row = await tx.fetchone(
                "SELECT until_epoch, streak FROM cooldowns WHERE tenant = ? AND project = ? AND subject = ?",
                (scope.tenant, scope.project, subject),
            )
            streak = (int(row[1]) if row else 0) + 1
            until = max(now + cooldown_seconds(error, streak), float(row[0]) if row else 0.0)
            await tx.execute(
                "INSERT INTO cooldowns (tenant, project, subject, until_epoch, reason, streak, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, project, subject) DO UPDATE SET "
                "until_epoch = excluded.until_epoch, reason = excluded.reason, streak = excluded.streak, "
                "updated_at = excluded.updated_at",
                (scope.tenant, scope.project, subject, until, reason, streak, now),
            )
        return Cooldown(subject, until, reason, streak)

    async def record_success(self, scope: SearchScope, subject: str) -> None:
        await self.db.execute(
            "DELETE FROM cooldowns WHERE tenant = ? AND project = ? AND subject = ?",
            (scope.tenant, scope.project, subject),
        )

    async def clear(self, scope: SearchScope) -> None:
        await self.db.execute(
            "DELETE FROM cooldowns WHERE tenant = ? AND project = ?", (scope.tenant, scope.project)
        )
