"""The LLM call path (seed 002 §10, DESIGN §8): every call runs under an account.

    purpose ─► model spec (preferences cascade; 95 % of a budget → the light model)
            ─► alias resolver ─► (wire type, instance, model)
            ─► credential cascade account → project → team → tenant → operator → local
            ─► quota: reserve estimate + max_tokens at every level at once (all must pass)
            ─► a fresh ChatClient with this call's key over the shared pool
            ─► tracing (raw) ─► sanitizing (parser, think tags) ─► caller
            ─► settle real usage at every level, thresholds, usage record, metrics

Transient failures are retried and then fail over to the next provider by priority, then to the
local free tier (`failover.py`). A budget at 100 % blocks everything but local; the error names
the level ("Project quota exhausted", exit 4).

    manager = await get_llm(runtime)
    result = await manager.chat(LlmCall(tenant="acme", project="review", account="mike", purpose="execution"),
                                ChatRequest.prompt("Summarise …"))
    result.response.text, result.credential_source, result.cost_usd, result.failover
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..contract.errors import FailoverError, QuotaBlockedError, QuotaExceededError, ZarniwoopError
from ..contract.query import SearchScope
from ..observability.metrics import record_llm_call
from .adapters import ADAPTERS, ChatClient, ChatRequest, Endpoint, StreamDelta
from .aliases import resolve
from .chain import decorate
from .failover import AttemptRecord, Candidate, FailoverEngine, Switch
from .notify import WEBHOOK_KEY, QuotaNotifier
from .quota import Hold, LineStatus, QuotaLedger, exhausted_error, quota_lines
from .response import ChatResponse, TokenUsage
from .routing import CandidateBuilder, SpecChoice, failover_policy, max_tokens_cap, model_spec
from .sanitize import sanitize
from .trace import PERSIST_KEY, TraceBuffer
from .usage import DEFAULT_RETENTION_DAYS, RETENTION_KEY, UsageRecord, UsageStore

if TYPE_CHECKING:
    import httpx2

    from ..config.settings import SettingService
    from ..storage.db import Database
    from ..tenancy.accounts import OrgDirectory
    from ..tenancy.credentials import CredentialStore
    from .catalog import Catalog, ModelDoc

log = logging.getLogger("zarniwoop.llm")

LIGHT = "light"
TIMEOUT_KEY = "ai.call.timeoutMs"
MAX_WAIT_KEY = "ai.failover.maxWaitSeconds"
PURGE_EVERY_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class LlmCall:
    """Who a call runs for, and why."""

    tenant: str = "default"
    project: str = "default"
    account: str = "default"
    purpose: str = "default"
    model: str | None = None
    """A model spec for this call only (the innermost override)."""
    overrides: Mapping[str, str] = field(default_factory=dict)
    """The process's `llm_overrides`: purpose → model spec."""
    team: str | None = None
    session_id: str | None = None
    think_process_id: str | None = None
    node_id: str | None = None


@dataclass(frozen=True, slots=True)
class LlmResult:
    response: ChatResponse
    provider_type: str
    instance: str
    model: str
    credential_source: str
    usage: TokenUsage
    cost_usd: float | None
    purpose: str
    requested_purpose: str
    spec: str
    failover: tuple[Switch, ...] = ()
    attempts: tuple[AttemptRecord, ...] = ()
    usage_id: str = ""
    duration_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        """`zarniwoop llm ask --json` (DESIGN §6), exactly these keys."""
        return {
            "text": self.response.text,
            "toolCalls": [
                {"id": c.id, "name": c.name, "arguments": _arguments(c)} for c in self.response.tool_calls
            ],
            "providerType": self.provider_type,
            "instance": self.instance,
            "model": self.model,
            "credentialSource": self.credential_source,
            "usage": {"input": self.usage.input, "output": self.usage.output, "total": self.usage.total},
            "costUsd": self.cost_usd,
            "failover": [s.to_json() for s in self.failover],
        }


def _arguments(call: Any) -> Any:
    try:
        return call.parsed_arguments()
    except Exception:  # keep what the model sent when it is not an object
        return call.arguments


@dataclass(slots=True)
class _Prepared:
    call: LlmCall
    scope_key: SearchScope
    scope: Any
    settings: Any
    lines: list[Any]
    purpose: str
    choice: SpecChoice
    resolution: Any
    candidates: list[Candidate]
    request: ChatRequest
    estimate: int
    engine: FailoverEngine
    catalog: Catalog | None
    blocked: LineStatus | None = None


class LlmManager:
    """Runs LLM calls; one per process (`get_llm(runtime)`)."""

    def __init__(
        self,
        *,
        db: Database,
        settings: SettingService,
        credentials: CredentialStore,
        directory: OrgDirectory,
        ledger: QuotaLedger,
        usage: UsageStore,
        http: httpx2.AsyncClient,
        catalog: Callable[[], Awaitable[Catalog | None]] | None = None,
        notifier: QuotaNotifier | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.credentials = credentials
        self.directory = directory
        self.ledger = ledger
        self.usage = usage
        self.http = http
        self._catalog = catalog
        self.notifier = notifier or QuotaNotifier(ledger, http)
        self.sleep = sleep
        self.environ = os.environ if environ is None else environ
        self._purged_at = 0.0

    # -- the path ----------------------------------------------------------------------------

    async def prepare(self, call: LlmCall, request: ChatRequest) -> _Prepared:
        """Everything before the first byte leaves: scope, budgets, model, keys, candidates."""
        await self.settings.refresh(max_age=1.0)
        await self.credentials.refresh(max_age=1.0)
        await self.directory.refresh(max_age=1.0)
        scope = self.directory.scope(call.tenant, call.project, call.account, team=call.team)
        scope_key = SearchScope(call.tenant, call.project)
        settings = self.settings.scoped(scope_key)
        lines = quota_lines(scope)
        limited = [line for line in lines if line.limit is not None]
        statuses = await self.ledger.status(call.tenant, limited) if limited else []

        purpose = call.purpose
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
        choice = SpecChoice(call.model, "call") if call.model else model_spec(purpose, scope, call.overrides)
        resolution = resolve(choice.spec, settings)
        policy = failover_policy(scope)
        builder = CandidateBuilder(scope, settings, self.credentials, self.environ)
        primary = builder.primary(resolution)
        candidates = ([primary] if primary else []) + builder.fallbacks(primary, resolution, policy)
        blocked = next((s for s in statuses if s.exhausted), None)
        if blocked is not None:
            candidates = [c for c in candidates if c.unlimited]  # 100 %: only the local free tier
        if not candidates and blocked is None:
            detail = "; ".join(dict.fromkeys(builder.missing)) or "no provider entry or key"
            raise FailoverError(f"no usable LLM provider for {choice.spec!r} ({detail})", (), ())

        cap = max_tokens_cap(scope)
        if cap is not None and request.max_tokens > cap:
            request = replace(request, max_tokens=cap)
        estimate = request.estimated_input_tokens() + request.max_tokens
        max_wait = settings.get_float(MAX_WAIT_KEY, 60.0) or 60.0
        catalog = await self._catalog() if self._catalog is not None else None
        return _Prepared(
            call, scope_key, scope, settings, lines, purpose, choice, resolution, candidates, request, estimate,
            FailoverEngine(policy, sleep=self.sleep, max_wait=max_wait), catalog, blocked,
        )  # fmt: skip

    async def chat(self, call: LlmCall, request: ChatRequest) -> LlmResult:
        started = time.perf_counter()
        prep = await self.prepare(call, request)
        if not prep.candidates:
            assert prep.blocked is not None
            await self._record_failure(
                prep, "blocked", exhausted_error(prep.blocked, prep.estimate), (), (), started
            )
            raise exhausted_error(prep.blocked, prep.estimate)
        timeout = prep.settings.get_int(TIMEOUT_KEY, 120_000) / 1000
        persist = prep.settings.get_bool(PERSIST_KEY, False)

        async def attempt(
            candidate: Candidate,
        ) -> tuple[ChatResponse, Hold | None, TraceBuffer, ModelDoc | None]:
            hold = (
                None
                if candidate.unlimited
                else await self.ledger.reserve(call.tenant, prep.lines, prep.estimate)
            )
            try:
                doc = self._model_doc(prep, candidate)
                endpoint = Endpoint(
                    candidate.wire_type, candidate.instance, candidate.base_url, candidate.api_key
                )
                client = ChatClient(
                    ADAPTERS[candidate.wire_type], endpoint, candidate.model, self.http, timeout=timeout
                )
                sink = TraceBuffer(_secrets(candidate))
                model = decorate(client, doc, wire_name=candidate.model, trace_sink=sink)
                response = await model.chat(prep.request)
            except BaseException:
                if hold is not None:
                    await self.ledger.release(hold)
                raise
            return response, hold, sink, doc

        try:
            outcome = await prep.engine.run(prep.candidates, attempt)
        except QuotaBlockedError as exc:
            await self._record_failure(prep, "blocked", exc, exc.attempts, exc.switches, started)
            raise
        except FailoverError as exc:
            await self._record_failure(prep, "error", exc, exc.attempts, exc.switches, started)
            raise
        response, hold, sink, doc = outcome.value
        return await self._finish(
            prep,
            outcome.candidate,
            response,
            hold,
            sink,
            doc,
            outcome.attempts,
            outcome.switches,
            started,
            persist,
        )

    async def stream(self, call: LlmCall, request: ChatRequest) -> AsyncIterator[StreamDelta | LlmResult]:
        """Deltas as they arrive (raw: partial tokens are not sanitised), then the `LlmResult`.
        Failover happens only before the first delta: a stream cannot switch provider midway."""
        started = time.perf_counter()
        prep = await self.prepare(call, replace(request, stream=True))
        if not prep.candidates:
            assert prep.blocked is not None
            await self._record_failure(
                prep, "blocked", exhausted_error(prep.blocked, prep.estimate), (), (), started
            )
            raise exhausted_error(prep.blocked, prep.estimate)
        timeout = prep.settings.get_int(TIMEOUT_KEY, 120_000) / 1000

        async def open_stream(candidate: Candidate) -> tuple[Any, Any, Hold | None]:
            hold = (
                None
                if candidate.unlimited
                else await self.ledger.reserve(call.tenant, prep.lines, prep.estimate)
            )
            try:
                endpoint = Endpoint(
                    candidate.wire_type, candidate.instance, candidate.base_url, candidate.api_key
                )
                client = ChatClient(
                    ADAPTERS[candidate.wire_type], endpoint, candidate.model, self.http, timeout=timeout
                )
                items = client.stream(prep.request).__aiter__()
                first = await items.__anext__()
            except BaseException:
                if hold is not None:
                    await self.ledger.release(hold)
                raise
            return items, first, hold

        try:
            outcome = await prep.engine.run(prep.candidates, open_stream)
        except (QuotaBlockedError, FailoverError) as exc:
            await self._record_failure(
                prep,
                "blocked" if isinstance(exc, QuotaExceededError) else "error",
                exc,
                exc.attempts,
                exc.switches,
                started,
            )
            raise
        items, first, hold = outcome.value
        candidate = outcome.candidate
        final: ChatResponse | None = None
        try:
            pending = [first]
            while True:
                for item in pending:
                    if isinstance(item, ChatResponse):
                        final = item
                    else:
                        yield item
                if final is not None:
                    break
                try:
                    pending = [await items.__anext__()]
                except StopAsyncIteration:
                    break
        except BaseException:
            if hold is not None:
                await self.ledger.release(hold)
            raise
        assert final is not None
        doc = self._model_doc(prep, candidate)
        sink = TraceBuffer(_secrets(candidate))
        sink.record(prep.request, final)  # the trace keeps the raw answer
        clean = sanitize(final, doc, wire_name=candidate.model)
        yield await self._finish(
            prep, candidate, clean, hold, sink, doc, outcome.attempts, outcome.switches, started,
            prep.settings.get_bool(PERSIST_KEY, False),
        )  # fmt: skip

    # -- after the call ------------------------------------------------------------------------

    async def _finish(
        self,
        prep: _Prepared,
        candidate: Candidate,
        response: ChatResponse,
        hold: Hold | None,
        sink: TraceBuffer,
        doc: ModelDoc | None,
        attempts: tuple[AttemptRecord, ...],
        switches: tuple[Switch, ...],
        started: float,
        persist: bool,
    ) -> LlmResult:
        call = prep.call
        usage = response.usage or TokenUsage(
            prep.request.estimated_input_tokens(), max(1, len(response.text) // 4)
        )
        if hold is not None:
            statuses = await self.ledger.settle(hold, usage.total)
            webhook = prep.settings.get(WEBHOOK_KEY)
            await self.notifier.check(call.tenant, statuses, account=call.account, webhook_url=webhook)
        cost = doc.cost_usd(usage.input, usage.output) if doc is not None else None
        duration = int((time.perf_counter() - started) * 1000)
        record = UsageRecord(
            call.tenant, call.account, call.project, prep.scope.team, candidate.wire_type, candidate.instance,
            candidate.model, prep.purpose, usage.input, usage.output, cost, candidate.credential_source, duration,
            "ok", None, switches, attempts, call.session_id, call.think_process_id, call.node_id,
        )  # fmt: skip
        await self.usage.record(record)
        if persist:
            await sink.flush(
                self.db, usage_id=record.id, tenant=call.tenant, project=call.project,
                provider=candidate.wire_type, instance=candidate.instance, model=candidate.model,
            )  # fmt: skip
        record_llm_call(
            candidate.wire_type,
            candidate.instance,
            prep.purpose,
            "ok",
            input_tokens=usage.input,
            output_tokens=usage.output,
        )
        return LlmResult(
            response, candidate.wire_type, candidate.instance, candidate.model, candidate.credential_source, usage,
            cost, prep.purpose, call.purpose, prep.choice.spec, switches, attempts, record.id, duration,
        )  # fmt: skip

    async def _record_failure(
        self,
        prep: _Prepared,
        outcome: str,
        error: Exception,
        attempts: tuple[AttemptRecord, ...],
        switches: tuple[Switch, ...],
        started: float,
    ) -> None:
        call = prep.call
        first = prep.candidates[0] if prep.candidates else None
        record = UsageRecord(
            call.tenant, call.account, call.project, prep.scope.team,
            first.wire_type if first else prep.resolution.protocol_type,
            first.instance if first else prep.resolution.instance,
            first.model if first else prep.resolution.model,
            prep.purpose, 0, 0, None, first.credential_source if first else "none",
            int((time.perf_counter() - started) * 1000), outcome, getattr(error, "message", str(error)),
            switches, attempts, call.session_id, call.think_process_id, call.node_id,
        )  # fmt: skip
        await self.usage.record(record)
        record_llm_call(record.provider, record.instance, prep.purpose, outcome)

    async def _purge_now_and_then(self, prep: _Prepared) -> None:
        """Drop usage records and traces past `ai.usage.retentionDays` — at most once an hour."""
        now = time.monotonic()
        if self._purged_at and now - self._purged_at < PURGE_EVERY_SECONDS:
            return
        self._purged_at = now
        days = self.settings.scoped(SearchScope("_system", "_tenant")).get_int(
            RETENTION_KEY, DEFAULT_RETENTION_DAYS
        )
        removed = await self.usage.purge(max(1, days))
        if removed:
            log.info("purged %d LLM usage records older than %d days", removed, days)

    def _model_doc(self, prep: _Prepared, candidate: Candidate) -> ModelDoc | None:
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

    # -- conveniences --------------------------------------------------------------------------

    async def ask(
        self, prompt: str, *, system: str | None = None, max_tokens: int = 1024, **call: Any
    ) -> LlmResult:
        return await self.chat(
            LlmCall(**call), ChatRequest.prompt(prompt, system=system, max_tokens=max_tokens)
        )


def _secrets(candidate: Candidate) -> tuple[str, ...]:
    return (candidate.api_key.reveal(),) if candidate.api_key else ()
