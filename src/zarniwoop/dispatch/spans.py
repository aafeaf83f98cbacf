"""The search's spans (docs/observability.md): `zarniwoop.search` around one dispatch, and a
`zarniwoop.search.attempt` child per candidate — a call's span lasts as long as the call (pacing
wait included), a skip's is an instant.

Called only when `TRACING.on` (the callers check it), so a process without tracing builds none of
these attributes. The query goes into a span only as its SHA-256 (the audit's hash), unless the
scope opted in with `observability.traces.content: true`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..config.keys import TRACE_CONTENT
from ..contract.enums import Outcome
from ..observability.metrics import dispatch_outcome
from ..observability.tracing import event_span, set_attributes, set_error, span
from ..storage.privacy import query_hash

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from ..config.settings import ScopedSettings
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchRequest, SearchScope
    from ..contract.results import Attempt, SearchResult
    from .search_run import SearchRun


_ATTEMPT: ContextVar[str | None] = ContextVar("zarniwoop_attempt_span", default=None)
"""The instance whose attempt span is current: its skip (quota, pacing) is told to that span."""


def scope_attributes(scope: SearchScope) -> dict[str, str]:
    """The ids a backend filters a tenant's spans by."""
    return {"zarniwoop.tenant.id": scope.tenant, "zarniwoop.project.id": scope.project}


def query_attributes(query: str, settings: ScopedSettings) -> dict[str, str]:
    """`zarniwoop.query.sha256` always; the plaintext `zarniwoop.query` only where the scope opted in."""
    out = {"zarniwoop.query.sha256": query_hash(query)}
    if settings.get_bool(TRACE_CONTENT, False):
        out["zarniwoop.query"] = query
    return out


@contextmanager
def search_span(request: SearchRequest, scope: SearchScope, settings: ScopedSettings) -> Iterator[Span]:
    attributes: dict[str, Any] = {
        "zarniwoop.modality": request.modality.value,
        "zarniwoop.tier": request.tier.value,
        "zarniwoop.profile": request.profile,
        "zarniwoop.pinned_provider": request.pinned_provider_id,
        **scope_attributes(scope),
        **query_attributes(request.query, settings),
    }
    with span("zarniwoop.search", attributes) as current:
        yield current


def close_search(current: Span, result: SearchResult) -> None:
    """The answer's summary on the search span; a search no provider answered is an error with the
    one-word cause of the last failure (`dispatch_outcome` when nothing was called)."""
    outcome = dispatch_outcome(result)
    set_attributes(
        {
            "zarniwoop.search.outcome": outcome,
            "zarniwoop.provider.instance": result.provider_instance_id,
            "zarniwoop.cached": result.cached,
            "zarniwoop.hits": len(result.hits),
            "zarniwoop.attempts": len(result.attempts),
        },
        current,
    )
    if result.error_message is not None and not result.hits:
        causes = [a.cause for a in result.attempts if a.cause and not a.outcome.is_skip]
        set_error(causes[-1] if causes else outcome, outcome, current)


def note_coalesced() -> None:
    """This search shared another identical search's upstream walk."""
    set_attributes({"zarniwoop.coalesced": True})


@contextmanager
def attempt_span(run: SearchRun, instance: ProviderInstance) -> Iterator[None]:
    with span("zarniwoop.search.attempt", _attempt_base(run, instance)):
        token = _ATTEMPT.set(instance.id)
        try:
            yield
        finally:
            _ATTEMPT.reset(token)


def _attempt_base(run: SearchRun, instance: ProviderInstance) -> dict[str, Any]:
    return {
        "zarniwoop.provider.instance": instance.id,
        "zarniwoop.provider.protocol": instance.protocol.id,
        "zarniwoop.modality": run.request.modality.value,
        "zarniwoop.tier": run.request.tier.value,
        "zarniwoop.hedged": run.raced,
        **scope_attributes(run.scope),
    }


def note_attempt(run: SearchRun, instance: ProviderInstance, attempt: Attempt, hits: int) -> None:
    """An attempt recorded: on its call's span, or an instant span of its own for a skip."""
    attributes: dict[str, Any] = {
        "zarniwoop.attempt.outcome": attempt.outcome.value,
        "zarniwoop.cause": attempt.cause,
        "zarniwoop.attempt.duration_ms": attempt.duration_ms,
        "zarniwoop.attempt.panic": attempt.panic or None,
        "zarniwoop.attempt.cooldown_skip": attempt.outcome is Outcome.SKIPPED_COOLDOWN,
        "zarniwoop.hits": hits,
    }
    if _ATTEMPT.get() != instance.id:
        event_span("zarniwoop.search.attempt", {**_attempt_base(run, instance), **attributes})
        return
    set_attributes(attributes)
    if attempt.outcome in (Outcome.HARD_ERROR, Outcome.TIMEOUT, Outcome.SOFT_ERROR):
        set_error(attempt.cause or attempt.outcome.value)


def note_status(error: BaseException) -> None:
    """The upstream's HTTP status of a failed call, where it answered one."""
    status = getattr(error, "status", None)
    if isinstance(status, int):
        set_attributes({"http.response.status_code": status})


__all__ = [
    "attempt_span",
    "close_search",
    "note_attempt",
    "note_coalesced",
    "note_status",
    "query_attributes",
    "scope_attributes",
    "search_span",
]
