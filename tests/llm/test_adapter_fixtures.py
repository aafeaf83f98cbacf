"""Every recorded chat answer, stream and error body in ../shared/fixtures/llm (quirks aside: the
model-resolution work covers those) parses into the right text, tool calls, usage or error class —
both fed to the adapter directly and served by the loopback emulator through a real `ChatClient`."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from zarniwoop.contract.errors import (
    AuthError,
    ProviderError,
    ProviderHTTPError,
    ProviderOverloadedError,
    RateLimitedError,
)
from zarniwoop.contract.protocol import Secret
from zarniwoop.llm.adapters import ADAPTERS, ChatClient, ChatRequest, Endpoint
from zarniwoop.llm.adapters._http import SseDecoder
from zarniwoop.transport.http import HttpTransport

from ..support.emulator import Reply
from ..support.paths import fixture_bytes as _fixture_bytes
from ..support.paths import fixture_path, shared_fixtures

pytestmark = pytest.mark.anyio

KEY = "sk-test-FIXTURE-0123456789"


@contextlib.asynccontextmanager
async def _transport() -> AsyncIterator[HttpTransport]:
    transport = HttpTransport()
    try:
        yield transport
    finally:
        await transport.aclose()


@dataclass(frozen=True)
class Case:
    file: str
    wire: str
    mode: str  # json | sse | chunks (one SSE payload per line) | json-array | ndjson
    text: str | None = None
    text_prefix: str | None = None
    tools: tuple[tuple[str, str, dict], ...] = ()
    """(id or '', name, arguments) per tool call; '' means the id is made up by the adapter."""
    reasoning_prefix: str | None = None
    usage: tuple[int, int] | None = None
    finish: str | None = None
    model: str | None = None
    metadata: dict = field(default_factory=dict)
    headers_file: str | None = None


CHAT_CASES = [
    Case(
        "openai/chat-completion-text.json",
        "openai",
        "json",
        text="YES",
        usage=(146, 3),
        finish="stop",
        model="gpt-4o-mini-2024-07-18",
        headers_file="openai/chat-completion-text.headers.json",
        metadata={"x-request-id": "req_d157a5a0f4b64776bc387ccab624e664"},
    ),
    Case(
        "openai/chat-completion-text-2.json",
        "openai",
        "json",
        text_prefix="**Holiday Name:** Galaxy Day",
        usage=(16, 363),
        finish="stop",
    ),
    Case(
        "openai/chat-completion-tool-calls.json",
        "openai",
        "json",
        text="",
        tools=(("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", {"country": "Crumpet"}),),
        usage=(92, 17),
        finish="tool_calls",
        headers_file="openai/chat-completion-tool-calls.headers.json",
        metadata={"x-request-id": "req_1e7dabaf1f0dba1ec89a134d3bde8476"},
    ),
    Case(
        "openai/chat-stream-tool-calls.sse",
        "openai",
        "sse",
        text="",
        tools=(("call_1EYWDzueHEp8OsB8jJSEp7WB", "multiply", {"a": 1231, "b": 2331}),),
        usage=(54, 20),
        finish="tool_calls",
    ),
    Case(
        "deepseek/chat-completion-text.json",
        "openai",
        "json",
        text_prefix="## **Holiday Name: Gratitude of Small Things Day",
        usage=(13, 300),
        finish="length",
        model="deepseek-chat",
    ),
    Case(
        "deepseek/chat-completion-reasoning.json",
        "openai",
        "json",
        text='The word "strawberry" contains three instances of the letter "r": one after the "t" and two before the "y".',
        reasoning_prefix="We are asked: \"How many 'r's are in the word 'strawberry'?\"",
        usage=(18, 345),
        finish="stop",
        model="deepseek-reasoner",
        metadata={"reasoningTokens": 315},
    ),
    Case(
        "anthropic/stream-thinking.sse",
        "anthropic",
        "sse",
        text="- Captain\n- Scoop",
        reasoning_prefix="The user wants two names for a pet pelican,",
        usage=(46, 84),
        finish="end_turn",
    ),
    Case(
        "ollama/api-chat-stream.ndjson",
        "ollama",
        "ndjson",
        text="The",
        usage=(26, 282),
        finish="stop",
        model="llama3.2",
    ),
    Case(
        "deepseek/chat-completion-tool-call-reasoner.json",
        "openai",
        "json",
        text="",
        tools=(("call_00_9V0vrf86Pc9aelHCJMZqnJBo", "weather", {"location": "San Francisco"}),),
        reasoning_prefix="The user is asking for the weather in San Francisco",
        usage=(339, 92),
        finish="tool_calls",
        metadata={"cachedInputTokens": 320, "reasoningTokens": 48},
    ),
    Case(
        "deepseek/stream-tool-call.chunks.jsonl",
        "openai",
        "chunks",
        text="",
        tools=(("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", {"location": "San Francisco"}),),
        reasoning_prefix="The user is asking for the weather",
        usage=(339, 83),
        finish="tool_calls",
    ),
    Case(
        "openrouter/chat-stream-tool-call-kimi-k2.sse",
        "openai",
        "sse",
        text="",
        tools=(("0", "llm_version", {}),),
        usage=(57, 17),
        model="moonshotai/kimi-k2",
        metadata={"upstreamProvider": "Novita", "providerCostUsd": 0.00007159},
    ),
    Case(
        "lmstudio/api-v0-chat-completion.json",
        "lmstudio",
        "json",
        text_prefix="Greetings, I'm a helpful AI",
        usage=(24, 53),
        finish="stop",
        model="granite-3.0-2b-instruct",
    ),
    Case(
        "anthropic/messages-text.json",
        "anthropic",
        "json",
        text="Hello! I'm doing well, thanks for asking. How are you doing today? Is there anything I can help you with?",
        usage=(12, 29),
        finish="end_turn",
        model="claude-sonnet-4-5-20250929",
    ),
    Case(
        "anthropic/messages-text-and-tool-use.json",
        "anthropic",
        "json",
        text_prefix="<thinking>\nThe updateIssueList tool",
        tools=(("toolu_01LRmxn9vGM1d2DZSDBowdZ1", "updateIssueList", {}),),
        usage=(602, 93),
        finish="tool_use",
    ),
    Case(
        "anthropic/messages-thinking.json",
        "anthropic",
        "json",
        text="925 ÷ 5 = 185",
        reasoning_prefix="925 divided by 5 = 185",
        usage=(69, 33),
        finish="end_turn",
    ),
    Case(
        "anthropic/stream-text.sse",
        "anthropic",
        "sse",
        text="- Captain\n- Scoop",
        usage=(17, 10),
        finish="end_turn",
    ),
    Case(
        "anthropic/stream-text.chunks.jsonl",
        "anthropic",
        "chunks",
        text="Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
        usage=(12, 30),
        finish="end_turn",
    ),
    Case(
        "anthropic/stream-tool-use.sse",
        "anthropic",
        "sse",
        text="",
        tools=(
            ("toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator", {}),
            ("toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator", {}),
        ),
        usage=(542, 62),
        finish="tool_use",
        model="claude-haiku-4-5-20251001",
        headers_file="anthropic/stream-tool-use.headers.json",
    ),
    Case(
        "gemini/generate-content-text.json",
        "gemini",
        "json",
        text_prefix="There are **3** r's in strawberry.",
        usage=(9, 272),
        finish="STOP",
        model="gemini-3-pro-preview",
        metadata={"reasoningTokens": 244},
    ),
    Case(
        "gemini/generate-content-function-call.json",
        "gemini",
        "json",
        text="",
        tools=(("", "weather", {"location": "San Francisco"}),),
        usage=(29, 908),
        finish="STOP",
    ),
    Case(
        "gemini/stream-text.json",
        "gemini",
        "json-array",
        text="Scoop",
        reasoning_prefix="**Considering the Constraint**",
        usage=(11, 293),
        finish="STOP",
        model="gemini-3.6-flash",
    ),
    Case(
        "gemini/stream-function-call.json",
        "gemini",
        "json-array",
        text="",
        tools=(("", "pelican_name_generator", {}),),
        usage=(105, 13),
        finish="STOP",
    ),
    Case(
        "gemini/stream-thought-text.json",
        "gemini",
        "json-array",
        text="",
        tools=(("", "pelican_name_generator", {}),),
        reasoning_prefix="**Generating Pelican Names**",
        usage=(32, 54),
    ),
    Case(
        "ollama/api-chat.json",
        "ollama",
        "json",
        text="Hello! How are you today?",
        usage=(26, 298),
        finish="stop",
        model="llama3.2",
    ),
    Case(
        "ollama/api-chat-tool-calls.json",
        "ollama",
        "json",
        text="",
        tools=(("", "get_weather", {"city": "Tokyo"}),),
        usage=(169, 18),
        finish="stop",
    ),
]


@dataclass(frozen=True)
class ErrorCase:
    file: str
    wire: str
    status: int
    error: type[ProviderError]
    retry_after: float | None = None
    words: str = ""
    headers_file: str | None = None


ERROR_CASES = [
    ErrorCase(
        "errors/anthropic-401-invalid-api-key.json", "anthropic", 401, AuthError, words="invalid x-api-key"
    ),
    ErrorCase(
        "errors/anthropic-429-rate-limit-account.json",
        "anthropic",
        429,
        RateLimitedError,
        words="account's rate limit",
    ),
    ErrorCase(
        "errors/anthropic-429-rate-limit-org-itpm.json",
        "anthropic",
        429,
        RateLimitedError,
        words="20,000 input tokens",
    ),
    ErrorCase(
        "errors/anthropic-529-overloaded.json", "anthropic", 529, ProviderOverloadedError, words="Overloaded"
    ),
    ErrorCase(
        "errors/anthropic-529-overloaded-no-request-id.json",
        "anthropic",
        529,
        ProviderOverloadedError,
        words="overloaded_error",
        headers_file="errors/anthropic-529-overloaded-no-request-id.headers.json",
    ),
    ErrorCase(
        "errors/gemini-429-resource-exhausted-plain.json",
        "gemini",
        429,
        RateLimitedError,
        words="RESOURCE_EXHAUSTED",
    ),
    ErrorCase(
        "errors/gemini-429-resource-exhausted-retryinfo.json",
        "gemini",
        429,
        RateLimitedError,
        retry_after=34.4,
        words="exceeded your current quota",
    ),
    ErrorCase(
        "errors/ollama-error.json",
        "ollama",
        500,
        ProviderHTTPError,
        words="the model failed to generate a response",
    ),
    ErrorCase(
        "errors/openai-400-unsupported-parameter.json",
        "openai",
        400,
        ProviderHTTPError,
        words="Unsupported parameter",
    ),
    ErrorCase(
        "errors/openai-401-invalid-api-key.json", "openai", 401, AuthError, words="Incorrect API key provided"
    ),
    ErrorCase(
        "errors/openai-429-request-too-large-tpm.json",
        "openai",
        429,
        RateLimitedError,
        words="Request too large",
    ),
    ErrorCase(
        "errors/openrouter-429-upstream-rate-limited.json",
        "openai",
        429,
        RateLimitedError,
        words="temporarily rate-limited upstream",
        headers_file="errors/openrouter-429-upstream-rate-limited.headers.json",
    ),
]

NOT_CHAT = (
    "quirks/",
    "catalog/",
    "gateways/",
    "list-models",
    "api-v0-models",
    "api-v1-models",
    "api-tags",
    "api-ps",
    "api-version",
)
"""Model listings, the pricing catalog and the quirk bodies belong to the model-resolution work."""
COVERED_ELSEWHERE = {
    "errors/ollama-midstream-error.ndjson",
    "errors/openai-429-rate-limit-messages.txt",
}


def fixture_bytes(name: str) -> bytes:
    return _fixture_bytes("llm", *name.split("/"))


PATHS = {
    "openai": "/v1/chat/completions",
    "lmstudio": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "ollama": "/api/chat",
}


def _base(wire: str, emulator) -> str:
    return emulator.url + ("/v1" if wire == "openai" else "")


def _path(wire: str, model: str, stream: bool) -> str:
    if wire == "gemini":
        return f"/v1beta/models/{model}:{'streamGenerateContent' if stream else 'generateContent'}"
    return PATHS[wire]


def _feed(case: Case):
    adapter = ADAPTERS[case.wire]
    raw = fixture_bytes(case.file)
    if case.mode == "json":
        return adapter.parse(raw)
    acc = adapter.accumulator()
    if case.mode == "sse":
        for event, payload in SseDecoder().feed_text(raw.decode()):
            if isinstance(payload, dict):
                acc.feed(event, payload)
    elif case.mode in ("chunks", "ndjson"):  # one payload per line
        for line in raw.decode().splitlines():
            acc.feed(None, json.loads(line))
    elif case.mode == "json-array":
        for item in json.loads(raw):
            acc.feed(None, item)
    return acc.result()


def _check(case: Case, response) -> None:
    if case.text is not None:
        assert response.text == case.text
    if case.text_prefix is not None:
        assert response.text.startswith(case.text_prefix)
    assert len(response.tool_calls) == len(case.tools)
    for call, (call_id, name, arguments) in zip(response.tool_calls, case.tools, strict=True):
        assert call.name == name
        assert call.parsed_arguments() == arguments
        assert call.id == (call_id or call.id) and call.id
    if case.reasoning_prefix is not None:
        assert (response.reasoning or "").startswith(case.reasoning_prefix)
    else:
        assert response.reasoning is None
    assert response.usage is not None
    assert (response.usage.input, response.usage.output) == case.usage
    if case.finish is not None:
        assert response.finish_reason == case.finish
    if case.model is not None:
        assert response.model == case.model


@pytest.mark.parametrize("case", CHAT_CASES, ids=lambda c: c.file)
def test_fixture_parses(case: Case) -> None:
    response = _feed(case)
    _check(case, response)
    for key, value in case.metadata.items():
        if not key.startswith("x-"):
            assert response.metadata[key] == value


def _recorded_headers(name: str | None) -> dict[str, str]:
    if name is None:
        return {}
    data = json.loads(fixture_bytes(name))
    headers = data.get("headers", {})
    out = {k: (v[0] if isinstance(v, list) else v) for k, v in headers.items()}
    # Body encoding and length are the emulator's business, not the recording's.
    return {
        k: v
        for k, v in out.items()
        if k.lower() not in ("content-encoding", "transfer-encoding", "content-length", "connection")
    }


def _served_body(case: Case) -> tuple[bytes, str]:
    raw = fixture_bytes(case.file)
    if case.mode == "chunks":  # the recorder stripped the SSE framing: put it back
        return b"".join(
            b"data: " + line + b"\n\n" for line in raw.splitlines() if line.strip()
        ), "text/event-stream"
    if case.mode == "sse":
        return raw, "text/event-stream"
    return raw, "application/json"


@pytest.mark.parametrize("case", CHAT_CASES, ids=lambda c: c.file)
async def test_fixture_served_through_a_chat_client(case: Case, emulator) -> None:
    stream = case.mode != "json"
    model = "m-1"
    body, content_type = _served_body(case)
    headers = {**_recorded_headers(case.headers_file), "Content-Type": content_type}
    emulator.add(_path(case.wire, model, stream), Reply(body=body, headers=headers))
    async with _transport() as http:
        client = ChatClient(
            ADAPTERS[case.wire],
            Endpoint(case.wire, case.wire, _base(case.wire, emulator), Secret(KEY)),
            model,
            http,
        )
        request = ChatRequest.prompt("hi", stream=stream)
        response = await client.chat(request)
    _check(case, response)
    for key, value in case.metadata.items():
        assert response.metadata[key] == value
    sent = emulator.requests()[0]
    body_sent = sent.json()
    if case.wire in ("openai", "lmstudio"):
        assert sent.header("authorization") == f"Bearer {KEY}"
        assert body_sent["model"] == model and body_sent.get("stream", False) == stream
    elif case.wire == "anthropic":
        assert sent.header("x-api-key") == KEY and sent.header("anthropic-version") == "2023-06-01"
    elif case.wire == "gemini":
        assert sent.header("x-goog-api-key") == KEY and "key" not in sent.query
    elif case.wire == "ollama":
        assert body_sent["stream"] is stream


async def test_streamed_deltas_arrive_before_the_final_response(emulator) -> None:
    emulator.add(
        "/v1/messages",
        Reply(body=fixture_bytes("anthropic/stream-text.sse"), headers={"Content-Type": "text/event-stream"}),
    )
    async with _transport() as http:
        client = ChatClient(
            ADAPTERS["anthropic"], Endpoint("anthropic", "anthropic", emulator.url, Secret(KEY)), "m", http
        )
        items = [item async for item in client.stream(ChatRequest.prompt("hi"))]
    texts = [i.text for i in items[:-1]]
    assert texts == ["-", " Captain", "\n- Sc", "oop"]
    assert items[-1].text == "- Captain\n- Scoop"


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: c.file)
async def test_error_fixture_maps_to_the_contract_error(case: ErrorCase, emulator) -> None:
    headers = {**_recorded_headers(case.headers_file), "Content-Type": "application/json"}
    emulator.add(
        _path(case.wire, "m", False),
        Reply(status=case.status, body=fixture_bytes(case.file), headers=headers),
    )
    async with _transport() as http:
        client = ChatClient(
            ADAPTERS[case.wire],
            Endpoint(case.wire, "inst-a", _base(case.wire, emulator), Secret(KEY)),
            "m",
            http,
        )
        with pytest.raises(ProviderError) as caught:
            await client.chat(ChatRequest.prompt("hi"))
    error = caught.value
    assert type(error) is case.error
    assert error.status == case.status
    assert getattr(error, "retry_after", None) == case.retry_after
    assert error.instance_id == "inst-a"
    assert error.message.startswith(f"inst-a: HTTP {case.status}")
    assert case.words in error.message
    assert KEY not in error.message


@pytest.mark.parametrize(
    ("line", "seconds"),
    list(enumerate([0.174, 3.89, 9.816])),
)
def test_openai_rate_limit_messages_carry_their_retry_hint(line: int, seconds: float) -> None:
    message = fixture_bytes("errors/openai-429-rate-limit-messages.txt").decode().splitlines()[line]
    body = json.dumps(
        {"error": {"message": message, "type": "tokens", "code": "rate_limit_exceeded"}}
    ).encode()
    error = ADAPTERS["openai"].error(429, {}, body, "openai")
    assert isinstance(error, RateLimitedError)
    assert error.retry_after == pytest.approx(seconds)


def test_retry_after_header_wins_over_the_body_hint() -> None:
    body = fixture_bytes("errors/gemini-429-resource-exhausted-retryinfo.json")
    error = ADAPTERS["gemini"].error(429, {"Retry-After": "3"}, body, "gemini")
    assert isinstance(error, RateLimitedError) and error.retry_after == 3.0


async def test_ollama_midstream_error_raises_after_partial_text(emulator) -> None:
    emulator.add(
        "/api/chat",
        Reply(
            body=fixture_bytes("errors/ollama-midstream-error.ndjson"),
            headers={"Content-Type": "application/x-ndjson"},
        ),
    )
    seen = []
    async with _transport() as http:
        client = ChatClient(ADAPTERS["ollama"], Endpoint("ollama", "ollama", emulator.url), "gemma4", http)
        with pytest.raises(ProviderError) as caught:
            async for item in client.stream(ChatRequest.prompt("hi")):
                seen.append(item.text)
    assert "".join(seen) == " Yes.Ican"
    assert "an error was encountered while running the model" in caught.value.message
    assert not isinstance(caught.value, ProviderHTTPError)


def test_every_chat_and_error_fixture_is_covered() -> None:
    base = shared_fixtures()
    if base is None:
        pytest.skip("../shared/fixtures is absent")
    fixture_path("llm", "SOURCES.md")
    root = base / "llm"
    files = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.suffix in (".json", ".sse", ".jsonl", ".ndjson", ".txt")
    }
    relevant = {f for f in files if not any(part in f for part in NOT_CHAT)}
    covered = (
        {c.file for c in CHAT_CASES}
        | {c.headers_file for c in CHAT_CASES if c.headers_file}
        | {c.file for c in ERROR_CASES}
        | {c.headers_file for c in ERROR_CASES if c.headers_file}
        | COVERED_ELSEWHERE
    )
    assert relevant - covered == set(), "a chat/stream/error fixture has no parse test"
    assert covered - files == set(), "a test names a fixture that does not exist"
