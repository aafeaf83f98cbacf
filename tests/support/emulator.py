"""A loopback emulator of provider wire APIs, with fault modes.

A stdlib `ThreadingHTTPServer` on 127.0.0.1 in a background thread, so a hanging route never
blocks the test's event loop. TCP_NODELAY is set on every connection: without it delayed ACKs add
~40 ms to each keep-alive request and every latency figure lies.

    emu = Emulator().start()
    emu.add("/w/rest.php/v1/search/page", Reply.json({"pages": []}))
    emu.add("/a/works", Reply(status=503))                 # fault: status
    emu.add("/b/works", Reply(status=429, headers={"Retry-After": "7"}))
    emu.add("/c/works", Reply(hang=True))                 # fault: never answers (until stop)
    emu.add("/d/works", Reply.json(body, chunk_delay=0.2)) # fault: slow body
    emu.add("/e/works", Reply(body=b"{not json"))          # fault: malformed
    emu.add("/f/works", Reply(body=b"x" * 50_000_000))     # fault: oversized
    emu.add("/g/works", Reply(body=b"{...}", cut="truncate"))  # fault: body ends short of Content-Length
    emu.add("/h/works", Reply(body=b"{...}", cut="reset"))     # fault: connection reset mid-body
    emu.add_prefix("/any/", Reply(status=500))             # every path under /any/ (longest prefix wins)
    emu.requests("/a/works")                               # request log
    emu.stop()

A route may also be a callable `(RecordedRequest) -> Reply`, to check auth headers or vary by query.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering."""
    hang: bool = False
    """Never answer (until the emulator stops)."""
    chunk_delay: float = 0.0
    """Send the body in chunks with this pause between them (a slow body)."""
    chunks: int = 4
    cut: Literal["truncate", "reset"] | None = None
    """Send the full Content-Length but only half the body, then close (`truncate`: a clean FIN;
    `reset`: SO_LINGER 0, so the client sees a TCP reset mid-body)."""

    @classmethod
    def json(cls, data: Any, status: int = 200, **kw: Any) -> Reply:
        body = data if isinstance(data, bytes) else json.dumps(data).encode()
        headers = {"Content-Type": "application/json", **kw.pop("headers", {})}
        return cls(status=status, body=body, headers=headers, **kw)

    @classmethod
    def file(cls, path: Any, content_type: str = "application/json", **kw: Any) -> Reply:
        headers = {"Content-Type": content_type, **kw.pop("headers", {})}
        return cls(body=open(path, "rb").read(), headers=headers, **kw)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic()

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        return json.loads(self.body or b"null")


Route = Reply | Callable[[RecordedRequest], Reply]


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a burst of concurrent connections (discovery
    # lists every instance at once; 200 concurrent searches from two processes) overflows it, and
    # a dropped SYN costs a 1 s retransmit.
    request_queue_size = 512

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that reset or dropped its connection (the fault modes provoke it) is not an error
        of the emulator: stay quiet about it; print anything else as socketserver does."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class Emulator:
    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}
        self._prefixes: dict[str, Route] = {}
        self._log: list[RecordedRequest] = []
        self._completed: list[tuple[RecordedRequest, Reply]] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        """Notified at each request logged: `wait_for_requests` sleeps on it, no polling."""
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "emulator not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Emulator:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                emulator._serve(self)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval: `stop()` (shutdown) waits up to one interval, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="emulator", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def add(self, path: str, route: Route) -> None:
        with self._lock:
            self._routes[path] = route

    def add_held(self, path: str, reply: Reply, *, first_only: bool = False) -> threading.Event:
        """`path` answers `reply` only once the returned event is set (a search held upstream while a
        test kills or cancels what sent it); `first_only`: later requests answer at once. Set the
        event before the emulator stops."""
        release = threading.Event()
        seen = [0]

        def held(_request: RecordedRequest) -> Reply:
            seen[0] += 1
            if seen[0] == 1 or not first_only:
                release.wait(120)
            return reply

        self.add(path, held)
        return release

    def add_prefix(self, prefix: str, route: Route) -> None:
        """Serve every path starting with `prefix` that has no exact route (longest prefix wins)."""
        with self._lock:
            self._prefixes[prefix] = route

    def _route_for(self, path: str) -> Route | None:
        route = self._routes.get(path)
        if route is None:
            matching = [p for p in self._prefixes if path.startswith(p)]
            route = self._prefixes[max(matching, key=len)] if matching else None
        return route

    def requests(self, path: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self._log if path is None or r.path == path]

    def wait_for_requests(self, path: str, count: int, timeout: float = 60.0) -> list[RecordedRequest]:
        """Block (a thread, never an event loop) until `count` requests to `path` arrived, or
        `timeout` passed; the requests to `path` then (the caller asserts how many)."""
        with self._arrived:
            self._arrived.wait_for(lambda: sum(r.path == path for r in self._log) >= count, timeout)
            return [r for r in self._log if r.path == path]

    def completed(self, path: str | None = None) -> list[tuple[RecordedRequest, Reply]]:
        """The requests whose reply was written to its last byte, with that reply: what the upstream
        produced in full (a client that hung up midway is not in it)."""
        with self._lock:
            return [(r, reply) for r, reply in self._completed if path is None or r.path == path]

    def reset(self) -> None:
        with self._lock:
            self._routes.clear()
            self._prefixes.clear()
            self._log.clear()
            self._completed.clear()

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()
            self._completed.clear()

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        split = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        request = RecordedRequest(
            method=handler.command,
            path=split.path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
            at=time.monotonic(),
        )
        with self._lock:
            self._log.append(request)
            self._arrived.notify_all()
            route = self._route_for(split.path)
        if route is None:
            reply = Reply.json({"error": f"no route for {split.path}"}, status=404)
        else:
            reply = route(request) if callable(route) else route
        if reply.hang:
            self._stopping.wait(timeout=60)
            return
        if reply.delay:
            time.sleep(reply.delay)
        try:
            handler.send_response(reply.status)
            for key, value in reply.headers.items():
                handler.send_header(key, value)
            handler.send_header("Content-Length", str(len(reply.body)))
            handler.end_headers()
            if reply.cut is not None:
                self._cut(handler, reply)
                return
            if reply.chunk_delay and reply.body:
                step = max(1, len(reply.body) // reply.chunks)
                for start in range(0, len(reply.body), step):
                    handler.wfile.write(reply.body[start : start + step])
                    handler.wfile.flush()
                    if start + step >= len(reply.body):
                        self._complete(request, reply)
                    self._stopping.wait(reply.chunk_delay)  # a long drip still ends with the emulator
            else:
                handler.wfile.write(reply.body)
                handler.wfile.flush()
                self._complete(request, reply)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout, size cap): that is the point of some fault modes

    def _complete(self, request: RecordedRequest, reply: Reply) -> None:
        with self._lock:
            self._completed.append((request, reply))

    @staticmethod
    def _cut(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        handler.wfile.write(reply.body[: len(reply.body) // 2])
        handler.wfile.flush()
        handler.close_connection = True
        if reply.cut == "reset":
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.connection.close()
