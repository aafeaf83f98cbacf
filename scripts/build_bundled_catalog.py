"""Regenerate the bundled model documents (src/zarniwoop/llm/catalog/bundled/model/**.yaml).

Context windows, output limits, capabilities and prices come from LiteLLM's public
`model_prices_and_context_window.json` (MIT; a copy is in ../shared/fixtures/llm/catalog/);
LM Studio models, which that file does not list, take their context length from LM Studio's
own listing (`/api/v0/models`, `/api/v1/models`) and cost nothing (local). Each document names
its source in `pricingSource`, which `tests/llm/test_bundled_catalog.py` checks against the file.

    python scripts/build_bundled_catalog.py ../shared/fixtures/llm/catalog/model_prices_and_context_window.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parents[1] / "src/zarniwoop/llm/catalog/bundled/model"

# (instance, wire model name, LiteLLM key, size)
LITELLM = [
    ("openai", "gpt-4o", "gpt-4o", "LARGE"),
    ("openai", "gpt-4o-mini", "gpt-4o-mini", "SMALL"),
    ("openai", "gpt-4.1", "gpt-4.1", "LARGE"),
    ("openai", "gpt-4.1-mini", "gpt-4.1-mini", "SMALL"),
    ("openai", "gpt-4.1-nano", "gpt-4.1-nano", "SMALL"),
    ("openai", "gpt-5", "gpt-5", "LARGE"),
    ("openai", "gpt-5-mini", "gpt-5-mini", "SMALL"),
    ("openai", "gpt-5-nano", "gpt-5-nano", "SMALL"),
    ("openai", "gpt-5.1", "gpt-5.1", "LARGE"),
    ("openai", "gpt-5.2", "gpt-5.2", "LARGE"),
    ("openai", "gpt-5.4", "gpt-5.4", "LARGE"),
    ("openai", "gpt-5.4-mini", "gpt-5.4-mini", "SMALL"),
    ("openai", "gpt-5.4-nano", "gpt-5.4-nano", "SMALL"),
    ("openai", "gpt-5.5", "gpt-5.5", "LARGE"),
    ("openai", "o3", "o3", "LARGE"),
    ("openai", "o4-mini", "o4-mini", "SMALL"),
    ("anthropic", "claude-haiku-4-5", "claude-haiku-4-5", "SMALL"),
    ("anthropic", "claude-sonnet-4-5", "claude-sonnet-4-5", "LARGE"),
    ("anthropic", "claude-sonnet-4-6", "claude-sonnet-4-6", "LARGE"),
    ("anthropic", "claude-opus-4-5", "claude-opus-4-5", "LARGE"),
    ("anthropic", "claude-opus-4-6", "claude-opus-4-6", "LARGE"),
    ("anthropic", "claude-opus-4-7", "claude-opus-4-7", "LARGE"),
    ("anthropic", "claude-haiku-5-5", "claude-haiku-5-5", "SMALL"),
    ("anthropic", "claude-sonnet-5", "claude-sonnet-5", "LARGE"),
    ("anthropic", "claude-sonnet-5-5", "claude-sonnet-5-5", "LARGE"),
    ("anthropic", "claude-opus-5", "claude-opus-5", "LARGE"),
    ("anthropic", "claude-opus-5-5", "claude-opus-5-5", "LARGE"),
    ("gemini", "gemini-2.5-flash", "gemini/gemini-2.5-flash", "SMALL"),
    ("gemini", "gemini-2.5-flash-lite", "gemini/gemini-2.5-flash-lite", "SMALL"),
    ("gemini", "gemini-2.5-pro", "gemini/gemini-2.5-pro", "LARGE"),
    ("gemini", "gemini-3-flash-preview", "gemini/gemini-3-flash-preview", "SMALL"),
    ("gemini", "gemini-3.1-pro-preview", "gemini/gemini-3.1-pro-preview", "LARGE"),
    ("gemini", "gemini-3.1-flash-lite", "gemini/gemini-3.1-flash-lite", "SMALL"),
    ("gemini", "gemini-3.5-flash", "gemini/gemini-3.5-flash", "SMALL"),
    ("gemini", "gemini-3.5-flash-lite", "gemini/gemini-3.5-flash-lite", "SMALL"),
    ("gemini", "gemma-4-31b-it", "gemini/gemma-4-31b-it", "SMALL"),
    ("gemini", "gemma-4-26b-a4b-it", "gemini/gemma-4-26b-a4b-it", "SMALL"),
    # A named instance "deepseek" (ai.provider.deepseek.type: openai, baseUrl https://api.deepseek.com/v1).
    ("deepseek", "deepseek-chat", "deepseek-chat", "LARGE"),
    ("deepseek", "deepseek-reasoner", "deepseek-reasoner", "LARGE"),
    ("deepseek", "deepseek-v4-flash", "deepseek-v4-flash", "SMALL"),
    ("deepseek", "deepseek-v4-pro", "deepseek-v4-pro", "LARGE"),
    # A local Ollama serves its own models and proxies cloud ones under a "-cloud" tag.
    ("ollama", "llama3.1", "ollama/llama3.1", "SMALL"),
    ("ollama", "gpt-oss:20b-cloud", "ollama/gpt-oss:20b-cloud", "SMALL"),
    ("ollama", "gpt-oss:120b-cloud", "ollama/gpt-oss:120b-cloud", "LARGE"),
    ("ollama", "qwen3-coder:480b-cloud", "ollama/qwen3-coder:480b-cloud", "LARGE"),
    ("ollama", "deepseek-v3.1:671b-cloud", "ollama/deepseek-v3.1:671b-cloud", "LARGE"),
    # Ollama Cloud (https://ollama.com/api) names the same models without the tag suffix.
    ("ollama-cloud", "gpt-oss:20b", "ollama/gpt-oss:20b-cloud", "SMALL"),
    ("ollama-cloud", "gpt-oss:120b", "ollama/gpt-oss:120b-cloud", "LARGE"),
    ("ollama-cloud", "qwen3-coder:480b", "ollama/qwen3-coder:480b-cloud", "LARGE"),
    ("ollama-cloud", "deepseek-v3.1:671b", "ollama/deepseek-v3.1:671b-cloud", "LARGE"),
]

# LM Studio: (wire model name, context length from its listing, size, capabilities, extra fields)
LMSTUDIO = [
    ("google/gemma-4-26b-a4b", 262144, "SMALL", ["vision", "tools", "thinking"], {}, "/api/v1/models"),
    ("qwen2-vl-7b-instruct", 32768, "SMALL", ["vision"], {}, "/api/v0/models"),
    ("meta-llama-3.1-8b-instruct", 131072, "SMALL", ["tools"], {}, "/api/v0/models"),
    ("deepseek-r1", 131072, "LARGE", ["tools", "thinking"], {"stripThinkTags": True}, "/api/v1/models"),
]

# Seed 002 §7a "Observed Profiles" (2026-06-15): (instance, wire) → (contextDiscipline, toolLoopPersistence).
# Empirical, allowed to be falsified by vendor releases; every layer may override a key.
TRAITS = {
    ("gemini", "gemini-2.5-pro"): ("weak", "medium"),
    ("gemini", "gemini-2.5-flash"): ("weak", "strong"),
    ("gemini", "gemma-4-26b-a4b-it"): ("strong", "strong"),
    ("deepseek", "deepseek-v4-pro"): ("strong", "strong"),
    ("anthropic", "claude-sonnet-4-6"): ("strong", "strong"),
    ("anthropic", "claude-opus-4-7"): ("strong", "very-strong"),
}
LOCAL_TRAITS = ("variable", "variable")
"""Local models (a local Ollama's own, LM Studio): "variable per model — test"."""

CAPABILITIES = [
    ("supports_vision", "vision"),
    ("supports_pdf_input", "pdf"),
    ("supports_function_calling", "tools"),
    ("supports_reasoning", "thinking"),
    ("supports_response_schema", "structured-output"),
    ("supports_prompt_caching", "prompt-cache"),
    ("supports_web_search", "web-search"),
]


def per_mtok(value: float | None) -> float | None:
    return None if value is None else round(value * 1_000_000, 6)


def slug_and_wire(wire: str) -> tuple[str, dict[str, str]]:
    slug = wire.replace(":", "-")
    return slug, ({"wireName": wire} if slug != wire else {})


def write(instance: str, wire: str, fields: dict[str, object], source: str) -> None:
    slug, wire_field = slug_and_wire(wire)
    path = OUT / instance / f"{slug}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    local = instance == "lmstudio" or (instance == "ollama" and not wire.endswith("-cloud"))
    traits = TRAITS.get((instance, wire), LOCAL_TRAITS if local else None)
    if traits is not None:
        fields = {**fields, "traits": {"contextDiscipline": traits[0], "toolLoopPersistence": traits[1]}}
    body = {**wire_field, **fields, "discoveredBy": "manual", "pricingSource": source}
    path.write_text(
        "# Bundled with zarniwoop (scripts/build_bundled_catalog.py); copied into _system/_tenant on first boot.\n"
        + yaml.safe_dump(body, sort_keys=False)
    )


def main(source: str) -> None:
    data = json.loads(Path(source).read_text())
    for instance, wire, key, size in LITELLM:
        entry = data[key]
        pricing = {
            "currency": "USD",
            "inputPerMTok": per_mtok(entry.get("input_cost_per_token")),
            "outputPerMTok": per_mtok(entry.get("output_cost_per_token")),
        }
        if entry.get("cache_read_input_token_cost") is not None:
            pricing["cacheReadPerMTok"] = per_mtok(entry["cache_read_input_token_cost"])
        if entry.get("cache_creation_input_token_cost") is not None:
            pricing["cacheWritePerMTok"] = per_mtok(entry["cache_creation_input_token_cost"])
        fields: dict[str, object] = {
            "contextWindowTokens": entry["max_input_tokens"],
            "defaultMaxOutputTokens": entry["max_output_tokens"],
            "size": size,
            "kind": "chat",
            "capabilities": [name for flag, name in CAPABILITIES if entry.get(flag)],
            "pricing": pricing,
        }
        write(instance, wire, fields, f"litellm:{key}")
    for wire, context, size, capabilities, extra, listing in LMSTUDIO:
        fields = {
            "contextWindowTokens": context,
            "size": size,
            "kind": "chat",
            "capabilities": capabilities,
            **extra,
            "pricing": {"currency": "USD", "inputPerMTok": 0.0, "outputPerMTok": 0.0},
        }
        write("lmstudio", wire, fields, f"local (free); context length from LM Studio {listing}")


if __name__ == "__main__":
    main(sys.argv[1])
