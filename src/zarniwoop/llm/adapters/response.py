"""The chat response every adapter produces, whatever the wire: text, tool calls, reasoning.

Chat adapters (one per wire type) turn a provider's answer into a `ChatResponse`; the trace layer
records it as it came (raw); the sanitizer (`sanitize`) returns a cleaned copy — inline tool-call
markup turned into `ToolCall`s, think blocks moved into `reasoning` — so callers never learn which
model needed which repair.

Tool-call arguments stay a JSON *string* (as OpenAI sends them): the sanitizer repairs strings
some models get wrong, and adapters of object-valued wires (Anthropic, Gemini, Ollama) serialise
with `ToolCall.create(id, name, {...})`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ...contract.errors import ParseError
from .signatures import split_id


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    """A JSON object as text, e.g. `'{"city": "Paris"}'`."""

    @classmethod
    def create(cls, id: str, name: str, arguments: Mapping[str, Any]) -> ToolCall:
        return cls(id, name, json.dumps(dict(arguments), ensure_ascii=False))

    @property
    def signature(self) -> str | None:
        """Gemini's thought signature for this call, carried in its id (`signatures.py`); None
        for every other wire's call, and for Gemini's unsigned ones."""
        return split_id(self.id).signature

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; `ParseError` when they are not a JSON object."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ParseError(f"tool call {self.name!r}: arguments are not JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise ParseError(f"tool call {self.name!r}: arguments are not a JSON object")
        return value


@dataclass(frozen=True, slots=True)
class TokenUsage:
    input: int = 0
    output: int = 0
    refused: str | None = None
    """What made the upstream's report unusable as it came (`prompt_tokens: 'abc'`); the counts are
    then meaningless and the call is charged the gateway's estimate (`llm/usage_check.py`)."""

    @property
    def total(self) -> int:
        return self.input + self.output


class UsageReport:
    """Reads the counts of one usage object an upstream sent, as data to check, not to trust: a count
    is a JSON integer or the report is refused (`TokenUsage.refused`), never an exception — a paid
    answer is not thrown away, nor failed over, for a junk `usage` (issue 43). Ranges (negative,
    10**30, past the model's limits) are judged once, later, by `usage_check.check_usage`.

        report = UsageReport(data["usage"])
        usage = report.usage(report.count("prompt_tokens"), report.count("completion_tokens"))
    """

    __slots__ = ("raw", "refused")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.refused: str | None = None

    def count(self, name: str, *, required: bool = True) -> int:
        """The count `name`; 0 when absent and not `required`. Anything but an integer (a string, a
        fraction, a boolean, an absent required count) refuses the report and reads as 0."""
        value = self.raw.get(name)
        if type(value) is int:  # not bool, not 1.5, not "12"
            return value
        if value is None and not required:
            return 0
        if self.refused is None:
            self.refused = f"{name}: {'absent' if value is None else repr(value)[:40]}"
        return 0

    def has(self, name: str) -> bool:
        return self.raw.get(name) is not None

    def usage(self, input: int, output: int) -> TokenUsage:
        return TokenUsage(input, output, self.refused)


_LENGTH = frozenset({"length", "max_tokens", "max_output_tokens"})
_FILTERED = frozenset({"content_filter", "safety", "recitation", "refusal"})


@dataclass(frozen=True, slots=True)
class ChatResponse:
    text: str = ""
    """What the model said to the user (after sanitizing: without markup)."""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    """The model's thinking, when the wire or its markup separates it from the answer."""
    finish_reason: str | None = None
    model: str | None = None
    """The model name the provider reported, if any."""
    usage: TokenUsage | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """Provider extras an adapter wants to pass on (request id, rate-limit headers, …)."""

    def with_changes(self, **changes: Any) -> ChatResponse:
        return replace(self, **changes)

    @property
    def cut_short(self) -> Literal["length", "filtered"] | None:
        """Why the answer stopped early, whatever word its wire used: `length` (the token limit:
        `length`, `max_tokens`, `MAX_TOKENS`, …), `filtered` (a safety filter or a refusal); None
        when it did not. Each gateway shape says it in its own vocabulary."""
        word = (self.finish_reason or "").lower()
        if word in _LENGTH:
            return "length"
        return "filtered" if word in _FILTERED else None

    @property
    def ending(self) -> Literal["tools", "length", "filtered"] | None:
        """How the answer ended, for a gateway shape to name in its vocabulary: `tools` (it calls
        tools), else `cut_short`; None when it simply stopped."""
        return "tools" if self.tool_calls else self.cut_short
