"""MCP over HTTP under `zarniwoop serve` (issue 44): the caller's `traceparent` header is the parent
of FastAPI's request span, the MCP SDK's tool span below it, and Zarniwoop's search span below that;
the tool result's `traceId` is the caller's trace."""

from __future__ import annotations

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry import context as otel_context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from ..support.otlp import OtlpReceiver, children
from ..support.runtime import write_config
from ..support.served import served
from ..support.waiting import until
from .test_tracing import QUERY, three_wikis

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group(__name__)]

TRACE_ID, PARENT = "7bf92f3577b34da6a3ce929d0e0e4738", "20f067aa0ba902b9"


@pytest.mark.process
async def test_mcp_over_http_joins_the_callers_trace(tmp_path, emulator):
    settings = {**three_wikis(emulator), "research.default.encyclopedia": "good"}
    config = write_config(tmp_path, {"settings": settings})
    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        with served(config, tmp_path / "home", env=env) as server:
            headers = {"Authorization": f"Bearer {server.token}", "traceparent": f"00-{TRACE_ID}-{PARENT}-01"}
            # Where this test process has a tracer provider (another test of this worker set one), the
            # SDK's client opens a span of its own and puts it in each request's `_meta`, which the
            # server rightly prefers to the HTTP header: the caller's trace is this process's current
            # one too, as it is for a caller that traces, so both carriers name it.
            caller = SpanContext(
                int(TRACE_ID, 16), int(PARENT, 16), is_remote=True, trace_flags=TraceFlags(1)
            )
            otel_context.attach(set_span_in_context(NonRecordingSpan(caller)))
            async with (
                httpx.AsyncClient(headers=headers, timeout=30) as http,
                Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
            ):
                result = await client.call_tool(
                    "research_search", {"query": QUERY, "modality": "encyclopedia"}
                )
            assert result.structured_content["traceId"] == TRACE_ID

            def the_search() -> list:
                return [s for s in receiver.spans if s.trace_id == TRACE_ID and s.name == "zarniwoop.search"]

            until(the_search, "the search span exported")
    spans = [s for s in receiver.spans if s.trace_id == TRACE_ID]
    [tool] = [s for s in spans if s.name == "tools/call research_search"]
    # The tool span's parent is the caller's: its span itself (the SDK's client carried it in `_meta`),
    # FastAPI's span of the POST /mcp under it (the header), or the client's own span where this
    # process has a tracer provider (another test of the worker set one) — never a trace of its own.
    parents = {PARENT} | {s.span_id for s in spans if s.parent_id == PARENT}
    assert tool.parent_id in parents or tool.parent_id not in {s.span_id for s in receiver.spans}
    assert [s.name for s in children(spans, tool)] == ["zarniwoop.search"]
