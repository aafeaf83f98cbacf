"""The decorator chain around a provider's chat model (seed 002 §4.1)::

    caller          ← sees the clean response
    Sanitizing      ← only when the model has a parser or strips think tags
    Tracing         ← always; records the RAW response (forensics, training-data analysis)
    provider model  ← the chat adapter of the wire type

A chat model is anything with `async chat(request) -> ChatResponse`; the request type belongs to
the adapters. `decorate()` builds the chain for one call.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from .sanitize import needs_sanitizing, sanitize

if TYPE_CHECKING:
    from .adapters.response import ChatResponse
    from .catalog.model_doc import ModelDoc

trace_log = logging.getLogger("zarniwoop.llm.trace")


class ChatModel(Protocol):
    async def chat(self, request: Any) -> ChatResponse: ...


class TraceSink(Protocol):
    def record(self, request: Any, response: ChatResponse) -> None: ...


class TracingChatModel:
    """Passes the raw response through and records it (debug log, plus a sink when given)."""

    def __init__(self, inner: ChatModel, sink: TraceSink | None = None, *, label: str = "") -> None:
        self.inner = inner
        self.sink = sink
        self.label = label

    async def chat(self, request: Any) -> ChatResponse:
        response = await self.inner.chat(request)
        trace_log.debug(
            "%s raw response: %d chars text, %d tool calls, reasoning=%s",
            self.label,
            len(response.text),
            len(response.tool_calls),
            response.reasoning is not None,
        )
        if self.sink is not None:
            self.sink.record(request, response)
        return response


class SanitizingChatModel:
    """Returns `sanitize(raw, model)`: the clean response, whatever markup the model emitted."""

    def __init__(self, inner: ChatModel, model: ModelDoc | None, *, wire_name: str | None = None) -> None:
        self.inner = inner
        self.model = model
        self.wire_name = wire_name

    async def chat(self, request: Any) -> ChatResponse:
        return sanitize(await self.inner.chat(request), self.model, wire_name=self.wire_name)


def decorate(
    provider_model: ChatModel,
    model: ModelDoc | None,
    *,
    wire_name: str | None = None,
    trace_sink: TraceSink | None = None,
) -> ChatModel:
    """Tracing always; sanitizing only when the model needs it (no wrapper, no cost otherwise)."""
    label = f"{model.instance}/{model.wire_name}" if model is not None else (wire_name or "")
    traced: ChatModel = TracingChatModel(provider_model, trace_sink, label=label)
    if needs_sanitizing(model, wire_name):
        return SanitizingChatModel(traced, model, wire_name=wire_name)
    return traced
