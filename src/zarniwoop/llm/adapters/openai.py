"""OpenAI Chat Completions, and every OpenAI-wire gateway (DeepSeek, OpenRouter, vLLM, LM Studio).

API: `POST {baseUrl}/chat/completions` (https://platform.openai.com/docs/api-reference/chat),
bearer key. The base URL includes the version prefix as gateways publish it
(`https://api.openai.com/v1`, `https://api.deepseek.com/v1`, `https://openrouter.ai/api/v1`);
LM Studio's base URL is its server root, so its adapter adds `/v1`.

    ai.provider.deepseek-direct.type: openai
    ai.provider.deepseek-direct.baseUrl: https://api.deepseek.com/v1

Quirks handled here:

- `function.arguments` is a JSON *string*; in a stream it arrives in fragments keyed by
  `tool_calls[].index`. OpenRouter's Novita upstream repeated the whole arguments in a second
  chunk with the same id: a fragment equal to an already complete object is dropped.
- Reasoning comes as `reasoning_content` (DeepSeek) or `reasoning` (Cerebras/Groq gpt-oss).
- Usage is in the response, or — streaming with `stream_options.include_usage` — in a last chunk
  with `choices: []` (DeepSeek puts it on the chunk with the finish reason).
- api.openai.com refuses `max_tokens` on reasoning models (`unsupported_parameter`), so towards
  it `max_completion_tokens` is sent; gateways get the widely understood `max_tokens`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...contract.errors import ParseError
from ...contract.protocol import RequestSpec
from .base import ChatMessage, ChatRequest, Endpoint, Framing, StreamDelta, ToolSpec
from .errors import map_error
from .ids import check_model
from .images import checked
from .options import (
    ANSWER_EXTRAS,
    FINGERPRINT,
    LOGPROBS,
    MESSAGE_EXTRAS,
    REFUSAL,
    SamplingOptions,
    openai_logprobs,
    refuse_unsupported,
)
from .response import ChatResponse, TokenUsage, ToolCall, UsageReport
from .results import results_with_images_after


class OpenAIAdapter:
    wire_type = "openai"
    framing: Framing = "sse"
    native_shape: str | None = None
    path = "/chat/completions"

    def build(self, request: ChatRequest, endpoint: Endpoint, model: str) -> RequestSpec:
        check_model(self.wire_type, model)
        body: dict[str, Any] = {
            "model": model,
            "messages": [_message(m) for m in results_with_images_after(request.messages)],
        }
        if "api.openai.com" in endpoint.base_url:
            body["max_completion_tokens"] = request.max_tokens
        else:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.tools:
            body["tools"] = function_tools(request.tools, strict=True)
            if request.options.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = request.options.parallel_tool_calls
            if request.tool_choice:
                body["tool_choice"] = (
                    request.tool_choice
                    if request.tool_choice in ("auto", "required", "none")
                    else {"type": "function", "function": {"name": request.tool_choice}}
                )
        if request.json_schema is not None:
            schema: dict[str, Any] = {
                "name": request.options.schema_name,
                "schema": dict(request.json_schema),
            }
            if request.options.schema_strict is not None:
                schema["strict"] = request.options.schema_strict
            if request.options.schema_description:
                schema["description"] = request.options.schema_description
            body["response_format"] = {"type": "json_schema", "json_schema": schema}
        elif request.json_output:
            body["response_format"] = {"type": "json_object"}
        body.update(_passed_options(request.options))
        # every further field as sent (the native wire: `fields.py` forwards what no table names;
        # a bridged request's `thinking` and `top_k` are refused, OpenAI's API having no such field)
        further = refuse_unsupported(request, self.wire_type)
        body.update({k: v for k, v in further.items() if k not in body})
        if request.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return endpoint.post(self.path, body, streamed_accept(request.stream))

    def parse(self, body: bytes) -> ChatResponse:
        data = json_object(body)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ParseError("chat completion without choices")
        choice = choices[0]
        message = choice.get("message") or {}
        calls = tuple(
            ToolCall(
                str(c.get("id") or f"call_{i}"),
                str((c.get("function") or {}).get("name", "")),
                _arguments((c.get("function") or {}).get("arguments")),
            )
            for i, c in enumerate(message.get("tool_calls") or ())
        )
        return ChatResponse(
            text=message.get("content") or "",
            tool_calls=calls,
            reasoning=message.get("reasoning_content") or message.get("reasoning") or None,
            finish_reason=choice.get("finish_reason"),
            model=data.get("model"),
            usage=usage_from(data.get("usage")),
            metadata={
                **_metadata(data),
                **_choice_extras(choice, message),
                **_extras(ANSWER_EXTRAS, data, _ANSWER_FIELDS),
                **_extras(MESSAGE_EXTRAS, message, _MESSAGE_FIELDS),
            },
        )

    error = staticmethod(map_error)

    def accumulator(self) -> OpenAIStream:
        return OpenAIStream()


class LmStudioAdapter(OpenAIAdapter):
    """LM Studio speaks the OpenAI wire under `/v1` of its server root."""

    wire_type = "lmstudio"
    path = "/v1/chat/completions"


class OpenAIStream:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.usage: TokenUsage | None = None
        self.metadata: dict[str, Any] = {}
        self.refusal: list[str] = []
        self.logprobs: list[Any] = []
        self.answer_extras: dict[str, Any] = {}
        self.message_extras: dict[str, Any] = {}

    def feed(self, event: str | None, payload: Any) -> list[StreamDelta]:
        if not isinstance(payload, dict):
            raise ParseError("stream chunk is not a JSON object")
        if "error" in payload and "choices" not in payload:
            from .errors import stream_error

            raise stream_error(payload, "openai")
        self.model = payload.get("model") or self.model
        if payload.get("system_fingerprint"):
            self.metadata[FINGERPRINT] = payload["system_fingerprint"]
        if payload.get("usage"):
            self.usage = usage_from(payload["usage"])
            self.metadata.update(_metadata(payload))
        if not payload.keys() <= _ANSWER_FIELDS:  # checked inline: every chunk of every stream asks
            self.answer_extras.update(_extras(ANSWER_EXTRAS, payload, _ANSWER_FIELDS).get(ANSWER_EXTRAS, {}))
        deltas: list[StreamDelta] = []
        for choice in payload.get("choices") or ():
            delta = choice.get("delta") or {}
            if not delta.keys() <= _MESSAGE_FIELDS:
                self._keep_message_extras(delta)
            if delta.get("content"):
                self.text.append(delta["content"])
                deltas.append(StreamDelta("text", delta["content"]))
            if delta.get("refusal"):
                self.refusal.append(delta["refusal"])
            tokens = (choice.get("logprobs") or {}).get("content")
            if isinstance(tokens, list):
                self.logprobs.extend(tokens)
            thinking = delta.get("reasoning_content") or delta.get("reasoning")
            if thinking:
                self.reasoning.append(thinking)
                deltas.append(StreamDelta("reasoning", thinking))
            for part in delta.get("tool_calls") or ():
                self._tool_fragment(part)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return deltas

    def _keep_message_extras(self, delta: Mapping[str, Any]) -> None:
        for name, value in _extras(MESSAGE_EXTRAS, delta, _MESSAGE_FIELDS).get(MESSAGE_EXTRAS, {}).items():
            held = self.message_extras.get(name)
            # list fields (`annotations`) arrive in pieces; anything else, the last one holds
            self.message_extras[name] = (
                held + value if isinstance(held, list) and isinstance(value, list) else value
            )

    def _tool_fragment(self, part: Mapping[str, Any]) -> None:
        slot = self.calls.setdefault(int(part.get("index", 0)), {"id": None, "name": "", "arguments": ""})
        if part.get("id"):
            slot["id"] = part["id"]
        function = part.get("function") or {}
        if function.get("name"):
            slot["name"] = function["name"]
        fragment = function.get("arguments") or ""
        if fragment and slot["arguments"] and fragment == slot["arguments"] and _complete_json(fragment):
            return  # the whole arguments sent twice (OpenRouter/Novita)
        slot["arguments"] += fragment

    def result(self) -> ChatResponse:
        calls = tuple(
            ToolCall(str(slot["id"] or f"call_{index}"), slot["name"], slot["arguments"] or "{}")
            for index, slot in sorted(self.calls.items())
        )
        return ChatResponse(
            text="".join(self.text),
            tool_calls=calls,
            reasoning="".join(self.reasoning) or None,
            finish_reason=self.finish_reason or ("tool_calls" if calls else None),
            model=self.model,
            usage=self.usage,
            metadata={
                **self.metadata,
                **({REFUSAL: "".join(self.refusal)} if self.refusal else {}),
                **({LOGPROBS: openai_logprobs(self.logprobs)} if self.logprobs else {}),
                **({ANSWER_EXTRAS: self.answer_extras} if self.answer_extras else {}),
                **({MESSAGE_EXTRAS: self.message_extras} if self.message_extras else {}),
            },
        )


def streamed_accept(stream: bool) -> dict[str, str]:
    """What an OpenAI-wire call accepts: SSE when it streams, else JSON."""
    return {"Accept": "text/event-stream" if stream else "application/json"}


def function_tools(tools: Sequence[ToolSpec], *, strict: bool) -> list[dict[str, Any]]:
    """Tools as OpenAI's `{"type": "function", "function": …}`; `strict` passes each tool's own flag."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
                **({"strict": t.strict} if strict and t.strict is not None else {}),
            },
        }
        for t in tools
    ]


def _passed_options(options: SamplingOptions) -> dict[str, Any]:
    """The sampling fields as OpenAI names them, those the caller set."""
    out: dict[str, Any] = {
        "seed": options.seed,
        "logprobs": options.logprobs,
        "top_logprobs": options.top_logprobs,
        "top_p": options.top_p,
        "user": options.user,
        "metadata": dict(options.metadata) if options.metadata else None,
        "stop": list(options.stop) or None,
    }
    return {k: v for k, v in out.items() if v is not None}


def usage_from(usage: Any) -> TokenUsage | None:
    """`prompt_tokens` and `completion_tokens` (or, from some gateways, `total_tokens` less the
    prompt's), read as reported: `UsageReport` refuses what is not an integer."""
    if not isinstance(usage, Mapping):
        return None
    report = UsageReport(usage)
    prompt = report.count("prompt_tokens")
    if not report.has("completion_tokens") and report.has("total_tokens"):
        return report.usage(prompt, report.count("total_tokens") - prompt)
    return report.usage(prompt, report.count("completion_tokens"))


_ANSWER_FIELDS = frozenset(
    {"id", "object", "created", "model", "choices", "usage", "system_fingerprint", "error", "zarniwoop"}
    | {"obfuscation"}  # OpenAI's per-chunk padding: meaningless once the gateway re-chunks the stream
)
"""Top-level answer fields the gateway renders itself; any other (`service_tier`, …) passes back."""
_MESSAGE_FIELDS = frozenset({"role", "content", "tool_calls", "refusal", "reasoning_content", "reasoning"})
"""`choices[].message` (or a stream's `delta`) fields the gateway renders itself; any other
(`annotations`, `audio`, `function_call`, …) passes back as it came."""


def _extras(key: str, data: Mapping[str, Any], rendered: frozenset[str]) -> dict[str, Any]:
    """`{key: {field: value}}` of the fields of `data` the gateway does not render, or `{}`."""
    if data.keys() <= rendered:  # the usual answer: nothing to carry (every stream chunk asks)
        return {}
    extras = {k: v for k, v in data.items() if k not in rendered and v is not None}
    return {key: extras} if extras else {}


def _choice_extras(choice: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, Any]:
    """What the gateway passes back as it came: the refusal and the log probabilities."""
    out: dict[str, Any] = {}
    if message.get("refusal"):
        out[REFUSAL] = message["refusal"]
    if isinstance(choice.get("logprobs"), Mapping):
        out[LOGPROBS] = dict(choice["logprobs"])
    return out


def _metadata(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if data.get("system_fingerprint"):
        out[FINGERPRINT] = data["system_fingerprint"]
    usage_details = data.get("usage") if isinstance(data.get("usage"), Mapping) else None
    for name in ("prompt_tokens_details", "completion_tokens_details"):
        if usage_details and isinstance(usage_details.get(name), Mapping):
            out[name] = dict(usage_details[name])
    if data.get("id"):
        out["responseId"] = data["id"]
    if data.get("provider"):
        out["upstreamProvider"] = data["provider"]  # OpenRouter
    usage = data.get("usage") if isinstance(data.get("usage"), Mapping) else {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") if usage else None
    if cached:
        out["cachedInputTokens"] = cached
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") if usage else None
    if reasoning:
        out["reasoningTokens"] = reasoning
    if usage and usage.get("cost") is not None:
        out["providerCostUsd"] = usage["cost"]  # OpenRouter reports what it charged
    return out


def _message(message: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "role": message.role,
        "content": _content(message) if message.parts else message.content,
    }
    if message.role == "assistant" and message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
    return out


def _content(message: ChatMessage) -> list[dict[str, Any]]:
    """A message with images (or PDFs) as OpenAI's content parts, in order: every OpenAI-wire upstream
    takes an image's data or http(s) URL and its `detail` as they came; a PDF goes as a `file` part
    of its data (the chat API takes no document URL: a 400 naming it, `checked`)."""
    out: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, str):
            out.append({"type": "text", "text": part})
        elif part.is_document:
            checked((part,), "openai")
            document = {"filename": part.filename or "document.pdf", "file_data": part.data_url}
            out.append({"type": "file", "file": document})
        else:
            image: dict[str, Any] = {"url": part.data_url}
            if part.detail is not None:
                image["detail"] = part.detail
            out.append({"type": "image_url", "image_url": image})
    return out


def _arguments(value: Any) -> str:
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)  # some gateways send an object


def _complete_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def json_object(body: bytes, what: str = "chat response") -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ParseError(f"{what} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ParseError(f"{what} is not a JSON object")
    return data


ADAPTER = OpenAIAdapter()
LMSTUDIO = LmStudioAdapter()
