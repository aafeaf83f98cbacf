"""Per-level rate limits: `requests_per_minute` / `tokens_per_minute` at account, project, team and
tenant level, a sliding window shared by replicas through Redis, refusals that carry retry-after."""

from __future__ import annotations

import asyncio

import pytest

from zarniwoop.contract.errors import NoProviderAvailableError, QuotaExceededError, RateLimitExceededError
from zarniwoop.limits.windows import LocalAdmissionWindows, RateLine
from zarniwoop.limits.windows_redis import RedisAdmissionWindows
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall
from zarniwoop.runtime import Runtime

from ..support.emulator import Reply
from ..support.llm import ANTHROPIC_PATH
from ..support.runtime import write_config
from .test_quota_ledger import run_workers

pytestmark = pytest.mark.anyio

REQUESTS = RateLine("project", "review", "requests", 3)
TOKENS = RateLine("account", "ann", "tokens", 1000)


class Clock:
    """The injected clock: one number for both the wall and the monotonic reading."""

    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds


async def test_memory_windows_slide_and_say_when_there_is_room():
    clock = Clock()
    limiter = LocalAdmissionWindows(clock)
    for _ in range(3):
        await limiter.admit("acme", [REQUESTS], 10, window=60)
        clock.t += 10
    with pytest.raises(RateLimitExceededError) as caught:
        await limiter.admit("acme", [REQUESTS], 10, window=60)
    assert (caught.value.level, caught.value.retry_after) == ("project", 30.0)  # the first leaves at 1060
    assert caught.value.message == (
        "Project rate limit reached: project/review allows 3 requests per minute; retry in 30.0s"
    )
    clock.t += 30
    await limiter.admit("acme", [REQUESTS], 10, window=60)


async def test_tokens_count_the_reservation_then_the_real_usage_and_all_lines_or_none():
    clock = Clock()
    limiter = LocalAdmissionWindows(clock)
    first = await limiter.admit("acme", [TOKENS, REQUESTS], 600, window=60)
    with pytest.raises(RateLimitExceededError) as caught:
        await limiter.admit("acme", [REQUESTS, TOKENS], 600, window=60)
    assert caught.value.level == "account"
    await limiter.settle(first, 100)  # the call used far less than it reserved
    await limiter.admit("acme", [REQUESTS, TOKENS], 600, window=60)
    # The refused admission left nothing behind: two requests are counted, not three.
    await limiter.admit("acme", [REQUESTS], 0, window=60)
    with pytest.raises(RateLimitExceededError):
        await limiter.admit("acme", [REQUESTS], 0, window=60)


async def test_redis_windows_behave_the_same(redis_config):
    from zarniwoop.limits.redis_state import open_redis

    state = open_redis(redis_config["redis_url"], redis_config["redis_prefix"])
    try:
        limiter = RedisAdmissionWindows(state)
        tickets = [await limiter.admit("acme", [REQUESTS, TOKENS], 300, window=1.0) for _ in range(3)]
        with pytest.raises(RateLimitExceededError) as caught:
            await limiter.admit("acme", [REQUESTS], 0, window=1.0)
        assert 0 < caught.value.retry_after <= 1.0
        await limiter.release(tickets[0])
        await limiter.settle(tickets[1], 50)
        await limiter.admit("acme", [REQUESTS, TOKENS], 600, window=1.0)  # 50 + 300 + 600 ≤ 1000
        await asyncio.sleep(1.05)
        await limiter.admit("acme", [REQUESTS], 0, window=1.0)  # the window slid on
    finally:
        await state.aclose()


PROMPT = "Classify this abstract."


def reply(_request) -> Reply:
    body = {
        "id": "msg_x", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "topic 3"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }  # fmt: skip
    return Reply.json(body)


def tenant_config(emulator, window: float, extra: dict | None = None) -> dict:
    return {
        "settings": {"ai.provider.anthropic.baseUrl": emulator.url, "ai.rateLimit.windowSeconds": window},
        "tenants": {
            "acme": {
                "llm": {"quota": {"requests_per_minute": 10}},  # the tenant level
                "accounts": {
                    "ann": {
                        "llm": {
                            "providers": [
                                {
                                    "provider": "anthropic",
                                    "model": "claude-haiku-4-5",
                                    "api_key": "sk-ant-RATE-1",
                                }
                            ],
                            "preferences": {"default_model": "anthropic:claude-haiku-4-5"},
                        }
                    }
                },
            }
        },
        **(extra or {}),
    }


async def test_over_the_limit_is_refused_before_any_upstream_call_with_retry_after(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, reply)
    path = write_config(tmp_path, tenant_config(emulator, 60))
    async with await Runtime.open(path, home=tmp_path / "home") as runtime:
        manager = await runtime.llm()
        manager._catalog = None
        call = LlmCall(tenant="acme", account="ann")
        for _ in range(10):
            await manager.chat(call, ChatRequest.prompt(PROMPT, max_tokens=50))
        with pytest.raises(RateLimitExceededError) as caught:
            await manager.chat(call, ChatRequest.prompt(PROMPT, max_tokens=50))
        assert isinstance(caught.value, QuotaExceededError) and caught.value.exit_code == 4
        assert caught.value.level == "tenant"
        assert 55 < caught.value.retry_after <= 60
        assert len(emulator.requests(ANTHROPIC_PATH)) == 10
        rows = await runtime.db.fetchall(
            "SELECT outcome, COUNT(*) FROM llm_usage_records GROUP BY outcome ORDER BY outcome"
        )
        assert rows == [("blocked", 1), ("ok", 10)]


@pytest.mark.slow
async def test_two_processes_sharing_redis_make_at_most_10_upstream_calls_per_window(
    tmp_path, emulator, redis_config
):
    """`requests_per_minute: 10`, counted over a 5 s window (`ai.rateLimit.windowSeconds`) so the
    test does not take minutes: each burst of 2 × 12 calls gets exactly 10 upstream."""
    emulator.add(ANTHROPIC_PATH, reply)
    window = 5.0  # long enough that a busy machine's stretched burst of 24 still falls in one window
    path = write_config(tmp_path, tenant_config(emulator, window, redis_config))
    home = tmp_path / "home"
    async with await Runtime.open(path, home=home):
        pass  # database, master key and the inline key sealed before the workers start
    args = {
        "mode": "manager", "config": str(path), "home": str(home), "calls": 12, "prompt": PROMPT,
        "max_tokens": 50, "call": {"tenant": "acme", "project": "default", "account": "ann"},
    }  # fmt: skip
    first = await asyncio.to_thread(run_workers, 2, args)
    assert sum(r["ok"] for r in first) == 10 and sum(r["blocked"] for r in first) == 14
    assert len(emulator.requests(ANTHROPIC_PATH)) == 10
    await asyncio.sleep(window)
    second = await asyncio.to_thread(run_workers, 2, args)
    assert sum(r["ok"] for r in second) == 10
    calls = sorted(r.at for r in emulator.requests(ANTHROPIC_PATH))
    assert len(calls) == 20
    # Nowhere do 11 upstream calls fall within one window.
    assert all(calls[i + 10] - calls[i] >= window * 0.75 for i in range(len(calls) - 10))


async def test_failed_attempts_count_too_so_retries_never_exceed_the_limit(tmp_path, emulator):
    overloaded = Reply.json(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, status=529
    )
    emulator.add(ANTHROPIC_PATH, lambda _request: overloaded)
    tree = tenant_config(emulator, 60)
    tree["tenants"]["acme"]["llm"]["quota"]["requests_per_minute"] = 3
    tree["tenants"]["acme"]["accounts"]["ann"]["llm"]["failover"] = {"max_retries": 1, "retry_delay_ms": 0}
    path = write_config(tmp_path, tree)
    async with await Runtime.open(path, home=tmp_path / "home") as runtime:
        manager = await runtime.llm()
        manager._catalog = None
        call = LlmCall(tenant="acme", account="ann")
        with pytest.raises(NoProviderAvailableError):
            await manager.chat(call, ChatRequest.prompt(PROMPT, max_tokens=50))  # 529, retry, 529
        with pytest.raises(RateLimitExceededError):
            await manager.chat(call, ChatRequest.prompt(PROMPT, max_tokens=50))  # 529, then refused
        assert len(emulator.requests(ANTHROPIC_PATH)) == 3
