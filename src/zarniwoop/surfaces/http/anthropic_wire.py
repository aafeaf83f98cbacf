"""Anthropic's Messages API shapes for the gateway's `/v1/messages` (`routes/messages.py`): the request in.

Pydantic only here, at the edge (STYLE §3). A `MessagesRequest` becomes the manager's `ChatRequest`
twice over: the client's body as it came (`NativeBody`, shape `anthropic-messages`), which an
Anthropic-wire instance is sent unchanged but for `model` and the capped `max_tokens`, and the
mapping below, which every other wire is sent. Fields the mapping cannot carry are listed in
`NativeBody.refused`: a non-Anthropic wire refuses the call with a 400 naming the first — never
dropped (`llm.adapters.adapter_for`, the one choice of every shape). The mapping itself is
`anthropic_mapping.py`. Field meanings: https://docs.anthropic.com/en/api/messages.

| field (Messages API) | other wires (OpenAI chat, Gemini, Ollama) |
|---|---|
| `system` (string or text blocks) | a system message |
| `messages[].content` text blocks | the message's text |
| `tool_use` blocks (assistant) | the message's tool calls (`input` as JSON arguments) |
| `tool_result` blocks (user) | tool messages, before the turn's text (`is_error: true` → text led by `Error: `) |
| `image` blocks inside a `tool_result`'s content (a screenshot a tool read) | the tool message's image parts: Anthropic's `tool_result` takes them as they are; OpenAI chat, Gemini and Ollama, whose tool results are text, get them in one user message right after the results, each result's led by a line naming its tool and call id; a source the wire cannot take is refused as above, naming `…content[k].source` |
| `thinking`/`redacted_thinking` blocks of earlier turns | left out (the Messages API itself strips them from earlier turns); counted in the estimate |
| `image` blocks (user), `source` `{type: base64, media_type, data}` (PNG, JPEG, GIF, WebP) or `{type: url, url}` (http(s)) | the message's image parts, in order with its text (`ImagePart`: each wire's own form, or a 400 naming `messages[i].content[j].source…` where the wire cannot take it — a URL on Ollama); a malformed source is refused naming `…source.media_type`/`.data`/`.url` |
| an image's `source` of another type (`file`) or with other keys | refused, naming `…source.type` or the key |
| `document` blocks (user turns, `tool_result` content): `source` base64 `application/pdf` or url | a PDF part (`ImagePart.pdf`): OpenAI chat's `file` part (data only: a URL is refused naming `…source`), Gemini's `inlineData`/`fileData`; Ollama refused naming `…source`; `title` (also the file's name) and `context` as text lines before it |
| `document` `source` text (`text/plain`) or content (text and image blocks) | the text, the images, after the `title` and `context` lines |
| a `document`'s `citations: {enabled: true}`, its `file` source or another `media_type` | refused, naming `…citations`, `…source.type`, `…source.media_type` |
| images on assistant turns, other blocks (in a `tool_result` too) | refused, naming `messages[i].content[j].type` (`…content[k].type` inside a result) |
| `cache_control` (top level, on blocks and tools) | no field: the other wires cache prefixes on their own |
| `tools[]` custom (`name`, `description`, `input_schema`, `strict`) | function tools |
| `tools[]` server tools (`type: web_search_…`, `bash_…`, …) | refused, naming `tools[i].type` |
| `tool_choice` `auto`/`any`/`tool`/`none`, `disable_parallel_tool_use` | `auto`/`required`/the tool/`none`, `parallel_tool_calls: false` |
| `stop_sequences` | `stop` |
| `metadata.user_id` | `user` |
| `max_tokens`, `temperature`, `top_p`, `stream` | the same |
| `thinking` `{"type": "enabled", "budget_tokens": N}` | Gemini `generationConfig.thinkingConfig` `{thinkingBudget: N, includeThoughts: true}` (N at most `max_tokens`); Ollama `think: true`; OpenAI refused, naming it; the thoughts come back as `thinking` blocks |
| `thinking` `{"type": "disabled"}` | nothing (every wire's default) |
| `thinking` `{"type": "adaptive"}` | Gemini `thinkingConfig` `{thinkingBudget: -1, includeThoughts: true}` (dynamic, within `max_tokens`); Ollama `think: true`; OpenAI refused, naming it |
| other types or keys of `thinking` | refused, naming `thinking.type` / the key |
| `top_k` | Gemini `generationConfig.topK`, Ollama `options.top_k`; OpenAI refused, naming it |
| `service_tier`, `container`, `mcp_servers`, `output_config`, `inference_geo`, `speed`, `diagnostics`, any other field (top level, or of a block, tool, `tool_choice`) | refused, naming it |
| header `anthropic-version` (a date) | forwarded to Anthropic; elsewhere the answer follows 2023-06-01 |
| header `anthropic-beta` | forwarded to Anthropic; elsewhere feature flags of Anthropic's servers, with no effect |
| headers `anthropic-workspace-id`, `anthropic-user-profile-id` (the SDK's `workspace_id`, `user_profile_id`) | forwarded to Anthropic with a key of the caller's own (refused, naming the header, on the operator's key); elsewhere refused, naming the header |
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...contract.errors import InvalidRequestError
from ...llm.adapters import ChatRequest
from ...llm.adapters.anthropic import ACCOUNT_HEADERS, NATIVE_SHAPE
from ...llm.adapters.base import NativeBody
from ...llm.adapters.fields import MESSAGES, bridge_refusals
from ...llm.adapters.options import SamplingOptions
from .anthropic_mapping import NO_BRIDGE, MessagesMapping
from .openai_wire import COMPONENT_REF

MESSAGES_PATHS = ("/v1/messages",)
"""Paths that answer in Anthropic's shape and take `x-api-key` (the request guard asks)."""
VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
"""An `anthropic-version` is a date: forwarded as sent to Anthropic (which refuses one it does not
know); other wires are answered in the 2023-06-01 shape, which later versions keep."""
PASSED_HEADERS = ("anthropic-version", "anthropic-beta", *ACCOUNT_HEADERS)


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow")  # the native route forwards what it does not name


class AnthropicCacheControl(_Wire):
    type: str = "ephemeral"


class AnthropicTextBlock(_Wire):
    type: Literal["text"] = "text"
    text: str
    cache_control: AnthropicCacheControl | None = None


class AnthropicMessage(_Wire):
    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]] = Field(
        description="A string, or content blocks: `text`, `image`, `document`, `tool_use`, `tool_result`, "
        "`thinking`, `redacted_thinking` (each an object with a `type`)."
    )


class AnthropicTool(_Wire):
    name: str = Field(min_length=1, max_length=200)
    type: str | None = Field(default=None, description="Absent or `custom`; a server tool's type otherwise.")
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    strict: bool | None = None
    cache_control: AnthropicCacheControl | None = None


class AnthropicToolChoice(_Wire):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class AnthropicThinking(_Wire):
    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: int | None = Field(default=None, ge=1)


class AnthropicMetadata(_Wire):
    user_id: str | None = Field(default=None, max_length=256)


class CountTokensRequest(_Wire):
    """`POST /v1/messages/count_tokens`: what the gateway would estimate (and hold) as the input."""

    model: str = Field(min_length=1, max_length=500, description="Anything the alias resolver takes.")
    messages: list[AnthropicMessage] = Field(min_length=1, max_length=10_000)
    system: str | list[AnthropicTextBlock] | None = None
    tools: list[AnthropicTool] | None = Field(default=None, max_length=512)
    tool_choice: AnthropicToolChoice | None = None
    thinking: AnthropicThinking | None = None
    cache_control: AnthropicCacheControl | None = None


class MessagesRequest(CountTokensRequest):
    """`POST /v1/messages`: Anthropic's Messages API request."""

    max_tokens: int = Field(ge=1)
    stop_sequences: list[str] | None = Field(default=None, max_length=16)
    stream: bool = False
    temperature: float | None = Field(default=None, ge=0, le=1)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    metadata: AnthropicMetadata | None = None


class CountTokensResponse(BaseModel):
    input_tokens: int


class AnthropicErrorDetail(BaseModel):
    type: str
    message: str


class AnthropicErrorBody(BaseModel):
    """Anthropic's error shape, which `/v1/messages` answers in."""

    type: Literal["error"] = "error"
    error: AnthropicErrorDetail


def request_schemas() -> dict[str, Any]:
    """The request models as OpenAPI components (`$ref`s into `#/components/schemas/`)."""
    out: dict[str, Any] = {}
    for model in (MessagesRequest, CountTokensRequest):
        schema = model.model_json_schema(ref_template=COMPONENT_REF + "{model}")
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out


def authorization(header: str | None, api_key: str | None) -> str | None:
    """The `Authorization` header to verify: as sent, or made from Anthropic's `x-api-key` (a
    Zarniwoop token given to the anthropic SDK as its `api_key`)."""
    if header or not api_key:
        return header
    return f"Bearer {api_key}"


def check_version(headers: Mapping[str, str]) -> dict[str, str]:
    """The Anthropic headers to forward; a 400 naming `anthropic-version` when it is not a date."""
    version = headers.get("anthropic-version")
    if version is not None and not VERSION.match(version):
        raise InvalidRequestError("anthropic-version", f"{version[:40]!r} is not a version (YYYY-MM-DD)")
    return {name: headers[name] for name in PASSED_HEADERS if headers.get(name)}


def parse_body(raw: bytes, model: type[CountTokensRequest]) -> tuple[Any, dict[str, Any]]:
    """The validated request and the body as sent (forwarded natively)."""
    if not raw.strip():
        raise InvalidRequestError("body", "expected a JSON Messages API request")
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidRequestError("body", f"not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise InvalidRequestError("body", "expected a JSON object")
    return model.model_validate(body), body


def to_chat_request(
    request: CountTokensRequest, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> ChatRequest:
    """The manager's request: the mapping for other wires, and the body as sent for Anthropic's."""
    mapping = MessagesMapping()
    messages = mapping.system(request.system)
    for i, message in enumerate(request.messages):
        messages += mapping.message(i, message)
    tools = tuple(mapping.tool(i, t) for i, t in enumerate(request.tools or ()))
    choice, parallel = mapping.tool_choice(request.tool_choice)
    # the top-level fields (and `metadata`'s), judged by the one field table (`fields.py`)
    top: dict[str, Any] = dict(body)
    top.update({name: value for name, value in (headers or {}).items() if name in ACCOUNT_HEADERS})
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        top.update({f"metadata.{key}": value for key, value in metadata.items()})
    refused = mapping.refused + bridge_refusals(MESSAGES, top, NO_BRIDGE)
    full = isinstance(request, MessagesRequest)
    native = NativeBody(
        NATIVE_SHAPE,
        dict(body),
        refused=tuple(refused),
        headers=dict(headers or {}),
        extra_input_tokens=mapping.extra_tokens,
    )
    if not full:
        return ChatRequest(tuple(messages), max_tokens=0, tools=tools, native=native)
    assert isinstance(request, MessagesRequest)
    # as sent, for each wire's table: a budget to Gemini, `think` to Ollama, refused on OpenAI's;
    # `disabled` asks for nothing, whatever else it holds
    further = {name: body[name] for name in ("thinking", "top_k") if body.get(name) is not None}
    if request.thinking is not None and request.thinking.type == "disabled":
        del further["thinking"]
    options = SamplingOptions(
        parallel_tool_calls=parallel,
        stop=tuple(request.stop_sequences or ()),
        top_p=request.top_p,
        user=request.metadata.user_id if request.metadata else None,
        extra=further,
    )
    return ChatRequest(
        tuple(messages),
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        tools=tools,
        tool_choice=choice,
        stream=request.stream,
        options=options,
        native=native,
    )


__all__ = [
    "MESSAGES_PATHS",
    "AnthropicErrorBody",
    "CountTokensRequest",
    "CountTokensResponse",
    "MessagesRequest",
    "authorization",
    "check_version",
    "parse_body",
    "request_schemas",
    "to_chat_request",
]
