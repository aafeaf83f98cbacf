"""The LLM call path (seed 002 §10, DESIGN §8): every call runs under an account.

    purpose ─► model spec (preferences cascade; 95 % of a budget → the light model)  choice/model.py
            ─► alias resolver ─► (wire type, instance, model)                        choice/aliases.py
            ─► credential cascade account → project → team → tenant → operator → local
               (no key: MissingCredentialError, unless `ai.substitute`)      choice/key.py
            ─► candidates: primary, fallbackModels chain, priority, local    choice/order.py
            ─► per attempt: reserve estimate + max_tokens at every level at once (all must pass),
               admit into every per-minute window                            settlement.py
            ─► a fresh ChatClient with this call's key over the shared pool
            ─► tracing (raw) ─► sanitizing (parser, think tags) ─► caller    attempt.py, streaming.py
            ─► settle real usage at every level with the usage record, then the observers:
               metrics, trace, threshold notices (scheduled, off the latency path)  finish.py

The manager holds the parts (stores, budgets, transport) and runs a call's three steps, each a
module of its own: prepare (`prepare.py`) → attempt (`attempt.py`, `streaming.py`) → finish
(`finish.py`).

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
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..contract.errors import ZarniwoopError
from ..ledger import UsageStore
from ..limits.clock import Clock
from ..limits.windows import AdmissionWindows, LocalAdmissionWindows
from ..transport.http import HttpTransport
from . import attempt, streaming
from .adapters import ChatRequest, StreamDelta
from .call import LlmCall, LlmResult, ModelChoice, PreparedCall
from .notify import QuotaNotifier
from .observers import LlmMetrics, LlmObserver, TraceRecorder
from .prepare import CallMemory, choose_model, model_doc, prepare_call
from .settlement import CallWatch
from .spans import LlmSpans

if TYPE_CHECKING:
    from ..config.settings import SettingService
    from ..limits.budgets import Budgets
    from ..storage.db import Database
    from ..tenancy.accounts import OrgDirectory
    from ..tenancy.credentials import CredentialStore
    from .catalog import Catalog

__all__ = ["LlmCall", "LlmManager", "LlmResult", "ModelChoice", "PreparedCall"]


class LlmManager:
    """Runs LLM calls; one per process (`get_llm(runtime)`). It is the `CallParts` each step of a
    call reads (`call.py`).

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
        ledger: Budgets,
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
            (TraceRecorder(db), LlmMetrics(), LlmSpans(), self.notifier)
            if observers is None
            else tuple(observers)
        )
        self.rate: AdmissionWindows = rate or LocalAdmissionWindows()
        self.clock = clock or Clock()
        self.environ = os.environ if environ is None else environ
        self._memory = CallMemory()
        """What preparing a call keeps for the next ones (warnings given, plans built)."""
        self._settling: set[asyncio.Future[Any]] = set()
        """Abandoned calls still running on to be settled (`settlement.py`); `flush` waits for them."""

    async def catalog(self) -> Catalog | None:
        """The model catalog; None when the manager runs without one."""
        return await self._catalog() if self._catalog is not None else None

    # -- the path ----------------------------------------------------------------------------

    async def choose_model(self, call: LlmCall) -> ModelChoice:
        """Which model a call would run on, and its catalog entry — without calling it (recipes use
        the entry's `size` to pick a prompt variant before they build the request)."""
        return await choose_model(self, call)

    async def prepare(self, call: LlmCall, request: ChatRequest) -> PreparedCall:
        """Everything before the first byte leaves: scope, budgets, model, keys, candidates."""
        return await prepare_call(self, call, request, self._memory)

    async def chat(self, call: LlmCall, request: ChatRequest, *, watch: CallWatch | None = None) -> LlmResult:
        """One call through the whole path; the sanitised answer with who served it and what it cost.

        `watch`: the caller's handle (`settlement.py`); once it is abandoned the call is recorded as
        `cancelled`, and cut after the drain time, charged its whole reservation.

        Raises `QuotaExceededError` (a budget refused it; `.level` names which) or `FailoverError`
        (every candidate failed; `.attempts` says how).
        """
        started = time.perf_counter()
        prep = await attempt.begin(self, call, request, started, self._memory)
        if watch is not None:
            watch.bind(asyncio.current_task(), prep.drain)
        return await attempt.chat(self, prep, watch, started)

    def stream(self, call: LlmCall, request: ChatRequest) -> AsyncIterator[StreamDelta | LlmResult]:
        """Deltas as they arrive (raw: partial tokens are not sanitised), then the `LlmResult`.
        Failover happens only before the first delta: a stream cannot switch provider midway."""
        return streaming.stream(self, call, request, self._memory, self.adopt)

    def adopt(self, running: asyncio.Future[Any]) -> None:
        """Keep an abandoned call's task alive until it is settled (`flush` waits for it)."""
        self._settling.add(running)
        running.add_done_callback(self._settling.discard)

    async def context_window(self, call: LlmCall) -> int | None:
        """`contextWindowTokens` of the model this call would try first, from the catalog; None when
        no model resolves or the catalog does not know it (callers then pick a safe default)."""
        try:
            prep = await self.prepare(call, ChatRequest.prompt("", max_tokens=1))
        except ZarniwoopError:
            return None
        doc = model_doc(prep, prep.candidates[0]) if prep.candidates else None
        return doc.context_window_tokens if doc is not None else None

    # -- lifecycle -------------------------------------------------------------------------------

    async def flush(self) -> None:
        """Wait for abandoned calls to be settled, their charges written, and for what the
        observers scheduled (threshold webhooks) to finish."""
        while self._settling:
            await asyncio.gather(*list(self._settling), return_exceptions=True)
        await self.usage.charges.flush()
        for observer in self.observers:
            await observer.flush()

    async def aclose(self) -> None:
        """Flush the observers; the runtime calls this before it closes the shared pool."""
        await self.flush()
