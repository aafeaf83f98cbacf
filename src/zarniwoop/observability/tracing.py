"""OpenTelemetry traces: the one place the rest of Zarniwoop starts spans, reads trace ids and
carries `traceparent` (DESIGN §10, docs/observability.md).

Off unless configured: an OTLP endpoint in the environment (`OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or the config file's `tracing:` block turns it on, and
`OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` keeps it off. Every caller asks
`TRACING.on` (one attribute read) before it builds a span or its attributes, so a process with
tracing off pays nothing measurable on the search and chat paths (`bench/instructions.py`).

    from zarniwoop.observability.tracing import TRACING, span
    if TRACING.on:
        with span("zarniwoop.search", {"zarniwoop.modality": "WEB"}) as s:
            ...
    else:
        ...

The SDK (`pip install 'zarniwoop[otel]'`) is imported only when tracing is configured; the core
needs only `opentelemetry-api`, which the MCP SDK requires anyway. The tracer provider is set
once per process (OpenTelemetry refuses to replace it): a later `configure_tracing` swaps the
exporter behind it, which is what lets tests point one process at several receivers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

    from ..contract.protocol import RequestSpec

TRACER_NAME = "zarniwoop"
_PROPAGATOR = TraceContextTextMapPropagator()


class _Switch:
    """`TRACING.on`: whether spans are built at all (one attribute read on the hot paths)."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = False


TRACING = _Switch()


@dataclass(frozen=True, slots=True)
class TracingSetup:
    """Where spans go, from the config file's `tracing:` block (the `OTEL_*` variables otherwise).

    `endpoint` is the OTLP/HTTP base URL (`/v1/traces` is appended, as for
    `OTEL_EXPORTER_OTLP_ENDPOINT`); `sample_ratio` 1.0 keeps every trace a caller did not sample out."""

    endpoint: str | None = None
    service_name: str | None = None
    sample_ratio: float | None = None
    headers: Mapping[str, str] | None = None
    protocol: str | None = None


def wanted(setup: TracingSetup | None, env: Mapping[str, str] = os.environ) -> bool:
    """Whether this process should trace: an endpoint is configured and nothing switches it off."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return bool(
        (setup and setup.endpoint)
        or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


class _Exports:
    """Where the provider's one span processor forwards: the current exporter's batch processor."""

    inner: SpanProcessor | None = None


_EXPORTS = _Exports()
_PROVIDER_SET: list[bool] = []


def _swappable() -> SpanProcessor:
    """The span processor set once on the provider; it forwards to `_EXPORTS.inner` (none: dropped)."""
    from opentelemetry.sdk.trace import SpanProcessor

    class Swappable(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            if _EXPORTS.inner is not None:
                _EXPORTS.inner.on_start(span, parent_context=parent_context)

        def on_end(self, span: ReadableSpan) -> None:
            if _EXPORTS.inner is not None:
                _EXPORTS.inner.on_end(span)

        def shutdown(self) -> None:
            if _EXPORTS.inner is not None:
                _EXPORTS.inner.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return _EXPORTS.inner.force_flush(timeout_millis) if _EXPORTS.inner is not None else True

    return Swappable()


def configure_tracing(setup: TracingSetup | None = None, env: Mapping[str, str] = os.environ) -> bool:
    """Turn tracing on when configured (see the module's docstring); returns whether it is on.

    Raises:
        ImportError: the configuration asks for traces and the `otel` extra is not installed;
            the caller reports it as a configuration error.
        ValueError: an unsupported `OTEL_EXPORTER_OTLP_PROTOCOL` / `tracing.protocol`."""
    if not wanted(setup, env):
        shutdown_tracing()
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    setup = setup or TracingSetup()
    protocol = (
        setup.protocol
        or env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    )
    if protocol != "http/protobuf":
        raise ValueError(f"OTLP protocol {protocol!r}: expected http/protobuf (the exporter installed)")
    endpoint = setup.endpoint.rstrip("/") + "/v1/traces" if setup.endpoint else None
    exporter = OTLPSpanExporter(endpoint=endpoint, headers=dict(setup.headers) if setup.headers else None)
    if not _PROVIDER_SET:
        attributes = {SERVICE_NAME: setup.service_name} if setup.service_name else {}
        if not attributes and "OTEL_SERVICE_NAME" not in env:
            attributes = {SERVICE_NAME: "zarniwoop"}
        sampler = (
            ParentBased(TraceIdRatioBased(setup.sample_ratio)) if setup.sample_ratio is not None else None
        )
        provider = TracerProvider(resource=Resource.create(attributes), sampler=sampler)
        provider.add_span_processor(_swappable())
        trace.set_tracer_provider(provider)
        _PROVIDER_SET.append(True)
    old, _EXPORTS.inner = _EXPORTS.inner, BatchSpanProcessor(exporter)
    if old is not None:
        old.shutdown()
    TRACING.on = True
    return True


def flush_tracing(timeout_millis: int = 5000) -> bool:
    """Send what the batch holds now (a CLI command's end, a test's check)."""
    return _EXPORTS.inner.force_flush(timeout_millis) if _EXPORTS.inner is not None else True


def shutdown_tracing() -> None:
    """Flush and stop exporting; spans are no longer built."""
    TRACING.on = False
    old, _EXPORTS.inner = _EXPORTS.inner, None
    if old is not None:
        old.shutdown()


def _tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER_NAME)


@contextmanager
def span(
    name: str,
    attributes: Mapping[str, Any] | None = None,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: otel_context.Context | None = None,
) -> Iterator[trace.Span]:
    """A span, current inside the block; an exception leaving it marks it as an error with the
    exception's type (its message may hold a query: never recorded). Only call with `TRACING.on`."""
    with _tracer().start_as_current_span(
        name,
        context=parent,
        kind=kind,
        attributes=_clean(attributes),
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):
                current.set_attribute("error.type", type(exc).__name__)
                current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def event_span(name: str, attributes: Mapping[str, Any]) -> None:
    """A zero-length child of the current span: something that happened but took no time (a
    candidate skipped by its cooldown)."""
    now = time.time_ns()
    _tracer().start_span(name, attributes=_clean(attributes), start_time=now).end(end_time=now)


def start_span_at(
    name: str,
    attributes: Mapping[str, Any],
    start_ns: int,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: trace.Span | None = None,
) -> trace.Span:
    """A span started at `start_ns` (epoch ns), not current: written after the fact from a record
    (an LLM call's usage record); the caller ends it with `end(end_time=…)`."""
    context = trace.set_span_in_context(parent) if parent is not None else None
    return _tracer().start_span(
        name, context=context, kind=kind, attributes=_clean(attributes), start_time=start_ns
    )


def set_attributes(attributes: Mapping[str, Any], target: trace.Span | None = None) -> None:
    """Attributes on `target` (the current span by default); None values are left out."""
    (target or trace.get_current_span()).set_attributes(_clean(attributes))


def set_error(cause: str | None, message: str | None = None, target: trace.Span | None = None) -> None:
    """The span failed: status ERROR with the result's one-word `cause` (`error.type` too)."""
    current = target or trace.get_current_span()
    word = cause or "error"
    current.set_attribute("error.type", word)
    current.set_attribute("zarniwoop.cause", word)
    current.set_status(Status(StatusCode.ERROR, message or word))


def _clean(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (attributes or {}).items() if v is not None}


def current_ids() -> tuple[str | None, str | None]:
    """`(trace_id, span_id)` of the current span as hex, or `(None, None)` outside one."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None, None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def current_trace_id() -> str | None:
    """The current trace's id (32 hex digits): the result's `traceId`, the audit row's, the header's."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def with_trace_id(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """`payload` (a result's JSON) with the current trace's `traceId` when tracing is on, so a result
    finds its trace, audit rows and log lines; `payload` itself, unchanged, otherwise. Every surface
    that answers with a result (a tool's, `zarniwoop search --json`) asks here."""
    if TRACING.on and (trace_id := current_trace_id()) is not None:
        return {**payload, "traceId": trace_id}
    return payload


def parent_from(headers: Mapping[str, str]) -> otel_context.Context | None:
    """The context an incoming W3C `traceparent` (and `tracestate`) names, or None without a valid one."""
    carrier = {k.lower(): v for k, v in headers.items() if k.lower() in ("traceparent", "tracestate")}
    if "traceparent" not in carrier:
        return None
    parent = _PROPAGATOR.extract(carrier)
    return parent if trace.get_current_span(parent).get_span_context().is_valid else None


@contextmanager
def attached(parent: otel_context.Context | None) -> Iterator[None]:
    """Make `parent` the current context inside the block (spans started there become its children)."""
    if parent is None:
        yield
        return
    token = otel_context.attach(parent)
    try:
        yield
    finally:
        otel_context.detach(token)


def traced(spec: RequestSpec) -> RequestSpec:
    """`spec` carrying the current span's `traceparent` — for an upstream the operator marked
    `.traceparent: true` (search endpoints and LLM instances alike); unchanged with tracing off."""
    if not TRACING.on:
        return spec
    headers = dict(spec.headers)
    _PROPAGATOR.inject(headers)  # `traceparent`, and `tracestate` where there is one
    return replace(spec, headers=headers)


__all__ = [
    "TRACER_NAME",
    "TRACING",
    "SpanKind",
    "TracingSetup",
    "attached",
    "configure_tracing",
    "current_ids",
    "current_trace_id",
    "event_span",
    "flush_tracing",
    "parent_from",
    "set_attributes",
    "set_error",
    "shutdown_tracing",
    "span",
    "start_span_at",
    "traced",
    "wanted",
    "with_trace_id",
]
