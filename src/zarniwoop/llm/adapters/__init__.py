"""Chat adapters, one per wire type, thin and pure over the one transport (DESIGN §8).

openai        OpenAI Chat Completions and every OpenAI-wire gateway (DeepSeek, OpenRouter, vLLM)
lmstudio      the OpenAI wire under LM Studio's `/v1`
anthropic     Anthropic Messages
gemini        Google Gemini generateContent
ollama        Ollama `/api/chat` (local, no key)
ollama-cloud  the same API at ollama.com with a bearer key
"""

from __future__ import annotations

from .anthropic import ADAPTER as ANTHROPIC
from .base import ChatClient, ChatMessage, ChatRequest, Endpoint, StreamDelta, ToolSpec, WireAdapter
from .gemini import ADAPTER as GEMINI
from .ollama import ADAPTER as OLLAMA
from .ollama import CLOUD as OLLAMA_CLOUD
from .openai import ADAPTER as OPENAI
from .openai import LMSTUDIO

ADAPTERS: dict[str, WireAdapter] = {
    "openai": OPENAI,
    "lmstudio": LMSTUDIO,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
    "ollama": OLLAMA,
    "ollama-cloud": OLLAMA_CLOUD,
}
"""The adapter of each wire type."""

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
