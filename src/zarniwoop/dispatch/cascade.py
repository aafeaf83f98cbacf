"""The walk: one search over the ordered cascade of a scope's candidates (DESIGN §5).

The candidates and the panic choice are pure rules (`dispatch/ordering.py`); this module walks them.
EXPERT with `pinnedProviderId` calls that instance only (inside the profile's cascade, when the
search routes through one). Each candidate passes the gate (`dispatch/gate.py`: supported,
enabled, keyed, available, not cooling down); a "no" is a skip, recorded, costing no time. When
every candidate is cooling down, the one whose cooldown ends first is tried once anyway (panic
mode). NORMAL walks the rest in order — the first success with at least one hit wins — awaiting
each call in turn, or racing a slow one with the next when hedging applies (`dispatch/race.py`).
Nothing outlives `research.deadlineMs`. Without a winner, the result names each candidate's
reason.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..config import keys as K
from ..contract.enums import Outcome, Tier
from ..contract.errors import InvalidRequestError, UnknownNameError
from ..contract.results import Attempt, RoutedProfile, SearchResult
from ..limits.clock import utc_date
from .failures import summarize, with_cause
from .gate import GO, check_cooldown, check_filters, check_static
from .ordering import order_candidates, panic_choice
from .provider_call import call_candidate
from .race import hedged_race, races
from .search_run import Candidate, SearchRun

if TYPE_CHECKING:
    from ..config.profiles import Profile
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchRequest, SearchScope
    from .dispatcher import Dispatcher
    from .factory import ProviderSet


async def walk(
    dispatcher: Dispatcher,
    request: SearchRequest,
    scope: SearchScope,
    provider_set: ProviderSet,
    profile: Profile | None = None,
) -> SearchResult:
    """The search's answer from its candidates, under `research.deadlineMs`."""
    settings = provider_set.settings
    deadline_s = settings.get_int(K.DEADLINE_MS, 20000) / 1000
    if request.today is None:  # protocols get "today" from our clock, never read one themselves
        request = request.on(utc_date(dispatcher.clock.now()))
    run = SearchRun(
        dispatcher, request, scope, deadline=dispatcher.clock.monotonic() + deadline_s, deadline_s=deadline_s
    )
    if request.resume is not None:  # a page cursor resumes where its page came from, nowhere else
        candidates = [_resumed(request.resume.instance_id, provider_set)]
    elif request.tier is Tier.EXPERT and request.pinned_provider_id:
        candidates = [_pinned(request, provider_set, profile)]
    else:
        locale = request.locale or request.expert_params.get("language")
        candidates = order_candidates(provider_set, request.modality, locale, profile)
    raw_hedge = settings.get(K.HEDGE_AFTER_MS)
    hedge_after = settings.get_int(K.HEDGE_AFTER_MS, 0) if raw_hedge else None
    try:
        async with asyncio.timeout(deadline_s):
            queue = await _gate(run, candidates)
            winner = await _walk(run, queue, hedge_after)
    except TimeoutError:
        winner = None
        run.note_deadline()
    run.notes[:] = list(dict.fromkeys(run.notes))
    result = _assemble(run, winner, candidates)
    return result.with_(profile=RoutedProfile(profile.name, profile.sha256)) if profile else result


def _pinned(request: SearchRequest, provider_set: ProviderSet, profile: Profile | None) -> ProviderInstance:
    """The one instance an EXPERT search pins; refused when unknown or outside the profile."""
    pinned = provider_set.instances.get(request.pinned_provider_id or "")
    if pinned is None:
        known = ", ".join(provider_set.instances) or "none"
        raise UnknownNameError(
            "pinnedProviderId",
            f"unknown provider instance {request.pinned_provider_id!r}; known: {known}",
        )
    if profile is not None:
        allowed = order_candidates(provider_set, request.modality, profile=profile)
        if pinned not in allowed:
            raise InvalidRequestError(
                "pinnedProviderId",
                f"{pinned.id!r} is not in profile {profile.name!r}'s {request.modality.value} "
                f"cascade: {', '.join(i.id for i in allowed) or 'none'}",
            )
    return pinned


def _resumed(instance_id: str, provider_set: ProviderSet) -> ProviderInstance:
    """The instance a page cursor names; refused, naming `page`, once it is no longer configured."""
    instance = provider_set.instances.get(instance_id)
    if instance is None:
        raise InvalidRequestError(
            "page", "the provider instance that produced this cursor is no longer configured; search again"
        )
    return instance


async def _gate(run: SearchRun, candidates: list[ProviderInstance]) -> list[Candidate]:
    """Each candidate with the gate's verdict; in panic mode, every skip recorded and the one whose
    cooldown ends first left to try."""
    dispatcher = run.dispatcher
    modality = run.request.modality
    subjects = [K.cooldown_subject(c.id, modality) for c in candidates]
    try:
        cooldowns = await dispatcher.cooldowns.get_many(run.scope, subjects)
    except Exception as exc:  # the store being down must not fail the search
        dispatcher.cooldown_outage.failed(exc, "cooldowns are not honoured until it is back")
        cooldowns = {}
    else:
        dispatcher.cooldown_outage.recovered()
    now = dispatcher.clock.now()
    strict = run.request.filters.strict
    queue: list[Candidate] = []
    for instance in candidates:
        cooldown = cooldowns.get(K.cooldown_subject(instance.id, modality))
        decision = check_static(instance, modality, run.scope, run.request.tier)
        if strict and decision.allowed:
            decision = check_filters(instance, run.request.filters)
        if decision.allowed:
            decision = check_cooldown(cooldown, now)
        queue.append(Candidate(instance, cooldown, decision))
    first = panic_choice(queue, allowed=_allowed, cooling_until=_cooling_until)
    if first is not None:
        # Panic mode: never let the chain go dark. Record every skip, then try it once.
        for c in queue:
            run.skip(c.instance, c.decision)
        queue = [Candidate(first.instance, first.cooldown, GO, panic=True)]
    return queue


async def _walk(run: SearchRun, queue: list[Candidate], hedge_after: int | None) -> SearchResult | None:
    """Walk the candidates in order, recording skips as they come: each call awaited in turn, or —
    when hedging applies — raced (`dispatch/race.py`). `hedge_after`: the setting in ms (None =
    after each candidate's observed p95, `dispatch/hedging.py`); a candidate with a call hanging in
    this process is raced at once unless hedging is off (`hedging.suspect`)."""
    if races(run, queue, hedge_after):
        run.raced = True
        return await hedged_race(run, queue, hedge_after)
    while (candidate := run.next_callable(queue)) is not None:
        result = await call_candidate(run, candidate, queue)
        if result is not None:
            return result
    return None


def _assemble(
    run: SearchRun, winner: SearchResult | None, candidates: list[ProviderInstance]
) -> SearchResult:
    request = run.request
    attempts = tuple(with_cause(a) for a in run.attempts)
    if winner is not None:
        return winner.with_(attempts=attempts, **_next_page(run, winner))
    if run.soft is not None and not run.soft.error_message:  # an honest empty answer
        return run.soft.with_(attempts=attempts, hits=())
    if not candidates:
        message = f"no provider instance serves {request.modality.value} in this scope"
    else:
        reasons = [f"{a.provider_instance_id}: {a.error_message or a.outcome.value}" for a in attempts]
        message = "every provider failed — " + "; ".join(reasons) if reasons else "no provider was tried"
    note = "; ".join(run.notes) or (run.soft.note if run.soft else None)
    return unanswered(request, message, note, attempts, summarize(attempts) or message)


def _next_page(run: SearchRun, winner: SearchResult) -> dict[str, Any]:
    """The winner's next page sealed as its `nextPage` (`dispatch/paging.py`), the protocol's own
    position dropped — in the one copy `_assemble` makes of the winner anyway."""
    if winner.page_state is None or winner.provider_instance_id is None:
        return {}
    pages = run.dispatcher.pages
    cursor = pages.seal(run.request, run.scope, winner.provider_instance_id, winner.page_state)
    return {"next_page": cursor, "page_state": None}


def unanswered(
    request: SearchRequest,
    message: str,
    note: str | None = None,
    attempts: tuple[Attempt, ...] = (),
    summary: str | None = None,
) -> SearchResult:
    """The result of a search no provider answered; `message` says why."""
    return SearchResult.answering(
        request,
        None,
        note=note,
        error_message=message,
        attempts=attempts,
        error_summary=summary,
    )


def _allowed(candidate: Candidate) -> bool:
    return candidate.decision.allowed


def _cooling_until(candidate: Candidate) -> float | None:
    """Only our own cooldowns count for panic mode: an instance that reports COOLDOWN itself knows
    it cannot answer."""
    if candidate.decision.outcome is Outcome.SKIPPED_COOLDOWN and candidate.cooldown is not None:
        return candidate.cooldown.until
    return None
