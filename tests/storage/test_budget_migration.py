"""Migration 0034 (one budget engine) keeps every counter: a database written the way the code
before it wrote one — migrations up to 0033, counters and usage rows through that code's own SQL —
reads the same through the engine after it, on SQLite and on PostgreSQL."""

from __future__ import annotations

import uuid

import pytest

from zarniwoop.limits.budgets import Bucket, QuotaLine
from zarniwoop.limits.budgets_sql import SQLBudgets, SQLCallBudgets
from zarniwoop.limits.call_budgets import BudgetWindow
from zarniwoop.storage.db import _split_sql, migration_scripts, open_database

from ..support.backends import _pg

pytestmark = pytest.mark.anyio

BEFORE = 33
"""The last migration before the engine was one."""

# The statements the code before 0034 ran (limits/call_budgets.py, limits/token_budgets.py).
OLD_CALL_RESERVE = (
    "INSERT INTO quota_counters (tenant, project, instance_id, period, window_start, used, updated_at) "
    "VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (tenant, project, instance_id, period, window_start) "
    "DO UPDATE SET used = quota_counters.used + 1, updated_at = excluded.updated_at "
    "WHERE quota_counters.used < ? RETURNING used"
)
OLD_TOKEN_CHARGE = (
    "INSERT INTO llm_quota_usage (tenant, level, owner, period, bucket, used) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (tenant, level, owner, period, bucket) DO UPDATE SET used = llm_quota_usage.used + excluded.used"
)
OLD_HOLD = (
    "INSERT INTO llm_quota_holds (id, tenant, level, owner, period, bucket, tokens, expires_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
OLD_ALERT = (
    "INSERT INTO llm_quota_alerts (tenant, level, owner, period, bucket, threshold, sent_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
NOW = 1_743_465_600.0  # 2025-04-01T00:00:00Z
DAY = Bucket("daily", "2025-04-01", NOW + 86400)
MONTH = Bucket("monthly", "2025-04", 1_746_057_600.0)


async def _migrate_up_to(db, last: int) -> None:
    """What `migrate()` did on the code before 0034: every migration up to `last`."""
    if db.dialect == "postgres" and db.schema:
        await db.execute(f'CREATE SCHEMA IF NOT EXISTS "{db.schema}"')
    await db.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for number, name, sql in migration_scripts(db.dialect):
        if number > last:
            break
        for statement in _split_sql(sql):
            await db.execute(statement)
        await db.execute(
            "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, CURRENT_TIMESTAMP)",
            (number, name),
        )


async def _write_as_before(db) -> None:
    for _ in range(3):  # three searches on the deployment's serper budget, one on acme's own
        await db.fetchone(OLD_CALL_RESERVE, ("_system", "_tenant", "serper", "day", "2025-04-01", NOW, 100))
        await db.fetchone(OLD_CALL_RESERVE, ("_system", "_tenant", "serper", "month", "2025-04", NOW, 100))
    await db.fetchone(OLD_CALL_RESERVE, ("acme", "review", "brave", "day", "2025-04-01", NOW, 10))
    await db.fetchone(OLD_CALL_RESERVE, ("acme", "review", "brave", "day", "2025-03-31", NOW - 3600, 10))
    for level, owner, period, bucket, used in (
        ("account", "mike", "daily", "2025-04-01", 142_000),
        ("project", "review", "monthly", "2025-04", 4_998_000),
        ("tenant", "_tenant", "monthly", "2025-04", 41),
    ):
        await db.execute(OLD_TOKEN_CHARGE, ("acme", level, owner, period, bucket, used))
    await db.execute(OLD_HOLD, ("h1", "acme", "account", "mike", "daily", "2025-04-01", 500, 4e9))
    await db.execute(OLD_ALERT, ("acme", "account", "mike", "daily", "2025-04-01", 80, "2025-04-01T00:00:00"))
    columns = (
        "id, tenant, account, project, team, session_id, think_process_id, node_id, provider, instance, model, "
        "purpose, tokens_input, tokens_output, tokens_total, cost_usd, credential_source, duration_ms, outcome, "
        "error, failover, attempts, created_at"
    )
    for i in range(3):
        await db.execute(
            f"INSERT INTO llm_usage_records ({columns}) VALUES ({', '.join('?' * 23)})",
            (f"u{i}", "acme", "mike", "review", None, None, None, None, "openai", "openai", "gpt-4o", "execution",
             5, 7, 12, 0.25, "account", 10, "ok", None, "[]", "[]", "2025-04-01T00:00:0{i}"),
        )  # fmt: skip
        await db.execute(
            "INSERT INTO research_call_records (id, tenant, project, instance_id, protocol, modality, tier, "
            "query_hash, hit_count, ok, outcome, error_message, started_at, duration_ms) "
            "VALUES (?, 'acme', 'review', 'brave', 'brave', 'WEB', 'NORMAL', 'h', 3, ?, 'success', NULL, ?, 40)",
            (f"r{i}", True if db.dialect == "postgres" else 1, NOW + i),
        )


async def test_migration_0034_keeps_every_counter_and_usage_row(database_url, tmp_path):
    if database_url:  # a schema of its own: the session's has every migration applied already
        base = database_url.rsplit("?schema=", 1)[0]
        schema = f"zw_mig_{uuid.uuid4().hex[:10]}"
        database_url = f"{base}?schema={schema}"
    db = open_database(database_url, tmp_path)
    try:
        await _migrate_up_to(db, BEFORE)
        await _write_as_before(db)
        assert await db.migrate() == max(n for n, _, _ in migration_scripts(db.dialect))

        # Call counters: through the engine, and through the `quota_counters` view, as before.
        calls = SQLCallBudgets(db)
        system = [
            BudgetWindow("_system", "_tenant", p, s, 100, 0.0)
            for p, s in (("day", "2025-04-01"), ("month", "2025-04"))
        ]
        assert await calls.used("serper", system) == [3, 3]
        assert await calls.used(
            "brave", [BudgetWindow("acme", "review", "daily", "2025-04-01", 10, 0.0)]
        ) == [1]
        assert await calls.used(
            "brave", [BudgetWindow("acme", "review", "daily", "2025-03-31", 10, 0.0)]
        ) == [1]
        rows = await db.fetchall(
            "SELECT tenant, project, instance_id, period, window_start, used FROM quota_counters "
            "ORDER BY instance_id, window_start, period"
        )
        assert [tuple(r) for r in rows] == [
            ("acme", "review", "brave", "day", "2025-03-31", 1),
            ("acme", "review", "brave", "day", "2025-04-01", 1),
            ("_system", "_tenant", "serper", "month", "2025-04", 3),
            ("_system", "_tenant", "serper", "day", "2025-04-01", 3),
        ]
        # The next search counts on from the migrated counter; the budget still binds at its limit.
        assert await calls.reserve("serper", system, NOW) == [4, 4]
        assert await calls.reserve(
            "brave", [BudgetWindow("acme", "review", "day", "2025-04-01", 2, 0.0)], NOW
        ) == [2]
        assert (
            await calls.reserve("brave", [BudgetWindow("acme", "review", "day", "2025-04-01", 2, 0.0)], NOW)
            is None
        )

        # Token counters, the live hold and the alert already sent.
        tokens = SQLBudgets(db)
        lines = [
            QuotaLine("account", "mike", "daily", 500_000),
            QuotaLine("project", "review", "monthly", 5_000_000),
            QuotaLine("tenant", "_tenant", "monthly", None),
        ]
        statuses = await tokens.status("acme", lines, buckets={"daily": DAY, "monthly": MONTH})
        assert [(s.used, s.held) for s in statuses] == [(142_000, 500), (4_998_000, 0), (41, 0)]
        assert not await tokens.mark_alert("acme", statuses[0], 80)  # announced before: not again
        assert await tokens.mark_alert("acme", statuses[0], 95)

        # Usage rows untouched.
        assert await db.fetchone("SELECT COUNT(*), SUM(tokens_total) FROM llm_usage_records") == (3, 36)
        assert await db.fetchone("SELECT COUNT(*), SUM(hit_count) FROM research_call_records") == (3, 9)
    finally:
        await db.aclose()
        if database_url:
            await _pg(base, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
