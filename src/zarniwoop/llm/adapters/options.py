"""OpenAI's request fields beyond messages, tools and JSON mode — and which wire can honour which.

A client that asks for strict tool calls, a seed or log probabilities must get them or be told no:
the OpenAI wire passes every field through; the others map what has an equivalent and refuse the
rest before any request is built (`InvalidRequestError` naming the field → the gateway's 400).

| field (OpenAI) | anthropic | gemini | ollama |
|---|---|---|---|
| `tools[].function.strict` | tool `strict` (structured outputs) | `functionCallingConfig.mode: VALIDATED` | refused |
| `parallel_tool_calls: false` | `tool_choice.disable_parallel_tool_use` | refused | refused |
| `response_format.json_schema.strict` | `output_format` json_schema | `responseJsonSchema` (enforced) | `format: <schema>` (enforced) |
| `seed` | refused | `generationConfig.seed` | `options.seed` |
| `logprobs`, `top_logprobs` | refused | `responseLogprobs`, `logprobs` | `logprobs`, `top_logprobs` |
| `stop` | `stop_sequences` | `stopSequences` | `options.stop` |
| `top_p` | `top_p` | `topP` | `options.top_p` |
| `user` | `metadata.user_id` | the usage record's session | the usage record's session |
| `metadata` | refused | refused | refused |

`parallel_tool_calls: true` is every wire's default, so it needs no mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...contract.errors import InvalidRequestError

if TYPE_CHECKING:
    from .base import ChatRequest


@dataclass(frozen=True, slots=True)
class SamplingOptions:
    parallel_tool_calls: bool | None = None
    seed: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    stop: tuple[str, ...] = ()
    top_p: float | None = None
    user: str | None = None
    metadata: Mapping[str, str] | None = field(default=None, compare=False)
    schema_name: str = "answer"
    """`response_format.json_schema.name`."""
    schema_strict: bool | None = None
    """`response_format.json_schema.strict`."""
    schema_description: str | None = None
    """`response_format.json_schema.description` (the OpenAI wire's; the others have no place for it)."""


NO_OPTIONS = SamplingOptions()

REFUSAL = "refusal"
LOGPROBS = "logprobs"
FINGERPRINT = "systemFingerprint"
"""`ChatResponse.metadata` keys the gateway passes back in OpenAI's shape: `message.refusal`,
`choices[].logprobs` (`{"content": [...]}`), `system_fingerprint`; and, as they came, OpenAI's
`prompt_tokens_details` / `completion_tokens_details`."""

STRICT_TOOLS = "tools[].function.strict"
PARALLEL = "parallel_tool_calls"
SCHEMA_STRICT = "response_format.json_schema.strict"


def asked(request: ChatRequest) -> list[str]:
    """The OpenAI fields this request sets that a wire must honour (in the request's field order)."""
    o = request.options
    out = []
    if any(t.strict for t in request.tools):
        out.append(STRICT_TOOLS)
    if o.parallel_tool_calls is False and request.tools:
        out.append(PARALLEL)
    if o.schema_strict and request.json_schema is not None:
        out.append(SCHEMA_STRICT)
    for name, value in (
        ("seed", o.seed),
        ("logprobs", o.logprobs or None),
        ("top_logprobs", o.top_logprobs),
        ("stop", o.stop or None),
        ("top_p", o.top_p),
        ("metadata", o.metadata or None),
    ):
        if value is not None:
            out.append(name)
    return out


def refuse_unsupported(request: ChatRequest, wire_type: str, unsupported: frozenset[str]) -> None:
    """`InvalidRequestError` naming the first field of the request this wire cannot honour."""
    for name in asked(request):
        if name in unsupported:
            raise InvalidRequestError(
                name,
                f"the {wire_type} wire has no equivalent of {name!r}: "
                "remove it, or choose a model served over another wire",
            )


def tool_strict(request: ChatRequest) -> bool:
    return any(t.strict for t in request.tools)


def openai_logprobs(tokens: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenAI's `choices[].logprobs` object from `[{token, logprob, top_logprobs: [...]}]`."""
    return {"content": tokens, "refusal": None}


__all__ = [
    "FINGERPRINT",
    "LOGPROBS",
    "NO_OPTIONS",
    "PARALLEL",
    "REFUSAL",
    "SCHEMA_STRICT",
    "STRICT_TOOLS",
    "SamplingOptions",
    "asked",
    "openai_logprobs",
    "refuse_unsupported",
    "tool_strict",
]
