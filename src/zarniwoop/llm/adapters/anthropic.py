"""Anthropic Messages API: `POST {baseUrl}/v1/messages` (https://docs.anthropic.com/en/api/messages).

Auth is `x-api-key` plus the required `anthropic-version: 2023-06-01`. System prompts go in the
top-level `system`; tool results are `tool_result` blocks in a user turn; `max_tokens` is required.

Answers are a list of typed blocks: `text`, `tool_use` (`input` is an object), `thinking`
(with a signature). Usage: `input_tokens` + `cache_creation_input_tokens` + `cache_read_input_tokens`
are all input the call consumed (the cache split is kept in the metadata), `output_tokens`.

Streaming is SSE with named events: `message_start` → (`content_block_start` →
`content_block_delta`* → `content_block_stop`)* → `message_delta` (stop reason, final usage) →
`message_stop`, with `ping`s between and an `error` event on failure (e.g. `overloaded_error`
after the 200). A tool_use block whose `input_json_delta`s are all empty keeps the input of its
start block (`{}`).

A native request (the gateway's `/v1/messages`, `ChatRequest.native`) is sent by
`AnthropicMessagesAdapter` (`adapters.NATIVE`) as the client wrote it: its body with the call's `model` and capped `max_tokens`, its `anthropic-version` and
`anthropic-beta`; the answer's whole body is kept (`NATIVE_ANSWER`) and stream events are relayed.

There is no JSON mode: a JSON request adds an instruction (and the schema) to the system prompt; a
strict JSON schema (`response_format.json_schema.strict`) and strict tools go as structured outputs
(`output_format`, tool `strict`, beta `structured-outputs-2025-11-13`). OpenAI fields the API has no
equivalent of (`seed`, `logprobs`, `metadata`, `reasoning_effort`, …) are refused, naming the field
(the table of `fields.py`); `safety_identifier`, like `user`, becomes `metadata.user_id`; `top_k` (not
OpenAI's, but a chat client may send it) is Anthropic's own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...contract.errors import InvalidRequestError, ParseError
from ...contract.protocol import RequestSpec
from .base import NATIVE_ANSWER, ChatMessage, ChatRequest, Endpoint, Framing, StreamDelta
from .errors import map_error, stream_error
from .fields import MESSAGES, whole_number
from .ids import check_model
from .images import checked
from .options import refuse_unsupported, tool_strict
from .response import ChatResponse, TokenUsage, ToolCall, UsageReport

API_VERSION = "2023-06-01"
KEY_HEADER = ("x-api-key", "")
"""Anthropic takes the key as is in `x-api-key` (no scheme)."""
STRUCTURED_OUTPUTS_BETA = "structured-outputs-2025-11-13"
"""The beta that makes `strict` tools and `output_format` binding (constrained decoding)."""
NATIVE_SHAPE = MESSAGES
ACCOUNT_HEADERS = ("anthropic-user-profile-id", "anthropic-workspace-id")
"""Headers the SDK sends for `user_profile_id` and `workspace_id`: they choose where inside the key's
organisation a call runs, so they are forwarded with a key of the caller's own (account, project,
team, tenant) and refused with the operator's — a tenant never picks the operator's workspace."""
"""The API shape of the gateway's `/v1/messages` (`NativeBody.shape`)."""


class AnthropicAdapter:
    wire_type = "anthropic"
    framing: Framing = "sse"
    native_shape: str | None = None

    def build(self, request: ChatRequest, endpoint: Endpoint, model: str) -> RequestSpec:
        check_model(self.wire_type, model)
        further = refuse_unsupported(request, self.wire_type)
        options = request.options
        structured = bool(options.schema_strict and request.json_schema is not None)
        system = request.system_text()
        if request.wants_json and not structured:
            system = (system + "\n\n" if system else "") + _json_instruction(request.json_schema)
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": request.max_tokens,
            "messages": _messages(request),
        }
        if system:
            body["system"] = system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if "top_k" in further:
            body["top_k"] = whole_number("top_k", further["top_k"], 0)
        if options.stop:
            body["stop_sequences"] = list(options.stop)
        user = further.get("safety_identifier") or options.user  # OpenAI's successor of `user`
        if user:
            body["metadata"] = {"user_id": str(user)}
        if structured:
            assert request.json_schema is not None
            body["output_format"] = {"type": "json_schema", "schema": dict(request.json_schema)}
        if request.tools:
            body["tools"] = [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": dict(t.parameters),
                    **({"strict": True} if t.strict else {}),
                }
                for t in request.tools
            ]
            choice = request.tool_choice
            if choice == "required":
                body["tool_choice"] = {"type": "any"}
            elif choice == "none":
                body["tool_choice"] = {"type": "none"}
            elif choice and choice != "auto":
                body["tool_choice"] = {"type": "tool", "name": choice}
            if options.parallel_tool_calls is False and choice != "none":
                body["tool_choice"] = {
                    **body.get("tool_choice", {"type": "auto"}),
                    "disable_parallel_tool_use": True,
                }
        if request.stream:
            body["stream"] = True
        headers = {"anthropic-version": API_VERSION}
        if structured or tool_strict(request):
            headers["anthropic-beta"] = STRUCTURED_OUTPUTS_BETA
        return endpoint.post("/v1/messages", body, headers, KEY_HEADER)

    def parse(self, body: bytes) -> ChatResponse:
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ParseError(f"messages response is not JSON ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            raise ParseError("messages response without a content list")
        text, reasoning, calls = [], [], []
        for block in data["content"]:
            kind = block.get("type")
            if kind == "text":
                text.append(block.get("text") or "")
            elif kind == "tool_use":
                calls.append(
                    ToolCall.create(str(block.get("id")), str(block.get("name")), block.get("input") or {})
                )
            elif kind == "thinking":
                reasoning.append(block.get("thinking") or "")
        usage, meta = _usage(data.get("usage"))
        if data.get("id"):
            meta["responseId"] = data["id"]
        if self.native_shape is not None:  # sent as the client wrote it: the body goes back as it came
            meta[NATIVE_ANSWER] = data
        return ChatResponse(
            text="".join(text),
            tool_calls=tuple(calls),
            reasoning="".join(reasoning) or None,
            finish_reason=data.get("stop_reason"),
            model=data.get("model"),
            usage=usage,
            metadata=meta,
        )

    error = staticmethod(map_error)

    def accumulator(self) -> AnthropicStream:
        return AnthropicStream()


class AnthropicStream:
    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.model: str | None = None
        self.finish_reason: str | None = None
        self.input_usage: Mapping[str, Any] = {}
        self.output_tokens: Any = None
        """As the last event reported it; read (and refused if junk) with the rest in `_usage`."""
        self.metadata: dict[str, Any] = {}

    def feed(self, event: str | None, payload: Any) -> list[StreamDelta]:
        if not isinstance(payload, dict):
            raise ParseError("stream event is not a JSON object")
        kind = payload.get("type") or event
        if kind == "error":
            raise stream_error(payload, "anthropic")
        if kind == "message_start":
            message = payload.get("message") or {}
            self.model = message.get("model")
            if message.get("id"):
                self.metadata["responseId"] = message["id"]
            usage = message.get("usage")
            self.input_usage = usage if isinstance(usage, Mapping) else {}
            self.output_tokens = self.input_usage.get("output_tokens")
        elif kind == "content_block_start":
            block = dict(payload.get("content_block") or {})
            self.blocks[int(payload.get("index", len(self.blocks)))] = {"block": block, "parts": []}
        elif kind == "content_block_delta":
            slot = self.blocks.setdefault(
                int(payload.get("index", 0)), {"block": {"type": "text"}, "parts": []}
            )
            delta = payload.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                slot["parts"].append(delta.get("text") or "")
                return [StreamDelta("text", delta.get("text") or "")]
            if dtype == "thinking_delta":
                slot["parts"].append(delta.get("thinking") or "")
                return [StreamDelta("reasoning", delta.get("thinking") or "")]
            if dtype == "input_json_delta":
                slot["parts"].append(delta.get("partial_json") or "")
        elif kind == "content_block_stop":
            finished = self.blocks.get(int(payload.get("index", 0)))
            if finished and finished["block"].get("type") == "tool_use":
                return [StreamDelta("tool_call", tool_call=_tool_call(finished))]
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            self.finish_reason = delta.get("stop_reason") or self.finish_reason
            usage = payload.get("usage")
            usage = usage if isinstance(usage, Mapping) else {}
            if usage.get("output_tokens") is not None:
                self.output_tokens = usage["output_tokens"]  # cumulative; checked in `_usage`
            if usage.get("input_tokens") is not None:
                self.input_usage = {**self.input_usage, **usage}
        return []

    def result(self) -> ChatResponse:
        text, reasoning, calls = [], [], []
        for _, slot in sorted(self.blocks.items()):
            kind = slot["block"].get("type")
            if kind == "text":
                text.append((slot["block"].get("text") or "") + "".join(slot["parts"]))
            elif kind == "thinking":
                reasoning.append((slot["block"].get("thinking") or "") + "".join(slot["parts"]))
            elif kind == "tool_use":
                calls.append(_tool_call(slot))
        reported = self.input_usage or self.output_tokens is not None
        usage, meta = (
            _usage({**self.input_usage, "output_tokens": self.output_tokens}) if reported else (None, {})
        )
        return ChatResponse(
            text="".join(text),
            tool_calls=tuple(calls),
            reasoning="".join(reasoning) or None,
            finish_reason=self.finish_reason,
            model=self.model,
            usage=usage,
            metadata={**self.metadata, **meta},
        )


class AnthropicMessagesAdapter(AnthropicAdapter):
    """A `/v1/messages` request sent as the client wrote it (`adapters.NATIVE`): the wire's parsing,
    errors and stream, its own body; every Anthropic-wire instance serves it."""

    native_shape: str | None = NATIVE_SHAPE

    def serves(self, settings: object, endpoint: Endpoint) -> bool:
        return True

    def build(self, request: ChatRequest, endpoint: Endpoint, model: str) -> RequestSpec:
        check_model(self.wire_type, model)
        return _native(request, endpoint, model)


def _native(request: ChatRequest, endpoint: Endpoint, model: str) -> RequestSpec:
    """The client's own body, with what the call decides: the model, the capped token limit, streaming."""
    assert request.native is not None
    body = {**request.native.body, "model": model, "max_tokens": request.max_tokens}
    if request.stream:
        body["stream"] = True
    else:
        body.pop("stream", None)
    if endpoint.operator_key:
        for name in ACCOUNT_HEADERS:
            if name in request.native.headers:
                raise InvalidRequestError(
                    name,
                    "refused on the operator's key: only a key of your own may choose a workspace or user profile",
                )
    return endpoint.post(
        "/v1/messages", body, {"anthropic-version": API_VERSION, **request.native.headers}, KEY_HEADER
    )


def _tool_call(slot: Mapping[str, Any]) -> ToolCall:
    block = slot["block"]
    partial = "".join(slot["parts"]).strip()
    if partial:
        try:
            arguments = json.loads(partial)
        except json.JSONDecodeError:
            raise ParseError(f"tool_use {block.get('name')!r}: streamed input is not JSON") from None
    else:
        arguments = block.get("input") or {}
    return ToolCall.create(str(block.get("id")), str(block.get("name")), arguments)


def _usage(usage: Any) -> tuple[TokenUsage | None, dict[str, Any]]:
    if not isinstance(usage, Mapping):
        return None, {}
    report = UsageReport(usage)
    cache_write = report.count("cache_creation_input_tokens", required=False)
    cache_read = report.count("cache_read_input_tokens", required=False)
    meta: dict[str, Any] = {}
    if cache_write:
        meta["cacheWriteInputTokens"] = cache_write
    if cache_read:
        meta["cachedInputTokens"] = cache_read
    prompt = report.count("input_tokens") + cache_write + cache_read
    return report.usage(prompt, report.count("output_tokens")), meta


def _messages(request: ChatRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in request.turns():
        if m.role == "tool":
            # a result's images go inside it, as Anthropic's `tool_result` takes them
            content = _blocks(m) if m.parts else m.content
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": content}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)  # results of parallel calls share one user turn
            else:
                out.append({"role": "user", "content": [block]})
        elif m.role == "assistant" and m.tool_calls:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.parsed_arguments()}
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m.role, "content": _blocks(m) if m.parts else m.content})
    return out


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    """A message with images (or PDFs) as Anthropic's content blocks, in order: an `image` (or
    `document`) block's source is the base64 data or the URL (Anthropic fetches it); no per-image
    `detail` (a 400 naming it)."""
    checked(message.images, "anthropic")
    out: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, str):
            if part:  # Anthropic refuses an empty text block
                out.append({"type": "text", "text": part})
            continue
        if part.url:
            source: dict[str, Any] = {"type": "url", "url": part.url}
        else:
            source = {"type": "base64", "media_type": part.media_type, "data": part.data}
        block = {"type": "document" if part.is_document else "image", "source": source}
        if part.filename:
            block["title"] = part.filename
        out.append(block)
    return out


def _json_instruction(schema: Mapping[str, Any] | None) -> str:
    text = "Answer with one JSON object only: no prose, no Markdown code fences."
    if schema is not None:
        text += " It must match this JSON schema:\n" + json.dumps(schema, ensure_ascii=False)
    return text


ADAPTER = AnthropicAdapter()
NATIVE_MESSAGES = AnthropicMessagesAdapter()
