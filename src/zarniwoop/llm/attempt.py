"""The attempts of a call: each candidate in the failover engine's order reserves its budgets, gets a
fresh client with its key over the shared pool, and is called through the decorator chain (the
middle of the call's three steps: prepare → attempt → finish).

Transient failures are retried and then fail over to the next candidate (`failover.py`); a final
failure is recorded (`finish.record_failure`) and raised — a per-minute refusal as
`RateLimitExceededError` with its `retry_after`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from ..contract.errors import FailoverError, QuotaBlockedError, QuotaExceededError, RateLimitExceededError
from ..limits.token_budgets import exhausted_error
from ..observability.tracing import TRACING
from .adapters import ChatClient, Endpoint, adapter_for
from .adapters.response import TokenUsage
from .chain import decorate
from .finish import finish_cut, finish_served, record_failure, secrets_of
from .prepare import model_doc, prepare_call
from .settlement import CANCELLED, release, release_first_hold, reserve
from .trace import TraceBuffer

if TYPE_CHECKING:
    from .adapters import ChatRequest
    from .adapters.response import ChatResponse
    from .call import CallParts, LlmCall, LlmResult, PreparedCall
    from .catalog import ModelDoc
    from .failover import Candidate, FailoverOutcome
    from .prepare import CallMemory
    from .settlement import Admission, CallWatch

_T = TypeVar("_T")


async def begin(
    parts: CallParts, call: LlmCall, request: ChatRequest, started: float, memory: CallMemory
) -> PreparedCall:
    """Prepare; when a budget leaves no candidate at all, record the refusal and raise it."""
    prep = await prepare_call(parts, call, request, memory, hold_first=True)
    if not prep.candidates:
        assert prep.blocked is not None
        error = exhausted_error(prep.blocked, prep.estimate)
        await record_failure(parts, prep, "blocked", error, (), (), started)
        raise error
    return prep


async def run(
    parts: CallParts, prep: PreparedCall, attempt: Callable[[Candidate], Awaitable[_T]], started: float
) -> FailoverOutcome[_T]:
    """The failover engine over the candidates; a final failure is recorded, then raised."""
    try:
        return await prep.engine.run(prep.candidates, attempt)
    except (QuotaBlockedError, FailoverError) as exc:
        outcome = "blocked" if isinstance(exc, QuotaExceededError) else "error"
        await record_failure(parts, prep, outcome, exc, exc.attempts, exc.switches, started)
        if isinstance(exc, QuotaBlockedError) and exc.retry_after is not None:
            raise RateLimitExceededError(exc.level, exc.retry_after, exc.message) from exc
        raise
    finally:
        await release_first_hold(parts, prep.first_hold)  # no attempt took it


def client_for(parts: CallParts, prep: PreparedCall, candidate: Candidate) -> ChatClient:
    """A fresh client with this candidate's key over the shared pool (well under 1 ms)."""
    endpoint = Endpoint(
        candidate.wire_type,
        candidate.instance,
        candidate.base_url,
        candidate.api_key,
        operator_key=candidate.credential_source == "operator",
        traceparent=TRACING.on
        and prep.settings.get_bool(f"ai.provider.{candidate.instance}.traceparent", False),
    )
    return ChatClient(
        adapter_for(prep.request, endpoint, prep.settings),
        endpoint,
        candidate.model,
        parts.http,
        timeout=prep.timeout,
        untrusted=candidate.untrusted,
        guarded=candidate.guarded,
    )


async def chat(parts: CallParts, prep: PreparedCall, watch: CallWatch | None, started: float) -> LlmResult:
    """The attempts of a non-streamed call, then its finish. `watch`: the caller's handle; a call it
    cut (abandoned past the drain time) is charged its whole reservation, its output being unknown."""

    async def attempt(
        candidate: Candidate,
    ) -> tuple[ChatResponse, Admission | None, TraceBuffer, ModelDoc | None]:
        admission = await reserve(parts, prep, candidate)
        try:
            doc = model_doc(prep, candidate)
            sink = TraceBuffer(secrets_of(candidate))
            model = decorate(
                client_for(parts, prep, candidate), doc, wire_name=candidate.model, trace_sink=sink
            )
            response = await model.chat(prep.request)
        except asyncio.CancelledError:
            if watch is not None and watch.cut:  # the upstream worked until now: its output is unknown
                estimate = TokenUsage(prep.request.estimated_input_tokens(), prep.request.max_tokens)
                await finish_cut(parts, prep, candidate, admission, estimate, CANCELLED, started)
            else:
                await release(parts, admission)
            raise
        except BaseException:
            await release(parts, admission)
            raise
        if watch is not None:
            watch.settling()
        return response, admission, sink, doc

    outcome = await run(parts, prep, attempt, started)
    response, admission, sink, doc = outcome.value
    abandoned = watch is not None and watch.abandoned
    return await finish_served(
        parts,
        prep,
        outcome,
        response,
        admission=admission,
        sink=sink,
        doc=doc,
        started=started,
        abandoned=abandoned,
    )
