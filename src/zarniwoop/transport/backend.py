"""httpcore2's network backend with a cheap idle-connection check, for the shared client's pool.

On every request and every release the pool asks each idle connection `has_expired()`, which asks
its stream `get_extra_info("is_readable")`; anyio answers that by building a dict of all of a
socket's attributes (a `getpeername` syscall among them) to find the raw socket. With 16 idle
connections that was 7 % of the server's CPU per search (issue 18's profile). The streams here keep
their raw socket from the start and poll it directly: the same answer (readable = the server closed
or sent something unasked), without the attribute walk.

    install(transport)   # an httpx2.AsyncHTTPTransport: its pool's new connections use this backend
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2


def readable(sock: socket.socket | None) -> bool:
    """httpcore2's `is_socket_readable`: a socket gone or with bytes waiting is readable."""
    if sock is None or sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class _Stream(httpcore2.AsyncNetworkStream):
    __slots__ = ("_inner", "_socket")

    def __init__(self, inner: httpcore2.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.AsyncNetworkStream:
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return readable(self._socket)
        if info == "socket":
            return self._socket
        return self._inner.get_extra_info(info)


class CheapIdleCheckBackend(httpcore2.AsyncNetworkBackend):
    """Delegates to `inner` (the pool's own backend); wraps the streams it opens."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return _Stream(stream)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        stream = await self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options)
        return _Stream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def skip_idle_rescan(pool: httpcore2.AsyncConnectionPool) -> None:
    """The pool scans every connection when a request arrives and again when one is released. The
    second scan assigns queued requests, closes a keep-alive surplus and drops closed or expired
    connections; with no request queued and no surplus possible it has only the dropping to do, and
    the next request's own scan does that before any assignment. So that scan is skipped then (the
    one on arrival, where the new request is queued, always runs): one pass over the pool per request.
    """
    full = pool._assign_requests_to_connections

    def assign() -> list[httpcore2.AsyncConnectionInterface]:
        if len(pool._connections) <= pool._max_keepalive_connections and not any(
            request.is_queued() for request in pool._requests
        ):
            return []
        return full()

    # `PoolByteStream.aclose` and `handle_async_request` call it through the instance.
    pool._assign_requests_to_connections = assign  # type: ignore[method-assign]


def install(transport: httpx2.AsyncHTTPTransport) -> bool:
    """Give `transport`'s pool this backend (before it opens a connection) and one scan per request
    (`skip_idle_rescan`); False where httpx2's internals differ from what this expects (the pool then
    keeps its own backend and scans)."""
    pool = getattr(transport, "_pool", None)
    if not isinstance(pool, httpcore2.AsyncConnectionPool) or not all(
        hasattr(pool, name)
        for name in ("_network_backend", "_connections", "_requests", "_max_keepalive_connections")
    ):
        return False
    pool._network_backend = CheapIdleCheckBackend(pool._network_backend)
    skip_idle_rescan(pool)
    return True


__all__ = ["CheapIdleCheckBackend", "install", "readable", "skip_idle_rescan"]
