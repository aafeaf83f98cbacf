"""The gateway's wire exactness under a real `zarniwoop serve` (issue 25): model names that cannot walk
a vendor's API, every OpenAI request field kept (openai SDK, langchain's `ChatOpenAI`, the Agents
SDK), refused with a 400 naming it where a wire cannot honour it, the response's extras passed
back, and errors the openai SDK does not retry in vain."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from ..support.emulator import Emulator, Reply
from ..support.gateway import MODELS, prepare_gateway, upstream_path
from ..support.served import Served, served

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

openai = pytest.importorskip(
    "openai", reason="the gateway tests drive the real openai SDK (pip install openai)"
)

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
LOGPROBS = {
    "content": [
        {"token": '{"', "logprob": -0.01, "bytes": [123, 34], "top_logprobs": []},
        {"token": "answer", "logprob": -0.2, "bytes": None, "top_logprobs": []},
    ],
    "refusal": None,
}
UPSTREAM = {
    "id": "chatcmpl-upstream",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "system_fingerprint": "fp_44709d6fcb",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": '{"answer": "42"}', "refusal": None},
            "logprobs": LOGPROBS,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 19,
        "completion_tokens": 10,
        "total_tokens": 29,
        "prompt_tokens_details": {"cached_tokens": 3, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 4, "accepted_prediction_tokens": 0},
    },
}


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: connecting is refused at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Setup:
    emulator: Emulator
    server: Served
    token: str
    tokens: dict[str, str]

    def client(self, token: str | None = None, **options: Any) -> Any:
        options.setdefault("max_retries", 0)
        return openai.OpenAI(base_url=self.server.url + "/v1", api_key=token or self.token, **options)

    def upstream_bodies(self, wire: str = "openai") -> list[dict[str, Any]]:
        return [r.json() for r in self.emulator.requests(upstream_path(wire))]


@pytest.fixture(scope="module")
def module_setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    from ..support.gateway import gateway_tenants

    emulator = Emulator().start()
    tenants = gateway_tenants(emulator)
    tenants["acme"]["projects"]["tight"] = {"team": "nlp", "llm": {"quota": {"monthly_tokens": 50}}}
    # two local servers: the bundled catalog's `ollama` configured where nothing listens, and `lab`
    # (an Ollama no catalog document names) on the emulator
    tenants["acme"]["settings"]["ai.provider.ollama.baseUrl"] = f"http://127.0.0.1:{closed_port()}"
    tenants["acme"]["settings"]["ai.provider.lab.type"] = "ollama"
    tenants["acme"]["settings"]["ai.provider.lab.baseUrl"] = emulator.url + "/lab"
    setup = prepare_gateway(
        tmp_path_factory.mktemp("gateway-wire"),
        emulator,
        tenants=tenants,
        tokens={"tight": ("tight", "mike")},
    )
    try:
        with served(setup.config, setup.home) as server:
            yield Setup(emulator, server, setup.token, dict(setup.tokens))
    finally:
        emulator.stop()


@pytest.fixture
def gw(module_setup: Setup) -> Setup:
    module_setup.emulator.reset()
    module_setup.emulator.add(upstream_path("openai"), Reply.json(UPSTREAM))
    return module_setup


# -- model names are data, never path --------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        "gemini:gemini-2.5-pro/../../../v1/admin",
        "gemini:../x",
        "gemini:a b",
        "openai:../../v1/files",
        "gemini:%2e%2e",
        "openai:gpt-4o/%2e%2e/files",
    ],
)
def test_a_model_that_could_walk_the_vendors_api_is_refused_422_and_nothing_is_sent(
    gw: Setup, model: str
) -> None:
    gw.emulator.add_prefix("/", Reply.json({"never": "reached"}))
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        gw.client().chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 422
    assert caught.value.body["param"] == "model" and caught.value.body["type"] == "invalid_request_error"
    assert "model id" in caught.value.body["message"]
    assert gw.emulator.requests() == []


def test_a_bad_fallback_model_is_refused_naming_fallback_models(gw: Setup) -> None:
    answer = httpx.post(
        gw.server.url + "/v1/chat/completions",
        json={
            "model": MODELS["openai"],
            "messages": [{"role": "user", "content": "hi"}],
            "fallback_models": ["gemini:../../v1/admin"],
        },
        headers={"Authorization": f"Bearer {gw.token}"},
    )
    assert answer.status_code == 422 and answer.json()["error"]["param"] == "fallback_models"
    assert gw.emulator.requests() == []


# -- the OpenAI request passes through whole ---------------------------------------------------------


def test_the_openai_sdk_request_reaches_the_upstream_whole(gw: Setup) -> None:
    completion = gw.client().chat.completions.create(
        model=MODELS["openai"],
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],
        parallel_tool_calls=False,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True},
        },
        seed=7,
        logprobs=True,
        top_logprobs=2,
        stop=["\n\n", "END"],
        top_p=0.5,
        user="user-1234",
        metadata={"ticket": "T-9"},
        max_tokens=50,
    )
    [body] = gw.upstream_bodies()
    assert body["tools"][0]["function"]["strict"] is True
    assert body["parallel_tool_calls"] is False
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True},
    }
    assert (body["seed"], body["logprobs"], body["top_logprobs"]) == (7, True, 2)
    assert (body["stop"], body["top_p"], body["user"], body["metadata"]) == (
        ["\n\n", "END"],
        0.5,
        "user-1234",
        {"ticket": "T-9"},
    )
    # … and the answer's extras come back as the upstream sent them
    assert completion.system_fingerprint == "fp_44709d6fcb"
    assert completion.choices[0].message.refusal is None
    assert [t.token for t in completion.choices[0].logprobs.content] == ['{"', "answer"]
    assert completion.usage.prompt_tokens_details.cached_tokens == 3
    assert completion.usage.completion_tokens_details.reasoning_tokens == 4


def test_a_refusal_and_the_fingerprint_come_back_in_a_stream_too(gw: Setup) -> None:
    base = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "system_fingerprint": "fp_stream",
    }
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "refusal": "I can't "}}]},
        {**base, "choices": [{"index": 0, "delta": {"refusal": "help with that."}, "finish_reason": "stop"}]},
        {
            **base,
            "choices": [],
            "usage": {
                "prompt_tokens": 5,
                "completion_tokens": 6,
                "total_tokens": 11,
                "completion_tokens_details": {"reasoning_tokens": 2},
            },
        },
    ]
    sse = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    gw.emulator.add(upstream_path("openai"), Reply(body=sse, headers={"Content-Type": "text/event-stream"}))
    stream = gw.client().chat.completions.create(
        model=MODELS["openai"],
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    received = list(stream)
    refusal = "".join(c.choices[0].delta.refusal or "" for c in received if c.choices)
    assert refusal == "I can't help with that."
    assert "fp_stream" in {c.system_fingerprint for c in received}
    assert received[-1].usage.completion_tokens_details.reasoning_tokens == 2


def test_langchain_chat_openai_bind_tools_strict_reaches_the_upstream(gw: Setup) -> None:
    langchain_openai = pytest.importorskip("langchain_openai", reason="langchain-openai is not installed")
    gw.emulator.add(upstream_path("openai"), Reply.json(_tool_call_answer()))
    llm = langchain_openai.ChatOpenAI(
        model=MODELS["openai"], base_url=gw.server.url + "/v1", api_key=gw.token, max_retries=0
    )

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    def get_time(city: str) -> str:
        """The local time in a city."""
        return "noon"

    message = llm.bind_tools([get_weather, get_time], strict=True, parallel_tool_calls=False).invoke(
        "Weather in Paris?"
    )
    assert message.tool_calls[0]["name"] == "get_weather"
    assert message.tool_calls[0]["args"] == {"city": "Paris"}
    structured = llm.with_structured_output(SCHEMA | {"title": "Reply"}, method="json_schema", strict=True)
    gw.emulator.add(upstream_path("openai"), Reply.json(UPSTREAM))
    assert structured.invoke("The answer?") == {"answer": "42"}
    tools_body, schema_body = gw.upstream_bodies()
    assert [t["function"]["strict"] for t in tools_body["tools"]] == [True, True]
    assert tools_body["parallel_tool_calls"] is False
    assert schema_body["response_format"]["json_schema"]["strict"] is True


def test_the_agents_sdk_strict_tools_and_output_type_reach_the_upstream(gw: Setup) -> None:
    agents = pytest.importorskip("agents", reason="openai-agents is not installed")
    from pydantic import BaseModel

    class Reply_(BaseModel):
        answer: str

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    @agents.function_tool
    def get_time(city: str) -> str:
        """The local time in a city."""
        return "noon"

    agents.set_tracing_disabled(True)
    client = openai.AsyncOpenAI(base_url=gw.server.url + "/v1", api_key=gw.token, max_retries=0)
    agent = agents.Agent(
        name="weather",
        instructions="Answer.",
        tools=[get_weather, get_time],
        output_type=Reply_,
        model=agents.OpenAIChatCompletionsModel(model=MODELS["openai"], openai_client=client),
        model_settings=agents.ModelSettings(parallel_tool_calls=False),
    )
    result = agents.Runner.run_sync(agent, "Weather in Paris?")
    assert result.final_output == Reply_(answer="42")
    [body] = gw.upstream_bodies()
    assert [t["function"].get("strict") for t in body["tools"]] == [True, True]
    assert body["parallel_tool_calls"] is False
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True


def test_an_anthropic_instance_given_logprobs_answers_400_naming_it(gw: Setup) -> None:
    gw.emulator.add_prefix("/", Reply.json({"never": "reached"}))
    for field, extra in (
        ("logprobs", {"logprobs": True}),
        ("seed", {"seed": 1}),
        ("metadata", {"metadata": {"a": "b"}}),
    ):
        with pytest.raises(openai.BadRequestError) as caught:
            gw.client().chat.completions.create(
                model=MODELS["anthropic"], messages=[{"role": "user", "content": "hi"}], **extra
            )
        assert caught.value.body["param"] == field, caught.value.body
        assert "anthropic wire" in caught.value.body["message"]
    assert gw.emulator.requests() == []


def test_the_anthropic_and_gemini_wires_get_the_mapped_fields(gw: Setup) -> None:
    from ..support.paths import optional_fixture_bytes

    anthropic_body = optional_fixture_bytes("llm", "anthropic", "messages-text.json")
    gemini_body = optional_fixture_bytes("llm", "gemini", "generate-content-text.json")
    if anthropic_body is None or gemini_body is None:
        pytest.skip("../shared/fixtures is absent: recorded provider bodies are not available here")
    gw.emulator.add(upstream_path("anthropic"), Reply.json(anthropic_body))
    gw.emulator.add(upstream_path("gemini"), Reply.json(gemini_body))
    common = {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [WEATHER],
        "stop": ["END"],
        "top_p": 0.5,
    }
    gw.client().chat.completions.create(
        model=MODELS["anthropic"], parallel_tool_calls=False, user="u-1", **common
    )
    gw.client().chat.completions.create(model=MODELS["gemini"], seed=3, **common)
    [anthropic] = gw.emulator.requests(upstream_path("anthropic"))
    body = anthropic.json()
    assert body["tools"][0]["strict"] is True and anthropic.header("anthropic-beta")
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert (body["stop_sequences"], body["top_p"], body["metadata"]) == (["END"], 0.5, {"user_id": "u-1"})
    [gemini] = gw.upstream_bodies("gemini")
    config = gemini["generationConfig"]
    assert (config["seed"], config["topP"], config["stopSequences"]) == (3, 0.5, ["END"])
    assert gemini["toolConfig"] == {"functionCallingConfig": {"mode": "VALIDATED"}}


def _tool_call_answer() -> dict[str, Any]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        **UPSTREAM,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls", "logprobs": None}],
    }


# -- /v1/models lists what can answer ---------------------------------------------------------------


def test_models_lists_a_local_server_only_while_it_answers(gw: Setup) -> None:
    gw.emulator.add(
        "/lab/api/tags",
        Reply.json({"models": [{"name": "qwen3:8b"}, {"name": "nomic-embed-text:latest"}]}),
    )
    listed = {m.id: m for m in gw.client().models.list().data}
    assert not [i for i in listed if i.startswith(("ollama:", "lmstudio:"))]  # configured, nothing listens
    assert listed["lab:qwen3:8b"].owned_by == "lab"  # reachable: what it serves (chat models only)
    assert listed["lab:qwen3:8b"].model_extra["instance"] == "lab"
    assert "lab:nomic-embed-text:latest" not in listed
    assert listed["anthropic:claude-sonnet-4-5"].model_extra["instance"] == "anthropic"  # a key: listed
    [probe] = gw.emulator.requests("/lab/api/tags")
    assert probe.method == "GET"
    every = httpx.get(
        gw.server.url + "/v1/models", params={"all": "true"}, headers={"Authorization": f"Bearer {gw.token}"}
    ).json()["data"]
    hidden = {m["id"]: m for m in every if not m["available"]}
    assert hidden["ollama:llama3.1"]["instance"] == "ollama"
    assert "ollama is not reachable" in hidden["ollama:llama3.1"]["reason"]
    assert {m["id"] for m in every if m["available"]} == set(listed)
    assert len(gw.emulator.requests("/lab/api/tags")) == 1  # the probe stands for a while: not re-sent


# -- errors as the openai SDK expects -------------------------------------------------------------------


def test_a_budget_429_is_not_retried_by_the_openai_sdk_with_default_retries(gw: Setup) -> None:
    attempts: list[str] = []
    http_client = httpx.Client(event_hooks={"request": [lambda r: attempts.append(r.url.path)]})
    client = openai.OpenAI(
        base_url=gw.server.url + "/v1", api_key=gw.tokens["tight"], http_client=http_client
    )  # the SDK's default max_retries (2)
    assert client.max_retries == 2
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(
            model=MODELS["openai"], messages=[{"role": "user", "content": "hi"}], max_tokens=64
        )
    assert caught.value.body["code"] == "insufficient_quota"
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert attempts == ["/v1/chat/completions"]  # one attempt: no retry
    attempts.clear()
    with pytest.raises(openai.RateLimitError) as caught:  # embeddings draw on the same budgets
        client.embeddings.create(model="openai:text-embedding-3-small", input="word " * 200)
    assert caught.value.body["code"] == "insufficient_quota"
    assert attempts == ["/v1/embeddings"]
    assert gw.emulator.requests() == []


def test_a_method_the_gateway_lacks_answers_in_openai_shape(gw: Setup) -> None:
    answer = httpx.get(
        gw.server.url + "/v1/chat/completions", headers={"Authorization": f"Bearer {gw.token}"}
    )
    assert answer.status_code == 405
    assert set(answer.json()["error"]) == {"message", "type", "param", "code"}
