"""LightLlm: recipes (YAML, Jinja2 prompt, JSON schema), validated answers, one repair retry."""

from __future__ import annotations

import json

import pytest

from zarniwoop.contract.errors import ConfigError, InvalidRequestError, ParseError
from zarniwoop.llm.light import LightLlm, Recipe, RecipeStore, check_answer
from zarniwoop.llm.manager import LlmCall

from ..support.emulator import Reply
from ..support.llm import ANTHROPIC_PATH, manager_for, open_llm_runtime, seed_tenants
from ..support.wording import jsonschema_says

pytestmark = pytest.mark.anyio

MIKE = LlmCall(tenant="acme", project="architecture", account="mike")


def answer(text: str) -> dict:
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 50, "output_tokens": 10},
    }  # fmt: skip


def replies(*texts: str):
    queue = list(texts)

    def route(_request):
        return Reply.json(answer(queue.pop(0)))

    return route


def light_tenants(emulator):
    tree = seed_tenants(emulator)
    tree["acme"]["accounts"]["mike"]["llm"]["preferences"]["light_model"] = "claude-sonnet-4-5"
    return tree


async def test_a_valid_answer_comes_back_validated_in_one_call(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, replies('```json\n{"label": "biology", "confidence": 0.9}\n```'))
    async with await open_llm_runtime(tmp_path, light_tenants(emulator)) as runtime:
        light = LightLlm(await manager_for(runtime), MIKE)
        out = await light.call_for_json(
            "zarniwoop-classify", {"labels": ["physics", "biology"], "text": "CRISPR in mice"}
        )
        assert out.data == {"label": "biology", "confidence": 0.9}
        assert out.repaired is False and len(out.calls) == 1
        assert out.result.purpose == "light"
        sent = emulator.requests(ANTHROPIC_PATH)[0].json()
        assert sent["messages"][0]["content"].startswith("Labels: physics, biology\n\nText:\nCRISPR in mice")
        assert sent["system"].startswith(
            "You classify texts. Answer with JSON only.\n\nAnswer with one JSON object only"
        )
        assert (
            '"required": ["label", "confidence"]' in sent["system"]
        )  # the schema rides along on a wire without JSON mode
        assert sent["max_tokens"] == 256 and sent["temperature"] == 0


async def test_invalid_json_gets_exactly_one_repair_turn(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, replies("The label is biology.", '{"label": "biology", "confidence": 0.8}'))
    async with await open_llm_runtime(tmp_path, light_tenants(emulator)) as runtime:
        light = LightLlm(await manager_for(runtime), MIKE)
        out = await light.call_for_json("zarniwoop-classify", {"labels": ["biology"], "text": "x"})
        assert out.data == {"label": "biology", "confidence": 0.8} and out.repaired is True
        second = emulator.requests(ANTHROPIC_PATH)[1].json()["messages"]
        assert second[1] == {"role": "assistant", "content": "The label is biology."}
        assert second[2]["content"].startswith("That answer is not valid: no JSON object in the answer.")
        rows = await runtime.db.fetchone("SELECT COUNT(*), SUM(tokens_total) FROM llm_usage_records")
        assert rows == (2, 120)  # both calls are charged and recorded


async def test_a_schema_violation_after_the_repair_is_a_parse_error(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, replies('{"label": "x"}', '{"label": "x", "confidence": 7}'))
    async with await open_llm_runtime(tmp_path, light_tenants(emulator)) as runtime:
        light = LightLlm(await manager_for(runtime), MIKE)
        with pytest.raises(ParseError) as caught:
            await light.call_for_json("zarniwoop-classify", {"labels": ["a"], "text": "x"})
        too_big = jsonschema_says(7, {"maximum": 1})
        assert f"after one repair: confidence: {too_big}" in caught.value.message
        first_fix = emulator.requests(ANTHROPIC_PATH)[1].json()["messages"][-1]["content"]
        assert f"(root): {jsonschema_says({}, {'required': ['confidence']})}" in first_fix
        assert len(emulator.requests(ANTHROPIC_PATH)) == 2


async def test_a_missing_variable_is_named_before_any_call(tmp_path, emulator):
    async with await open_llm_runtime(tmp_path, light_tenants(emulator)) as runtime:
        light = LightLlm(await manager_for(runtime), MIKE)
        with pytest.raises(InvalidRequestError, match="'text' is undefined"):
            await light.call_for_json("zarniwoop-classify", {"labels": ["a"]})
        assert emulator.requests() == []


@pytest.mark.parametrize(
    ("text", "key", "reason"),
    [
        ("name: r\nprompt: hi\n", "r.schema", "Field required"),
        ("name: r\nprompt: hi\nschema: {type: nonsense}\n", "r.schema", "not a valid JSON schema"),
        ("name: r\nprompt: '{{ oops'\nschema: {type: object}\n", "r.prompt", "template syntax error"),
        (
            "name: r\nprompt: hi\nschema: {type: object}\nmax_tokens: 0\n",
            "r.max_tokens",
            "greater than or equal to 1",
        ),
        ("- a list\n", "r", "a recipe is a YAML mapping"),
    ],
)
def test_a_bad_recipe_is_a_config_error_naming_the_field(text, key, reason):
    with pytest.raises(ConfigError) as caught:
        Recipe.from_yaml(text, source="r")
    assert caught.value.key == key and reason in caught.value.reason


def test_scope_recipes_override_bundled_ones(tmp_path):
    folder = tmp_path / "acme" / "_tenant" / "recipes"
    folder.mkdir(parents=True)
    (folder / "zarniwoop-classify.yaml").write_text(
        "name: mine\nprompt: hi {{ x }}\nschema: {type: object}\n"
    )
    store = RecipeStore(tmp_path)
    assert store.load("zarniwoop-classify", "acme", "review").name == "mine"
    assert store.load("zarniwoop-classify", "beta", "review").name == "zarniwoop-classify"
    with pytest.raises(InvalidRequestError, match="no recipe named 'nope'"):
        store.load("nope")


def test_check_answer_finds_json_after_prose():
    value, problem = check_answer('Sure! {"a": 1} hope that helps', {"type": "object", "required": ["a"]})
    assert (value, problem) == ({"a": 1}, None)
    assert (
        check_answer("[1, 2]", {"type": "object"})[1]
        == f"(root): {jsonschema_says([1, 2], {'type': 'object'})}"
    )
    assert json.dumps(check_answer("{}", {"type": "object"})[0]) == "{}"
