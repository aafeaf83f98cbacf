"""One candidate's call: pacing slot → quota → the request → what its outcome means.

The pacing slot must come within the attempt's share of the search's time
(`dispatch/pacing_share.py`); the quota is reserved only after that wait, right before the request
goes out; the audit hears of the call when it starts (`on_call_started`). Then the verdict: a
success (≥1 hit, no error) wins and clears the subject's failure streak; a soft failure or an empty
answer moves on without cooldown; a hard failure or a timeout moves on and benches
`research:<instance>:<modality>`; a call cancelled mid-flight — a hedged loser, or cut by the
deadline — is recorded as a timeout (`cut`). Every call is recorded exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING

from ..config import keys as K
from ..contract.enums import Outcome
from ..contract.errors import ProviderError, ProviderTimeoutError, RateLimitedError, ZarniwoopError
from ..contract.filters import NO_FILTERS
from ..contract.results import Attempt
from ..observability.tracing import TRACING
from ..storage.privacy import redact_query
from ..transport.network import target_of
from .failures import cause_of
from .filtering import apply_filters
from .gate import GateDecision
from .hedging import LOSSES_TO_BENCH
from .pacing_share import share_of_time, wait_for_pace
from .reachability import MemoryReachability
from .search_run import Call
from .spans import attempt_span, note_status

if TYPE_CHECKING:
    from ..contract.protocol import ProviderInstance
    from ..contract.results import SearchResult
    from .search_run import Candidate, SearchRun

log = logging.getLogger(__name__)

CUT_BENCH_TIMEOUT = 0.5
"""How long a call cancelled by the deadline may spend benching itself in the cooldown store."""


async def call_candidate(run: SearchRun, candidate: Candidate, queue: list[Candidate]) -> SearchResult | None:
    """`_call_candidate` in the candidate's attempt span when tracing is on."""
    if TRACING.on:
        with attempt_span(run, candidate.instance):
            return await _call_candidate(run, candidate, queue)
    return await _call_candidate(run, candidate, queue)


async def _call_candidate(
    run: SearchRun, candidate: Candidate, queue: list[Candidate]
) -> SearchResult | None:
    """One candidate: pacing slot → quota → provider call. Returns the result when it wins (≥1 hit,
    no error) and records an attempt always. A pacing slot that would not come in this attempt's
    share of the time is `skipped_paced` at once; the quota is reserved only after the wait, right
    before the request goes out; the audit hears of the call when it starts (`on_call_started`)."""
    dispatcher = run.dispatcher
    instance, config = candidate.instance, candidate.instance.config
    share = share_of_time(run, queue)
    begin = dispatcher.clock.monotonic()
    if not await wait_for_pace(run, instance, share):
        return None
    quota = dispatcher.quota
    if quota is not None and not await quota.reserve(run.scope, instance, run.request.modality):
        run.skip(instance, GateDecision(Outcome.SKIPPED_EXHAUSTED, "quota exhausted"))
        return None
    budget = share - (dispatcher.clock.monotonic() - begin)
    timeout = max(0.001, min(config.timeout_ms / 1000, budget))
    cut_by_deadline = timeout < config.timeout_ms / 1000 and not any(c.decision.allowed for c in queue)
    subject = K.cooldown_subject(instance.id, run.request.modality)
    call = Call(instance, subject, uuid.uuid4().hex, begin, candidate.panic)
    run.notify_started(call)
    dispatcher.hedges.started(run.scope, instance.id, call.call_id)
    try:
        return await _send(run, candidate, call, timeout, cut_by_deadline)
    finally:
        run.dispatcher.hedges.ended(run.scope, instance.id, call.call_id)
        if call.call_id not in run.recorded:  # cancelled while benching: still one attempt per call
            attempt = Attempt(
                instance.id, Outcome.TIMEOUT, "deadline reached", run.elapsed_ms(begin), echoed=()
            )
            run.record_cut(instance, attempt, call.call_id)


async def _send(
    run: SearchRun, candidate: Candidate, call: Call, timeout: float, cut_by_deadline: bool
) -> SearchResult | None:
    """The request itself, and what its outcome means: bench, record, win or move on."""
    instance, subject, begin = call.instance, call.subject, call.begin
    try:
        async with asyncio.timeout(timeout):
            result = await instance.search(run.request, run.scope, timeout=timeout)
        if run.request.filters is not NO_FILTERS:
            result = apply_filters(run.request, result, instance.protocol.id)
    except (TimeoutError, ProviderTimeoutError) as exc:
        if isinstance(exc, ProviderTimeoutError):
            error: BaseException = exc
        elif cut_by_deadline:
            error = ProviderTimeoutError("deadline reached")
            run.note_deadline()
        else:
            error = ProviderTimeoutError(f"no answer{_from(instance)} within {timeout * 1000:.0f} ms")
        await _fail(run, call, error, Outcome.TIMEOUT)
        return None
    except ProviderError as exc:
        await _fail(run, call, exc, Outcome.HARD_ERROR)
        return None
    except asyncio.CancelledError:
        await _cut(run, call)
        raise
    except Exception as exc:  # an add-on instance's bug: a hard failure, not a crash
        log.warning("provider %s raised %s", instance.id, type(exc).__name__, exc_info=True)
        await _fail(run, call, exc, Outcome.HARD_ERROR)
        return None
    dispatcher = run.dispatcher
    duration = run.elapsed_ms(begin)
    dispatcher.hedges.answered(run.scope, subject, instance.id, duration / 1000)
    if candidate.cooldown is not None:  # a success clears the failure streak
        try:
            await dispatcher.cooldowns.record_success(run.scope, subject)
        except Exception as exc:
            dispatcher.cooldown_outage.failed(exc, "cooldowns are not honoured until it is back")
    if result.quota is not None and dispatcher.quota is not None:
        await dispatcher.quota.observe(run.scope, instance, run.request.modality, result.quota)
    if result.backoff_seconds:
        await _honour_backoff(run, instance, result.backoff_seconds)
    message: str | None
    if result.error_message:
        outcome, message = Outcome.SOFT_ERROR, result.error_message
    elif not result.hits:
        outcome, message = Outcome.EMPTY, result.note
    else:
        outcome, message = Outcome.SUCCESS, None
    attempt = Attempt(instance.id, outcome, message, duration, call.panic)
    run.record(instance, attempt, len(result.hits), call.call_id)
    await _share_outcome(run, instance.id)
    if outcome is Outcome.SUCCESS:
        return result
    if run.soft is None or (result.note and not run.soft.note):
        run.soft = result
    return None


async def _cut(run: SearchRun, call: Call) -> None:
    """A call cancelled mid-flight: a hedged loser (no verdict on the instance, unless a later
    call overtook it `LOSSES_TO_BENCH` times in a row: then it is benched like a timeout), or cut
    by the search's deadline — benched like a timeout, so the next search does not pay for it
    again."""
    reason = run.cut_reasons.pop(call.instance.id, None)
    attempt = Attempt(
        call.instance.id,
        Outcome.TIMEOUT,
        reason or "deadline reached",
        run.elapsed_ms(call.begin),
        echoed=(),
    )
    if reason is not None:
        if call.instance.id in run.overtaken and run.dispatcher.hedges.lost(run.scope, call.subject):
            await _bench_cut(run, call, f"lost {LOSSES_TO_BENCH} hedges in a row")
        run.record_cut(call.instance, attempt, call.call_id)
        return
    run.note_deadline()
    await _bench_cut(run, call, "deadline reached")
    run.record(call.instance, attempt, 0, call.call_id)


async def _bench_cut(run: SearchRun, call: Call, reason: str) -> None:
    with contextlib.suppress(Exception):  # bounded: a cancelled call must not hold up its search
        async with asyncio.timeout(CUT_BENCH_TIMEOUT):
            await _bench(run, call, ProviderTimeoutError(reason))


async def _bench(run: SearchRun, call: Call, error: BaseException) -> None:
    message = _message_of(error)
    # The reason is persisted (cooldown store): never with the query in it.
    reason = redact_query(message, run.request.query, _echoed_of(error)) or type(error).__name__
    dispatcher = run.dispatcher
    try:
        await dispatcher.cooldowns.record_failure(
            run.scope, call.subject, error, reason, dispatcher.clock.now()
        )
    except Exception as exc:  # the cooldown store failing must not fail the search
        dispatcher.cooldown_outage.failed(exc, "cooldowns are not set until it is back")


async def _fail(run: SearchRun, call: Call, error: BaseException, outcome: Outcome) -> None:
    if TRACING.on:
        note_status(error)
    await _bench(run, call, error)
    message = _message_of(error)
    attempt = Attempt(
        call.instance.id,
        outcome,
        message,
        run.elapsed_ms(call.begin),
        call.panic,
        _echoed_of(error),
        cause_of(error),
    )
    run.record(call.instance, attempt, 0, call.call_id)
    await _share_outcome(run, call.instance.id)


async def _honour_backoff(run: SearchRun, instance: ProviderInstance, seconds: float) -> None:
    """The provider asked for a pause (Stack Exchange `backoff`): bench the instance for that long.

    The pause is per API method, and every modality of an instance calls the same method, so
    each of its modalities is benched — the one exception to modality-isolated cooldowns."""
    dispatcher = run.dispatcher
    pause = RateLimitedError(seconds, f"the provider asked for a {seconds:g} s backoff")
    now = dispatcher.clock.now()
    for modality in sorted(instance.protocol.modalities, key=lambda m: m.value):
        subject = K.cooldown_subject(instance.id, modality)
        try:
            await dispatcher.cooldowns.record_failure(run.scope, subject, pause, pause.message, now)
        except Exception as exc:
            dispatcher.cooldown_outage.failed(exc, "cooldowns are not set until it is back")
            return


async def _share_outcome(run: SearchRun, instance_id: str) -> None:
    """Publish this process's last outcome to a shared reachability store (Redis), if any."""
    dispatcher = run.dispatcher
    if isinstance(dispatcher.reachability, MemoryReachability):
        return
    outcome = dispatcher.last_outcomes.get((run.scope, instance_id))
    if outcome is None:
        return
    try:
        await dispatcher.reachability.record(run.scope, instance_id, outcome)
    except Exception as exc:
        dispatcher.cooldown_outage.failed(exc, "reachability is not shared until it is back")


def _message_of(error: BaseException) -> str:
    return (error.message if isinstance(error, ZarniwoopError) else str(error)) or type(error).__name__


def _from(instance: ProviderInstance) -> str:
    """` from host:port` of an instance's base URL, for a timeout's message; empty without one."""
    base_url = getattr(getattr(instance, "config", None), "base_url", None)
    if not base_url:
        return ""
    host, port = target_of(base_url)
    return f" from {host}:{port}"


def _echoed_of(error: BaseException) -> tuple[str, ...] | None:
    """What of the error's message came from outside; an exception not ours: all of it may have."""
    if isinstance(error, ZarniwoopError):
        return error.echoed
    return None
