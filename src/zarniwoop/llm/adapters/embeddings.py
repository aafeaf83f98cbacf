"""Embeddings over three wires, pure like the chat adapters: `build()` a `RequestSpec`, `parse()` a body.

An embeddings call runs the chat call's whole path (budgets, keys, failover, the one settlement):
its `ChatRequest` carries the texts as user messages, `max_tokens=0` and `embedding` set, and
`adapters.adapter_for` picks the wire's codec here instead of its chat adapter. The vectors come back in
`ChatResponse.metadata[VECTORS]`, the input tokens in `usage` (output 0).

| | OpenAI (`POST {base}/embeddings`) | Gemini (`:batchEmbedContents`) | Ollama (`POST /api/embed`) |
|---|---|---|---|
| `input` (string or array) | `input` | one request per text | `input` |
| `dimensions` | `dimensions` | `outputDimensionality` | `dimensions` |
| `encoding_format` | forwarded; `base64` vectors relayed as they came | vectors encoded by the gateway | vectors encoded by the gateway |
| `user` | `user` | the usage record's session | the usage record's session |
| usage | `usage.prompt_tokens` | none: the gateway's estimate | `prompt_eval_count` |

Anthropic has no embeddings API: a model on its wire is refused naming `model`.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ...contract.errors import InvalidRequestError, ParseError
from ...contract.protocol import RequestSpec
from .base import Framing, StreamAccumulator, WireAdapter
from .errors import map_error
from .ids import check_model, gemini_resource
from .openai import json_object
from .response import ChatResponse, TokenUsage, UsageReport

VECTORS = "embeddings"
"""`ChatResponse.metadata` key of the vectors, in input order: a list of floats, or a base64 string."""

Vector = list[float] | str


@dataclass(frozen=True, slots=True)
class EmbeddingInput:
    """What an embeddings call asks beyond its texts (which are the request's user messages)."""

    dimensions: int | None = None
    encoding_format: Literal["float", "base64"] = "float"
    user: str | None = None


def base64_vector(values: Sequence[float]) -> str:
    """OpenAI's `encoding_format: base64`: little-endian float32s, base64-encoded."""
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def _texts(request: Any) -> list[str]:
    return [m.content for m in request.messages]


def _embedding(request: Any) -> EmbeddingInput:
    asked = request.embedding
    assert isinstance(asked, EmbeddingInput)
    return asked


def _json(body: bytes) -> dict[str, Any]:
    return json_object(body, "embeddings response")


def _post(endpoint: Any, path: str, body: dict[str, Any], key_header: str = "Authorization") -> RequestSpec:
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        key = endpoint.api_key.reveal()
        headers[key_header] = f"Bearer {key}" if key_header == "Authorization" else key
    url = endpoint.base_url.rstrip("/") + path
    return RequestSpec("POST", url, headers=headers, json_body=body, step="embeddings")


def _floats(value: Any, where: str) -> list[float]:
    if not isinstance(value, list) or not all(isinstance(x, (int, float)) for x in value):
        raise ParseError(f"{where}: expected a list of numbers")
    return [float(x) for x in value]


class _Codec:
    """A wire's embeddings call in the shape `ChatClient` drives (`adapters.adapter_for` picks it)."""

    wire_type = ""
    framing: Framing = "sse"
    native_shape: str | None = None

    def accumulator(self) -> StreamAccumulator:
        raise InvalidRequestError("stream", "an embeddings call does not stream")

    error = staticmethod(map_error)


class OpenAIEmbeddings(_Codec):
    wire_type = "openai"
    path = "/embeddings"

    def build(self, request: Any, endpoint: Any, model: str) -> RequestSpec:
        check_model(self.wire_type, model)
        asked = _embedding(request)
        body: dict[str, Any] = {
            "model": model,
            "input": _texts(request),
            "encoding_format": asked.encoding_format,
        }
        if asked.dimensions is not None:
            body["dimensions"] = asked.dimensions
        if asked.user:
            body["user"] = asked.user
        return _post(endpoint, self.path, body)

    def parse(self, body: bytes) -> ChatResponse:
        data = _json(body)
        items = data.get("data")
        if not isinstance(items, list):
            raise ParseError("embeddings response without a data list")
        ordered = sorted(items, key=lambda item: int(item.get("index", 0)) if isinstance(item, dict) else 0)
        vectors: list[Vector] = []
        for i, item in enumerate(ordered):
            value = item.get("embedding") if isinstance(item, dict) else None
            vectors.append(value if isinstance(value, str) else _floats(value, f"data[{i}].embedding"))
        usage = data.get("usage")
        counted = _counted(usage, "prompt_tokens") if isinstance(usage, dict) else None
        # the client's format was forwarded: base64 strings come back as they are
        return ChatResponse(usage=counted, metadata={VECTORS: vectors})


class LmStudioEmbeddings(OpenAIEmbeddings):
    wire_type = "lmstudio"
    path = "/v1/embeddings"


class GeminiEmbeddings(_Codec):
    wire_type = "gemini"

    def build(self, request: Any, endpoint: Any, model: str) -> RequestSpec:
        resource = gemini_resource(model)
        asked = _embedding(request)
        one: dict[str, Any] = {"model": resource}
        if asked.dimensions is not None:
            one["outputDimensionality"] = asked.dimensions
        body = {"requests": [{**one, "content": {"parts": [{"text": t}]}} for t in _texts(request)]}
        return _post(endpoint, f"/v1beta/{resource}:batchEmbedContents", body, "x-goog-api-key")

    def parse(self, body: bytes) -> ChatResponse:
        items = _json(body).get("embeddings")
        if not isinstance(items, list):
            raise ParseError("batchEmbedContents response without embeddings")
        vectors: list[Vector] = [
            _floats(item.get("values") if isinstance(item, dict) else None, f"embeddings[{i}].values")
            for i, item in enumerate(items)
        ]
        return ChatResponse(usage=None, metadata={VECTORS: vectors})


class OllamaEmbeddings(_Codec):
    wire_type = "ollama"

    def build(self, request: Any, endpoint: Any, model: str) -> RequestSpec:
        check_model(self.wire_type, model)
        asked = _embedding(request)
        body: dict[str, Any] = {"model": model, "input": _texts(request)}
        if asked.dimensions is not None:
            body["dimensions"] = asked.dimensions
        return _post(endpoint, "/api/embed", body)

    def parse(self, body: bytes) -> ChatResponse:
        data = _json(body)
        items = data.get("embeddings")
        if not isinstance(items, list):
            raise ParseError("/api/embed response without embeddings")
        vectors: list[Vector] = [_floats(v, f"embeddings[{i}]") for i, v in enumerate(items)]
        return ChatResponse(usage=_counted(data, "prompt_eval_count"), metadata={VECTORS: vectors})


def _counted(usage: Mapping[str, Any], name: str) -> TokenUsage | None:
    """The input count as reported, to be checked (`usage_check.check_usage`); None when absent (the
    gateway's estimate is then charged)."""
    if usage.get(name) is None:
        return None
    report = UsageReport(usage)
    return report.usage(report.count(name), 0)


_CODECS: dict[str, WireAdapter] = {
    "openai": OpenAIEmbeddings(),
    "lmstudio": LmStudioEmbeddings(),
    "gemini": GeminiEmbeddings(),
    "ollama": OllamaEmbeddings(),
    "ollama-cloud": OllamaEmbeddings(),
}


def codec_for(wire_type: str) -> WireAdapter:
    """The embeddings codec of a vendor's wire; a 400 naming `model` for a wire without embeddings."""
    from .wire import wire_of

    codec = _CODECS.get(wire_of(wire_type))
    if codec is None:
        raise InvalidRequestError(
            "model",
            f"the {wire_type} wire has no embeddings API: choose a model served over openai, gemini or ollama",
        )
    return codec


def encoded(response: ChatResponse, asked: EmbeddingInput) -> list[Vector]:
    """The vectors in the format the client asked for."""
    vectors: list[Vector] = list(response.metadata.get(VECTORS) or ())
    if asked.encoding_format == "base64":
        return [v if isinstance(v, str) else base64_vector(v) for v in vectors]
    return vectors


__all__ = ["VECTORS", "EmbeddingInput", "base64_vector", "codec_for", "encoded"]
