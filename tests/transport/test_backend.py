"""The pool's cheap idle-connection check (`transport/backend.py`): installed on the shared client,
and it still sees a connection the server closed while it sat idle."""

from __future__ import annotations

import asyncio
import socket

import pytest

from zarniwoop.contract import RequestSpec
from zarniwoop.transport.backend import CheapIdleCheckBackend, readable
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
        first = await transport.send(RequestSpec("GET", f"http://127.0.0.1:{port}/a"), timeout=2)
        [connection] = pool.connections
        assert connection.is_idle() and not connection.has_expired()
        await asyncio.sleep(0.3)
        assert connection.has_expired()  # the readable check saw the close
        second = await transport.send(RequestSpec("GET", f"http://127.0.0.1:{port}/b"), timeout=2)
        assert (first.status, first.body, second.status, second.body) == (200, b"ok", 200, b"ok")
        assert accepted == 2
    finally:
        await transport.aclose()
        server.close()
        await server.wait_closed()
