"""A Gemini thought signature in a tool call id (`llm/adapters/signatures.py`), on the adapter alone:
read off a functionCall part into the id, written back onto the part from the id, and every id that
carries nothing readable left as it came."""

from __future__ import annotations

import json

import pytest

from zarniwoop.llm.adapters import ADAPTERS, ChatMessage, ChatRequest, Endpoint
from zarniwoop.llm.adapters.response import ToolCall
from zarniwoop.llm.adapters.signatures import SKIP_VALIDATOR, SplitId, signed_id, split_id

SIGNATURE = "EskgCsYgAb4+9vtF7/499YQS2bjZs3=="
ENDPOINT = Endpoint("gemini", "gemini", "http://upstream.test")


def _answer(*parts: dict[str, object]) -> bytes:
    return json.dumps(
        {"candidates": [{"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP"}]}
    ).encode()


def _contents(*messages: ChatMessage) -> list[dict[str, object]]:
    spec = ADAPTERS["gemini"].build(ChatRequest((ChatMessage("user", "hi"), *messages)), ENDPOINT, "gemini-3")
    assert spec.json_body is not None
    return spec.json_body["contents"][1:]


def test_the_signature_rides_in_the_id_and_reads_back_exactly() -> None:
    answer = ADAPTERS["gemini"].parse(
        _answer(
            {"functionCall": {"name": "a", "args": {"x": 1}}, "thoughtSignature": SIGNATURE},
            {"functionCall": {"name": "b", "args": {}}},
        )
    )
    first, second = answer.tool_calls
    assert first.id == "call_0__zts1_" + "RXNrZ0NzWWdBYjQrOXZ0RjcvNDk5WVFTMmJqWnMzPT0"
    assert (first.signature, second.id, second.signature) == (SIGNATURE, "call_1", None)
    assert split_id(first.id) == SplitId("call_0", SIGNATURE, False)


@pytest.mark.parametrize(
    "client_id",
    ["toolu_01", "call_3", "x__zts1_!!", "x__zts1_A", "x__zts1_/w", "", "x__zts1___zts1_"],
)
def test_an_id_that_carries_nothing_readable_is_left_as_it_came(client_id: str) -> None:
    assert split_id(client_id) == SplitId(client_id)


def test_an_id_holding_the_separator_is_not_signed() -> None:
    assert signed_id("odd__zts1_id", SIGNATURE) == "odd__zts1_id"


def test_the_writer_sends_back_signature_and_own_id_and_fills_the_first_unsigned_call() -> None:
    signed = ToolCall("g1__zts1_" + signed_id("call_0", SIGNATURE).partition("__zts1_")[2], "a", "{}")
    plain = ToolCall("toolu_9", "b", "{}")
    contents = _contents(
        ChatMessage("assistant", tool_calls=(signed, plain)),
        ChatMessage("tool", "ok", tool_call_id=signed.id),
        ChatMessage("assistant", tool_calls=(plain,)),
        ChatMessage("tool", "ok", tool_call_id=plain.id),
    )
    assert contents[0]["parts"] == [
        {"functionCall": {"name": "a", "args": {}, "id": "g1"}, "thoughtSignature": SIGNATURE},
        {"functionCall": {"name": "b", "args": {}}},
    ]
    assert contents[1]["parts"] == [
        {"functionResponse": {"name": "a", "response": {"content": "ok"}, "id": "g1"}}
    ]
    assert contents[2]["parts"] == [
        {"functionCall": {"name": "b", "args": {}}, "thoughtSignature": SKIP_VALIDATOR}
    ]
    assert contents[3]["parts"] == [{"functionResponse": {"name": "b", "response": {"content": "ok"}}}]
