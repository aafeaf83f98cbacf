"""After the call: observers get one `CallEvent` per call (success, failure, refusal); the threshold
webhook is scheduled, not awaited inside the call, and `flush()` / closing the runtime sends it."""

from __future__ import annotations

import threading
import time

import pytest

from zarniwoop.contract.errors import QuotaExceededError
from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall
from zarniwoop.llm.observers import CallEvent

from ..support.emulator import RecordedRequest, Reply
from ..support.llm import ANTHROPIC_PATH, anthropic_reply, manager_for, open_llm_runtime, seed_tenants

pytestmark = pytest.mark.anyio

MIKE = LlmCall(tenant="acme", project="architecture", account="mike", purpose="execution")
DAILY = QuotaLine("account", "mike", "daily", 500_000)
HOOK_DELAY = 1.5


def with_slow_webhook(emulator) -> dict:
    emulator.add("/hook", Reply(status=204, delay=HOOK_DELAY))
    tree = seed_tenants(emulator)
    tree["acme"]["settings"]["ai.quota.webhookUrl"] = emulator.url + "/hook"
    return tree


async def test_a_slow_webhook_does_not_delay_the_call_and_flush_sends_it(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    released, answered = threading.Event(), threading.Event()

    def slow_hook(request: RecordedRequest) -> Reply:
        # answers only once the test lets it (a guard of 60 s ends a hung test), HOOK_DELAY later
        released.wait(60)
        time.sleep(HOOK_DELAY)
        answered.set()
        return Reply(status=204)

    async with await open_llm_runtime(tmp_path, with_slow_webhook(emulator)) as runtime:
        emulator.add("/hook", slow_hook)
        await runtime.quota_ledger.charge("acme", DAILY, 399_980)  # this call crosses 80 %
        manager = await manager_for(runtime)
        await manager.chat(MIKE, ChatRequest.prompt("x"))
        # The call returned while the webhook could not have been answered (whether or not the
        # POST had gone out yet): ordered by an event, not timed.
        assert not answered.is_set()
        released.set()
        await manager.flush()
        assert answered.is_set()  # flush waited for the POST's answer
        [hook] = emulator.requests("/hook")
        assert hook.json()["threshold"] == 80


async def test_closing_the_runtime_flushes_a_scheduled_webhook(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    async with await open_llm_runtime(tmp_path, with_slow_webhook(emulator)) as runtime:
        await runtime.quota_ledger.charge("acme", DAILY, 399_980)
        manager = await manager_for(runtime)
        await manager.chat(MIKE, ChatRequest.prompt("x"))
    [hook] = emulator.requests("/hook")
    assert time.monotonic() >= hook.at + HOOK_DELAY  # the close waited for the POST's answer
    assert hook.json()["threshold"] == 80


class Recorder:
    def __init__(self) -> None:
        self.events: list[CallEvent] = []

    async def on_call(self, event: CallEvent) -> None:
        self.events.append(event)

    async def flush(self) -> None:
        return None


class Broken:
    async def on_call(self, event: CallEvent) -> None:
        raise RuntimeError("observer bug")

    async def flush(self) -> None:
        return None


async def test_observers_see_every_call_and_a_broken_one_breaks_nothing(tmp_path, emulator, caplog):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    async with await open_llm_runtime(tmp_path, seed_tenants(emulator)) as runtime:
        manager = await manager_for(runtime)
        recorder = Recorder()
        manager.observers = (Broken(), *manager.observers, recorder)
        result = await manager.chat(MIKE, ChatRequest.prompt("x"))
        await runtime.quota_ledger.charge("acme", DAILY, 500_000)
        with pytest.raises(QuotaExceededError):
            await manager.chat(MIKE, ChatRequest.prompt("x"))

        ok, blocked = recorder.events
        assert (ok.record.id, ok.record.outcome, ok.record.tokens_total) == (result.usage_id, "ok", 41)
        assert {(s.line.level, s.line.period) for s in ok.quota} >= {
            ("account", "daily"),
            ("team", "monthly"),
        }
        assert (blocked.record.outcome, blocked.quota) == ("blocked", ())
        assert "LLM call observer Broken failed" in caplog.text
        # The default observers still ran after the broken one: both calls have usage records.
        rows = await runtime.db.fetchall("SELECT outcome FROM llm_usage_records ORDER BY created_at")
        assert rows == [("ok",), ("blocked",)]
