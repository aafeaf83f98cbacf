"""Retention of LLM usage records and traces: `ai.usage.retentionDays` (default 90), enforced.

Two triggers, one claim: a server (`zarniwoop serve`, any app built by `create_app`) purges at start
and then every `ai.usage.purgeIntervalSeconds` (default 3600); a CLI command purges at start when
no process has done so for a day. Whoever purges first claims the run in `maintenance_runs` with a
compare-and-set, so replicas and CLI processes sharing a database (SQLite or PostgreSQL) never
purge twice in one interval, and a CLI start that is not due costs one indexed read.

    removed = await purge_if_due(db, settings, min_interval=86400)   # None: not due
    task = start_retention_loop(db, settings)                         # a server's periodic purge
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from ..config.keys import SYSTEM_TENANT, TENANT_LEVEL
from ..contract.query import SearchScope
from .usage import DEFAULT_RETENTION_DAYS, RETENTION_KEY, UsageStore

if TYPE_CHECKING:
    from ..config.settings import SettingService
    from ..storage.db import Database

log = logging.getLogger("zarniwoop.llm.retention")

TASK = "llm.usage.purge"
INTERVAL_KEY = "ai.usage.purgeIntervalSeconds"
DEFAULT_INTERVAL_SECONDS = 3600.0
CLI_INTERVAL_SECONDS = 86400.0
"""A CLI start purges at most once a day."""


def retention_days(settings: SettingService) -> int:
    system = settings.scoped(SearchScope(SYSTEM_TENANT, TENANT_LEVEL))
    return max(1, system.get_int(RETENTION_KEY, DEFAULT_RETENTION_DAYS))


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


async def purge_if_due(
    db: Database, settings: SettingService, *, min_interval: float, now: datetime | None = None
) -> int | None:
    """Purge records and traces past the retention when due; how many records went, None if not due."""
    now = now or datetime.now(UTC)
    row = await db.fetchone("SELECT ran_at FROM maintenance_runs WHERE task = ?", (TASK,))
    if row is not None and datetime.fromisoformat(row[0]) > now - timedelta(seconds=min_interval):
        return None  # the cheap path: one read
    if not await claim(db, min_interval=min_interval, now=now):
        return None  # another process got there first
    days = retention_days(settings)
    removed = await UsageStore(db).purge(days, now=now)
    if removed:
        log.info("purged %d LLM usage records (and their traces) older than %d days", removed, days)
    return removed


async def _loop(db: Database, settings: SettingService) -> None:
    while True:
        with contextlib.suppress(Exception):
            await settings.refresh(max_age=1.0)
        system = settings.scoped(SearchScope(SYSTEM_TENANT, TENANT_LEVEL))
        interval = system.get_float(INTERVAL_KEY, DEFAULT_INTERVAL_SECONDS) or DEFAULT_INTERVAL_SECONDS
        try:
            # A little slack: a replica waking a moment early still finds the run due.
            await purge_if_due(db, settings, min_interval=interval * 0.9)
        except Exception as exc:  # the database may be briefly away: try again next round
            log.warning("LLM usage retention purge failed: %s", type(exc).__name__)
        await asyncio.sleep(interval)


def start_retention_loop(db: Database, settings: SettingService) -> asyncio.Task[None]:
    """A server's periodic purge (first run now); cancel the task to stop it."""
    return asyncio.get_running_loop().create_task(_loop(db, settings), name="zarniwoop-llm-retention")


async def stop_retention_loop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
