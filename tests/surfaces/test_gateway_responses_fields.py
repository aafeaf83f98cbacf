"""Every field the `openai` SDK's `responses.create` can send, on each upstream shape (issue 43): the
native upstream gets it as sent (or as the gateway's table maps it), each bridged wire maps it or
answers a 400 naming it — none is dropped. A field the installed SDK adds and this table does not
know fails the test by name, so a new field is decided, not forgotten."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

import pytest

from ..support.responses_gateway import (
    MODELS,
    WEATHER,
    WIRES,
    Gateway,
    module_gateway,
)

pytestmark = pytest.mark.xdist_group(__name__)

gateway = pytest.fixture(scope="module", name="gateway")(module_gateway)


openai = pytest.importorskip("openai", reason="the table is the openai SDK's (pip install openai)")

REFUSED = "400"
Check = Callable[[dict[str, Any], Any, Gateway], bool]
"""(the upstream's body, the SDK's response, the gateway) → the field arrived, mapped."""

SDK_ONLY = {"model", "input", "stream", "extra_headers", "extra_query", "extra_body", "timeout"}
"""Parameters that are not extra request fields: the base request, the transport's options."""


def _system(body: dict[str, Any]) -> str:
    return json.dumps(body.get("system") or body.get("systemInstruction") or "")


def _config(body: dict[str, Any]) -> dict[str, Any]:
    return body.get("generationConfig") or {}


def _usage_session(gw: Gateway, response: Any) -> str | None:
    usage_id = response.model_extra["zarniwoop"]["usage_id"]
    [(session,)] = gw.rows("SELECT session_id FROM llm_usage_records WHERE id = ?", usage_id)
    return session


# field → (a value the SDK may send, {wire: REFUSED | a check of the mapping}); a native field is
# checked as forwarded unless the row says otherwise
FIELDS: dict[str, tuple[Any, dict[str, Any]]] = {
    "access_programs": (["p1"], {"anthropic": REFUSED, "gemini": REFUSED}),
    "background": (True, {"responses": REFUSED, "anthropic": REFUSED, "gemini": REFUSED}),
    "background_options": ({"x": 1}, {"anthropic": REFUSED, "gemini": REFUSED}),
    "context_management": ([{"type": "compaction"}], {"anthropic": REFUSED, "gemini": REFUSED}),
    "conversation": ("conv_1", {"responses": REFUSED, "anthropic": REFUSED, "gemini": REFUSED}),
    "image": ({"x": 1}, {"anthropic": REFUSED, "gemini": REFUSED}),
    "include": (["reasoning.encrypted_content"], {"anthropic": REFUSED, "gemini": REFUSED}),
    "instructions": (
        "Answer in French.",
        {
            "anthropic": lambda b, r, g: "Answer in French." in _system(b),
            "gemini": lambda b, r, g: "Answer in French." in _system(b),
        },
    ),
    "max_output_tokens": (
        77,
        {
            "anthropic": lambda b, r, g: b["max_tokens"] == 77,
            "gemini": lambda b, r, g: _config(b)["maxOutputTokens"] == 77,
        },
    ),
    "max_tool_calls": (3, {"anthropic": REFUSED, "gemini": REFUSED}),
    "metadata": (
        {"ticket": "7"},
        {
            "anthropic": lambda b, r, g: r.metadata == {"ticket": "7"},
            "gemini": lambda b, r, g: r.metadata == {"ticket": "7"},
        },
    ),
    "moderation": ({"x": 1}, {"anthropic": REFUSED, "gemini": REFUSED}),
    "parallel_tool_calls": (
        False,
        {
            "anthropic": lambda b, r, g: b["tool_choice"]["disable_parallel_tool_use"] is True,
            "gemini": REFUSED,
        },
    ),
    "previous_response_id": (
        "stored",
        {
            "responses": lambda b, r, g: "previous_response_id" not in b and "remember me" in json.dumps(b),
            "anthropic": lambda b, r, g: "remember me" in json.dumps(b),
            "gemini": lambda b, r, g: "remember me" in json.dumps(b),
        },
    ),
    "prompt": ({"id": "pmpt_1"}, {"anthropic": REFUSED, "gemini": REFUSED}),
    "prompt_cache_key": ("k1", {"anthropic": REFUSED, "gemini": REFUSED}),
    "prompt_cache_options": ({"x": 1}, {"anthropic": REFUSED, "gemini": REFUSED}),
    "prompt_cache_retention": ("24h", {"anthropic": REFUSED, "gemini": REFUSED}),
    "reasoning": ({"effort": "low"}, {"anthropic": REFUSED, "gemini": REFUSED}),
    "safety_identifier": ("user-7", {"anthropic": REFUSED, "gemini": REFUSED}),
    "service_tier": ("flex", {"anthropic": REFUSED, "gemini": REFUSED}),
    "store": (
        False,
        {
            "responses": lambda b, r, g: b["store"] is False and r.store is False,
            "anthropic": lambda b, r, g: r.store is False,
            "gemini": lambda b, r, g: r.store is False,
        },
    ),
    "stream_options": (
        {"include_obfuscation": False},
        # the gateway's own event stream carries no obfuscation: nothing to send a bridged wire
        {
            "anthropic": lambda b, r, g: r.status == "completed",
            "gemini": lambda b, r, g: r.status == "completed",
        },
    ),
    "temperature": (
        0.3,
        {
            "anthropic": lambda b, r, g: b["temperature"] == 0.3,
            "gemini": lambda b, r, g: _config(b)["temperature"] == 0.3,
        },
    ),
    "text": (
        {"format": {"type": "json_object"}},
        {
            "anthropic": lambda b, r, g: "JSON" in _system(b),
            "gemini": lambda b, r, g: _config(b)["responseMimeType"] == "application/json",
        },
    ),
    "tool_choice": (
        "required",
        {
            "anthropic": lambda b, r, g: b["tool_choice"] == {"type": "any"},
            "gemini": lambda b, r, g: b["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}},
        },
    ),
    "tools": (
        [WEATHER],
        {
            "anthropic": lambda b, r, g: [t["name"] for t in b["tools"]] == ["get_weather"],
            "gemini": lambda b, r, g: b["tools"][0]["functionDeclarations"][0]["name"] == "get_weather",
        },
    ),
    "top_logprobs": (2, {"anthropic": REFUSED, "gemini": REFUSED}),
    "top_p": (
        0.5,
        {"anthropic": lambda b, r, g: b["top_p"] == 0.5, "gemini": lambda b, r, g: _config(b)["topP"] == 0.5},
    ),
    "truncation": ("auto", {"anthropic": REFUSED, "gemini": REFUSED}),
    "user": (
        "session-9",
        {
            "anthropic": lambda b, r, g: b["metadata"] == {"user_id": "session-9"},
            "gemini": lambda b, r, g: _usage_session(g, r) == "session-9",
        },
    ),
}


def test_the_table_knows_every_field_the_sdk_can_send() -> None:
    from openai.resources.responses import Responses

    sdk = set(inspect.signature(Responses.create).parameters) - {"self"} - SDK_ONLY
    assert sorted(sdk - set(FIELDS)) == [], "fields of the SDK this table does not decide"


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_each_field_is_forwarded_mapped_or_refused_by_name(gateway: Gateway, field: str, wire: str) -> None:
    value, outcomes = FIELDS[field]
    client = gateway.client()
    if field == "previous_response_id":
        value = client.responses.create(model=MODELS[wire], input="remember me").id
    gateway.emulator.clear_log()
    base: dict[str, Any] = {"model": MODELS[wire], "input": "hi"}
    if field in ("parallel_tool_calls", "tool_choice"):
        base["tools"] = [WEATHER]  # meaningful with tools only
    expected = outcomes.get(wire)
    if expected == REFUSED:
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(**base, extra_body={field: value})
        assert caught.value.body["param"].split(".")[0] == field, caught.value.body
        assert gateway.upstream.bodies(wire) == []
        return
    response = client.responses.create(**base, extra_body={field: value})
    [body] = gateway.upstream.bodies(wire)
    if expected is None:  # native: as sent
        assert body[field] == value
    else:
        assert expected(body, response, gateway), body
