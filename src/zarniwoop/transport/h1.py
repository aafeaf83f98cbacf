"""Kept-alive HTTP/1.1 connections for the search hot path: direct GET and POST to the operator's hosts.

Why it exists: a search's upstream call through httpx2's client (its request and response models,
auth and redirect layers, httpcore2's pool, h11 and anyio's streams) cost ~0.5 ms of CPU, more than a
third of the server's CPU per search (issue 18, `bench/client_cost.py`). Here one request is one write
on an asyncio protocol and httptools' parser (the one uvicorn serves with) reads the answer in C.

`HttpTransport.send` uses this pool only for what it can do exactly as httpx2 does: a GET or POST,
no proxy, not SSRF-guarded, on the transport's own client (an injected client, such as the tests'
`httpx2.MockTransport`, is always used as given). Everything else still goes through httpx2.
Failures are raised as httpx2's own error types (`httpx2.ConnectError`, `httpx2.ReadTimeout`,
`httpx2.RemoteProtocolError`, …) with the socket error as their cause, so `translate_errors` and
`network.explain` word them the same for both paths.

    pool = H1Pool()
    head = request_head("GET", "/w/api.php?q=x", "en.wikipedia.org", headers, None, defaults=DEFAULTS)
    exchange = await pool.send(origin, head, None, timeout=8.0, cap=max_bytes, retry=True)
    exchange.status, exchange.headers       # arrived
    content = await exchange.read()         # the body, decoded and capped; the connection goes back
    await pool.aclose()
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import zlib
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import httptools
import httpx2

from ..contract.errors import ResponseTooLargeError

KEEPALIVE_EXPIRY = 30.0
"""Seconds an idle connection is kept (httpx2's `keepalive_expiry` of the shared client)."""
MAX_IDLE = 50
"""Idle connections kept over all hosts (the shared client's `max_keepalive_connections`)."""
MAX_CONNECTIONS = 200
"""Connections open at once (`max_connections`); a request past it waits for one to be released."""
MAX_DECODE_LINKS = 5
"""Content codings applied on top of each other that are undone (httpx2's `max_decode_links`)."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a connection goes: one pool of idle connections per origin."""

    scheme: str
    host: str
    """The host as it goes on the wire (IDNA-encoded; an IPv6 address without brackets)."""
    port: int


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection and the response being read on it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.hung_up = False
        """The server closed the connection (rather than this side, after a failure)."""
        self.idle_since = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._begin(0)

    def _begin(self, cap: int) -> None:
        self.cap = cap
        self.head: asyncio.Future[None] | None = None
        self.done: asyncio.Future[None] | None = None
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.size = 0
        self.received = False
        self.complete = False
        self.keep_alive = False
        self.last_activity = 0.0

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.done is None:  # bytes nobody asked for: this connection can no longer be trusted
            self.abort()
            return
        self.received = True
        self.last_activity = self.loop.time()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx2.RemoteProtocolError(f"malformed response ({type(exc).__name__})"), exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.hung_up = not self.closed
        self.closed = True
        if self.done is None or self.done.done():
            return
        if self.head is not None and self.head.done() and self._until_close():
            self._finish()  # a body without a length or chunks ends where the connection does
            return
        message = (
            "server disconnected without sending a response"
            if not self.received
            else "server closed the connection before the response was complete"
        )
        self._fail(httpx2.RemoteProtocolError(message), exc)

    # httptools' callbacks

    # A second answer to one request is a broken server: nothing of it is kept (`complete` is set
    # from the first answer's end until the next request), and the connection is not reused.

    def on_message_begin(self) -> None:
        if self.complete:
            self.keep_alive = False

    def on_headers_complete(self) -> None:
        if self.complete:
            return
        self.status = self.parser.get_status_code()
        if self.head is not None and not self.head.done() and self.status >= 200:
            self.head.set_result(None)

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.complete:
            self.headers.append((name, value))

    def on_body(self, body: bytes) -> None:
        if self.complete or self.closed:  # a second answer, or the rest of one already refused
            return
        self.size += len(body)
        if self.size > self.cap:
            self._fail(ResponseTooLargeError(f"response exceeds the {self.cap}-byte cap"), None)
            return
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        if self.complete:
            return
        if 100 <= self.status < 200:  # an interim answer (103 Early Hints): the real one follows
            self.headers, self.chunks, self.size = [], [], 0
            return
        self.keep_alive = self.parser.should_keep_alive()  # only known here: the parser resets after
        self._finish()

    # the exchange

    def start(self, head: bytes, body: bytes | None, cap: int) -> None:
        self._begin(cap)
        self.head, self.done = self.loop.create_future(), self.loop.create_future()
        self.last_activity = self.loop.time()
        assert self.transport is not None
        self.transport.write(head + body if body else head)

    def watch(self, timeout: float) -> None:
        """Fail the exchange once nothing has arrived for `timeout` seconds (httpx2's read timeout:
        the time between two reads, not the whole response)."""

        def check() -> None:
            if self.done is None or self.done.done():
                return
            quiet = self.loop.time() - self.last_activity
            if quiet < timeout:
                self._timer = self.loop.call_later(timeout - quiet, check)
                return
            self._fail(httpx2.ReadTimeout("no data within the read timeout"), None)

        self._timer = self.loop.call_later(timeout, check)

    def unwatch(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed

    def end(self) -> None:
        """The exchange is over (read or abandoned): bytes arriving now are unasked for."""
        self.head = self.done = None

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _until_close(self) -> bool:
        names = {name.lower() for name, _ in self.headers}
        return b"content-length" not in names and b"transfer-encoding" not in names

    def _finish(self) -> None:
        self.complete = True
        if self.head is not None and not self.head.done():
            self.head.set_result(None)
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def _fail(self, error: BaseException, cause: BaseException | None) -> None:
        error.__cause__ = cause
        for future in (self.head, self.done):
            if future is not None and not future.done():
                future.set_exception(error)
                future.exception()  # retrieved: only one of the two is awaited when the head fails
        self.abort()


class Exchange:
    """A response whose status and headers have arrived; `read` gives its body."""

    __slots__ = ("_connection", "_origin", "_pool", "headers", "status")

    def __init__(self, pool: H1Pool, origin: Origin, connection: _Connection) -> None:
        self._pool, self._origin, self._connection = pool, origin, connection
        self.status = connection.status
        self.headers = _merged(connection.headers)
        """Lower-case names; a repeated header's values joined by ", " (as `dict(httpx2.Headers)`)."""

    async def read(self) -> bytes:
        """The whole body, its content codings undone; more than the exchange's cap on the wire or
        after decoding is a `ResponseTooLargeError` (a gzip bomb stops at the cap, not in memory)."""
        connection = self._connection
        try:
            declared = self.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > connection.cap:
                raise ResponseTooLargeError(
                    f"response of {declared} bytes exceeds the {connection.cap}-byte cap"
                )
            assert connection.done is not None
            await connection.done
            body = b"".join(connection.chunks)
            coding = self.headers.get("content-encoding")
            return _decoded(body, coding, connection.cap) if coding else body
        finally:
            self.release()

    def release(self) -> None:
        """Back to the pool if the response was read whole and the server keeps the connection."""
        connection = self._connection
        connection.unwatch()
        keep = connection.reusable()
        connection.end()
        connection.chunks = []
        self._pool._release(self._origin, connection, keep=keep)


class H1Pool:
    """Idle connections per origin, most recently used first; at most `max_connections` open.

    Args:
        ssl_context: for `https` origins; by default httpx2's own verifying context (the same trust
            store as the shared client), so both paths accept the same certificates.
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = MAX_CONNECTIONS,
        max_idle: int = MAX_IDLE,
        keepalive_expiry: float = KEEPALIVE_EXPIRY,
    ) -> None:
        self._ssl_context = ssl_context
        self._max_connections = max_connections
        self._max_idle = max_idle
        self._expiry = keepalive_expiry
        self._idle: dict[Origin, deque[_Connection]] = {}
        self._idle_count = 0
        self._open = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @property
    def open_connections(self) -> int:
        return self._open

    @property
    def idle_connections(self) -> int:
        return self._idle_count

    async def send(
        self, origin: Origin, head: bytes, body: bytes | None, *, timeout: float, cap: int, retry: bool
    ) -> Exchange:
        """Write one request; return once the answer's status and headers are in. More than `cap`
        bytes of body fails the exchange as they arrive (`Exchange.read` raises it).

        `retry`: the request may be sent again (a GET): when a kept connection turns out to have
        been closed by the server before any byte of the answer came back (a server closes idle
        connections whenever it likes), it is sent on the next kept one, or on a new connection,
        whose failure is final.
        """
        loop = self._bind()
        while True:
            connection, reused = await self._acquire(origin, timeout, loop)
            connection.start(head, body, cap)
            connection.watch(timeout)
            try:
                assert connection.head is not None
                await connection.head
            except BaseException:  # the server hung up, a timeout, or the caller cancelled (a lost hedge)
                connection.unwatch()
                connection.end()
                self._release(origin, connection, keep=False)
                if retry and reused and connection.hung_up and not connection.received:
                    continue
                raise
            return Exchange(self, origin, connection)

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for connection in idle:
                connection.abort()
        self._idle.clear()
        self._idle_count = 0

    # connections

    def _bind(self) -> asyncio.AbstractEventLoop:
        """The running loop; connections made on another one (a test's earlier loop) are dropped."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            if self._closed:
                raise httpx2.ConnectError("the transport is closed")
            for idle in self._idle.values():
                for connection in idle:
                    with contextlib.suppress(RuntimeError):  # that loop may be closed already
                        connection.abort()
            self._idle.clear()
            self._idle_count = self._open = 0
            self._waiters.clear()
            self._loop = loop
        return loop

    def _idle_connection(self, origin: Origin, loop: asyncio.AbstractEventLoop) -> _Connection | None:
        idle = self._idle.get(origin)
        now = loop.time()
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            if not connection.closed and now - connection.idle_since < self._expiry:
                return connection
            self._drop(connection)
        return None

    async def _acquire(
        self, origin: Origin, timeout: float, loop: asyncio.AbstractEventLoop
    ) -> tuple[_Connection, bool]:
        """An idle connection to `origin` (reused: True) or a new one; at `max_connections` an idle
        connection to another origin is closed to make room, or else the request waits for a release."""
        deadline = loop.time() + timeout
        while True:
            connection = self._idle_connection(origin, loop)
            if connection is not None:
                return connection, True
            if self._closed:
                raise httpx2.ConnectError("the transport is closed")
            if self._open < self._max_connections:
                return await self._connect(origin, timeout, loop), False
            if self._idle_count:
                self._evict_one()
                continue
            waiter = loop.create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout_at(deadline):
                    await waiter
            except TimeoutError:
                raise httpx2.PoolTimeout("no connection free within the timeout") from None
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    async def _connect(self, origin: Origin, timeout: float, loop: asyncio.AbstractEventLoop) -> _Connection:
        self._open += 1
        tls = origin.scheme == "https"
        try:
            async with asyncio.timeout(timeout):
                _, connection = await loop.create_connection(
                    lambda: _Connection(loop),
                    origin.host,
                    origin.port,
                    ssl=self._tls() if tls else None,
                    server_hostname=origin.host if tls else None,
                )
        except TimeoutError:
            self._closed_one()
            raise httpx2.ConnectTimeout("no connection within the timeout") from None
        except OSError as exc:  # gaierror, refused, reset, a certificate not trusted (ssl.SSLError)
            self._closed_one()
            raise httpx2.ConnectError(type(exc).__name__) from exc
        except BaseException:
            self._closed_one()
            raise
        return connection

    def _evict_one(self) -> None:
        """Close the longest-idle connection of the origin with most idle ones."""
        idle = max(self._idle.values(), key=len)
        self._idle_count -= 1
        self._drop(idle.popleft())

    def _release(self, origin: Origin, connection: _Connection, *, keep: bool) -> None:
        if keep and not self._closed and connection.loop is self._loop and self._idle_count < self._max_idle:
            connection.idle_since = connection.loop.time()
            self._idle.setdefault(origin, deque()).append(connection)
            self._idle_count += 1
            self._wake_one()
            return
        self._drop(connection)

    def _drop(self, connection: _Connection) -> None:
        connection.abort()
        if connection.loop is self._loop:
            self._closed_one()

    def _closed_one(self) -> None:
        self._open -= 1
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                break

    def _tls(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            context = httpx2.create_ssl_context(trust_env=False)
            context.set_alpn_protocols(["http/1.1"])
            self._ssl_context = context
        return self._ssl_context


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""What may not be in a header value (h11's rule: no control character but a tab)."""


def request_head(
    method: str,
    target: str,
    host: str,
    headers: Mapping[str, str],
    body: bytes | None,
    *,
    defaults: Iterable[tuple[str, str]],
) -> bytes:
    """The request line and headers: `Host`, then `defaults` with `headers` over them (names compared
    without case, a replaced one keeping its place), then `Content-Length` and `Content-Type` for a
    JSON body unless given. A name that is not a token, or a value with a line break or another
    control character (a key pasted with its newline), is a `LocalProtocolError`: never a second
    header or request smuggled onto the wire."""
    merged = {name.lower(): (name, value) for name, value in defaults}
    for name, value in headers.items():
        merged[name.lower()] = (name, value)
    if body is not None:
        merged.setdefault("content-length", ("Content-Length", str(len(body))))
        merged.setdefault("content-type", ("Content-Type", "application/json"))
    if "host" in merged:
        host = merged.pop("host")[1]
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    for name, value in merged.values():
        if not _TOKEN.fullmatch(name) or _CONTROL.search(value):
            raise httpx2.LocalProtocolError(f"header {name!r} is not valid on the wire")
        lines.append(f"{name}: {value}")
    lines.append("\r\n")
    try:
        return "\r\n".join(lines).encode("ascii")
    except UnicodeEncodeError:
        raise httpx2.LocalProtocolError("a header is not ASCII") from None


def _merged(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for raw_name, raw_value in raw:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        merged[name] = f"{merged[name]}, {value}" if name in merged else value
    return merged


def _decoded(body: bytes, coding: str, cap: int) -> bytes:
    """Undo `Content-Encoding` (gzip, deflate; what the pool's Accept-Encoding offers), last applied
    first, never inflating past `cap`; a coding it does not know is left as it is, as httpx2 does."""
    codings = [c.strip().lower() for c in coding.split(",") if c.strip().lower() in ("gzip", "deflate")]
    if len(codings) > MAX_DECODE_LINKS:
        raise httpx2.DecodingError(f"more than {MAX_DECODE_LINKS} content encodings")
    for name in reversed(codings):
        body = _inflate(body, name, cap)
    return body


def _inflate(body: bytes, coding: str, cap: int) -> bytes:
    wbits = zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS
    try:
        try:
            out: bytes = zlib.decompressobj(wbits).decompress(body, cap + 1)
        except zlib.error:
            if coding != "deflate":
                raise
            # raw deflate, without the zlib header (servers send both; httpx2 takes both)
            out = zlib.decompressobj(-zlib.MAX_WBITS).decompress(body, cap + 1)
    except zlib.error as exc:
        raise httpx2.DecodingError(f"{coding} body cannot be decoded") from exc
    if len(out) > cap:
        raise ResponseTooLargeError(f"response exceeds the {cap}-byte cap once decoded")
    return out


__all__ = ["Exchange", "H1Pool", "Origin", "request_head"]
