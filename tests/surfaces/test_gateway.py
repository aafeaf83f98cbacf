"""The OpenAI-compatible gateway driven by the real `openai` SDK with an account-bound token: chat,
stream and tool-call round trips through the OpenAI, Anthropic and Gemini upstream wires on the
loopback emulator (recorded bodies from ../shared/fixtures/llm), the usage record on every level,
and the errors in OpenAI's shape. Every test twice: against the app in-process (Starlette's test
client, the fast tier's) and under a real `zarniwoop serve` (uvicorn's wire, the `process` tier)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from zarniwoop.llm.adapters import ADAPTERS
from zarniwoop.llm.adapters._http import SseDecoder
from zarniwoop.runtime import Runtime
from zarniwoop.surfaces.http import create_app
from zarniwoop.surfaces.http.guard import GATEWAY_MAX_BODY_BYTES

from ..support.emulator import Emulator, RecordedRequest, Reply
from ..support.gateway import (
    MIKE_KEYS,
    MODELS,
    gateway_tenants,
    openai_text_stream,
    prepare_gateway,
    sent_key,
    upstream_path,
)
from ..support.paths import optional_fixture_bytes, shared_fixtures
from ..support.served import served

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

openai = pytest.importorskip(
    "openai", reason="the gateway tests drive the real openai SDK (pip install openai)"
)

WIRES = ("openai", "anthropic", "gemini")
TEXT = {
    "openai": "openai/chat-completion-text.json",
    "anthropic": "anthropic/messages-text.json",
    "gemini": "gemini/generate-content-text.json",
}
STREAM = {"anthropic": "anthropic/stream-text.sse", "gemini": "gemini/stream-text.json"}
TOOL = {
    "openai": "openai/chat-completion-tool-calls.json",
    "anthropic": "anthropic/messages-text-and-tool-use.json",
    "gemini": "gemini/generate-content-function-call.json",
}
STREAM_TOOL = {
    "openai": "openai/chat-stream-tool-calls.sse",
    "anthropic": "anthropic/stream-tool-use.sse",
    "gemini": "gemini/stream-function-call.json",
}
SYNTHETIC_STREAM_TEXT = "The gateway streams this answer word by word."


def _recorded(name: str) -> bytes:
    body = optional_fixture_bytes("llm", *name.split("/"))
    if body is None:
        pytest.skip("../shared/fixtures is absent: recorded provider bodies are not available here")
    return body


def _content_type(name: str) -> str:
    return "text/event-stream" if name.endswith(".sse") else "application/json"


def _expected(wire: str, name: str) -> Any:
    """What the wire adapter makes of a recorded body (the gateway must say the same in OpenAI's shape)."""
    return _fed(wire, name)[0]


def _fed(wire: str, name: str) -> tuple[Any, int]:
    """The adapter's response to a recorded body, and how many text deltas its stream carries."""
    raw, adapter = _recorded(name), ADAPTERS[wire]
    if name.endswith(".sse") or name.startswith("gemini/stream"):
        acc, deltas = adapter.accumulator(), 0
        events = (
            SseDecoder().feed_text(raw.decode())
            if name.endswith(".sse")
            else [(None, p) for p in json.loads(raw)]
        )
        for event, payload in events:
            if isinstance(payload, dict):
                deltas += sum(1 for d in acc.feed(event, payload) if d.kind == "text" and d.text)
        return acc.result(), deltas
    return adapter.parse(raw), 0


@dataclass
class Gateway:
    emulator: Emulator
    url: str
    http: httpx.Client
    """Requests without the SDK; `base_url` is the gateway's."""
    in_process: bool
    token: str
    tokens: dict[str, str]
    config: Any
    home: Any

    def client(self, token: str | None = None) -> Any:
        # in-process the SDK sends through the test client; a real server gets the SDK's own client
        sdk_http = self.http if self.in_process else None
        return openai.OpenAI(
            base_url=self.url + "/v1", api_key=token or self.token, max_retries=0, http_client=sdk_http
        )

    def serve(self, wire: str, name: str, *, stream: bool = False) -> None:
        body = _recorded(name)
        self.emulator.add(
            upstream_path(wire, stream), Reply(body=body, headers={"Content-Type": _content_type(name)})
        )


@pytest.fixture(scope="module", params=["app", pytest.param("serve", marks=pytest.mark.process)])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    emulator = Emulator().start()
    directory = tmp_path_factory.mktemp("gateway")
    tenants = gateway_tenants(emulator)
    tenants["acme"]["settings"]["ai.alias.default.analyze"] = "anthropic:claude-sonnet-4-5"
    tenants["acme"]["settings"]["ai.alias.default.broken"] = "nosuch:model"
    tenants["acme"]["accounts"]["mike"]["llm"]["failover"] = {"max_retries": 1, "retry_delay_ms": 5}
    tenants["acme"]["projects"]["tight"] = {"team": "nlp", "llm": {"quota": {"monthly_tokens": 50}}}
    setup = prepare_gateway(
        directory,
        emulator,
        tenants=tenants,
        tokens={"no-account": ("transformer-review", None), "tight": ("tight", "mike")},
    )
    given = (setup.token, dict(setup.tokens), setup.config, setup.home)
    try:
        if request.param == "app":  # what `serve` runs; a server's 500 is an answer, not a raise
            app = create_app(config=setup.config, home=setup.home)
            with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as http:
                yield Gateway(emulator, str(http.base_url), http, True, *given)
        else:
            with served(setup.config, setup.home) as server, httpx.Client(base_url=server.url) as http:
                yield Gateway(emulator, server.url, http, False, *given)
    finally:
        emulator.stop()


@pytest.fixture
def gw(gateway: Gateway) -> Gateway:
    gateway.emulator.reset()
    return gateway


def _usage_rows(gw: Gateway, usage_id: str) -> tuple[Any, list[Any]]:
    import asyncio

    async def read() -> tuple[Any, list[Any]]:
        runtime = await Runtime.open(gw.config, home=gw.home)
        try:
            record = await runtime.db.fetchone(
                "SELECT tenant, account, project, team, provider, model, credential_source, tokens_input,"
                " tokens_output, outcome FROM llm_usage_records WHERE id = ?",
                (usage_id,),
            )
            lines = await runtime.db.fetchall(
                "SELECT level, owner, period, used FROM llm_quota_usage WHERE tenant = 'acme' ORDER BY level, owner, period"
            )
            return record, lines
        finally:
            await runtime.aclose()

    return asyncio.run(read())


# -- chat, stream, tools on every wire ----------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_chat_completion_through_each_upstream_wire(gw: Gateway, wire: str) -> None:
    gw.serve(wire, TEXT[wire])
    expected = _expected(wire, TEXT[wire])
    completion = gw.client().chat.completions.create(
        model=MODELS[wire], messages=[{"role": "user", "content": "How are you?"}], max_tokens=200
    )
    assert completion.object == "chat.completion"
    assert completion.choices[0].message.content == expected.text
    assert completion.choices[0].finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (
        expected.usage.input,
        expected.usage.output,
    )
    assert completion.model == MODELS[wire]  # what served, as a spec
    served = completion.model_extra["zarniwoop"]
    assert served["credential_source"] == "account"
    [upstream] = gw.emulator.requests(upstream_path(wire))
    assert sent_key(wire, upstream) == MIKE_KEYS[wire]  # mike's own key, from the cascade


def test_streamed_completion_over_the_openai_wire_arrives_in_chunks_with_usage_last(gw: Gateway) -> None:
    gw.emulator.add(
        upstream_path("openai"),
        Reply(
            body=openai_text_stream(SYNTHETIC_STREAM_TEXT, (21, 9)),
            headers={"Content-Type": "text/event-stream"},
        ),
    )
    chunks = list(
        gw.client().chat.completions.create(
            model=MODELS["openai"],
            messages=[{"role": "user", "content": "stream please"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == SYNTHETIC_STREAM_TEXT
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) == len(
        SYNTHETIC_STREAM_TEXT.split()
    )
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [
        "stop"
    ]
    assert chunks[-1].choices == [] and (
        chunks[-1].usage.prompt_tokens,
        chunks[-1].usage.completion_tokens,
    ) == (21, 9)
    assert all(c.usage is None for c in chunks[:-1])
    assert gw.emulator.requests(upstream_path("openai"))[0].json()["stream"] is True


@pytest.mark.parametrize("wire", ["anthropic", "gemini"])
def test_streamed_completion_through_anthropic_and_gemini_wires(gw: Gateway, wire: str) -> None:
    gw.serve(wire, STREAM[wire], stream=True)
    expected, deltas = _fed(wire, STREAM[wire])
    stream = gw.client().chat.completions.create(
        model=MODELS[wire],
        messages=[{"role": "user", "content": "stream please"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == expected.text
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == deltas  # as they arrived
    last = chunks[-1]
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (
        expected.usage.input,
        expected.usage.output,
    )


def test_an_upstream_failing_mid_stream_ends_the_stream_with_an_error_event(gw: Gateway) -> None:
    body = _recorded("errors/ollama-midstream-error.ndjson")  # four words, then {"error": …}
    gw.emulator.add("/local/api/chat", Reply(body=body, headers={"Content-Type": "application/x-ndjson"}))
    received: list[str] = []
    with pytest.raises(openai.APIError) as caught:
        for c in gw.client().chat.completions.create(
            model="ollama:gemma4", messages=[{"role": "user", "content": "hi"}], stream=True
        ):
            received.append(c.choices[0].delta.content or "")
    assert "".join(received) == " Yes.Ican"  # what arrived before the failure was passed on
    assert "an error was encountered while running the model" in str(caught.value)


def test_without_include_usage_no_chunk_carries_usage(gw: Gateway) -> None:
    gw.serve("anthropic", STREAM["anthropic"], stream=True)
    chunks = list(
        gw.client().chat.completions.create(
            model=MODELS["anthropic"], messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    assert chunks and all(c.usage is None for c in chunks) and all(c.choices for c in chunks)


def _has_tool_result(wire: str, body: dict[str, Any]) -> bool:
    if wire == "openai":
        return any(m.get("role") == "tool" for m in body["messages"])
    if wire == "anthropic":
        return any(
            isinstance(m["content"], list) and any(b.get("type") == "tool_result" for b in m["content"])
            for m in body["messages"]
        )
    return any("functionResponse" in p for c in body["contents"] for p in c["parts"])


def _tool_round_trip_route(wire: str, tool_file: str, text_file: str, *, stream: bool = False):
    tool_body, text_body = _recorded(tool_file), _recorded(text_file)

    def route(request: RecordedRequest) -> Reply:
        body = text_body if _has_tool_result(wire, request.json()) else tool_body
        name = text_file if body is text_body else tool_file
        return Reply(body=body, headers={"Content-Type": _content_type(name)})

    return route


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_tool_call_round_trip_through_each_wire(gw: Gateway, wire: str, stream: bool) -> None:
    tool_file = STREAM_TOOL[wire] if stream else TOOL[wire]
    text_file = (STREAM.get(wire) if stream else None) or TEXT[wire]
    if stream and wire == "openai":
        text_file = "openai-synthetic"
    expected_calls = _expected(wire, tool_file).tool_calls
    expected_call = expected_calls[0]
    if text_file == "openai-synthetic":
        tool_body = _recorded(tool_file)

        def route(request: RecordedRequest) -> Reply:
            if _has_tool_result("openai", request.json()):
                return Reply(
                    body=openai_text_stream("It is 42.", (30, 4)),
                    headers={"Content-Type": "text/event-stream"},
                )
            return Reply(body=tool_body, headers={"Content-Type": "text/event-stream"})

        gw.emulator.add(upstream_path(wire, stream), route)
    else:
        gw.emulator.add(upstream_path(wire, stream), _tool_round_trip_route(wire, tool_file, text_file))
    tool = {
        "type": "function",
        "function": {
            "name": expected_call.name,
            "description": "the tool the recorded answer calls",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Use the tool."}]
    client = gw.client()

    def ask() -> tuple[str | None, list[Any], str | None]:
        if not stream:
            done = client.chat.completions.create(
                model=MODELS[wire], messages=messages, tools=[tool], tool_choice="auto"
            )
            message = done.choices[0].message
            return message.content, list(message.tool_calls or ()), done.choices[0].finish_reason
        text, calls, finish = "", {}, None
        for c in client.chat.completions.create(
            model=MODELS[wire], messages=messages, tools=[tool], stream=True
        ):
            if not c.choices:
                continue
            delta = c.choices[0].delta
            text += delta.content or ""
            for part in delta.tool_calls or ():
                slot = calls.setdefault(part.index, {"id": part.id, "name": "", "arguments": ""})
                slot["name"] += part.function.name or ""
                slot["arguments"] += part.function.arguments or ""
            finish = c.choices[0].finish_reason or finish
        return (
            text,
            [
                openai.types.chat.ChatCompletionMessageToolCall(type="function", id=s["id"], function=s)
                for s in calls.values()
            ],
            finish,
        )

    _, calls, finish = ask()
    assert finish == "tool_calls"
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        (e.name, e.parsed_arguments()) for e in expected_calls
    ]
    assert len({c.id for c in calls}) == len(calls) and all(c.id for c in calls)
    first = gw.emulator.requests(upstream_path(wire, stream))[0].json()
    declared = json.dumps(first)
    assert expected_call.name in declared  # the tool reached the upstream in its wire's shape

    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in calls
            ],
        }
    )
    messages += [{"role": "tool", "tool_call_id": c.id, "content": '{"answer": 42}'} for c in calls]
    text, calls, finish = ask()
    assert calls == [] and finish == "stop" and text
    second = gw.emulator.requests(upstream_path(wire, stream))[1].json()
    assert _has_tool_result(wire, second) and "42" in json.dumps(second)


NAMED_CHOICE = {
    "openai": ("tool_choice", {"type": "function", "function": {"name": "lookup_population"}}),
    "anthropic": ("tool_choice", {"type": "tool", "name": "lookup_population"}),
    "gemini": (
        "toolConfig",
        {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup_population"]}},
    ),
}


@pytest.mark.parametrize("wire", WIRES)
def test_a_named_tool_choice_reaches_each_wire_in_its_own_shape(gw: Gateway, wire: str) -> None:
    gw.serve(wire, TOOL[wire])
    gw.client().chat.completions.create(
        model=MODELS[wire],
        messages=[{"role": "user", "content": "Population of Crumpet?"}],
        tools=[
            {"type": "function", "function": {"name": "lookup_population", "parameters": {"type": "object"}}}
        ],
        tool_choice={"type": "function", "function": {"name": "lookup_population"}},
    )
    key, value = NAMED_CHOICE[wire]
    assert gw.emulator.requests(upstream_path(wire))[0].json()[key] == value


def test_model_takes_a_comma_cascade_and_a_purpose(gw: Gateway) -> None:
    gw.serve("anthropic", TEXT["anthropic"])
    cascade = gw.client().chat.completions.create(
        model="default:nosuch, anthropic:claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}]
    )
    assert cascade.model == "anthropic:claude-sonnet-4-5"
    light = "/v1beta/models/gemini-2.5-flash:generateContent"  # mike's light_model
    gw.emulator.add(
        light, Reply(body=_recorded(TEXT["gemini"]), headers={"Content-Type": "application/json"})
    )
    answer = gw.client().chat.completions.create(
        model="purpose:light", messages=[{"role": "user", "content": "hi"}]
    )
    assert answer.model == "gemini:gemini-2.5-flash" and len(gw.emulator.requests(light)) == 1


def test_fallback_models_extension_serves_when_the_primary_is_overloaded(gw: Gateway) -> None:
    overloaded = _recorded("errors/anthropic-529-overloaded.json")
    gw.emulator.add(
        upstream_path("anthropic"),
        Reply(status=529, body=overloaded, headers={"Content-Type": "application/json"}),
    )
    gw.serve("openai", TEXT["openai"])
    answer = gw.client().chat.completions.create(
        model="anthropic:claude-sonnet-4-5",
        messages=[{"role": "user", "content": "hi"}],
        extra_body={"fallback_models": ["openai:gpt-4o-mini"]},  # before mike's gemini entry (priority 2)
    )
    assert answer.model == "openai:gpt-4o-mini" and answer.choices[0].message.content == "YES"
    [switch] = answer.model_extra["zarniwoop"]["failover"]
    assert (switch["from"], switch["to"]) == ("anthropic", "openai") and "529" in switch["reason"]
    assert (
        len(gw.emulator.requests(upstream_path("anthropic"))) == 2
    )  # the primary really was called (1 retry)
    assert gw.emulator.requests(upstream_path("gemini")) == []


def test_a_provider_without_any_key_is_refused_naming_it(gw: Gateway) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        gw.client().chat.completions.create(
            model="ollama-cloud:gpt-oss:120b", messages=[{"role": "user", "content": "hi"}]
        )
    assert (
        caught.value.body["code"] == "missing_credential" and "'ollama-cloud'" in caught.value.body["message"]
    )
    assert gw.emulator.requests() == []


# -- accounting ----------------------------------------------------------------------------------


def test_usage_record_charges_account_project_team_and_tenant(gw: Gateway) -> None:
    gw.serve("anthropic", TEXT["anthropic"])
    expected = _expected("anthropic", TEXT["anthropic"])
    before = {(r[0], r[1], r[2]): r[3] for r in _usage_rows(gw, "-")[1]}
    completion = gw.client().chat.completions.create(
        model="anthropic:claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}], max_tokens=64
    )
    record, lines = _usage_rows(gw, completion.model_extra["zarniwoop"]["usage_id"])
    assert record == (
        "acme",
        "mike",
        "transformer-review",
        "nlp",
        "anthropic",
        "claude-sonnet-4-5",
        "account",
        expected.usage.input,
        expected.usage.output,
        "ok",
    )
    after = {(r[0], r[1], r[2]): r[3] for r in lines}
    charged = {key: after[key] - before.get(key, 0) for key in after}
    total = expected.usage.total
    for level, owner in (
        ("account", "mike"),
        ("project", "transformer-review"),
        ("team", "nlp"),
        ("tenant", "_tenant"),
    ):
        assert charged[(level, owner, "daily")] == total, (level, charged)
        assert charged[(level, owner, "monthly")] == total, (level, charged)


def test_a_project_over_budget_gets_429_naming_the_project(gw: Gateway) -> None:
    gw.serve("anthropic", TEXT["anthropic"])
    with pytest.raises(openai.RateLimitError) as caught:
        gw.client(gw.tokens["tight"]).chat.completions.create(
            model="anthropic:claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}], max_tokens=64
        )
    error = caught.value.body
    assert caught.value.status_code == 429
    assert error["code"] == "insufficient_quota" and error["type"] == "insufficient_quota"
    assert error["level"] == "project" and "project/tight" in error["message"]
    assert gw.emulator.requests(upstream_path("anthropic")) == []  # refused before anything was sent


# -- the rest of the surface -----------------------------------------------------------------------


def test_models_lists_aliases_and_catalog_models_with_a_key(gw: Gateway) -> None:
    models = gw.client().models.list()
    ids = {m.id for m in models.data}
    assert {"anthropic:claude-sonnet-4-5", "gemini:gemini-2.5-pro", "openai:gpt-4o-mini"} <= ids
    by_id = {m.id: m for m in models.data}
    assert by_id["anthropic:claude-sonnet-4-5"].owned_by == "anthropic"
    assert all(m.object == "model" for m in models.data)
    alias = by_id["default:analyze"]
    assert alias.model_extra["target"] == "anthropic:claude-sonnet-4-5"
    assert alias.model_extra["credential_source"] == "account"
    assert "default:broken" not in ids  # resolves nowhere: not listed
    assert not any(m.id.startswith(("deepseek:", "ollama-cloud:")) for m in models.data)  # no key anywhere


def test_errors_come_in_openai_shape(gw: Gateway) -> None:
    client = gw.client()
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="nosuch:model-x", messages=[{"role": "user", "content": "hi"}])
    assert unknown.value.body["code"] == "model_not_found" and unknown.value.body["param"] == "model"
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model=MODELS["openai"], messages=[])
    assert bad.value.body["param"] == "messages" and bad.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.PermissionDeniedError) as denied:
        gw.client(gw.tokens["no-account"]).chat.completions.create(
            model=MODELS["openai"], messages=[{"role": "user", "content": "hi"}]
        )
    assert denied.value.body["code"] == "account_required"
    with pytest.raises(openai.AuthenticationError) as anonymous:
        gw.client("zw_not-a-token").models.list()
    assert anonymous.value.body["code"] == "invalid_api_key" and "token" in anonymous.value.body["message"]
    assert gw.emulator.requests() == []


def test_embeddings_on_a_wire_without_them_answer_400_naming_the_model(gw: Gateway) -> None:
    answer = gw.http.post(
        "/v1/embeddings",
        json={"model": MODELS["anthropic"], "input": "hi"},
        headers={"Authorization": f"Bearer {gw.token}"},
    )
    assert answer.status_code == 400
    assert set(answer.json()["error"]) >= {"message", "type", "param", "code"}
    assert answer.json()["error"]["param"] == "model"
    assert "no embeddings API" in answer.json()["error"]["message"]
    assert gw.emulator.requests() == []


def test_the_body_cap_answers_in_openai_shape_on_the_gateway(gw: Gateway) -> None:
    content = "x" * GATEWAY_MAX_BODY_BYTES  # the gateway's cap (32 MiB), not the API's 1 MiB
    big = json.dumps({"model": MODELS["openai"], "messages": [{"role": "user", "content": content}]})
    answer = gw.http.post(
        "/v1/chat/completions",
        content=big,
        headers={"Authorization": f"Bearer {gw.token}", "Content-Type": "application/json"},
    )
    assert answer.status_code == 413 and answer.json()["error"]["type"] == "invalid_request_error"
    assert gw.emulator.requests() == []


def test_the_rest_of_the_api_keeps_its_own_error_shape(gw: Gateway) -> None:
    answer = gw.http.get("/v1/research/providers")
    assert answer.status_code == 401 and set(answer.json()["error"]) == {"message"}


def test_shared_fixtures_folder_is_where_the_tests_read_it() -> None:
    if shared_fixtures() is None:
        pytest.skip("../shared/fixtures is absent")
    assert (shared_fixtures() / "llm" / TEXT["openai"]).is_file()
