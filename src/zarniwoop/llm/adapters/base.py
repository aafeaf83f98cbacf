"""What every chat adapter shares: the request, the endpoint, the wire-adapter shape, the client.

A wire adapter is pure, like a search protocol: `build()` turns a `ChatRequest` into a
`RequestSpec`, `parse()` turns a 2xx body into a `ChatResponse`, `error()` turns a non-2xx
answer into the contract error, and `accumulator()` folds stream events into the final response.
Only `ChatClient` does I/O, over the process's one transport (`transport/http.py`).

A `ChatClient` is built fresh for every call with that call's key (seed 002 §4 "a new LLM object
per call"). It is a slotted object holding four references — construction costs about a
microsecond, where a new SDK client costs ~30 ms (CA bundle loading) — and it never outlives the call.

    client = ChatClient(ADAPTERS["anthropic"], Endpoint("anthropic", "anthropic", url, key), "claude-sonnet-4-5", http)
    response = await client.chat(ChatRequest.prompt("Hello"))
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ...contract.protocol import RequestSpec, Secret
from .options import NO_OPTIONS, SamplingOptions
from .response import ChatResponse, ToolCall

if TYPE_CHECKING:
    from ...contract.errors import ProviderError
    from ...transport.http import HttpTransport

Role = Literal["system", "user", "assistant", "tool"]
Framing = Literal["sse", "ndjson", "json-array"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    """On an assistant message: the calls the model made (sent back with the tool results)."""
    tool_call_id: str | None = None
    """On a tool message: which call this is the result of."""
    name: str | None = None
    """On a tool message: the tool's name (Gemini and Ollama match results by name)."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    """A JSON schema of the arguments object."""
    strict: bool | None = None
    """OpenAI's `function.strict`: the arguments must match `parameters` exactly (None: not asked)."""


@dataclass(frozen=True, slots=True)
class NativeBody:
    """A request of another API shape, carried next to its chat form (`ChatRequest.native`): a wire that
    serves the shape natively sends `body` as the client wrote it (`adapter_for`); every other wire
    sends the chat form, unless the shape asked for something no bridge carries (`refused`)."""

    api: str
    """The API shape, e.g. `responses` (OpenAI's `/v1/responses`)."""
    body: Mapping[str, Any] = field(compare=False)
    refused: tuple[tuple[str, str], ...] = ()
    """`(field, reason)` pairs a bridged wire cannot honour: the first is the 400 a bridge answers."""


@dataclass(frozen=True, slots=True)
class ChatRequest:
    messages: tuple[ChatMessage, ...]
    max_tokens: int = 1024
    temperature: float | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str | None = None
    """None/`auto`, `required` (some tool), `none`, or a tool name."""
    json_output: bool = False
    """Ask for a JSON object (the wire's JSON mode; an instruction where the wire has none)."""
    json_schema: Mapping[str, Any] | None = None
    """Ask for JSON matching this schema, where the wire supports it (implies `json_output`)."""
    stream: bool = False
    options: SamplingOptions = field(default_factory=lambda: NO_OPTIONS)
    """OpenAI's further request fields; each wire maps them or refuses them (`options.py`)."""
    native: NativeBody | None = None
    """The request as another API shape wrote it (the gateway's `/v1/responses`), for wires that serve it."""

    @classmethod
    def prompt(cls, text: str, *, system: str | None = None, **options: Any) -> ChatRequest:
        messages = ((ChatMessage("system", system),) if system else ()) + (ChatMessage("user", text),)
        return cls(messages, **options)

    @property
    def wants_json(self) -> bool:
        return self.json_output or self.json_schema is not None

    def system_text(self) -> str:
        return "\n\n".join(m.content for m in self.messages if m.role == "system" and m.content)

    def estimated_input_tokens(self) -> int:
        """A cheap upper-side estimate (≈4 characters a token, plus framing) for quota holds."""
        chars = sum(
            len(m.content) + sum(len(c.arguments) + len(c.name) for c in m.tool_calls) for m in self.messages
        )
        chars += sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in self.tools)
        if self.json_schema is not None:
            chars += len(json.dumps(self.json_schema))
        return chars // 4 + 4 * len(self.messages) + 8


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and as whom one call goes: the instance's base URL and this call's key."""

    wire_type: str
    instance: str
    base_url: str
    api_key: Secret | None = None

    def __repr__(self) -> str:  # the key is a Secret already; keep the repr short anyway
        return f"Endpoint({self.wire_type!r}, {self.instance!r}, {self.base_url!r})"


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """One piece of a streamed answer, as it arrives (partial tokens pass through unsanitised)."""

    kind: Literal["text", "reasoning", "tool_call"]
    text: str = ""
    tool_call: ToolCall | None = None


class StreamAccumulator(Protocol):
    def feed(self, event: str | None, payload: Any) -> list[StreamDelta]:
        """One decoded event (`payload` is the JSON value; `event` the SSE event name, if any)."""
        ...

    def result(self) -> ChatResponse: ...


class WireAdapter(Protocol):
    wire_type: str
    framing: Framing
    """How the wire frames a stream: SSE, newline-delimited JSON, or one streamed JSON array."""

    def build(self, request: ChatRequest, endpoint: Endpoint, model: str) -> RequestSpec: ...

    def parse(self, body: bytes) -> ChatResponse: ...

    def error(self, status: int, headers: Mapping[str, str], body: bytes, instance: str) -> ProviderError: ...

    def accumulator(self) -> StreamAccumulator: ...


class ChatClient:
    """One call's client: a wire adapter, an endpoint with the call's key, a model, the shared pool."""

    __slots__ = ("adapter", "endpoint", "guarded", "http", "model", "timeout", "untrusted")

    def __init__(
        self,
        adapter: WireAdapter,
        endpoint: Endpoint,
        model: str,
        http: HttpTransport,
        *,
        timeout: float = 120.0,
        untrusted: bool = False,
        guarded: bool = False,
    ) -> None:
        """`untrusted`: a tenant or project set the base URL, so error bodies are summarised (status
        and reason), never reflected; `guarded`: every request passes the transport's SSRF policy
        (False when the URL is the operator's or the operator allows private endpoints)."""
        self.adapter = adapter
        self.endpoint = endpoint
        self.model = model
        self.http = http
        self.timeout = timeout
        self.untrusted = untrusted
        self.guarded = guarded

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """The whole answer. A streaming request is consumed here and folded into one response."""
        from ._http import send, summary

        if request.stream:
            final: ChatResponse | None = None
            async for _, response in self._events(request):
                final = response or final
            assert final is not None
            return final
        spec = self.adapter.build(request, self.endpoint, self.model)
        status, headers, body = await send(self.http, spec, self.timeout, self.guarded)
        if status >= 400:
            shown = summary(status) if self.untrusted else body
            raise _redacted(self.adapter.error(status, headers, shown, self.endpoint.instance), self.endpoint)
        try:
            response = self.adapter.parse(body)
        except Exception as exc:
            raise _redacted(_as_parse_error(exc, self.endpoint.instance), self.endpoint) from None
        return response.with_changes(metadata={**response.metadata, **_header_metadata(headers)})

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta | ChatResponse]:
        """Deltas as they arrive, then the final `ChatResponse` as the last item."""
        async for delta, response in self._events(request):
            if delta is not None:
                yield delta
            if response is not None:
                yield response

    async def _events(
        self, request: ChatRequest
    ) -> AsyncIterator[tuple[StreamDelta | None, ChatResponse | None]]:
        from ._http import stream_payloads

        streaming = request if request.stream else _with_stream(request)
        spec = self.adapter.build(streaming, self.endpoint, self.model)
        accumulator = self.adapter.accumulator()
        try:
            async for event, payload in stream_payloads(
                self.http,
                spec,
                self.timeout,
                self.adapter,
                self.endpoint.instance,
                self.guarded,
                summarise=self.untrusted,
            ):
                for delta in accumulator.feed(event, payload):
                    yield delta, None
        except Exception as exc:
            from ...contract.errors import ProviderError

            if isinstance(exc, ProviderError):
                raise _redacted(exc, self.endpoint) from None
            raise
        yield None, accumulator.result()


def _with_stream(request: ChatRequest) -> ChatRequest:
    from dataclasses import replace

    return replace(request, stream=True)


def _as_parse_error(exc: Exception, instance: str) -> ProviderError:
    from ...contract.errors import ParseError, ProviderError

    if isinstance(exc, ProviderError):
        exc.instance_id = exc.instance_id or instance
        return exc
    return ParseError(
        f"{instance}: unexpected chat response ({type(exc).__name__}: {exc})", instance_id=instance
    )


def _redacted(error: ProviderError, endpoint: Endpoint) -> ProviderError:
    """Make sure no error text carries the call's key (some providers echo part of it back)."""
    key = endpoint.api_key.reveal() if endpoint.api_key else ""
    if key and len(key) >= 6 and key in error.message:
        error.message = error.message.replace(key, "***")
        error.args = (error.message,)
    return error


_KEEP_HEADERS = (
    "x-request-id",
    "request-id",
    "retry-after",
    "x-ratelimit-remaining-tokens",
    "anthropic-ratelimit-tokens-remaining",
)


def _header_metadata(headers: Mapping[str, str]) -> dict[str, str]:
    lowered = {k.lower(): v for k, v in headers.items()}
    return {name: lowered[name] for name in _KEEP_HEADERS if name in lowered}
