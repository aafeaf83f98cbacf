"""Chat adapters, one per wire type, thin and pure over the one transport (DESIGN §8).

openai        OpenAI Chat Completions and every OpenAI-wire gateway (DeepSeek, OpenRouter, vLLM)
lmstudio      the OpenAI wire under LM Studio's `/v1`
anthropic     Anthropic Messages
gemini        Google Gemini generateContent
ollama        Ollama `/api/chat` (local, no key)
ollama-cloud  the same API at ollama.com with a bearer key
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol

from ...contract.errors import InvalidRequestError
from .anthropic import ADAPTER as ANTHROPIC
from .anthropic import NATIVE_MESSAGES as ANTHROPIC_MESSAGES
from .base import (
    ChatClient,
    ChatMessage,
    ChatRequest,
    Endpoint,
    NativeBody,
    StreamDelta,
    ToolSpec,
    WireAdapter,
)
from .gemini import ADAPTER as GEMINI
from .ollama import ADAPTER as OLLAMA
from .ollama import CLOUD as OLLAMA_CLOUD
from .openai import ADAPTER as OPENAI
from .openai import LMSTUDIO
from .openai_responses import ADAPTER as OPENAI_RESPONSES
from .wire import WIRE_TYPES

_BY_WIRE: dict[str, WireAdapter] = {
    "openai": OPENAI,
    "lmstudio": LMSTUDIO,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
    "ollama": OLLAMA,
    "ollama-cloud": OLLAMA_CLOUD,
}


class _VendorAdapters(Mapping[str, WireAdapter]):
    """The adapter of each vendor: its wire's (`WireType.speaks`), so a registered OpenAI-compatible
    vendor needs no adapter of its own."""

    def __getitem__(self, vendor: str) -> WireAdapter:
        return _BY_WIRE[WIRE_TYPES[vendor].wire]

    def __iter__(self) -> Iterator[str]:
        return iter(WIRE_TYPES)

    def __len__(self) -> int:
        return len(WIRE_TYPES)


ADAPTERS: Mapping[str, WireAdapter] = _VendorAdapters()
"""The adapter of each vendor (wire type)."""


class _ReadsSettings(Protocol):
    def get(self, key: str) -> str | None: ...


class NativeAdapter(WireAdapter, Protocol):
    """An adapter that sends a request of its `native_shape` as the client wrote it."""

    def serves(self, settings: _ReadsSettings, endpoint: Endpoint) -> bool:
        """Whether this instance takes the shape natively (OpenAI-wire gateways may lack `/responses`)."""
        ...


NATIVE: Mapping[tuple[str, str], NativeAdapter] = {
    (adapter.native_shape or "", adapter.wire_type): adapter
    for adapter in (ANTHROPIC_MESSAGES, OPENAI_RESPONSES)
}
"""(API shape, wire) → the adapter that sends that shape's body as the client wrote it."""


def adapter_for(request: ChatRequest, endpoint: Endpoint, settings: _ReadsSettings) -> WireAdapter:
    """The adapter of one attempt: the wire's chat adapter for a chat request; for an embeddings
    request the wire's codec; for a request of another shape the adapter registered for (shape ×
    wire) where the instance serves it, else the wire's chat adapter with the mapped request —
    after refusing, with a 400 naming it, the first field no bridge carries (`NativeBody.refused`)."""
    wire_type = endpoint.wire_type
    native = request.native
    if native is None and request.embedding is None:
        return ADAPTERS[wire_type]  # the chat call's path: nothing more to choose
    if request.embedding is not None:
        from .embeddings import codec_for

        return codec_for(wire_type)
    assert native is not None
    found = NATIVE.get((native.shape, WIRE_TYPES[wire_type].wire))
    if found is not None and found.serves(settings, endpoint):
        return found
    if native.refused:
        name, reason = native.refused[0]
        raise InvalidRequestError(name, f"{reason} (the {wire_type} wire serves this model)")
    return ADAPTERS[wire_type]


__all__ = [
    "ADAPTERS",
    "NATIVE",
    "ChatClient",
    "ChatMessage",
    "ChatRequest",
    "Endpoint",
    "NativeAdapter",
    "NativeBody",
    "StreamDelta",
    "ToolSpec",
    "WireAdapter",
    "adapter_for",
]
