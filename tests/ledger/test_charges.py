"""The group commit of LLM charges (`ledger/charges.py`, issue 42): the charges of calls finishing at
the same moment are written in one batch — every hold released, every line charged as if one after
another, every record readable by its id when its call returns — and one record the database
refuses takes no other charge with it. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncIterator, Sequence

import pytest

from zarniwoop.ledger import UsageRecord, UsageStore
from zarniwoop.limits.budgets import Hold, LineStatus, QuotaLine
from zarniwoop.limits.budgets_sql import SQLBudgets
from zarniwoop.storage.db import Database, SQLiteDatabase, apply_migrations

pytestmark = pytest.mark.anyio

ACCOUNT = QuotaLine("account", "mike", "daily", 1000)
PROJECT = QuotaLine("project", "review", "monthly", None)


class CountedBudgets(SQLBudgets):
    """Says how many holds each `settle_many` wrote at once."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.batches: list[int] = []

    async def settle_many(self, settles: Sequence[tuple[Hold, int]]) -> list[list[LineStatus]]:
        self.batches.append(len(settles))
        return await super().settle_many(settles)


@pytest.fixture
async def db(tmp_path, database_url) -> AsyncIterator[Database]:
    if database_url is None:
        sqlite = SQLiteDatabase(tmp_path / "charges.db")
        await apply_migrations(sqlite)
        yield sqlite
        await sqlite.aclose()
        return
    from zarniwoop.storage.postgres import PostgresDatabase

    postgres = PostgresDatabase(database_url)
    await postgres.migrate()
    yield postgres
    await postgres.aclose()


def record(tenant: str, tokens: int, **fields: object) -> UsageRecord:
    values: dict = dict(account="mike", project="review", team=None, provider="openai", instance="openai")
    values.update(model="gpt-4o", purpose="default", tokens_input=tokens, tokens_output=0, cost_usd=None)
    values.update(credential_source="tenant", duration_ms=5)
    return UsageRecord(tenant, **(values | fields))


async def test_charges_queued_at_once_are_one_batch_each_seeing_its_own_usage(db) -> None:
    tenant = "t" + secrets.token_hex(4)
    budgets, usage = CountedBudgets(db), UsageStore(db)
    holds = [await budgets.reserve(tenant, [ACCOUNT, PROJECT], 100) for _ in range(3)]
    records = [record(tenant, tokens) for tokens in (10, 20, 30)]
    charged = await asyncio.gather(
        *(usage.charges.charge(budgets, h, r.tokens_input, r) for h, r in zip(holds, records, strict=True)),
        usage.charges.charge(budgets, None, 0, record(tenant, 0, outcome="error")),  # no hold: a record only
    )
    assert budgets.batches == [3]
    assert [[(s.line.level, s.used) for s in statuses] for statuses in charged] == [
        [("account", 10)],
        [("account", 30)],
        [("account", 60)],
        [],
    ]
    assert [(s.used, s.held) for s in await budgets.status(tenant, [ACCOUNT, PROJECT])] == [(60, 0), (60, 0)]
    for each in records:
        stored = await usage.get(each.id)
        assert stored is not None and stored.tokens_input == each.tokens_input
    assert len(await usage.query(tenant)) == 4


async def test_a_refused_record_takes_no_other_charge_with_it(db, caplog) -> None:
    tenant = "t" + secrets.token_hex(4)
    budgets, usage = CountedBudgets(db), UsageStore(db)
    holds = [await budgets.reserve(tenant, [ACCOUNT], 100) for _ in range(3)]
    good, refused, also_good = record(tenant, 10), record(None, 20), record(tenant, 30)  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR, logger="zarniwoop.ledger.charges"):
        charged = await asyncio.gather(
            *(
                usage.charges.charge(budgets, hold, each.tokens_input, each)
                for hold, each in zip(holds, (good, refused, also_good), strict=True)
            )
        )
    assert [[s.used for s in statuses] for statuses in charged] == [[10], [30], [60]]  # every charge stands
    assert [(s.used, s.held) for s in await budgets.status(tenant, [ACCOUNT])] == [(60, 0)]
    assert {r.id for r in await usage.query(tenant)} == {good.id, also_good.id}
    assert [r.getMessage() for r in caplog.records] == [f"LLM usage record {refused.id} could not be written"]
