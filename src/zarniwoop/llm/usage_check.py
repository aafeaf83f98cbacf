"""Upstream usage is data to check, not to trust (issue 43): the one place that decides how many
tokens a call is charged, and the gateway's own estimate of them.

An upstream — and a tenant admin can point a tenant-level base URL at a server of their own — may
report any usage at all: `10**30` (an `OverflowError` in the settle, holds left for their TTL),
`-1000000` (a negative row, a budget charged nothing), `"abc"` or `1.5`, or nothing. Each count must
be a non-negative integer below a bound: `CALL_TOKEN_BOUND` (10 M) per call, or the model's context
window plus its output limit where the catalog knows them. Anything else is replaced by the
gateway's estimate of the call — the prompt (`ChatRequest.estimated_input_tokens`) plus everything
it produced: text, reasoning and tool-call arguments, ≈ 4 characters a token (`estimate_tokens`, the
same count a cut stream is charged by, `delta_chars`) — and the usage row says so
(`llm_usage_records.usage_estimated`).

    checked = check_usage(response.usage, lambda: estimated_usage(request, response), bound=usage_bound(doc))
    checked.usage       # what is charged and recorded
    checked.estimated   # True: the counts are the gateway's, not the upstream's
    checked.reason      # why the report was not taken ("prompt_tokens: 10**30 is past the bound …"), or None

Every route settles through `finish.finish`, which calls this; a route with an answer of its own
shape (not a `ChatResponse`) counts what it produced with `produced_chars` and calls `check_usage`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .adapters.response import TokenUsage

if TYPE_CHECKING:
    from .adapters import ChatRequest, StreamDelta
    from .adapters.response import ChatResponse, ToolCall
    from .catalog import ModelDoc

CALL_TOKEN_BOUND = 10_000_000
"""No count of one call reaches this (the largest context windows are ~2 M): past it, the report is junk."""


@dataclass(frozen=True, slots=True)
class CheckedUsage:
    usage: TokenUsage
    """What the call is charged and recorded with: bounded, non-negative integers."""
    estimated: bool
    """The counts are the gateway's estimate: the upstream reported none, or none it could take."""
    reason: str | None = None
    """Why the upstream's report was refused (None when it was taken, or none came)."""


def estimate_tokens(chars: int) -> int:
    """The wire's token estimate of `chars` characters of generated text: ≈ 4 characters a token, at
    least 1 for any text."""
    return max(1, chars // 4) if chars else 0


def produced_chars(text: str = "", tool_calls: Iterable[ToolCall] = (), reasoning: str | None = None) -> int:
    """How many characters of output an answer (or a piece of one) carries: text, reasoning, and each
    tool call's name and arguments."""
    return len(text) + len(reasoning or "") + sum(_call_chars(c) for c in tool_calls)


def delta_chars(delta: StreamDelta) -> int:
    """`produced_chars` of one streamed piece (text, reasoning, or a tool call), on every delta of
    every stream: kept to a length or two."""
    call = delta.tool_call
    return len(delta.text) if call is None else _call_chars(call)


def _call_chars(call: ToolCall) -> int:
    return len(call.name) + len(call.arguments)


def estimated_usage(request: ChatRequest, response: ChatResponse) -> TokenUsage:
    """The gateway's own count of a whole answer: the prompt's estimate plus everything produced."""
    produced = produced_chars(response.text, response.tool_calls, response.reasoning)
    return TokenUsage(request.estimated_input_tokens(), estimate_tokens(produced))


def usage_bound(doc: ModelDoc | None) -> int:
    """The largest count one call of this model can report: its context window plus its output limit
    where the catalog knows them (never more than `CALL_TOKEN_BOUND`)."""
    if doc is None or not doc.context_window_tokens:
        return CALL_TOKEN_BOUND
    return min(CALL_TOKEN_BOUND, doc.context_window_tokens + (doc.default_max_output_tokens or 0))


def check_usage(
    reported: TokenUsage | None,
    estimate: TokenUsage | Callable[[], TokenUsage],
    *,
    bound: int = CALL_TOKEN_BOUND,
) -> CheckedUsage:
    """The usage a call is charged: `reported` when each count is a non-negative integer at most
    `bound` (the adapters already refused what was not an integer, `UsageReport`), else `estimate`
    (itself clamped to the bound) with the reason. `estimate` may be a function, called only then
    (every call checks; few need the estimate). Never raises."""
    if reported is not None and reported.refused is None:
        problem = _out_of_bounds("input", reported.input, bound) or _out_of_bounds(
            "output", reported.output, bound
        )
        if problem is None:
            return CheckedUsage(reported, False)
    else:
        problem = reported.refused if reported is not None else None
    if callable(estimate):
        estimate = estimate()
    clamped = TokenUsage(min(max(0, estimate.input), bound), min(max(0, estimate.output), bound))
    return CheckedUsage(clamped, True, problem)


def _out_of_bounds(name: str, value: int, bound: int) -> str | None:
    if value < 0:
        return f"{name} tokens {value} is negative"
    if value > bound:
        shown = str(value) if value < 10**15 else f"a {len(str(value))}-digit number"
        return f"{name} tokens {shown} is past the bound of {bound:,} for one call"
    return None


__all__ = [
    "CALL_TOKEN_BOUND",
    "CheckedUsage",
    "check_usage",
    "delta_chars",
    "estimate_tokens",
    "estimated_usage",
    "produced_chars",
    "usage_bound",
]
