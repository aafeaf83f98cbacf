"""A loopback OTLP/HTTP trace receiver: what a tracing backend (Jaeger, Phoenix, Langfuse) would
receive, decoded from the protobuf with `opentelemetry-proto`.

    with OtlpReceiver() as receiver, tracing_to(receiver):
        ...                                   # spans are built and exported
        flush_tracing()
        spans = receiver.spans                # [ReceivedSpan(name, trace_id, span_id, parent_id, attributes, …)]
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

trace_service = pytest.importorskip(
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
    reason="the OTLP receiver decodes protobuf with opentelemetry-proto (the test extra)",
)


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    kind: int
    attributes: dict[str, Any]
    status_code: int
    """0 unset, 1 ok, 2 error (OTLP's `Status.StatusCode`)."""
    status_message: str
    scope: str
    start_ns: int
    end_ns: int


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        request = trace_service.ExportTraceServiceRequest()
        request.ParseFromString(body)
        received = []
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            name=s.name,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_id=s.parent_span_id.hex() or None,
                            kind=s.kind,
                            attributes={a.key: _value(a.value) for a in s.attributes},
                            status_code=s.status.code,
                            status_message=s.status.message,
                            scope=scope_spans.scope.name,
                            start_ns=s.start_time_unix_nano,
                            end_ns=s.end_time_unix_nano,
                        )
                    )
        with self.server.lock:
            self.server.spans.extend(received)
            self.server.paths.append(self.path)
        answer = trace_service.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.spans: list[ReceivedSpan] = []
        self.paths: list[str] = []

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # DESIGN §11: no delayed-ACK stalls
        return sock, address


class OtlpReceiver:
    def __init__(self) -> None:
        self._server = _Server()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._server.lock:
            return list(self._server.spans)

    @property
    def paths(self) -> list[str]:
        with self._server.lock:
            return list(self._server.paths)

    def clear(self) -> None:
        with self._server.lock:
            self._server.spans.clear()

    def named(self, name: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.name == name]


@contextmanager
def tracing_to(receiver: OtlpReceiver) -> Iterator[None]:
    """Tracing on in this process, exporting to `receiver`; off again afterwards."""
    from zarniwoop.observability.tracing import TracingSetup, configure_tracing, shutdown_tracing

    configure_tracing(TracingSetup(endpoint=receiver.url, service_name="zarniwoop-test"), env={})
    try:
        yield
    finally:
        shutdown_tracing()


def children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[ReceivedSpan]:
    return sorted((s for s in spans if s.parent_id == parent.span_id), key=lambda s: s.start_ns)
