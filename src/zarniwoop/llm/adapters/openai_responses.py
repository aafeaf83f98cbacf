"""OpenAI's Responses API, native: `POST {baseUrl}/responses` with the body the client wrote.

API: https://platform.openai.com/docs/api-reference/responses/create. The gateway's
`/v1/responses` carries the client's body next to its chat form (`ChatRequest.native`); an
OpenAI-wire instance that serves the Responses API gets that body as sent — unknown fields
included — with four fields set by the gateway: `model` (the resolved wire name), `max_output_tokens`
(the budget's reservation, capped by `max_tokens_per_call`), `stream`, and `store: false` (the gateway
keeps stored responses itself, per account; `previous_response_id` is expanded into `input` before).

Which instances serve it: `ai.provider.<instance>.responsesApi` (true/false); unset, only OpenAI's
own endpoint (`https://api.openai.com/v1`) does — an OpenAI-wire gateway (DeepSeek, vLLM, LM Studio)
is bridged through its Chat Completions instead.

The answer passes back as the upstream sent it (`ChatResponse.metadata[NATIVE_ANSWER]`, its `output`
items included); the text, tool calls and usage are read from them for the settlement, the trace and
the stream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ...contract.errors import ParseError
from .base import NATIVE_ANSWER, ChatRequest, Endpoint, StreamDelta
from .errors import stream_error
from .fields import RESPONSES
from .ids import check_model
from .openai import OpenAIAdapter, json_object, streamed_accept
from .response import ChatResponse, TokenUsage, ToolCall, UsageReport
from .wire import base_url_for, wire_of

if TYPE_CHECKING:
    from ...contract.protocol import RequestSpec

API = RESPONSES
"""The API shape of the gateway's `/v1/responses` (`NativeBody.shape`)."""
SETTING = "ai.provider.{instance}.responsesApi"


class _ReadsSettings(Protocol):
    def get(self, key: str) -> str | None: ...


def serves_responses(settings: _ReadsSettings, wire_type: str, instance: str, base_url: str) -> bool:
    """Whether this OpenAI-wire instance takes `/responses` natively (see the module docstring)."""
    if wire_of(wire_type) != "openai":
        return False
    raw = (settings.get(SETTING.format(instance=instance)) or "").strip().lower()
    if raw:
        return raw in ("true", "1", "yes", "on")
    return base_url.rstrip("/") == base_url_for("openai", None)


class ResponsesAdapter(OpenAIAdapter):
    """The OpenAI wire's errors and framing; its own path, body and answer (`adapters.NATIVE`)."""

    path = "/responses"
    native_shape: str | None = API

    def serves(self, settings: _ReadsSettings, endpoint: Endpoint) -> bool:
        return serves_responses(settings, endpoint.wire_type, endpoint.instance, endpoint.base_url)

    def build(self, request: ChatRequest, endpoint: Endpoint, model: str) -> RequestSpec:
        check_model(self.wire_type, model)
        assert request.native is not None
        body = dict(request.native.body)
        body["model"] = model
        body["max_output_tokens"] = request.max_tokens
        body["store"] = False
        body.pop("stream", None)
        if request.stream:
            body["stream"] = True
        return endpoint.post(self.path, body, streamed_accept(request.stream))

    def parse(self, body: bytes) -> ChatResponse:
        data = json_object(body)
        if not isinstance(data.get("output"), list):
            raise ParseError("response object without an output list")
        return response_of(data)

    def accumulator(self) -> ResponsesStream:  # type: ignore[override]
        return ResponsesStream()


def response_of(data: Mapping[str, Any]) -> ChatResponse:
    """A `ChatResponse` from a response object: text, tool calls, reasoning and usage read from its
    `output`, the whole object kept in metadata to pass back as it came."""
    output = [item for item in _listed(data.get("output")) if isinstance(item, Mapping)]
    texts, calls, thoughts = [], [], []
    for item in output:
        kind = item.get("type")
        if kind == "message":
            for part in _listed(item.get("content")):
                if isinstance(part, Mapping) and part.get("type") == "output_text":
                    texts.append(str(part.get("text") or ""))
        elif kind == "function_call":
            calls.append(
                ToolCall(
                    str(item.get("call_id") or item.get("id") or ""), str(item.get("name") or ""), _args(item)
                )
            )
        elif kind == "reasoning":
            thoughts += [
                str(s.get("text") or "") for s in _listed(item.get("summary")) if isinstance(s, Mapping)
            ]
    incomplete = data.get("incomplete_details")
    reason = incomplete.get("reason") if isinstance(incomplete, Mapping) else None
    return ChatResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        reasoning="".join(thoughts) or None,
        finish_reason=reason or ("tool_calls" if calls else "stop"),
        model=data.get("model") if isinstance(data.get("model"), str) else None,
        usage=_usage(data.get("usage")),
        metadata={NATIVE_ANSWER: {**data, "output": output}},
    )


class ResponsesStream:
    """The Responses event stream folded into one response: text and reasoning deltas pass on as they
    come; the `response.completed` (or `.incomplete`) event's object is the answer."""

    def __init__(self) -> None:
        self.final: Mapping[str, Any] | None = None
        self.text: list[str] = []

    def feed(self, event: str | None, payload: Any) -> list[StreamDelta]:
        if not isinstance(payload, dict):
            raise ParseError("stream event is not a JSON object")
        kind = payload.get("type") or event
        if kind == "response.output_text.delta":
            self.text.append(str(payload.get("delta") or ""))
            return [StreamDelta("text", str(payload.get("delta") or ""))]
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [StreamDelta("reasoning", str(payload.get("delta") or ""))]
        if kind == "response.function_call_arguments.delta":
            # passed on so that a stream cut midway is charged the arguments too (`delta_chars`)
            call = ToolCall(str(payload.get("item_id") or ""), "", str(payload.get("delta") or ""))
            return [StreamDelta("tool_call", tool_call=call)]
        elif kind in ("response.completed", "response.incomplete") and isinstance(
            payload.get("response"), dict
        ):
            self.final = payload["response"]
        elif kind in ("error", "response.failed"):
            failed = payload.get("response") if kind == "response.failed" else payload
            error = failed.get("error") if isinstance(failed, Mapping) else None
            raise stream_error({"error": error or payload}, "openai")
        return []

    def result(self) -> ChatResponse:
        if self.final is None:
            # the stream ended early: what arrived, without the upstream's usage (charged as streamed)
            return ChatResponse(text="".join(self.text))
        return response_of(self.final)


def _listed(value: Any) -> list[Any]:
    """A list the upstream sent, or nothing: a malformed part is passed over, never a crash."""
    return value if isinstance(value, list) else []


def _usage(usage: Any) -> TokenUsage | None:
    """The upstream's counts as reported, to be checked (`usage_check.check_usage`): a count that is
    not an integer refuses the report (`UsageReport`), and the call is charged the gateway's estimate
    — a malformed usage never throws a paid answer away."""
    if not isinstance(usage, Mapping):
        return None
    report = UsageReport(usage)
    return report.usage(report.count("input_tokens"), report.count("output_tokens"))


def _args(item: Mapping[str, Any]) -> str:
    value = item.get("arguments")
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


ADAPTER = ResponsesAdapter()

__all__ = ["ADAPTER", "API", "ResponsesAdapter", "serves_responses"]
