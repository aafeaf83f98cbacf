"""OpenAI's request fields beyond messages, tools and JSON mode that the gateway models — and which
wire honours which, by the one table of `fields.py` (forwarded, mapped or refused; never dropped).

The fields modelled here (`SamplingOptions`) are checked by `asked()` and `refuse_unsupported`; every
other field a client sends rides along as sent in `SamplingOptions.extra`, judged by the same table
(`fields.passed_fields`) as each wire builds its body. A refusal names the field
(`InvalidRequestError` → the gateway's 400) before any request is built.

`parallel_tool_calls: true` is every wire's default, so it needs no mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .fields import CHAT, passed_fields, refuse_fields

if TYPE_CHECKING:
    from .base import ChatRequest
    from .response import ChatResponse


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
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """Every further request field, as the client sent it (`frequency_penalty`, `reasoning_effort`,
    `service_tier`, a field OpenAI added yesterday…): each wire forwards, maps or refuses it by the
    table of `fields.py`."""


NO_OPTIONS = SamplingOptions()

ANSWER_EXTRAS = "answerExtras"
MESSAGE_EXTRAS = "messageExtras"
"""`ChatResponse.metadata` keys of the answer's fields the gateway does not render itself, as the
upstream sent them: top-level (`service_tier`, …) and `choices[].message` (`annotations`, `audio`, …)."""
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


def refuse_unsupported(request: ChatRequest, wire_type: str) -> dict[str, Any]:
    """`InvalidRequestError` naming the first field of the request this wire cannot honour: a
    modelled one (`asked`), then a further one (`SamplingOptions.extra`). Returns the further
    fields the wire passes on (`fields.passed_fields`), for the adapter's body. A request bridged
    from another shape (`ChatRequest.native`: `thinking`, `top_k` of a Messages request) has its
    further fields honoured where a wire defines them, never merely forwarded as sent."""
    refuse_fields(CHAT, wire_type, asked(request))
    return passed_fields(CHAT, wire_type, request.options.extra, bridged=request.native is not None)


def tool_strict(request: ChatRequest) -> bool:
    return any(t.strict for t in request.tools)


def passed_back(response: ChatResponse) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answer's fields the gateway does not render itself, as the upstream sent them: top-level
    (`service_tier`, …) and the message's (`annotations`, …)."""
    meta = response.metadata
    return dict(meta.get(ANSWER_EXTRAS, {})), dict(meta.get(MESSAGE_EXTRAS, {}))


def openai_logprobs(tokens: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenAI's `choices[].logprobs` object from `[{token, logprob, top_logprobs: [...]}]`."""
    return {"content": tokens, "refusal": None}


__all__ = [
    "ANSWER_EXTRAS",
    "FINGERPRINT",
    "LOGPROBS",
    "MESSAGE_EXTRAS",
    "NO_OPTIONS",
    "PARALLEL",
    "REFUSAL",
    "SCHEMA_STRICT",
    "STRICT_TOOLS",
    "SamplingOptions",
    "asked",
    "openai_logprobs",
    "passed_back",
    "refuse_unsupported",
    "tool_strict",
]
