"""OpenAI's embeddings shapes for the gateway's `POST /v1/embeddings` (`routes/embeddings.py`).

    body = EmbeddingRequest.model_validate_json(raw)
    request = body.to_chat_request()                # texts as user messages, `embedding` set, max_tokens 0
    embeddings_json(result, vectors, "openai:text-embedding-3-small")

Every field is read or refused: token-id arrays (`input: [[1, 2]]`) and unknown fields are a 400
naming them (https://platform.openai.com/docs/api-reference/embeddings/create).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...llm.adapters import ChatMessage, ChatRequest
from ...llm.adapters.embeddings import EmbeddingInput, Vector
from ...llm.call import LlmResult
from .openai_wire import served_json

MAX_INPUTS = 2048
"""OpenAI's own bound on the texts of one request."""


class EmbeddingRequest(BaseModel):
    """`POST /v1/embeddings`: OpenAI's embeddings request."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=500, description="Anything the alias resolver takes.")
    input: str | list[str] = Field(
        description="A text or a list of texts (token-id arrays are not taken: the wires differ in tokenizer)."
    )
    dimensions: int | None = Field(default=None, ge=1, le=65_536)
    encoding_format: Literal["float", "base64"] = "float"
    user: str | None = Field(default=None, max_length=200)

    def texts(self) -> list[str]:
        texts = [self.input] if isinstance(self.input, str) else list(self.input)
        if not 1 <= len(texts) <= MAX_INPUTS:
            from ...contract.errors import InvalidRequestError

            raise InvalidRequestError("input", f"expected 1 to {MAX_INPUTS} texts, got {len(texts)}")
        return texts

    def to_chat_request(self) -> ChatRequest:
        asked = EmbeddingInput(self.dimensions, self.encoding_format, self.user)
        messages = tuple(ChatMessage("user", text) for text in self.texts())
        return ChatRequest(messages, max_tokens=0, embedding=asked)


def embeddings_json(result: LlmResult, vectors: list[Vector], model: str) -> dict[str, Any]:
    """OpenAI's `list` of `embedding`s; `model` is what served, as `<instance>:<model>`."""
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
        "model": model,
        "usage": {"prompt_tokens": result.usage.input, "total_tokens": result.usage.total},
        "zarniwoop": served_json(result),
    }


__all__ = ["EmbeddingRequest", "embeddings_json"]
