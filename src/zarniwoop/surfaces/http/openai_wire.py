"""OpenAI's wire shapes for the gateway (`routes/gateway.py`): request bodies in, answers out.

Pydantic only here, at the edge (STYLE §3): the gateway turns a `ChatCompletionRequest` into the
manager's own `ChatRequest`, and an `LlmResult` back into a `chat.completion` or a stream of
`chat.completion.chunk`s. Field names and meanings follow
https://platform.openai.com/docs/api-reference/chat/create. Every field read here reaches the
upstream, and so does every field it does not read: each is forwarded, mapped or refused with a 400
naming it by the table of (shape × wire) in `llm/adapters/fields.py` — never silently dropped. The
answer passes `usage.*_details`, `system_fingerprint`, `message.refusal`, `choices[].logprobs` back,
and every answer field the gateway does not render itself (`service_tier`, `message.annotations`). One extension:
`fallback_models`, the runtime fallback chain (seed 002 `params.fallbackModels`). Messages and their
content parts (text, images) are read by `openai_messages.py`.

    body = ChatCompletionRequest.model_validate_json(raw)
    request = body.to_chat_request()          # zarniwoop.llm.adapters.ChatRequest
    completion(result, body.model, "chatcmpl-…", created)  # the `chat.completion` dict
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...llm.adapters import ChatRequest, ToolSpec
from ...llm.adapters.options import FINGERPRINT, LOGPROBS, REFUSAL, SamplingOptions, passed_back
from ...llm.adapters.response import ChatResponse, TokenUsage, ToolCall
from ...llm.call import LlmResult
from ...llm.usage_check import CALL_TOKEN_BOUND
from .openai_messages import Message, chat_message
from .openai_messages import Wire as _Wire

GATEWAY_PATHS = ("/v1/chat/completions", "/v1/models", "/v1/embeddings", "/v1/responses")
"""Paths that answer errors in OpenAI's shape (the request guard asks, for its 401 and 413)."""

DEFAULT_MAX_TOKENS = 1024
"""`max_tokens` when the caller sends none: the budget reserves it up front, so it must be finite.
The smallest `max_tokens_per_call` of the call's levels still caps it."""


class FunctionDefinition(_Wire):
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None


class Tool(_Wire):
    type: Literal["function"] = "function"
    function: FunctionDefinition


class NamedFunction(_Wire):
    name: str = Field(min_length=1, max_length=200)


class NamedToolChoice(_Wire):
    type: Literal["function"] = "function"
    function: NamedFunction


class StreamOptions(_Wire):
    include_usage: bool = False


class JsonSchemaFormat(_Wire):
    name: str = Field(default="answer", min_length=1, max_length=64)
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(_Wire):
    type: Literal["text", "json_object", "json_schema"] = "text"
    json_schema: JsonSchemaFormat | None = None


class ChatCompletionRequest(_Wire):
    """`POST /v1/chat/completions`: what the gateway reads of OpenAI's body. Every other field is kept
    as sent (`model_extra`) and forwarded, mapped or refused by the wire that serves the call
    (`llm/adapters/fields.py`), never dropped."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(
        min_length=1,
        max_length=500,
        description="Anything the alias resolver takes: `default:analyze`, `anthropic:claude-sonnet-4-5`, "
        "a comma cascade, or `purpose:light`.",
    )
    messages: list[Message] = Field(min_length=1, max_length=10_000)
    max_tokens: int | None = Field(default=None, ge=1, le=CALL_TOKEN_BOUND)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=CALL_TOKEN_BOUND)
    temperature: float | None = Field(default=None, ge=0, le=2)
    tools: list[Tool] | None = Field(default=None, max_length=512)
    tool_choice: Literal["auto", "none", "required"] | NamedToolChoice | None = None
    response_format: ResponseFormat | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int | None = Field(default=None, ge=1, le=1, description="Only one choice is produced.")
    user: str | None = Field(default=None, max_length=200)
    parallel_tool_calls: bool | None = None
    seed: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    stop: str | list[str] | None = None
    top_p: float | None = Field(default=None, ge=0, le=1)
    metadata: dict[str, str] | None = Field(default=None, max_length=16)
    fallback_models: list[str] = Field(
        default_factory=list,
        max_length=16,
        description="Zarniwoop extension: specs tried in order when the primary fails at run time.",
    )

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)

    def to_chat_request(self) -> ChatRequest:
        """The manager's request: messages, tools and `tool_choice` as they came, JSON mode, the token cap."""
        tool_choice = self.tool_choice
        if isinstance(tool_choice, NamedToolChoice):
            tool_choice = tool_choice.function.name  # type: ignore[assignment]
        fmt = self.response_format
        schema = fmt.json_schema.schema_ if fmt and fmt.json_schema else None
        return ChatRequest(
            tuple(chat_message(i, m) for i, m in enumerate(self.messages)),
            max_tokens=self.max_completion_tokens or self.max_tokens or DEFAULT_MAX_TOKENS,
            temperature=self.temperature,
            tools=tuple(
                ToolSpec(t.function.name, t.function.description, t.function.parameters, t.function.strict)
                for t in self.tools or ()
            ),
            tool_choice=tool_choice if isinstance(tool_choice, str) else None,
            json_output=bool(fmt and fmt.type == "json_object"),
            json_schema=schema if fmt and fmt.type == "json_schema" else None,
            options=self._options(),
        )

    def _options(self) -> SamplingOptions:
        if self.top_logprobs is not None and not self.logprobs:
            from ...contract.errors import InvalidRequestError

            raise InvalidRequestError("top_logprobs", "requires logprobs: true")
        fmt = self.response_format.json_schema if self.response_format else None
        return SamplingOptions(
            parallel_tool_calls=self.parallel_tool_calls,
            seed=self.seed,
            logprobs=self.logprobs,
            top_logprobs=self.top_logprobs,
            stop=(self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ()),
            top_p=self.top_p,
            user=self.user,
            metadata=self.metadata,
            schema_name=fmt.name if fmt else "answer",
            schema_strict=fmt.strict if fmt else None,
            schema_description=fmt.description if fmt else None,
            extra=dict(self.model_extra or {}),
        )


COMPONENT_REF = "#/components/schemas/"


def request_schemas() -> dict[str, Any]:
    """`ChatCompletionRequest` and the models it uses as OpenAPI components, each `$ref` pointing at
    `#/components/schemas/…` (pydantic nests them under `$defs`, which OpenAPI tools cannot resolve)."""
    schema = ChatCompletionRequest.model_json_schema(ref_template=COMPONENT_REF + "{model}")
    defs = schema.pop("$defs", {})
    return {"ChatCompletionRequest": schema, **defs}


# -- answers ------------------------------------------------------------------------------------


_FINISH_REASONS = {"tools": "tool_calls", "length": "length", "filtered": "content_filter"}


def finish_reason(response: ChatResponse) -> str:
    """OpenAI's vocabulary, whatever the wire said (`end_turn`, `STOP`, `tool_use`, `max_tokens`…)."""
    ending = response.ending
    return "stop" if ending is None else _FINISH_REASONS[ending]


def tool_calls_json(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]


def usage_json(usage: TokenUsage, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """OpenAI's `usage`, with `prompt_tokens_details` / `completion_tokens_details` as the upstream sent
    them (the OpenAI wire), or from what another wire reported (cached input, reasoning tokens)."""
    out: dict[str, Any] = {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.total,
    }
    meta = metadata or {}
    for name, key, fallback in (
        ("prompt_tokens_details", "cached_tokens", "cachedInputTokens"),
        ("completion_tokens_details", "reasoning_tokens", "reasoningTokens"),
    ):
        if isinstance(meta.get(name), Mapping):
            out[name] = dict(meta[name])
        elif meta.get(fallback):
            out[name] = {key: meta[fallback]}
    return out


def response_extras(response: ChatResponse) -> tuple[str | None, Any, str | None]:
    """What passes back as it came: (`message.refusal`, `choices[].logprobs`, `system_fingerprint`)."""
    meta = response.metadata
    return meta.get(REFUSAL), meta.get(LOGPROBS), meta.get(FINGERPRINT)


def served_json(result: LlmResult) -> dict[str, Any]:
    """The `zarniwoop` extension on every answer: what served, whose key, what it cost."""
    return {
        "instance": result.instance,
        "model": result.model,
        "credential_source": result.credential_source,
        "cost_usd": result.cost_usd,
        "usage_id": result.usage_id,
        "usage_estimated": result.usage_estimated,
        "failover": [s.to_json() for s in result.failover],
    }


def completion(result: LlmResult, model: str, completion_id: str, created: int) -> dict[str, Any]:
    """A `chat.completion` object; `model` is what served, as `<instance>:<model>`."""
    response = result.response
    refusal, logprobs, fingerprint = response_extras(response)
    answer_extras, message_extras = passed_back(response)
    message: dict[str, Any] = {
        **message_extras,  # `annotations`, `audio`, … as the upstream sent them
        "role": "assistant",
        "content": response.text if response.text or not response.tool_calls else None,
        "refusal": refusal,
    }
    if response.tool_calls:
        message["tool_calls"] = tool_calls_json(response.tool_calls)
    if response.reasoning:
        message["reasoning_content"] = response.reasoning
    return {
        **answer_extras,  # `service_tier`, … as the upstream sent them
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": fingerprint,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason(response), "logprobs": logprobs}
        ],
        "usage": usage_json(result.usage, response.metadata),
        "zarniwoop": served_json(result),
    }


def chunk(
    completion_id: str,
    created: int,
    model: str,
    delta: dict[str, Any] | None,
    *,
    finish: str | None = None,
    usage: TokenUsage | None = None,
    extra: dict[str, Any] | None = None,
    logprobs: Any = None,
    metadata: Mapping[str, Any] | None = None,
) -> bytes:
    """One SSE event of a `chat.completion.chunk`; `delta=None` is the usage-only last chunk (`choices: []`)."""
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
    }
    body["choices"] = (
        [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": logprobs}]
    )
    if usage is not None:
        body["usage"] = usage_json(usage, metadata)
    if extra:
        body.update(extra)
    return sse(body)


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIErrorBody(BaseModel):
    """OpenAI's error shape, which the gateway answers in (the rest of the API keeps its own)."""

    error: OpenAIErrorDetail


def error_json(
    message: str, type_: str, param: str | None = None, code: str | None = None, **extra: Any
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code, **extra}}


def model_entry(model_id: str, owned_by: str, created: int = 0, **extra: Any) -> dict[str, Any]:
    """One element of `GET /v1/models`."""
    return {"id": model_id, "object": "model", "created": created, "owned_by": owned_by, **extra}


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DONE",
    "GATEWAY_PATHS",
    "ChatCompletionRequest",
    "OpenAIErrorBody",
    "chunk",
    "completion",
    "error_json",
    "finish_reason",
    "model_entry",
    "request_schemas",
    "response_extras",
    "served_json",
    "sse",
    "tool_calls_json",
    "usage_json",
]
