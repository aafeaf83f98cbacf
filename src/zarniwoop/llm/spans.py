"""LLM calls as OpenTelemetry spans in the GenAI semantic conventions (docs/observability.md).

`LlmSpans` is an observer (`observers.py`): at a call's end it writes the call's span — `chat
<model>`, CLIENT, `gen_ai.*` with the token counts the upstream reported, plus Zarniwoop's cost,
budget level and key source — and one `zarniwoop.llm.attempt` child per upstream attempt, timed
from the usage record (each attempt's wait and duration, in order). Nothing on the call's own
path changes, so the call pays one attribute read when tracing is off.

Prompts and completions go into the span (`gen_ai.input.messages`, `gen_ai.output.messages`) only
where the scope opted in with `observability.traces.content: true`.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from ..config.keys import TRACE_CONTENT
from ..observability.tracing import TRACING, SpanKind, set_error, start_span_at

if TYPE_CHECKING:
    from .observers import CallEvent

PROVIDER_NAMES = {"openai": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini", "ollama": "ollama"}
"""`gen_ai.provider.name` of each wire (the convention's well-known values); others as they are named."""

_MS = 1_000_000


class LlmSpans:
    """Writes each finished call's GenAI span and its attempts' spans (only with `TRACING.on`)."""

    async def on_call(self, event: CallEvent) -> None:
        if TRACING.on:
            write_call_spans(event, time.time_ns())

    async def flush(self) -> None:
        """Nothing is deferred."""


def write_call_spans(event: CallEvent, end_ns: int) -> None:
    record = event.record
    start_ns = end_ns - record.duration_ms * _MS
    call = start_span_at(
        f"chat {record.model}", _call_attributes(event), start_ns, kind=SpanKind.CLIENT, parent=None
    )
    at = start_ns
    for attempt in record.attempts:
        at += attempt.waited_ms * _MS
        child = start_span_at(
            f"chat {attempt.model}",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": PROVIDER_NAMES.get(record.provider, record.provider),
                "gen_ai.request.model": attempt.model,
                "zarniwoop.llm.instance": attempt.instance,
                "zarniwoop.llm.attempt.outcome": attempt.outcome,
                "zarniwoop.llm.attempt.waited_ms": attempt.waited_ms,
                "http.response.status_code": attempt.status,
            },
            at,
            kind=SpanKind.CLIENT,
            parent=call,
        )
        if attempt.outcome != "ok":
            set_error(_cause(attempt.status, attempt.outcome), target=child)
        at += attempt.duration_ms * _MS
        child.end(end_time=min(at, end_ns))
    if record.outcome not in ("ok",):
        set_error(record.outcome, target=call)
    call.end(end_time=end_ns)


def _call_attributes(event: CallEvent) -> dict[str, Any]:
    record = event.record
    out: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDER_NAMES.get(record.provider, record.provider),
        "gen_ai.request.model": record.model,
        "gen_ai.usage.input_tokens": record.tokens_input,
        "gen_ai.usage.output_tokens": record.tokens_output,
        "zarniwoop.llm.instance": record.instance,
        "zarniwoop.llm.purpose": record.purpose,
        "zarniwoop.llm.outcome": record.outcome,
        "zarniwoop.llm.usage_id": record.id,
        "zarniwoop.llm.failovers": len(record.failover),
        "zarniwoop.cost_usd": record.cost_usd,
        "zarniwoop.credential_source": record.credential_source,
        "zarniwoop.budget.level": _budget_level(event),
        "zarniwoop.tenant.id": record.tenant,
        "zarniwoop.project.id": record.project,
        "zarniwoop.account.id": record.account,
    }
    response = event.response
    if response is not None:
        out["gen_ai.response.model"] = response.model or record.model
        if response.finish_reason:
            out["gen_ai.response.finish_reasons"] = (response.finish_reason,)
    if event.request is not None:
        out["gen_ai.request.max_tokens"] = event.request.max_tokens
        if event.settings is not None and event.settings.get_bool(TRACE_CONTENT, False):
            out.update(_content(event))
    return out


def _budget_level(event: CallEvent) -> str | None:
    """The level whose budget is fullest after the call (the one that refused it, when blocked)."""
    if event.blocked is not None:
        return event.blocked.line.level
    filled = [s for s in event.quota if s.percent is not None]
    return max(filled, key=lambda s: s.percent or 0.0).line.level if filled else None


def _content(event: CallEvent) -> dict[str, str]:
    assert event.request is not None
    messages = [{"role": m.role, "content": m.content} for m in event.request.messages]
    out = {"gen_ai.input.messages": json.dumps(messages, ensure_ascii=False)}
    if event.response is not None:
        out["gen_ai.output.messages"] = json.dumps(
            [{"role": "assistant", "content": event.response.text}], ensure_ascii=False
        )
    return out


def _cause(status: int | None, outcome: str) -> str:
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "auth"
    return "http" if status else outcome


__all__ = ["PROVIDER_NAMES", "LlmSpans", "write_call_spans"]
