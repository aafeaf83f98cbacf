"""The lean HTTP/1.1 path (`transport/h1.py`) behind `HttpTransport.send`: what goes on the wire, how
answers are read (lengths, chunks, codings, caps, interim answers, bodies to the close), how kept
connections are reused and dropped, and how every failure reaches the caller in the same words as
the httpx2 path. Each server here is a raw asyncio server on loopback that says exactly what the
test scripts, byte for byte."""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
import zlib
from collections.abc import Awaitable, Callable

import httpx2
import pytest

from tests.support.tls import self_signed
from zarniwoop.contract import ProviderTimeoutError, RequestSpec, ResponseTooLargeError, TransportError
from zarniwoop.transport.h1 import H1Pool, request_head
from zarniwoop.transport.http import USER_AGENT, HttpTransport

pytestmark = pytest.mark.anyio

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


class Server:
    """A loopback server that hands each connection (numbered from 0) to `handler`; `heads` holds
    every request head it read through `read_request`, `bodies` their bodies."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    def url(self, path: str = "/w/api.php") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        body = await reader.readexactly(length) if length else b""
        self.bodies.append(body)
        return head

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number, self.connections = self.connections, self.connections + 1
        try:
            await self.handler(reader, writer, number)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def answer(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    lines = [f"HTTP/1.1 {status}", f"content-length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def serving(reply: Callable[[int], bytes]) -> Callable[[Server], Handler]:
    """A handler that answers every request of a connection with `reply(request number)`."""

    def make(server: Server) -> Handler:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _n: int) -> None:
            count = 0
            while True:
                await server.read_request(reader)
                writer.write(reply(count))
                count += 1
                await writer.drain()

        return handle

    return make


async def run_server(make: Callable[[Server], Handler]) -> Server:
    server = Server(lambda r, w, n: asyncio.sleep(0))
    server.handler = make(server)
    return await server.__aenter__()


def get(url: str, **kw: object) -> RequestSpec:
    return RequestSpec("GET", url, **kw)  # type: ignore[arg-type]


async def test_three_searches_go_over_one_kept_connection_with_httpx2s_headers():
    server = await run_server(serving(lambda n: answer(b'{"n": %d}' % n, "content-type: application/json")))
    transport = HttpTransport()
    try:
        replies = [
            await transport.send(get(server.url(), params=(("q", f"a b {i}"), ("x", "é&"))), timeout=2)
            for i in range(3)
        ]
        assert [(r.status, r.body) for r in replies] == [
            (200, b'{"n": 0}'),
            (200, b'{"n": 1}'),
            (200, b'{"n": 2}'),
        ]
        assert replies[0].headers == {"content-length": "8", "content-type": "application/json"}
        assert replies[2].url == server.url() + "?q=a+b+2&x=%C3%A9%26"
        assert server.connections == 1
        assert transport._pool is not None
        assert (transport._pool.open_connections, transport._pool.idle_connections) == (1, 1)
        assert server.heads[0] == b"GET /w/api.php?q=a+b+0&x=%C3%A9%26 HTTP/1.1\r\n" + (
            b"Host: 127.0.0.1:%d\r\n"
            b"Accept: */*\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n"
            b"User-Agent: %s\r\n\r\n" % (server.port, USER_AGENT.encode())
        )
    finally:
        await transport.aclose()
        await server.__aexit__()


async def test_a_post_sends_the_json_body_as_httpx2_encodes_it_and_the_callers_headers_win():
    server = await run_server(serving(lambda n: answer(b"{}")))
    transport = HttpTransport()
    body = {"q": "Fermat’s theorem", "num": 5, "nested": [1.5, None, True]}
    try:
        spec = RequestSpec(
            "POST", server.url("/search"), headers={"X-API-KEY": "k1", "user-agent": "mine/1"}, json_body=body
        )
        reply = await transport.send(spec, timeout=2)
        assert reply.status == 200
        encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        assert server.bodies == [encoded]
        assert server.heads[0] == (
            b"POST /search HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
            b"Accept: */*\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n"
            b"user-agent: mine/1\r\nX-API-KEY: k1\r\n"
            b"Content-Length: %d\r\nContent-Type: application/json\r\n\r\n" % (server.port, len(encoded))
        )
        # the same request through httpx2 carries the same headers and body
        async with httpx2.AsyncClient(headers={"User-Agent": USER_AGENT}) as client:
            sent = client.build_request("POST", server.url("/search"), headers=spec.headers, json=body)
        assert sent.content == encoded
        assert {k.lower(): v for k, v in sent.headers.items()} == {
            k.decode().lower(): v.decode()
            for k, v in (line.split(b": ", 1) for line in server.heads[0].split(b"\r\n")[1:-2])
        }
    finally:
        await transport.aclose()
        await server.__aexit__()


@pytest.mark.parametrize(
    "value",
    ["k1\r\nX-Injected: 1", "k1\nGET /admin HTTP/1.1", "k1\x00", "clé"],
    ids=["crlf", "lf", "nul", "non-ascii"],
)
async def test_a_header_value_that_would_break_the_request_is_refused_before_anything_is_sent(value):
    server = await run_server(serving(lambda n: answer(b"{}")))
    transport = HttpTransport()
    try:
        with pytest.raises(
            TransportError, match=r"^network error: LocalProtocolError with 127\.0\.0\.1:\d+$"
        ):
            await transport.send(get(server.url(), headers={"X-API-KEY": value}), timeout=2)
        with pytest.raises(TransportError):
            await transport.send(get(server.url(), headers={"Bad Name": "v"}), timeout=2)
        await asyncio.sleep(0.05)
        assert server.heads == []
    finally:
        await transport.aclose()
        await server.__aexit__()


def test_request_head_keeps_a_replaced_default_in_its_place():
    head = request_head(
        "GET", "/x", "h", {"accept": "application/json"}, None, defaults=[("Accept", "*/*"), ("B", "2")]
    )
    assert head == b"GET /x HTTP/1.1\r\nHost: h\r\naccept: application/json\r\nB: 2\r\n\r\n"


async def test_chunked_gzip_and_both_deflates_are_decoded():
    text = b'{"pages": ["' + b"aurora " * 500 + b'"]}'
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    bodies = {
        "gzip": gzip.compress(text),
        "deflate": zlib.compress(text),
        "deflate-raw": raw_deflate.compress(text) + raw_deflate.flush(),
    }

    def chunked(body: bytes, coding: str) -> bytes:
        pieces = [body[i : i + 100] for i in range(0, len(body), 100)]
        framed = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
        head = f"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-encoding: {coding}\r\n\r\n"
        return head.encode() + framed

    order = ["gzip", "deflate", "deflate-raw"]
    server = await run_server(serving(lambda n: chunked(bodies[order[n]], order[n].split("-")[0])))
    transport = HttpTransport()
    try:
        for _ in order:
            reply = await transport.send(get(server.url()), timeout=2)
            assert reply.body == text
        assert server.connections == 1
    finally:
        await transport.aclose()
        await server.__aexit__()


async def test_bodies_past_the_cap_are_refused_declared_streamed_or_once_decoded_and_the_connection_dropped():
    bomb = gzip.compress(b"\0" * 1_000_000)  # 1 MB of zeros in ~1 KB
    replies = [
        answer(b"x" * 2000),  # declared past the cap
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n400\r\n" + b"y" * 1024 + b"\r\n0\r\n\r\n",
        answer(bomb, "content-encoding: gzip"),
    ]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        answers = [replies[n]]  # connection n answers replies[n] first, "fits" after
        while True:
            await server.read_request(reader)
            writer.write(answers.pop() if answers else answer(b"fits"))
            await writer.drain()

    server = Server(handle)
    transport = HttpTransport()
    async with server:
        try:
            with pytest.raises(
                ResponseTooLargeError, match=r"^response of 2000 bytes exceeds the 1000-byte cap$"
            ):
                await transport.send(get(server.url()), timeout=2, max_bytes=1000)
            with pytest.raises(ResponseTooLargeError, match=r"^response exceeds the 1000-byte cap$"):
                await transport.send(get(server.url()), timeout=2, max_bytes=1000)
            with pytest.raises(
                ResponseTooLargeError, match=r"^response exceeds the 5000-byte cap once decoded$"
            ):
                await transport.send(get(server.url()), timeout=2, max_bytes=5000)
            # the first two were cut off mid-body and closed; the bomb's was read whole and is kept
            assert (await transport.send(get(server.url()), timeout=2, max_bytes=1000)).body == b"fits"
            assert server.connections == 3
            assert transport._pool is not None and transport._pool.open_connections == 1
        finally:
            await transport.aclose()


async def test_an_interim_answer_is_skipped_and_a_body_without_length_ends_with_the_connection():
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the ")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"end")
        await writer.drain()

    server = Server(handle)
    transport = HttpTransport()
    async with server:
        try:
            first = await transport.send(get(server.url()), timeout=2)
            second = await transport.send(get(server.url()), timeout=2)
            assert (first.status, first.body, first.headers) == (
                200,
                b"until the end",
                {"connection": "close"},
            )
            assert second.body == b"until the end"
            assert server.connections == 2  # "connection: close" is not reused
        finally:
            await transport.aclose()


async def test_a_kept_connection_the_server_closed_is_not_used_and_a_get_hung_up_on_is_sent_again():
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(reader)
        writer.write(answer(b"ok%d" % n))
        await writer.drain()
        if n == 0:
            await reader.readuntil(b"\r\n\r\n")  # the next request on the kept connection: hang up unanswered
            return
        if n == 1:
            await asyncio.sleep(0.05)  # close while the client holds it idle
            return
        while True:
            await server.read_request(reader)
            writer.write(answer(b"ok%d" % n))

    server = Server(handle)
    transport = HttpTransport()
    async with server:
        try:
            assert (await transport.send(get(server.url()), timeout=2)).body == b"ok0"
            assert (
                await transport.send(get(server.url()), timeout=2)
            ).body == b"ok1"  # sent again on a new one
            await asyncio.sleep(0.2)
            assert (
                await transport.send(get(server.url()), timeout=2)
            ).body == b"ok2"  # the idle one was dead
            assert server.connections == 3
        finally:
            await transport.aclose()


async def test_a_post_hung_up_on_is_not_sent_again():
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(reader)
        writer.write(answer(b"ok"))
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")

    server = Server(handle)
    transport = HttpTransport()
    async with server:
        try:
            post = RequestSpec("POST", server.url(), json_body={"q": 1})
            assert (await transport.send(post, timeout=2)).body == b"ok"
            with pytest.raises(
                TransportError, match=r"^network error: RemoteProtocolError with 127\.0\.0\.1:\d+$"
            ):
                await transport.send(post, timeout=2)
            assert server.connections == 1
        finally:
            await transport.aclose()


async def test_timeouts_say_which_part_did_not_come():
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await server.read_request(reader)
        if n == 1:
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
            await writer.drain()
            for _ in range(4):  # a byte every 0.1 s keeps a 0.3 s read timeout from firing...
                await asyncio.sleep(0.1)
                writer.write(b"d")
            await asyncio.sleep(1)  # ...then nothing
        await asyncio.sleep(2)

    server = Server(handle)
    transport = HttpTransport()
    async with server:
        try:
            with pytest.raises(ProviderTimeoutError, match=r"^no answer from 127\.0\.0\.1:\d+ within 0\.3s$"):
                await transport.send(get(server.url()), timeout=0.3)
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(
                ProviderTimeoutError, match=r"^body from 127\.0\.0\.1:\d+ not complete within 0\.3s$"
            ):
                await transport.send(get(server.url()), timeout=0.3)
            assert 0.65 <= loop.time() - started < 1.5  # 0.4 s of trickle, then the 0.3 s of silence
            assert transport._pool is not None and transport._pool.open_connections == 0
        finally:
            await transport.aclose()


async def test_refused_and_malformed_are_transport_errors_in_plain_words():
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    transport = HttpTransport()
    try:
        with pytest.raises(
            TransportError, match=rf"^network error: connection to 127\.0\.0\.1:{port} refused$"
        ):
            await transport.send(get(f"http://127.0.0.1:{port}/x"), timeout=2)
        server = await run_server(serving(lambda n: b"SMTP ready\r\n\r\n"))
        with pytest.raises(
            TransportError, match=r"^network error: RemoteProtocolError with 127\.0\.0\.1:\d+$"
        ):
            await transport.send(get(server.url()), timeout=2)
        await server.__aexit__()
    finally:
        await transport.aclose()


async def test_a_cancelled_search_closes_its_connection_and_the_next_one_is_served():
    release = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            await server.read_request(reader)
            if n == 0:
                await release.wait()
            writer.write(answer(b"ok%d" % n))
            await writer.drain()

    server = Server(handle)
    transport = HttpTransport()
    async with server:
        try:
            task = asyncio.ensure_future(transport.send(get(server.url()), timeout=5))
            await asyncio.sleep(0.1)
            task.cancel()  # the hedge that lost
            with pytest.raises(asyncio.CancelledError):
                await task
            assert transport._pool is not None and transport._pool.open_connections == 0
            release.set()
            assert (await transport.send(get(server.url()), timeout=2)).body == b"ok1"
        finally:
            await transport.aclose()


async def test_a_same_host_redirect_is_followed_on_the_kept_connection_and_another_host_refused():
    def reply(n: int) -> bytes:
        if n == 0:
            return answer(b"moved", "location: /w/other.php?a=1", status="301 Moved Permanently")
        return answer(b"here")

    server = await run_server(serving(reply))
    transport = HttpTransport()
    try:
        moved = await transport.send(get(server.url()), timeout=2)
        assert (moved.status, moved.body, moved.url) == (200, b"here", server.url("/w/other.php?a=1"))
        assert server.heads[1].startswith(b"GET /w/other.php?a=1 HTTP/1.1\r\n")
        assert server.connections == 1
    finally:
        await transport.aclose()
        await server.__aexit__()
    server = await run_server(
        serving(lambda n: answer(b"", "location: http://10.0.0.1/x", status="302 Found"))
    )
    transport = HttpTransport()
    try:
        with pytest.raises(TransportError, match=r"redirect to another host refused \(10\.0\.0\.1\)"):
            await transport.send(get(server.url()), timeout=2)
    finally:
        await transport.aclose()
        await server.__aexit__()


async def test_past_max_connections_a_request_waits_for_one_to_be_released():
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            await server.read_request(reader)
            await asyncio.sleep(0.05)
            writer.write(answer(b"ok"))

    server = Server(handle)
    transport = HttpTransport()
    transport._pool = H1Pool(max_connections=1)
    async with server:
        try:
            replies = await asyncio.gather(*(transport.send(get(server.url()), timeout=3) for _ in range(4)))
            assert [r.body for r in replies] == [b"ok"] * 4
            assert server.connections == 1
        finally:
            await transport.aclose()


async def test_https_verifies_the_certificate_and_keeps_the_tls_connection(tmp_path):
    cert, key = self_signed(tmp_path, "127.0.0.1")
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                writer.write(answer(b"secure"))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            writer.close()

    listener = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=served)
    url = f"https://127.0.0.1:{listener.sockets[0].getsockname()[1]}/search"
    untrusting = HttpTransport()
    trusting = HttpTransport()
    trusting._pool = H1Pool(ssl_context=ssl.create_default_context(cafile=cert))
    try:
        with pytest.raises(
            TransportError, match=r"^network error: TLS handshake with 127\.0\.0\.1:\d+ failed: "
        ):
            await untrusting.send(get(url), timeout=2)
        replies = [await trusting.send(get(url), timeout=2) for _ in range(3)]
        assert [r.body for r in replies] == [b"secure"] * 3
        assert connections == 1  # one kept TLS connection (the refused handshake never reached the handler)
    finally:
        await untrusting.aclose()
        await trusting.aclose()
        listener.close()
        await listener.wait_closed()


async def test_an_injected_client_and_a_proxy_keep_httpx2():
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(str(request.url))
        return httpx2.Response(200, content=b"mock")

    transport = HttpTransport(httpx2.AsyncClient(transport=httpx2.MockTransport(handler)))
    try:
        reply = await transport.send(get("http://example.test/x", params=(("q", "a"),)), timeout=2)
        assert (reply.body, seen) == (b"mock", ["http://example.test/x?q=a"])
        assert transport._pool is None
    finally:
        await transport.aclose()


async def test_a_second_answer_to_one_request_is_ignored_and_costs_the_connection():
    server = await run_server(serving(lambda n: answer(b"one%d" % n) + answer(b"stray, long" * 10)))
    transport = HttpTransport()
    try:
        first = await transport.send(get(server.url()), timeout=2)
        second = await transport.send(get(server.url()), timeout=2)
        assert (first.body, second.body) == (b"one0", b"one0")  # the second on a new connection
        assert server.connections == 2
    finally:
        await transport.aclose()
        await server.__aexit__()


@pytest.mark.parametrize("coding", ["identity", "chunked+gzip"])
async def test_an_answer_split_anywhere_across_reads_is_read_the_same(coding):
    """TCP may cut an answer anywhere: in the status line, a header, the chunk framing or the
    compressed body. Every cut point of one answer, each on a kept connection."""
    text = b'{"hits": ["aurora borealis"]}'
    if coding == "identity":
        whole = answer(text, "content-type: application/json")
    else:
        packed = gzip.compress(text)
        framed = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (10, packed[:10], len(packed) - 10, packed[10:])
        whole = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-encoding: gzip\r\n\r\n" + framed
    cuts = iter(range(1, len(whole)))

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            await server.read_request(reader)
            cut = next(cuts)
            writer.write(whole[:cut])
            await writer.drain()
            await asyncio.sleep(0.002)  # a read of its own for each part
            writer.write(whole[cut:])
            await writer.drain()

    server = Server(handle)
    transport = HttpTransport()
    async with server:
        try:
            for _ in range(len(whole) - 1):
                reply = await transport.send(get(server.url()), timeout=2)
                assert (reply.status, reply.body) == (200, text)
            assert server.connections == 1
        finally:
            await transport.aclose()
