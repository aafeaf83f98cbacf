"""`fallbackModels` (seed 002 "Distinction from params.fallbackModels"): a runtime chain tried only
after the primary model was really called and failed — per call, per recipe (`params`) and per
alias (`ai.alias.<prefix>.<rest>.fallback`); each element may be a comma cascade."""

from __future__ import annotations

import json

import pytest

from zarniwoop.ledger import UsageStore
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.light import LightLlm, Recipe
from zarniwoop.llm.manager import LlmCall

from ..support.emulator import Reply
from ..support.llm import (
    ANTHROPIC_PATH,
    Sleeps,
    gemini_path,
    gemini_reply,
    manager_for,
    open_llm_runtime,
    seed_tenants,
)
from ..support.paths import fixture_bytes

pytestmark = pytest.mark.anyio

MIKE = LlmCall(tenant="acme", project="architecture", account="mike", purpose="execution")
FLASH = gemini_path("gemini-2.5-flash")
MIKE_THEN_FLASH = LlmCall(
    tenant="acme", project="architecture", account="mike", fallback_models=("gemini:gemini-2.5-flash",)
)
"""Mike's call with Gemini Flash as its runtime fallback (after his providers failed)."""


def overloaded_route():
    """Anthropic's recorded 529, read here in the test's thread (a missing ../shared skips the test;
    it could not from the emulator's thread)."""
    body = fixture_bytes("llm", "errors", "anthropic-529-overloaded.json")

    def overloaded(_request) -> Reply:
        return Reply(status=529, body=body, headers={"Content-Type": "application/json"})

    return overloaded


def one_retry(emulator, settings: dict | None = None) -> dict:
    """The seed's tree; Mike retries a failing provider once (so the primary is called twice)."""
    tree = seed_tenants(emulator)
    tree["acme"]["accounts"]["mike"]["llm"]["failover"] = {"max_retries": 1, "retry_delay_ms": 10}
    tree["acme"]["settings"].update(settings or {})
    return tree


def gemini_json(text: str) -> Reply:
    body = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 6, "totalTokenCount": 26},
    }
    return Reply.json(body)


async def test_primary_529_twice_then_the_fallback_model_serves_and_the_record_names_both(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, overloaded_route())
    emulator.add(FLASH, gemini_reply())
    async with await open_llm_runtime(tmp_path, one_retry(emulator)) as runtime:
        manager = await manager_for(runtime, Sleeps())
        call = MIKE_THEN_FLASH
        result = await manager.chat(call, ChatRequest.prompt("Plan the review"))

        assert len(emulator.requests(ANTHROPIC_PATH)) == 2  # the primary really was called, twice
        assert len(emulator.requests(FLASH)) == 1
        assert emulator.requests(gemini_path("gemini-2.5-pro")) == []  # the chain, not the priority list
        assert (result.instance, result.model, result.credential_source) == (
            "gemini",
            "gemini-2.5-flash",
            "account",
        )
        assert [s.to_json() for s in result.failover] == [
            {"from": "anthropic", "to": "gemini", "reason": "HTTP 529 overloaded"}
        ]
        record = await UsageStore(runtime.db).get(result.usage_id)
        assert record is not None
        assert (record.instance, record.model, record.outcome) == ("gemini", "gemini-2.5-flash", "ok")
        assert [(a.instance, a.model, a.outcome, a.status) for a in record.attempts] == [
            ("anthropic", "claude-sonnet-4-5", "error", 529),
            ("anthropic", "claude-sonnet-4-5", "error", 529),
            ("gemini", "gemini-2.5-flash", "ok", None),
        ]
        assert [s.to_json() for s in record.failover] == [s.to_json() for s in result.failover]


async def test_a_healthy_primary_never_touches_the_chain(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, Reply.json({
        "id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }))  # fmt: skip
    emulator.add(FLASH, gemini_reply())
    async with await open_llm_runtime(tmp_path, one_retry(emulator)) as runtime:
        manager = await manager_for(runtime, Sleeps())
        call = MIKE_THEN_FLASH
        result = await manager.chat(call, ChatRequest.prompt("x"))
        assert (result.instance, result.failover) == ("anthropic", ())
        assert emulator.requests(FLASH) == []


async def test_the_alias_fallback_setting_is_a_chain_whose_element_may_be_a_cascade(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, overloaded_route())
    emulator.add(FLASH, gemini_reply())
    settings = {
        "ai.alias.default.analyze": "anthropic:claude-sonnet-4-5",
        # `default:nowhere` is not configured: the cascade moves on to gemini-2.5-flash.
        "ai.alias.default.analyze.fallback": "default:nowhere,gemini:gemini-2.5-flash; gemini:gemini-2.5-pro",
    }
    async with await open_llm_runtime(tmp_path, one_retry(emulator, settings)) as runtime:
        manager = await manager_for(runtime, Sleeps())
        call = LlmCall(tenant="acme", project="architecture", account="mike", model="default:analyze")
        result = await manager.chat(call, ChatRequest.prompt("x"))
        assert (result.instance, result.model) == ("gemini", "gemini-2.5-flash")
        assert len(emulator.requests(ANTHROPIC_PATH)) == 2
        assert result.spec == "default:analyze"


async def test_recipe_params_carry_the_model_and_its_fallback_models(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, overloaded_route())
    emulator.add(FLASH, gemini_json('{"topic": "nlp"}'))
    recipe = Recipe.from_yaml(
        """
name: classify
purpose: light
prompt: "Topic of: {{ text }}"
schema: {type: object, properties: {topic: {type: string}}, required: [topic]}
params:
  model: anthropic:claude-sonnet-4-5
  fallbackModels: ["gemini:gemini-2.5-flash"]
"""
    )
    assert (recipe.model, recipe.fallback_models) == (
        "anthropic:claude-sonnet-4-5",
        ("gemini:gemini-2.5-flash",),
    )
    async with await open_llm_runtime(tmp_path, one_retry(emulator)) as runtime:
        manager = await manager_for(runtime, Sleeps())
        out = await LightLlm(manager, MIKE).call_for_json(recipe, {"text": "transformers"})
        assert out.data == {"topic": "nlp"}
        assert (out.result.instance, out.result.model) == ("gemini", "gemini-2.5-flash")
        assert len(emulator.requests(ANTHROPIC_PATH)) == 2
        sent = json.loads(emulator.requests(FLASH)[0].body)
        assert "transformers" in json.dumps(sent)


def test_recipe_params_still_reject_unknown_keys():
    from zarniwoop.contract.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        Recipe.from_yaml(
            "name: r\nprompt: p\nschema: {type: object}\nparams: {fallbackModel: [x]}\n", source="r"
        )
    assert caught.value.key == "r.params.fallbackModel"
