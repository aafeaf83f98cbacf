"""Anthropic's Messages API shapes for the gateway's `/v1/messages`: the answer, the event stream, errors.

From an Anthropic-wire instance the answer is the upstream's body as it came, and its stream events
are relayed as they came — but for `message_delta` and `message_stop`, held back until the call is
settled so that `message_delta` can carry the `zarniwoop` extension (who served, what it cost).
From any other wire both are built here from the call's `LlmResult`:

    message     {"id", "type": "message", "role": "assistant", "model", "content": [thinking?, text?,
                 tool_use*], "stop_reason", "stop_sequence", "usage": {"input_tokens", "output_tokens"}}
    stream      message_start → (content_block_start → content_block_delta* → content_block_stop)*
                → message_delta (stop_reason, usage) → message_stop; an `error` event on failure
    error       {"type": "error", "error": {"type", "message"}} with the gateway's status
"""

from __future__ import annotations

import json
from typing import Any

from ...llm.adapters import StreamDelta
from ...llm.adapters.base import NATIVE_ANSWER
from ...llm.adapters.response import ChatResponse, TokenUsage, ToolCall
from ...llm.call import LlmResult
from .openai_wire import served_json

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_json(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """Anthropic's error body; a field the gateway names leads the message (`thinking: …`)."""
    if param and not message.startswith(param):
        message = f"{param}: {message}"
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


_STOP_REASONS = {"tools": "tool_use", "length": "max_tokens", "filtered": "refusal"}


def stop_reason(response: ChatResponse) -> str:
    """The Messages API's vocabulary, whatever the wire said (`stop`, `length`, `STOP`, `tool_calls`…)."""
    ending = response.ending
    if ending is not None:
        return _STOP_REASONS[ending]
    raw = (response.finish_reason or "").lower()
    return raw if raw in ("stop_sequence", "pause_turn") else "end_turn"


def usage_json(usage: TokenUsage) -> dict[str, int]:
    return {"input_tokens": usage.input, "output_tokens": usage.output}


def charged_usage(native: dict[str, Any], result: LlmResult) -> dict[str, Any]:
    """What replaces a native answer's (or `message_delta`'s) `usage`: nothing while the gateway took
    the upstream's report; once it refused it (`llm/usage_check.py`), the counts it charged, the cache
    split zeroed — what the client reads is what it paid."""
    if not result.usage_estimated:
        return {}
    reported = native.get("usage")
    usage = dict(reported) if isinstance(reported, dict) else {}
    usage.update(input_tokens=result.usage.input, output_tokens=result.usage.output)
    for name in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        if name in usage:
            usage[name] = 0
    return {"usage": usage}


def _arguments(call: ToolCall) -> Any:
    try:
        return call.parsed_arguments()
    except Exception:  # a model's malformed arguments go back as it wrote them
        return {"_raw": call.arguments}


def message_json(result: LlmResult, message_id: str, model: str) -> dict[str, Any]:
    """The answer: the Anthropic upstream's body as it came, or a `message` built from the result."""
    response = result.response
    native = response.metadata.get(NATIVE_ANSWER)
    if isinstance(native, dict):
        return {**native, **charged_usage(native, result), "zarniwoop": served_json(result)}
    content: list[dict[str, Any]] = []
    if response.reasoning:
        content.append({"type": "thinking", "thinking": response.reasoning, "signature": ""})
    if response.text:
        content.append({"type": "text", "text": response.text})
    content += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _arguments(c)} for c in response.tool_calls
    ]
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(response),
        "stop_sequence": None,
        "usage": usage_json(result.usage),
        "zarniwoop": served_json(result),
    }


def event(name: str, payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return f"event: {name}\ndata: {data}\n\n".encode()


def _start_block(index: int, block: dict[str, Any]) -> bytes:
    return event(
        "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
    )


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _stop_block(index: int) -> bytes:
    return event("content_block_stop", {"type": "content_block_stop", "index": index})


class MessageEvents:
    """One answer's event stream, from deltas (relayed as they came when they are raw) and the result."""

    def __init__(self, message_id: str, model: str, input_estimate: int) -> None:
        self.message_id = message_id
        self.model = model
        self.input_estimate = input_estimate
        self.index = -1
        self.open: str | None = None
        """The type of the content block open now (None: none)."""
        self.started = False
        self.held: dict[str, Any] | None = None
        """A relayed `message_delta`, sent with the result."""
        self.streamed_calls: set[str] = set()

    def delta(self, delta: StreamDelta) -> list[bytes]:
        if delta.raw is not None:
            return self._relay(*delta.raw)
        out = self._start()
        if delta.kind == "tool_call" and delta.tool_call is not None:
            out.extend(self._tool_use(delta.tool_call))
        elif delta.text and delta.kind == "reasoning":
            out.extend(self._open("thinking"))
            out.append(_delta(self.index, {"type": "thinking_delta", "thinking": delta.text}))
        elif delta.text:
            out.extend(self._open("text"))
            out.append(_delta(self.index, {"type": "text_delta", "text": delta.text}))
        return out

    def finish(self, result: LlmResult, streamed_text: bool) -> list[bytes]:
        """The last events: blocks the deltas did not carry, `message_delta` with usage, `message_stop`."""
        served = served_json(result)
        stop = event("message_stop", {"type": "message_stop"})
        if self.held is not None:  # a relayed stream: its own message_delta, with the extension
            delta = {**self.held, **charged_usage(self.held, result), "zarniwoop": served}
            return [event("message_delta", delta), stop]
        response = result.response
        out = self._start()
        if response.text and not streamed_text:
            out.extend(self._open("text"))
            out.append(_delta(self.index, {"type": "text_delta", "text": response.text}))
        for call in response.tool_calls:
            if call.id not in self.streamed_calls:
                out.extend(self._tool_use(call))
        out.extend(self._close())
        body = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(response), "stop_sequence": None},
            "usage": usage_json(result.usage),
            "zarniwoop": served,
        }
        out.extend((event("message_delta", body), stop))
        return out

    def _relay(self, name: str | None, payload: Any) -> list[bytes]:
        self.started = True
        kind = payload.get("type") if isinstance(payload, dict) else None
        kind = kind or name or "message"
        if kind == "message_delta":
            self.held = payload
            return []
        if kind == "message_stop":
            return []
        return [event(kind, payload)]

    def _start(self) -> list[bytes]:
        if self.started:
            return []
        self.started = True
        message: dict[str, Any] = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self.input_estimate, "output_tokens": 0},
        }
        return [event("message_start", {"type": "message_start", "message": message})]

    def _open(self, kind: str) -> list[bytes]:
        if self.open == kind:
            return []
        out = self._close()
        self.index += 1
        self.open = kind
        block = {"type": "thinking", "thinking": "", "signature": ""} if kind == "thinking" else None
        out.append(_start_block(self.index, block or {"type": "text", "text": ""}))
        return out

    def _close(self) -> list[bytes]:
        if self.open is None:
            return []
        self.open = None
        return [_stop_block(self.index)]

    def _tool_use(self, call: ToolCall) -> list[bytes]:
        out = self._close()
        self.index += 1
        self.streamed_calls.add(call.id)
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        arguments = json.dumps(_arguments(call), ensure_ascii=False)
        out.append(_start_block(self.index, block))
        out.append(_delta(self.index, {"type": "input_json_delta", "partial_json": arguments}))
        out.append(_stop_block(self.index))
        return out


__all__ = ["MessageEvents", "error_json", "event", "message_json", "stop_reason"]
