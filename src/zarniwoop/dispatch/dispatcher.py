"""ZarniwoopService: one search, dispatched over the ordered cascade of a scope's providers (DESIGN §5).

Candidates for `(scope, modality)`: `research.default.<modality>`, then `research.fallback.<modality>`
in order, then the remaining endpoints supporting the modality in settings order — or, when the
call routes through an agent profile (`dispatch/profiles.py`), only the profile's providers. The
order and the panic choice are pure rules in `dispatch/ordering.py`; this module walks them.

NORMAL walks the candidates; the first success with at least one hit wins. Skips cost no time.
A soft failure or an empty answer moves on without cooldown; a hard failure moves on and benches
`research:<instance>:<modality>` for the project. EXPERT with `pinnedProviderId` calls that
instance only. When every candidate is cooling down, the one whose cooldown ends first is tried
once anyway (panic mode). Identical concurrent requests share one upstream call, results are
cached, identical searches in different processes of a deployment share one call too
(`dispatch/flights.py`), a slow candidate can be raced by the next one (hedging), and nothing outlives
`research.deadlineMs`: while another candidate waits, one attempt gets at most half of the time
left, and a call cut short is benched like a timeout. A candidate whose pacing slot would not come
in its share is passed over at once (`skipped_paced`); quota is taken only for a call that goes
out (docs/robustness.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from ..config import keys as K
from ..contract.enums import Outcome, Tier
from ..contract.errors import (
    InvalidRequestError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitedError,
    UnknownNameError,
    ZarniwoopError,
)
from ..contract.results import Attempt, RoutedProfile, SearchResult
from ..limits.clock import Clock, utc_date
from ..limits.pacing import LocalPacer, Pacer, pace_key, wait_for_slot
from ..observability.outage import OutageLog
from ..storage.privacy import query_hash, redact_query
from ..transport.network import target_of
from .cache import Coalescer, MemoryResultCache, ResultCache, cache_bypassed
from .failures import cause_of, summarize, with_cause
from .flights import FlightWaitExpiredError
from .gate import GO, GateDecision, QuotaGuard, check_cooldown, check_static
from .hedging import LOSSES_TO_BENCH, HedgeLedger
from .ordering import order_candidates, panic_choice
from .profiles import current_choice, find_profile
from .reachability import LastOutcome, MemoryReachability, ProbeResult, ReachabilityStore

if TYPE_CHECKING:
    from ..config.profiles import Profile
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchRequest, SearchScope
    from .cooldown import Cooldown, CooldownStore
    from .factory import ProviderFactory, ProviderSet
    from .flights import Flights

log = logging.getLogger(__name__)


class DispatchObserver(Protocol):
    """Audit and metrics hook: told about every provider call and every dispatch."""

    def on_call_started(
        self, scope: SearchScope, instance: ProviderInstance, request: SearchRequest, call_id: str
    ) -> None:
        """A request is about to go out; `on_attempt` with the same `call_id` follows when it ends
        (unless the process dies first: the audit then records the call as `interrupted`)."""
        ...

    def on_attempt(
        self,
        scope: SearchScope,
        instance: ProviderInstance | None,
        request: SearchRequest,
        attempt: Attempt,
        hits: int,
        *,
        call_id: str | None = None,
    ) -> None:
        """Every attempt; `call_id` is set for a provider call (None for a skip)."""
        ...

    def on_dispatch(self, scope: SearchScope, request: SearchRequest, result: SearchResult) -> None: ...


ATTEMPT_SHARE = 0.5
"""While another callable candidate waits, one attempt may take at most this share of the time left
(each later one again half of what is left then). A cap rather than hedging: it costs no second
upstream call while the default is healthy, and needs no setting to be safe."""
PACING_SHARE = 0.5
"""A pacing wait may take at most this share of its attempt's time; the call keeps the rest."""
DEADLINE_MARGIN = 0.05
"""The last attempt's own timeout fires this long before the search's deadline, so the cut call is
benched and recorded by the attempt itself rather than cancelled from outside."""
FLIGHT_GRACE = 1.0
"""A follower waits for another process's identical search up to the deadline plus this (the
leader started a little earlier, and its own deadline ends its call)."""
CUT_BENCH_TIMEOUT = 0.5
"""How long a call cancelled by the deadline may spend benching itself in the cooldown store."""


@dataclass(slots=True)
class _Run:
    """Mutable state of one cascade run."""

    request: SearchRequest
    scope: SearchScope
    deadline: float  # monotonic
    deadline_s: float
    attempts: list[Attempt] = field(default_factory=list)
    cut_reasons: dict[str, str] = field(default_factory=dict)
    """Why a running call is being cancelled (hedged loser), by instance; absent = the deadline."""
    overtaken: set[str] = field(default_factory=set)
    """Hedged losers that were called before the winner (it overtook them: a loss on their streak);
    a hedge called after the winner lost only for starting later, which says nothing against it."""
    recorded: set[str] = field(default_factory=set)
    """Calls whose attempt is recorded (each call exactly once, whatever cut it short)."""
    notes: list[str] = field(default_factory=list)
    soft: SearchResult | None = None  # the best non-winning answer (soft error / empty), for its note


@dataclass(frozen=True, slots=True)
class _Call:
    """One provider call on its way out: what `_fail` and `_cut` need to bench and record it."""

    instance: ProviderInstance
    subject: str
    call_id: str
    begin: float  # monotonic, before any pacing wait
    panic: bool


@dataclass(frozen=True, slots=True)
class _Candidate:
    instance: ProviderInstance
    cooldown: Cooldown | None
    decision: GateDecision
    panic: bool = False


class Dispatcher:
    def __init__(
        self,
        factory: ProviderFactory,
        cooldowns: CooldownStore,
        *,
        clock: Clock | None = None,
        limiter: Pacer | None = None,
        cache: ResultCache | None = None,
        quota: QuotaGuard | None = None,
        observers: Sequence[DispatchObserver] = (),
        reachability: ReachabilityStore | None = None,
        flights: Flights | None = None,
    ) -> None:
        self.factory = factory
        self.cooldowns = cooldowns
        self.clock = clock or Clock()
        self.limiter: Pacer = limiter or LocalPacer(self.clock)
        self.cache = cache or MemoryResultCache()
        self.quota = quota
        self.observers = list(observers)
        self._coalescer: Coalescer[SearchResult] = Coalescer()
        self.flights = flights
        """One flight per search across the deployment's processes (`dispatch/flights.py`), if shared."""
        self.last_outcomes: dict[tuple[SearchScope, str], LastOutcome] = {}
        """Last real outcome per (scope, instance) in this process."""
        self.reachability: ReachabilityStore = reachability or MemoryReachability(self.last_outcomes)
        """Where the routing view's `reachable` comes from (shared by replicas with Redis)."""
        self.cooldown_outage = OutageLog(log, "cooldown store")
        self.probes: dict[str, ProbeResult] = {}
        """Free reachability probes of keyless endpoints, by endpoint (`dispatch/probe.py`)."""
        self.hedges = HedgeLedger(self.clock.monotonic)
        """Observed latencies (the default hedge delay) and hedge-loss streaks (`dispatch/hedging.py`)."""

    async def aclose(self) -> None:
        """Close what the stores hold open (the shared cache's file), leaving the flights first."""
        if self.flights is not None:
            await self.flights.leave()
        closer = getattr(self.cache, "aclose", None)
        if closer is not None:
            await closer()

    async def search(
        self,
        request: SearchRequest,
        scope: SearchScope,
        overrides: Mapping[str, str] | None = None,
        *,
        cache: bool | None = None,
    ) -> SearchResult:
        """Dispatch one search. Never raises for provider failures: they are in `attempts`/`errorMessage`.

        `cache=False` (`--no-cache`, `"cache": false`, `Cache-Control: no-cache`) skips the cached
        answer and asks the providers; the fresh answer then replaces the cached one. None: as
        `bypassing_cache()` says (a surface's refresh covers every search it starts).
        """
        use_cache = not cache_bypassed() if cache is None else cache
        provider_set = await self.factory.providers(scope)
        if overrides:
            provider_set = self.factory.build(scope, overrides)
        settings = provider_set.settings
        profile_name = current_choice().pick(request.profile)
        profile = find_profile(settings, profile_name) if profile_name else None
        if profile_name != request.profile:
            request = replace(request, profile=profile_name)
        ttl = settings.get_int(K.cache_ttl_key(request.modality), settings.get_int(K.CACHE_TTL_SECONDS, 600))
        # The profile's identity, not just its name: a redefined profile never serves the old cascade's
        # answer. The query only as the audit's hash: the key may be stored (the shared cache's file).
        folded, *rest = request.cache_key()
        key: Hashable = (
            scope,
            query_hash(folded),
            tuple(rest),
            tuple(sorted((overrides or {}).items())),
            profile.sha256 if profile else None,
        )
        if ttl > 0 and use_cache:
            cached = await self.cache.get(key)
            if cached is not None:
                result = cached.with_(cached=True, query=request.query)
                self._notify_dispatch(scope, request, result)
                return result

        async def run() -> SearchResult:
            result = await self._dispatch(request, scope, provider_set, profile)
            if ttl > 0 and result.hits:
                await self.cache.set(key, result.with_(fetched_at=self.clock.now()), ttl)
            return result

        flown = run
        if self.flights is not None:
            flights = self.flights
            wait = settings.get_int(K.DEADLINE_MS, 20000) / 1000 + FLIGHT_GRACE

            async def recheck() -> SearchResult | None:
                """A flight that finished since this search's cache lookup filled the cache."""
                cached = await self.cache.get(key) if ttl > 0 and use_cache else None
                return cached.with_(cached=True, query=request.query) if cached is not None else None

            async def flown() -> SearchResult:
                try:
                    result, followed = await flights.run(key, run, wait=wait, recheck=recheck)
                except FlightWaitExpiredError:
                    return self._waited_out(request, wait)
                return result.with_(query=request.query) if followed else result

        result, shared = await self._coalescer.run(key, flown)
        if shared:
            result = result.with_(query=request.query)
        self._notify_dispatch(scope, request, result)
        return result

    def _waited_out(self, request: SearchRequest, wait: float) -> SearchResult:
        message = (
            f"deadline of {wait * 1000:.0f} ms reached waiting for the identical search another "
            "process is running; it may be retried"
        )
        return SearchResult(
            query=request.query,
            modality=request.modality,
            tier=request.tier,
            provider_instance_id=None,
            error_message=message,
        )

    async def _dispatch(
        self,
        request: SearchRequest,
        scope: SearchScope,
        provider_set: ProviderSet,
        profile: Profile | None = None,
    ) -> SearchResult:
        settings = provider_set.settings
        deadline_s = settings.get_int(K.DEADLINE_MS, 20000) / 1000
        if request.today is None:  # protocols get "today" from our clock, never read one themselves
            request = request.on(utc_date(self.clock.now()))
        run = _Run(request, scope, deadline=self.clock.monotonic() + deadline_s, deadline_s=deadline_s)
        if request.tier is Tier.EXPERT and request.pinned_provider_id:
            pinned = provider_set.instances.get(request.pinned_provider_id)
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
            candidates = [pinned]
        else:
            locale = request.locale or request.expert_params.get("language")
            candidates = order_candidates(provider_set, request.modality, locale, profile)
        raw_hedge = settings.get(K.HEDGE_AFTER_MS)
        hedge_after = settings.get_int(K.HEDGE_AFTER_MS, 0) if raw_hedge else None
        try:
            async with asyncio.timeout(deadline_s):
                winner = await self._cascade(run, candidates, hedge_after)
        except TimeoutError:
            winner = None
            run.notes.append(f"deadline of {deadline_s * 1000:.0f} ms reached")
        run.notes[:] = list(dict.fromkeys(run.notes))
        result = self._assemble(run, winner, candidates, deadline_s)
        return result.with_(profile=RoutedProfile(profile.name, profile.sha256)) if profile else result

    async def _cascade(
        self, run: _Run, candidates: list[ProviderInstance], hedge_after: int | None
    ) -> SearchResult | None:
        modality = run.request.modality
        subjects = [K.cooldown_subject(c.id, modality) for c in candidates]
        try:
            cooldowns = await self.cooldowns.get_many(run.scope, subjects)
        except Exception as exc:  # the store being down must not fail the search
            self.cooldown_outage.failed(exc, "cooldowns are not honoured until it is back")
            cooldowns = {}
        else:
            self.cooldown_outage.recovered()
        now = self.clock.now()
        queue: list[_Candidate] = []
        for instance in candidates:
            cooldown = cooldowns.get(K.cooldown_subject(instance.id, modality))
            decision = check_static(instance, modality, run.scope, run.request.tier)
            if decision.allowed:
                decision = check_cooldown(cooldown, now)
            queue.append(_Candidate(instance, cooldown, decision))
        first = panic_choice(queue, allowed=_allowed, cooling_until=_cooling_until)
        if first is not None:
            # Panic mode: never let the chain go dark. Record every skip, then try it once.
            for c in queue:
                self._skip(run, c.instance, c.decision)
            queue = [_Candidate(first.instance, first.cooldown, GO, panic=True)]
        return await self._race(run, queue, hedge_after)

    async def _race(self, run: _Run, queue: list[_Candidate], hedge_after: int | None) -> SearchResult | None:
        """Walk the candidates in order, recording skips as they come. Without hedging each call is
        awaited in turn (no task: the common path stays cheap); with hedging, a slow call is raced by
        the next callable candidate and the loser is cancelled. `hedge_after`: the setting in ms
        (None = after each candidate's observed p95, `dispatch/hedging.py`); a candidate with a call
        hanging in this process is raced at once unless hedging is off (`hedging.suspect`)."""

        def delay_of(instance: ProviderInstance) -> float | None:
            if hedge_after != 0 and self.hedges.suspect(run.scope, instance.id):
                return 0.0  # a call to it is hanging: race it at once
            return self.hedges.hedge_after(instance.id, hedge_after)

        callable_ = [c for c in queue if c.decision.allowed]
        if len(callable_) < 2 or all(delay_of(c.instance) is None for c in callable_[:-1]):
            while (candidate := self._next_callable(run, queue)) is not None:
                result = await self._call(run, candidate, queue)
                if result is not None:
                    return result
            return None
        running: dict[asyncio.Task[SearchResult | None], ProviderInstance] = {}  # in order of calling
        latest: list[ProviderInstance] = []

        def start_next() -> bool:
            candidate = self._next_callable(run, queue)
            if candidate is None:
                return False
            running[asyncio.create_task(self._call(run, candidate, queue))] = candidate.instance
            latest[:] = [candidate.instance]
            return True

        try:
            while queue or running:
                if not running and not start_next():
                    continue
                can_hedge = any(c.decision.allowed and c.instance.config.hedge for c in queue)
                delay = delay_of(latest[0]) if can_hedge and latest else None
                done, _ = await asyncio.wait(running, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
                if not done:  # the hedge timer fired: race the next candidate
                    start_next()
                    continue
                for task in done:
                    called_before = list(running).index(task)
                    running.pop(task)
                    result = task.result()
                    if result is None:
                        continue
                    for position, (loser_task, loser) in enumerate(running.items()):
                        run.cut_reasons[loser.id] = (
                            f"cancelled: hedged, {result.provider_instance_id} answered first"
                        )
                        if position < called_before:
                            run.overtaken.add(loser.id)
                        loser_task.cancel()
                    return result
            return None
        finally:
            for task in running:
                task.cancel()
            if running:  # each cut call records its own attempt (see `_call`)
                await asyncio.gather(*running, return_exceptions=True)

    def _next_callable(self, run: _Run, queue: list[_Candidate]) -> _Candidate | None:
        """Record skips up to the next callable candidate; None when none is left."""
        while queue:
            candidate = queue.pop(0)
            if not candidate.decision.allowed:
                self._skip(run, candidate.instance, candidate.decision)
                continue
            if run.deadline - self.clock.monotonic() <= DEADLINE_MARGIN:
                run.notes.append(f"deadline of {run.deadline_s * 1000:.0f} ms reached")
                queue.clear()
                return None
            return candidate
        return None

    def _share_of_time(self, run: _Run, queue: list[_Candidate]) -> float:
        """Seconds this attempt (pacing wait + call) may take: while another callable candidate waits,
        `ATTEMPT_SHARE` of the time left, so a hanging default never eats its fallback's time; the
        last candidate gets all of it (minus `DEADLINE_MARGIN`, so its own timeout — which benches it
        — fires before the search's deadline does)."""
        remaining = run.deadline - self.clock.monotonic() - DEADLINE_MARGIN
        if any(c.decision.allowed for c in queue):
            return remaining * ATTEMPT_SHARE
        return remaining

    async def _call(self, run: _Run, candidate: _Candidate, queue: list[_Candidate]) -> SearchResult | None:
        """One candidate: pacing slot → quota → provider call. Returns the result when it wins (≥1 hit,
        no error) and records an attempt always. A pacing slot that would not come in this attempt's
        share of the time is `skipped_paced` at once; the quota is reserved only after the wait, right
        before the request goes out; the audit hears of the call when it starts (`on_call_started`)."""
        instance, config = candidate.instance, candidate.instance.config
        share = self._share_of_time(run, queue)
        key = pace_key(
            instance.protocol.id, config.instance_id, config.api_key.reveal() if config.api_key else None
        )
        begin = self.clock.monotonic()
        delay = await self.limiter.reserve(
            key, config.rate_per_second, max_wait=share * PACING_SHARE, burst=config.rate_burst
        )
        if delay is None:
            reason = (
                f"rate limit {config.rate_per_second:g}/s: no start slot within "
                f"{share * PACING_SHARE * 1000:.0f} ms"
            )
            self._skip(run, instance, GateDecision(Outcome.SKIPPED_PACED, reason))
            return None
        try:
            await wait_for_slot(delay)
        except asyncio.CancelledError:  # cut while waiting: the call never went out
            self._skip(run, instance, GateDecision(Outcome.SKIPPED_PACED, "deadline reached while paced"))
            raise
        if self.quota is not None and not await self.quota.reserve(run.scope, instance, run.request.modality):
            self._skip(run, instance, GateDecision(Outcome.SKIPPED_EXHAUSTED, "quota exhausted"))
            return None
        budget = share - (self.clock.monotonic() - begin)
        timeout = max(0.001, min(config.timeout_ms / 1000, budget))
        cut_by_deadline = timeout < config.timeout_ms / 1000 and not any(c.decision.allowed for c in queue)
        subject = K.cooldown_subject(instance.id, run.request.modality)
        call = _Call(instance, subject, uuid.uuid4().hex, begin, candidate.panic)
        self._notify_started(run, call)
        self.hedges.started(run.scope, instance.id, call.call_id)
        try:
            return await self._send(run, candidate, call, timeout, cut_by_deadline)
        finally:
            self.hedges.ended(run.scope, instance.id, call.call_id)
            if call.call_id not in run.recorded:  # cancelled while benching: still one attempt per call
                attempt = Attempt(
                    instance.id, Outcome.TIMEOUT, "deadline reached", self._elapsed_ms(begin), echoed=()
                )
                self._record_cut(run, instance, attempt, call.call_id)

    async def _send(
        self, run: _Run, candidate: _Candidate, call: _Call, timeout: float, cut_by_deadline: bool
    ) -> SearchResult | None:
        """The request itself, and what its outcome means: bench, record, win or move on."""
        instance, subject, begin = call.instance, call.subject, call.begin
        try:
            async with asyncio.timeout(timeout):
                result = await instance.search(run.request, run.scope, timeout=timeout)
        except (TimeoutError, ProviderTimeoutError) as exc:
            if isinstance(exc, ProviderTimeoutError):
                error: BaseException = exc
            elif cut_by_deadline:
                error = ProviderTimeoutError("deadline reached")
                run.notes.append(f"deadline of {run.deadline_s * 1000:.0f} ms reached")
            else:
                error = ProviderTimeoutError(f"no answer{_from(instance)} within {timeout * 1000:.0f} ms")
            await self._fail(run, call, error, Outcome.TIMEOUT)
            return None
        except ProviderError as exc:
            await self._fail(run, call, exc, Outcome.HARD_ERROR)
            return None
        except asyncio.CancelledError:
            await self._cut(run, call)
            raise
        except Exception as exc:  # an add-on instance's bug: a hard failure, not a crash
            log.warning("provider %s raised %s", instance.id, type(exc).__name__, exc_info=True)
            await self._fail(run, call, exc, Outcome.HARD_ERROR)
            return None
        duration = self._elapsed_ms(begin)
        self.hedges.answered(run.scope, subject, instance.id, duration / 1000)
        if candidate.cooldown is not None:  # a success clears the failure streak
            try:
                await self.cooldowns.record_success(run.scope, subject)
            except Exception as exc:
                self.cooldown_outage.failed(exc, "cooldowns are not honoured until it is back")
        if result.quota is not None and self.quota is not None:
            await self.quota.observe(run.scope, instance, run.request.modality, result.quota)
        if result.backoff_seconds:
            await self._honour_backoff(run, instance, result.backoff_seconds)
        message: str | None
        if result.error_message:
            outcome, message = Outcome.SOFT_ERROR, result.error_message
        elif not result.hits:
            outcome, message = Outcome.EMPTY, result.note
        else:
            outcome, message = Outcome.SUCCESS, None
        attempt = Attempt(instance.id, outcome, message, duration, call.panic)
        self._record(run, instance, attempt, len(result.hits), call.call_id)
        await self._share_outcome(run, instance.id)
        if outcome is Outcome.SUCCESS:
            return result
        if run.soft is None or (result.note and not run.soft.note):
            run.soft = result
        return None

    async def _cut(self, run: _Run, call: _Call) -> None:
        """A call cancelled mid-flight: a hedged loser (no verdict on the instance, unless a later
        call overtook it `LOSSES_TO_BENCH` times in a row: then it is benched like a timeout), or cut
        by the search's deadline — benched like a timeout, so the next search does not pay for it
        again."""
        reason = run.cut_reasons.pop(call.instance.id, None)
        attempt = Attempt(
            call.instance.id,
            Outcome.TIMEOUT,
            reason or "deadline reached",
            self._elapsed_ms(call.begin),
            echoed=(),
        )
        if reason is not None:
            if call.instance.id in run.overtaken and self.hedges.lost(run.scope, call.subject):
                await self._bench_cut(run, call, f"lost {LOSSES_TO_BENCH} hedges in a row")
            self._record_cut(run, call.instance, attempt, call.call_id)
            return
        run.notes.append(f"deadline of {run.deadline_s * 1000:.0f} ms reached")
        await self._bench_cut(run, call, "deadline reached")
        self._record(run, call.instance, attempt, 0, call.call_id)

    async def _bench_cut(self, run: _Run, call: _Call, reason: str) -> None:
        with contextlib.suppress(Exception):  # bounded: a cancelled call must not hold up its search
            async with asyncio.timeout(CUT_BENCH_TIMEOUT):
                await self._bench(run, call, ProviderTimeoutError(reason))

    async def _bench(self, run: _Run, call: _Call, error: BaseException) -> None:
        message = _message_of(error)
        # The reason is persisted (cooldown store): never with the query in it.
        reason = redact_query(message, run.request.query, _echoed_of(error)) or type(error).__name__
        try:
            await self.cooldowns.record_failure(run.scope, call.subject, error, reason, self.clock.now())
        except Exception as exc:  # the cooldown store failing must not fail the search
            self.cooldown_outage.failed(exc, "cooldowns are not set until it is back")

    async def _fail(self, run: _Run, call: _Call, error: BaseException, outcome: Outcome) -> None:
        await self._bench(run, call, error)
        message = _message_of(error)
        attempt = Attempt(
            call.instance.id,
            outcome,
            message,
            self._elapsed_ms(call.begin),
            call.panic,
            _echoed_of(error),
            cause_of(error),
        )
        self._record(run, call.instance, attempt, 0, call.call_id)
        await self._share_outcome(run, call.instance.id)

    async def _honour_backoff(self, run: _Run, instance: ProviderInstance, seconds: float) -> None:
        """The provider asked for a pause (Stack Exchange `backoff`): bench the instance for that long.

        The pause is per API method, and every modality of an instance calls the same method, so
        each of its modalities is benched — the one exception to modality-isolated cooldowns."""
        pause = RateLimitedError(seconds, f"the provider asked for a {seconds:g} s backoff")
        now = self.clock.now()
        for modality in sorted(instance.protocol.modalities, key=lambda m: m.value):
            subject = K.cooldown_subject(instance.id, modality)
            try:
                await self.cooldowns.record_failure(run.scope, subject, pause, pause.message, now)
            except Exception as exc:
                self.cooldown_outage.failed(exc, "cooldowns are not set until it is back")
                return

    async def _share_outcome(self, run: _Run, instance_id: str) -> None:
        """Publish this process's last outcome to a shared reachability store (Redis), if any."""
        if isinstance(self.reachability, MemoryReachability):
            return
        outcome = self.last_outcomes.get((run.scope, instance_id))
        if outcome is None:
            return
        try:
            await self.reachability.record(run.scope, instance_id, outcome)
        except Exception as exc:
            self.cooldown_outage.failed(exc, "reachability is not shared until it is back")

    async def outcomes(self, scope: SearchScope, instance_ids: Sequence[str]) -> dict[str, LastOutcome]:
        """The last outcome of each instance in a scope: every replica's with a shared store, else
        this process's."""
        try:
            return await self.reachability.get_many(scope, instance_ids)
        except Exception as exc:
            self.cooldown_outage.failed(exc, "reachability shows this process's view only")
            return {i: o for i in instance_ids if (o := self.last_outcomes.get((scope, i))) is not None}

    def _skip(self, run: _Run, instance: ProviderInstance, decision: GateDecision) -> None:
        assert decision.outcome is not None
        attempt = Attempt(instance.id, decision.outcome, decision.reason, 0, echoed=())
        self._record(run, instance, with_cause(attempt, instance.protocol.id), 0)

    def _record(
        self, run: _Run, instance: ProviderInstance, attempt: Attempt, hits: int, call_id: str | None = None
    ) -> None:
        if not attempt.outcome.is_skip:
            ok = attempt.outcome in (Outcome.SUCCESS, Outcome.EMPTY)
            # `lastError` is shown to the scope's admins, who must not read other users' queries.
            error = None if ok else redact_query(attempt.error_message, run.request.query, attempt.echoed)
            self.last_outcomes[(run.scope, instance.id)] = LastOutcome(ok, error, self.clock.now())
        self._record_cut(run, instance, attempt, call_id, hits)

    def _record_cut(
        self, run: _Run, instance: ProviderInstance, attempt: Attempt, call_id: str | None, hits: int = 0
    ) -> None:
        """An attempt, told to the observers (audit, metrics). Used as is for a hedged loser: a
        provider call, but no verdict on the instance's reachability."""
        run.attempts.append(attempt)
        if call_id is not None:
            run.recorded.add(call_id)
        for observer in self.observers:
            try:
                observer.on_attempt(run.scope, instance, run.request, attempt, hits, call_id=call_id)
            except Exception:
                log.exception("dispatch observer failed")

    def _notify_started(self, run: _Run, call: _Call) -> None:
        for observer in self.observers:
            try:
                observer.on_call_started(run.scope, call.instance, run.request, call.call_id)
            except Exception:
                log.exception("dispatch observer failed")

    def _notify_dispatch(self, scope: SearchScope, request: SearchRequest, result: SearchResult) -> None:
        for observer in self.observers:
            try:
                observer.on_dispatch(scope, request, result)
            except Exception:
                log.exception("dispatch observer failed")

    def _elapsed_ms(self, begin: float) -> int:
        return round((self.clock.monotonic() - begin) * 1000)

    def _assemble(
        self, run: _Run, winner: SearchResult | None, candidates: list[ProviderInstance], deadline_s: float
    ) -> SearchResult:
        request = run.request
        attempts = tuple(with_cause(a) for a in run.attempts)
        if winner is not None:
            return winner.with_(attempts=attempts)
        if run.soft is not None and not run.soft.error_message:  # an honest empty answer
            return run.soft.with_(attempts=attempts, hits=())
        if not candidates:
            message = f"no provider instance serves {request.modality.value} in this scope"
        else:
            reasons = [f"{a.provider_instance_id}: {a.error_message or a.outcome.value}" for a in attempts]
            message = "every provider failed — " + "; ".join(reasons) if reasons else "no provider was tried"
        note = "; ".join(run.notes) or (run.soft.note if run.soft else None)
        return SearchResult(
            query=request.query,
            modality=request.modality,
            tier=request.tier,
            provider_instance_id=None,
            note=note,
            error_message=message,
            attempts=attempts,
            error_summary=summarize(attempts) or message,
        )


def _allowed(candidate: _Candidate) -> bool:
    return candidate.decision.allowed


def _cooling_until(candidate: _Candidate) -> float | None:
    """Only our own cooldowns count for panic mode: an instance that reports COOLDOWN itself knows
    it cannot answer."""
    if candidate.decision.outcome is Outcome.SKIPPED_COOLDOWN and candidate.cooldown is not None:
        return candidate.cooldown.until
    return None


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


PASSED_OVER = frozenset({Outcome.HARD_ERROR, Outcome.TIMEOUT, Outcome.SOFT_ERROR, Outcome.EMPTY})
"""Outcomes of a candidate that was called and did not serve the answer."""


def provenance_footer(result: SearchResult) -> str | None:
    """`(via openalex)` or `(via openalex — pubmed, arxiv fell over)` (DESIGN §5): every candidate that
    was tried and passed over, errored or empty (seed 003), is named; skipped ones were never tried."""
    if result.provider_instance_id is None:
        return None
    failed = [
        a.provider_instance_id
        for a in result.attempts
        if a.outcome in PASSED_OVER and a.provider_instance_id != result.provider_instance_id
    ]
    if not failed:
        return f"(via {result.provider_instance_id})"
    return f"(via {result.provider_instance_id} — {', '.join(dict.fromkeys(failed))} fell over)"
