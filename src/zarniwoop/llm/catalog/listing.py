"""The model-listing APIs of the six wire types: build the request, parse the answer — pure, no I/O.

Seed 002 §3a.6. What each listing gives (no vendor lists prices, so discovery never writes any):

| wire type | request | auth | fields used |
|---|---|---|---|
| openai (+ gateways) | `GET {base}/models` | `Bearer` | `id`; OpenRouter adds `name`, `context_length`, `top_provider.max_completion_tokens` |
| anthropic | `GET {base}/v1/models?limit=1000`, pages by `after_id` | `x-api-key` + `anthropic-version` | `id`, `display_name` |
| gemini | `GET {base}/v1beta/models?pageSize=1000`, pages by `pageToken` | `x-goog-api-key` | `name` (`models/…`), `inputTokenLimit`, `outputTokenLimit`, `supportedGenerationMethods` |
| ollama | `GET {base}/api/tags` | none (`Bearer` if a key is set) | `name` (`qwen3:30b`) |
| ollama-cloud | `GET {base}/api/tags` | `Bearer` | `name` |
| lmstudio | `GET {base}/api/v1/models`, else `/api/v0/models`, else `/v1/models` | none | `key`/`id`, `type`, `max_context_length` |

The Gemini key goes in a header, not in `?key=`, so it never lands in a URL, a log or a trace.
LM Studio's native listings carry the context length; older servers only have the
OpenAI-compatible one, so a 404 moves on to the next variant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...contract.errors import ParseError
from ...contract.protocol import RequestSpec, Secret
from ..adapters.anthropic import API_VERSION
from ..adapters.wire import wire_of

MAX_PAGES = 20


@dataclass(frozen=True, slots=True)
class ListedModel:
    wire_name: str
    context_window: int | None = None
    max_output: int | None = None
    kind: str = "chat"
    display_name: str | None = None


def listing_requests(wire_type: str, base_url: str, api_key: Secret | None) -> list[RequestSpec]:
    """The first request of an instance's listing, with alternatives to try in order on HTTP 404."""
    wire_type = wire_of(wire_type)
    key = api_key.reveal() if api_key else ""
    bearer = {"Authorization": f"Bearer {key}"} if key else {}
    if wire_type == "openai":
        return [RequestSpec("GET", f"{base_url}/models", headers=bearer, step="openai")]
    if wire_type == "anthropic":
        headers = (
            {"x-api-key": key, "anthropic-version": API_VERSION}
            if key
            else {"anthropic-version": API_VERSION}
        )
        return [
            RequestSpec(
                "GET", f"{base_url}/v1/models", params=(("limit", "1000"),), headers=headers, step="anthropic"
            )
        ]
    if wire_type == "gemini":
        headers = {"x-goog-api-key": key} if key else {}
        return [
            RequestSpec(
                "GET",
                f"{base_url}/v1beta/models",
                params=(("pageSize", "1000"),),
                headers=headers,
                step="gemini",
            )
        ]
    if wire_type in ("ollama", "ollama-cloud"):
        return [RequestSpec("GET", f"{base_url}/api/tags", headers=bearer, step="ollama")]
    if wire_type == "lmstudio":
        return [
            RequestSpec("GET", f"{base_url}/api/v1/models", headers=bearer, step="lmstudio-native"),
            RequestSpec("GET", f"{base_url}/api/v0/models", headers=bearer, step="openai"),
            RequestSpec("GET", f"{base_url}/v1/models", headers=bearer, step="openai"),
        ]
    raise ValueError(f"no listing API for wire type {wire_type!r}")


def parse_listing(spec: RequestSpec, body: bytes) -> tuple[list[ListedModel], RequestSpec | None]:
    """The models of one listing page, and the request for the next page (or None)."""
    data = _json(body, spec.step)
    if spec.step == "openai":
        return _openai(data), None
    if spec.step == "anthropic":
        return _anthropic(data, spec)
    if spec.step == "gemini":
        return _gemini(data, spec)
    if spec.step == "ollama":
        return _ollama(data), None
    if spec.step == "lmstudio-native":
        return _lmstudio_native(data), None
    raise ValueError(f"unknown listing step {spec.step!r}")


def _json(body: bytes, what: str) -> Any:
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ParseError(f"{what} model listing is not JSON ({exc})") from None


def _items(data: Any, key: str, what: str) -> list[dict[str, Any]]:
    items = data.get(key) if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(items, list):
        raise ParseError(f"{what} model listing: expected a '{key}' list")
    return [item for item in items if isinstance(item, dict)]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _kind_from_id(model_id: str) -> str:
    lowered = model_id.lower()
    if "embed" in lowered:
        return "embedding"
    if lowered.startswith(("dall-e", "gpt-image", "imagen")):
        return "image"
    return "chat"


def _openai(data: Any) -> list[ListedModel]:
    out = []
    for item in _items(data, "data", "OpenAI-wire"):
        model_id = item.get("id")
        if not isinstance(model_id, str) or not model_id:
            continue
        top_provider = item.get("top_provider")
        top: dict[str, Any] = top_provider if isinstance(top_provider, dict) else {}
        lm_type = item.get("type")  # LM Studio /api/v0: llm | vlm | embeddings
        kind = (
            "embedding"
            if isinstance(lm_type, str) and lm_type.startswith("embedding")
            else _kind_from_id(model_id)
        )
        out.append(
            ListedModel(
                wire_name=model_id,
                context_window=_int(item.get("context_length")) or _int(item.get("max_context_length")),
                max_output=_int(top.get("max_completion_tokens")),
                kind=kind,
                display_name=item.get("name") if isinstance(item.get("name"), str) else None,
            )
        )
    return out


def _anthropic(data: Any, spec: RequestSpec) -> tuple[list[ListedModel], RequestSpec | None]:
    out = [
        ListedModel(
            item["id"],
            display_name=item.get("display_name") if isinstance(item.get("display_name"), str) else None,
        )
        for item in _items(data, "data", "Anthropic")
        if isinstance(item.get("id"), str) and item["id"]
    ]
    last = data.get("last_id") if isinstance(data, dict) else None
    if isinstance(data, dict) and data.get("has_more") and isinstance(last, str) and last:
        params = (*tuple(p for p in spec.params if p[0] != "after_id"), ("after_id", last))
        return out, RequestSpec(spec.method, spec.url, params=params, headers=spec.headers, step=spec.step)
    return out, None


def _gemini(data: Any, spec: RequestSpec) -> tuple[list[ListedModel], RequestSpec | None]:
    out = []
    for item in _items(data, "models", "Gemini"):
        name = item.get("name")
        if not isinstance(name, str) or not name:
            continue
        methods = item.get("supportedGenerationMethods") or []
        if "embedContent" in methods:
            kind = "embedding"
        elif any(str(m).startswith("predict") for m in methods):
            kind = "image"
        else:
            kind = "chat"
        out.append(
            ListedModel(
                wire_name=name.removeprefix("models/"),
                context_window=_int(item.get("inputTokenLimit")),
                max_output=_int(item.get("outputTokenLimit")) if kind == "chat" else None,
                kind=kind,
                display_name=item.get("displayName") if isinstance(item.get("displayName"), str) else None,
            )
        )
    token = data.get("nextPageToken") if isinstance(data, dict) else None
    if isinstance(token, str) and token:
        params = (*tuple(p for p in spec.params if p[0] != "pageToken"), ("pageToken", token))
        return out, RequestSpec(spec.method, spec.url, params=params, headers=spec.headers, step=spec.step)
    return out, None


def _ollama(data: Any) -> list[ListedModel]:
    out = []
    for item in _items(data, "models", "Ollama"):
        name = item.get("name") or item.get("model")
        if isinstance(name, str) and name:
            out.append(ListedModel(name, kind=_kind_from_id(name)))
    return out


def _lmstudio_native(data: Any) -> list[ListedModel]:
    out = []
    for item in _items(data, "models", "LM Studio"):
        key = item.get("key") or item.get("id")
        if not isinstance(key, str) or not key:
            continue
        lm_type = str(item.get("type") or "llm")
        out.append(
            ListedModel(
                wire_name=key,
                context_window=_int(item.get("max_context_length")),
                kind="embedding" if lm_type.startswith("embedding") else "chat",
                display_name=item.get("display_name") if isinstance(item.get("display_name"), str) else None,
            )
        )
    return out
