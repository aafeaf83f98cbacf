"""On the embedded default, an LLM call's charge and its usage record are one SQLite transaction:
two write transactions per call (the reservation, then settle + record), not three — and a record
the database refuses is spooled while the charge stands (llm/settlement.py `charge`)."""

from __future__ import annotations

import pytest

from zarniwoop.contract.errors import FailoverError
from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall

from ..support.emulator import Reply
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
        # the budgets are read once per call: the reservation's check, made against the light
        # model's threshold, is the light-model check too (issue 42; 2 reads before, 3 before
        # issue 23), and the settle returns the usage it charged
        assert sum(sql.startswith("SELECT (SELECT used FROM llm_quota_usage") for sql in statements) == 1
        before = statements[: statements.index("BEGIN IMMEDIATE")]
        assert not [sql for sql in before if "llm_quota" in sql], before  # the first budget trip holds them
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


async def test_a_call_near_the_light_threshold_reads_the_budgets_and_keeps_its_model(tmp_path, emulator):
    """The reservation against the light threshold is refused (94.8 % used, the call's estimate
    would pass 95 %): the budgets are read, the purpose stays, the call runs on its model."""
    async with await _runtime(tmp_path, emulator) as runtime:
        manager = await manager_for(runtime)
        await runtime.quota_ledger.charge("acme", DAILY, 474_000)
        statements: list[str] = []
        runtime.db._conn.set_trace_callback(statements.append)
        try:
            result = await manager.chat(MIKE, ChatRequest.prompt("x", max_tokens=2000))
        finally:
            runtime.db._conn.set_trace_callback(None)
        assert (result.purpose, result.model) == (MIKE.purpose, MODELS["openai"].split(":", 1)[1])
        assert sum(sql.startswith("SELECT (SELECT used FROM llm_quota_usage") for sql in statements) == 3
        [status] = await runtime.quota_ledger.status("acme", [DAILY])
        assert (status.used, status.held) == (474_000 + TOKENS, 0)


async def test_a_call_no_provider_answers_leaves_no_hold(tmp_path, emulator):
    """The first attempt's hold, reserved before the first byte, goes back when every attempt fails."""
    async with await _runtime(tmp_path, emulator) as runtime:
        manager = await manager_for(runtime)
        emulator.reset()
        emulator.add(upstream_path("openai"), Reply(status=400, body=b'{"error": {"message": "bad"}}'))
        with pytest.raises(FailoverError):
            await manager.chat(MIKE, ChatRequest.prompt("x"))
        [status] = await runtime.quota_ledger.status("acme", [DAILY])
        assert (status.used, status.held) == (0, 0)
