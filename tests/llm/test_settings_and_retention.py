"""Boot checks of the LLM settings, and retention of usage records and traces."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from zarniwoop.contract.errors import ConfigError
from zarniwoop.ledger import UsageRecord, UsageStore
from zarniwoop.runtime import retention_rules
from zarniwoop.storage.retention import prune

from ..support.runtime import open_runtime

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("ai.operatorKeys", "sometimes", "expected allow or deny, got 'sometimes'"),
        ("ai.quota.webhookUrl", "ftp://x", "expected an http(s) URL, got 'ftp://x'"),
        ("ai.failover.maxWaitSeconds", "-1", "expected a number ≥ 0"),
        ("ai.usage.retentionDays", 0, "expected an integer ≥ 1"),
        ("ai.trace.persist", "maybe", "expected true or false, got 'maybe'"),
        ("ai.substitute", "perhaps", "expected true or false, got 'perhaps'"),
        ("ai.provider.openai.traceparent", "always", "expected true or false, got 'always'"),
        ("ai.rateLimit.windowSeconds", 0, "expected a number > 0 (seconds)"),
        ("ai.usage.purgeIntervalSeconds", -5, "expected a number > 0 (seconds)"),
        (
            "ai.alias.default.analyze.fallback",
            "gemini",
            "fallback 'gemini': element 'gemini' is not <provider>:<model> or <namespace>:<alias>",
        ),
    ],
)
async def test_a_bad_llm_setting_fails_start_up_naming_the_key(tmp_path, key, value, reason):
    with pytest.raises(ConfigError) as caught:
        await open_runtime(tmp_path, {key: value})
    assert (caught.value.key, caught.value.reason) == (key, reason)
    assert not (tmp_path / "home").exists()  # a rejected first start leaves nothing behind


async def test_purge_drops_records_and_traces_past_the_retention(tmp_path):
    async with await open_runtime(tmp_path, {"ai.usage.retentionDays": 30}) as runtime:
        store = UsageStore(runtime.db)
        old = (datetime.now(UTC) - timedelta(days=40)).isoformat()
        await store.record(
            UsageRecord(
                "t", "a", "p", None, "openai", "openai", "m", "light", 1, 1, None, "tenant", 1, created_at=old
            )
        )
        await store.record(
            UsageRecord(
                "t", "a", "p", None, "openai", "openai", "m", "light", 1, 1, None, "tenant", 1, id="usage_new"
            )
        )
        await runtime.db.execute(
            "INSERT INTO llm_traces (id, tenant, provider, instance, model, request, created_at) VALUES ('tr', 't', 'o', 'o', 'm', '{}', ?)",
            (old,),
        )
        removed = await prune(runtime.db, retention_rules(runtime.settings), now=time.time())
        assert (removed["llm_usage_records"], removed["llm_traces"]) == (1, 1)
        assert [r.id for r in await store.query("t")] == ["usage_new"]
        assert await runtime.db.fetchone("SELECT COUNT(*) FROM llm_traces") == (0,)
