"""Upstream usage is data to check (issue 43, `llm/usage_check.py`): every wire's adapter reads a junk
usage object without raising, and `check_usage` takes a report only when each count is a
non-negative integer within the bound, else the gateway's estimate, flagged."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.llm.adapters import ADAPTERS, ChatRequest, StreamDelta
from zarniwoop.llm.adapters.response import ChatResponse, TokenUsage, ToolCall
from zarniwoop.llm.catalog import ModelDoc
from zarniwoop.llm.usage_check import (
    CALL_TOKEN_BOUND,
    check_usage,
    delta_chars,
    estimate_tokens,
    estimated_usage,
    usage_bound,
)

JUNK = [10**30, -1_000_000, "abc", 1.5, True, None, [], {"n": 1}]
ESTIMATE = TokenUsage(30, 2500)


def _openai(prompt: object) -> bytes:
    return json.dumps(
        {
            "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 5},
        }
    ).encode()


def _anthropic(prompt: object) -> bytes:
    return json.dumps(
        {"content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": prompt, "output_tokens": 5}}
    ).encode()


def _gemini(prompt: object) -> bytes:
    return json.dumps(
        {
            "candidates": [{"content": {"parts": [{"text": "hi"}]}}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": 5},
        }
    ).encode()


def _ollama(prompt: object) -> bytes:
    return json.dumps(
        {"message": {"content": "hi"}, "done": True, "prompt_eval_count": prompt, "eval_count": 5}
    ).encode()


BODIES = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini, "ollama": _ollama}


@pytest.mark.parametrize("wire", sorted(BODIES))
@pytest.mark.parametrize("value", JUNK, ids=repr)
def test_every_adapter_reads_junk_usage_and_the_check_charges_the_estimate(wire: str, value: object) -> None:
    response = ADAPTERS[wire].parse(BODIES[wire](value))  # never raises: a paid answer is kept
    assert response.text == "hi"
    checked = check_usage(response.usage, ESTIMATE)
    if value is None and wire in ("ollama",):  # Ollama's counts are optional: 0 prompt tokens
        assert not checked.estimated
        return
    assert checked.estimated and checked.usage == ESTIMATE
    if response.usage is not None:  # a report came: the reason says what was wrong with it
        assert checked.reason is not None


@pytest.mark.parametrize("wire", sorted(BODIES))
def test_a_sound_report_is_taken_as_it_came(wire: str) -> None:
    response = ADAPTERS[wire].parse(BODIES[wire](12))
    checked = check_usage(response.usage, ESTIMATE)
    assert (checked.usage.input, checked.usage.output, checked.estimated, checked.reason) == (
        12,
        5,
        False,
        None,
    )


def test_the_reasons_name_the_count_and_what_was_wrong() -> None:
    assert check_usage(TokenUsage(-1_000_000, 5), ESTIMATE).reason == "input tokens -1000000 is negative"
    assert check_usage(TokenUsage(10**30, 5), ESTIMATE).reason == (
        "input tokens a 31-digit number is past the bound of 10,000,000 for one call"
    )
    assert check_usage(TokenUsage(5, CALL_TOKEN_BOUND + 1), ESTIMATE).reason.startswith(
        "output tokens 10000001"
    )
    assert (
        check_usage(TokenUsage(0, 0, refused="prompt_tokens: 'abc'"), ESTIMATE).reason
        == "prompt_tokens: 'abc'"
    )
    absent = check_usage(None, ESTIMATE)
    assert (absent.usage, absent.estimated, absent.reason) == (ESTIMATE, True, None)


def test_the_bound_is_the_models_context_and_output_where_the_catalog_knows_them() -> None:
    doc = ModelDoc(
        instance="openai",
        wire_name="m",
        slug="m",
        context_window_tokens=128_000,
        default_max_output_tokens=16_384,
    )
    assert usage_bound(doc) == 144_384
    assert usage_bound(None) == CALL_TOKEN_BOUND
    assert check_usage(TokenUsage(144_385, 0), ESTIMATE, bound=usage_bound(doc)).estimated
    assert not check_usage(TokenUsage(144_000, 384), ESTIMATE, bound=usage_bound(doc)).estimated
    assert check_usage(None, TokenUsage(10, 10**9), bound=100).usage == TokenUsage(10, 100)  # clamped too


def test_the_estimate_counts_text_reasoning_and_tool_call_arguments_as_a_cut_stream_does() -> None:
    arguments = json.dumps({"rows": ["x" * 100] * 400})  # ~40 KB of arguments
    calls = (ToolCall("call_1", "store_rows", arguments),)
    response = ChatResponse(text="ok", tool_calls=calls, reasoning="thinking")
    request = ChatRequest.prompt("store these")
    produced = len("ok") + len("thinking") + len("store_rows") + len(arguments)
    assert estimated_usage(request, response) == TokenUsage(
        request.estimated_input_tokens(), estimate_tokens(produced)
    )
    assert estimate_tokens(produced) > 10_000
    streamed = [
        StreamDelta("text", "ok"),
        StreamDelta("reasoning", "thinking"),
        StreamDelta("tool_call", tool_call=calls[0]),
    ]
    assert sum(delta_chars(d) for d in streamed) == produced


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@pytest.mark.parametrize("wire", sorted(BODIES))
@given(prompt=JSON_VALUES)
@settings(max_examples=40, deadline=None)
def test_any_json_as_a_count_parses_and_checks_to_bounded_non_negative_counts(
    wire: str, prompt: object
) -> None:
    response = ADAPTERS[wire].parse(BODIES[wire](prompt))
    checked = check_usage(response.usage, ESTIMATE)
    assert 0 <= checked.usage.input <= CALL_TOKEN_BOUND and 0 <= checked.usage.output <= CALL_TOKEN_BOUND
    if not checked.estimated:  # taken only as an integer in bounds (an Ollama count may be absent: 0)
        assert checked.usage.input == (prompt if type(prompt) is int else 0)
