"""Multi-provider failover (seed 002 §8) through the whole call path against the emulator."""

from __future__ import annotations

import json
import logging

import pytest

from zarniwoop.contract.errors import NoProviderAvailableError, QuotaExceededError
from zarniwoop.ledger import UsageStore
from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall

from ..support.emulator import Reply
from ..support.llm import (
    ANTHROPIC_PATH,
    Sleeps,
    anthropic_reply,
    gemini_path,
    gemini_reply,
    manager_for,
    open_llm_runtime,
    seed_tenants,
)
from ..support.paths import fixture_bytes

pytestmark = pytest.mark.anyio

MIKE = LlmCall(tenant="acme", project="architecture", account="mike", purpose="execution")


def overloaded() -> bytes:
    """Anthropic's recorded 529 body (the test skips, saying why, where ../shared is absent)."""
    return fixture_bytes("llm", "errors", "anthropic-529-overloaded.json")


def rate_limited() -> bytes:
    return fixture_bytes("llm", "errors", "anthropic-429-rate-limit-account.json")


def tenants(emulator, failover=None, local=False):
    tree = seed_tenants(emulator)
    mike = tree["acme"]["accounts"]["mike"]["llm"]
    if failover is not None:
        mike["failover"] = failover
    if local:
        tree["acme"]["llm"]["providers"].append(
            {
                "provider": "local_ollama",
                "model": "llama3.2",
                "endpoint": emulator.url + "/local",
                "priority": 99,
                "quota": "unlimited",
            }
        )
    return tree


def a_429_then_529s():
    calls = []
    rate_limit_body, overloaded_body = rate_limited(), overloaded()  # here, not in the emulator's thread

    def route(request):
        calls.append(request)
        if len(calls) == 1:
            return Reply(
                status=429,
                body=rate_limit_body,
                headers={"Retry-After": "2", "Content-Type": "application/json"},
            )
        return Reply(status=529, body=overloaded_body, headers={"Content-Type": "application/json"})

    return route


async def test_a_429_then_529_fails_over_to_b_after_a_s_retries(tmp_path, emulator, caplog):
    emulator.add(ANTHROPIC_PATH, a_429_then_529s())
    emulator.add(gemini_path("gemini-2.5-pro"), gemini_reply())
    sleeps = Sleeps()
    async with await open_llm_runtime(tmp_path, tenants(emulator)) as runtime:
        manager = await manager_for(runtime, sleeps)
        with caplog.at_level(logging.INFO, logger="zarniwoop.llm"):
            result = await manager.chat(MIKE, ChatRequest.prompt("Plan the review"))

        assert result.response.text.startswith("There are **3** r's in strawberry.")
        assert (result.provider_type, result.instance, result.model) == ("gemini", "gemini", "gemini-2.5-pro")
        assert result.credential_source == "account"  # Mike's own google key, priority 2
        # A was tried 1 + max_retries (2) times: 429 → waited its Retry-After, 529 → backoff 2 s × 2, 529 → switch.
        assert len(emulator.requests(ANTHROPIC_PATH)) == 3
        assert sleeps.waits == [2.0, 4.0]
        assert (
            emulator.requests(gemini_path("gemini-2.5-pro"))[0].header("x-goog-api-key")
            == "AIza-MIKE-0002-personal"
        )
        assert [s.to_json() for s in result.failover] == [
            {"from": "anthropic", "to": "gemini", "reason": "HTTP 529 overloaded"}
        ]
        assert "failover from anthropic to gemini (HTTP 529 overloaded)" in caplog.text

        record = await UsageStore(runtime.db).get(result.usage_id)
        assert record is not None
        assert (record.provider, record.model, record.outcome) == ("gemini", "gemini-2.5-pro", "ok")
        assert [s.to_json() for s in record.failover] == [
            {"from": "anthropic", "to": "gemini", "reason": "HTTP 529 overloaded"}
        ]
        assert [(a.instance, a.outcome, a.status) for a in record.attempts] == [
            ("anthropic", "error", 429),
            ("anthropic", "error", 529),
            ("anthropic", "error", 529),
            ("gemini", "ok", None),
        ]
        assert [a.waited_ms for a in record.attempts] == [0, 2000, 4000, 0]
        assert (record.tokens_input, record.tokens_output) == (9, 272)
        assert record.cost_usd == pytest.approx(
            (9 * 1.25 + 272 * 10.0) / 1_000_000
        )  # gemini-2.5-pro's catalog pricing


async def test_an_auth_error_switches_at_once_without_retrying(tmp_path, emulator):
    emulator.add(
        ANTHROPIC_PATH,
        Reply(status=401, body=fixture_bytes("llm", "errors", "anthropic-401-invalid-api-key.json")),
    )
    emulator.add(gemini_path("gemini-2.5-pro"), gemini_reply())
    sleeps = Sleeps()
    async with await open_llm_runtime(tmp_path, tenants(emulator)) as runtime:
        manager = await manager_for(runtime, sleeps)
        result = await manager.chat(MIKE, ChatRequest.prompt("x"))
        assert result.instance == "gemini"
        assert len(emulator.requests(ANTHROPIC_PATH)) == 1 and sleeps.waits == []
        assert result.failover[0].reason == "HTTP 401"


async def test_a_long_retry_after_is_not_waited_for(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, Reply(status=429, body=rate_limited(), headers={"Retry-After": "3600"}))
    emulator.add(gemini_path("gemini-2.5-pro"), gemini_reply())
    sleeps = Sleeps()
    async with await open_llm_runtime(tmp_path, tenants(emulator)) as runtime:
        manager = await manager_for(runtime, sleeps)
        result = await manager.chat(MIKE, ChatRequest.prompt("x"))
        assert result.instance == "gemini" and sleeps.waits == []
        assert len(emulator.requests(ANTHROPIC_PATH)) == 1


async def test_fallback_disabled_fails_after_the_first_provider(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, Reply(status=529, body=overloaded()))
    emulator.add(gemini_path("gemini-2.5-pro"), gemini_reply())
    sleeps = Sleeps()
    policy = {"max_retries": 1, "retry_delay_ms": 100, "fallback_enabled": False, "fallback_to_local": False}
    tree = tenants(emulator, failover=policy)
    # The operator's URL (system level): its error body is shown; a tenant's would be summarised.
    system = {"ai.provider.anthropic.baseUrl": tree["acme"]["settings"].pop("ai.provider.anthropic.baseUrl")}
    async with await open_llm_runtime(tmp_path, tree, settings=system) as runtime:
        manager = await manager_for(runtime, sleeps)
        with pytest.raises(NoProviderAvailableError) as caught:
            await manager.chat(MIKE, ChatRequest.prompt("x"))
        assert caught.value.exit_code == 3
        assert "anthropic: anthropic: HTTP 529 overloaded_error: Overloaded" in caught.value.message
        assert sleeps.waits == [0.1]
        assert emulator.requests(gemini_path("gemini-2.5-pro")) == []
        row = await runtime.db.fetchone("SELECT outcome, provider, attempts FROM llm_usage_records")
        assert row[0] == "error" and row[1] == "anthropic"
        assert [(a["outcome"], a["status"]) for a in json.loads(row[2])] == [("error", 529), ("error", 529)]


async def test_every_cloud_provider_down_falls_back_to_local(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, Reply(status=529, body=overloaded()))
    emulator.add(
        gemini_path("gemini-2.5-pro"),
        Reply(status=503, body=b'{"error": {"code": 503, "message": "down", "status": "UNAVAILABLE"}}'),
    )
    emulator.add("/local/api/chat", Reply(body=fixture_bytes("llm", "ollama", "api-chat.json")))
    policy = {"max_retries": 0, "retry_delay_ms": 0, "fallback_enabled": True, "fallback_to_local": True}
    async with await open_llm_runtime(tmp_path, tenants(emulator, failover=policy, local=True)) as runtime:
        manager = await manager_for(runtime, Sleeps())
        result = await manager.chat(MIKE, ChatRequest.prompt("x"))
        assert (result.instance, result.model, result.credential_source) == ("ollama", "llama3.2", "local")
        assert [(s.from_instance, s.to_instance) for s in result.failover] == [
            ("anthropic", "gemini"),
            ("gemini", "ollama"),
        ]
        assert result.cost_usd is None  # llama3.2 via ollama is unpriced


async def test_an_exhausted_budget_blocks_everything_but_local(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    emulator.add("/local/api/chat", Reply(body=fixture_bytes("llm", "ollama", "api-chat.json")))
    async with await open_llm_runtime(tmp_path, tenants(emulator, local=True)) as runtime:
        await runtime.quota_ledger.charge("acme", QuotaLine("account", "mike", "daily", 500_000), 500_000)
        manager = await manager_for(runtime, Sleeps())
        result = await manager.chat(MIKE, ChatRequest.prompt("x"))
        assert (result.instance, result.credential_source) == ("ollama", "local")
        assert emulator.requests(ANTHROPIC_PATH) == []
        # The local free tier is not charged against the budgets.
        used = await runtime.db.fetchone(
            "SELECT used FROM llm_quota_usage WHERE level = 'account' AND period = 'daily'"
        )
        assert used == (500_000,)


async def test_an_exhausted_budget_without_local_is_blocked_naming_the_level(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    async with await open_llm_runtime(tmp_path, tenants(emulator)) as runtime:
        await runtime.quota_ledger.charge("acme", QuotaLine("team", "nlp", "monthly", 20_000_000), 20_000_000)
        manager = await manager_for(runtime, Sleeps())
        with pytest.raises(QuotaExceededError) as caught:
            await manager.chat(MIKE, ChatRequest.prompt("x"))
        assert caught.value.level == "team"
        assert caught.value.message.startswith(
            "Team quota exhausted: team/nlp monthly 20,000,000 of 20,000,000"
        )
        assert emulator.requests() == []


async def test_an_unresolvable_host_is_tried_once_then_switched_from(tmp_path, emulator):
    # tests/conftest.py fails every non-loopback lookup at once: exactly what an offline machine's
    # resolver does. A DNS failure is not transient, so A gets no retries and no backoff.
    emulator.add(gemini_path("gemini-2.5-pro"), gemini_reply())
    tree = tenants(emulator)
    tree["acme"]["settings"]["ai.provider.anthropic.baseUrl"] = "http://llm.example.invalid"
    sleeps = Sleeps()
    async with await open_llm_runtime(tmp_path, tree) as runtime:
        manager = await manager_for(runtime, sleeps)
        result = await manager.chat(MIKE, ChatRequest.prompt("x"))
        assert result.instance == "gemini" and sleeps.waits == []
        record = await UsageStore(runtime.db).get(result.usage_id)
        assert record is not None
        assert [(a.instance, a.outcome) for a in record.attempts] == [
            ("anthropic", "error"),
            ("gemini", "ok"),
        ]
        assert result.failover[0].reason == "network error"
