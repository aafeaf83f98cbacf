"""Anthropic's Messages API on the gateway (issue 43), driven by the real `anthropic` SDK with a
Zarniwoop token as its `api_key` (sent as `x-api-key`): `messages.create` with tools and
`messages.stream` against an Anthropic-wire loopback upstream (native: the upstream's body compared
field by field with what the SDK sent, the answer as the upstream gave it) and an OpenAI-wire one
(bridged by the mapping table), fields a wire cannot carry refused with a 400 naming them, errors
in Anthropic's shape, `count_tokens` answering the estimate the gateway holds, every call in the
ledger. In-process (Starlette's test client: the fast tier)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from zarniwoop.surfaces.http.anthropic_wire import MessagesRequest, to_chat_request

from ..support.emulator import Reply
from ..support.gateway import MIKE_KEYS, MODELS, app_gateway, openai_text_stream, upstream_path
from ..support.gateway import LiveGateway as Gateway
from ..support.paths import optional_fixture_bytes

pytestmark = pytest.mark.xdist_group(__name__)

anthropic = pytest.importorskip("anthropic", reason="these tests drive the real anthropic SDK")

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
TOOL_LOOP = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 C, sunny"},
            {"type": "text", "text": "And tomorrow?"},
        ],
    },
]
OPENAI_TOOL_ANSWER = {
    "id": "chatcmpl-tools",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_7",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43},
}


def _recorded(name: str) -> bytes:
    body = optional_fixture_bytes("llm", "anthropic", name)
    if body is None:
        pytest.skip("../shared/fixtures is absent: recorded provider bodies are not available here")
    return body


def sdk(gw: Gateway, **options: Any) -> Any:
    """The anthropic SDK on the in-process gateway; the token goes as `x-api-key` unless told."""
    if "auth_token" not in options:
        options.setdefault("api_key", gw.setup.token)
    return anthropic.Anthropic(base_url=gw.url, http_client=gw.http, max_retries=0, **options)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tokens = {"no-account": ("transformer-review", None)}
    with app_gateway(tmp_path_factory.mktemp("messages"), tokens=tokens) as gateway:
        yield gateway


# -- native: an Anthropic-wire upstream ------------------------------------------------------------


def test_create_with_tools_goes_to_an_anthropic_upstream_as_the_sdk_sent_it(gw: Gateway) -> None:
    recorded = _recorded("messages-text-and-tool-use.json")
    gw.emulator.add(
        upstream_path("anthropic"), Reply(body=recorded, headers={"Content-Type": "application/json"})
    )
    params: dict[str, Any] = {
        "model": MODELS["anthropic"],
        "max_tokens": 300,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": TOOL_LOOP,
        "tools": [WEATHER, {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "stop_sequences": ["END"],
        "metadata": {"user_id": "u-42"},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "service_tier": "auto",
        "cache_control": {"type": "ephemeral"},
    }
    # fields this SDK version no longer names, as older clients and Claude Code still send them
    older = {"temperature": 0.2, "top_k": 5, "top_p": 0.9, "some_future_field": {"x": 1}}
    message = sdk(gw).messages.create(**params, extra_body=older)
    [upstream] = gw.emulator.requests(upstream_path("anthropic"))
    assert upstream.json() == {**params, **older, "model": "claude-sonnet-4-5"}  # field by field
    assert upstream.header("x-api-key") == MIKE_KEYS["anthropic"]  # mike's key, never the gateway token
    assert (
        upstream.header("anthropic-version")
        == anthropic.Anthropic(api_key="-").default_headers["anthropic-version"]
    )
    expected = json.loads(recorded)
    assert [b.model_dump(exclude_none=True) for b in message.content] == expected["content"]
    assert (message.id, message.stop_reason) == (expected["id"], "tool_use")
    assert message.usage.input_tokens == expected["usage"]["input_tokens"]
    served = message.model_extra["zarniwoop"]
    assert served["instance"] == "anthropic" and served["credential_source"] == "account"
    assert gw.usage_row(served["usage_id"]) == (
        "mike",
        "transformer-review",
        "anthropic",
        "claude-sonnet-4-5",
        "default",
        expected["usage"]["input_tokens"],
        expected["usage"]["output_tokens"],
        "ok",
    )


def test_stream_from_an_anthropic_upstream_is_relayed_event_by_event(gw: Gateway) -> None:
    recorded = _recorded("stream-tool-use.sse")
    gw.emulator.add(
        upstream_path("anthropic"), Reply(body=recorded, headers={"Content-Type": "text/event-stream"})
    )
    upstream_events = [
        json.loads(line[6:]) for line in recorded.decode().splitlines() if line.startswith("data: {")
    ]
    with sdk(gw).messages.stream(
        model=MODELS["anthropic"],
        max_tokens=200,
        messages=[{"role": "user", "content": "Name two pelicans"}],
        tools=[{"name": "pelican_name_generator", "input_schema": {"type": "object", "properties": {}}}],
    ) as stream:
        seen = [e.type for e in stream]
        final = stream.get_final_message()
    assert seen.count("content_block_stop") == sum(
        1 for e in upstream_events if e["type"] == "content_block_stop"
    )
    assert [b.id for b in final.content] == [
        e["content_block"]["id"] for e in upstream_events if e["type"] == "content_block_start"
    ]
    delta = next(e for e in upstream_events if e["type"] == "message_delta")
    assert final.stop_reason == delta["delta"]["stop_reason"]
    assert final.usage.output_tokens == delta["usage"]["output_tokens"]
    [upstream] = gw.emulator.requests(upstream_path("anthropic"))
    assert upstream.json()["stream"] is True


# -- bridged: an OpenAI-wire upstream -------------------------------------------------------------


def test_create_with_tools_is_bridged_to_an_openai_upstream(gw: Gateway) -> None:
    gw.emulator.add(upstream_path("openai"), Reply.json(OPENAI_TOOL_ANSWER))
    message = sdk(gw).messages.create(
        model=MODELS["openai"],
        max_tokens=300,
        system="Be brief.",
        messages=TOOL_LOOP,
        tools=[WEATHER],
        tool_choice={"type": "any", "disable_parallel_tool_use": True},
        stop_sequences=["END"],
        metadata={"user_id": "u-42"},
        cache_control={"type": "ephemeral"},
        extra_body={"temperature": 0.2, "top_p": 0.9},
    )
    [upstream] = gw.emulator.requests(upstream_path("openai"))
    sent = upstream.json()
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "content": "18 C, sunny", "tool_call_id": "toolu_1"},
        {"role": "user", "content": "And tomorrow?"},
    ]
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": WEATHER["description"],
                "parameters": WEATHER["input_schema"],
            },
        }
    ]
    assert (sent["tool_choice"], sent["parallel_tool_calls"], sent["stop"], sent["user"]) == (
        "required",
        False,
        ["END"],
        "u-42",
    )
    assert (sent["max_tokens"], sent["temperature"], sent["top_p"]) == (300, 0.2, 0.9)
    assert message.stop_reason == "tool_use"
    assert [b.model_dump(exclude_none=True) for b in message.content] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "call_7", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    assert (message.usage.input_tokens, message.usage.output_tokens) == (31, 12)
    row = gw.usage_row(message.model_extra["zarniwoop"]["usage_id"])
    assert row == ("mike", "transformer-review", "openai", "gpt-4o-mini", "default", 31, 12, "ok")


def test_stream_is_bridged_to_an_openai_upstream(gw: Gateway) -> None:
    text = "The gateway streams this answer word by word."
    gw.emulator.add(
        upstream_path("openai"),
        Reply(body=openai_text_stream(text, (21, 9)), headers={"Content-Type": "text/event-stream"}),
    )
    with sdk(gw).messages.stream(
        model=MODELS["openai"], max_tokens=100, messages=[{"role": "user", "content": "stream please"}]
    ) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(pieces) == text and len(pieces) == len(text.split())
    assert final.content[0].text == text and final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (21, 9)


def test_create_is_bridged_to_a_gemini_upstream(gw: Gateway) -> None:
    answer = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 17, "candidatesTokenCount": 5, "totalTokenCount": 22},
    }
    gw.emulator.add(upstream_path("gemini"), Reply.json(answer))
    message = sdk(gw).messages.create(
        model=MODELS["gemini"], max_tokens=64, system="Be brief.", messages=TOOL_LOOP, tools=[WEATHER]
    )
    [upstream] = gw.emulator.requests(upstream_path("gemini"))
    sent = upstream.json()
    assert sent["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert sent["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    assert sent["contents"][2]["parts"][0]["functionResponse"]["name"] == "get_weather"  # matched by name
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "tool_use" and message.content[0].input == {"city": "Oslo"}
    assert (message.usage.input_tokens, message.usage.output_tokens) == (17, 5)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"extra_body": {"top_k": 5}}, "top_k"),
        ({"thinking": {"type": "enabled", "budget_tokens": 1024}}, "thinking"),
        ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools[0].type"),
        ({"service_tier": "auto"}, "service_tier"),
        ({"container": "c-1"}, "container"),
        ({"output_config": {"effort": "low"}}, "output_config"),
        ({"inference_geo": "us"}, "inference_geo"),
        ({"extra_body": {"some_future_field": 1}}, "some_future_field"),
        ({"tools": [{**WEATHER, "input_examples": [{"city": "Oslo"}]}]}, "tools[0].input_examples"),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "citations": []}]}]},
            "messages[0].content[0].citations",
        ),
    ],
)
def test_fields_a_bridged_wire_cannot_carry_are_refused_naming_them(
    gw: Gateway, extra: dict[str, Any], field: str
) -> None:
    gw.emulator.add(upstream_path("openai"), Reply.json(OPENAI_TOOL_ANSWER))
    with pytest.raises(anthropic.BadRequestError) as caught:
        params = {
            "model": MODELS["openai"],
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "hi"}],
        }
        sdk(gw).messages.create(**{**params, **extra})
    assert caught.value.status_code == 400
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert caught.value.body["error"]["message"].startswith(field + ":")
    assert gw.emulator.requests(upstream_path("openai")) == []


def test_an_image_block_is_carried_to_a_bridged_wire_in_its_place(gw: Gateway) -> None:
    # was refused naming `messages[0].content[1].type` until images were bridged
    # (tests/surfaces/test_gateway_bridged_images.py)
    gw.emulator.add(upstream_path("openai"), Reply.json(OPENAI_TOOL_ANSWER))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    sdk(gw).messages.create(
        model=MODELS["openai"],
        max_tokens=100,
        messages=[{"role": "user", "content": [{"type": "text", "text": "what is it?"}, image]}],
    )
    [sent] = gw.emulator.requests(upstream_path("openai"))
    assert sent.json()["messages"][0]["content"] == [
        {"type": "text", "text": "what is it?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]


# -- auth, version, errors, count_tokens ----------------------------------------------------------


def test_a_bearer_token_works_as_well_as_x_api_key(gw: Gateway) -> None:
    gw.emulator.add(upstream_path("openai"), Reply.json(OPENAI_TOOL_ANSWER))
    client = sdk(gw, auth_token=gw.setup.token)
    message = client.messages.create(
        model=MODELS["openai"], max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text == "Checking."


def test_a_bad_token_is_a_401_in_anthropics_shape(gw: Gateway) -> None:
    with pytest.raises(anthropic.AuthenticationError) as caught:
        sdk(gw, api_key="zw_not-a-token").messages.create(
            model=MODELS["openai"], max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid or revoked token"},
    }


def test_a_token_without_an_account_is_a_403_in_anthropics_shape(gw: Gateway) -> None:
    with pytest.raises(anthropic.PermissionDeniedError) as caught:
        sdk(gw, api_key=gw.setup.tokens["no-account"]).messages.create(
            model=MODELS["openai"], max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.body["error"]["type"] == "permission_error"
    assert "--account" in caught.value.body["error"]["message"]


def test_a_malformed_anthropic_version_is_refused_naming_the_header(gw: Gateway) -> None:
    answer = gw.http.post(
        "/v1/messages",
        headers={"x-api-key": gw.setup.token, "anthropic-version": "latest"},
        json={"model": MODELS["openai"], "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["message"].startswith("anthropic-version:")


def test_a_missing_max_tokens_is_a_400_naming_it(gw: Gateway) -> None:
    answer = gw.http.post(
        "/v1/messages",
        headers={"x-api-key": gw.setup.token},
        json={"model": MODELS["openai"], "messages": [{"role": "user", "content": "hi"}]},
    )
    assert answer.status_code == 400
    assert answer.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
    }


def test_an_unknown_model_is_a_404_in_anthropics_shape(gw: Gateway) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        sdk(gw).messages.create(
            model="nosuch:model", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.body["error"]["type"] == "not_found_error"


def test_count_tokens_answers_the_estimate_the_gateway_holds(gw: Gateway) -> None:
    params = {"model": MODELS["anthropic"], "system": "Be brief.", "messages": TOOL_LOOP, "tools": [WEATHER]}
    counted = sdk(gw).messages.count_tokens(**params)
    body = {**params, "max_tokens": 1}
    expected = to_chat_request(MessagesRequest.model_validate(body), body).estimated_input_tokens()
    assert counted.input_tokens == expected
    assert gw.emulator.requests() == []  # nothing went upstream


def test_the_openapi_document_names_the_new_routes_schemas(gw: Gateway) -> None:
    document = gw.http.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    for path, name in (
        ("/v1/messages", "MessagesRequest"),
        ("/v1/messages/count_tokens", "CountTokensRequest"),
        ("/v1/embeddings", "EmbeddingRequest"),
    ):
        body = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{name}"}
        assert name in schemas
    assert {"max_tokens", "messages", "tools", "tool_choice", "thinking", "stop_sequences"} <= set(
        schemas["MessagesRequest"]["properties"]
    )
    assert set(schemas["EmbeddingRequest"]["properties"]) == {
        "model",
        "input",
        "dimensions",
        "encoding_format",
        "user",
    }
    assert list(document["paths"]["/v1/models"]) == ["get"]
