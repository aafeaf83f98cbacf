"""The native Responses API adapter (`llm/adapters/openai_responses.py`): the client's body sent as
written but for the four fields the gateway owns, the answer read from its output items, the event
stream folded, junk refused as `ParseError`, malformed usage left to the gateway's estimate."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarniwoop.contract.errors import InvalidRequestError, ParseError, ProviderError
from zarniwoop.contract.protocol import Secret
from zarniwoop.llm.adapters import ADAPTERS, ChatMessage, ChatRequest, Endpoint, NativeBody, adapter_for
from zarniwoop.llm.adapters.base import NATIVE_ANSWER
from zarniwoop.llm.adapters.openai_responses import ADAPTER, serves_responses
from zarniwoop.llm.adapters.response import TokenUsage
from zarniwoop.llm.usage_check import CheckedUsage, check_usage

BODY = {"model": "alias", "input": "hi", "store": True, "reasoning": {"effort": "low"}, "x_future": [1]}
REQUEST = ChatRequest((ChatMessage("user", "hi"),), max_tokens=99, native=NativeBody("responses", BODY))
ENDPOINT = Endpoint("openai", "openai", "https://api.openai.com/v1", Secret("sk-test-key"))
KEYS = ["type", "content", "summary", "text", "call_id", "name", "arguments", "usage", "output"]
ANSWER = {
    "id": "resp_1",
    "model": "gpt-4o-mini",
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]},
        {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "Hello"}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": '{"a": 1}'},
    ],
    "usage": {"input_tokens": 5, "output_tokens": 7},
}


def test_the_body_goes_as_written_but_for_the_fields_the_gateway_owns() -> None:
    spec = ADAPTER.build(REQUEST, ENDPOINT, "gpt-4o-mini")
    assert spec.url == "https://api.openai.com/v1/responses"
    assert spec.json_body == {**BODY, "model": "gpt-4o-mini", "max_output_tokens": 99, "store": False}
    assert spec.headers["Authorization"] == "Bearer sk-test-key"
    streamed = ADAPTER.build(ChatRequest(REQUEST.messages, stream=True, native=REQUEST.native), ENDPOINT, "m")
    assert streamed.json_body["stream"] is True


def test_the_answer_is_read_from_its_output_items() -> None:
    response = ADAPTER.parse(json.dumps(ANSWER).encode())
    assert (response.text, response.reasoning) == ("Hello", "think")
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [("call_1", "f", '{"a": 1}')]
    assert (response.usage.input, response.usage.output) == (5, 7)
    assert response.metadata[NATIVE_ANSWER]["output"] == ANSWER["output"]


@pytest.mark.parametrize("bad", ["abc", 1.5, True, None, [3]])
def test_a_usage_count_that_is_not_an_integer_leaves_the_estimate_to_the_gateway(bad: object) -> None:
    answer = {**ANSWER, "usage": {"input_tokens": 5, "output_tokens": bad}}
    reported = ADAPTER.parse(json.dumps(answer).encode()).usage
    assert reported is not None and reported.refused is not None  # read, never raised on
    assert check_usage(reported, TokenUsage(3, 4)) == CheckedUsage(TokenUsage(3, 4), True, reported.refused)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    max_leaves=20,
)


@given(st.binary(max_size=200) | JSON.map(lambda v: json.dumps({"output": v}).encode()))
def test_any_bytes_parse_or_raise_parse_error(raw: bytes) -> None:
    with contextlib.suppress(ParseError):
        ADAPTER.parse(raw)


def test_the_stream_passes_text_and_tool_arguments_on_and_folds_the_completed_response() -> None:
    stream = ADAPTER.accumulator()
    deltas = stream.feed(None, {"type": "response.output_text.delta", "delta": "Hel"})
    deltas += stream.feed(
        None, {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{}"}
    )
    assert [(d.kind, d.text or d.tool_call.arguments) for d in deltas] == [
        ("text", "Hel"),
        ("tool_call", "{}"),
    ]
    assert stream.feed(None, {"type": "response.completed", "response": ANSWER}) == []
    assert stream.result().text == "Hello"
    with pytest.raises(ProviderError):
        stream.feed(None, {"type": "error", "message": "overloaded", "code": "server_error"})


def test_which_instances_serve_it_and_what_a_bridge_refuses() -> None:
    settings = {"ai.provider.vllm.responsesApi": "true"}

    class Settings:
        def get(self, key: str) -> str | None:
            return settings.get(key)

    assert serves_responses(Settings(), "openai", "openai", "https://api.openai.com/v1")
    assert serves_responses(Settings(), "openai", "vllm", "http://127.0.0.1:8000/v1")
    assert not serves_responses(Settings(), "openai", "deepseek", "https://api.deepseek.com/v1")
    assert not serves_responses(Settings(), "anthropic", "vllm", "http://127.0.0.1:8000/v1")
    assert adapter_for(REQUEST, ENDPOINT, Settings()) is ADAPTER
    chatwire = Endpoint("openai", "deepseek", "https://api.deepseek.com/v1", None)
    assert adapter_for(REQUEST, chatwire, Settings()) is ADAPTERS["openai"]
    anthropic = Endpoint("anthropic", "anthropic", "https://api.anthropic.com", None)
    assert adapter_for(REQUEST, anthropic, Settings()) is ADAPTERS["anthropic"]
    refusing = ChatRequest(
        REQUEST.messages, native=NativeBody("responses", BODY, (("reasoning.effort", "no"),))
    )
    with pytest.raises(InvalidRequestError) as caught:
        adapter_for(refusing, Endpoint("gemini", "gemini", "https://g.example", None), Settings())
    assert caught.value.field == "reasoning.effort"
