"""Every request field is forwarded, mapped or refused — never dropped (issue 43): one table per
(API shape × wire), read by the adapters as they build a request and by the gateway's table test.

- **forwarded**: sent to the upstream under the same name, as the client sent it;
- **mapped**: honoured under another name or form; `path` says where it lands in the wire's body
  (`generationConfig.frequencyPenalty`), or `note` what consumes it;
- **refused**: the wire cannot honour it: `InvalidRequestError` naming the field (a 400 in the
  shape's own error format) before any request is built.

A field a table does not name is forwarded as sent on the shape's native wire (`NATIVE`: a Chat
Completions field OpenAI added yesterday reaches an OpenAI-wire upstream) and refused elsewhere. A
value that asks for nothing beyond every wire's default (`NEUTRAL`: `n: 1`, `service_tier: "auto"`,
`store: false`) needs no mapping and passes a wire that has none.

Another shape extends the tables with its own keys, e.g.

    FIELD_TABLES[("responses", "anthropic")] = {"max_output_tokens": mapped("max_tokens"), ...}
    NATIVE["responses"] = "openai-responses"

and judges a request with `refuse_fields(shape, wire, names)` / `passed_fields(shape, wire, fields)`.
The Chat Completions tables are rendered in docs/llm-calls.md ("Request fields").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ...contract.errors import InvalidRequestError

CHAT = "chat"
"""OpenAI Chat Completions (`POST /v1/chat/completions`)."""


@dataclass(frozen=True, slots=True)
class FieldRoute:
    how: Literal["forwarded", "mapped", "refused"]
    path: str = ""
    """Where a mapped field lands in the wire's body, dotted (`generationConfig.topP`, `tools[].strict`);
    empty when it does not land in the body as such (`note` says what consumes it)."""
    note: str = ""


FORWARDED = FieldRoute("forwarded")
REFUSED = FieldRoute("refused")


def mapped(path: str, note: str = "") -> FieldRoute:
    return FieldRoute("mapped", path, note)


GATEWAY = mapped("", "read by the gateway (model spec, stream, token cap)")
SESSION = mapped("", "the usage record's session")


def _chat(**wire_specific: FieldRoute) -> dict[str, FieldRoute]:
    """A Chat Completions table: the fields every wire honours one way or another, then the wire's own."""
    common = {
        "model": GATEWAY,
        "messages": GATEWAY,
        "stream": GATEWAY,
        "stream_options": mapped("", "the gateway's own usage chunk"),
        "max_tokens": GATEWAY,
        "max_completion_tokens": GATEWAY,
        "n": mapped("", "one choice (n > 1 is refused)"),
        "fallback_models": mapped("", "the gateway's fallback chain (a Zarniwoop extension, never sent)"),
    }
    return {**common, **wire_specific}


_OPENAI_ONLY = (
    *("metadata", "logit_bias", "service_tier", "prompt_cache_key", "prompt_cache_retention"),
    *("prompt_cache_options", "verbosity", "store", "modalities", "audio", "prediction"),
    *("web_search_options", "moderation", "functions", "function_call"),
)
"""Fields only the OpenAI wire honours: the others refuse them (a neutral value passes)."""

_CHAT_ROWS: dict[str, tuple[str, str, str]] = {
    # field: how (anthropic, gemini, ollama) honour it — a path in their body, "-" refused, "(…)" a note;
    # the OpenAI wire forwards every one of them as sent
    "temperature": ("temperature", "generationConfig.temperature", "options.temperature"),
    "top_p": ("top_p", "generationConfig.topP", "options.top_p"),
    "stop": ("stop_sequences", "generationConfig.stopSequences", "options.stop"),
    "seed": ("-", "generationConfig.seed", "options.seed"),
    "frequency_penalty": ("-", "generationConfig.frequencyPenalty", "options.frequency_penalty"),
    "presence_penalty": ("-", "generationConfig.presencePenalty", "options.presence_penalty"),
    "logprobs": ("-", "generationConfig.responseLogprobs", "logprobs"),
    "top_logprobs": ("-", "generationConfig.logprobs", "top_logprobs"),
    "reasoning_effort": ("-", "generationConfig.thinkingConfig.thinkingBudget", "-"),
    "tools": ("tools", "tools", "tools"),
    "tools[].function.strict": ("tools[].strict", "toolConfig.functionCallingConfig.mode", "-"),
    "tool_choice": ("tool_choice", "toolConfig", "(auto: the tools; none: no tools; others refused)"),
    "parallel_tool_calls": ("tool_choice.disable_parallel_tool_use", "-", "-"),
    "response_format": (
        "(output_format with a strict schema, else an instruction in system)",
        "generationConfig.responseMimeType",
        "format",
    ),
    "response_format.json_schema.strict": ("output_format", "generationConfig.responseJsonSchema", "format"),
    "user": ("metadata.user_id", "(the usage record's session)", "(the usage record's session)"),
    "safety_identifier": ("metadata.user_id", "-", "-"),
    **dict.fromkeys(_OPENAI_ONLY, ("-", "-", "-")),
}
"""The Chat Completions fields beyond the ones every wire reads (`_chat`), one row each."""


def _cell(cell: str) -> FieldRoute:
    if cell == "-":
        return REFUSED
    return mapped("", cell[1:-1]) if cell.startswith("(") else mapped(cell)


FIELD_TABLES: dict[tuple[str, str], dict[str, FieldRoute]] = {
    (CHAT, "openai"): _chat(**dict.fromkeys(_CHAT_ROWS, FORWARDED)),
    **{
        (CHAT, wire): _chat(**{name: _cell(cells[column]) for name, cells in _CHAT_ROWS.items()})
        for column, wire in enumerate(("anthropic", "gemini", "ollama"))
    },
}
"""(shape, wire) → field → how that wire honours it. LM Studio and OpenAI-wire gateways use the
`openai` table, Ollama Cloud the `ollama` one (`WIRE_FAMILY`)."""

NATIVE: dict[str, str] = {CHAT: "openai"}
"""Each shape's native wire, where a field no table names is forwarded as sent."""

NEUTRAL: dict[tuple[str, str], tuple[Any, ...]] = {
    (CHAT, "n"): (1,),
    (CHAT, "service_tier"): ("auto",),
    (CHAT, "store"): (False,),
    (CHAT, "modalities"): (["text"],),
    (CHAT, "logprobs"): (False,),
    (CHAT, "parallel_tool_calls"): (True,),
}
"""Values that ask for nothing beyond every wire's default: they pass a wire that refuses the field."""

WIRE_FAMILY = {"lmstudio": "openai", "ollama-cloud": "ollama"}
"""Wire types whose requests are built by another wire's adapter, and so judged by its table."""


def route(shape: str, wire: str, name: str) -> FieldRoute:
    """How `wire` honours `name` of a `shape` request."""
    wire = WIRE_FAMILY.get(wire, wire)
    found = FIELD_TABLES[(shape, wire)].get(name)
    if found is not None:
        return found
    return FORWARDED if NATIVE.get(shape) == wire else REFUSED


def refuse_fields(shape: str, wire: str, names: Iterable[str]) -> None:
    """`InvalidRequestError` naming the first of `names` the wire refuses."""
    for name in names:
        if route(shape, wire, name).how == "refused":
            raise InvalidRequestError(
                name,
                f"the {wire} wire has no equivalent of {name!r}: "
                "remove it, or choose a model served over another wire",
            )


def passed_fields(shape: str, wire: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The further fields of a request this wire forwards or maps, as sent; a neutral value (or
    `null`) is left out where the wire has no place for it, and a refused field raises
    (`refuse_fields`)."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        how = route(shape, wire, name).how
        if how == "forwarded":
            out[name] = value
        elif value is None or value in NEUTRAL.get((shape, name), ()):
            continue  # asks for nothing: `null` (some clients send every field), or every wire's default
        elif how == "refused":
            refuse_fields(shape, wire, (name,))
        else:
            out[name] = value
    return out


def number_field(name: str, value: Any, low: float, high: float) -> float:
    """A mapped field's number, checked where the target wire would only fail later, or silently."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise InvalidRequestError(name, f"expected a number from {low:g} to {high:g}, got {value!r:.40}")
    return float(value)


__all__ = [
    "CHAT",
    "FIELD_TABLES",
    "FORWARDED",
    "NATIVE",
    "NEUTRAL",
    "REFUSED",
    "WIRE_FAMILY",
    "FieldRoute",
    "mapped",
    "number_field",
    "passed_fields",
    "refuse_fields",
    "route",
]
