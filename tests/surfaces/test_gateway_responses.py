"""`POST /v1/responses` driven by the real `openai` SDK (issue 43): plain answers, a function tool
loop (by `previous_response_id` and by resending items), `text.format` json_schema strict, and
`responses.stream` with `response.completed` usage — natively against an OpenAI-wire upstream
serving `/v1/responses` (its body compared field by field with what the client sent) and bridged
through Anthropic, Gemini and OpenAI Chat Completions upstreams. Refusals name their field; stored
responses are sealed, the account's alone, refused where the operator turned storage off, and
deleted by the retention job."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from pydantic import BaseModel

from zarniwoop.runtime import Runtime
from zarniwoop.storage.retention import prune
from zarniwoop.surfaces.http.responses_wire import ResponsesRequest, to_chat_request

from ..support.emulator import Reply
from ..support.gateway import openai_completion, upstream_path
from ..support.responses_gateway import (
    MODELS,
    SCHEMA,
    WEATHER,
    WIRES,
    Gateway,
    module_gateway,
)
from ..support.responses_upstream import (
    AFTER_TOOL,
    ARGUMENTS,
    GREETING,
    JSON_ANSWER,
    USAGE,
    ToolLoopUpstream,
)

pytestmark = pytest.mark.xdist_group(__name__)

gateway = pytest.fixture(scope="module", name="gateway")(module_gateway)


openai = pytest.importorskip(
    "openai", reason="the gateway tests drive the real openai SDK (pip install openai)"
)


@pytest.fixture
def gw(gateway: Gateway) -> Gateway:
    gateway.emulator.clear_log()
    return gateway


def _text(response: Any) -> str:
    return "".join(part.text for item in response.output if item.type == "message" for part in item.content)


# -- plain answers ----------------------------------------------------------------------------


def test_native_upstream_gets_the_clients_body_field_by_field(gw: Gateway) -> None:
    sent = {
        "model": MODELS["responses"],
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "instructions": "Answer briefly.",
        "temperature": 0.4,
        "top_p": 0.9,
        "max_output_tokens": 300,
        "metadata": {"ticket": "42"},
        "reasoning": {"effort": "low"},
        "text": {"verbosity": "low"},
        "parallel_tool_calls": False,
        "tools": [WEATHER],
        "tool_choice": "none",
        "user": "mike-session",
        "service_tier": "flex",
        "prompt_cache_key": "cache-1",
        "safety_identifier": "user-7",
        "include": ["message.output_text.logprobs"],
        "top_logprobs": 2,
    }
    response = gw.client().responses.create(**sent, extra_body={"some_future_field": {"x": 1}}, store=False)
    [upstream] = gw.upstream.bodies("responses")
    changed = {"model": "gpt-4o-mini", "store": False}
    for name, value in {**sent, "some_future_field": {"x": 1}}.items():
        assert upstream[name] == changed.get(name, value), name  # forwarded as sent
    assert upstream["store"] is False and "previous_response_id" not in upstream
    assert set(upstream) == {*sent, "some_future_field", "store"}
    assert response.usage.input_tokens == USAGE[0] and response.usage.output_tokens == USAGE[1]
    assert response.model == MODELS["responses"] and response.store is False
    assert response.metadata == {"ticket": "42"}
    assert response.service_tier == "default"  # the upstream's own fields pass back


@pytest.mark.parametrize("wire", WIRES)
def test_plain_create_on_each_wire_is_charged_in_the_ledger(gw: Gateway, wire: str) -> None:
    response = gw.client().responses.create(model=MODELS[wire], input="How are you?", instructions="Be kind.")
    assert response.object == "response" and response.status == "completed"
    assert response.output_text == GREETING
    assert (response.usage.input_tokens, response.usage.output_tokens) == USAGE
    assert response.usage.total_tokens == sum(USAGE)
    usage_id = response.model_extra["zarniwoop"]["usage_id"]
    [row] = gw.rows(
        "SELECT account, tokens_input, tokens_output, outcome FROM llm_usage_records WHERE id = ?", usage_id
    )
    assert tuple(row) == ("mike", *USAGE, "ok")
    [body] = gw.upstream.bodies(wire)
    assert "Be kind." in json.dumps(body)  # instructions became the wire's system prompt


def test_an_openai_wire_instance_without_responses_is_bridged_through_chat_completions(gw: Gateway) -> None:
    gw.emulator.add(upstream_path("openai"), openai_completion("Bridged hello.", 12, 3))
    response = gw.client("chatwire").responses.create(
        model=MODELS["responses"], input="hi", instructions="Be brief.", temperature=0.2
    )
    assert response.output_text == "Bridged hello." and response.usage.input_tokens == 12
    [chat] = gw.emulator.requests(upstream_path("openai"))
    assert chat.json()["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert chat.json()["temperature"] == 0.2
    assert gw.upstream.bodies("responses") == []


def test_an_ollama_upstream_is_bridged_too(gw: Gateway) -> None:
    answer = {
        "model": "gemma4",
        "message": {"role": "assistant", "content": "Local hello."},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 9,
        "eval_count": 4,
    }
    gw.emulator.add("/local/api/chat", Reply.json(answer))
    response = gw.client().responses.create(model="ollama:gemma4", input="hi", instructions="Be brief.")
    assert response.output_text == "Local hello." and (
        response.usage.input_tokens,
        response.usage.output_tokens,
    ) == (9, 4)
    [sent] = gw.emulator.requests("/local/api/chat")
    assert sent.json()["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]


def test_an_upstream_failing_mid_stream_ends_it_with_response_failed_and_charges_what_streamed(
    gw: Gateway,
) -> None:
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "usage": {"input_tokens": 20, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Half an answer"},
        },
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    gw.emulator.add("/v1/messages", Reply(body=body, headers={"Content-Type": "text/event-stream"}))
    seen: list[Any] = []
    try:
        with gw.client().responses.stream(model=MODELS["anthropic"], input="hi") as stream:
            seen.extend(stream)
    finally:
        ToolLoopUpstream(gw.emulator)  # the scripted routes back for the next tests
    assert [e.type for e in seen][-2:] == ["response.output_text.delta", "response.failed"]
    assert seen[-2].delta == "Half an answer"
    assert "Overloaded" in seen[-1].response.error.message
    [row] = gw.rows(
        "SELECT tokens_input, tokens_output, outcome FROM llm_usage_records WHERE project = ?"
        " ORDER BY created_at DESC LIMIT 1",
        "transformer-review",
    )
    prompt = to_chat_request(
        ResponsesRequest(model="m", input="hi"), {}, [{"role": "user", "content": "hi"}], history=False
    ).estimated_input_tokens()
    assert tuple(row) == (prompt, len("Half an answer") // 4, "error")  # the prompt and what streamed


# -- tools --------------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_a_function_tool_loop_through_previous_response_id(gw: Gateway, wire: str) -> None:
    client = gw.client()
    first = client.responses.create(model=MODELS[wire], input="Weather in Paris?", tools=[WEATHER])
    [call] = [item for item in first.output if item.type == "function_call"]
    assert (call.name, json.loads(call.arguments)) == ("get_weather", json.loads(ARGUMENTS))
    second = client.responses.create(
        model=MODELS[wire],
        previous_response_id=first.id,
        tools=[WEATHER],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "21 C"}],
    )
    assert second.output_text == AFTER_TOOL and second.previous_response_id == first.id
    sent = json.dumps(gw.upstream.bodies(wire)[1])
    assert "Weather in Paris?" in sent and "21 C" in sent  # the stored turn, then the tool's result
    if wire == "responses":
        body = gw.upstream.bodies(wire)[1]
        assert [i.get("type", "message") for i in body["input"]] == [
            "message",
            "function_call",
            "function_call_output",
        ]
        assert "previous_response_id" not in body and body["store"] is False


@pytest.mark.parametrize("wire", WIRES)
def test_a_function_tool_loop_by_resending_the_items(gw: Gateway, wire: str) -> None:
    client = gw.client()
    items: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.responses.create(model=MODELS[wire], input=items, tools=[WEATHER], store=False)
    items += [item.model_dump(exclude_none=True) for item in first.output]
    call = first.output[-1]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "21 C"})
    second = client.responses.create(model=MODELS[wire], input=items, tools=[WEATHER], store=False)
    assert second.output_text == AFTER_TOOL and second.status == "completed"


@pytest.mark.parametrize("wire", WIRES)
def test_text_format_json_schema_strict_on_each_wire(gw: Gateway, wire: str) -> None:
    response = gw.client().responses.create(
        model=MODELS[wire], input="Weather in Paris as JSON", text={"format": SCHEMA}
    )
    assert json.loads(response.output_text) == json.loads(JSON_ANSWER)
    [body] = gw.upstream.bodies(wire)
    if wire == "responses":
        assert body["text"] == {"format": SCHEMA}
    elif wire == "anthropic":
        assert body["output_format"] == {"type": "json_schema", "schema": SCHEMA["schema"]}
    else:
        assert body["generationConfig"]["responseJsonSchema"] == SCHEMA["schema"]
    assert response.text.format.name == "weather" and response.text.format.strict is True


class Weather(BaseModel):
    city: str
    temperature_c: int


@pytest.mark.parametrize("wire", WIRES)
def test_responses_parse_with_a_pydantic_text_format(gw: Gateway, wire: str) -> None:
    parsed = gw.client().responses.parse(model=MODELS[wire], input="Weather in Paris", text_format=Weather)
    assert parsed.output_parsed == Weather(city="Paris", temperature_c=21)
    [body] = gw.upstream.bodies(wire)
    assert "temperature_c" in json.dumps(body)  # the model's schema reached the upstream


# -- streams ------------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_stream_ends_with_response_completed_and_its_usage(gw: Gateway, wire: str) -> None:
    kinds: list[str] = []
    deltas: list[str] = []
    with gw.client().responses.stream(model=MODELS[wire], input="stream please") as stream:
        for event in stream:
            kinds.append(event.type)
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
    assert "".join(deltas) == GREETING and len(deltas) == len(GREETING.split(" "))
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-1] == "response.completed" and "response.output_item.done" in kinds
    assert final.output_text == GREETING
    assert (final.usage.input_tokens, final.usage.output_tokens) == USAGE


@pytest.mark.parametrize("wire", WIRES)
def test_a_streamed_tool_call_arrives_as_function_call_events(gw: Gateway, wire: str) -> None:
    arguments: list[str] = []
    with gw.client().responses.stream(model=MODELS[wire], input="Weather?", tools=[WEATHER]) as stream:
        for event in stream:
            if event.type == "response.function_call_arguments.delta":
                arguments.append(event.delta)
        final = stream.get_final_response()
    [call] = final.output
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads("".join(arguments)) == json.loads(call.arguments) == json.loads(ARGUMENTS)
    assert final.usage.total_tokens == sum(USAGE)


# -- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "extra", "param"),
    [
        ("anthropic", {"tools": [{"type": "web_search"}]}, "tools[0]"),
        ("gemini", {"tools": [{"type": "file_search", "vector_store_ids": ["vs_1"]}]}, "tools[0]"),
        ("anthropic", {"tools": [{"type": "computer_use_preview"}]}, "tools[0]"),
        ("gemini", {"reasoning": {"effort": "high"}}, "reasoning.effort"),
        ("anthropic", {"text": {"verbosity": "low"}}, "text.verbosity"),
        ("anthropic", {"service_tier": "flex"}, "service_tier"),
        ("gemini", {"prompt_cache_key": "k"}, "prompt_cache_key"),
        ("anthropic", {"some_future_field": 1}, "some_future_field"),
        ("responses", {"background": True}, "background"),
        (
            "anthropic",
            {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
            "input[0].content[0].image_url",  # `.type` until images were bridged: now its malformed URL
        ),
    ],
)
def test_what_a_wire_cannot_honour_is_a_400_naming_it(
    gw: Gateway, wire: str, extra: dict, param: str
) -> None:
    body = {"model": MODELS[wire], "input": "hi", **extra}
    answer = gw.http.post(
        "/v1/responses", json=body, headers={"Authorization": f"Bearer {gw.tokens['main']}"}
    )
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error"
    if param == "tools[0]":
        assert extra["tools"][0]["type"] in error["message"]
    assert gw.upstream.bodies(wire) == []  # refused before any upstream request


# -- storage ------------------------------------------------------------------------------------


def test_stored_responses_are_sealed_and_the_accounts_alone(gw: Gateway) -> None:
    first = gw.client().responses.create(model=MODELS["anthropic"], input="My secret is marmalade.")
    [row] = gw.rows("SELECT tenant, account, content FROM llm_responses WHERE id = ?", first.id)
    assert tuple(row[:2]) == ("acme", "mike") and "marmalade" not in row[2]  # sealed at rest
    for token, previous in (("zaphod", first.id), ("main", "resp_nosuch")):
        with pytest.raises(openai.BadRequestError) as caught:
            gw.client(token).responses.create(
                model=MODELS["anthropic"], input="go on", previous_response_id=previous
            )
        assert caught.value.body["param"] == "previous_response_id"
        assert "marmalade" not in str(caught.value.body)
    assert len(gw.upstream.bodies("anthropic")) == 1


def test_where_storage_is_off_store_and_previous_response_id_are_refused(gw: Gateway) -> None:
    client = gw.client("nostore")
    for options, param in (
        ({"store": True}, "store"),
        ({"previous_response_id": "resp_x"}, "previous_response_id"),
    ):
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(model=MODELS["anthropic"], input="hi", **options)
        assert caught.value.body["param"] == param
    unasked = client.responses.create(model=MODELS["anthropic"], input="hi")
    assert unasked.store is False
    assert gw.rows("SELECT id FROM llm_responses WHERE id = ?", unasked.id) == []


def test_the_retention_job_deletes_stored_responses(gw: Gateway) -> None:
    kept = gw.client().responses.create(model=MODELS["gemini"], input="remember me")

    async def purge(days_later: float) -> dict[str, int]:
        from zarniwoop.boot.retention import retention_rules

        runtime = await Runtime.open(gw.setup.config, home=gw.setup.home)
        try:
            return await prune(
                runtime.db, retention_rules(runtime.settings), now=time.time() + days_later * 86400
            )
        finally:
            await runtime.aclose()

    asyncio.run(purge(29))
    assert gw.rows("SELECT id FROM llm_responses WHERE id = ?", kept.id) != []
    asyncio.run(purge(31))
    assert gw.rows("SELECT id FROM llm_responses WHERE id = ?", kept.id) == []


def test_openapi_names_the_routes_schemas(gw: Gateway) -> None:
    document = gw.http.get("/openapi.json").json()
    operation = document["paths"]["/v1/responses"]["post"]
    assert operation["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ResponsesRequest"
    }
    schemas = document["components"]["schemas"]
    assert {"ResponsesRequest", "ResponsesAnswer", "ResponsesUsage", "ResponsesFunctionTool"} <= set(schemas)
