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

from ...contract.errors import InvalidRequestError
from .anthropic import ADAPTER as ANTHROPIC
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
from .openai_responses import API as RESPONSES_API
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

NATIVE: Mapping[tuple[str, str], WireAdapter] = {(RESPONSES_API, "openai"): OPENAI_RESPONSES}
"""(API shape, wire) → the adapter that sends that shape's body as the client wrote it."""


def adapter_for(wire_type: str, request: ChatRequest, native: bool) -> WireAdapter:
    """The adapter of one attempt: the shape's own where the instance serves it (`native`), else the
    wire's chat adapter — which first refuses, naming it, a field no bridge carries."""
    shape = request.native
    if shape is None:
        return ADAPTERS[wire_type]
    if native:
        found = NATIVE.get((shape.api, WIRE_TYPES[wire_type].wire))
        if found is not None:
            return found
    if shape.refused:
        field, reason = shape.refused[0]
        raise InvalidRequestError(field, f"{reason} (the {wire_type} wire serves this model)")
    return ADAPTERS[wire_type]


__all__ = [
    "ADAPTERS",
    "NATIVE",
    "ChatClient",
    "ChatMessage",
    "ChatRequest",
    "Endpoint",
    "NativeBody",
    "StreamDelta",
    "ToolSpec",
    "WireAdapter",
    "adapter_for",
]
