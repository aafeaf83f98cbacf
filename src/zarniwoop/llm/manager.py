"""The LLM call path (seed 002 §10, DESIGN §8): every call runs under an account.

    purpose ─► model spec (preferences cascade; 95 % of a budget → the light model)  choice/model.py
            ─► alias resolver ─► (wire type, instance, model)                        choice/aliases.py
            ─► credential cascade account → project → team → tenant → operator → local
               (no key: MissingCredentialError, unless `ai.substitute`)      choice/key.py
            ─► candidates: primary, fallbackModels chain, priority, local    choice/order.py
            ─► per attempt: reserve estimate + max_tokens at every level at once (all must pass),
               admit into every per-minute window                            limits/token_budgets.py, limits/windows.py
            ─► a fresh ChatClient with this call's key over the shared pool
            ─► tracing (raw) ─► sanitizing (parser, think tags) ─► caller
            ─► settle real usage at every level, then the observers: usage record, metrics,
               threshold notices (scheduled, off the latency path)           observers.py

Transient failures are retried and then fail over to the next candidate (`failover.py`). A budget
at 100 % blocks everything but local; the error names the level ("Project quota exhausted",
exit 4); a per-minute limit refuses with `RateLimitExceededError.retry_after`.

    manager = await runtime.llm()
    result = await manager.chat(LlmCall(tenant="acme", project="review", account="mike", purpose="execution"),
                                ChatRequest.prompt("Summarise …"))
    result.response.text, result.credential_source, result.cost_usd, result.failover
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..config.trust import guarded, set_by_operator
from ..contract.errors import (
    DatabaseUnavailableError,
    FailoverError,
    ProviderError,
    ProviderTimeoutError,
    QuotaBlockedError,
    QuotaExceededError,
    RateLimitExceededError,
    ZarniwoopError,
)
from ..contract.query import SearchScope
from ..ledger import AttemptRecord, Switch, UsageRecord, UsageStore
from ..limits.clock import Clock
from ..limits.token_budgets import (
    Hold,
    LineStatus,
    QuotaLine,
    TokenBudgets,
    exhausted_error,
    max_tokens_cap,
    quota_lines,
)
from ..limits.windows import (
    DEFAULT_WINDOW_SECONDS,
    WINDOW_KEY,
    AdmissionWindows,
    LocalAdmissionWindows,
    RateTicket,
    rate_lines,
)
from ..transport.http import HttpTransport
from .adapters import ADAPTERS, ChatClient, ChatRequest, Endpoint, StreamDelta
from .adapters.response import ChatResponse, TokenUsage
from .call import LlmCall, LlmResult, ModelChoice, PreparedCall
from .chain import decorate
from .choice.aliases import resolve
from .choice.key import CandidateBuilder
from .choice.model import SpecChoice, model_spec
from .choice.order import failover_policy, plan_candidates
from .failover import Candidate, FailoverEngine, FailoverOutcome
from .notify import WEBHOOK_KEY, QuotaNotifier
from .observers import CallEvent, LlmMetrics, LlmObserver, TraceRecorder, notify_all
from .sanitize import sanitize
from .settlement import CANCELLED, DEFAULT_DRAIN_MS, DRAIN_KEY, CallWatch, delta_chars, estimate_tokens
from .trace import PERSIST_KEY, TraceBuffer
from .traits import WarnOnce, warning_for

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings, SettingService
    from ..storage.db import Database
    from ..tenancy.accounts import CallScope, OrgDirectory
    from ..tenancy.credentials import CredentialStore
    from .catalog import Catalog, ModelDoc
    from .choice.aliases import Resolution

log = logging.getLogger("zarniwoop.llm")

LIGHT = "light"
TIMEOUT_KEY = "ai.call.timeoutMs"
MAX_WAIT_KEY = "ai.failover.maxWaitSeconds"
PURPOSE_PREFIX = "purpose:"

_T = TypeVar("_T")

__all__ = ["LlmCall", "LlmManager", "LlmResult", "ModelChoice", "PreparedCall"]


class LlmManager:
    """Runs LLM calls; one per process (`get_llm(runtime)`).

    `observers` are told about every finished call (default: the usage record and trace, the
    metrics, and the threshold notifier); `aclose()` flushes what they scheduled.
    """

    def __init__(
        self,
        *,
        db: Database,
        settings: SettingService,
        credentials: CredentialStore,
        directory: OrgDirectory,
        ledger: TokenBudgets,
        usage: UsageStore,
        http: HttpTransport,
        catalog: Callable[[], Awaitable[Catalog | None]] | None = None,
        notifier: QuotaNotifier | None = None,
        observers: Sequence[LlmObserver] | None = None,
        rate: AdmissionWindows | None = None,
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.credentials = credentials
        self.directory = directory
        self.ledger = ledger
        self.usage = usage
        self.http = http
        """The process's transport: its SSRF policy guards a guarded candidate's calls, so the
        resolver and address policy are the ones search uses."""
        self._catalog = catalog
        self.notifier = notifier or QuotaNotifier(ledger, http)
        self.observers: tuple[LlmObserver, ...] = (
            (TraceRecorder(db), LlmMetrics(), self.notifier) if observers is None else tuple(observers)
        )
        self.rate: AdmissionWindows = rate or LocalAdmissionWindows()
        self.clock = clock or Clock()
        self.environ = os.environ if environ is None else environ
        self._warn_once = WarnOnce()
        self._settling: set[asyncio.Future[Any]] = set()
        """Abandoned calls still running on to be settled (`settlement.py`); `flush` waits for them."""

    # -- the path ----------------------------------------------------------------------------

    async def choose_model(self, call: LlmCall) -> ModelChoice:
        """Which model a call would run on, and its catalog entry — without calling it (recipes use
        the entry's `size` to pick a prompt variant before they build the request)."""
        decision = await self._decide(call)
        catalog = await self._catalog() if self._catalog is not None else None
        resolution = decision.resolution
        doc = (
            catalog.lookup_or_default(
                resolution.instance,
                resolution.model,
                decision.scope_key,
                fallback_instance=resolution.protocol_type,
            )
            if catalog is not None
            else None
        )
        return ModelChoice(
            spec=decision.choice.spec, purpose=decision.purpose, resolution=resolution, doc=doc
        )

    async def prepare(self, call: LlmCall, request: ChatRequest) -> PreparedCall:
        """Everything before the first byte leaves: scope, budgets, model, keys, candidates."""
        decision = await self._decide(call)
        scope, settings, resolution = decision.scope, decision.settings, decision.resolution
        policy = failover_policy(scope)
        builder = CandidateBuilder(scope, settings, self.credentials, self.environ)
        candidates, substitution = plan_candidates(
            builder, resolution, decision.choice.spec, settings, policy, call.fallback_models
        )
        blocked = next((s for s in decision.statuses if s.exhausted), None)
        if blocked is not None:
            candidates = [c for c in candidates if c.unlimited]  # 100 %: only the local free tier
        if not candidates and blocked is None:
            detail = "; ".join(dict.fromkeys(builder.missing)) or "no provider entry or key"
            raise FailoverError(f"no usable LLM provider for {decision.choice.spec!r} ({detail})", (), ())

        cap = max_tokens_cap(scope)
        if cap is not None and request.max_tokens > cap:
            request = replace(request, max_tokens=cap)
        max_wait = settings.get_float(MAX_WAIT_KEY, 60.0) or 60.0
        catalog = await self._catalog() if self._catalog is not None else None
        self._warn_once(warning_for(resolution, catalog, decision.scope_key))
        return PreparedCall(
            call=call,
            scope_key=decision.scope_key,
            scope=scope,
            settings=settings,
            lines=decision.lines,
            purpose=decision.purpose,
            choice=decision.choice,
            resolution=resolution,
            candidates=tuple(candidates),
            request=request,
            estimate=request.estimated_input_tokens() + request.max_tokens,
            engine=FailoverEngine(policy, clock=self.clock, max_wait=max_wait),
            catalog=catalog,
            timeout=settings.get_int(TIMEOUT_KEY, 120_000) / 1000,
            drain=max(0, settings.get_int(DRAIN_KEY, DEFAULT_DRAIN_MS)) / 1000,
            persist_trace=settings.get_bool(PERSIST_KEY, False),
            webhook_url=settings.get(WEBHOOK_KEY),
            webhook_guarded=guarded(settings, not set_by_operator(settings, WEBHOOK_KEY)),
            rate_lines=tuple(rate_lines(scope)),
            rate_window=settings.get_float(WINDOW_KEY, DEFAULT_WINDOW_SECONDS) or DEFAULT_WINDOW_SECONDS,
            substitution=substitution,
            blocked=blocked,
        )

    async def _decide(self, call: LlmCall) -> _Decision:
        """Scope, budgets and model: the purpose (`light` at 95 %), the spec, its resolution."""
        await self.settings.refresh(max_age=1.0)
        await self.credentials.refresh(max_age=1.0)
        await self.directory.refresh(max_age=1.0)
        scope = self.directory.scope(call.tenant, call.project, call.account, team=call.team)
        scope_key = SearchScope(call.tenant, call.project)
        settings = self.settings.scoped(scope_key)
        lines = quota_lines(scope)
        limited = [line for line in lines if line.limit is not None]
        statuses = await self.ledger.status(call.tenant, limited) if limited else []

        spec = (call.model or "").strip()
        purpose = call.purpose
        if spec.startswith(PURPOSE_PREFIX):  # `purpose:light`: the preferences cascade picks the model
            purpose, spec = spec[len(PURPOSE_PREFIX) :].strip() or purpose, ""
        if purpose != LIGHT and any((s.percent or 0) >= s.line.light_pct for s in statuses):
            worst = max(statuses, key=lambda s: s.percent or 0)
            log.warning(
                "%s %s budget at %.1f%%: purpose %s switched to the light model",
                worst.line.label,
                worst.line.period,
                worst.percent or 0,
                purpose,
            )
            purpose = LIGHT
        choice = SpecChoice(spec, "call") if spec else model_spec(purpose, scope, call.overrides)
        return _Decision(
            scope=scope,
            scope_key=scope_key,
            settings=settings,
            lines=tuple(lines),
            statuses=tuple(statuses),
            purpose=purpose,
            choice=choice,
            resolution=resolve(choice.spec, settings),
        )

    async def chat(self, call: LlmCall, request: ChatRequest, *, watch: CallWatch | None = None) -> LlmResult:
        """One call through the whole path; the sanitised answer with who served it and what it cost.

        `watch`: the caller's handle (`settlement.py`); once it is abandoned the call is recorded as
        `cancelled`, and cut after the drain time, charged its whole reservation.

        Raises `QuotaExceededError` (a budget refused it; `.level` names which) or `FailoverError`
        (every candidate failed; `.attempts` says how).
        """
        started = time.perf_counter()
        prep = await self._begin(call, request, started)
        if watch is not None:
            watch.bind(asyncio.current_task(), prep.drain)

        async def attempt(
            candidate: Candidate,
        ) -> tuple[ChatResponse, _Admission | None, TraceBuffer, ModelDoc | None]:
            admission = await self._reserve(prep, candidate)
            try:
                doc = self._model_doc(prep, candidate)
                sink = TraceBuffer(_secrets(candidate))
                model = decorate(
                    self._client(prep, candidate), doc, wire_name=candidate.model, trace_sink=sink
                )
                response = await model.chat(prep.request)
            except asyncio.CancelledError:
                if watch is not None and watch.cut:  # the upstream worked until now: its output is unknown
                    estimate = TokenUsage(prep.request.estimated_input_tokens(), prep.request.max_tokens)
                    await self._finish_cut(prep, candidate, admission, estimate, CANCELLED, started)
                else:
                    await self._release(admission)
                raise
            except BaseException:
                await self._release(admission)
                raise
            if watch is not None:
                watch.settling()
            return response, admission, sink, doc

        outcome = await self._run(prep, attempt, started)
        response, admission, sink, doc = outcome.value
        return await self._finish(
            prep,
            outcome.candidate,
            response,
            admission=admission,
            sink=sink,
            doc=doc,
            attempts=outcome.attempts,
            switches=outcome.switches,
            started=started,
            outcome=CANCELLED if watch is not None and watch.abandoned else "ok",
        )

    def adopt(self, running: asyncio.Future[Any]) -> None:
        """Keep an abandoned call's task alive until it is settled (`flush` waits for it)."""
        self._settling.add(running)
        running.add_done_callback(self._settling.discard)

    async def stream(self, call: LlmCall, request: ChatRequest) -> AsyncIterator[StreamDelta | LlmResult]:
        """Deltas as they arrive (raw: partial tokens are not sanitised), then the `LlmResult`.
        Failover happens only before the first delta: a stream cannot switch provider midway."""
        started = time.perf_counter()
        prep = await self._begin(call, replace(request, stream=True), started)

        async def open_stream(
            candidate: Candidate,
        ) -> tuple[AsyncIterator[StreamDelta | ChatResponse], StreamDelta | ChatResponse, _Admission | None]:
            admission = await self._reserve(prep, candidate)
            try:
                items = self._client(prep, candidate).stream(prep.request).__aiter__()
                first = await items.__anext__()
            except BaseException:
                await self._release(admission)
                raise
            return items, first, admission

        outcome = await self._run(prep, open_stream, started)
        items, first, admission = outcome.value
        # The upstream is read by a task of its own, which also settles the call: a caller that goes
        # away stops only the relay below, never the reading or the charging (`settlement.py`).
        queue: asyncio.Queue[StreamDelta | LlmResult | BaseException] = asyncio.Queue()
        watch = CallWatch()
        pump = asyncio.create_task(self._pump(prep, outcome, items, first, admission, queue, watch, started))
        self.adopt(pump)
        watch.bind(pump, prep.drain)
        delivered = False
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    delivered = True
                    raise item
                if isinstance(item, LlmResult):
                    delivered = True
                    yield item
                    return
                yield item
        finally:
            if not delivered:
                watch.abandon()

    async def _pump(
        self,
        prep: PreparedCall,
        outcome: FailoverOutcome[Any],
        items: AsyncIterator[StreamDelta | ChatResponse],
        first: StreamDelta | ChatResponse,
        admission: _Admission | None,
        queue: asyncio.Queue[StreamDelta | LlmResult | BaseException],
        watch: CallWatch,
        started: float,
    ) -> None:
        """Read one stream to its end into `queue`, then settle it: with the upstream's usage when it
        came, else with the prompt plus what was streamed (a cut, a deadline, a failure midway)."""
        candidate = outcome.candidate
        final: ChatResponse | None = None
        produced = 0
        item: StreamDelta | ChatResponse = first
        try:
            while True:
                if isinstance(item, ChatResponse):
                    final = item
                    break
                produced += delta_chars(item)
                queue.put_nowait(item)
                try:
                    item = await items.__anext__()
                except StopAsyncIteration:
                    break
        except BaseException as exc:
            cut = isinstance(exc, asyncio.CancelledError) or watch.abandoned
            timed_out = isinstance(exc, ProviderTimeoutError)
            usage = TokenUsage(prep.request.estimated_input_tokens(), estimate_tokens(produced))
            label = CANCELLED if cut or timed_out else "error"
            if produced or cut:
                await self._finish_cut(prep, candidate, admission, usage, label, started, exc)
            else:
                await self._release(admission)
            if not isinstance(exc, asyncio.CancelledError):
                queue.put_nowait(exc)
            return
        watch.settling()
        if final is None:
            queue.put_nowait(ProviderError(f"{candidate.instance}: the stream ended without an answer"))
            await self._release(admission)
            return
        doc = self._model_doc(prep, candidate)
        sink = TraceBuffer(_secrets(candidate))
        sink.record(prep.request, final)  # the trace keeps the raw answer
        try:
            result = await self._finish(
                prep,
                candidate,
                sanitize(final, doc, wire_name=candidate.model),
                admission=admission,
                sink=sink,
                doc=doc,
                attempts=outcome.attempts,
                switches=outcome.switches,
                started=started,
                outcome=CANCELLED if watch.abandoned else "ok",
            )
        except BaseException as exc:
            queue.put_nowait(exc)
            raise
        queue.put_nowait(result)

    async def _finish_cut(
        self,
        prep: PreparedCall,
        candidate: Candidate,
        admission: _Admission | None,
        usage: TokenUsage,
        outcome: str,
        started: float,
        error: BaseException | None = None,
    ) -> None:
        """Settle and record a call that ended without the upstream's usage, charged `usage`."""
        message = getattr(error, "message", None) if error is not None else None
        await self._finish(
            prep,
            candidate,
            ChatResponse(usage=usage),
            admission=admission,
            sink=TraceBuffer(_secrets(candidate)),
            doc=self._model_doc(prep, candidate),
            attempts=(),
            switches=(),
            started=started,
            outcome=outcome,
            error=message or ("the client went away" if outcome == CANCELLED else None),
        )

    # -- the steps chat and stream share -------------------------------------------------------

    async def _begin(self, call: LlmCall, request: ChatRequest, started: float) -> PreparedCall:
        """Prepare; when a budget leaves no candidate at all, record the refusal and raise it."""
        prep = await self.prepare(call, request)
        if not prep.candidates:
            assert prep.blocked is not None
            error = exhausted_error(prep.blocked, prep.estimate)
            await self._record_failure(prep, "blocked", error, (), (), started)
            raise error
        return prep

    async def _run(
        self, prep: PreparedCall, attempt: Callable[[Candidate], Awaitable[_T]], started: float
    ) -> FailoverOutcome[_T]:
        """The failover engine over the candidates; a final failure is recorded, then raised."""
        try:
            return await prep.engine.run(prep.candidates, attempt)
        except (QuotaBlockedError, FailoverError) as exc:
            outcome = "blocked" if isinstance(exc, QuotaExceededError) else "error"
            await self._record_failure(prep, outcome, exc, exc.attempts, exc.switches, started)
            if isinstance(exc, QuotaBlockedError) and exc.retry_after is not None:
                raise RateLimitExceededError(exc.level, exc.retry_after, exc.message) from exc
            raise

    async def _reserve(self, prep: PreparedCall, candidate: Candidate) -> _Admission | None:
        """Hold the estimate at every level at once and admit the attempt into every per-minute
        window (the local free tier holds nothing and is never rate-limited)."""
        if candidate.unlimited:
            return None
        hold = await self.ledger.reserve(prep.call.tenant, prep.lines, prep.estimate)
        ticket = None
        if prep.rate_lines:
            try:
                ticket = await self.rate.admit(
                    prep.call.tenant, prep.rate_lines, prep.estimate, window=prep.rate_window
                )
            except BaseException:
                await self.ledger.release(hold)
                raise
        return _Admission(hold, ticket)

    async def _release(self, admission: _Admission | None) -> None:
        """A failed attempt gives its budget hold back; its request still counts in the per-minute
        windows (it may well have reached the provider), its tokens do not."""
        if admission is None:
            return
        await self.ledger.release(admission.hold)
        if admission.ticket is not None:
            await self.rate.settle(admission.ticket, 0)

    async def _settle(self, admission: _Admission | None, tokens: int) -> list[LineStatus]:
        if admission is None:
            return []
        if admission.ticket is not None:
            await self.rate.settle(admission.ticket, tokens)
        return await self.ledger.settle(admission.hold, tokens)

    async def _charge(
        self, admission: _Admission | None, tokens: int, record: UsageRecord
    ) -> list[LineStatus]:
        """Settle the budgets, then write the call's usage record. On SQLite, when the budgets live
        in the ledger's database (the embedded default), both go in one transaction: one commit per
        call instead of two (a gateway call's bookkeeping, issue 23), and a charge never lands
        without its record. Only there: a statement that fails inside a PostgreSQL transaction
        aborts it, so a record refused there would take the charge with it; SQLite undoes just
        the failed statement, the record goes to the spool and the charge stands.

        A database that cannot take the transaction at all (it is down) gets the two apart, as
        each handles an outage: the budgets log and let the hold lapse, the record is spooled."""
        joint = self.db.dialect == "sqlite" and getattr(self.ledger, "db", None) is self.db
        if admission is not None and joint:
            try:
                async with self.db.transaction():
                    statuses = await self._settle(admission, tokens)
                    await self._record(record)
                return statuses
            except DatabaseUnavailableError:
                pass  # BEGIN or COMMIT failed: nothing of it was written
        statuses = await self._settle(admission, tokens)
        await self._record(record)
        return statuses

    async def _record(self, record: UsageRecord) -> None:
        """The usage record, written before `chat` returns (callers read it by `usage_id`); a record
        neither the database nor the spool can take is logged, never a failure of the call it records."""
        try:
            await self.usage.record(record)
        except Exception:
            log.exception("LLM usage record %s could not be written", record.id)

    def _client(self, prep: PreparedCall, candidate: Candidate) -> ChatClient:
        """A fresh client with this candidate's key over the shared pool (well under 1 ms)."""
        endpoint = Endpoint(candidate.wire_type, candidate.instance, candidate.base_url, candidate.api_key)
        return ChatClient(
            ADAPTERS[candidate.wire_type],
            endpoint,
            candidate.model,
            self.http,
            timeout=prep.timeout,
            untrusted=candidate.untrusted,
            guarded=candidate.guarded,
        )

    # -- after the call ------------------------------------------------------------------------

    async def _finish(
        self,
        prep: PreparedCall,
        candidate: Candidate,
        response: ChatResponse,
        *,
        admission: _Admission | None,
        sink: TraceBuffer,
        doc: ModelDoc | None,
        attempts: tuple[AttemptRecord, ...],
        switches: tuple[Switch, ...],
        started: float,
        outcome: str = "ok",
        error: str | None = None,
    ) -> LlmResult:
        """Settle real usage, tell the observers, and build the result."""
        call = prep.call
        switches = _with_substitution(prep, switches)
        usage = response.usage or TokenUsage(
            prep.request.estimated_input_tokens(), estimate_tokens(len(response.text)) or 1
        )
        cost = doc.cost_usd(usage.input, usage.output) if doc is not None else None
        duration = int((time.perf_counter() - started) * 1000)
        record = UsageRecord(
            tenant=call.tenant,
            account=call.account,
            project=call.project,
            team=prep.scope.team,
            provider=candidate.wire_type,
            instance=candidate.instance,
            model=candidate.model,
            purpose=prep.purpose,
            tokens_input=usage.input,
            tokens_output=usage.output,
            cost_usd=cost,
            credential_source=candidate.credential_source,
            duration_ms=duration,
            outcome=outcome,
            error=error,
            failover=switches,
            attempts=attempts,
            session_id=call.session_id,
            think_process_id=call.think_process_id,
            node_id=call.node_id,
        )
        statuses = await self._charge(admission, usage.total, record)
        event = CallEvent(
            record=record,
            quota=tuple(statuses),
            webhook_url=prep.webhook_url,
            webhook_guarded=prep.webhook_guarded,
            trace=sink if prep.persist_trace else None,
        )
        await notify_all(self.observers, event)
        return LlmResult(
            response=response,
            provider_type=candidate.wire_type,
            instance=candidate.instance,
            model=candidate.model,
            credential_source=candidate.credential_source,
            usage=usage,
            cost_usd=cost,
            purpose=prep.purpose,
            requested_purpose=call.purpose,
            spec=prep.choice.spec,
            failover=switches,
            attempts=attempts,
            usage_id=record.id,
            duration_ms=duration,
            origin=candidate.origin,
        )

    async def _record_failure(
        self,
        prep: PreparedCall,
        outcome: str,
        error: Exception,
        attempts: tuple[AttemptRecord, ...],
        switches: tuple[Switch, ...],
        started: float,
    ) -> None:
        call = prep.call
        switches = _with_substitution(prep, switches)
        first = prep.candidates[0] if prep.candidates else None
        record = UsageRecord(
            tenant=call.tenant,
            account=call.account,
            project=call.project,
            team=prep.scope.team,
            provider=first.wire_type if first else prep.resolution.protocol_type,
            instance=first.instance if first else prep.resolution.instance,
            model=first.model if first else prep.resolution.model,
            purpose=prep.purpose,
            tokens_input=0,
            tokens_output=0,
            cost_usd=None,
            credential_source=first.credential_source if first else "none",
            duration_ms=int((time.perf_counter() - started) * 1000),
            outcome=outcome,
            error=getattr(error, "message", str(error)),
            failover=switches,
            attempts=attempts,
            session_id=call.session_id,
            think_process_id=call.think_process_id,
            node_id=call.node_id,
        )
        await self._record(record)
        await notify_all(self.observers, CallEvent(record=record))

    def _model_doc(self, prep: PreparedCall, candidate: Candidate) -> ModelDoc | None:
        if prep.catalog is None:
            return None
        return prep.catalog.lookup_or_default(
            candidate.instance, candidate.model, prep.scope_key, fallback_instance=candidate.wire_type
        )

    async def context_window(self, call: LlmCall) -> int | None:
        """`contextWindowTokens` of the model this call would try first, from the catalog; None when
        no model resolves or the catalog does not know it (callers then pick a safe default)."""
        try:
            prep = await self.prepare(call, ChatRequest.prompt("", max_tokens=1))
        except ZarniwoopError:
            return None
        doc = self._model_doc(prep, prep.candidates[0]) if prep.candidates else None
        return doc.context_window_tokens if doc is not None else None

    # -- lifecycle -------------------------------------------------------------------------------

    async def flush(self) -> None:
        """Wait for abandoned calls to be settled and for what the observers scheduled (threshold
        webhooks) to finish."""
        while self._settling:
            await asyncio.gather(*list(self._settling), return_exceptions=True)
        for observer in self.observers:
            await observer.flush()

    async def aclose(self) -> None:
        """Flush the observers; the runtime calls this before it closes the shared pool."""
        await self.flush()

    # -- conveniences --------------------------------------------------------------------------

    async def ask(
        self, prompt: str, *, system: str | None = None, max_tokens: int = 1024, **call: Any
    ) -> LlmResult:
        return await self.chat(
            LlmCall(**call), ChatRequest.prompt(prompt, system=system, max_tokens=max_tokens)
        )


@dataclass(frozen=True, slots=True)
class _Decision:
    """The first half of `prepare`: who, under which budgets, on which model."""

    scope: CallScope
    scope_key: SearchScope
    settings: ScopedSettings
    lines: tuple[QuotaLine, ...]
    statuses: tuple[LineStatus, ...]
    purpose: str
    choice: SpecChoice
    resolution: Resolution


@dataclass(frozen=True, slots=True)
class _Admission:
    """What one attempt holds: the budget reservation and the rate-window ticket."""

    hold: Hold
    ticket: RateTicket | None


def _with_substitution(prep: PreparedCall, switches: tuple[Switch, ...]) -> tuple[Switch, ...]:
    return ((prep.substitution,) if prep.substitution is not None else ()) + switches


def _secrets(candidate: Candidate) -> tuple[str, ...]:
    return (candidate.api_key.reveal(),) if candidate.api_key else ()
