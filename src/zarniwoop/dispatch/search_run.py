"""One search's run through its candidates: the state the walk (`dispatch/cascade.py`), the race
(`dispatch/race.py`) and each provider call (`dispatch/provider_call.py`) share, and the record of
its attempts.

Every provider call is recorded exactly once, whatever cut it short, and so is every skip: the
attempt goes into the result's `attempts`, the metrics, the observers (the audit), and — for a
call — becomes the instance's last outcome in this process (the routing view's `reachable`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..contract.enums import Outcome
from ..contract.results import Attempt
from ..observability.metrics import record_provider_call
from ..observability.tracing import TRACING
from ..storage.privacy import redact_query
from .failures import with_cause
from .pacing_share import DEADLINE_MARGIN
from .reachability import LastOutcome
from .spans import note_attempt

if TYPE_CHECKING:
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchRequest, SearchScope
    from ..contract.results import SearchResult
    from .cooldown import Cooldown
    from .dispatcher import Dispatcher
    from .gate import GateDecision

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A provider instance in the walk's queue, with the gate's verdict on it."""

    instance: ProviderInstance
    cooldown: Cooldown | None
    """Its subject's cooldown record, if any: panic mode picks by it, a success clears its streak."""
    decision: GateDecision
    panic: bool = False


@dataclass(slots=True)
class SearchRun:
    """Mutable state of one cascade run. `dispatcher` is read at each use (its clock, stores and
    observers), never copied: a test may swap one of them between searches."""

    dispatcher: Dispatcher
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
    raced: bool = False
    """The walk races its candidates (hedging): the attempt spans say `zarniwoop.hedged`."""

    def note_deadline(self) -> None:
        self.notes.append(f"deadline of {self.deadline_s * 1000:.0f} ms reached")

    def elapsed_ms(self, begin: float) -> int:
        return round((self.dispatcher.clock.monotonic() - begin) * 1000)

    def next_callable(self, queue: list[Candidate]) -> Candidate | None:
        """Record skips up to the next callable candidate; None when none is left (or no time is)."""
        while queue:
            candidate = queue.pop(0)
            if not candidate.decision.allowed:
                self.skip(candidate.instance, candidate.decision)
                continue
            if self.deadline - self.dispatcher.clock.monotonic() <= DEADLINE_MARGIN:
                self.note_deadline()
                queue.clear()
                return None
            return candidate
        return None

    def skip(self, instance: ProviderInstance, decision: GateDecision) -> None:
        assert decision.outcome is not None
        attempt = Attempt(instance.id, decision.outcome, decision.reason, 0, echoed=())
        self.record(instance, with_cause(attempt, instance.protocol.id), 0)

    def record(
        self, instance: ProviderInstance, attempt: Attempt, hits: int, call_id: str | None = None
    ) -> None:
        if not attempt.outcome.is_skip:
            ok = attempt.outcome in (Outcome.SUCCESS, Outcome.EMPTY)
            # `lastError` is shown to the scope's admins, who must not read other users' queries.
            error = None if ok else redact_query(attempt.error_message, self.request.query, attempt.echoed)
            dispatcher = self.dispatcher
            dispatcher.last_outcomes[(self.scope, instance.id)] = LastOutcome(
                ok, error, dispatcher.clock.now()
            )
        self.record_cut(instance, attempt, call_id, hits)

    def record_cut(
        self, instance: ProviderInstance, attempt: Attempt, call_id: str | None, hits: int = 0
    ) -> None:
        """An attempt, counted in the metrics and told to the observers (the audit). Used as is for a hedged loser: a
        provider call, but no verdict on the instance's reachability."""
        self.attempts.append(attempt)
        if call_id is not None:
            self.recorded.add(call_id)
        if TRACING.on:
            note_attempt(self, instance, with_cause(attempt), hits)
        record_provider_call(instance, self.request, attempt)
        for observer in self.dispatcher.observers:
            try:
                observer.on_attempt(self.scope, instance, self.request, attempt, hits, call_id=call_id)
            except Exception:
                log.exception("dispatch observer failed")

    def notify_started(self, call: Call) -> None:
        for observer in self.dispatcher.observers:
            try:
                observer.on_call_started(self.scope, call.instance, self.request, call.call_id)
            except Exception:
                log.exception("dispatch observer failed")


@dataclass(frozen=True, slots=True)
class Call:
    """One provider call on its way out: what benching and recording it need."""

    instance: ProviderInstance
    subject: str
    """The cooldown subject it benches on failure, `research:<instance>:<modality>`."""
    call_id: str
    """Ties the observers' `on_call_started` to the call's one `on_attempt`."""
    begin: float
    """Monotonic, before any pacing wait."""
    panic: bool
    """Tried in panic mode: every candidate was cooling down."""
