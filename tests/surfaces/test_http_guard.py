"""The request guard on a real `zarniwoop serve`: the token before the body, bodies capped at 1 MiB
(32 MiB on the LLM gateway's paths) with a 413 in the one error shape (OpenAI's, Anthropic's on theirs), header sizes capped (issue 11, item 5) by the httptools protocol
of `surfaces/http/server_protocol.py` (or h11's own cap where httptools is not installed)."""

from __future__ import annotations

import json
import select
import socket
import time
from urllib.parse import urlsplit

import pytest
import yaml

from zarniwoop.surfaces.http.guard import GATEWAY_MAX_BODY_BYTES, MAX_BODY_BYTES, MAX_HEADER_BYTES
from zarniwoop.surfaces.http.server_protocol import http_protocol

from ..support.served import rss_kib, served

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("guard")
    config = tmp_path / "zarniwoop.yaml"
    config.write_text(yaml.safe_dump({"settings": {}}))
    with served(config, tmp_path / "home") as running:
        yield running


def _exchange(url: str, head: str, body_chunks=(), *, read_timeout: float = 10.0) -> tuple[int, dict, int]:
    """Send raw bytes until the server answers or stops reading (it may close mid-body); return the
    status, the JSON body and how many body bytes got out before the answer came.

    A full send buffer is not an answer: a busy server reads late, and stopping there left it
    waiting for the rest of a body that never came (a 10 s timeout under `stress-ng`). The bytes go
    out as the socket takes them, until the server's answer is readable."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=read_timeout)
    sent = 0
    try:
        sock.sendall(head.encode("latin-1"))
        sock.setblocking(False)
        answered = False
        for chunk in body_chunks:
            rest = memoryview(chunk)
            while rest and not answered:
                readable, writable, _ = select.select([sock], [sock], [], read_timeout)
                if readable or not writable:  # the answer (or a close), or nothing moves at all
                    answered = True
                    break
                try:
                    count = sock.send(rest)
                except BlockingIOError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    answered = True  # the server stopped reading: it has answered already
                    break
                rest = rest[count:]
                sent += count
            if answered:
                break
        sock.setblocking(True)
        sock.settimeout(read_timeout)
        raw = b""
        while b"\r\n\r\n" not in raw or len(raw) < raw.index(b"\r\n\r\n") + 4 + _length(raw):
            data = sock.recv(65536)
            if not data:
                break
            raw += data
    finally:
        sock.close()
    status = int(raw.split(b" ", 2)[1])
    body = raw.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in raw else b""
    return status, (json.loads(body) if body.strip().startswith(b"{") else {}), sent


def _length(raw: bytes) -> int:
    head = raw.split(b"\r\n\r\n", 1)[0].lower()
    for line in head.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def _post(path: str, extra: str) -> str:
    return f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}\r\n"


def test_no_token_is_a_401_before_the_body_is_read(server):
    rss_before = rss_kib(server.pid)
    chunks = (b"x" * MIB for _ in range(300))  # claims and tries to send 300 MB
    status, body, sent = _exchange(
        server.url, _post("/v1/research/search", f"Content-Length: {300 * MIB}\r\n"), chunks
    )
    assert status == 401
    assert body == {"error": {"message": "missing bearer token: send Authorization: Bearer <token>"}}
    assert sent < 100 * MIB  # the server answered and closed long before the body was through
    assert rss_kib(server.pid) - rss_before < 20 * 1024  # was +900 MB before the guard


@pytest.mark.parametrize("path", ["/v1/research/search", "/v1/tools/research_search", "/mcp"])
def test_a_declared_length_over_the_cap_is_a_413_at_once(server, path):
    auth = f"Authorization: Bearer {server.token}\r\n"
    head = _post(path, f"{auth}Content-Length: {MAX_BODY_BYTES + 1}\r\n")
    status, body, _ = _exchange(server.url, head, (b"x" * 65536 for _ in range(32)))
    assert (status, body) == (413, {"error": {"message": f"request body over {MAX_BODY_BYTES} bytes"}})


@pytest.mark.parametrize("path", ["/v1/research/search", "/mcp"])
def test_a_chunked_body_is_cut_at_the_cap_with_a_413(server, path):
    auth = f"Authorization: Bearer {server.token}\r\nAccept: application/json, text/event-stream\r\n"
    head = _post(path, f"{auth}Transfer-Encoding: chunked\r\n")
    piece = b"x" * 65536
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    status, body, sent = _exchange(server.url, head, (chunk for _ in range(512)))  # 32 MiB
    assert (status, body) == (413, {"error": {"message": f"request body over {MAX_BODY_BYTES} bytes"}})
    assert sent < 16 * MIB  # cut near the cap (socket buffers hold a few MiB more)


@pytest.mark.parametrize(
    ("path", "error"),
    [
        (
            "/v1/chat/completions",
            {"message": "request body over 33554432 bytes", "type": "invalid_request_error"},
        ),
        ("/v1/responses", {"message": "request body over 33554432 bytes", "type": "invalid_request_error"}),
        ("/v1/embeddings", {"message": "request body over 33554432 bytes", "type": "invalid_request_error"}),
    ],
)
def test_the_gateways_paths_take_32_mib_in_their_own_shape(server, path, error):
    auth = f"Authorization: Bearer {server.token}\r\n"
    over = _exchange(server.url, _post(path, f"{auth}Content-Length: {GATEWAY_MAX_BODY_BYTES + 1}\r\n"))
    assert over[0] == 413 and {k: over[1]["error"][k] for k in error} == error
    # 2 MiB (a conversation with a screenshot) passes the guard and reaches the route
    under = _exchange(server.url, _post(path, f"{auth}Content-Length: {2 * MIB}\r\n"), [b" " * (2 * MIB)])
    assert under[0] == 403, under  # the token is bound to no account: the route, not the guard, refuses


def test_messages_are_capped_at_32_mib_in_anthropics_shape(server):
    head = _post(
        "/v1/messages",
        f"Authorization: Bearer {server.token}\r\nContent-Length: {GATEWAY_MAX_BODY_BYTES + 1}\r\n",
    )
    status, body, _ = _exchange(server.url, head)
    assert (status, body) == (
        413,
        {
            "type": "error",
            "error": {"type": "request_too_large", "message": "request body over 33554432 bytes"},
        },
    )


def test_a_body_under_the_cap_is_served(server):
    payload = json.dumps({"query": "x" * 100, "modality": "web"}).encode()
    head = _post(
        "/v1/research/search", f"Authorization: Bearer {server.token}\r\nContent-Length: {len(payload)}\r\n"
    )
    status, body, _ = _exchange(server.url, head, [payload])
    assert status == 200 and body["query"] == "x" * 100


def test_oversized_headers_are_refused_and_the_server_keeps_serving(server):
    # What is buffered while a request head is incomplete is bounded: a head larger than one read
    # plus the cap (16 KiB) is refused, so a request head can never grow the server's memory much.
    head = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {'a' * 256 * 1024}\r\n\r\n"
    status, _, _ = _exchange(server.url, head)
    assert status in (400, 431)
    status, body, _ = _exchange(server.url, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert status == 200 and body["status"] == "ok"


def _head_of(size: int) -> str:
    """A GET /healthz head of exactly `size` bytes as the cap counts them (URL, names, values)."""
    fixed = len("/healthz") + len("Host") + len("127.0.0.1") + 4 + len("X-Pad") + 4
    return f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: {'p' * (size - fixed)}\r\n\r\n"


@pytest.mark.skipif(http_protocol() == "h11", reason="httptools is not installed: serve runs h11 and its cap")
def test_httptools_head_cap_is_exact_whole_or_trickled(server):
    # one byte under the cap passes; one over is a 431 even when the head arrives in one read
    assert _exchange(server.url, _head_of(MAX_HEADER_BYTES))[0] == 200
    assert _exchange(server.url, _head_of(MAX_HEADER_BYTES + 1))[0] == 431
    # a head trickled in 1 KiB pieces that never ends is cut once the bytes received pass the cap
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        answer = b""
        for _ in range(64):
            try:
                sock.sendall(b"s" * 1024)
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.005)
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert b"request line and headers over 16384 bytes" in answer
    # keep-alive: two requests on one connection each get their own count
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        head = _head_of(MAX_HEADER_BYTES - 100).replace("\r\n\r\n", "\r\nConnection: keep-alive\r\n\r\n", 1)
        sock.sendall((head + head).encode())
        raw = b""
        while raw.count(b"HTTP/1.1 200") < 2:
            chunk = sock.recv(65536)
            if not chunk:
                break
            raw += chunk
    assert raw.count(b"HTTP/1.1 200") == 2


def test_a_client_hanging_up_mid_body_leaves_no_traceback_in_the_server_log(tmp_path):
    """Issue 28 item 7: the client's own doing (a disconnect before its body was read, a body cut
    at the cap) is no "unhandled error" with a traceback in the server's log."""
    config = tmp_path / "zarniwoop.yaml"
    config.write_text(yaml.safe_dump({"settings": {}}))
    with served(config, tmp_path / "home") as running:
        parts = urlsplit(running.url)
        auth = f"Authorization: Bearer {running.token}\r\n"
        sock = socket.create_connection((parts.hostname, parts.port), timeout=60)
        sock.sendall(_post("/v1/research/search", f"{auth}Content-Length: 500000\r\n").encode() + b"x" * 1000)
        sock.close()  # gone, 499,000 bytes short
        piece = b"x" * 65536
        chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        head = _post("/v1/research/search", f"{auth}Transfer-Encoding: chunked\r\n")
        assert _exchange(running.url, head, (chunk for _ in range(320)))[0] == 413  # 20 MiB, cut
        payload = json.dumps({"query": "x", "modality": "web"}).encode()
        answered = _exchange(
            running.url,
            _post("/v1/research/search", f"{auth}Content-Length: {len(payload)}\r\n"),
            [payload],
        )
        assert answered[0] == 200  # served after both (and the first request was surely handled)
    log = (tmp_path / "home" / "serve.stderr").read_text()
    assert "Traceback" not in log and "unhandled error" not in log and "ClientDisconnect" not in log, log
