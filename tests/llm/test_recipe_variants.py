"""Size-tier prompt variants (seed 002 "Model size as Tier-Hint"): a recipe's `variants: {SMALL: …,
LARGE: …}` — the size of the model the call resolves to picks one; unknown size keeps the recipe's."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from zarniwoop.contract.errors import ConfigError
from zarniwoop.llm.light import LightLlm, Recipe
from zarniwoop.llm.manager import LlmCall

from ..support.emulator import Reply
from ..support.llm import ANTHROPIC_PATH, gemini_path, manager_for, open_llm_runtime, seed_tenants

pytestmark = pytest.mark.anyio

RECIPE = """
name: classify
system: You sort abstracts.
prompt: "Topic of: {{ text }}"
schema: {type: object, properties: {topic: {type: string}}, required: [topic]}
variants:
  SMALL: "One word. Topic of: {{ text }}"
  LARGE: {system: You sort abstracts; weigh every sentence.}
"""
ANSWER = '{"topic": "nlp"}'


def anthropic_json(_request) -> Reply:
    return Reply.json({
        "id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": ANSWER}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": 6},
    })  # fmt: skip


def gemini_json(_request) -> Reply:
    return Reply.json({
        "candidates": [{"content": {"role": "model", "parts": [{"text": ANSWER}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 6, "totalTokenCount": 26},
    })  # fmt: skip


async def test_the_resolved_models_size_picks_the_variant(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_json)
    emulator.add(gemini_path("gemini-2.5-flash"), gemini_json)
    recipe = Recipe.from_yaml(RECIPE)
    async with await open_llm_runtime(tmp_path, seed_tenants(emulator)) as runtime:
        manager = await manager_for(runtime)
        base = LlmCall(tenant="acme", project="architecture", account="mike")
        large = LightLlm(manager, replace(base, model="anthropic:claude-sonnet-4-5"))
        small = LightLlm(manager, replace(base, model="gemini:gemini-2.5-flash"))
        assert (await large.call_for_json(recipe, {"text": "transformers"})).data == {"topic": "nlp"}
        assert (await small.call_for_json(recipe, {"text": "transformers"})).data == {"topic": "nlp"}

        sent_large = json.loads(emulator.requests(ANTHROPIC_PATH)[0].body)  # claude-sonnet-4-5 is LARGE
        assert sent_large["system"].startswith("You sort abstracts; weigh every sentence.\n")
        assert sent_large["messages"][-1]["content"] in (
            "Topic of: transformers",
            [{"type": "text", "text": "Topic of: transformers"}],
        )
        sent_small = json.dumps(json.loads(emulator.requests(gemini_path("gemini-2.5-flash"))[0].body))
        assert "One word. Topic of: transformers" in sent_small  # gemini-2.5-flash is SMALL
        assert "You sort abstracts." in sent_small  # SMALL replaced only the prompt


def test_a_variant_outside_small_and_large_names_the_field():
    with pytest.raises(ConfigError) as caught:
        Recipe.from_yaml(RECIPE.replace("  SMALL:", "  MEDIUM:"), source="classify")
    assert caught.value.key.startswith("classify.variants.MEDIUM")


def test_a_variant_prompt_with_a_template_error_is_refused_at_load():
    with pytest.raises(ConfigError) as caught:
        Recipe.from_yaml(RECIPE.replace("One word. Topic of: {{ text }}", "{{ text"), source="classify")
    assert caught.value.key == "classify.variants.SMALL.prompt"
