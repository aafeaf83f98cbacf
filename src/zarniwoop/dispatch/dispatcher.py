"""ZarniwoopService: one search, dispatched over the ordered cascade of a scope's providers (DESIGN §5).

The front of a search: its agent profile (`dispatch/profiles.py`), its cached answer, and one
upstream walk shared by identical searches — concurrent ones in this process (coalescing) and, with
a shared cache, in the deployment's other processes (`dispatch/flights.py`). The walk itself is
split by job:

- `dispatch/cascade.py` — the walk: candidates in order (or the pinned one), the gate, panic mode,
  the deadline, the result naming every candidate's reason;
- `dispatch/race.py` — the hedged race: a slow candidate raced by the next one, losers cancelled;
- `dispatch/provider_call.py` — one candidate's call: pacing slot → quota → request → verdict
  (bench, record, win or move on);
- `dispatch/pacing_share.py` — the attempt's share of the time left, and its pacing slot in it;
- `dispatch/search_run.py` — one run's state, and each attempt recorded once.

The `Dispatcher` owns what outlives a search: the provider factory, the cooldown, cache, quota,
pacing and reachability stores, the hedge ledger, the observers (the audit) and the last
outcome of each instance.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from ..config import keys as K
from ..config.profiles import default_filters
from ..contract.enums import Outcome
from ..contract.errors import InvalidRequestError
from ..contract.results import Attempt, SearchResult
from ..limits.clock import Clock
from ..limits.pacing import LocalPacer, Pacer
from ..observability.metrics import record_dispatch
from ..observability.outage import OutageLog
from ..observability.tracing import TRACING
from ..storage.privacy import query_hash
from .cache import Coalescer, MemoryResultCache, ResultCache
from .cascade import unanswered, walk
from .flights import FlightWaitExpiredError
from .hedging import HedgeLedger
from .paging import PageCursors, Signer
from .profiles import GLOBAL_ORDER, ProfileChoice, find_profile
from .reachability import LastOutcome, MemoryReachability, ProbeResult, ReachabilityStore
from .spans import close_search, note_coalesced, search_span

if TYPE_CHECKING:
    from ..contract.filters import SearchFilters
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchRequest, SearchScope
    from .cooldown import CooldownStore
    from .factory import ProviderFactory, ProviderSet
    from .flights import Flights
    from .gate import QuotaGuard

log = logging.getLogger(__name__)


class DispatchObserver(Protocol):
    """The audit's hook: told about every provider call and every dispatch (the metrics count them
    directly, `observability/metrics.py`)."""

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


BoundSearch = Callable[["SearchRequest"], Awaitable[SearchResult]]
"""`Dispatcher.search` with a scope and the caller's `cache` and `profile` bound: what a fan-out
(`dispatch/rich.py`) or an investigation runs its searches through."""
FLIGHT_GRACE = 1.0
"""A follower waits for another process's identical search up to the deadline plus this (the
leader started a little earlier, and its own deadline ends its call)."""


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
        signer: Signer | None = None,
    ) -> None:
        self.factory = factory
        self.cooldowns = cooldowns
        self.clock = clock or Clock()
        self.limiter: Pacer = limiter or LocalPacer(self.clock)
        self.cache = cache or MemoryResultCache(clock=self.clock)
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
        self.pages = PageCursors(signer, self.clock)
        """Seals `nextPage` and opens `page` (`dispatch/paging.py`), under the master key's signing key."""
        self.hedges = HedgeLedger(self.clock)
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
        cache: bool = True,
        profile: ProfileChoice = GLOBAL_ORDER,
    ) -> SearchResult:
        """Dispatch one search. Never raises for provider failures: they are in `attempts`/`errorMessage`.

        `cache=False` (`--no-cache`, `"cache": false`, `Cache-Control: no-cache`) skips the cached
        answer and asks the providers; the fresh answer then replaces the cached one. `profile`: the
        caller's profile choice (the connection's, the token's binding), which `request.profile`
        narrows for this search (`dispatch/profiles.py`).
        """
        provider_set = await self.factory.providers(scope)
        if overrides:
            provider_set = self.factory.build(scope, overrides)
        if TRACING.on:
            with search_span(request, scope, provider_set.settings) as current:
                result = await self._search(request, scope, overrides, cache, profile, provider_set)
                close_search(current, result)
            return result
        return await self._search(request, scope, overrides, cache, profile, provider_set)

    async def _search(
        self,
        request: SearchRequest,
        scope: SearchScope,
        overrides: Mapping[str, str] | None,
        cache: bool,
        profile: ProfileChoice,
        provider_set: ProviderSet,
    ) -> SearchResult:
        settings = provider_set.settings
        profile_name = profile.pick(request.profile)
        routed = find_profile(settings, profile_name) if profile_name else None
        if profile_name != request.profile:
            request = replace(request, profile=profile_name)
        if routed is not None and routed.filters:  # the profile's default filters, the caller's win
            merged = request.filters.merged_over(default_filters(routed.filters))
            request = _with_filters(request, merged)
        if request.filters.page is not None:  # refused naming `page` when foreign or expired
            request = replace(request, resume=self.pages.open(request, scope))
        ttl = settings.get_int(K.cache_ttl_key(request.modality), settings.get_int(K.CACHE_TTL_SECONDS, 600))
        # The profile's identity, not just its name: a redefined profile never serves the old cascade's
        # answer. The query only as the audit's hash: the key may be stored (the shared cache's file).
        folded, *rest = request.cache_key()
        key: Hashable = (
            scope,
            query_hash(folded),
            tuple(rest),
            tuple(sorted((overrides or {}).items())),
            routed.sha256 if routed else None,
        )
        if ttl > 0 and cache:
            cached = await self.cache.get(key)
            if cached is not None:
                result = cached.with_(cached=True, query=request.query)
                self._notify_dispatch(scope, request, result)
                return result

        async def run() -> SearchResult:
            result = await walk(self, request, scope, provider_set, routed)  # its nextPage sealed
            if ttl > 0 and result.hits:
                await self.cache.set(key, result.with_(fetched_at=self.clock.now()), ttl)
            return result

        flown = run
        if self.flights is not None:
            flights = self.flights
            wait = settings.get_int(K.DEADLINE_MS, 20000) / 1000 + FLIGHT_GRACE

            async def recheck() -> SearchResult | None:
                """A flight that finished since this search's cache lookup filled the cache."""
                cached = await self.cache.get(key) if ttl > 0 and cache else None
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
            if TRACING.on:
                note_coalesced()
        self._notify_dispatch(scope, request, result)
        return result

    def _waited_out(self, request: SearchRequest, wait: float) -> SearchResult:
        message = (
            f"deadline of {wait * 1000:.0f} ms reached waiting for the identical search another "
            "process is running; it may be retried"
        )
        return unanswered(request, message)

    async def outcomes(self, scope: SearchScope, instance_ids: Sequence[str]) -> dict[str, LastOutcome]:
        """The last outcome of each instance in a scope: every replica's with a shared store, else
        this process's."""
        try:
            return await self.reachability.get_many(scope, instance_ids)
        except Exception as exc:
            self.cooldown_outage.failed(exc, "reachability shows this process's view only")
            return {i: o for i in instance_ids if (o := self.last_outcomes.get((scope, i))) is not None}

    def _notify_dispatch(self, scope: SearchScope, request: SearchRequest, result: SearchResult) -> None:
        record_dispatch(request, result)
        for observer in self.observers:
            try:
                observer.on_dispatch(scope, request, result)
            except Exception:
                log.exception("dispatch observer failed")


def _with_filters(request: SearchRequest, filters: SearchFilters) -> SearchRequest:
    """`request` with the profile's defaults merged in, checked as the caller's own would be."""
    if filters.time_range and "dateFrom" in request.expert_params:
        raise InvalidRequestError(
            "timeRange",
            "the profile's default conflicts with dateFrom: give timeRange explicitly or drop dateFrom",
        )
    return replace(request, filters=filters)


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
