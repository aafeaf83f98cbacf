"""50 concurrent LLM calls against a budget that fits 20: exactly 20 run and none overspends —
in one process (SQLite), in two processes sharing the SQLite file, and in two processes sharing
Redis — through the whole call path against the emulator."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import pytest

from zarniwoop.contract.errors import QuotaExceededError
from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall
from zarniwoop.runtime import Runtime

from ..support.emulator import Reply
from ..support.llm import ANTHROPIC_PATH, redis_token_budgets
from ..support.runtime import write_config
from .test_quota_ledger import run_workers

pytestmark = pytest.mark.anyio

PROMPT = "Classify this abstract into one of five topics."
MAX_TOKENS = 200
REQUEST = ChatRequest.prompt(PROMPT, max_tokens=MAX_TOKENS)
PER_CALL = REQUEST.estimated_input_tokens() + MAX_TOKENS
"""What a call holds before it runs; the emulated provider reports exactly this much use."""
BUDGET = 20 * PER_CALL


def reply(_request) -> Reply:
    body = {
        "id": "msg_x", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "topic 3"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": REQUEST.estimated_input_tokens(), "output_tokens": MAX_TOKENS},
    }  # fmt: skip
    return Reply.json(body, delay=0.02)


def tenant_config(emulator, tenant: str) -> dict:
    return {
        "settings": {"ai.provider.anthropic.baseUrl": emulator.url},
        "tenants": {
            tenant: {
                "accounts": {
                    "ann": {
                        "llm": {
                            "providers": [
                                {
                                    "provider": "anthropic",
                                    "model": "claude-haiku-4-5",
                                    "api_key": "sk-ant-INLINE-7777",
                                }
                            ],
                            "quota": {"daily_tokens": BUDGET, "thresholds": {"light": 100}},
                            "preferences": {"default_model": "anthropic:claude-haiku-4-5"},
                        }
                    }
                }
            }
        },
    }


async def test_fifty_concurrent_calls_against_a_budget_for_twenty_run_exactly_twenty(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, reply)
    path = write_config(tmp_path, tenant_config(emulator, "acme"))
    async with await Runtime.open(path, home=tmp_path / "home") as runtime:
        manager = await runtime.llm()
        call = LlmCall("acme", "default", "ann")

        async def one() -> str:
            try:
                await manager.chat(call, REQUEST)
            except QuotaExceededError as exc:
                assert exc.level == "account"
                return "blocked"
            return "ok"

        results = await asyncio.gather(*(one() for _ in range(50)))
        assert results.count("ok") == 20
        assert len(emulator.requests(ANTHROPIC_PATH)) == 20
        used = await runtime.db.fetchone(
            "SELECT used FROM llm_quota_usage WHERE level = 'account' AND owner = 'ann' AND period = 'daily'"
        )
        assert used == (BUDGET,)  # exactly the budget, never more
        rows = await runtime.db.fetchall(
            "SELECT outcome, COUNT(*) FROM llm_usage_records GROUP BY outcome ORDER BY outcome"
        )
        assert rows == [("blocked", 30), ("ok", 20)]
        # The inline key went to the credential store, sealed, and was what the provider received.
        assert {r.header("x-api-key") for r in emulator.requests(ANTHROPIC_PATH)} == {"sk-ant-INLINE-7777"}
        assert await runtime.db.fetchone(
            "SELECT COUNT(*) FROM org_units WHERE llm LIKE '%sk-ant-INLINE%'"
        ) == (0,)


async def _two_processes(tmp_path: Path, emulator, tenant: str, extra: dict) -> list[dict[str, int]]:
    emulator.add(ANTHROPIC_PATH, reply)
    config = {**tenant_config(emulator, tenant), **extra}
    path = write_config(tmp_path, config)
    home = tmp_path / "home"
    async with await Runtime.open(path, home=home):
        pass  # create the database, the master key and the credentials before the workers start
    args = {
        "mode": "manager", "config": str(path), "home": str(home), "calls": 25, "prompt": PROMPT,
        "max_tokens": MAX_TOKENS, "call": {"tenant": tenant, "project": "default", "account": "ann"},
    }  # fmt: skip
    return await asyncio.to_thread(run_workers, 2, args)


@pytest.mark.slow
async def test_two_processes_sharing_sqlite_run_exactly_twenty(tmp_path, emulator):
    results = await _two_processes(tmp_path, emulator, "acme", {})
    assert sum(r["ok"] for r in results) == 20 and sum(r["blocked"] for r in results) == 30
    assert len(emulator.requests(ANTHROPIC_PATH)) == 20
    async with await Runtime.open(tmp_path / "zarniwoop.yaml", home=tmp_path / "home") as runtime:
        used = await runtime.db.fetchone(
            "SELECT used FROM llm_quota_usage WHERE level = 'account' AND period = 'daily'"
        )
        assert used == (BUDGET,)


@pytest.mark.slow
async def test_two_processes_sharing_redis_run_exactly_twenty(tmp_path, emulator, redis_url):
    tenant = "conc-" + secrets.token_hex(4)
    results = await _two_processes(tmp_path, emulator, tenant, {"redis_url": redis_url})
    assert sum(r["ok"] for r in results) == 20 and sum(r["blocked"] for r in results) == 30
    assert len(emulator.requests(ANTHROPIC_PATH)) == 20
    async with redis_token_budgets(redis_url, tenant) as ledger:
        [status] = await ledger.status(tenant, [QuotaLine("account", "ann", "daily", BUDGET)])
        assert (status.used, status.held) == (BUDGET, 0)


@pytest.mark.slow
async def test_two_processes_sharing_postgres_and_redis_run_exactly_twenty(
    tmp_path, emulator, postgres_url, redis_url
):
    """The scale-out set-up: settings, credentials, usage records in PostgreSQL; quota counters in Redis."""
    tenant = "conc-" + secrets.token_hex(4)
    results = await _two_processes(
        tmp_path, emulator, tenant, {"redis_url": redis_url, "database_url": postgres_url}
    )
    assert sum(r["ok"] for r in results) == 20 and sum(r["blocked"] for r in results) == 30
    assert len(emulator.requests(ANTHROPIC_PATH)) == 20
    async with redis_token_budgets(redis_url, tenant) as ledger:
        [status] = await ledger.status(tenant, [QuotaLine("account", "ann", "daily", BUDGET)])
        assert (status.used, status.held) == (BUDGET, 0)
    async with await Runtime.open(tmp_path / "zarniwoop.yaml", home=tmp_path / "home") as runtime:
        rows = await runtime.db.fetchall(
            "SELECT outcome, COUNT(*) FROM llm_usage_records WHERE tenant = ? GROUP BY outcome ORDER BY outcome",
            (tenant,),
        )
        assert [tuple(r) for r in rows] == [("blocked", 30), ("ok", 20)]
