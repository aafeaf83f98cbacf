"""`reserve(token=…)` (issue 42): a reservation that carries a remembered token's check refuses a
revoked token with `RevokedTokenError` and holds nothing — in the database's own statement or
transaction (SQLite, PostgreSQL), or beside the Redis script, the hold given back — and a call with
no limited line checks the token alone. A live token reserves as before."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import pytest

from zarniwoop.contract.errors import QuotaExceededError, RevokedTokenError
from zarniwoop.limits.budgets_memory import MemoryBudgets
from zarniwoop.limits.budgets_sql import SQLBudgets
from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.storage.db import SQLiteDatabase, apply_migrations
from zarniwoop.tenancy.tokens import TokenStore

from ..support.llm import redis_token_budgets

pytestmark = pytest.mark.anyio

LIMITED = QuotaLine("project", "review", "monthly", 1000)
UNLIMITED = QuotaLine("tenant", "_tenant", "monthly", None)


@pytest.fixture(params=["sqlite", "postgres", "redis", "memory"])
def where(request) -> tuple[str, str | None]:
    """The budgets' form and its server's URL (the backends' fixtures skip, saying why, without one)."""
    if request.param == "postgres":
        return "postgres", request.getfixturevalue("postgres_url")
    if request.param == "redis":
        return "redis", request.getfixturevalue("redis_config")["redis_url"]
    return request.param, None


@pytest.fixture
async def stores(where, tmp_path) -> AsyncIterator[tuple[object, TokenStore, str]]:
    """(budgets, the tokens they check, a tenant of the test's own)."""
    form, url = where
    tenant = "t" + secrets.token_hex(4)
    if form == "postgres":
        from zarniwoop.storage.postgres import PostgresDatabase

        db = PostgresDatabase(url)
        await db.migrate()
    else:
        db = SQLiteDatabase(tmp_path / "r.db")
        await apply_migrations(db)
    tokens = TokenStore(db)  # type: ignore[arg-type]
    try:
        if form == "redis":
            assert url is not None
            async with redis_token_budgets(url, tenant) as budgets:
                budgets.token_check = tokens.live
                yield budgets, tokens, tenant
        elif form == "memory":
            budgets = MemoryBudgets()
            budgets.token_check = tokens.live
            yield budgets, tokens, tenant
        else:
            yield SQLBudgets(db), tokens, tenant  # type: ignore[arg-type]
    finally:
        await db.aclose()


async def test_a_live_token_reserves_and_a_revoked_one_holds_nothing(stores) -> None:
    budgets, tokens, tenant = stores
    issued = await tokens.create("acme", "review", "user", account="mike")
    hold = await budgets.reserve(tenant, [LIMITED, UNLIMITED], 300, token=issued.id)
    [status] = await budgets.status(tenant, [LIMITED])
    assert (status.used, status.held) == (0, 300)
    await budgets.release(hold)
    await TokenStore(tokens.db).revoke(issued.id)  # another replica's store
    with pytest.raises(RevokedTokenError):
        await budgets.reserve(tenant, [LIMITED, UNLIMITED], 300, token=issued.id)
    with pytest.raises(RevokedTokenError):  # revoked outranks a budget without room
        await budgets.reserve(tenant, [LIMITED], 5000, token=issued.id)
    with pytest.raises(RevokedTokenError):  # no limited line: the check alone
        await budgets.reserve(tenant, [UNLIMITED], 300, token=issued.id)
    with pytest.raises(RevokedTokenError):  # a token that never was
        await budgets.reserve(tenant, [LIMITED], 300, token="tok_nosuchtoken")
    [status] = await budgets.status(tenant, [LIMITED])
    assert (status.used, status.held) == (0, 0)


async def test_a_live_token_over_a_budget_is_refused_by_the_budget(stores) -> None:
    budgets, tokens, tenant = stores
    issued = await tokens.create("acme", "review", "user", account="mike")
    with pytest.raises(QuotaExceededError) as caught:
        await budgets.reserve(tenant, [LIMITED], 5000, token=issued.id)
    assert not isinstance(caught.value, RevokedTokenError)
    assert caught.value.level == "project"


async def test_a_store_given_no_check_refuses_a_remembered_token() -> None:
    with pytest.raises(RevokedTokenError):  # fail closed: a remembered token is never taken unchecked
        await MemoryBudgets().reserve("acme", [LIMITED], 10, token="tok_x")
    [status] = await MemoryBudgets().status("acme", [LIMITED])
    assert status.held == 0


async def test_fifty_concurrent_reservations_with_a_token_hold_exactly_twenty(stores) -> None:
    """The token's check in the trip leaves the reservation atomic: a budget for 20 holds 20 of 50."""
    budgets, tokens, tenant = stores
    issued = await tokens.create("acme", "review", "user", account="mike")
    line = QuotaLine("project", "review", "monthly", 20 * 37)

    async def one() -> bool:
        try:
            await budgets.reserve(tenant, [line], 37, token=issued.id)
        except QuotaExceededError:
            return False
        return True

    results = await asyncio.gather(*(one() for _ in range(50)))
    assert results.count(True) == 20
    [status] = await budgets.status(tenant, [line])
    assert (status.used, status.held) == (0, 20 * 37)


async def test_a_token_is_remembered_once_verified_and_forgotten_once_found_revoked(tmp_path) -> None:
    db = SQLiteDatabase(tmp_path / "r.db")
    await apply_migrations(db)
    try:
        tokens = TokenStore(db)
        issued = await tokens.create("acme", "review", "user", account="mike")
        assert tokens.recall(issued.token) is None  # never verified here
        verified = await tokens.verify(issued.token)
        assert tokens.recall(issued.token) == verified and verified is not None
        await TokenStore(db).revoke(issued.id)  # another replica: this memory is not told
        assert tokens.recall(issued.token) == verified
        assert await tokens.live(issued.id) is False
        tokens.forget(issued.id)  # what the gateway does on finding it revoked
        assert tokens.recall(issued.token) is None
        assert await tokens.verify(issued.token) is None  # looked up again: refused before any body
    finally:
        await db.aclose()
