"""OpenAI's request fields on every wire (`llm/adapters/options.py`): passed through, mapped, or
refused naming the field — never silently dropped; log probabilities come back in OpenAI's shape."""

from __future__ import annotations

import json

import pytest

from zarniwoop.contract.errors import InvalidRequestError
from zarniwoop.contract.protocol import Secret
from zarniwoop.llm.adapters import ADAPTERS, ChatRequest, Endpoint, ToolSpec
from zarniwoop.llm.adapters.options import LOGPROBS, SamplingOptions, asked

MODEL = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-pro",
    "ollama": "qwen3:8b",
}
TOOL = ToolSpec(
    "get_weather", "weather", {"type": "object", "properties": {"city": {"type": "string"}}}, True
)


def _build(wire: str, request: ChatRequest) -> dict:
    endpoint = Endpoint(wire, wire, "http://127.0.0.1:9", Secret("k"))
    spec = ADAPTERS[wire].build(request, endpoint, MODEL[wire])
    assert spec.json_body is not None
    return dict(spec.json_body)


def _request(tool: ToolSpec = TOOL, **options: object) -> ChatRequest:
    return ChatRequest.prompt("hi", tools=(tool,), options=SamplingOptions(**options))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("wire", "field", "options"),
    [
        ("anthropic", "seed", {"seed": 1}),
        ("anthropic", "logprobs", {"logprobs": True}),
        ("anthropic", "metadata", {"metadata": {"a": "b"}}),
        ("gemini", "parallel_tool_calls", {"parallel_tool_calls": False}),
        ("gemini", "metadata", {"metadata": {"a": "b"}}),
        ("ollama", "tools[].function.strict", {}),
        ("ollama", "parallel_tool_calls", {"parallel_tool_calls": False}),
    ],
)
def test_a_field_a_wire_cannot_honour_is_refused_naming_it(wire: str, field: str, options: dict) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        _build(wire, _request(TOOL if "strict" in field else ToolSpec("get_weather"), **options))
    assert caught.value.field == field
    assert f"the {wire} wire" in caught.value.reason


def test_every_field_passes_through_on_the_openai_wire() -> None:
    request = ChatRequest.prompt(
        "hi",
        tools=(TOOL,),
        json_schema={"type": "object"},
        options=SamplingOptions(
            parallel_tool_calls=True,
            seed=4,
            logprobs=True,
            top_logprobs=3,
            stop=("END",),
            top_p=0.9,
            user="u",
            metadata={"k": "v"},
            schema_name="reply",
            schema_strict=True,
        ),
    )
    body = _build("openai", request)
    assert body["tools"][0]["function"]["strict"] is True
    assert body["response_format"]["json_schema"] == {
        "name": "reply",
        "schema": {"type": "object"},
        "strict": True,
    }
    assert {
        k: body[k]
        for k in (
            "parallel_tool_calls",
            "seed",
            "logprobs",
            "top_logprobs",
            "stop",
            "top_p",
            "user",
            "metadata",
        )
    } == {
        "parallel_tool_calls": True,
        "seed": 4,
        "logprobs": True,
        "top_logprobs": 3,
        "stop": ["END"],
        "top_p": 0.9,
        "user": "u",
        "metadata": {"k": "v"},
    }
    assert asked(request) == [
        "tools[].function.strict",
        "response_format.json_schema.strict",
        "seed",
        "logprobs",
        "top_logprobs",
        "stop",
        "top_p",
        "metadata",
    ]


def test_a_plain_request_sends_none_of_them() -> None:
    body = _build("openai", ChatRequest.prompt("hi"))
    assert not {"seed", "logprobs", "stop", "top_p", "user", "metadata", "parallel_tool_calls"} & set(body)


def test_the_ollama_wire_maps_seed_stop_logprobs_and_reads_them_back() -> None:
    plain = ToolSpec("get_weather")
    request = ChatRequest.prompt(
        "hi",
        tools=(plain,),
        options=SamplingOptions(seed=2, stop=("X",), top_p=0.3, logprobs=True, top_logprobs=1),
    )
    body = _build("ollama", request)
    assert body["options"] | {} == {"num_predict": 1024, "seed": 2, "top_p": 0.3, "stop": ["X"]}
    assert (body["logprobs"], body["top_logprobs"]) == (True, 1)
    line = {
        "model": "qwen3:8b",
        "message": {"role": "assistant", "content": "Hi"},
        "logprobs": [{"token": "Hi", "logprob": -0.5, "top_logprobs": [{"token": "Hey", "logprob": -1.5}]}],
        "done": True,
        "prompt_eval_count": 3,
        "eval_count": 1,
    }
    response = ADAPTERS["ollama"].parse(json.dumps(line).encode())
    [token] = response.metadata[LOGPROBS]["content"]
    assert (token["token"], token["logprob"], token["top_logprobs"][0]["token"]) == ("Hi", -0.5, "Hey")


def test_the_gemini_wire_maps_logprobs_and_reads_them_back() -> None:
    request = ChatRequest.prompt("hi", options=SamplingOptions(logprobs=True, top_logprobs=2, seed=9))
    config = _build("gemini", request)["generationConfig"]
    assert (config["responseLogprobs"], config["logprobs"], config["seed"]) == (True, 2, 9)
    answer = {
        "candidates": [
            {
                "content": {"parts": [{"text": "Hi"}], "role": "model"},
                "finishReason": "STOP",
                "logprobsResult": {
                    "chosenCandidates": [{"token": "Hi", "logProbability": -0.1}],
                    "topCandidates": [
                        {
                            "candidates": [
                                {"token": "Hi", "logProbability": -0.1},
                                {"token": "Yo", "logProbability": -3.0},
                            ]
                        }
                    ],
                },
            }
        ],
        "usageMetadata": {"promptTokenCount": 2, "totalTokenCount": 3},
    }
    response = ADAPTERS["gemini"].parse(json.dumps(answer).encode())
    [token] = response.metadata[LOGPROBS]["content"]
    assert token["token"] == "Hi" and [t["token"] for t in token["top_logprobs"]] == ["Hi", "Yo"]


def test_a_strict_schema_goes_to_anthropic_as_structured_output() -> None:
    request = ChatRequest.prompt(
        "hi", json_schema={"type": "object"}, options=SamplingOptions(schema_strict=True)
    )
    endpoint = Endpoint("anthropic", "anthropic", "http://127.0.0.1:9", Secret("k"))
    spec = ADAPTERS["anthropic"].build(request, endpoint, MODEL["anthropic"])
    assert spec.json_body is not None
    assert spec.json_body["output_format"] == {"type": "json_schema", "schema": {"type": "object"}}
    assert "system" not in spec.json_body  # no instruction: the schema binds decoding
    assert dict(spec.headers)["anthropic-beta"] == "structured-outputs-2025-11-13"


def test_top_k_and_thinking_of_the_chat_form_land_where_each_wire_takes_them() -> None:
    extra = {"top_k": 7, "thinking": {"type": "enabled", "budget_tokens": 512}}
    request = ChatRequest.prompt("hi", max_tokens=300, options=SamplingOptions(extra=extra))
    config = _build("gemini", request)["generationConfig"]
    # the budget at most max_tokens: the hold (input estimate + max_tokens) covers thinking and answer
    assert (config["topK"], config["thinkingConfig"]) == (7, {"thinkingBudget": 300, "includeThoughts": True})
    ollama = _build("ollama", request)
    assert (ollama["think"], ollama["options"]["top_k"], ollama["options"]["num_predict"]) == (True, 7, 300)
    assert (
        _build("anthropic", ChatRequest.prompt("hi", options=SamplingOptions(extra={"top_k": 7})))["top_k"]
        == 7
    )
    with pytest.raises(InvalidRequestError) as caught:
        _build("anthropic", request)  # the chat form carries no thinking signatures back to Anthropic
    assert caught.value.field == "thinking"
    # a Chat Completions client's own fields reach an OpenAI-wire server as sent (vLLM takes top_k)
    assert {k: _build("openai", request)[k] for k in extra} == extra
    with pytest.raises(InvalidRequestError) as caught:
        _build("gemini", ChatRequest.prompt("hi", options=SamplingOptions(extra={"top_k": -1})))
    assert caught.value.field == "top_k"
