"""The pool's cheap idle-connection check (`transport/backend.py`): installed on the shared client,
and it still sees a connection the server closed while it sat idle. The shared httpx2 client carries
LLM, content and proxied traffic; search GETs and POSTs go over `transport/h1.py` (tests/transport/test_h1.py)."""

from __future__ import annotations

import asyncio
import socket

import httpcore2
import httpx2
import pytest

from zarniwoop.transport.backend import CheapIdleCheckBackend, install, readable
from zarniwoop.transport.http import HttpTransport

pytestmark = pytest.mark.anyio


def test_readable_is_true_for_waiting_bytes_a_closed_peer_and_a_closed_socket():
    left, right = socket.socketpair()
    try:
        assert readable(left) is False
        right.sendall(b"x")
        assert readable(left) is True
        left.recv(1)
        assert readable(left) is False
        right.close()
        assert readable(left) is True  # EOF waiting: the peer closed
    finally:
        left.close()
    assert readable(left) is True  # fileno -1
    assert readable(None) is True


async def test_a_connection_closed_while_idle_is_dropped_and_the_next_request_reconnects():
    """A server that answers each connection once and closes it after a pause: the second request
    must not be sent on the dead connection (it would fail with a transport error)."""
    accepted = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()  # closes the kept-alive connection while the client's pool holds it idle

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport = HttpTransport()
    try:
        pool = transport.client._transport._pool  # type: ignore[attr-defined]
        assert isinstance(pool._network_backend, CheapIdleCheckBackend)
        first = await transport.client.get(f"http://127.0.0.1:{port}/a")
        [connection] = pool.connections
        assert connection.is_idle() and not connection.has_expired()
        await asyncio.sleep(0.3)
        assert connection.has_expired()  # the readable check saw the close
        second = await transport.client.get(f"http://127.0.0.1:{port}/b")
        assert [(r.status_code, r.content) for r in (first, second)] == [(200, b"ok")] * 2
        assert accepted == 2
    finally:
        await transport.aclose()
        server.close()
        await server.wait_closed()


async def _keep_alive_server(delay: float = 0.0) -> tuple[asyncio.Server, list[int]]:
    """Answers `ok` to every request on a kept-alive connection; `[connections accepted]`."""
    accepted = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted[0] += 1
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                await asyncio.sleep(delay)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0), accepted


async def test_a_released_request_with_nothing_queued_costs_no_second_pool_scan(monkeypatch):
    scans = 0
    original = httpcore2.AsyncConnectionPool._assign_requests_to_connections

    def counted(self: httpcore2.AsyncConnectionPool) -> list[httpcore2.AsyncConnectionInterface]:
        nonlocal scans
        scans += 1
        return original(self)

    monkeypatch.setattr(httpcore2.AsyncConnectionPool, "_assign_requests_to_connections", counted)
    server, accepted = await _keep_alive_server()
    port = server.sockets[0].getsockname()[1]
    transport = HttpTransport()
    try:
        for path in ("/a", "/b", "/c"):
            reply = await transport.client.get(f"http://127.0.0.1:{port}{path}")
            assert (reply.status_code, reply.content) == (200, b"ok")
        assert scans == 3  # one per request (on arrival), none on release
        assert accepted == [1]  # the one connection was reused
    finally:
        await transport.aclose()
        server.close()
        await server.wait_closed()


async def test_a_request_queued_behind_a_full_pool_gets_the_released_connection():
    """max_connections=1: the second request waits in the queue; the release must assign it."""
    server, accepted = await _keep_alive_server(delay=0.05)
    port = server.sockets[0].getsockname()[1]
    transport = httpx2.AsyncHTTPTransport(
        limits=httpx2.Limits(max_connections=1, max_keepalive_connections=1)
    )
    assert install(transport)
    try:
        async with httpx2.AsyncClient(transport=transport) as client:
            replies = await asyncio.wait_for(
                asyncio.gather(*(client.get(f"http://127.0.0.1:{port}/{i}") for i in range(3))), timeout=5
            )
        assert [(r.status_code, r.content) for r in replies] == [(200, b"ok")] * 3
        assert accepted == [1]
    finally:
        server.close()
        await server.wait_closed()


async def test_a_keep_alive_surplus_is_still_closed_on_release():
    """max_keepalive_connections=1 with 3 concurrent requests: 3 connections, 1 kept idle after."""
    server, accepted = await _keep_alive_server(delay=0.05)
    port = server.sockets[0].getsockname()[1]
    transport = httpx2.AsyncHTTPTransport(
        limits=httpx2.Limits(max_connections=5, max_keepalive_connections=1)
    )
    assert install(transport)
    try:
        async with httpx2.AsyncClient(transport=transport) as client:
            replies = await asyncio.gather(*(client.get(f"http://127.0.0.1:{port}/{i}") for i in range(3)))
            assert [r.status_code for r in replies] == [200] * 3
            assert accepted == [3]
            assert len(transport._pool.connections) == 1
    finally:
        server.close()
        await server.wait_closed()
