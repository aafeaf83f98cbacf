"""What every chat adapter shares: the request, the endpoint, the wire-adapter shape, the client.

A wire adapter is pure, like a search protocol: `build()` turns a `ChatRequest` into a
`RequestSpec`, `parse()` turns a 2xx body into a `ChatResponse`, `error()` turns a non-2xx
answer into the contract error, and `accumulator()` folds stream events into the final response.
Only `ChatClient` does I/O, over the process's one transport (`transport/http.py`).

Two other kinds of request ride the same call path (budgets, failover, settlement):

- a *native* request (`ChatRequest.native`) carries the client's own body in another API shape
  (`/v1/messages` → `anthropic-messages`, `/v1/responses` → `responses`): `adapters.adapter_for`
  picks, per attempt, the adapter registered for (shape × wire) that sends that body as it came
  (model and token cap set by the call, its stream events relayed as they came in `StreamDelta.raw`)
  where the instance serves the shape, else the wire's chat adapter with the mapped `ChatRequest` —
  after refusing the first field the mapping could not carry (`NativeBody.refused`) with a 400;
- an *embeddings* request (`ChatRequest.embedding`) goes through the wire's embeddings codec
  (`embeddings.py`), which `adapter_for` picks instead of its chat adapter.

A `ChatClient` is built fresh for every call with that call's key (seed 002 §4 "a new LLM object
per call"). It is a slotted object holding four references — construction costs about a
microsecond, where a new SDK client costs ~30 ms (CA bundle loading) — and it never outlives the call.

    client = ChatClient(ADAPTERS["anthropic"], Endpoint("anthropic", "anthropic", url, key), "claude-sonnet-4-5", http)
    response = await client.chat(ChatRequest.prompt("Hello"))
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ...contract.protocol import RequestSpec, Secret
from .images import ImagePart
from .options import NO_OPTIONS, SamplingOptions
from .response import ChatResponse, TokenUsage, ToolCall

if TYPE_CHECKING:
    from ...contract.errors import ProviderError
    from ...transport.http import HttpTransport
    from .embeddings import EmbeddingInput

Role = Literal["system", "user", "assistant", "tool"]
NATIVE_ANSWER = "nativeAnswer"
"""`ChatResponse.metadata` key of a native adapter's whole answer body as it came, which the gateway
returns to the client of that API shape (set only where the request was sent as written)."""
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
    parts: tuple[str | ImagePart, ...] = ()
    """On a user message with images, or a tool result with images (a screenshot a tool read): its
    text and image parts in the order sent (`content` is the text alone, joined); empty when the
    message is text only. Each wire writes them in its own form (`results.py`: where a tool result takes none)."""

    @classmethod
    def of_parts(cls, role: Role, parts: Sequence[str | ImagePart], **fields: Any) -> ChatMessage:
        """A message of text and image parts in the order sent: `content` is their text joined,
        `parts` kept only when one is an image (a text-only message has none)."""
        text = "".join(p for p in parts if isinstance(p, str))
        images = tuple(parts) if any(isinstance(p, ImagePart) for p in parts) else ()
        return cls(role, text, parts=images, **fields)

    @property
    def images(self) -> tuple[ImagePart, ...]:
        """The message's images, in order (none on a text-only message)."""
        return tuple(p for p in self.parts if isinstance(p, ImagePart))


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
    """The client's request in another API shape, carried next to its mapped chat form
    (`ChatRequest.native`): the adapter that serves the shape natively (`adapters.adapter_for`) sends
    `body` as the client wrote it; every other wire sends the chat form, unless the shape asked for
    something no bridge carries (`refused`)."""

    shape: str
    """The API shape, e.g. `anthropic-messages` or `responses` (a native adapter's `native_shape`)."""
    body: Mapping[str, Any] = field(compare=False)
    refused: tuple[tuple[str, str], ...] = ()
    """`(field, reason)` pairs the mapped chat form cannot carry (a server tool, an image block,
    `reasoning.effort`): a bridged wire answers a 400 naming the first."""
    headers: Mapping[str, str] = field(default_factory=dict, compare=False)
    """The shape's own request headers the client sent (`anthropic-version`, `anthropic-beta`)."""
    extra_input_tokens: int = 0
    """The input estimate of the parts the mapped request leaves out (images, documents, thinking)."""


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
    native: NativeBody | None = field(default=None, compare=False)
    """The client's own body, for a wire that speaks its API shape (see the module docstring)."""
    embedding: EmbeddingInput | None = field(default=None, compare=False)
    """Set on an embeddings call: the texts are the user messages, `max_tokens` is 0."""

    @classmethod
    def prompt(cls, text: str, *, system: str | None = None, **options: Any) -> ChatRequest:
        messages = ((ChatMessage("system", system),) if system else ()) + (ChatMessage("user", text),)
        return cls(messages, **options)

    @property
    def wants_json(self) -> bool:
        return self.json_output or self.json_schema is not None

    def system_text(self) -> str:
        return "\n\n".join(m.content for m in self.messages if m.role == "system" and m.content)

    def turns(self) -> list[ChatMessage]:
        """The conversation without its system messages, for the wires that take those apart
        (`system_text`: Anthropic's `system`, Gemini's `systemInstruction`)."""
        return [m for m in self.messages if m.role != "system"]

    def estimated_input_tokens(self) -> int:
        """A cheap upper-side estimate for quota holds: ≈4 characters a token, plus framing,
        `IMAGE_TOKENS` an image and `PAGE_TOKENS` a PDF page (`ImagePart.estimated_tokens`)."""
        chars = sum(
            len(m.content) + sum(len(c.arguments) + len(c.name) for c in m.tool_calls) for m in self.messages
        )
        chars += sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in self.tools)
        if self.json_schema is not None:
            chars += len(json.dumps(self.json_schema))
        extra = self.native.extra_input_tokens if self.native is not None else 0
        extra += sum(part.estimated_tokens for m in self.messages if m.parts for part in m.images)
        return chars // 4 + 4 * len(self.messages) + 8 + extra


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and as whom one call goes: the instance's base URL and this call's key."""

    wire_type: str
    instance: str
    base_url: str
    api_key: Secret | None = None
    operator_key: bool = False
    """The key is the operator's (its environment): the call may not choose an account inside the
    operator's organisation at the vendor (`anthropic.ACCOUNT_HEADERS`)."""
    traceparent: bool = False
    """`ai.provider.<instance>.traceparent: true`: requests carry the call's W3C trace context (a
    vendor gets none by default)."""

    def __repr__(self) -> str:  # the key is a Secret already; keep the repr short anyway
        return f"Endpoint({self.wire_type!r}, {self.instance!r}, {self.base_url!r})"

    def post(
        self,
        path: str,
        body: dict[str, Any],
        headers: Mapping[str, str],
        key_header: tuple[str, str] = ("Authorization", "Bearer "),
    ) -> RequestSpec:
        """A chat call's POST to this endpoint: a JSON body, the wire's `headers` (framing, version)
        and the key as the wire carries it (`key_header`: its name and the scheme before it)."""
        sent = {"Content-Type": "application/json", **headers}
        if self.api_key:
            sent[key_header[0]] = key_header[1] + self.api_key.reveal()
        return RequestSpec(
            "POST", self.base_url.rstrip("/") + path, headers=sent, json_body=body, step="chat"
        )


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """One piece of a streamed answer, as it arrives (partial tokens pass through unsanitised)."""

    kind: Literal["text", "reasoning", "tool_call"]
    text: str = ""
    tool_call: ToolCall | None = None
    raw: tuple[str | None, Any] | None = None
    """On a native request's stream: the upstream's event `(name, payload)` as it came, to relay;
    `text`/`tool_call` then say what it carried, so a cut stream is charged the same."""


class StreamAccumulator(Protocol):
    def feed(self, event: str | None, payload: Any) -> list[StreamDelta]:
        """One decoded event (`payload` is the JSON value; `event` the SSE event name, if any)."""
        ...

    def result(self) -> ChatResponse: ...


class WireAdapter(Protocol):
    wire_type: str
    framing: Framing
    """How the wire frames a stream: SSE, newline-delimited JSON, or one streamed JSON array."""
    native_shape: str | None
    """The client API shape this adapter sends as written (`NativeBody.shape`, its key in
    `adapters.NATIVE`); None for a wire's chat adapter."""

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
        spec = self._built(request)
        status, headers, body = await send(self.http, spec, self.timeout, self.guarded)
        if status >= 400:
            shown = summary(status) if self.untrusted else body
            raise _redacted(self.adapter.error(status, headers, shown, self.endpoint.instance), self.endpoint)
        try:
            answer = self.adapter.parse(body)
        except Exception as exc:
            raise _redacted(_as_parse_error(exc, self.endpoint.instance), self.endpoint) from None
        if request.embedding is not None and answer.usage is None:  # Gemini says no count
            answer = answer.with_changes(usage=TokenUsage(request.estimated_input_tokens(), 0))
        return answer.with_changes(metadata={**answer.metadata, **_header_metadata(headers)})

    def _built(self, request: ChatRequest) -> RequestSpec:
        spec = self.adapter.build(request, self.endpoint, self.model)
        if not self.endpoint.traceparent:
            return spec
        from ...observability.tracing import traced

        return traced(spec)

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
        spec = self._built(streaming)
        accumulator = self.adapter.accumulator()
        # a native adapter's events go on as they came (`StreamDelta.raw`), for a route to relay
        relay = self.adapter.native_shape is not None
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
                deltas = accumulator.feed(event, payload)
                if relay:
                    yield _relayed(deltas, event, payload), None
                    continue
                for delta in deltas:
                    yield delta, None
        except Exception as exc:
            from ...contract.errors import ProviderError

            if isinstance(exc, ProviderError):
                raise _redacted(exc, self.endpoint) from None
            raise
        yield None, accumulator.result()


def _relayed(deltas: list[StreamDelta], event: str | None, payload: Any) -> StreamDelta:
    """One upstream event to relay as it came, carrying what it delivered (for a cut's charge)."""
    if not deltas:
        return StreamDelta("text", raw=(event, payload))
    first = deltas[0]
    text = "".join(d.text for d in deltas)
    return StreamDelta(first.kind, text, first.tool_call, raw=(event, payload))


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
