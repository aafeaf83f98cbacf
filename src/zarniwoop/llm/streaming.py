"""A streamed call: deltas as they arrive (raw: partial tokens are not sanitised), then the
`LlmResult`. Failover happens only before the first delta: a stream cannot switch provider midway.

The upstream is read by a task of its own (the pump), which also settles the call: a caller that
goes away stops only the relay, never the reading or the charging (`settlement.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..contract.errors import ProviderError, ProviderTimeoutError
from .adapters import StreamDelta
from .adapters.response import ChatResponse, TokenUsage
from .attempt import begin, client_for, run
from .call import LlmResult
from .finish import finish_cut, finish_served, secrets_of
from .prepare import model_doc
from .sanitize import sanitize
from .settlement import CANCELLED, CallWatch, release, reserve
from .trace import TraceBuffer
from .usage_check import delta_chars, estimate_tokens

if TYPE_CHECKING:
    from .adapters import ChatRequest
    from .call import CallParts, LlmCall, PreparedCall
    from .failover import Candidate, FailoverOutcome
    from .prepare import CallMemory
    from .settlement import Admission

Relayed = StreamDelta | LlmResult | BaseException
Upstream = AsyncIterator[StreamDelta | ChatResponse]


async def stream(
    parts: CallParts,
    call: LlmCall,
    request: ChatRequest,
    memory: CallMemory,
    adopt: Callable[[asyncio.Future[Any]], None],
) -> AsyncIterator[StreamDelta | LlmResult]:
    """`LlmManager.stream`: the deltas, then the result; `adopt` keeps the pump alive past a
    caller that went away until the call is settled."""
    started = time.perf_counter()
    prep = await begin(parts, call, replace(request, stream=True), started, memory)

    async def open_stream(
        candidate: Candidate,
    ) -> tuple[Upstream, StreamDelta | ChatResponse, Admission | None]:
        admission = await reserve(parts, prep, candidate)
        try:
            items = client_for(parts, prep, candidate).stream(prep.request).__aiter__()
            first = await items.__anext__()
        except BaseException:
            await release(parts, admission)
            raise
        return items, first, admission

    outcome = await run(parts, prep, open_stream, started)
    items, first, admission = outcome.value
    queue: asyncio.Queue[Relayed] = asyncio.Queue()
    watch = CallWatch()
    pump = asyncio.create_task(_pump(parts, prep, outcome, items, first, admission, queue, watch, started))
    adopt(pump)
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
    parts: CallParts,
    prep: PreparedCall,
    outcome: FailoverOutcome[Any],
    items: Upstream,
    first: StreamDelta | ChatResponse,
    admission: Admission | None,
    queue: asyncio.Queue[Relayed],
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
            await finish_cut(parts, prep, candidate, admission, usage, label, started, exc)
        else:
            await release(parts, admission)
        if not isinstance(exc, asyncio.CancelledError):
            queue.put_nowait(exc)
        return
    watch.settling()
    if final is None:
        queue.put_nowait(ProviderError(f"{candidate.instance}: the stream ended without an answer"))
        await release(parts, admission)
        return
    doc = model_doc(prep, candidate)
    sink = TraceBuffer(secrets_of(candidate))
    sink.record(prep.request, final)  # the trace keeps the raw answer
    try:
        answer = sanitize(final, doc, wire_name=candidate.model)
        result = await finish_served(
            parts,
            prep,
            outcome,
            answer,
            admission=admission,
            sink=sink,
            doc=doc,
            started=started,
            abandoned=watch.abandoned,
        )
    except BaseException as exc:
        queue.put_nowait(exc)
        raise
    queue.put_nowait(result)
