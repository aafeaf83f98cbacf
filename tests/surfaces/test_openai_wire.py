"""OpenAI's wire models of the gateway: what a request body becomes, and OpenAI's vocabulary out."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from zarniwoop.contract.errors import InvalidRequestError
from zarniwoop.llm.adapters.response import ChatResponse, ToolCall
from zarniwoop.surfaces.http.anthropic_answers import stop_reason
from zarniwoop.surfaces.http.openai_wire import DEFAULT_MAX_TOKENS, ChatCompletionRequest, finish_reason


def _body(**fields: object) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate(
        {"model": "default:analyze", "messages": [{"role": "user", "content": "hi"}], **fields}
    )


def test_messages_tools_and_a_named_tool_choice_become_the_managers_request() -> None:
    request = _body(
        messages=[
            {"role": "developer", "content": "Be brief."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "Weather "}, {"type": "text", "text": "in Paris?"}],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
        tools=[{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
        tool_choice={"type": "function", "function": {"name": "weather"}},
        max_completion_tokens=77,
        top_p=0.5,  # no counterpart on every wire: accepted, not forwarded
    ).to_chat_request()
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.messages[1].content == "Weather in Paris?"
    assert request.messages[2].tool_calls == (ToolCall("c1", "weather", '{"city": "Paris"}'),)
    assert request.messages[3].tool_call_id == "c1"
    assert [t.name for t in request.tools] == ["weather"] and request.tool_choice == "weather"
    assert request.max_tokens == 77


def test_defaults_and_json_modes() -> None:
    assert _body().to_chat_request().max_tokens == DEFAULT_MAX_TOKENS
    assert _body(max_tokens=5).to_chat_request().max_tokens == 5
    assert _body(response_format={"type": "json_object"}).to_chat_request().json_output
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    assert _body(response_format=fmt).to_chat_request().json_schema == schema
    assert _body(tool_choice="required").to_chat_request().tool_choice == "required"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"n": 2}, "n"),
        ({"messages": []}, "messages"),
        ({"temperature": 3}, "temperature"),
        ({"model": ""}, "model"),
    ],
)
def test_bad_bodies_name_the_field(fields: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _body(**fields)
    assert caught.value.errors()[0]["loc"][0] == field


def test_a_content_part_the_chat_form_cannot_carry_is_refused_naming_it() -> None:
    # an image_url part is carried now (tests/surfaces/test_gateway_images.py); one that is no image
    # URL, and every other part type, is refused naming its own field
    body = _body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}])
    with pytest.raises(InvalidRequestError) as caught:
        body.to_chat_request()
    assert (
        caught.value.field == "messages[0].content[0].image_url.url" and "http(s) URL" in caught.value.reason
    )
    body = _body(messages=[{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}])
    with pytest.raises(InvalidRequestError) as caught:
        body.to_chat_request()
    assert caught.value.field == "messages[0].content[0].type" and "input_audio" in caught.value.reason


@pytest.mark.parametrize(
    ("raw", "calls", "expected"),
    [("end_turn", (), "stop"), ("STOP", (), "stop"), ("max_tokens", (), "length"), ("MAX_TOKENS", (), "length"),
     ("SAFETY", (), "content_filter"), ("STOP", (ToolCall("c", "f", "{}"),), "tool_calls"), (None, (), "stop")],
)  # fmt: skip
def test_finish_reasons_speak_openais_vocabulary(
    raw: str | None, calls: tuple[ToolCall, ...], expected: str
) -> None:
    assert finish_reason(ChatResponse(finish_reason=raw, tool_calls=calls)) == expected


@pytest.mark.parametrize(
    ("raw", "calls", "expected"),
    [("stop", (), "end_turn"), ("length", (), "max_tokens"), ("max_output_tokens", (), "max_tokens"),
     ("RECITATION", (), "refusal"), ("refusal", (), "refusal"), ("content_filter", (), "refusal"),
     ("stop_sequence", (), "stop_sequence"), ("pause_turn", (), "pause_turn"), ("tool_calls", (), "end_turn"),
     ("length", (ToolCall("c", "f", "{}"),), "tool_use"), (None, (), "end_turn")],
)  # fmt: skip
def test_stop_reasons_speak_the_messages_apis_vocabulary(
    raw: str | None, calls: tuple[ToolCall, ...], expected: str
) -> None:
    """The same reading of the wire's word (`ChatResponse.ending`) as `finish_reason`, other words."""
    assert stop_reason(ChatResponse(finish_reason=raw, tool_calls=calls)) == expected
