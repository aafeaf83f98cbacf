"""What happens after an LLM call, told to observers (as the dispatcher tells `DispatchObserver`s).

The manager settles the budgets and writes the `llm_usage_records` row itself (that is correctness,
not observation: both in one transaction when they share the database) and then hands one
`CallEvent` to each observer in order:

    TraceRecorder     the raw trace, when `ai.trace.persist`
    LlmMetrics        `zarniwoop_llm_calls_total`, `zarniwoop_llm_tokens_total`
    QuotaNotifier     threshold notices (log + webhook) — scheduled, never awaited in the call

An observer's `on_call` is awaited on the call's path, so it must be quick; anything slow (a
webhook POST) is scheduled and finished by `flush()`, which `aclose()` calls. An observer that
raises is logged and skipped: bookkeeping never breaks the call it reports on.

    manager = LlmManager(..., observers=[TraceRecorder(db), LlmMetrics(), my_observer])
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..observability.metrics import record_llm_call

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings
    from ..ledger import UsageRecord
    from ..limits.token_budgets import LineStatus
    from ..storage.db import Database
    from .adapters import ChatRequest
    from .adapters.response import ChatResponse
    from .trace import TraceBuffer

log = logging.getLogger("zarniwoop.llm")


@dataclass(frozen=True, slots=True)
class CallEvent:
    """One finished call — successful, failed or blocked — as its observers see it."""

    record: UsageRecord
    """The usage record (provider, model, tokens, cost, key source, failover, attempts)."""
    quota: tuple[LineStatus, ...] = ()
    """Every quota line after the settle; empty when nothing was charged."""
    webhook_url: str | None = None
    """`ai.quota.webhookUrl` of the call's scope."""
    webhook_guarded: bool = False
    """The webhook's URL is not the operator's: its POST passes the SSRF policy."""
    trace: TraceBuffer | None = None
    """The raw exchange, when the scope persists traces."""
    request: ChatRequest | None = None
    """The request as sent, for the GenAI span (`spans.py`)."""
    response: ChatResponse | None = None
    """The upstream's answer (its model and finish reason), when one came."""
    settings: ScopedSettings | None = None
    """The call's scope settings (`observability.traces.content`)."""
    blocked: LineStatus | None = None
    """The budget line that refused the call, when one did."""


class LlmObserver(Protocol):
    """Told about every finished LLM call; `flush` finishes what `on_call` scheduled."""

    async def on_call(self, event: CallEvent) -> None: ...

    async def flush(self) -> None: ...


class TraceRecorder:
    """Writes the raw trace of a call whose scope persists traces (`ai.trace.persist`), beside the
    usage record the manager wrote with the charge."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def on_call(self, event: CallEvent) -> None:
        if event.trace is None:
            return
        record = event.record
        await event.trace.flush(
            self.db,
            usage_id=record.id,
            tenant=record.tenant,
            project=record.project,
            provider=record.provider,
            instance=record.instance,
            model=record.model,
        )

    async def flush(self) -> None:
        """Nothing is deferred."""


class LlmMetrics:
    """Feeds the Prometheus LLM counters (labels stay low-cardinality: no tenant, no ids)."""

    async def on_call(self, event: CallEvent) -> None:
        record = event.record
        record_llm_call(
            record.provider,
            record.instance,
            record.purpose,
            record.outcome,
            input_tokens=record.tokens_input,
            output_tokens=record.tokens_output,
        )

    async def flush(self) -> None:
        """Nothing is deferred."""


async def notify_all(observers: tuple[LlmObserver, ...], event: CallEvent) -> None:
    for observer in observers:
        try:
            await observer.on_call(event)
        except Exception:  # an observer must never break the call it reports on
            log.exception("LLM call observer %s failed", type(observer).__name__)
