"""The trace id on every HTTP answer, so a caller finds its trace (docs/observability.md).

The request's span itself is not ours: FastAPI's native telemetry (0.16x) opens one SERVER span per
request under the caller's W3C `traceparent` as soon as a tracer provider is configured, and the MCP
SDK one per JSON-RPC message below it (the SDK's own middleware). Zarniwoop joins them — its tool,
search and LLM spans are their children — rather than opening a second span for the same request.
This middleware adds what they do not: the answer's `Zarniwoop-Trace-Id` and W3C `traceresponse`
headers, from the span current when the answer starts. Pure ASGI, and a pass-through when tracing
is off (one attribute read per request).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...observability.tracing import TRACING, current_ids

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

TRACE_ID_HEADER = "zarniwoop-trace-id"


def trace_id_headers(app: ASGIApp) -> ASGIApp:
    """The middleware (Starlette calls it with the app it wraps)."""

    async def traced(scope: Scope, receive: Receive, send: Send) -> None:
        if not TRACING.on or scope["type"] != "http":
            return await app(scope, receive, send)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = _with_trace_id(message)
            await send(message)

        return await app(scope, receive, sending)

    return traced


def _with_trace_id(start: Message) -> Message:
    trace_id, span_id = current_ids()
    if trace_id is None:
        return start
    headers = [
        *start.get("headers", ()),
        (TRACE_ID_HEADER.encode(), trace_id.encode()),
        (b"traceresponse", f"00-{trace_id}-{span_id}-01".encode()),
    ]
    return {**start, "headers": headers}


__all__ = ["TRACE_ID_HEADER", "trace_id_headers"]
