"""The quota ledger on SQLite and on Redis: all-or-nothing reserve across levels, settle charges
every level, lapsed holds come back, and concurrent callers — in one process or in two — never
overspend."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from zarniwoop.contract.errors import QuotaExceededError
from zarniwoop.limits.budgets_sql import SQLBudgets as SQLTokenBudgets
from zarniwoop.limits.token_budgets import LineStatus, QuotaLine
from zarniwoop.storage.db import SQLiteDatabase, apply_migrations

from ..support.clock import TestClock
from ..support.llm import redis_token_budgets
from ..support.paths import REPO_ROOT

pytestmark = pytest.mark.anyio

ACCOUNT = QuotaLine("account", "mike", "daily", 1000)
PROJECT = QuotaLine("project", "review", "monthly", 500)
TEAM = QuotaLine("team", "nlp", "monthly", None)
TENANT = QuotaLine("tenant", "_tenant", "monthly", None)
LINES = [ACCOUNT, PROJECT, TEAM, TENANT]


@pytest.fixture(params=["sqlite", "postgres", "redis"])
async def ledger(request, tmp_path) -> AsyncIterator[tuple[object, str]]:
    tenant = "t" + secrets.token_hex(4)
    if request.param == "sqlite":
        db = SQLiteDatabase(tmp_path / "q.db")
        await apply_migrations(db)
        yield SQLTokenBudgets(db), tenant
        await db.aclose()
        return
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")  # skips, saying why, without a server or the module
        from zarniwoop.storage.postgres import PostgresDatabase

        db = PostgresDatabase(url)
        await db.migrate()
        yield SQLTokenBudgets(db), tenant
        await db.aclose()
        return
    url = request.getfixturevalue("redis_url")
    async with redis_token_budgets(url, tenant) as ledger:
        yield ledger, tenant


async def statuses(ledger, tenant) -> dict[str, LineStatus]:
    return {f"{s.line.level}.{s.line.period}": s for s in await ledger.status(tenant, LINES)}


async def test_reserve_then_settle_charges_every_level(ledger) -> None:
    ledger, tenant = ledger
    hold = await ledger.reserve(tenant, LINES, 300)
    held = await statuses(ledger, tenant)
    assert held["account.daily"].held == 300 and held["project.monthly"].held == 300
    assert held["team.monthly"].held == 0  # no limit: no hold needed

    after = await ledger.settle(hold, 120)
    assert {(s.line.level, s.used, s.held) for s in after} == {("account", 120, 0), ("project", 120, 0)}
    now = await statuses(ledger, tenant)
    assert [now[k].used for k in ("account.daily", "project.monthly", "team.monthly", "tenant.monthly")] == [
        120
    ] * 4


async def test_several_holds_settled_at_once_each_see_the_usage_after_their_own(ledger) -> None:
    """`settle_many` (the gateway's group commit): one write for all, each hold's statuses as if
    settled one after another in order, every hold released."""
    ledger, tenant = ledger
    other = QuotaLine("account", "zaphod", "daily", 1000)
    holds = [
        await ledger.reserve(tenant, LINES, 100),
        await ledger.reserve(tenant, [other, PROJECT], 100),
        await ledger.reserve(tenant, LINES, 100),
    ]
    settled = await ledger.settle_many(list(zip(holds, (10, 20, 30), strict=True)))
    assert [[(s.line.level, s.line.owner, s.used) for s in each] for each in settled] == [
        [("account", "mike", 10), ("project", "review", 10)],
        [("account", "zaphod", 20), ("project", "review", 30)],
        [("account", "mike", 40), ("project", "review", 60)],
    ]
    now = await statuses(ledger, tenant)
    assert [(now[k].used, now[k].held) for k in ("account.daily", "project.monthly", "team.monthly")] == [
        (40, 0),
        (60, 0),
        (40, 0),
    ]


async def test_a_refusal_names_the_first_level_over_and_holds_nothing(ledger) -> None:
    ledger, tenant = ledger
    await ledger.charge(tenant, PROJECT, 450)
    with pytest.raises(QuotaExceededError) as caught:
        await ledger.reserve(tenant, LINES, 100)
    assert caught.value.level == "project"
    assert (
        caught.value.message
        == "Project quota exhausted: project/review monthly 450 of 500 tokens used, this call needs up to 100"
    )
    now = await statuses(ledger, tenant)
    assert now["account.daily"].held == 0  # all or nothing: the account line got no hold either
    hold = await ledger.reserve(tenant, LINES, 50)  # what fits, still fits
    await ledger.release(hold)
    assert (await statuses(ledger, tenant))["project.monthly"].held == 0


async def test_holds_of_calls_in_flight_count(ledger) -> None:
    ledger, tenant = ledger
    first = await ledger.reserve(tenant, LINES, 300)
    with pytest.raises(QuotaExceededError):
        await ledger.reserve(tenant, LINES, 300)  # 300 held + 300 > 500
    await ledger.release(first)
    await ledger.reserve(tenant, LINES, 300)


async def test_a_crashed_callers_hold_lapses(ledger) -> None:
    """On the ledger's own (injected) clock: no real wait, so a busy machine cannot lapse it early."""
    ledger, tenant = ledger
    ledger.clock = clock = TestClock()
    ledger.hold_ttl = 60
    await ledger.reserve(tenant, LINES, 450)  # never settled: the caller "crashed"
    clock.advance(59)
    with pytest.raises(QuotaExceededError):
        await ledger.reserve(tenant, LINES, 100)
    clock.advance(2)
    await ledger.reserve(tenant, LINES, 100)


async def test_alerts_are_announced_once_per_bucket(ledger) -> None:
    ledger, tenant = ledger
    status = LineStatus(PROJECT, datetime.now(UTC).strftime("%Y-%m"), 410)
    assert await ledger.mark_alert(tenant, status, 80) is True
    assert await ledger.mark_alert(tenant, status, 80) is False
    assert await ledger.mark_alert(tenant, status, 95) is True


async def test_fifty_concurrent_reservations_against_a_budget_for_twenty(ledger) -> None:
    ledger, tenant = ledger
    line = QuotaLine("project", "review", "monthly", 20 * 37)

    async def one() -> bool:
        try:
            hold = await ledger.reserve(tenant, [line], 37)
        except QuotaExceededError:
            return False
        await asyncio.sleep(0.01)
        await ledger.settle(hold, 37)
        return True

    results = await asyncio.gather(*(one() for _ in range(50)))
    assert results.count(True) == 20
    assert (await ledger.status(tenant, [line]))[0].used == 20 * 37


async def assert_twenty_ran_and_settled(results: list[dict[str, int]], db, tenant: str) -> None:
    """Of the workers' 50 calls of 50 tokens, 20 ran on the 1,000-token line and its counter says so."""
    assert sum(r["ok"] for r in results) == 20
    assert sum(r["blocked"] for r in results) == 30
    used = await db.fetchone("SELECT used FROM llm_quota_usage WHERE tenant = ?", (tenant,))
    assert used == (1000,)
    await db.aclose()


def run_workers(count: int, args: dict) -> list[dict[str, int]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.llm_worker", json.dumps(args)],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    # every process imports and connects first, then all go together: a barrier, not a guess at
    # how long a start takes (a worker that died says so in its stderr, from communicate below)
    for proc in procs:
        assert proc.stdout is not None and proc.stdin is not None
        if proc.stdout.readline() != "ready\n":
            break
    for proc in procs:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write("go\n")
            proc.stdin.flush()
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


@pytest.mark.slow
async def test_two_processes_share_one_sqlite_budget(tmp_path) -> None:
    db = SQLiteDatabase(tmp_path / "shared.db")
    await apply_migrations(db)
    tenant = "two-proc"
    line = {"level": "project", "owner": "review", "period": "monthly", "limit": 20 * 50}
    results = await asyncio.to_thread(
        run_workers, 2, {"mode": "ledger", "backend": "sqlite", "db": str(tmp_path / "shared.db"), "tenant": tenant,
                         "lines": [line], "tokens": 50, "calls": 25},
    )  # fmt: skip
    await assert_twenty_ran_and_settled(results, db, tenant)


@pytest.mark.slow
async def test_two_processes_share_one_redis_budget(redis_url) -> None:
    tenant = "two-proc-" + secrets.token_hex(4)
    line = {"level": "project", "owner": "review", "period": "monthly", "limit": 20 * 50}
    results = await asyncio.to_thread(
        run_workers, 2, {"mode": "ledger", "backend": "redis", "redis": redis_url, "tenant": tenant,
                         "lines": [line], "tokens": 50, "calls": 25},
    )  # fmt: skip
    assert sum(r["ok"] for r in results) == 20
    assert sum(r["blocked"] for r in results) == 30
    async with redis_token_budgets(redis_url, tenant) as ledger:
        [status] = await ledger.status(tenant, [QuotaLine(**line)])
        assert status.used == 1000 and status.held == 0


@pytest.mark.slow
async def test_two_processes_share_one_postgres_budget(postgres_url) -> None:
    from zarniwoop.storage.postgres import PostgresDatabase

    db = PostgresDatabase(postgres_url)
    await db.migrate()
    tenant = "two-proc"
    line = {"level": "project", "owner": "review", "period": "monthly", "limit": 20 * 50}
    results = await asyncio.to_thread(
        run_workers,
        2,
        {"mode": "ledger", "backend": "postgres", "db": postgres_url, "tenant": tenant, "lines": [line],
         "tokens": 50, "calls": 25},
    )  # fmt: skip
    await assert_twenty_ran_and_settled(results, db, tenant)
