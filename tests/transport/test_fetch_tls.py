"""HTTPS through the SSRF guard: the connection goes to the checked address, while TLS still sends
the host name (SNI) and verifies the certificate against it."""

from __future__ import annotations

import ipaddress
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.tls import self_signed
from zarniwoop.contract import TransportError
from zarniwoop.transport.fetch import GuardedFetcher
from zarniwoop.transport.http import HttpTransport

pytestmark = pytest.mark.anyio
NAME = "papers.example"


@pytest.fixture
def tls_server(tmp_path) -> Iterator[tuple[int, str, dict[str, list[str]]]]:
    cert, key = self_signed(tmp_path, NAME)
    seen: dict[str, list[str]] = {"sni": [], "host": []}
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, server_name, ctx: seen["sni"].append(server_name or "")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen["host"].append(self.headers.get("Host", ""))
            body = b"over tls"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], cert, seen
    finally:
        server.shutdown()
        server.server_close()


def fetcher_for(port: int, cert: str, name: str) -> GuardedFetcher:
    async def resolve(host: str, p: int):
        return [ipaddress.ip_address("127.0.0.1")] if host == name else []

    transport = HttpTransport(ssl_context=ssl.create_default_context(cafile=cert))
    allowed = lambda ip, p: ip == ipaddress.ip_address("127.0.0.1") and p == port  # noqa: E731
    return GuardedFetcher(transport, resolver=resolve, address_allowed=allowed)


async def test_https_connects_to_the_checked_address_with_the_name_for_sni_and_certificate(tls_server):
    port, cert, seen = tls_server
    fetcher = fetcher_for(port, cert, NAME)
    try:
        page = await fetcher.fetch(
            f"https://{NAME}:{port}/paper", max_bytes=1000, allow_private=False, timeout=60
        )
    finally:
        await fetcher.transport.aclose()
    assert page.body == b"over tls"
    assert seen["sni"] == [NAME]
    assert seen["host"] == [f"{NAME}:{port}"]


async def test_a_certificate_for_another_name_fails(tls_server):
    port, cert, seen = tls_server
    fetcher = fetcher_for(port, cert, "impostor.example")
    try:
        with pytest.raises(TransportError, match=r"impostor\.example: network error"):
            await fetcher.fetch(
                f"https://impostor.example:{port}/paper", max_bytes=1000, allow_private=False, timeout=60
            )
    finally:
        await fetcher.transport.aclose()
    assert seen["host"] == []
