"""Streaming through the whole call path: deltas as they arrive, then the result with usage, cost and
the usage record; failover is possible until the first delta."""

from __future__ import annotations

import pytest

from zarniwoop.ledger import UsageStore
from zarniwoop.llm.adapters import ChatRequest, StreamDelta
from zarniwoop.llm.manager import LlmCall, LlmResult

from ..support.emulator import Reply
from ..support.llm import ANTHROPIC_PATH, Sleeps, manager_for, open_llm_runtime, seed_tenants
from ..support.paths import fixture_bytes

pytestmark = pytest.mark.anyio

MIKE = LlmCall(tenant="acme", project="architecture", account="mike", purpose="execution")
SSE = {"Content-Type": "text/event-stream"}


async def test_a_stream_yields_deltas_then_a_recorded_result(tmp_path, emulator):
    emulator.add(
        ANTHROPIC_PATH, Reply(body=fixture_bytes("llm", "anthropic", "stream-text.sse"), headers=SSE)
    )
    async with await open_llm_runtime(tmp_path, seed_tenants(emulator)) as runtime:
        manager = await manager_for(runtime)
        items = [item async for item in manager.stream(MIKE, ChatRequest.prompt("Name a pelican"))]
        deltas = [i.text for i in items if isinstance(i, StreamDelta)]
        result = items[-1]
        assert deltas == ["-", " Captain", "\n- Sc", "oop"]
        assert isinstance(result, LlmResult)
        assert result.response.text == "- Captain\n- Scoop"
        assert (result.usage.input, result.usage.output) == (17, 10)
        assert result.cost_usd == pytest.approx((17 * 3.0 + 10 * 15.0) / 1_000_000)
        assert emulator.requests(ANTHROPIC_PATH)[0].json()["stream"] is True
        record = await UsageStore(runtime.db).get(result.usage_id)
        assert record is not None and (record.tokens_total, record.outcome) == (27, "ok")
        used = await runtime.db.fetchone(
            "SELECT used FROM llm_quota_usage WHERE level = 'account' AND period = 'daily'"
        )
        assert used == (27,)


async def test_a_stream_fails_over_before_its_first_delta(tmp_path, emulator):
    emulator.add(
        ANTHROPIC_PATH,
        Reply(status=529, body=fixture_bytes("llm", "errors", "anthropic-529-overloaded.json")),
    )
    emulator.add(
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
        Reply(
            body=fixture_bytes("llm", "gemini", "stream-text.json"),
            headers={"Content-Type": "application/json"},
        ),
    )
    tree = seed_tenants(emulator)
    tree["acme"]["accounts"]["mike"]["llm"]["failover"] = {"max_retries": 0}
    async with await open_llm_runtime(tmp_path, tree) as runtime:
        manager = await manager_for(runtime, Sleeps())
        items = [item async for item in manager.stream(MIKE, ChatRequest.prompt("Name a pelican"))]
        result = items[-1]
        assert result.instance == "gemini" and result.response.text == "Scoop"
        assert [i.kind for i in items[:-1]] == ["reasoning", "text"]
        assert [s.to_json() for s in result.failover] == [
            {"from": "anthropic", "to": "gemini", "reason": "HTTP 529 overloaded"}
        ]
