"""The public surface of `zarniwoop.llm` (what the accounts/credentials/chat-adapter layer uses)."""

from __future__ import annotations

import zarniwoop.llm as llm


def test_all_is_sorted_and_every_name_exists():
    assert llm.__all__ == sorted(llm.__all__, key=lambda n: (not n.isupper(), n))
    for name in llm.__all__:
        assert hasattr(llm, name), name


def test_the_surface_the_next_layer_relies_on():
    for name in (
        "resolve",
        "Resolution",
        "UnknownModelError",
        "Catalog",
        "ModelDoc",
        "ModelSize",
        "Pricing",
        "open_catalog",
        "sanitize",
        "ChatResponse",
        "ToolCall",
        "TokenUsage",
        "decorate",
        "refresh_seconds",
        "discover_models",
        "WIRE_TYPES",
        "base_url_for",
    ):
        assert name in llm.__all__, name
    assert set(llm.WIRE_TYPES) == {"openai", "anthropic", "gemini", "ollama", "ollama-cloud", "lmstudio"}
    assert llm.base_url_for("lmstudio", "http://127.0.0.1:1234/v1/") == "http://127.0.0.1:1234"
    assert llm.base_url_for("openai", None) == "https://api.openai.com/v1"
    assert (
        llm.base_url_for("anthropic", " https://proxy.example/anthropic/ ")
        == "https://proxy.example/anthropic"
    )
