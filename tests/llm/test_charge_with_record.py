"""On the embedded default, an LLM call's charge and its usage record are one SQLite transaction:
two write transactions per call (the reservation, then settle + record), not three — and a record
the database refuses is spooled while the charge stands (llm/settlement.py `charge`)."""

from __future__ import annotations

import pytest

from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall

from ..support.gateway import MODELS, OPENAI_KEY, gateway_tenants, openai_completion, upstream_path
from ..support.llm import KEYS, manager_for, open_llm_runtime

pytestmark = pytest.mark.anyio

MIKE = LlmCall(tenant="acme", project="transformer-review", account="mike", model=MODELS["openai"])
DAILY = QuotaLine("account", "mike", "daily", 500_000)
TOKENS = 12
"""What the upstream reports for a call (5 input + 7 output)."""


async def _runtime(tmp_path, emulator):
    emulator.add(upstream_path("openai"), openai_completion("hi", 5, 7))
    keys = {**KEYS, ("account", "mike", "cred_mike_openai"): OPENAI_KEY}
    return await open_llm_runtime(tmp_path, gateway_tenants(emulator), keys=keys)


def _writes(statements: list[str]) -> list[list[str]]:
    """The write transactions among traced statements: each one's statements, by their first words."""
    transactions: list[list[str]] = []
    current: list[str] | None = None
    for sql in statements:
        words = " ".join(sql.split()[:3])
        if sql.startswith("BEGIN"):
            current = []
        elif sql.startswith("COMMIT"):
            assert current is not None
            transactions.append(current)
            current = None
        elif current is not None:
            current.append(words)
        elif sql.startswith(("INSERT", "UPDATE", "DELETE")):
            transactions.append([words])  # a statement on its own is a transaction of its own
    return transactions


async def test_a_call_settles_and_records_in_one_transaction(tmp_path, emulator):
    async with await _runtime(tmp_path, emulator) as runtime:
        manager = await manager_for(runtime)
        await manager.chat(MIKE, ChatRequest.prompt("warm up"))  # catalog, settings: read once
        statements: list[str] = []
        runtime.db._conn.set_trace_callback(statements.append)
        try:
            result = await manager.chat(MIKE, ChatRequest.prompt("x"))
        finally:
            runtime.db._conn.set_trace_callback(None)
        writes = _writes(statements)
        assert len(writes) == 2, writes
        reserve, settle = writes
        assert "INSERT INTO llm_quota_holds" in reserve
        # the budgets are read twice per call (the light-model check before the choice, the
        # reservation's check): the settle returns the usage it charged (issue 23; 3 reads before)
        assert sum(sql.startswith("SELECT (SELECT used FROM llm_quota_usage") for sql in statements) == 2
        assert settle[0] == "DELETE FROM llm_quota_holds"
        assert "INSERT INTO llm_quota_usage" in settle and "INSERT INTO llm_usage_records" in settle
        row = await runtime.db.fetchone(
            "SELECT tokens_input + tokens_output FROM llm_usage_records WHERE id = ?", (result.usage_id,)
        )
        assert row == (TOKENS,)
        [status] = await runtime.quota_ledger.status("acme", [DAILY])
        assert (status.used, status.held) == (2 * TOKENS, 0)


async def test_a_record_the_database_refuses_is_spooled_and_the_charge_stands(tmp_path, emulator):
    async with await _runtime(tmp_path, emulator) as runtime:
        manager = await manager_for(runtime)
        await runtime.db.execute("ALTER TABLE llm_usage_records RENAME TO llm_usage_away")
        try:
            result = await manager.chat(MIKE, ChatRequest.prompt("x"))  # the call is not failed by its ledger
            assert runtime.usage.spooled() == 1
            [status] = await runtime.quota_ledger.status("acme", [DAILY])
            assert (status.used, status.held) == (TOKENS, 0)  # charged although its record was refused
        finally:
            await runtime.db.execute("ALTER TABLE llm_usage_away RENAME TO llm_usage_records")
        assert await runtime.usage.flush(orphans=False) == 1
        row = await runtime.db.fetchone(
            "SELECT tokens_input + tokens_output, outcome FROM llm_usage_records WHERE id = ?",
            (result.usage_id,),
        )
        assert row == (TOKENS, "ok")
