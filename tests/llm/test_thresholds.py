"""Quota thresholds per level: 80 % notifies (log + webhook, once per period), 95 % also switches
the call to the light model, 100 % blocks all but local (seed 002 §5)."""

from __future__ import annotations

import logging

import pytest

from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall

from ..support.emulator import Reply
from ..support.llm import (
    ANTHROPIC_PATH,
    anthropic_reply,
    gemini_path,
    gemini_reply,
    manager_for,
    open_llm_runtime,
    seed_tenants,
)

pytestmark = pytest.mark.anyio

MIKE = LlmCall(tenant="acme", project="architecture", account="mike", purpose="execution")
DAILY = QuotaLine("account", "mike", "daily", 500_000)


def with_webhook(emulator, path="/hook"):
    tree = seed_tenants(emulator)
    tree["acme"]["settings"]["ai.quota.webhookUrl"] = emulator.url + path
    return tree


async def test_crossing_80_percent_notifies_the_log_and_the_webhook_once(tmp_path, emulator, caplog):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())  # 41 tokens a call
    emulator.add("/hook", Reply(status=204))
    async with await open_llm_runtime(tmp_path, with_webhook(emulator)) as runtime:
        await runtime.quota_ledger.charge("acme", DAILY, 399_980)  # 41 more crosses 400,000 = 80 %
        manager = await manager_for(runtime)
        with caplog.at_level(logging.WARNING, logger="zarniwoop.llm.quota"):
            await manager.chat(MIKE, ChatRequest.prompt("x"))
            await manager.chat(MIKE, ChatRequest.prompt("x"))
            await manager.flush()  # notices are scheduled off the call's path

        hooks = emulator.requests("/hook")
        assert len(hooks) == 1  # once per line and day, not per call
        notice = hooks[0].json()
        assert {k: notice[k] for k in ("event", "tenant", "level", "owner", "period", "threshold", "action", "tokensLimit", "account")} == {
            "event": "llm.quota.threshold", "tenant": "acme", "level": "account", "owner": "mike", "period": "daily",
            "threshold": 80, "action": "notify", "tokensLimit": 500_000, "account": "mike",
        }  # fmt: skip
        assert notice["tokensUsed"] == 399_980 + 41
        assert "LLM quota account/mike daily at 80.0% (400021 of 500000 tokens): notify" in caplog.text
        assert await runtime.db.fetchone("SELECT COUNT(*) FROM llm_quota_alerts") == (1,)


async def test_at_95_percent_the_call_switches_to_the_light_model(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    emulator.add(gemini_path("gemini-2.5-flash"), gemini_reply())
    emulator.add("/hook", Reply(status=204))
    async with await open_llm_runtime(tmp_path, with_webhook(emulator)) as runtime:
        await runtime.quota_ledger.charge("acme", DAILY, 476_000)  # 95.2 %
        manager = await manager_for(runtime)
        result = await manager.chat(MIKE, ChatRequest.prompt("x"))
        assert (result.requested_purpose, result.purpose) == ("execution", "light")
        assert (result.instance, result.model) == ("gemini", "gemini-2.5-flash")  # Mike's light_model
        assert result.credential_source == "account"  # Mike's google key serves every gemini model
        assert emulator.requests(ANTHROPIC_PATH) == []
        await manager.flush()
        thresholds = sorted(h.json()["threshold"] for h in emulator.requests("/hook"))
        assert thresholds == [80, 95]  # both crossed, each announced once
        row = await runtime.db.fetchone("SELECT purpose, model FROM llm_usage_records")
        assert row == ("light", "gemini-2.5-flash")


async def test_a_failing_webhook_never_breaks_the_call(tmp_path, emulator, caplog):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    emulator.add("/hook", Reply(status=500))
    async with await open_llm_runtime(tmp_path, with_webhook(emulator)) as runtime:
        await runtime.quota_ledger.charge("acme", DAILY, 399_980)
        manager = await manager_for(runtime)
        with caplog.at_level(logging.WARNING, logger="zarniwoop.llm.quota"):
            result = await manager.chat(MIKE, ChatRequest.prompt("x"))
            await manager.flush()
        assert result.response.text.startswith("Hello!")
        assert "quota webhook answered HTTP 500" in caplog.text


async def test_at_95_percent_the_light_model_serves_where_the_purposes_model_has_no_key(tmp_path, emulator):
    """The budgets, not the requested purpose's model, decide first: its missing key does not refuse
    a call the light model can serve (the reservation before the first byte is tried only on a plan)."""
    emulator.add(gemini_path("gemini-2.5-flash"), gemini_reply())
    tree = seed_tenants(emulator)
    tree["acme"]["accounts"]["mike"]["llm"]["preferences"]["execution_model"] = "openai:gpt-4o"  # no key
    async with await open_llm_runtime(tmp_path, tree) as runtime:
        await runtime.quota_ledger.charge("acme", DAILY, 476_000)  # 95.2 %
        manager = await manager_for(runtime)
        result = await manager.chat(MIKE, ChatRequest.prompt("x"))
        assert (result.purpose, result.instance, result.model) == ("light", "gemini", "gemini-2.5-flash")
        [status] = await runtime.quota_ledger.status("acme", [DAILY])
        assert status.held == 0
