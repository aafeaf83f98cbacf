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

from .anthropic import ADAPTER as ANTHROPIC
from .base import ChatClient, ChatMessage, ChatRequest, Endpoint, StreamDelta, ToolSpec, WireAdapter
from .gemini import ADAPTER as GEMINI
from .ollama import ADAPTER as OLLAMA
from .ollama import CLOUD as OLLAMA_CLOUD
from .openai import ADAPTER as OPENAI
from .openai import LMSTUDIO
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

__all__ = [
    "ADAPTERS",
    "ChatClient",
    "ChatMessage",
    "ChatRequest",
    "Endpoint",
    "StreamDelta",
    "ToolSpec",
    "WireAdapter",
]
