"""The six LLM wire types and what an instance of each needs (seed 002 §3 "Named Provider Instances").

A *wire type* is the protocol a chat adapter speaks; a *provider instance* is a name in settings
(`ai.provider.<instance>.{type,apiKey,baseUrl}`) that binds a wire type to one endpoint and key.
The default instance of each wire type has the type's own name, so `openai:gpt-4o` needs no
`ai.provider.openai.type` setting.

Base URL conventions (the value of `ai.provider.<instance>.baseUrl`, or the default below):

- `openai`: the API root *including* its version prefix, as OpenAI-wire gateways publish it
  (`https://api.openai.com/v1`, `https://api.deepseek.com/v1`, `https://openrouter.ai/api/v1`);
  the chat adapter appends `/chat/completions`, discovery `/models`.
- `anthropic`: the server root (`https://api.anthropic.com`); paths start with `/v1/`.
- `gemini`: the server root (`https://generativelanguage.googleapis.com`); paths start with `/v1beta/`.
- `ollama`, `ollama-cloud`: the server root; paths start with `/api/` (OpenAI-compatible `/v1/` exists too).
- `lmstudio`: the server root (`http://localhost:1234`); a trailing `/v1` is accepted and removed,
  since LM Studio users often copy the OpenAI-compatible URL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class _ReadsSettings(Protocol):
    def get(self, key: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class WireType:
    name: str
    display_name: str
    default_base_url: str
    key_required: bool
    """True when the vendor's API refuses calls without a key (local servers need none)."""
    env_key: str | None = None
    """The operator's environment variable conventionally holding a key for this wire type."""


WIRE_TYPES: dict[str, WireType] = {
    w.name: w
    for w in (
        WireType(
            "openai", "OpenAI (and OpenAI-wire gateways)", "https://api.openai.com/v1", True, "OPENAI_API_KEY"
        ),
        WireType("anthropic", "Anthropic", "https://api.anthropic.com", True, "ANTHROPIC_API_KEY"),
        WireType(
            "gemini", "Google Gemini", "https://generativelanguage.googleapis.com", True, "GEMINI_API_KEY"
        ),
        WireType("ollama", "Ollama", "http://localhost:11434", False),
        WireType("ollama-cloud", "Ollama Cloud", "https://ollama.com", True, "OLLAMA_API_KEY"),
        WireType("lmstudio", "LM Studio", "http://localhost:1234", False),
    )
}
"""Every wire type by name, in display order."""


def instance_display_name(settings: _ReadsSettings, instance: str) -> str | None:
    """`ai.provider.<instance>.displayName` (seed 002 §3a: the name people see for an instance),
    or None when unset — the instance id is shown then."""
    value = settings.get(f"ai.provider.{instance}.displayName")
    return value.strip() or None if isinstance(value, str) else None


def base_url_for(wire_type: str, configured: str | None) -> str:
    """The effective base URL of an instance: the configured one (normalised) or the type's default."""
    url = (configured or "").strip() or WIRE_TYPES[wire_type].default_base_url
    url = url.rstrip("/")
    if wire_type == "lmstudio" and url.endswith("/v1"):
        url = url[: -len("/v1")]
    return url


def uses_default_endpoint(wire_type: str, configured: str | None) -> bool:
    """True when the instance talks to the vendor's public endpoint (so a key is really needed)."""
    return base_url_for(wire_type, configured) == base_url_for(wire_type, None)
