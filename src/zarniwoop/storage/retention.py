"""Retention: one job for every ledger the database keeps — provider calls, LLM usage and its
traces, stale quota windows, the OAuth server's expired requests, codes and refresh tokens and its
never-used clients — each table a `RetentionRule`.

    rules = [RetentionRule("research_call_records", "started_at", days=per_scope, per_scope=True), ...]
    removed = await prune_if_due(db, rules, min_interval=86400)   # {"research_call_records": 3, ...}; None: not due
    task = start_retention_loop(db, lambda: rules, interval=lambda: 3600.0)   # a server's periodic run

Two triggers, one claim: a server purges at start and then every interval (`ai.usage.purgeIntervalSeconds`,
default 3600); a CLI command purges at start when no process has done so for a day. Whoever runs
first claims the run in `maintenance_runs` with a compare-and-set, so replicas and CLI processes
sharing a database (SQLite or PostgreSQL) never purge twice in one interval, and a CLI start that
is not due costs one indexed read.

The rules are data because the days come from settings (per scope for the audit, system-wide for
LLM usage) that live above this layer: the runtime builds them (`runtime.retention_rules`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..contract.query import SearchScope

if TYPE_CHECKING:
    from .db import Database

log = logging.getLogger(__name__)

TASK = "usage.retention"
QUOTA_COUNTER_KEEP_DAYS = 62
"""Quota windows older than this (two months) are of no use to anyone."""
CLI_INTERVAL_SECONDS = 86400.0
"""A CLI start purges at most once a day."""


@dataclass(frozen=True, slots=True)
class RetentionRule:
    """Rows of `table` whose `time_column` is older than `days` go.

    `per_scope`: the days are looked up per (tenant, project) found in the table; otherwise once,
    for the system scope. `bound` turns the cutoff (epoch seconds) into the column's stored form.
    `companions` are tables cut at the same moment on the same column (a usage record's traces).
    `where` narrows the rows (`used_at IS NULL`). `expiry`: `time_column` holds when each row
    expires (a task's TTL, an OAuth code's), so rows past it go and `days` is not read."""

    table: str
    time_column: str
    days: Callable[[SearchScope], float]
    per_scope: bool = False
    bound: Callable[[float], Any] = float
    companions: tuple[str, ...] = ()
    where: str = ""
    expiry: bool = False


def iso_bound(epoch: float) -> str:
    """The cutoff for a column holding ISO-8601 UTC text (compared as text)."""
    return datetime.fromtimestamp(epoch, UTC).isoformat()


async def prune(db: Database, rules: Sequence[RetentionRule], *, now: float) -> dict[str, int]:
    """Apply every rule once; rows deleted per table (companions included)."""
    removed: dict[str, int] = {}
    for rule in rules:
        scopes = (
            [
                SearchScope(t, p)
                for t, p in await db.fetchall(f"SELECT DISTINCT tenant, project FROM {rule.table}")
            ]
            if rule.per_scope
            else [None]
        )
        deleted = 0
        for scope in scopes:
            cutoff = rule.bound(
                now if rule.expiry else now - max(1, rule.days(scope or SearchScope())) * 86400
            )
            where, params = f"{rule.time_column} < ?", [cutoff]
            if rule.where:
                where = f"{where} AND {rule.where}"
            if scope is not None:
                where, params = (
                    f"tenant = ? AND project = ? AND {where}",
                    [scope.tenant, scope.project, cutoff],
                )
            deleted += max(0, await db.execute(f"DELETE FROM {rule.table} WHERE {where}", params))
            for companion in rule.companions:
                removed[companion] = removed.get(companion, 0) + max(
                    0, await db.execute(f"DELETE FROM {companion} WHERE {where}", params)
                )
        removed[rule.table] = deleted
    if any(removed.values()):
        log.info("retention: deleted %s", ", ".join(f"{n} from {t}" for t, n in removed.items() if n))
    return removed


async def claim(db: Database, *, min_interval: float, now: datetime, task: str = TASK) -> bool:
    """Record `now` as `task`'s last run unless another process ran it within `min_interval`: one
    run per interval across every replica and CLI process sharing the database."""
    due_before = (now - timedelta(seconds=min_interval)).isoformat()
    claimed = await db.execute(
        "INSERT INTO maintenance_runs (task, ran_at) VALUES (?, ?) ON CONFLICT (task) DO UPDATE "
        "SET ran_at = excluded.ran_at WHERE maintenance_runs.ran_at <= ?",
        (task, now.isoformat(), due_before),
    )
    return claimed > 0


async def prune_if_due(
    db: Database, rules: Sequence[RetentionRule], *, min_interval: float, now: float | None = None
) -> dict[str, int] | None:
    """Prune when no process has within `min_interval`; rows deleted per table, None if not due."""
    moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    row = await db.fetchone("SELECT ran_at FROM maintenance_runs WHERE task = ?", (TASK,))
    if row is not None and datetime.fromisoformat(row[0]) > moment - timedelta(seconds=min_interval):
        return None  # the cheap path: one read
    if not await claim(db, min_interval=min_interval, now=moment):
        return None  # another process got there first
    return await prune(db, rules, now=moment.timestamp())


async def _loop(
    db: Database,
    rules: Callable[[], Sequence[RetentionRule]],
    interval: Callable[[], float],
    refresh: Callable[[], Any] | None,
) -> None:
    while True:
        if refresh is not None:
            with contextlib.suppress(Exception):
                await refresh()
        seconds = interval()
        try:
            # A little slack: a replica waking a moment early still finds the run due.
            await prune_if_due(db, rules(), min_interval=seconds * 0.9)
        except Exception as exc:  # the database may be briefly away: try again next round
            log.warning("retention purge failed: %s", type(exc).__name__)
        await asyncio.sleep(seconds)


def start_retention_loop(
    db: Database,
    rules: Callable[[], Sequence[RetentionRule]],
    *,
    interval: Callable[[], float],
    refresh: Callable[[], Any] | None = None,
) -> asyncio.Task[None]:
    """A server's periodic purge (first run now); `rules` and `interval` are read each round, after
    `refresh` (the settings). Cancel the task, or `stop_retention_loop`, to stop it."""
    return asyncio.get_running_loop().create_task(
        _loop(db, rules, interval, refresh), name="zarniwoop-retention"
    )


async def stop_retention_loop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


__all__ = [
    "CLI_INTERVAL_SECONDS",
    "QUOTA_COUNTER_KEEP_DAYS",
    "RetentionRule",
    "claim",
    "iso_bound",
    "prune",
    "prune_if_due",
    "start_retention_loop",
    "stop_retention_loop",
]
