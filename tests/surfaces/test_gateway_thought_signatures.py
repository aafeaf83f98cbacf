"""Gemini's thought signatures through a tool loop (issue: Gemini 3 answers 400 when a functionCall
comes back without its `thoughtSignature`), driven by the real `openai` and `anthropic` SDKs on the
in-process gateway against the loopback emulator: the tool call id a client sees carries the
signature, and the next request hands the Gemini upstream the signature exactly as it came and the
functionCall's own id — on chat completions, Messages and Responses, streamed and not; a history
without one gets Google's stand-in; an OpenAI-wire upstream sees only the id the client wrote."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from zarniwoop.llm.adapters.signatures import MAX_TOOL_CALL_ID, SKIP_VALIDATOR, signed_id

from ..support.emulator import RecordedRequest, Reply
from ..support.gateway import MODELS, app_gateway, openai_completion, upstream_path
from ..support.gateway import LiveGateway as Gateway
from ..support.paths import optional_fixture_bytes

pytestmark = pytest.mark.xdist_group(__name__)

openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK")
anthropic = pytest.importorskip("anthropic", reason="these tests drive the real anthropic SDK")

SIGNATURE = "CiQBvj72+xg/Zm9vYmFyYmF6cXV4AQI=" + "EskgCsYgAb4+9vtF7/499YQS2bjZs3" * 90
"""Standard base64 as Gemini sends it (`+`, `/`, `=`), some 2.7 KB: past the old 200-character limit."""
WEATHER_ARGS = {"city": "Oslo"}
TIME_ARGS = {"zone": "CET"}
OPENAI_TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
    for n in ("get_weather", "get_time")
]
ANTHROPIC_TOOLS = [{"name": n, "input_schema": {"type": "object"}} for n in ("get_weather", "get_time")]
CLIENT_ID = re.compile(r"[A-Za-z0-9_-]+")  # Anthropic's rule for a tool_use.id


def _answer(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 6, "totalTokenCount": 26},
        "modelVersion": "gemini-3-pro-preview",
    }


SIGNED_CALL = _answer(
    [{"functionCall": {"name": "get_weather", "args": WEATHER_ARGS}, "thoughtSignature": SIGNATURE}]
)
PARALLEL_CALLS = _answer(  # Gemini's own ids; of parallel calls only the first carries a signature
    [
        {
            "functionCall": {"id": "fc-a1", "name": "get_weather", "args": WEATHER_ARGS},
            "thoughtSignature": SIGNATURE,
        },
        {"functionCall": {"id": "fc-b2", "name": "get_time", "args": TIME_ARGS}},
    ]
)
DONE = _answer([{"text": "Sunny, 14:00."}])


def _loop(first: dict[str, Any], *, stream: bool = False) -> Any:
    """The emulator's Gemini: `first` until the request carries a tool result, then a text answer
    (a streamed request gets each as a one-element JSON array, Gemini's unframed stream)."""

    def route(request: RecordedRequest) -> Reply:
        answered = any("functionResponse" in p for c in request.json()["contents"] for p in c["parts"])
        body = DONE if answered else first
        return Reply.json([body] if stream else body)

    return route


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with app_gateway(tmp_path_factory.mktemp("thought-signatures")) as gateway:
        yield gateway


def _anthropic(gw: Gateway) -> Any:
    return anthropic.Anthropic(base_url=gw.url, http_client=gw.http, max_retries=0, api_key=gw.setup.token)


def _tool_uses(message: Any) -> list[dict[str, Any]]:
    """An answer's tool_use blocks as a client sends them back (the SDK's dump adds fields it reads only)."""
    return [{"type": "tool_use", "id": b.id, "name": b.name, "input": b.input} for b in message.content]


def _gemini_bodies(gw: Gateway, stream: bool = False) -> list[dict[str, Any]]:
    return [r.json() for r in gw.emulator.requests(upstream_path("gemini", stream))]


def test_chat_completions_carry_the_signature_in_the_id_and_back_to_gemini(gw: Gateway) -> None:
    gw.emulator.add(upstream_path("gemini"), _loop(SIGNED_CALL))
    client = gw.openai()
    ask = [{"role": "user", "content": "Weather in Oslo?"}]
    first = client.chat.completions.create(model=MODELS["gemini"], messages=ask, tools=OPENAI_TOOLS)
    [call] = first.choices[0].message.tool_calls
    assert call.id == signed_id("call_0", SIGNATURE) and CLIENT_ID.fullmatch(call.id)
    assert len(call.id) > 200 and json.loads(call.function.arguments) == WEATHER_ARGS
    history = [
        *ask,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": '{"sky": "sunny"}'},
    ]
    second = client.chat.completions.create(model=MODELS["gemini"], messages=history, tools=OPENAI_TOOLS)
    assert second.choices[0].message.content == "Sunny, 14:00."
    sent = _gemini_bodies(gw)[1]["contents"]
    assert sent[1] == {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "get_weather", "args": WEATHER_ARGS}, "thoughtSignature": SIGNATURE}
        ],
    }
    assert sent[2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {"sky": "sunny"}}}],
    }


def test_messages_round_trip_parallel_calls_with_gemini_ids(gw: Gateway) -> None:
    gw.emulator.add(upstream_path("gemini"), _loop(PARALLEL_CALLS))
    client = _anthropic(gw)
    ask = [{"role": "user", "content": "Weather and time in Oslo?"}]
    first = client.messages.create(
        model=MODELS["gemini"], max_tokens=256, messages=ask, tools=ANTHROPIC_TOOLS
    )
    weather, time = first.content
    assert (weather.id, time.id) == (signed_id("fc-a1", SIGNATURE), signed_id("fc-b2", None))
    assert time.id == "fc-b2__zts1_" and all(CLIENT_ID.fullmatch(b.id) for b in (weather, time))
    results = [
        {"type": "tool_result", "tool_use_id": weather.id, "content": '{"sky": "sunny"}'},
        {"type": "tool_result", "tool_use_id": time.id, "content": '{"time": "14:00"}'},
    ]
    history = [
        *ask,
        {"role": "assistant", "content": _tool_uses(first)},
        {"role": "user", "content": results},
    ]
    second = client.messages.create(
        model=MODELS["gemini"], max_tokens=256, messages=history, tools=ANTHROPIC_TOOLS
    )
    assert second.content[0].text == "Sunny, 14:00."
    sent = _gemini_bodies(gw)[1]["contents"]
    assert sent[1]["parts"] == [
        {
            "functionCall": {"name": "get_weather", "args": WEATHER_ARGS, "id": "fc-a1"},
            "thoughtSignature": SIGNATURE,
        },
        {"functionCall": {"name": "get_time", "args": TIME_ARGS, "id": "fc-b2"}},
    ]
    assert [p["functionResponse"] for p in sent[2]["parts"]] == [
        {"name": "get_weather", "response": {"sky": "sunny"}, "id": "fc-a1"},
        {"name": "get_time", "response": {"time": "14:00"}, "id": "fc-b2"},
    ]


def test_a_streamed_loop_carries_the_signature_both_ways(gw: Gateway) -> None:
    gw.emulator.add(upstream_path("gemini", stream=True), _loop(SIGNED_CALL, stream=True))
    client = _anthropic(gw)
    ask = [{"role": "user", "content": "Weather in Oslo?"}]
    with client.messages.stream(
        model=MODELS["gemini"], max_tokens=256, messages=ask, tools=ANTHROPIC_TOOLS
    ) as stream:
        first = stream.get_final_message()
    [call] = first.content
    assert (call.type, call.id, call.input) == ("tool_use", signed_id("call_0", SIGNATURE), WEATHER_ARGS)
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}
    history = [
        *ask,
        {"role": "assistant", "content": _tool_uses(first)},
        {"role": "user", "content": [result]},
    ]
    with client.messages.stream(
        model=MODELS["gemini"], max_tokens=256, messages=history, tools=ANTHROPIC_TOOLS
    ) as stream:
        assert stream.get_final_text() == "Sunny, 14:00."
    sent = _gemini_bodies(gw, stream=True)[1]["contents"]
    assert sent[1]["parts"] == [
        {"functionCall": {"name": "get_weather", "args": WEATHER_ARGS}, "thoughtSignature": SIGNATURE}
    ]
    assert sent[2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"content": "sunny"}}}
    ]


def test_responses_items_carry_the_signature_back(gw: Gateway) -> None:
    gw.emulator.add(upstream_path("gemini"), _loop(SIGNED_CALL))
    client = gw.openai()
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]
    items: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    first = client.responses.create(model=MODELS["gemini"], input=items, tools=tools, store=False)
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.call_id == signed_id("call_0", SIGNATURE)
    items += [item.model_dump(exclude_none=True) for item in first.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "sunny"})
    second = client.responses.create(model=MODELS["gemini"], input=items, tools=tools, store=False)
    assert second.output_text == "Sunny, 14:00."
    sent = _gemini_bodies(gw)[1]["contents"]
    assert sent[1]["parts"][-1] == {
        "functionCall": {"name": "get_weather", "args": WEATHER_ARGS},
        "thoughtSignature": SIGNATURE,
    }
    assert sent[2]["parts"][0]["functionResponse"]["name"] == "get_weather"


def test_the_recorded_gemini_3_signature_reaches_the_client_and_comes_back(gw: Gateway) -> None:
    recorded = optional_fixture_bytes("llm", "gemini", "generate-content-function-call.json")
    if recorded is None:
        pytest.skip("../shared/fixtures is absent: recorded provider bodies are not available here")
    answer = json.loads(recorded)
    [part] = answer["candidates"][0]["content"]["parts"]
    gw.emulator.add(upstream_path("gemini"), _loop(answer))
    client = gw.openai()
    ask = [{"role": "user", "content": "Weather?"}]
    first = client.chat.completions.create(model=MODELS["gemini"], messages=ask, tools=OPENAI_TOOLS)
    [call] = first.choices[0].message.tool_calls
    assert call.id == signed_id("call_0", part["thoughtSignature"])
    history = [*ask, first.choices[0].message.model_dump(exclude_none=True)]
    history.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
    client.chat.completions.create(model=MODELS["gemini"], messages=history, tools=OPENAI_TOOLS)
    assert _gemini_bodies(gw)[1]["contents"][1]["parts"] == [part]  # the part exactly as Gemini sent it


def test_a_history_without_signatures_gets_the_stand_in_on_its_first_call(gw: Gateway) -> None:
    gw.emulator.add(upstream_path("gemini"), _loop(SIGNED_CALL))
    calls = [
        {
            "id": "toolu_01",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        },
        {
            "id": "toolu_02",
            "type": "function",
            "function": {"name": "get_time", "arguments": '{"zone": "CET"}'},
        },
    ]
    history = [
        {"role": "user", "content": "Weather and time in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "toolu_01", "content": "sunny"},
        {"role": "tool", "tool_call_id": "toolu_02", "content": "14:00"},
    ]
    gw.openai().chat.completions.create(model=MODELS["gemini"], messages=history, tools=OPENAI_TOOLS)
    [sent] = _gemini_bodies(gw)
    assert sent["contents"][1]["parts"] == [
        {"functionCall": {"name": "get_weather", "args": WEATHER_ARGS}, "thoughtSignature": SKIP_VALIDATOR},
        {"functionCall": {"name": "get_time", "args": TIME_ARGS}},
    ]
    assert [p["functionResponse"]["name"] for p in sent["contents"][2]["parts"]] == [
        "get_weather",
        "get_time",
    ]


def test_an_openai_wire_upstream_gets_the_id_as_written_and_no_signature(gw: Gateway) -> None:
    gw.emulator.add(upstream_path("openai"), openai_completion("Sunny.", 30, 2))
    long_id = signed_id("call_0", SIGNATURE)
    call = {"id": long_id, "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": long_id, "content": "sunny"},
    ]
    answer = gw.openai().chat.completions.create(model=MODELS["openai"], messages=history, tools=OPENAI_TOOLS)
    assert answer.choices[0].message.content == "Sunny."
    [upstream] = gw.emulator.requests(upstream_path("openai"))
    body = upstream.json()
    assert (
        body["messages"][1]["tool_calls"][0]["id"] == long_id
        and body["messages"][2]["tool_call_id"] == long_id
    )
    raw = upstream.body.decode()
    assert "thoughtSignature" not in raw and "thought_signature" not in raw and SIGNATURE not in raw


def test_an_id_past_the_bound_is_refused_not_a_500(gw: Gateway) -> None:
    call = {
        "id": "c" * (MAX_TOOL_CALL_ID + 1),
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        gw.openai().chat.completions.create(model=MODELS["gemini"], messages=history)
    assert caught.value.status_code == 400 and "tool_calls" in str(caught.value.body)
    assert gw.emulator.requests() == []


def test_a_stored_response_hands_its_signature_back_through_previous_response_id(gw: Gateway) -> None:
    gw.emulator.add(upstream_path("gemini"), _loop(SIGNED_CALL))
    client = gw.openai()
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]
    first = client.responses.create(model=MODELS["gemini"], input="Weather in Oslo?", tools=tools)
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.call_id == signed_id("call_0", SIGNATURE)
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
    second = client.responses.create(
        model=MODELS["gemini"], previous_response_id=first.id, tools=tools, input=[output]
    )
    assert second.output_text == "Sunny, 14:00."
    sent = _gemini_bodies(gw)[1]["contents"]
    assert sent[1]["parts"][-1] == {
        "functionCall": {"name": "get_weather", "args": WEATHER_ARGS},
        "thoughtSignature": SIGNATURE,
    }
