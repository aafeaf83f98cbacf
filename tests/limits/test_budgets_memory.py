"""The budget engine's memory form keeps the engine's promises: all lines or none, holds counted
until settled, released or lapsed, a spend charged at once, each alert announced once."""

from __future__ import annotations

import pytest

from zarniwoop.contract.errors import QuotaExceededError
from zarniwoop.limits.budgets import QuotaLine
from zarniwoop.limits.budgets_memory import MemoryBudgets
from zarniwoop.limits.call_budgets import BudgetWindow, CallBudgets

from ..support.clock import TestClock

pytestmark = pytest.mark.anyio

START = 1_743_465_600.0  # 2025-04-01T00:00:00Z
ACCOUNT = QuotaLine("account", "mike", "daily", 100)
TENANT = QuotaLine("tenant", "_tenant", "monthly", None)


async def test_reserve_settle_release_and_lapse_in_one_process():
    clock = TestClock(START)
    budgets = MemoryBudgets(clock=clock, hold_ttl=60)
    first = await budgets.reserve("acme", [ACCOUNT, TENANT], 60)
    with pytest.raises(
        QuotaExceededError,
        match=r"^Account quota exhausted: account/mike daily 60 of 100 tokens used, this call needs up to 41$",
    ):
        await budgets.reserve("acme", [ACCOUNT, TENANT], 41)  # 60 held + 41 > 100: refused, nothing held
    [status] = await budgets.settle(first, 30)
    assert (status.used, status.held, status.bucket) == (30, 0, "2025-04-01")
    second = await budgets.reserve("acme", [ACCOUNT], 70)
    await budgets.release(second)
    lapsed = await budgets.reserve("acme", [ACCOUNT], 70)
    assert [(s.used, s.held) for s in await budgets.status("acme", [ACCOUNT, TENANT])] == [(30, 70), (30, 0)]
    clock.advance(61)  # the "crashed" hold lapses
    assert [(s.used, s.held) for s in await budgets.status("acme", [ACCOUNT])] == [(30, 0)]
    assert lapsed.amount == 70
    spent = await budgets.spend("acme", [ACCOUNT, TENANT], 70)
    assert [s.used for s in spent] == [100, 100]
    with pytest.raises(QuotaExceededError):
        await budgets.spend("acme", [ACCOUNT], 1)
    assert await budgets.mark_alert("acme", spent[0], 80)
    assert not await budgets.mark_alert("acme", spent[0], 80)


async def test_call_windows_of_two_pools_spend_one_call_each_or_none():
    calls = CallBudgets(MemoryBudgets(clock=TestClock(START)))
    shared = BudgetWindow("_system", "_tenant", "day", "2025-04-01", 2, START + 86400)
    own = BudgetWindow("acme", "review", "daily", "2025-04-01", 1, START + 86400)
    assert await calls.reserve("serper", [shared, own], START) == [1, 1]
    assert await calls.reserve("serper", [shared, own], START) is None  # acme's own budget is spent
    assert await calls.reserve("serper", [shared], START) == [2]
    assert await calls.used("serper", [shared, own]) == [2, 1]
