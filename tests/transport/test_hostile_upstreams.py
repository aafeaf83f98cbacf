"""The transport against upstreams that misbehave on purpose, on raw loopback servers that say byte for
byte what they send: oversized heads, downgrading and cross-origin redirects, decompression bombs,
and kept connections reset under a request (issue 23)."""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import threading
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field

import pytest

from zarniwoop.contract import RequestSpec, ResponseTooLargeError, TransportError
from zarniwoop.transport.http import HttpTransport

from ..support.waiting import until_async

pytestmark = pytest.mark.anyio

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "RawServer"], Awaitable[None]]


@dataclass
class RawServer:
    """A loopback server running one script per connection; it counts what it received."""

    port: int = 0
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    sent: int = 0
    """Bytes the scripts managed to write before the client went away."""
    ended: int = 0
    """Connections whose script has ended (by a write failing against a closed one, say)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def read_request(self, reader: asyncio.StreamReader) -> bytes | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        self.requests.append(head)
        return head


@pytest.fixture
def raw_server() -> Iterator[Callable[[Script], Awaitable[RawServer]]]:
    """Servers on an event loop of their own thread: the client's CPU time is then the test thread's."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    servers: list[asyncio.Server] = []

    async def listen(script: Script) -> RawServer:
        state = RawServer()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            state.connections += 1
            writer.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                await script(reader, writer, state)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()
                state.ended += 1

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        state.port = server.sockets[0].getsockname()[1]
        return state

    async def start(script: Script) -> RawServer:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(listen(script), loop))

    yield start

    async def stop() -> None:
        for server in servers:
            server.close()

    asyncio.run_coroutine_threadsafe(stop(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(60)
    loop.close()


async def _write_all(writer: asyncio.StreamWriter, state: RawServer, data: bytes, piece: int = 65536) -> None:
    for start in range(0, len(data), piece):
        writer.write(data[start : start + piece])
        await writer.drain()
        state.sent += min(piece, len(data) - start)


class LoopWatch:
    """The longest stretch the event loop went without running a 5 ms ticker, and the CPU time the
    loop's thread spent meanwhile (thread time: what a blocking parser would cost, whatever the
    machine's load)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopWatch:
        self.cpu = time.thread_time()
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    async def _tick(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now

    async def __aexit__(self, *exc: object) -> None:
        self.cpu = time.thread_time() - self.cpu
        assert self._task is not None
        self._task.cancel()


@pytest.fixture
async def transport() -> AsyncIterator[HttpTransport]:
    t = HttpTransport(address_allowed=lambda address, port: True)  # loopback ports play "public" hosts
    yield t
    await t.aclose()


async def test_200000_repeated_header_lines_are_refused_at_once(raw_server, transport):
    async def script(reader, writer, state):
        await state.read_request(reader)
        await _write_all(
            writer, state, b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 200_000 + b"Content-Length: 0\r\n\r\n"
        )

    server = await raw_server(script)
    async with LoopWatch() as watch:
        with pytest.raises(TransportError) as caught:
            await transport.send(RequestSpec("GET", f"{server.url}/s"), timeout=60)
    assert (
        caught.value.message
        == f"response head from 127.0.0.1:{server.port} refused: more header fields than the cap"
    )
    assert watch.cpu < 0.1, f"the loop's thread spent {watch.cpu:.3f}s of CPU on one refused head"
    print(f"loop's longest pause {watch.longest * 1000:.1f} ms, CPU {watch.cpu * 1000:.1f} ms")


async def test_a_64_mib_response_head_is_refused_without_reading_it(raw_server, transport):
    async def script(reader, writer, state):
        await state.read_request(reader)
        await _write_all(writer, state, b"HTTP/1.1 200 OK\r\nX-A: " + b"b" * (64 << 20) + b"\r\n\r\n")

    server = await raw_server(script)
    async with LoopWatch() as watch:
        with pytest.raises(TransportError) as caught:
            await transport.send(RequestSpec("GET", f"{server.url}/s"), timeout=60)
    assert caught.value.message == (
        f"response head from 127.0.0.1:{server.port} refused: a line or header field over the size cap"
    )
    # the server's writes failed against the closed connection: its script ended
    await until_async(lambda: server.ended == 1, "the server's script to end")
    assert server.sent < 16 << 20, f"the client read {server.sent} bytes of a refused head"
    assert watch.cpu < 0.1, f"the loop's thread spent {watch.cpu:.3f}s of CPU on one refused head"


async def test_a_redirect_from_https_to_http_is_refused():
    from zarniwoop.transport.redirects import next_hop

    with pytest.raises(
        TransportError, match=r"redirect from https to http refused \(api\.example → api\.example\)"
    ):
        next_hop("https://api.example/s", 301, "http://api.example/s", method="GET", body=None, headers={})


async def test_a_cross_origin_redirect_drops_every_credential_header(raw_server, transport):
    async def target(reader, writer, state):
        await state.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nhere")

    elsewhere = await raw_server(target)

    async def redirect(reader, writer, state):
        await state.read_request(reader)
        writer.write(
            f"HTTP/1.1 302 Found\r\nLocation: {elsewhere.url}/landing\r\nContent-Length: 0\r\n\r\n".encode()
        )

    origin = await raw_server(redirect)
    secrets = {
        "Authorization": "Bearer sk-1",
        "x-api-key": "k-2",
        "X-Goog-Api-Key": "k-3",
        "X-Subscription-Token": "k-4",
        "X-Custom-Secret": "k-5",
        "Cookie": "session=k-6",
    }
    spec = RequestSpec(
        "GET",
        f"{origin.url}/s",
        headers={**secrets, "Accept": "application/json"},
        secret_headers=frozenset({"x-custom-secret"}),
    )
    raw = await transport.send(spec, timeout=60)
    assert (raw.status, raw.body, raw.url) == (200, b"here", f"{elsewhere.url}/landing")
    first, second = origin.requests[0].decode().lower(), elsewhere.requests[0].decode().lower()
    assert all(f"{name.lower()}: {value.lower()}" in first for name, value in secrets.items())
    assert [value for value in secrets.values() if value.lower() in second] == []
    assert "accept: application/json" in second


async def test_a_cross_origin_redirect_of_a_post_with_a_body_is_refused(raw_server, transport):
    async def redirect(reader, writer, state):
        await state.read_request(reader)
        writer.write(
            b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.2:9/x\r\nContent-Length: 0\r\n\r\n"
        )

    origin = await raw_server(redirect)
    with pytest.raises(TransportError, match="would resend the request body; refused"):
        await transport.send(RequestSpec("POST", f"{origin.url}/s", json_body={"api_key": "k"}), timeout=60)


def _gzip_of_zeros(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    parts = [compressor.compress(block) for _ in range(size >> 20)]
    return b"".join(parts) + compressor.flush()


async def test_a_gzip_bomb_stops_at_the_cap_as_decoded(raw_server):
    # A 1 MiB cap and 128 MiB of zeros in about 130 KiB: the wire bytes are far under the cap, what
    # they decode to 128 times over it (compressing a bigger bomb cost seconds of CPU and proved no more).
    cap = 1 << 20
    bomb = _gzip_of_zeros(128 << 20)
    assert len(bomb) < cap // 4

    async def script(reader, writer, state):
        await state.read_request(reader)
        head = f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n\r\n".encode()
        await _write_all(writer, state, head + bomb)

    server = await raw_server(script)
    transport = HttpTransport(max_bytes=cap)
    try:
        with pytest.raises(ResponseTooLargeError, match=r"exceeds the 1048576-byte cap"):
            await transport.send(RequestSpec("GET", f"{server.url}/s"), timeout=60)
        # and a small gzip body is decoded as usual
        assert gzip.decompress(_gzip_of_zeros(1 << 20)) == bytes(1 << 20)
    finally:
        await transport.aclose()


async def test_a_server_resetting_kept_connections_never_gets_a_second_request_per_attempt(
    raw_server, transport
):
    """Each connection answers its first request, then resets when the next one arrives on it: the
    request reached the server (and might have been billed), so it is never sent again."""

    async def script(reader, writer, state):
        if await state.read_request(reader) is None:
            return
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")
        await writer.drain()
        if await state.read_request(reader) is None:
            return
        sock = writer.transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # a TCP reset, no answer

    server = await raw_server(script)
    outcomes = []
    for _ in range(6):
        try:
            raw = await transport.send(RequestSpec("GET", f"{server.url}/s"), timeout=60)
            outcomes.append(raw.status)
        except TransportError as exc:
            outcomes.append(exc.message)
    assert len(server.requests) == 6, (server.requests, outcomes)
    assert outcomes.count(200) >= 3  # every fresh connection answered
    failures = [o for o in outcomes if o != 200]
    assert failures and all("network error" in str(o) for o in failures)


async def test_a_header_that_would_split_the_request_is_refused_before_connecting(raw_server, transport):
    async def script(reader, writer, state):
        await state.read_request(reader)

    server = await raw_server(script)
    for headers, message in (
        ({"X-A": "v\r\nX-Injected: 1"}, "the value of header 'X-A' holds a line break or NUL"),
        ({"X A": "v"}, "'X A' is not a valid header name"),
    ):
        with pytest.raises(TransportError, match=message):
            await transport.send(RequestSpec("GET", f"{server.url}/s", headers=headers), timeout=60)
    assert server.connections == 0


AMBIGUOUS_FRAMING = [
    b"Transfer-Encoding: chunked, identity\r\n",  # aiohttp would read it until the connection closes
    b"Transfer-Encoding: xchunked\r\n",
    b"Transfer-Encoding: identity, chunked\r\n",
    b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
]


@pytest.mark.parametrize(
    "framing", AMBIGUOUS_FRAMING, ids=["chunked-identity", "xchunked", "identity-chunked", "twice"]
)
async def test_an_ambiguous_transfer_encoding_is_refused_as_malformed(raw_server, transport, framing):
    async def script(reader, writer, state):
        await state.read_request(reader)
        # A body a chunked reader and a read-to-close reader see differently.
        await _write_all(writer, state, b"HTTP/1.1 200 OK\r\n" + framing + b"\r\n5\r\nhello\r\n0\r\n\r\n")

    server = await raw_server(script)
    with pytest.raises(TransportError) as caught:
        await transport.send(RequestSpec("GET", f"{server.url}/s"), timeout=60)
    assert caught.value.cause == "malformed"
    assert caught.value.message == (
        f"response head from 127.0.0.1:{server.port} refused: ambiguous framing "
        "(a Transfer-Encoding other than chunked alone)"
    )
    with pytest.raises(TransportError) as streamed:  # the streaming path (LLM answers) checks it too
        async with transport.stream(RequestSpec("GET", f"{server.url}/s"), timeout=60):
            pass
    assert streamed.value.cause == "malformed"
    # the refused connection was closed, not pooled: the second request needed a connection of its own
    assert server.connections == 2


async def test_transfer_encoding_chunked_alone_is_read(raw_server, transport):
    async def script(reader, writer, state):
        await state.read_request(reader)
        await _write_all(
            writer, state, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        )

    server = await raw_server(script)
    raw = await transport.send(RequestSpec("GET", f"{server.url}/s"), timeout=60)
    assert (raw.status, raw.body) == (200, b"hello")
