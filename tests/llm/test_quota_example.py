"""The seed's quota example end to end (seed 002 §3 "Quota Check: All Levels Simultaneously"):
Mike's own budget is fine, the project's is at 4.998M/5M → "Project quota exhausted"; with room
left, one call charges account, project, team and tenant at once."""

from __future__ import annotations

import pytest

from zarniwoop.contract.errors import QuotaExceededError
from zarniwoop.limits.token_budgets import QuotaLine, quota_lines
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall

from ..support.llm import ANTHROPIC_PATH, anthropic_reply, manager_for, open_llm_runtime, seed_tenants

pytestmark = pytest.mark.anyio

MIKE_IN_REVIEW = LlmCall(tenant="acme", project="transformer-review", account="mike", purpose="execution")


async def usage_rows(runtime) -> dict[tuple[str, str, str], int]:
    rows = await runtime.db.fetchall(
        "SELECT level, owner, period, used FROM llm_quota_usage WHERE tenant = 'acme'"
    )
    return {(level, owner, period): used for level, owner, period, used in rows}


async def test_project_at_4_998m_of_5m_blocks_the_call_naming_the_project(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    async with await open_llm_runtime(tmp_path, seed_tenants(emulator)) as runtime:
        ledger = runtime.quota_ledger
        await ledger.charge("acme", QuotaLine("account", "mike", "daily", 500_000), 142_000)
        await ledger.charge(
            "acme", QuotaLine("project", "transformer-review", "monthly", 5_000_000), 4_998_000
        )
        await ledger.charge("acme", QuotaLine("team", "nlp", "monthly", 20_000_000), 4_200_000)
        manager = await manager_for(runtime)

        with pytest.raises(QuotaExceededError) as caught:
            await manager.chat(MIKE_IN_REVIEW, ChatRequest.prompt("Review this paper", max_tokens=4096))

        assert caught.value.level == "project"
        assert caught.value.message.startswith(
            "Project quota exhausted: project/transformer-review monthly 4,998,000 of 5,000,000"
        )
        assert caught.value.exit_code == 4
        assert emulator.requests(ANTHROPIC_PATH) == []  # blocked before any provider was called
        # Mike's own budget was fine and is untouched; nothing was charged anywhere.
        rows = await usage_rows(runtime)
        assert rows[("account", "mike", "daily")] == 142_000
        assert rows[("project", "transformer-review", "monthly")] == 4_998_000
        held = await runtime.db.fetchone("SELECT COUNT(*) FROM llm_quota_holds")
        assert held == (0,)
        blocked = await runtime.db.fetchone("SELECT outcome, error, tokens_total FROM llm_usage_records")
        assert (
            blocked[0] == "blocked" and blocked[1].startswith("Project quota exhausted") and blocked[2] == 0
        )


async def test_with_room_one_call_charges_account_project_team_and_tenant_at_once(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())  # usage: 12 in + 29 out
    async with await open_llm_runtime(tmp_path, seed_tenants(emulator)) as runtime:
        ledger = runtime.quota_ledger
        await ledger.charge("acme", QuotaLine("account", "mike", "daily", 500_000), 142_000)
        await ledger.charge("acme", QuotaLine("project", "transformer-review", "monthly", 5_000_000), 890_000)
        await ledger.charge("acme", QuotaLine("team", "nlp", "monthly", 20_000_000), 4_200_000)
        manager = await manager_for(runtime)

        result = await manager.chat(MIKE_IN_REVIEW, ChatRequest.prompt("Review this paper"))

        assert result.response.text.startswith("Hello! I'm doing well")
        assert (result.usage.input, result.usage.output, result.usage.total) == (12, 29, 41)
        assert result.credential_source == "account"  # Mike's own anthropic key comes first in the cascade
        rows = await usage_rows(runtime)
        assert rows[("account", "mike", "daily")] == 142_000 + 41
        assert rows[("account", "mike", "monthly")] == 41
        assert rows[("project", "transformer-review", "monthly")] == 890_000 + 41
        assert rows[("project", "transformer-review", "daily")] == 41
        assert rows[("team", "nlp", "monthly")] == 4_200_000 + 41
        assert rows[("tenant", "_tenant", "monthly")] == 41  # "Tenant: no limit ✓" — still counted
        assert rows[("tenant", "_tenant", "daily")] == 41
        assert await runtime.db.fetchone("SELECT COUNT(*) FROM llm_quota_holds") == (0,)
        # The call's max_tokens respected every level's max_tokens_per_call (account 8192 < project 16384).
        sent = emulator.requests(ANTHROPIC_PATH)[0]
        assert sent.header("x-api-key") == "sk-ant-MIKE-0001-personal"
        assert sent.json()["model"] == "claude-sonnet-4-5"


async def test_max_tokens_per_call_caps_the_request_at_the_smallest_level(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    async with await open_llm_runtime(tmp_path, seed_tenants(emulator)) as runtime:
        manager = await manager_for(runtime)
        await manager.chat(MIKE_IN_REVIEW, ChatRequest.prompt("x", max_tokens=50_000))
        assert emulator.requests(ANTHROPIC_PATH)[0].json()["max_tokens"] == 8192


async def test_quota_lines_cover_every_level_of_the_call(tmp_path, emulator):
    async with await open_llm_runtime(tmp_path, seed_tenants(emulator)) as runtime:
        scope = runtime.org.scope("acme", "transformer-review", "mike")
        lines = {(line.level, line.owner, line.period): line.limit for line in quota_lines(scope)}
        assert lines == {
            ("account", "mike", "daily"): 500_000,
            ("account", "mike", "monthly"): 10_000_000,
            ("project", "transformer-review", "daily"): None,
            ("project", "transformer-review", "monthly"): 5_000_000,
            ("team", "nlp", "daily"): None,
            ("team", "nlp", "monthly"): 20_000_000,
            ("tenant", "_tenant", "daily"): None,
            ("tenant", "_tenant", "monthly"): None,
        }
