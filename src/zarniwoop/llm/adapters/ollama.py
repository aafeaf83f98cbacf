"""Ollama's native chat API: `POST {baseUrl}/api/chat` (https://github.com/ollama/ollama/blob/main/docs/api.md).

`ollama` is a local server (no key); `ollama-cloud` is the same API at ollama.com with a bearer key.
`stream` defaults to *true* in Ollama, so it is always sent explicitly. JSON output is `format:
"json"` or `format: <schema>`; `max_tokens` is `options.num_predict`. Anthropic's `thinking`
(enabled, with a budget) is `think: true` — Ollama takes no budget; `num_predict` bounds thoughts and
answer together, as `max_tokens` does on Anthropic's wire, and a model that cannot think answers
Ollama's own error.

Answers: `message{content, thinking?, tool_calls?}` — tool-call arguments are an object and carry
no id (ids are made up). Usage: `prompt_eval_count` in, `eval_count` out; in a stream only the
final `done: true` line has them.

Streaming is NDJSON: one object per line; `/api/generate` lines use `response` instead of
`message.content`, and are read too. A failure after the 200 arrives as a line `{"error": "…"}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...contract.errors import InvalidRequestError, ParseError
from ...contract.protocol import RequestSpec
from .base import ChatMessage, ChatRequest, Endpoint, Framing, StreamDelta
from .errors import map_error, stream_object
from .fields import number_field, thinking_budget, whole_number
from .ids import check_model
from .images import checked
from .openai import function_tools
from .options import refuse_unsupported
from .parts import PartsStream, logprob_entry
from .response import ChatResponse, TokenUsage, ToolCall, UsageReport
from .results import results_with_images_after

# OpenAI fields `/api/chat` has no equivalent of (strict tools, `parallel_tool_calls`, `metadata`, …)
# are refused by the table of `fields.py`; a strict JSON schema is honoured, since `format: <schema>`
# constrains decoding.


class OllamaAdapter:
    wire_type = "ollama"
    framing: Framing = "ndjson"
    native_shape: str | None = None

    def build(self, request: ChatRequest, endpoint: Endpoint, model: str) -> RequestSpec:
        check_model(self.wire_type, model)
        further = refuse_unsupported(request, self.wire_type)
        asked = request.options
        options: dict[str, Any] = {"num_predict": request.max_tokens}
        for name in ("frequency_penalty", "presence_penalty"):
            if name in further:
                options[name] = number_field(name, further[name], -2, 2)
        if "top_k" in further:
            options["top_k"] = whole_number("top_k", further["top_k"], 0)
        if request.temperature is not None:
            options["temperature"] = request.temperature
        for name, value in (("seed", asked.seed), ("top_p", asked.top_p), ("stop", list(asked.stop) or None)):
            if value is not None:
                options[name] = value
        body: dict[str, Any] = {
            "model": model,
            "messages": [_message(m) for m in results_with_images_after(request.messages)],
            "stream": request.stream,
            "options": options,
        }
        if "thinking" in further:  # a boolean here: `num_predict` bounds thoughts and answer together
            thinking_budget(self.wire_type, further["thinking"], request.max_tokens)
            body["think"] = True
        if asked.logprobs:
            body["logprobs"] = True
            if asked.top_logprobs is not None:
                body["top_logprobs"] = asked.top_logprobs
        if request.json_schema is not None:
            body["format"] = dict(request.json_schema)
        elif request.json_output:
            body["format"] = "json"
        if request.tool_choice not in (None, "auto", "none"):  # `/api/chat` lets the model choose
            raise InvalidRequestError(
                "tool_choice",
                f"the ollama wire has no equivalent of tool_choice {request.tool_choice!r} (auto or none only): "
                "remove it, or choose a model served over another wire",
            )
        if request.tools and request.tool_choice != "none":
            body["tools"] = function_tools(request.tools, strict=False)
        return endpoint.post("/api/chat", body, {})

    def parse(self, body: bytes) -> ChatResponse:
        text = body.decode("utf-8", "replace").strip()
        try:
            items = [json.loads(text)]
        except json.JSONDecodeError:
            items = [_load(line) for line in text.splitlines() if line.strip()]  # a recorded NDJSON stream
        if (
            not items
            or not isinstance(items[0], dict)
            or not any("message" in i or "response" in i for i in items)
        ):
            raise ParseError("ollama chat response without a message")
        stream = OllamaStream()
        for item in items:
            stream.feed(None, item)
        return stream.result()

    error = staticmethod(map_error)

    def accumulator(self) -> OllamaStream:
        return OllamaStream()


class OllamaCloudAdapter(OllamaAdapter):
    wire_type = "ollama-cloud"


class OllamaStream(PartsStream):
    def __init__(self) -> None:
        super().__init__()
        self.usage: TokenUsage | None = None

    def feed(self, event: str | None, payload: Any) -> list[StreamDelta]:
        payload = stream_object(payload, "ollama", "stream line")
        self.model = payload.get("model") or self.model
        deltas: list[StreamDelta] = []
        message = payload.get("message") or {}
        content = message.get("content") if message else payload.get("response")
        if content:
            deltas.append(self.took("text", content))
        thinking = message.get("thinking") if message else payload.get("thinking")
        if thinking:
            deltas.append(self.took("reasoning", thinking))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments = function.get("arguments") or {}
            if isinstance(arguments, str):
                tool = ToolCall(
                    str(call.get("id") or f"call_{len(self.calls)}"), str(function.get("name", "")), arguments
                )
            else:
                tool = ToolCall.create(
                    str(call.get("id") or f"call_{len(self.calls)}"), str(function.get("name", "")), arguments
                )
            deltas.append(self.called(tool))
        for token in payload.get("logprobs") or ():
            if isinstance(token, Mapping):
                self.logprobs.append(_token(token))
        if payload.get("done"):
            self.finish_reason = payload.get("done_reason") or "stop"
            if "prompt_eval_count" in payload or "eval_count" in payload:
                report = UsageReport(payload)
                self.usage = report.usage(
                    report.count("prompt_eval_count", required=False),
                    report.count("eval_count", required=False),
                )
        return deltas

    def result(self) -> ChatResponse:
        return self.answer(self.usage, {})


def _token(token: Mapping[str, Any]) -> dict[str, Any]:
    """One of Ollama's `logprobs` entries (`{token, logprob, bytes?, top_logprobs?}`) in OpenAI's shape."""
    tops = [t for t in token.get("top_logprobs") or () if isinstance(t, Mapping)]
    return {
        **logprob_entry(token.get("token", ""), token.get("logprob"), token.get("bytes")),
        "top_logprobs": [logprob_entry(t.get("token", ""), t.get("logprob"), t.get("bytes")) for t in tops],
    }


def _message(message: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.parts:  # `/api/chat` takes a message's images as base64 next to its text, no URLs
        out["images"] = [image.data for image in checked(message.images, "ollama")]
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.parsed_arguments()}} for c in message.tool_calls
        ]
    if message.role == "tool" and message.name:
        out["tool_name"] = message.name
    return out


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"ollama response is not JSON ({exc.msg})") from None


ADAPTER = OllamaAdapter()
CLOUD = OllamaCloudAdapter()
