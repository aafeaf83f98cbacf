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
`store: false`) needs no mapping and passes a wire that has none. A request *bridged* from another
shape (below) has nothing forwarded merely as sent: its chat form was not written for the OpenAI
wire, so `thinking` and `top_k` — which that wire forwards as sent for a Chat Completions client, to
servers that take them (vLLM, LM Studio) — are refused there (`route(..., bridged=True)`).

The gateway's other shapes — OpenAI Responses (`/v1/responses`) and Anthropic Messages
(`/v1/messages`) — go to a wire that serves them natively as the client wrote them (every field
forwarded: `adapters.adapter_for`), and to every other wire *bridged*: mapped to the chat form
(`ChatRequest`), which the (Chat Completions × wire) table above then judges. Their tables are
`(shape, BRIDGED)`: how each field lands in the chat form, or why no bridge carries it — read by
`bridge_refusals` into `NativeBody.refused`, the 400 a bridged wire answers.

    refuse_fields(CHAT, "gemini", names); passed_fields(CHAT, "gemini", fields)   # a chat request, per wire
    bridge_refusals(RESPONSES, fields, unknown="…")                                # another shape, bridged

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
    # two fields Chat Completions does not define, which the Messages bridge carries (and a chat
    # client may send): the OpenAI wire forwards them as sent to a server that takes them (vLLM,
    # LM Studio), and refuses them on a bridged request — OpenAI's API has no such parameter, and no
    # mapping of a budget onto `reasoning_effort` is documented (its levels name no token count, a
    # non-reasoning model refuses it, and Chat Completions never returns the thoughts asked for)
    "thinking": ("-", "generationConfig.thinkingConfig", "think"),
    "top_k": ("top_k", "generationConfig.topK", "options.top_k"),
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

RESPONSES = "responses"
"""OpenAI Responses (`POST /v1/responses`)."""
MESSAGES = "anthropic-messages"
"""Anthropic Messages (`POST /v1/messages`)."""
BRIDGED = "bridged"
"""The wire key of a shape's bridge: the chat form every wire that does not serve the shape is sent."""


def refused(note: str) -> FieldRoute:
    return FieldRoute("refused", "", note)


_NO_BRIDGE = "no bridged wire has an equivalent"
_PARTS = mapped("", "its parts, judged one by one")
_RESPONSES_ONLY = (
    *("include", "max_tool_calls", "top_logprobs", "service_tier", "prompt_cache_key"),
    *("safety_identifier", "prompt"),
)
"""Responses fields no bridged wire has an equivalent of (an empty list or object asks for nothing)."""
FIELD_TABLES[(RESPONSES, BRIDGED)] = {
    "model": GATEWAY,
    "stream": GATEWAY,
    "stream_options": mapped("", "the gateway's own event stream"),
    "input": mapped("messages", "chat messages, tool calls and tool results; other items refused by name"),
    "instructions": mapped("messages", "the system message"),
    "tools": mapped("tools", "function tools; built-in tools refused by name"),
    "tool_choice": mapped("tool_choice"),
    "parallel_tool_calls": mapped("parallel_tool_calls"),
    "text": _PARTS,
    "text.format": mapped("response_format"),
    "text.verbosity": refused(_NO_BRIDGE),
    "reasoning": _PARTS,
    "reasoning.effort": refused(_NO_BRIDGE),
    "reasoning.summary": refused(_NO_BRIDGE),
    "max_output_tokens": mapped("max_tokens"),
    "temperature": mapped("temperature"),
    "top_p": mapped("top_p"),
    "user": mapped("user"),
    "metadata": mapped("", "kept on the gateway's response object"),
    "store": mapped("", "the gateway's own store of responses"),
    "previous_response_id": mapped("", "the stored conversation, expanded into the input"),
    "truncation": refused(f"{_NO_BRIDGE} of truncation other than 'disabled'"),
    **dict.fromkeys(("background", "conversation"), mapped("", "refused on every wire: no upstream state")),
    **dict.fromkeys(_RESPONSES_ONLY, refused(_NO_BRIDGE)),
}
"""A Responses request on a wire without `/responses`, field by field (docs: `surfaces/http/responses_wire.py`)."""

_OFF_ANTHROPIC = (
    "no other wire has an equivalent: remove it, or choose a model served over the Anthropic wire"
)
FIELD_TABLES[(MESSAGES, BRIDGED)] = {
    "model": GATEWAY,
    "max_tokens": GATEWAY,
    "stream": GATEWAY,
    "messages": mapped("messages", "text, tool calls and tool results; other blocks refused by name"),
    "system": mapped("messages", "a system message"),
    "tools": mapped("tools", "custom tools; server tools refused by name"),
    "tool_choice": mapped("tool_choice"),
    "stop_sequences": mapped("stop"),
    "temperature": mapped("temperature"),
    "top_p": mapped("top_p"),
    "metadata": _PARTS,
    "metadata.user_id": mapped("user"),
    "cache_control": mapped("", "no field: the other wires cache prefixes on their own"),
    "thinking": mapped("thinking", "the chat form's `thinking`, judged by each wire's table"),
    "top_k": mapped("top_k"),
    **dict.fromkeys(("anthropic-user-profile-id", "anthropic-workspace-id"), refused(_OFF_ANTHROPIC)),
}
"""A Messages request on a wire other than Anthropic's (docs: `surfaces/http/anthropic_wire.py`)."""

NATIVE: dict[str, str] = {CHAT: "openai", RESPONSES: "openai", MESSAGES: "anthropic"}
"""Each shape's native wire, where a field no table names is forwarded as sent."""

NEUTRAL: dict[tuple[str, str], tuple[Any, ...]] = {
    (CHAT, "n"): (1,),
    (CHAT, "service_tier"): ("auto",),
    (CHAT, "store"): (False,),
    (CHAT, "modalities"): (["text"],),
    (CHAT, "logprobs"): (False,),
    (CHAT, "parallel_tool_calls"): (True,),
    (RESPONSES, "truncation"): ("disabled",),
    **{(RESPONSES, name): ([], {}) for name in _RESPONSES_ONLY},
    (CHAT, "thinking"): ({"type": "disabled"},),
}
"""Values that ask for nothing beyond every wire's default: they pass a wire that refuses the field."""

WIRE_FAMILY = {"lmstudio": "openai", "ollama-cloud": "ollama"}
"""Wire types whose requests are built by another wire's adapter, and so judged by its table."""


def route(shape: str, wire: str, name: str, *, bridged: bool = False) -> FieldRoute:
    """How `wire` honours `name` of a `shape` request. `bridged`: the request is another shape's,
    mapped to this one — nothing in it was written for this wire, so a field the wire would only
    forward as sent (a name it does not define, as `top_k` on the OpenAI wire) has no place there."""
    wire = WIRE_FAMILY.get(wire, wire)
    found = FIELD_TABLES[(shape, wire)].get(name)
    if found is None:
        found = FORWARDED if NATIVE.get(shape) == wire else REFUSED
    return REFUSED if bridged and found.how == "forwarded" else found


def refuse_fields(shape: str, wire: str, names: Iterable[str]) -> None:
    """`InvalidRequestError` naming the first of `names` the wire refuses."""
    for name in names:
        if route(shape, wire, name).how == "refused":
            _refuse(wire, name)


def _refuse(wire: str, name: str) -> None:
    raise InvalidRequestError(
        name,
        f"the {wire} wire has no equivalent of {name!r}: "
        "remove it, or choose a model served over another wire",
    )


def passed_fields(
    shape: str, wire: str, fields: Mapping[str, Any], *, bridged: bool = False
) -> dict[str, Any]:
    """The further fields of a request this wire forwards or maps, as sent; a neutral value (or
    `null`) is left out where the wire has no place for it, and a refused field raises
    (`refuse_fields`; `bridged` as for `route`)."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        how = route(shape, wire, name, bridged=bridged).how
        if how == "forwarded":
            out[name] = value
        elif value is None or value in NEUTRAL.get((shape, name), ()):
            continue  # asks for nothing: `null` (some clients send every field), or every wire's default
        elif how == "refused":
            _refuse(wire, name)
        else:
            out[name] = value
    return out


def bridge_refusals(shape: str, fields: Mapping[str, Any], unknown: str) -> list[tuple[str, str]]:
    """`(field, reason)` of each of `fields` (top-level, or a part as `reasoning.effort`) the shape's
    bridge cannot carry (`NativeBody.refused`): refused by its table, or not named there (`unknown`
    the reason) — unless it asks for nothing (`null`, or a neutral value)."""
    out: list[tuple[str, str]] = []
    for name, value in fields.items():
        fate = route(shape, BRIDGED, name)
        if fate.how == "refused" and value is not None and value not in NEUTRAL.get((shape, name), ()):
            out.append((name, fate.note or unknown))
    return out


def number_field(name: str, value: Any, low: float, high: float) -> float:
    """A mapped field's number, checked where the target wire would only fail later, or silently."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise InvalidRequestError(name, f"expected a number from {low:g} to {high:g}, got {value!r:.40}")
    return float(value)


def whole_number(name: str, value: Any, low: int) -> int:
    """A mapped field's integer (`top_k`, a thinking budget), at least `low`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidRequestError(name, f"expected an integer of at least {low}, got {value!r:.40}")
    return value


DYNAMIC_THINKING = -1
"""`thinking_budget` of Anthropic's `{"type": "adaptive"}` (the model decides how much to think):
Gemini's own "dynamic thinking" budget. Its thoughts count within `maxOutputTokens` (`max_tokens`),
the bound the gateway reserves, so the hold still covers thinking and answer together."""


def thinking_budget(wire: str, value: Any, max_tokens: int) -> int:
    """The token budget of a `thinking` field (Anthropic's `{"type": "enabled", "budget_tokens": N}`;
    `disabled` is neutral and never gets here), at most `max_tokens`: Anthropic counts the budget
    within `max_tokens`, the one output bound the gateway reserves (after `max_tokens_per_call`), so
    the hold covers thinking and answer together; `{"type": "adaptive"}` is `DYNAMIC_THINKING`. A 400
    names the part the wire cannot map."""
    if not isinstance(value, Mapping):
        raise InvalidRequestError("thinking", f"expected an object with a type, got {value!r:.40}")
    kind = value.get("type")
    for key in value:
        if key not in ("type", "budget_tokens") or (kind == "adaptive" and key == "budget_tokens"):
            _refuse(wire, f"thinking.{key}")
    if kind == "adaptive":
        return DYNAMIC_THINKING
    if kind != "enabled":
        raise InvalidRequestError(
            "thinking.type",
            f"the {wire} wire maps 'enabled' (with budget_tokens) or 'adaptive', got {kind!r:.40}",
        )
    return min(whole_number("thinking.budget_tokens", value.get("budget_tokens"), 1), max_tokens)


__all__ = [
    "BRIDGED",
    "CHAT",
    "FIELD_TABLES",
    "FORWARDED",
    "MESSAGES",
    "NATIVE",
    "NEUTRAL",
    "REFUSED",
    "RESPONSES",
    "WIRE_FAMILY",
    "FieldRoute",
    "bridge_refusals",
    "mapped",
    "number_field",
    "passed_fields",
    "refuse_fields",
    "refused",
    "route",
    "thinking_budget",
    "whole_number",
]
