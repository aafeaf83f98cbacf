"""Every Chat Completions request field is forwarded, mapped or refused — never dropped (issue 43,
`llm/adapters/fields.py`): each field the openai SDK can send on `chat.completions.create`, through
the real gateway with the real SDK, against each upstream wire on the loopback emulator. Forwarded:
the upstream body holds it as sent; mapped: where the table says; refused: a 400 in OpenAI's shape
naming it, and nothing sent. A field no table names reaches an OpenAI-wire upstream as sent. The
answer's `service_tier` and `message.annotations` come back, streamed or not."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from zarniwoop.llm.adapters.fields import CHAT, FIELD_TABLES, route

from ..support.emulator import Emulator, Reply
from ..support.gateway import MODELS, LiveGateway, live_gateway, openai_chunks, upstream_path

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK (pip install openai)")


WIRE_MODELS = {**MODELS, "ollama": "ollama:llama3.1"}
PATHS = {wire: upstream_path(wire) for wire in MODELS} | {"ollama": "/local/api/chat"}
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
SAMPLES: dict[str, dict[str, Any]] = {
    "audio": {"audio": {"voice": "alloy", "format": "wav"}, "modalities": ["text", "audio"]},
    "frequency_penalty": {"frequency_penalty": 0.5},
    "function_call": {"function_call": "auto", "functions": [WEATHER["function"]]},
    "functions": {"functions": [WEATHER["function"]]},
    "logit_bias": {"logit_bias": {"50256": -100}},
    "logprobs": {"logprobs": True},
    "max_completion_tokens": {"max_completion_tokens": 50},
    "max_tokens": {"max_tokens": 50},
    "metadata": {"metadata": {"ticket": "T-9"}},
    "modalities": {"modalities": ["text", "audio"]},
    "moderation": {"moderation": {"model": "omni-moderation-latest"}},
    "n": {"n": 1},
    "parallel_tool_calls": {"parallel_tool_calls": False, "tools": [WEATHER]},
    "prediction": {"prediction": {"type": "content", "content": "Sunny."}},
    "presence_penalty": {"presence_penalty": 0.5},
    "prompt_cache_key": {"prompt_cache_key": "weather-v1"},
    "prompt_cache_options": {"prompt_cache_options": {"mode": "explicit", "ttl": "30m"}},
    "prompt_cache_retention": {"prompt_cache_retention": "24h"},
    "reasoning_effort": {"reasoning_effort": "low"},
    "response_format": {
        "response_format": {"type": "json_schema", "json_schema": {"name": "reply", "schema": SCHEMA}}
    },
    "safety_identifier": {"safety_identifier": "user-hash-1"},
    "seed": {"seed": 7},
    "service_tier": {"service_tier": "flex"},
    "stop": {"stop": ["END"]},
    "store": {"store": True},
    "temperature": {"temperature": 0.3},
    "tool_choice": {"tool_choice": "none", "tools": [WEATHER]},
    "tools": {"tools": [WEATHER]},
    "top_logprobs": {"top_logprobs": 2, "logprobs": True},
    "top_p": {"top_p": 0.5},
    "user": {"user": "u-1"},
    "verbosity": {"verbosity": "low"},
    "web_search_options": {"web_search_options": {"search_context_size": "low"}},
}
"""A value of each field that asks for something (not a neutral default), with what it needs along."""
STREAMED = ("stream", "stream_options")
"""Sent by `test_a_stream_passes_service_tier_and_annotations_back`; streams through every wire are
`tests/surfaces/test_gateway.py`'s."""
SDK_FIELDS = sorted(
    set(inspect.signature(openai.resources.chat.completions.Completions.create).parameters)
    - {"self", "model", "messages", "extra_headers", "extra_query", "extra_body", "timeout"}
)
ANNOTATIONS = [
    {
        "type": "url_citation",
        "url_citation": {
            "start_index": 0,
            "end_index": 5,
            "title": "Forecast",
            "url": "https://example.org/f",
        },
    }
]


def _answers(wire: str) -> Reply:
    if wire == "openai":
        message = {"role": "assistant", "content": "Sunny.", "refusal": None, "annotations": ANNOTATIONS}
        return Reply.json(
            {
                "id": "chatcmpl-up",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o-mini",
                "service_tier": "flex",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
            }
        )
    if wire == "anthropic":
        body: dict[str, Any] = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Sunny."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 9, "output_tokens": 2},
        }
    elif wire == "gemini":
        body = {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "Sunny."}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2, "totalTokenCount": 11},
        }
    else:
        body = {
            "model": "llama3.1",
            "message": {"role": "assistant", "content": "Sunny."},
            "done": True,
            "prompt_eval_count": 9,
            "eval_count": 2,
        }
    return Reply.json(body)


@dataclass
class Gateway:
    emulator: Emulator
    live: LiveGateway
    token: str

    def client(self) -> Any:
        return self.live.openai(self.token)

    def sent(self, wire: str) -> list[dict[str, Any]]:
        return [r.json() for r in self.emulator.requests(PATHS[wire])]


@pytest.fixture(scope="module", params=["app", pytest.param("serve", marks=pytest.mark.process)])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with live_gateway(tmp_path_factory.mktemp("fields"), request.param) as live:
        yield Gateway(live.emulator, live, live.setup.token)


@pytest.fixture
def gw(gateway: Gateway) -> Gateway:
    gateway.emulator.reset()
    for wire in PATHS:
        gateway.emulator.add(PATHS[wire], _answers(wire))
    return gateway


def test_every_field_the_sdk_can_send_has_a_route_on_every_wire() -> None:
    assert set(SAMPLES) | set(STREAMED) == set(SDK_FIELDS), "a field the openai SDK sends has no sample here"
    for wire in PATHS:
        table = FIELD_TABLES[(CHAT, wire)]
        assert not [f for f in SDK_FIELDS if f not in table], f"the {wire} table leaves fields to chance"


def _dig(body: Any, path: str) -> Any:
    for part in path.split("."):
        if part.endswith("[]"):
            body = (body.get(part[:-2]) or [None])[0]
        else:
            body = body.get(part) if isinstance(body, dict) else None
        if body is None:
            return None
    return body


@pytest.mark.parametrize("wire", sorted(PATHS))
def test_each_sdk_field_is_forwarded_mapped_or_refused_never_dropped(gw: Gateway, wire: str) -> None:
    outcomes: dict[str, str] = {}
    for field, sample in SAMPLES.items():
        before = len(gw.sent(wire))
        fate = route(CHAT, wire, field)
        try:
            gw.client().chat.completions.create(model=WIRE_MODELS[wire], messages=MESSAGES, **sample)
        except openai.BadRequestError as refused:
            assert fate.how == "refused", (field, refused.body)
            # named: the field, or a field sent along that is refused as well (`logprobs` with `top_logprobs`)
            named = refused.body["param"]
            assert named == field or (named in sample and route(CHAT, wire, named).how == "refused"), named
            assert refused.body["type"] == "invalid_request_error" and named in refused.body["message"]
            assert len(gw.sent(wire)) == before  # refused before anything was sent
            outcomes[field] = "refused"
            continue
        assert fate.how != "refused", f"{field} on the {wire} wire: answered 200, the table says refused"
        body = gw.sent(wire)[-1]
        if fate.how == "forwarded":
            assert body[field] == sample[field], (field, body.get(field))
        elif fate.path:
            assert _dig(body, fate.path) is not None, (field, fate.path, body)
        outcomes[field] = fate.how
    assert set(outcomes) == set(SAMPLES)  # 0 dropped: every field had one of the three fates
    if wire == "openai":
        assert set(outcomes.values()) == {"forwarded", "mapped"}
    else:
        assert outcomes["reasoning_effort"] in ("mapped", "refused")


@pytest.mark.parametrize("wire", ["openai", "anthropic", "gemini"])
def test_the_issues_eight_fields(gw: Gateway, wire: str) -> None:
    eight = ("frequency_penalty", "presence_penalty", "logit_bias", "reasoning_effort", "service_tier")
    eight += ("prompt_cache_key", "safety_identifier", "verbosity")
    expected = {
        "openai": dict.fromkeys(eight, "forwarded"),
        "anthropic": {**dict.fromkeys(eight, "refused"), "safety_identifier": "mapped"},
        "gemini": {
            **dict.fromkeys(eight, "refused"),
            "frequency_penalty": "mapped",
            "presence_penalty": "mapped",
            "reasoning_effort": "mapped",
        },
    }[wire]
    assert {f: route(CHAT, wire, f).how for f in eight} == expected
    if wire == "gemini":
        gw.client().chat.completions.create(
            model=WIRE_MODELS[wire], messages=MESSAGES, frequency_penalty=0.5, presence_penalty=-0.5,
            reasoning_effort="high",
        )  # fmt: skip
        config = gw.sent(wire)[-1]["generationConfig"]
        assert (config["frequencyPenalty"], config["presencePenalty"]) == (0.5, -0.5)
        assert config["thinkingConfig"] == {"thinkingBudget": 24576}
    if wire == "anthropic":
        gw.client().chat.completions.create(
            model=WIRE_MODELS[wire], messages=MESSAGES, safety_identifier="h-1"
        )
        assert gw.sent(wire)[-1]["metadata"] == {"user_id": "h-1"}


def test_a_field_no_table_names_is_forwarded_as_sent_on_the_native_wire_and_refused_elsewhere(
    gw: Gateway,
) -> None:
    novel = {"zz_new_option": {"level": 3, "tags": ["a"]}}
    gw.client().chat.completions.create(model=WIRE_MODELS["openai"], messages=MESSAGES, extra_body=novel)
    assert gw.sent("openai")[-1]["zz_new_option"] == novel["zz_new_option"]
    with pytest.raises(openai.BadRequestError) as refused:
        gw.client().chat.completions.create(
            model=WIRE_MODELS["anthropic"], messages=MESSAGES, extra_body=novel
        )
    assert refused.value.body["param"] == "zz_new_option"
    assert gw.sent("anthropic") == []


def test_neutral_values_pass_a_wire_without_the_field(gw: Gateway) -> None:
    gw.client().chat.completions.create(
        model=WIRE_MODELS["anthropic"], messages=MESSAGES, n=1, service_tier="auto", store=False,
        modalities=["text"],
    )  # fmt: skip
    [body] = gw.sent("anthropic")
    assert not {"n", "service_tier", "store", "modalities"} & set(body)


def test_a_bad_mapped_value_is_a_400_naming_the_field(gw: Gateway) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        gw.client().chat.completions.create(
            model=WIRE_MODELS["gemini"], messages=MESSAGES, reasoning_effort="minimal"
        )
    assert (
        caught.value.body["param"] == "reasoning_effort"
        and "low, medium or high" in caught.value.body["message"]
    )
    with pytest.raises(openai.BadRequestError) as caught:
        gw.client().chat.completions.create(
            model=WIRE_MODELS["gemini"], messages=MESSAGES, extra_body={"frequency_penalty": "x"}
        )
    assert caught.value.body["param"] == "frequency_penalty"
    assert gw.sent("gemini") == []


def test_service_tier_and_annotations_come_back(gw: Gateway) -> None:
    completion = gw.client().chat.completions.create(model=WIRE_MODELS["openai"], messages=MESSAGES)
    assert completion.service_tier == "flex"
    assert [a.model_dump() for a in completion.choices[0].message.annotations] == ANNOTATIONS
    assert completion.choices[0].message.content == "Sunny."


def test_a_stream_passes_service_tier_and_annotations_back(gw: Gateway) -> None:
    usage = {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
    stream = [
        [{"index": 0, "delta": {"role": "assistant", "content": "Sunny."}}],
        [{"index": 0, "delta": {"annotations": ANNOTATIONS}, "finish_reason": "stop"}],
    ]
    gw.emulator.add(PATHS["openai"], openai_chunks(stream, usage, service_tier="flex"))
    received = list(
        gw.client().chat.completions.create(
            model=WIRE_MODELS["openai"],
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    [sent] = gw.sent("openai")
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert "flex" in {c.service_tier for c in received}
    annotations = [
        a
        for c in received
        if c.choices
        for a in (c.choices[0].delta.model_extra or {}).get("annotations", [])
    ]
    assert annotations == ANNOTATIONS
    assert received[-1].usage.total_tokens == 11
