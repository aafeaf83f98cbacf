"""How a gateway route answers one LLM call: streamed, once the first item arrived (a refusal or a
failover error before it still answers as JSON), or whole, unless the client went away first — the
call then runs on, detached, and is settled with what the upstream produced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.responses import StreamingResponse

from ...llm.settlement import CallWatch

if TYPE_CHECKING:
    from ...llm.adapters import ChatRequest, StreamDelta
    from ...llm.call import LlmCall, LlmResult
    from ...llm.manager import LlmManager


async def streamed(
    manager: LlmManager,
    call: LlmCall,
    chat_request: ChatRequest,
    events: Callable[[AsyncIterator[StreamDelta | LlmResult], StreamDelta | LlmResult], AsyncIterator[bytes]],
) -> StreamingResponse:
    """A streamed call's answer: the wire's `events` of its items, sent once the first one arrived —
    a refusal or a failover error before it still answers as JSON."""
    items = manager.stream(call, chat_request).__aiter__()
    first = await items.__anext__()
    return StreamingResponse(
        events(items, first),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


class ClientGone(Exception):
    """The client of a non-streamed call disconnected before its answer: nobody to answer (the
    gateway route's frame answers 499); the call runs on, detached, and is settled on its own
    (`llm/settlement.py`)."""


async def unless_gone(
    request: Request, manager: LlmManager, call: LlmCall, chat_request: ChatRequest
) -> LlmResult:
    """The non-streamed call's result; `ClientGone` when the client disconnected first: the call is
    then abandoned — it runs on detached and is settled with what the upstream produced."""
    watch = CallWatch()
    task = asyncio.ensure_future(manager.chat(call, chat_request, watch=watch))
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # the handler itself was cancelled (shutdown): same as a client gone
        gone.cancel()
        watch.abandon()
        manager.adopt(task)
        raise
    gone.cancel()
    if task.done():
        return task.result()
    watch.abandon()
    manager.adopt(task)
    task.add_done_callback(_quiet)
    raise ClientGone


async def _disconnected(request: Request) -> None:
    """Returns when the client closed its connection (the body was read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _quiet(task: asyncio.Future[Any]) -> None:
    """An abandoned call's failure has nobody to go to: it is in its usage row; retrieve it here."""
    if not task.cancelled():
        task.exception()


__all__ = ["ClientGone", "streamed", "unless_gone"]
